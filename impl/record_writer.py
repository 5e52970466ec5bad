"""Writing v2 record batches: what the log cleaner needs to rebuild a batch it filtered (spec §1.2,
§1.3, §1.5, §1.6; Kafka's ``MemoryRecordsBuilder``, ``DefaultRecord.writeTo``,
``DefaultRecordBatch.writeHeader`` / ``writeEmptyHeader``).

Sans-I/O: records are encoded with canonical (shortest) varints, record attributes 0, header keys
as UTF-8 strings (Kafka decodes a header key to a ``String`` and encodes it back, so malformed
UTF-8 comes out as U+FFFD); the records are compressed as a whole with :func:`impl.codecs.compress`;
the CRC-32C covers attributes to the end.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from impl.codecs import compress

HEADER_SIZE = 61  # RECORD_BATCH_OVERHEAD
_M32, _M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
_header = struct.Struct(">qiibIhiqqqhii")  # the whole v2 header, §1.2
_crc = struct.Struct(">I")

COMPRESSION_MASK, LOG_APPEND_TIME, TRANSACTIONAL, CONTROL, DELETE_HORIZON = 0x07, 0x08, 0x10, 0x20, 0x40


def to_long(n: int) -> int:
    """``n`` wrapped to a Java long (Kafka's arithmetic on timestamps overflows silently)."""
    return (n + 2**63) % 2**64 - 2**63


def _unsigned_varint(u: int, out: bytearray) -> None:
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)


def write_varint(n: int, out: bytearray) -> None:
    """Zigzag int32 (ByteUtils.writeVarint)."""
    _unsigned_varint(((n << 1) ^ (n >> 31)) & _M32, out)


def write_varlong(n: int, out: bytearray) -> None:
    """Zigzag int64 (ByteUtils.writeVarlong)."""
    _unsigned_varint(((n << 1) ^ (n >> 63)) & _M64, out)


def _write_bytes(b, out: bytearray) -> None:
    if b is None:
        write_varint(-1, out)
    else:
        write_varint(len(b), out)
        out += b


def encode_record(
    offset_delta: int, timestamp_delta: int, key, value, headers: list[tuple[bytes, bytes | None]]
) -> bytearray:
    """One record (DefaultRecord.writeTo): length, attributes 0, deltas, key, value, headers."""
    body = bytearray(b"\x00")
    write_varlong(timestamp_delta, body)
    write_varint(offset_delta, body)
    _write_bytes(key, body)
    _write_bytes(value, body)
    write_varint(len(headers), body)
    for header_key, header_value in headers:
        key_bytes = bytes(header_key).decode("utf-8", "replace").encode("utf-8")
        write_varint(len(key_bytes), body)
        body += key_bytes
        _write_bytes(header_value, body)
    out = bytearray()
    write_varint(len(body), out)
    out += body
    return out


def attributes_of(codec: int, log_append_time: bool, transactional: bool, control: bool, horizon: bool) -> int:
    """DefaultRecordBatch.computeAttributes: bits 7–15 written 0."""
    return (
        codec & COMPRESSION_MASK
        | (LOG_APPEND_TIME if log_append_time else 0)
        | (TRANSACTIONAL if transactional else 0)
        | (CONTROL if control else 0)
        | (DELETE_HORIZON if horizon else 0)
    )


def encode_batch(
    base_offset: int,
    last_offset_delta: int,
    partition_leader_epoch: int,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    count: int,
    records,
) -> bytes:
    """A whole v2 batch (DefaultRecordBatch.writeHeader) around ``records`` — the encoded records,
    compressed here with the codec of ``attributes``."""
    codec = attributes & COMPRESSION_MASK
    payload = compress(codec, records) if codec else records
    out = bytearray(HEADER_SIZE)
    out += payload
    _header.pack_into(
        out,
        0,
        base_offset,
        len(out) - 12,
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    _crc.pack_into(out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def encode_empty_batch(
    base_offset: int,
    last_offset_delta: int,
    partition_leader_epoch: int,
    log_append_time: bool,
    transactional: bool,
    control: bool,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
) -> bytes:
    """DefaultRecordBatch.writeEmptyHeader: no records, no codec, baseTimestamp −1, no delete horizon."""
    attributes = attributes_of(0, log_append_time, transactional, control, False)
    return encode_batch(
        base_offset,
        last_offset_delta,
        partition_leader_epoch,
        attributes,
        -1,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        0,
        b"",
    )


def stamp_log_append_time(data: bytearray, position: int, size: int, now: int) -> None:
    """DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, now) on the v2 batch at ``position``
    (LogValidator under ``message.timestamp.type=LogAppendTime``, §4.14): attributes recomputed
    (codec, transactional, control, delete horizon kept; the timestamp-type bit set), the max
    timestamp made ``now``, the CRC-32C over attributes..end written again."""
    view = memoryview(data)
    kept = int.from_bytes(view[position + 21 : position + 23], "big") & (
        COMPRESSION_MASK | TRANSACTIONAL | CONTROL | DELETE_HORIZON
    )
    view[position + 21 : position + 23] = (kept | LOG_APPEND_TIME).to_bytes(2, "big")
    view[position + 35 : position + 43] = now.to_bytes(8, "big", signed=True)
    view[position + 17 : position + 21] = crc32c(view[position + 21 : position + size]).to_bytes(4, "big")
    view.release()  # the bytearray may be resized again
