"""kafka-python's view of batches and records, and ours, in one vocabulary (test helper).

kafka-python is an independent implementation of the record formats; these functions translate
both sides into the same dicts so the tests can compare them field for field.  Nothing here imports
kafka-python: callers pass its objects (or its ``MemoryRecords`` class) in.
"""

from __future__ import annotations

import struct

from model import records as R

TIMESTAMP_TYPES = {None: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}  # kafka-python's ids
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER"}  # §1.6


def kp_batches(memory_records_cls, data: bytes) -> tuple[list, int]:
    """kafka-python's batches with their positions, and its valid byte count."""
    records = memory_records_cls(bytes(data))
    out, pos = [], 0
    while records.has_next():
        batch = records.next_batch()
        out.append((pos, batch))
        pos += batch.size_in_bytes
    return out, records.valid_bytes()


def kp_header(position: int, kb) -> dict:
    """kafka-python's view of one batch header, in our field names (spec §1.2, §1.7)."""
    d = {"position": position, "size": kb.size_in_bytes, "magic": kb.magic}
    if kb.magic >= 2:
        d.update(
            offset=kb.base_offset, last_offset=kb.last_offset, crc=kb.crc, attributes=kb.attributes,
            partition_leader_epoch=kb.leader_epoch, last_offset_delta=kb.last_offset_delta,
            base_timestamp=kb.first_timestamp, max_timestamp=kb.max_timestamp, producer_id=kb.producer_id,
            producer_epoch=kb.producer_epoch, base_sequence=kb.base_sequence, records_count=kb.records_count,
        )  # fmt: skip
    else:
        # Legacy: the offset field is the (last) offset, which is kafka-python's base_offset (§1.1).
        # LegacyRecordBatch has no public accessor for the wrapper's crc, attributes and timestamp.
        ts = -1 if kb._timestamp is None else kb._timestamp
        d.update(
            offset=kb.base_offset, last_offset=kb.base_offset, crc=kb._crc, attributes=kb._attributes,
            partition_leader_epoch=-1, last_offset_delta=-1, base_timestamp=ts, max_timestamp=ts,
            producer_id=-1, producer_epoch=-1, base_sequence=-1, records_count=-1,
        )  # fmt: skip
    return d


def kp_batch_facts(kb) -> dict:
    v2 = kb.magic >= 2
    return {
        "codec": kb.compression_type,
        "timestamp_type": TIMESTAMP_TYPES[kb.timestamp_type],
        "is_transactional": v2 and kb.is_transactional,
        "is_control": v2 and kb.is_control_batch,
    }


def kp_records(kb) -> list[dict]:
    """kafka-python's records of one batch (call after validate_crc), in our vocabulary."""
    out = []
    for r in kb:
        d = {
            "offset": r.offset,
            "timestamp": -1 if r.timestamp is None else r.timestamp,
            "timestamp_type": TIMESTAMP_TYPES[r.timestamp_type],
            "key": r.key,
            "value": r.value,
            "headers": tuple((k.encode("utf-8"), v) for k, v in r.headers),
        }
        if kb.magic >= 2:
            delta = r.offset - kb.base_offset
            d["sequence"] = -1 if kb.base_sequence == -1 else kb._increment_sequence(kb.base_sequence, delta)
            if kb.is_control_batch:
                d["control_type"] = CONTROL_TYPES.get(r.type, "UNKNOWN")
                d["coordinator_epoch"] = struct.unpack(">hi", r.value)[1] if r.type in (0, 1) else None
        else:
            d.update(crc=r.checksum, crc_valid=r.validate_crc())
        out.append(d)
    return out


HEADER_FIELDS = (
    "position", "size", "magic", "offset", "last_offset", "crc", "attributes", "partition_leader_epoch",
    "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
    "records_count",
)  # fmt: skip


def our_header(h) -> dict:
    """A model ``Header`` or an impl ``BatchHeader`` (same field names)."""
    return {f: getattr(h, f) for f in HEADER_FIELDS}


def model_batch_facts(b: R.Batch) -> dict:
    return {
        "codec": b.codec,
        "timestamp_type": b.timestamp_type,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
    }


def model_records(b: R.Batch) -> list[dict]:
    out = []
    for r in b.records():
        d = {
            "offset": r.offset,
            "timestamp": r.timestamp,
            "timestamp_type": r.timestamp_type,
            "key": r.key,
            "value": r.value,
            "headers": r.headers,
        }
        if b.is_v2:
            d["sequence"] = r.sequence
            if b.is_control:
                d.update(control_type=r.control_type, coordinator_epoch=r.coordinator_epoch)
        else:
            d.update(crc=r.crc, crc_valid=r.crc_valid)
        out.append(d)
    return out
