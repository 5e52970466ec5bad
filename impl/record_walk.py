"""Record-level walks over one batch: (offset, timestamp) of each record, without building record
objects (spec §1.6–§1.8).  Used by the two reads that look inside batches: Kafka's
``FileRecords.searchForTimestamp`` (offset for a timestamp, §4.8 rule 5) and
``RecordBatch.offsetOfMaxTimestamp`` (the max-timestamp lookup).

v2: each record is skipped by its length prefix after reading its timestamp and offset deltas.
v0/v1: a shallow message is its own record; a compressed wrapper's value holds the inner messages,
whose offsets are absolute (v0) or relative to the wrapper's (v1: wrapper offset − last inner
offset + inner offset), and whose timestamps are the wrapper's under LogAppendTime.  Malformed
content raises :class:`impl.errors.LogFormatError` naming the batch position.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from impl.codecs import CodecError, decompress
from impl.errors import LogFormatError
from impl.file_records import BatchScan

CORRUPT_RECORD = "CorruptRecordException"
_LEGACY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes


class _Truncated(Exception):
    pass


def _varint(buf, pos: int) -> tuple[int, int]:
    """Zigzag varint (up to 10 bytes) at ``pos``: (value, next position)."""
    shift = raw = 0
    while True:
        if pos >= len(buf):
            raise _Truncated
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise _Truncated


def _v2(buf, h) -> Iterator[tuple[int, int]]:
    payload = memoryview(buf)[h.position + 61 : h.position + h.size]
    codec = h.attributes & 0x07
    if codec:
        payload = decompress(codec, payload)
    log_append = bool(h.attributes & 0x08)
    pos = 0
    for _ in range(max(h.records_count, 0)):
        length, start = _varint(payload, pos)
        if length < 0 or start + length > len(payload):
            raise _Truncated
        ts_delta, p = _varint(payload, start + 1)
        offset_delta, _ = _varint(payload, p)
        yield h.offset + offset_delta, h.max_timestamp if log_append else h.base_timestamp + ts_delta
        pos = start + length


def _legacy_messages(data, inner: bool = False) -> Iterator[tuple[int, int, int, int, bytes | None]]:
    """(offset, magic, timestamp, attributes, value) of each message in ``data``.  Inside a wrapper
    a short or truncated last message ends the iteration, as Kafka's inner iterator does."""
    pos = 0
    while len(data) - pos >= 12:
        offset, size = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + size
        if size < 14:
            raise _Truncated
        if end > len(data):
            if inner:
                return
            raise _Truncated
        _, _, _, magic, attributes = _LEGACY.unpack_from(data, pos)
        p = pos + 26 if magic == 1 else pos + 18
        ts = struct.unpack_from(">q", data, pos + 18)[0] if magic == 1 else -1
        key_len = struct.unpack_from(">i", data, p)[0]
        p += 4 + max(key_len, 0)
        value_len = struct.unpack_from(">i", data, p)[0]
        if p + 4 + max(value_len, 0) > end:
            raise _Truncated
        value = None if value_len < 0 else bytes(data[p + 4 : p + 4 + value_len])
        yield offset, magic, ts, attributes, value
        pos = end


def _legacy(buf, h) -> Iterator[tuple[int, int]]:
    data = memoryview(buf)[h.position : h.position + h.size]
    for offset, magic, ts, attributes, value in _legacy_messages(data):
        codec = attributes & 0x07
        if not codec:
            yield offset, ts
            continue
        inner = list(_legacy_messages(decompress(codec, value or b"", magic=magic), inner=True))
        if not inner:
            raise _Truncated
        shift = offset - inner[-1][0] if magic == 1 and offset != 0 else 0
        for inner_offset, _, inner_ts, _, _ in inner:
            yield inner_offset + shift, ts if magic == 1 and attributes & 0x08 else inner_ts


def records(buf, header) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of every record of the batch at ``header``."""
    walk = _v2 if header.magic >= 2 else _legacy
    try:
        yield from walk(buf, header)
    except (_Truncated, struct.error, IndexError) as e:
        raise LogFormatError(
            CORRUPT_RECORD, "record-truncated", header.position, str(e) or "record runs past its batch"
        ) from None
    except CodecError as e:
        raise LogFormatError(CORRUPT_RECORD, "decompression-failed", header.position, str(e)) from None


def search_for_timestamp(buf, target: int, start_position: int, starting_offset: int) -> tuple[int, int] | None:
    """The first record at or after ``start_position`` with timestamp ≥ target and offset ≥
    starting_offset, as (timestamp, offset); None if there is none."""
    for header in BatchScan(buf, start_position):
        if header.max_timestamp >= target:
            for offset, ts in records(buf, header):
                if ts >= target and offset >= starting_offset:
                    return ts, offset
    return None


def offset_of_max_timestamp(buf, header) -> int | None:
    if header.magic == 0:
        return None
    return next((offset for offset, ts in records(buf, header) if ts == header.max_timestamp), None)
