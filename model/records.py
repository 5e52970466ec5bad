"""Record batches as Kafka writes them: magic v2 batches and legacy v0/v1 messages (spec §1.1–§1.9).

Values in, bytes out (``encode_*``/``build_*``); bytes in, values out (``Batch``, ``records_of``).
Every rule cites the spec paragraph it comes from.  Nothing here knows about files: the iteration
rules for a ``.log`` file live in :mod:`model.file_records`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence

import attrs
import crc32c

from model import compression
from model.errors import CORRUPT_RECORD, ILLEGAL_ARGUMENT, INVALID_RECORD, KAFKA, SNAPPY_ERROR, RecordFormatError
from model.varint import VarintError, VarintTruncated, decode_varint, decode_varlong, encode_varint, encode_varlong

# §1.1 common framing
OFFSET_LENGTH = 8
LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
MAGIC_OFFSET = 16
# §1.2 v2 header
V2_HEADER_SIZE = 61
V2_CRC_START = 21  # §1.5: CRC-32C covers [attributes, end of batch)
# §1.7 legacy record
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
LEGACY_CRC_START = 16  # CRC-32 covers [magic, end of record)

NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1

# §1.3 attribute bits (v2) / §1.7 (legacy)
CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_TIMESTAMP_TYPE, CREATE_TIME, LOG_APPEND_TIME = "NoTimestampType", "CreateTime", "LogAppendTime"

# §1.6 control record types
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

_V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte header of §1.2, in field order
_LEGACY_HEADER = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes (18 bytes)


def _int64(b: bytes, pos: int) -> int:
    return struct.unpack_from(">q", b, pos)[0]


def _int32(b: bytes, pos: int) -> int:
    return struct.unpack_from(">i", b, pos)[0]


def wrap_sequence(base: int, delta: int) -> int:
    """§1.4.6: sequence numbers wrap from INT32_MAX to 0; −1 (no sequence) stays −1."""
    if base == -1:
        return -1
    if base > INT32_MAX - delta:
        return delta - (INT32_MAX - base) - 1
    return base + delta


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class Header:
    """The shallow view of one batch: what a reader learns without touching the records.

    Field names are the conformance vocabulary shared (by name, not by code) with ``impl``.  For
    legacy batches the v2-only fields hold Kafka's sentinels: partition_leader_epoch, producer_id,
    producer_epoch, base_sequence = −1; records_count = −1 ("unknown", §1.4.8); last_offset_delta =
    −1; base_timestamp = max_timestamp = the message timestamp (v1) or −1 (v0).
    """

    position: int
    size: int  # whole batch: 12 + size field
    offset: int  # first 8 bytes: v2 base offset; legacy: the (last) offset of the message
    last_offset: int
    magic: int
    crc: int
    attributes: int  # as stored (int16 for v2, int8 for legacy)
    partition_leader_epoch: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


@attrs.frozen
class Record:
    """A v2 record as encoded (§1.6): deltas relative to its batch."""

    offset_delta: int = 0
    timestamp_delta: int = 0
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[tuple[bytes, bytes | None], ...] = ()
    attributes: int = 0


@attrs.frozen
class LogicalRecord:
    """A record as a consumer sees it, after decompression and offset/timestamp resolution."""

    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes, bytes | None], ...] = ()
    sequence: int = -1
    magic: int = 2
    crc: int | None = None  # legacy only
    crc_valid: bool | None = None  # legacy only
    control_type: str | None = None  # control batches only
    coordinator_epoch: int | None = None  # end-transaction markers only


# ---------------------------------------------------------------------------------------------
# Encoding: v2 (§1.2–§1.6)
# ---------------------------------------------------------------------------------------------


def encode_record(r: Record) -> bytes:
    body = bytearray()
    body.append(r.attributes & 0xFF)
    body += encode_varlong(r.timestamp_delta)
    body += encode_varint(r.offset_delta)
    for blob in (r.key, r.value):
        if blob is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(blob)) + blob
    body += encode_varint(len(r.headers))
    for hkey, hvalue in r.headers:
        body += encode_varint(len(hkey)) + hkey
        body += encode_varint(-1) if hvalue is None else encode_varint(len(hvalue)) + hvalue
    return encode_varint(len(body)) + bytes(body)


def encode_batch_v2(
    *,
    base_offset: int = 0,
    records: Sequence[Record] = (),
    codec: int = compression.NONE,
    timestamp_type: str = CREATE_TIME,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: bool = False,
    base_timestamp: int = NO_TIMESTAMP,
    max_timestamp: int = NO_TIMESTAMP,
    last_offset_delta: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    records_count: int | None = None,
    magic: int = 2,
    extra_attribute_bits: int = 0,
    crc: int | None = None,
    payload: bytes | None = None,
) -> bytes:
    """Encode a v2 batch with every header field under the caller's control.

    Defaults follow Kafka's writer: last_offset_delta = last record's offset delta (0 if empty),
    records_count = len(records), crc computed.  Passing explicit values builds batches Kafka would
    never write, which is what damage tests need; ``payload`` replaces the encoded (and compressed)
    records section with arbitrary bytes under a valid CRC.
    """
    attributes = (
        (codec & CODEC_MASK)
        | (TIMESTAMP_TYPE_BIT if timestamp_type == LOG_APPEND_TIME else 0)
        | (TRANSACTIONAL_BIT if transactional else 0)
        | (CONTROL_BIT if control else 0)
        | (DELETE_HORIZON_BIT if delete_horizon else 0)
        | extra_attribute_bits
    )
    if payload is None:
        payload = b"".join(encode_record(r) for r in records)
        payload = compression.compress(codec, payload, magic=2) if codec else payload
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset_delta if records else 0
    if records_count is None:
        records_count = len(records)
    length = V2_HEADER_SIZE - LOG_OVERHEAD + len(payload)
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            _as_int16(attributes),
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            records_count,
        )
        + payload
    )
    if crc is None:
        crc = crc32c.crc32c(after_crc)
    return struct.pack(">qiibI", base_offset, length, partition_leader_epoch, magic, crc) + after_crc


def _as_int16(v: int) -> int:
    v &= 0xFFFF
    return v - 0x10000 if v >= 0x8000 else v


def build_batch_v2(
    base_offset: int,
    entries: Iterable[tuple[int, bytes | None, bytes | None] | tuple[int, bytes | None, bytes | None, tuple]],
    *,
    codec: int = compression.NONE,
    timestamp_type: str = CREATE_TIME,
    log_append_time: int | None = None,
    **fields,
) -> bytes:
    """Kafka's writer (MemoryRecordsBuilder) for the common case: records given as
    ``(timestamp, key, value[, headers])`` at consecutive offsets from ``base_offset``.

    baseTimestamp = first record's timestamp; maxTimestamp = the largest (or ``log_append_time``
    for LogAppendTime batches).
    """
    entries = list(entries)
    timestamps = [e[0] for e in entries]
    base_ts = timestamps[0] if timestamps else NO_TIMESTAMP
    records = [
        Record(
            offset_delta=i,
            timestamp_delta=e[0] - base_ts,
            key=e[1],
            value=e[2],
            headers=tuple(e[3]) if len(e) > 3 else (),
        )
        for i, e in enumerate(entries)
    ]
    if timestamp_type == LOG_APPEND_TIME:
        max_ts = log_append_time if log_append_time is not None else NO_TIMESTAMP
    else:
        max_ts = max(timestamps) if timestamps else NO_TIMESTAMP
    return encode_batch_v2(
        base_offset=base_offset,
        records=records,
        codec=codec,
        timestamp_type=timestamp_type,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        **fields,
    )


def build_control_batch(
    base_offset: int,
    control_type: int,
    timestamp: int,
    *,
    coordinator_epoch: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transactional control batch with one marker record (§1.6): key = (version 0, type),
    value = (version 0, coordinator epoch) for ABORT/COMMIT."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch) if control_type in (0, 1) else b""
    return encode_batch_v2(
        base_offset=base_offset,
        records=[Record(key=key, value=value)],
        transactional=True,
        control=True,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
    )


# ---------------------------------------------------------------------------------------------
# Encoding: legacy v0/v1 (§1.7, §1.8)
# ---------------------------------------------------------------------------------------------


def encode_legacy_record(
    magic: int, key: bytes | None, value: bytes | None, timestamp: int = NO_TIMESTAMP, attributes: int = 0
) -> bytes:
    """The legacy record (crc, magic, attributes, [timestamp], key, value) without log overhead."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for blob in (key, value):
        body += struct.pack(">i", -1) if blob is None else struct.pack(">i", len(blob)) + blob
    return struct.pack(">I", zlib.crc32(body)) + body


