"""Record-level walks over one batch: the (offset, timestamp) of each record, with no record objects
(spec §1.4, §1.6–§1.8), and the two reads built on them: Kafka's ``FileRecords.searchForTimestamp``
(§1.11 rule 10, §4.8) and ``RecordBatch.offsetOfMaxTimestamp``.

v2: the records (decompressed first if the batch is compressed, §1.3) are walked varint by varint:
key, value and headers are skipped by their lengths, never copied.  Offset = baseOffset + offsetDelta;
timestamp = baseTimestamp + timestampDelta, or maxTimestamp for a LogAppendTime batch (§1.4).
v0/v1: an uncompressed message is its own record (v0 timestamp −1).  A compressed wrapper holds
inner messages whose offsets are absolute (v0) or relative (v1: wrapper offset − last inner offset +
inner offset, base 0 when the wrapper offset is 0), and whose timestamps are the wrapper's under
LogAppendTime (§1.8).  Control batches are walked like any other (their keys are not interpreted).

A batch is walked whole before any of its records is returned (as the model's decoder does, and
Kafka for compressed batches), and is checked as Kafka's record iterators check it (§1.4 rule 9,
§1.6 parse rules, §1.8 rule 3): malformed content raises :class:`LogFormatError` with the Kafka
exception kind, the model's reason code and the batch position, never another exception.
"""

from __future__ import annotations

import struct

from impl.codecs import LIMIT, CodecError, OverLimit, SnappyChunkError, decompress
from impl.errors import LogFormatError
from impl.file_records import BatchScan

CORRUPT = "CorruptRecordException"
INVALID = "InvalidRecordException"
ILLEGAL = "IllegalArgumentException"
KAFKA = "KafkaException"

_M32, _M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
_int32 = struct.Struct(">i").unpack_from
_int64 = struct.Struct(">q").unpack_from
_entry = struct.Struct(">qi").unpack_from  # offset, size: the 12-byte log overhead
_magic_attrs = struct.Struct(">bb").unpack_from


class _Bad(Exception):
    def __init__(self, kind: str, reason: str, detail: str):
        super().__init__(kind, reason, detail)


class _Short(Exception):
    """The data ended inside a field."""


class _Long(Exception):
    """A varint longer than 5 (int32) or 10 (int64) bytes."""


def _varint(data, p: int, size: int = 5, mask: int = _M32) -> tuple[int, int]:
    """Zigzag varint at ``p`` (excess high bits dropped, as Kafka's register does): (value, next)."""
    end = len(data)
    if p < end:  # fast paths for 1 and 2 bytes, the common cases
        u = data[p]
        if u < 0x80:
            return (u >> 1) ^ -(u & 1), p + 1
        if p + 1 < end and data[p + 1] < 0x80:
            u = u & 0x7F | data[p + 1] << 7
            return (u >> 1) ^ -(u & 1), p + 2
    u = shift = 0
    for q in range(p, min(p + size, end)):
        b = data[q]
        u |= (b & 0x7F) << shift
        if b < 0x80:
            u &= mask
            return (u >> 1) ^ -(u & 1), q + 1
        shift += 7
    raise _Long if end - p >= size else _Short


def _skip(data, p: int) -> int:
    """Past the varint-length-prefixed bytes at ``p`` (a negative length is null: no bytes)."""
    n, p = _varint(data, p)
    if n > len(data) - p:
        raise _Short
    return p + n if n > 0 else p


