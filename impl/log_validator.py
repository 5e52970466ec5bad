"""What a leader's ``LogValidator`` does to a produce request's batch beyond its offsets (spec §4.14):
whether the batch is written as it came or rebuilt in the topic's codec (``compression.type``).

Kafka sets a batch's offsets, leader epoch and LogAppendTime stamp in place when it can
(``validateMessagesAndAssignOffsets``): when neither the batch nor the topic compresses, or when the
topic's codec (``producer``: the batch's own) is the batch's and the records' offset deltas run 0, 1,
2, … as a producer writes them.  Otherwise ``buildRecordsAndAssignOffsets`` writes a new batch with
``MemoryRecordsBuilder``: every record again, compressed as the broker compresses.
"""

from __future__ import annotations

from impl.producer_state import is_control
from impl.record_walk import record_fields, v2_headers, v2_key, v2_value
from impl.record_writer import attributes_of, encode_batch, encode_record, to_long

# BrokerCompressionType's names → codec ids ("producer" keeps the batch's)
CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def recompressed(data, header, compression_type: str) -> bytes | None:
    """The leader's batch ``header`` of ``data`` rebuilt in the topic's codec, or None when its
    offsets are set in place (an uncompressed control batch stays as it is too).  The rebuilt batch
    has its records at deltas 0, 1, 2, … from the first record's timestamp, record attributes 0, the
    producer fields and the transactional bit kept and the control bit dropped (the builder is not
    given it), a CreateTime max timestamp; base offset, leader epoch and a LogAppendTime stamp are
    then set as in place."""
    source = header.attributes & 0x07
    target = source if compression_type == "producer" else CODECS[compression_type]
    if source == 0 and (target == 0 or is_control(header)):
        return None
    buf, fields = record_fields(data, header)
    if source == target and all(r[0] - header.offset == i for i, r in enumerate(fields)):
        return None
    first_ts = fields[0][1] if fields else -1
    body = bytearray()
    for i, (_offset, ts, key_at, value_at, headers_at, _end) in enumerate(fields):
        body += encode_record(
            i, to_long(ts - first_ts), v2_key(buf, key_at), v2_value(buf, value_at), v2_headers(buf, headers_at)
        )
    return encode_batch(
        0,
        len(fields) - 1 if fields else 0,
        header.partition_leader_epoch,
        attributes_of(target, False, bool(header.attributes & 0x10), False, False),
        first_ts,
        max((r[1] for r in fields), default=-1),
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        len(fields),
        body,
    )