def encode_legacy_entry(offset: int, record: bytes) -> bytes:
    return struct.pack(">qi", offset, len(record)) + record


def encode_legacy_message(
    magic: int,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    timestamp: int = NO_TIMESTAMP,
    attributes: int = 0,
) -> bytes:
    """One uncompressed legacy message with its 12-byte log overhead, as it sits in a ``.log``."""
    return encode_legacy_entry(offset, encode_legacy_record(magic, key, value, timestamp, attributes))


def build_legacy_wrapper(
    magic: int,
    codec: int,
    last_offset: int,
    entries: Sequence[tuple[int, bytes | None, bytes | None]],
    *,
    timestamp_type: str = CREATE_TIME,
    log_append_time: int | None = None,
) -> bytes:
    """A compressed legacy wrapper (§1.8) holding ``(timestamp, key, value)`` entries.

    v0: inner offsets are absolute (last_offset − n + 1 …); v1: inner offsets are relative 0…n−1 and
    the wrapper offset is the absolute last offset.  The wrapper timestamp (v1) is the largest inner
    timestamp, or ``log_append_time`` for LogAppendTime.
    """
    n = len(entries)
    inner = bytearray()
    for i, (ts, key, value) in enumerate(entries):
        inner_offset = i if magic == 1 else last_offset - n + 1 + i
        inner += encode_legacy_entry(inner_offset, encode_legacy_record(magic, key, value, ts))
    ts_bit = TIMESTAMP_TYPE_BIT if (magic == 1 and timestamp_type == LOG_APPEND_TIME) else 0
    if magic == 1:
        wrapper_ts = (
            log_append_time
            if timestamp_type == LOG_APPEND_TIME and log_append_time is not None
            else max((e[0] for e in entries), default=NO_TIMESTAMP)
        )
    else:
        wrapper_ts = NO_TIMESTAMP
    value = compression.compress(codec, bytes(inner), magic=magic)
    return encode_legacy_message(magic, last_offset, None, value, wrapper_ts, codec | ts_bit)


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class Batch:
    """One complete batch as found at ``position`` (``raw`` = exactly 12 + size-field bytes)."""

    position: int
    raw: bytes

    @property
    def magic(self) -> int:
        return struct.unpack_from(">b", self.raw, MAGIC_OFFSET)[0]

    @property
    def is_v2(self) -> bool:
        # §1.10 rule 6: magic < 2 (negative included) is legacy, anything else parses as v2.
        return self.magic >= 2

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def attributes(self) -> int:
        """The attribute bits a reader acts on: v2 reads the int16 and keeps the low byte (§1.3)."""
        if self.is_v2:
            return struct.unpack_from(">h", self.raw, 21)[0] & 0xFF
        return self.raw[17]

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> str:
        if not self.is_v2 and self.magic != 1:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return self.is_v2 and bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return self.is_v2 and bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return self.is_v2 and bool(self.attributes & DELETE_HORIZON_BIT)

    def header(self) -> Header:
        """The shallow header (requires a v2 batch of at least 61 bytes, §1.9)."""
        raw = self.raw
        if self.is_v2:
            (base, length, ple, magic, crc, attrs_, lod, base_ts, max_ts, pid, pepoch, bseq, count) = (
                _V2_HEADER.unpack_from(raw, 0)
            )
            return Header(
                self.position, len(raw), base, base + lod, magic, crc, attrs_, ple, lod,
                base_ts, max_ts, pid, pepoch, bseq, count,
            )  # fmt: skip
        offset, _, crc, magic, attributes = _LEGACY_HEADER.unpack_from(raw, 0)
        ts = _int64(raw, 18) if magic == 1 else NO_TIMESTAMP
        return Header(self.position, len(raw), offset, offset, magic, crc, attributes, -1, -1, ts, ts, -1, -1, -1, -1)

    # --- §1.9 ensureValid --------------------------------------------------------------------

    def validation_error(self) -> RecordFormatError | None:
        """What ``ensureValid`` would throw for this batch, or None."""
        raw = self.raw
        if self.is_v2:
            if len(raw) < V2_HEADER_SIZE:
                return RecordFormatError(
                    CORRUPT_RECORD, "batch-too-small", self.position,
                    f"record batch size {len(raw)} is smaller than the minimum allowed overhead {V2_HEADER_SIZE}",
                )  # fmt: skip
            stored = struct.unpack_from(">I", raw, 17)[0]
            computed = crc32c.crc32c(raw[V2_CRC_START:])
        else:
            if len(raw) - LOG_OVERHEAD < RECORD_OVERHEAD_V0:
                return RecordFormatError(
                    CORRUPT_RECORD, "record-too-small", self.position,
                    "crc could not be retrieved as the record is too small",
                )  # fmt: skip
            stored = struct.unpack_from(">I", raw, 12)[0]
            computed = zlib.crc32(raw[LEGACY_CRC_START:])
        if stored != computed:
            return RecordFormatError(
                CORRUPT_RECORD, "crc-mismatch", self.position,
                f"stored crc {stored} does not match computed crc {computed}",
            )  # fmt: skip
        return None

    def is_valid(self) -> bool:
        return self.validation_error() is None

    # --- deep iteration ------------------------------------------------------------------------

    def records(self, max_output: int = compression.DEFAULT_MAX_OUTPUT) -> list[LogicalRecord]:
        """Every record of the batch (decompressing as needed); raise RecordFormatError."""
        if self.is_v2:
            return _v2_records(self, max_output)
        return _legacy_records(self, max_output)

    def iter_records(self) -> Iterator[LogicalRecord]:
        """The records of :meth:`records`, decoded one at a time from a decompressing stream, the
        way Kafka's record iterators read them (``DefaultRecordBatch.compressedIterator``,
        ``AbstractLegacyRecordBatch.DeepRecordsIterator``): a RecordFormatError is raised when the
        bad part is reached, after the records before it.  Memory is one record (and one
        decompressed chunk), not the batch's whole expansion, so there is no cap on the total;
        one record may take at most ``DEFAULT_MAX_OUTPUT`` bytes."""
        if self.is_v2:
            return _v2_record_stream(self)
        return _legacy_record_stream(self)

    def offsets_and_timestamps(self) -> list[tuple[int, int]]:
        """(offset, timestamp) of each record as a lookup iterates them (searchForTimestamp,
        offsetOfMaxTimestamp): a plain legacy message is its own record, its key and value never
        read (AbstractLegacyRecordBatch's iterator); otherwise the records decoded."""
        if not self.is_v2 and self.codec == compression.NONE:
            h = self.header()
            return [(h.offset, h.max_timestamp)]
        return [(r.offset, r.timestamp) for r in self.records()]

    def base_offset(self, max_output: int = compression.DEFAULT_MAX_OUTPUT) -> int:
        """RecordBatch.baseOffset() (§1.7): a v2 batch's first field; a legacy batch's first
        record's offset, which for a compressed wrapper means decompressing it (RecordFormatError
        where that fails)."""
        if self.is_v2:
            return _int64(self.raw, 0)
        return _legacy_base_offset(self, max_output)