def _v2(raw: bytes, h, limit: int, fields: bool = False):
    count = h.records_count
    codec = h.attributes & 0x07
    if fields and codec > 4:  # streamingIterator resolves the codec before it reads the count
        raise _Bad(ILLEGAL, "unknown-codec", f"Unknown compression type id: {codec}")
    if count < 0:
        raise _Bad(INVALID, "negative-record-count", f"Found invalid record count {count}")
    if count == 0:
        return (raw, []) if fields else []
    if codec > 4:
        raise _Bad(ILLEGAL, "unknown-codec", f"Unknown compression type id: {codec}")
    data, pos = (decompress(codec, memoryview(raw)[61:], limit), 0) if codec else (raw, 61)
    end = len(data)
    base, base_ts = h.offset, h.base_timestamp
    append_ts = h.max_timestamp if h.attributes & 0x08 else None
    out = []
    for _ in range(count):
        try:
            length, body = _varint(data, pos)
        except _Short:
            raise _Bad(INVALID, "premature-eof", "Incorrect declared batch size, premature EOF reached") from None
        except _Long:
            raise _Bad(ILLEGAL, "malformed-varint", "record length varint longer than 5 bytes") from None
        if length > end - body:
            raise _Bad(INVALID, "invalid-record-size", f"record length {length} exceeds the {end - body} bytes left")
        try:
            if body >= end:  # no attributes byte
                raise _Short
            ts_delta, p = _varint(data, body + 1, 10, _M64)
            offset_delta, p = _varint(data, p)
            key_at = p
            value_at = _skip(data, p)
            headers_at = _skip(data, value_at)
            headers, p = _varint(data, headers_at)
            if headers < 0:
                raise _Bad(INVALID, "negative-header-count", f"Found invalid number of record headers {headers}")
            if headers > end - p:
                raise _Bad(INVALID, "header-count-exceeds-remaining", f"{headers} headers in {end - p} bytes")
            for _ in range(headers):
                n, p = _varint(data, p)
                if n < 0:
                    raise _Bad(INVALID, "negative-header-key-length", "Invalid negative header key size")
                if n > end - p:
                    raise _Short
                p = _skip(data, p + n)  # the key, then the value
        except (_Short, _Long):
            raise _Bad(INVALID, "invalid-record-structure", "Found invalid record structure") from None
        if p - body != length:
            raise _Bad(INVALID, "record-size-mismatch", f"record length {length}, fields took {p - body} bytes")
        ts = base_ts + ts_delta if append_ts is None else append_ts
        out.append((base + offset_delta, ts, key_at, value_at, headers_at, p) if fields else (base + offset_delta, ts))
        pos = p
    if pos != end:
        raise _Bad(INVALID, "records-remaining", "Incorrect declared batch size, records still remaining")
    return (data, out) if fields else out


def _message(data, rec: int, end: int) -> tuple[int, int, int, int, int, int, int]:
    """The legacy record at ``rec`` (its crc field), ending at ``end``: (magic, attributes,
    timestamp, key position, key length, value position, value length); _Bad with reason "" for a
    magic other than 0/1, _Short for lengths that do not fit."""
    magic, attributes = _magic_attrs(data, rec + 4)
    if magic != 0 and magic != 1:
        raise _Bad(INVALID, "", f"invalid magic {magic} for a legacy record")
    p, ts = rec + 6, -1
    if magic == 1:
        if p + 8 > end:
            raise _Short
        ts = _int64(data, p)[0]
        p += 8
    key_at, key_len = _sized(data, p, end)
    p, n = _sized(data, key_at + max(key_len, 0), end)  # the value
    return magic, attributes, ts, key_at, key_len, p, n


def _sized(data, p: int, end: int) -> tuple[int, int]:
    """The int32 length at ``p`` (negative = null) and the position after it; _Short unless the
    length field and the bytes it announces fit before ``end``."""
    if p + 4 > end:
        raise _Short
    n = _int32(data, p)[0]
    if n > end - p - 4:
        raise _Short
    return p + 4, n


def _legacy(raw: bytes, h, limit: int, fields: bool = False):
    magic, attributes, ts, key_pos, key_len, value_pos, value_len = _wrapper(raw)
    codec = attributes & 0x07
    if codec == 0:
        return (raw, [(h.offset, ts, key_pos, key_len, value_pos, value_len, magic)]) if fields else [(h.offset, ts)]
    stream, entries = _deep_entries(raw, h, magic, codec, value_pos, value_len, limit)
    append_time = magic == 1 and attributes & 0x08  # LogAppendTime: every record has the wrapper's
    inner = []
    for offset, at in entries:
        _uncompressed(stream, at)
        try:
            inner_magic, _, inner_ts, kp, kl, vp, vl = _message(stream, at + 12, at + 12 + _entry(stream, at)[1])
        except (_Bad, _Short):
            raise _Bad(INVALID, "invalid-inner-record", f"malformed inner record at {at}") from None
        inner_ts = ts if append_time else inner_ts
        inner.append((offset, inner_ts, kp, kl, vp, vl, inner_magic) if fields else (offset, inner_ts))
    return (stream, inner) if fields else inner


def _wrapper(raw: bytes) -> tuple[int, int, int, int, int, int, int]:
    try:
        return _message(raw, 12, len(raw))
    except _Bad as e:
        raise _Bad(INVALID, "invalid-magic", e.args[2]) from None
    except _Short:
        raise _Bad(INVALID, "invalid-record-structure", "key or value length runs past the record") from None


def _deep_entries(raw: bytes, h, magic: int, codec: int, value_pos: int, value_len: int, limit: int):
    """The legacy deep iterator's constructor (§1.8.3): decompress the wrapper, frame its inner
    records (a short header or a truncated record ends them), make v1 offsets absolute.  Returns
    the stream and (offset, entry position) of each inner record, its fields unread."""
    if codec > 4:
        raise _Bad(ILLEGAL, "unknown-codec", f"Unknown compression type id: {codec}")
    if codec == 4:
        raise _Bad(INVALID, "zstd-in-legacy", "zstd is not allowed for magic < 2")
    if value_len < 0:
        raise _Bad(INVALID, "null-wrapper-value", "compressed wrapper has a null value")
    stream = decompress(codec, memoryview(raw)[value_pos : value_pos + value_len], limit, magic)
    entries, pos, end = [], 0, len(stream)
    while end - pos >= 12:
        offset, size = _entry(stream, pos)
        if size < 14:
            raise _Bad(CORRUPT, "inner-record-too-small", f"inner record size {size} < 14")
        if size > end - pos - 12:
            break
        entries.append((offset, pos))
        pos += 12 + size
    if not entries:
        raise _Bad(INVALID, "empty-wrapper", "compressed wrapper holds no records")
    if magic == 0:
        return stream, entries
    wrapper, last = h.offset, entries[-1][0]
    if wrapper < last and wrapper != 0:
        raise _Bad(INVALID, "wrapper-offset-below-last-inner", f"wrapper offset {wrapper} < last inner {last}")
    shift = wrapper - last if wrapper else 0
    return stream, [(offset + shift, at) for offset, at in entries]


def _uncompressed(stream, at: int) -> None:
    """The deep iterator's ``next()`` refuses an inner record that is itself compressed."""
    codec = stream[at + 17] & 0x07
    if codec > 4:
        raise _Bad(ILLEGAL, "unknown-codec", f"Unknown compression type id: {codec}")
    if codec:
        raise _Bad(INVALID, "nested-compression", "inner record is itself compressed")


def _legacy_base_offset(raw: bytes, h, limit: int) -> int:
    codec = raw[17] & 0x07
    if codec > 4:
        raise _Bad(ILLEGAL, "unknown-codec", f"Unknown compression type id: {codec}")
    if codec == 0:
        return h.offset
    magic, _, _, _, _, value_pos, value_len = _wrapper(raw)
    stream, entries = _deep_entries(raw, h, magic, codec, value_pos, value_len, limit)
    _uncompressed(stream, entries[0][1])
    return entries[0][0]


def _batch_bytes(buf, h) -> bytes:
    with memoryview(buf) as m:
        if m.format == "B" and m.ndim == 1:
            return bytes(m[h.position : h.position + h.size])
        with m.cast("B") as b:
            return bytes(b[h.position : h.position + h.size])