def _err(kind: str, reason: str, batch: Batch, detail: str = "") -> RecordFormatError:
    return RecordFormatError(kind, reason, batch.position, detail)


def _codec_or_raise(batch: Batch, codec: int) -> None:
    if codec not in compression.CODEC_NAMES:
        raise _err(ILLEGAL_ARGUMENT, "unknown-codec", batch, f"Unknown compression type id: {codec}")


def _decompress(batch: Batch, codec: int, data: bytes, magic: int, max_output: int) -> bytes:
    try:
        return compression.decompress(codec, data, magic=magic, max_output=max_output)
    except compression.OutputLimitExceeded as e:
        raise _err(KAFKA, "decompression-limit", batch, str(e)) from None
    except compression.SnappyChunkError as e:
        raise _err(SNAPPY_ERROR, "snappy-chunk-size", batch, str(e)) from None
    except compression.CompressionError as e:
        raise _err(KAFKA, "corrupt-compressed-stream", batch, str(e)) from None


def _v2_records(batch: Batch, max_output: int) -> list[LogicalRecord]:
    h = batch.header()
    if h.records_count < 0:  # §1.4.9
        raise _err(INVALID_RECORD, "negative-record-count", batch, f"Found invalid record count {h.records_count}")
    if h.records_count == 0:
        return []
    codec = batch.codec
    _codec_or_raise(batch, codec)
    data = batch.raw[V2_HEADER_SIZE:]
    if codec != compression.NONE:
        data = _decompress(batch, codec, data, 2, max_output)
    out: list[LogicalRecord] = []
    pos = 0
    for _ in range(h.records_count):
        record, pos = _parse_record(batch, data, pos)
        out.append(_resolve_v2(batch, h, record))
    if pos != len(data):
        raise _err(INVALID_RECORD, "records-remaining", batch, "Incorrect declared batch size, records still remaining")
    return out