def records(buf, header, limit: int = LIMIT) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record of the batch ``header`` (a :class:`BatchHeader` of
    ``buf``), in order; a compressed batch may expand to at most ``limit`` bytes."""
    return _walk(buf, header, limit, False)


def lookup_records(buf, header) -> list[tuple[int, int]]:
    """:func:`records` as a lookup iterates them: a plain legacy message is its own record, its key
    and value never read (AbstractLegacyRecordBatch)."""
    if header.magic < 2 and not header.attributes & 0x07:  # no codec
        return [(header.offset, header.max_timestamp)]
    return records(buf, header)


def base_offset(buf, header, limit: int = LIMIT) -> int:
    """RecordBatch.baseOffset() of the batch ``header`` (§1.7): a v2 batch's first field; a legacy
    batch's first record's offset, which for a compressed wrapper means decompressing it
    (LogFormatError where that fails)."""
    if header.magic >= 2:
        return header.offset
    return _walk(buf, header, limit, None)


def _walk(buf, header, limit: int, fields: bool | None):
    """The records of one batch (``fields`` None: a legacy batch's base offset), its problems
    declared as LogFormatError at the batch's position."""
    try:
        raw = _batch_bytes(buf, header)
        if header.magic >= 2:
            return _v2(raw, header, limit, fields)
        return _legacy_base_offset(raw, header, limit) if fields is None else _legacy(raw, header, limit, fields)
    except _Bad as e:
        kind, reason, detail = e.args
    except OverLimit as e:
        kind, reason, detail = KAFKA, "decompression-limit", str(e)
    except SnappyChunkError as e:  # a java.lang.Error in Kafka: what catches Exception lets it through
        kind, reason, detail = "SnappyError", "snappy-chunk-size", str(e)
    except CodecError as e:
        kind, reason, detail = KAFKA, "corrupt-compressed-stream", str(e)
    raise LogFormatError(kind, reason, header.position, detail)


def record_fields(buf, header, limit: int = LIMIT):
    """The records of the batch ``header`` of ``buf`` with where their fields are, for the log
    cleaner: ``(data, records)`` where ``data`` is the batch bytes (or the decompressed stream) the
    positions point into.  v2 records are ``(offset, timestamp, key_at, value_at, headers_at, end)``
    — positions of the key's and value's length varints, of the header count, and of the record's
    end; legacy records are ``(offset, timestamp, key_at, key_len, value_at, value_len, magic)``
    (a negative length is null).  Checked as Kafka's ``streamingIterator`` checks a batch: as
    :func:`records`, except that a v2 batch's codec is resolved before its record count is read."""
    return _walk(buf, header, limit, True)


def v2_key(data, key_at: int):
    """The key of a v2 record whose key length varint is at ``key_at`` (:func:`record_fields`)."""
    n, p = _varint(data, key_at)
    return bytes(data[p : p + n]) if n >= 0 else None


def v2_value(data, value_at: int):
    """The value of a v2 record, as :func:`v2_key` (a slice of ``data``)."""
    n, p = _varint(data, value_at)
    return data[p : p + n] if n >= 0 else None


def v2_headers(data, headers_at: int) -> list[tuple[bytes, bytes | None]]:
    """The headers of a v2 record, from its header count at ``headers_at``."""
    count, p = _varint(data, headers_at)
    out = []
    for _ in range(count):
        n, p = _varint(data, p)
        key = data[p : p + n]
        p += n
        m, p = _varint(data, p)
        out.append((key, data[p : p + m] if m >= 0 else None))
        if m > 0:
            p += m
    return out


def timestamps_and_keys(buf, header, limit: int = LIMIT) -> list[tuple[int, bool]]:
    """(timestamp, whether it has a key) of every record of the v2 batch ``header``: what Kafka's
    LogValidator checks of a produce request's records (spec §4.14)."""
    data, out = record_fields(buf, header, limit)
    return [(ts, _varint(data, key_at)[0] >= 0) for _offset, ts, key_at, *_ in out]


def search_for_timestamp(buf, target_ts: int, start_position: int, starting_offset: int) -> tuple[int, int] | None:
    """FileRecords.searchForTimestamp: among the batches from ``start_position`` whose max timestamp
    is ≥ target, the first record with timestamp ≥ target and offset ≥ starting_offset, as
    (timestamp, offset); None if there is none."""
    scan = iter(BatchScan(buf, start_position, check_crc=False))  # by framing, as batchesFrom walks
    try:
        for header in scan:
            if header.max_timestamp >= target_ts:
                for offset, ts in lookup_records(buf, header):
                    if ts >= target_ts and offset >= starting_offset:
                        return ts, offset
        return None
    finally:
        scan.close()  # releases the scan's view of ``buf`` at once, even when a batch is malformed


def offset_of_max_timestamp(buf, header) -> int | None:
    """RecordBatch.offsetOfMaxTimestamp: the offset of the batch's first record carrying its max
    timestamp; None for magic 0, or if no record does."""
    if header.magic == 0:
        return None
    return next((offset for offset, ts in lookup_records(buf, header) if ts == header.max_timestamp), None)


def end_marker(buf, header, limit: int = LIMIT) -> tuple[str, int, int] | None:
    """The end-transaction marker of the control batch ``header``: (``"ABORT"`` or ``"COMMIT"``,
    coordinator epoch, the record's timestamp), from its first record (EndTransactionMarker:
    key = version, type; value = version, coordinator epoch).  None for a batch with no record;
    LogFormatError for a record too short or another control type."""
    data, found = record_fields(buf, header, limit)
    if not found:
        return None
    _offset, timestamp, key_at, value_at, _headers_at, _end = found[0]
    key, value = _field(data, key_at), _field(data, value_at)
    kind = {0: "ABORT", 1: "COMMIT"}.get(struct.unpack_from(">h", key, 2)[0] if key and len(key) >= 4 else None)
    if kind is None:
        raise LogFormatError(INVALID, "not-an-end-marker", header.position, "a control record that ends no transaction")
    if value is None or len(value) < 6:
        raise LogFormatError(
            INVALID, "invalid-end-txn-marker", header.position, "Invalid value size found for end transaction marker"
        )
    return kind, struct.unpack_from(">i", value, 2)[0], timestamp


def _field(data, at: int) -> bytes | None:
    n, p = _varint(data, at)
    return None if n < 0 else bytes(data[p : p + n])