def _record_length(batch: Batch, data: bytes, pos: int) -> tuple[int, int]:
    """§1.6 rule 1: a record's length varint at ``pos``, and where its body starts."""
    try:
        return decode_varint(data, pos)
    except VarintTruncated:
        raise _err(
            INVALID_RECORD, "premature-eof", batch, "Incorrect declared batch size, premature EOF reached"
        ) from None
    except VarintError as e:
        raise _err(ILLEGAL_ARGUMENT, "malformed-varint", batch, str(e)) from None


def _parse_record(batch: Batch, data: bytes, pos: int) -> tuple[Record, int]:
    """§1.6 record parse rules 1–5; returns the record and the position after it."""
    length, body = _record_length(batch, data, pos)
    if len(data) - body < length:
        raise _err(INVALID_RECORD, "invalid-record-size", batch, f"record length {length} exceeds the bytes remaining")
    try:
        attributes = data[body]
        p = body + 1
        ts_delta, p = decode_varlong(data, p)
        off_delta, p = decode_varint(data, p)
        key, p = _read_blob(data, p)
        value, p = _read_blob(data, p)
        n_headers, p = decode_varint(data, p)
        if n_headers < 0:
            raise _err(
                INVALID_RECORD, "negative-header-count", batch, f"Found invalid number of record headers {n_headers}"
            )
        if n_headers > len(data) - p:
            raise _err(INVALID_RECORD, "header-count-exceeds-remaining", batch, f"{n_headers} headers")
        headers = []
        for _ in range(n_headers):
            klen, p = decode_varint(data, p)
            if klen < 0:
                raise _err(INVALID_RECORD, "negative-header-key-length", batch, "Invalid negative header key size")
            hkey, p = _take(data, p, klen)
            hvalue, p = _read_blob(data, p)
            headers.append((hkey, hvalue))
    except (VarintError, IndexError) as e:
        raise _err(INVALID_RECORD, "invalid-record-structure", batch, f"Found invalid record structure: {e}") from None
    if p - body != length:
        raise _err(INVALID_RECORD, "record-size-mismatch", batch, f"expected {length} body bytes, read {p - body}")
    return Record(off_delta, ts_delta, key, value, tuple(headers), attributes), p


def _take(data: bytes, p: int, n: int) -> tuple[bytes, int]:
    if n > len(data) - p:
        raise IndexError(f"length {n} exceeds the {len(data) - p} bytes remaining")
    return bytes(data[p : p + n]), p + n


def _read_blob(data: bytes, p: int) -> tuple[bytes | None, int]:
    n, p = decode_varint(data, p)
    if n < 0:
        return None, p
    return _take(data, p, n)


def _resolve_v2(batch: Batch, h: Header, r: Record) -> LogicalRecord:
    ts_type = batch.timestamp_type
    timestamp = h.max_timestamp if ts_type == LOG_APPEND_TIME else h.base_timestamp + r.timestamp_delta
    control_type = coordinator_epoch = None
    if batch.is_control:
        control_type, coordinator_epoch = _parse_control(batch, r)
    return LogicalRecord(
        offset=h.offset + r.offset_delta,
        timestamp=timestamp,
        timestamp_type=ts_type,
        key=r.key,
        value=r.value,
        headers=r.headers,
        sequence=wrap_sequence(h.base_sequence, r.offset_delta),
        magic=h.magic,
        control_type=control_type,
        coordinator_epoch=coordinator_epoch,
    )


def _parse_control(batch: Batch, r: Record) -> tuple[str, int | None]:
    """§1.6 control records: key (int16 version, int16 type); end-txn value (int16, int32)."""
    if r.key is None or len(r.key) < 4:
        raise _err(INVALID_RECORD, "invalid-control-key", batch, "Invalid value size found for end control record key")
    ctype = CONTROL_TYPES.get(struct.unpack_from(">h", r.key, 2)[0], "UNKNOWN")
    if ctype not in ("ABORT", "COMMIT"):
        return ctype, None
    if r.value is None or len(r.value) < 6:
        raise _err(
            INVALID_RECORD, "invalid-end-txn-marker", batch, "Invalid value size found for end transaction marker"
        )
    return ctype, struct.unpack_from(">i", r.value, 2)[0]


def _legacy_fields(raw: bytes, rec: int, end: int) -> tuple[int, int, int, bytes | None, bytes | None]:
    """Parse a legacy record at ``rec`` (its crc field) ending at ``end``:
    (magic, attributes, timestamp, key, value).  Raises IndexError on inconsistent lengths."""
    magic, attributes = struct.unpack_from(">bb", raw, rec + 4)
    if magic not in (0, 1):
        raise ValueError(f"invalid magic {magic} for a legacy record")
    p = rec + 6
    timestamp = NO_TIMESTAMP
    if magic == 1:
        if p + 8 > end:
            raise IndexError("record too short for a v1 timestamp")
        timestamp = _int64(raw, p)
        p += 8
    blobs = []
    for _ in range(2):
        if p + 4 > end:
            raise IndexError("record ends inside a length field")
        n = _int32(raw, p)
        p += 4
        if n < 0:
            blobs.append(None)
            continue
        if n > end - p:
            raise IndexError(f"length {n} exceeds the {end - p} bytes remaining in the record")
        blobs.append(bytes(raw[p : p + n]))
        p += n
    return magic, attributes, timestamp, blobs[0], blobs[1]


def _legacy_records(batch: Batch, max_output: int) -> list[LogicalRecord]:
    raw = batch.raw
    wrapper_offset = _int64(raw, 0)
    magic, attributes, timestamp, key, value = _wrapper_fields(batch)
    codec = attributes & CODEC_MASK
    ts_type = batch.timestamp_type
    crc = struct.unpack_from(">I", raw, 12)[0]
    if codec == compression.NONE:
        return [LogicalRecord(wrapper_offset, timestamp, ts_type, key, value, (), -1, magic, crc, batch.is_valid())]
    stream, inner = _deep_entries(batch, magic, codec, value, max_output)
    out = []
    for offset, rec, size in inner:
        _first_is_uncompressed(batch, stream, rec)
        try:
            imagic, _, its, ikey, ivalue = _legacy_fields(stream, rec, rec + size)
        except (ValueError, IndexError) as e:
            raise _err(INVALID_RECORD, "invalid-inner-record", batch, str(e)) from None
        icrc = struct.unpack_from(">I", stream, rec)[0]
        icrc_ok = icrc == zlib.crc32(stream[rec + 4 : rec + size])
        if magic == 1 and ts_type == LOG_APPEND_TIME:
            its = timestamp
        out.append(LogicalRecord(offset, its, ts_type, ikey, ivalue, (), -1, imagic, icrc, icrc_ok))
    return out


def _legacy_base_offset(batch: Batch, max_output: int) -> int:
    """AbstractLegacyRecordBatch.baseOffset(): the first record of its deep iterator — the message
    itself when uncompressed; a compressed wrapper is decompressed whole to find its first inner
    record (§1.7), its records' fields unread."""
    attributes = batch.raw[17]
    _codec_or_raise(batch, attributes & CODEC_MASK)
    if attributes & CODEC_MASK == compression.NONE:
        return _int64(batch.raw, 0)
    magic, attributes, _, _, value = _wrapper_fields(batch)
    stream, inner = _deep_entries(batch, magic, attributes & CODEC_MASK, value, max_output)
    offset, rec, _ = inner[0]
    _first_is_uncompressed(batch, stream, rec)
    return offset


def _wrapper_fields(batch: Batch) -> tuple[int, int, int, bytes | None, bytes | None]:
    try:
        return _legacy_fields(batch.raw, LOG_OVERHEAD, len(batch.raw))
    except ValueError as e:
        raise _err(INVALID_RECORD, "invalid-magic", batch, str(e)) from None
    except IndexError as e:
        raise _err(INVALID_RECORD, "invalid-record-structure", batch, str(e)) from None


def _deep_entries(batch: Batch, magic: int, codec: int, value, max_output: int) -> tuple[bytes, list]:
    """§1.8.3, the deep iterator's constructor: decompress the wrapper's value and frame every inner
    record (a short header or a truncated record ends them), then make v1's relative offsets
    absolute.  Returns the stream and (offset, record position, record size) of each inner record;
    their fields are read only as each record is used."""
    _codec_or_raise(batch, codec)
    if codec == compression.ZSTD:
        raise _err(INVALID_RECORD, "zstd-in-legacy", batch, "zstd is not allowed for magic < 2")
    if value is None:
        raise _err(INVALID_RECORD, "null-wrapper-value", batch, "compressed wrapper has a null value")
    stream = _decompress(batch, codec, value, magic, max_output)
    inner = []
    pos = 0
    while len(stream) - pos >= LOG_OVERHEAD:  # a short inner header simply ends iteration
        inner_offset, size = struct.unpack_from(">qi", stream, pos)
        if size < RECORD_OVERHEAD_V0:
            raise _err(CORRUPT_RECORD, "inner-record-too-small", batch, f"inner record size {size} < 14")
        if size > len(stream) - pos - LOG_OVERHEAD:
            break  # a truncated inner record simply ends iteration
        inner.append((inner_offset, pos + LOG_OVERHEAD, size))
        pos += LOG_OVERHEAD + size
    if not inner:
        raise _err(INVALID_RECORD, "empty-wrapper", batch, "compressed wrapper holds no records")
    if magic != 1:
        return stream, inner
    wrapper_offset, last_relative = _int64(batch.raw, 0), inner[-1][0]
    if wrapper_offset < last_relative and wrapper_offset != 0:
        raise _err(
            INVALID_RECORD, "wrapper-offset-below-last-inner", batch,
            f"wrapper offset {wrapper_offset} < last inner relative offset {last_relative}",
        )  # fmt: skip
    base = 0 if wrapper_offset == 0 else wrapper_offset - last_relative
    return stream, [(base + offset, rec, size) for offset, rec, size in inner]


def _first_is_uncompressed(batch: Batch, stream: bytes, rec: int) -> None:
    """The deep iterator's ``next()``: an inner record that is itself compressed is refused."""
    codec = stream[rec + 5] & CODEC_MASK
    _codec_or_raise(batch, codec)
    if codec:
        raise _err(INVALID_RECORD, "nested-compression", batch, "inner record is itself compressed")


# ---------------------------------------------------------------------------------------------
# Decoding as a stream (Batch.iter_records)
# ---------------------------------------------------------------------------------------------


class _Stream:
    """The decompressed records section of one batch, pulled chunk by chunk: only the unread part
    of the current chunks is held.  Decompression failures surface as the batch's RecordFormatError."""

    def __init__(self, batch: Batch, codec: int, data, magic: int):
        self.batch = batch
        self._chunks = compression.decompress_chunks(codec, data, magic)
        self.buf = b""
        self.pos = 0

    def _next_chunk(self) -> bytes | None:
        try:
            return next(self._chunks, None)
        except compression.SnappyChunkError as e:
            raise _err(SNAPPY_ERROR, "snappy-chunk-size", self.batch, str(e)) from None
        except compression.CompressionError as e:
            raise _err(KAFKA, "corrupt-compressed-stream", self.batch, str(e)) from None

    def fill(self, n: int) -> bool:
        """Whether ``n`` unread bytes are there (pulling chunks until they are or the stream ends)."""
        have = len(self.buf) - self.pos
        if have >= n:
            return True
        parts = [self.buf[self.pos :]]
        while have < n:
            chunk = self._next_chunk()
            if chunk is None:
                break
            parts.append(chunk)
            have += len(chunk)
        self.buf, self.pos = b"".join(parts), 0
        return have >= n

    def take(self, n: int) -> bytes:
        """The next ``n`` bytes (the caller has checked :meth:`fill`)."""
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def skip(self, n: int) -> bool:
        """Drop the next ``n`` bytes without holding them; False if the stream ends first."""
        while len(self.buf) - self.pos < n:
            n -= len(self.buf) - self.pos
            chunk = self._next_chunk()
            if chunk is None:
                self.buf, self.pos = b"", 0
                return False
            self.buf, self.pos = chunk, 0
        self.pos += n
        return True


def _check_record_size(batch: Batch, size: int) -> None:
    """One record is held whole; a size above ``DEFAULT_MAX_OUTPUT`` is refused before it is read."""
    if size > compression.DEFAULT_MAX_OUTPUT:
        raise _err(
            KAFKA, "decompression-limit", batch,
            f"a record of {size} bytes exceeds the limit of {compression.DEFAULT_MAX_OUTPUT} bytes for one record",
        )  # fmt: skip


def _next_v2_record(batch: Batch, stream: _Stream) -> Record:
    """§1.6: the length varint, then exactly that many body bytes, parsed on their own (as
    ``DefaultRecord.readFrom`` reads the body into its own buffer)."""
    stream.fill(5)  # the longest int32 varint; fewer at the end of the stream
    length, body = _record_length(batch, stream.buf, stream.pos)
    head = body - stream.pos
    if length < 0:
        raise _err(
            INVALID_RECORD, "invalid-record-structure", batch, f"Found invalid record structure: length {length}"
        )
    _check_record_size(batch, length)
    if not stream.fill(head + length):
        raise _err(INVALID_RECORD, "invalid-record-size", batch, f"record length {length} exceeds the bytes remaining")
    record, _ = _parse_record(batch, stream.take(head + length), 0)
    return record


def _v2_record_stream(batch: Batch) -> Iterator[LogicalRecord]:
    h = batch.header()
    if h.records_count < 0:  # §1.4.9
        raise _err(INVALID_RECORD, "negative-record-count", batch, f"Found invalid record count {h.records_count}")
    if h.records_count == 0:
        return
    codec = batch.codec
    _codec_or_raise(batch, codec)
    stream = _Stream(batch, codec, memoryview(batch.raw)[V2_HEADER_SIZE:], 2)
    for _ in range(h.records_count):
        yield _resolve_v2(batch, h, _next_v2_record(batch, stream))
    if stream.fill(1):
        raise _err(INVALID_RECORD, "records-remaining", batch, "Incorrect declared batch size, records still remaining")


def _legacy_record_stream(batch: Batch) -> Iterator[LogicalRecord]:
    """§1.8: a compressed wrapper is read twice — once to frame its inner records and fix v1's
    absolute offsets (which need the last inner offset, as the deep iterator's constructor
    does), once to decode them — holding one inner record at a time."""
    magic, attributes, timestamp, key, value = _wrapper_fields(batch)
    codec = attributes & CODEC_MASK
    if codec == compression.NONE:
        yield from _legacy_records(batch, compression.DEFAULT_MAX_OUTPUT)
        return
    _codec_or_raise(batch, codec)
    if codec == compression.ZSTD:
        raise _err(INVALID_RECORD, "zstd-in-legacy", batch, "zstd is not allowed for magic < 2")
    if value is None:
        raise _err(INVALID_RECORD, "null-wrapper-value", batch, "compressed wrapper has a null value")
    count, shift = _frame_inner(batch, _Stream(batch, codec, value, magic), magic)
    stream = _Stream(batch, codec, value, magic)
    ts_type = batch.timestamp_type
    for _ in range(count):
        stream.fill(LOG_OVERHEAD)
        offset, size = struct.unpack(">qi", stream.take(LOG_OVERHEAD))
        _check_record_size(batch, size)
        stream.fill(size)
        rec = stream.take(size)
        _first_is_uncompressed(batch, rec, 0)
        try:
            imagic, _, its, ikey, ivalue = _legacy_fields(rec, 0, size)
        except (ValueError, IndexError) as e:
            raise _err(INVALID_RECORD, "invalid-inner-record", batch, str(e)) from None
        icrc = struct.unpack_from(">I", rec, 0)[0]
        if magic == 1 and ts_type == LOG_APPEND_TIME:
            its = timestamp
        yield LogicalRecord(
            offset + shift, its, ts_type, ikey, ivalue, (), -1, imagic, icrc, icrc == zlib.crc32(rec[4:])
        )


def _frame_inner(batch: Batch, stream: _Stream, magic: int) -> tuple[int, int]:
    """The deep iterator's constructor (§1.8.3) without keeping the records: how many inner records
    there are (a short header or a truncated record ends them) and what to add to their offsets."""
    count = last = 0
    while stream.fill(LOG_OVERHEAD):
        offset, size = struct.unpack(">qi", stream.take(LOG_OVERHEAD))
        if size < RECORD_OVERHEAD_V0:
            raise _err(CORRUPT_RECORD, "inner-record-too-small", batch, f"inner record size {size} < 14")
        if not stream.skip(size):
            break
        count, last = count + 1, offset
    if count == 0:
        raise _err(INVALID_RECORD, "empty-wrapper", batch, "compressed wrapper holds no records")
    wrapper_offset = _int64(batch.raw, 0)
    if magic != 1 or wrapper_offset == 0:
        return count, 0
    if wrapper_offset < last:
        raise _err(
            INVALID_RECORD, "wrapper-offset-below-last-inner", batch,
            f"wrapper offset {wrapper_offset} < last inner relative offset {last}",
        )  # fmt: skip
    return count, wrapper_offset - last
