"""The model's record formats against the spec's own statements (§1.1–§1.10, §1.12)."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.formats import spec_vector_segment
from conformance.strategies import v2_records
from model import compression as C
from model import records as R
from model.errors import RecordFormatError
from model.file_records import CORRUPT, END, SHORT_TAIL, TORN, iterate_file
from model.varint import (
    VarintTooLong,
    VarintTruncated,
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
)

# --- §1.6 varints --------------------------------------------------------------------------------

VARINT_EXAMPLES = [
    (0, "00"), (1, "02"), (-1, "01"), (63, "7e"), (-64, "7f"), (64, "8001"), (-65, "8101"),
    (300, "d804"), (2147483647, "feffffff0f"), (-2147483648, "ffffffff0f"),
]  # fmt: skip


@pytest.mark.parametrize("value,hexed", VARINT_EXAMPLES)
def test_varint_examples_of_the_spec(value, hexed):
    assert encode_varint(value).hex() == hexed
    assert decode_varint(bytes.fromhex(hexed), 0) == (value, len(hexed) // 2)


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(n):
    assert decode_varint(encode_varint(n), 0)[0] == n


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(n):
    assert decode_varlong(encode_varlong(n), 0)[0] == n


def test_varint_limits():
    with pytest.raises(VarintTooLong):
        decode_varint(b"\x80" * 5 + b"\x01", 0)
    with pytest.raises(VarintTooLong):
        decode_varlong(b"\x80" * 10 + b"\x01", 0)
    with pytest.raises(VarintTruncated):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(ValueError):
        encode_varint(2**31)
    # a 5th byte without continuation: excess high bits are dropped as in a 32-bit register
    assert decode_varint(b"\xff\xff\xff\xff\x7f", 0)[0] == decode_varint(b"\xff\xff\xff\xff\x0f", 0)[0]


# --- §1.4.6 sequences --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "base,delta,expected",
    [
        (-1, 5, -1),
        (0, 5, 5),
        (2**31 - 1, 0, 2**31 - 1),
        (2**31 - 1, 1, 0),
        (2**31 - 2, 3, 1),
        (2**31 - 3, 2, 2**31 - 1),
    ],
)
def test_sequence_wrap_around(base, delta, expected):
    assert R.wrap_sequence(base, delta) == expected


# --- §1.12 worked bytes -------------------------------------------------------------------------


def test_encoders_produce_the_spec_vectors():
    v2 = R.build_batch_v2(0, [(1000, None, b"a")], partition_leader_epoch=0)
    v1 = R.encode_legacy_message(1, 0, None, b"a", 1000)
    v0 = R.encode_legacy_message(0, 0, None, b"a")
    assert v2 + v1 + v0 == spec_vector_segment()
    assert crc_of(v2) == 0xEBF1884B
    assert R.encode_record(R.Record(value=b"a")).hex() == "0e00000001026100"


def crc_of(batch: bytes) -> int:
    return struct.unpack_from(">I", batch, 17)[0]


def test_spec_vectors_decode():
    it = iterate_file(spec_vector_segment())
    assert it.stop == END and it.valid_bytes == 131
    v2, v1, v0 = it.batches
    assert v2.header().records_count == 1 and v2.header().max_timestamp == 1000
    assert [r.value for b in it.batches for r in b.records()] == [b"a", b"a", b"a"]
    assert v1.header().max_timestamp == 1000 and v1.timestamp_type == R.CREATE_TIME
    assert v0.header().max_timestamp == -1 and v0.timestamp_type == R.NO_TIMESTAMP_TYPE


# --- §1.5 CRC coverage --------------------------------------------------------------------------


def test_crc_does_not_cover_offset_length_epoch_or_magic():
    b = bytearray(R.build_batch_v2(0, [(1000, None, b"a")]))
    b[0:8] = struct.pack(">q", 12345)  # baseOffset rewritten by offset assignment
    b[12:16] = struct.pack(">i", 77)  # partitionLeaderEpoch stamped by the leader
    b[16] = 9  # any magic ≥ 2 parses as v2 (§1.9)
    assert R.Batch(0, bytes(b)).is_valid()
    b[21] ^= 0x01  # attributes are covered
    err = R.Batch(0, bytes(b)).validation_error()
    assert err.kind == "CorruptRecordException" and err.reason == "crc-mismatch"


def test_legacy_crc_covers_from_magic_not_offset():
    m = bytearray(R.encode_legacy_message(1, 5, b"k", b"v", 7))
    m[0:8] = struct.pack(">q", 99)
    assert R.Batch(0, bytes(m)).is_valid()
    m[16] ^= 0x01  # magic is covered for legacy
    assert R.Batch(0, bytes(m)).validation_error().reason == "crc-mismatch"


def test_small_v2_batch_is_corrupt_and_small_legacy_record_too():
    b = R.build_batch_v2(0, [])
    tiny = b[:8] + struct.pack(">i", 48) + b[12:60]
    assert R.Batch(0, tiny).validation_error().reason == "batch-too-small"
    legacy = struct.pack(">qi", 0, 13) + bytes(13)
    assert R.Batch(0, legacy).validation_error().reason == "record-too-small"


# --- §1.10 file iteration -------------------------------------------------------------------------


def test_file_iteration_stops():
    seg = spec_vector_segment()
    assert iterate_file(seg + bytes(17)).stop == SHORT_TAIL
    zeros = iterate_file(seg + bytes(18))
    assert zeros.stop == CORRUPT and zeros.error.reason == "size-below-minimum" and zeros.valid_bytes == 131
    torn = iterate_file(seg + seg[:40])
    assert torn.stop == TORN and torn.valid_bytes == 131 and torn.truncated_bytes == 40
    assert iterate_file(seg, 69).batches[0].position == 69
    assert iterate_file(seg, 0, 100).stop == TORN


# --- round trips ----------------------------------------------------------------------------------


@given(
    v2_records(),
    st.sampled_from([C.NONE, C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD]),
    st.sampled_from([R.CREATE_TIME, R.LOG_APPEND_TIME]),
    st.integers(-1, 2**40),
    st.integers(-1, 2**31 - 1),
)
def test_v2_records_round_trip(records, codec, ts_type, base_ts, base_seq):
    raw = R.encode_batch_v2(
        base_offset=100, records=records, codec=codec, timestamp_type=ts_type, base_timestamp=base_ts,
        max_timestamp=base_ts + 5, base_sequence=base_seq,
    )  # fmt: skip
    batch = R.Batch(0, raw)
    assert batch.is_valid() and batch.codec == codec
    decoded = batch.records()
    assert [(r.key, r.value, r.headers, r.offset) for r in decoded] == [
        (r.key, r.value, r.headers, 100 + r.offset_delta) for r in records
    ]
    for rec, d in zip(records, decoded, strict=True):
        want_ts = base_ts + 5 if ts_type == R.LOG_APPEND_TIME else base_ts + rec.timestamp_delta
        assert d.timestamp == want_ts
        assert d.sequence == R.wrap_sequence(base_seq, rec.offset_delta)


def test_attribute_high_byte_is_ignored_on_read():
    raw = R.encode_batch_v2(records=[R.Record(value=b"x")], codec=C.GZIP, extra_attribute_bits=0x7F00)
    batch = R.Batch(0, raw)
    assert batch.codec == C.GZIP and batch.header().attributes == 0x7F01
    assert batch.records()[0].value == b"x"


def test_legacy_wrappers_resolve_offsets_and_timestamps():
    v1 = R.Batch(0, R.build_legacy_wrapper(1, C.SNAPPY, 41, [(5, None, b"a"), (6, None, b"b"), (7, None, b"c")]))
    assert [r.offset for r in v1.records()] == [39, 40, 41]
    assert [r.timestamp for r in v1.records()] == [5, 6, 7] and v1.header().max_timestamp == 7
    lat = R.build_legacy_wrapper(1, C.GZIP, 9, [(5, None, b"a")], timestamp_type=R.LOG_APPEND_TIME, log_append_time=99)
    assert [r.timestamp for r in R.Batch(0, lat).records()] == [99]
    v0 = R.Batch(0, R.build_legacy_wrapper(0, C.LZ4, 12, [(-1, b"k", b"a"), (-1, None, b"b")]))
    assert [r.offset for r in v0.records()] == [11, 12] and all(r.crc_valid for r in v0.records())
    # wrapper offset 0: relative inner offsets are taken as absolute (librdkafka quirk, §1.8.2)
    zero = R.Batch(0, R.build_legacy_wrapper(1, C.GZIP, 0, [(1, None, b"a"), (2, None, b"b")]))
    assert [r.offset for r in zero.records()] == [0, 1]


# --- deep-iteration errors (§1.4.9, §1.6, §1.8.3) ---------------------------------------------------


def _reason(raw: bytes) -> tuple[str, str]:
    with pytest.raises(RecordFormatError) as info:
        R.Batch(7, raw).records()
    assert info.value.position == 7
    return info.value.kind, info.value.reason


def _wrapper(magic: int, codec: int, value: bytes | None) -> bytes:
    return R.encode_legacy_message(magic, 5, None, value, 0, codec)


def _inner(magic: int, offset: int, value: bytes, attributes: int = 0) -> bytes:
    return R.encode_legacy_entry(offset, R.encode_legacy_record(magic, None, value, 0, attributes))


@pytest.mark.parametrize(
    "make,expected",
    [
        (lambda: R.encode_batch_v2(records_count=-1, payload=b""), ("InvalidRecordException", "negative-record-count")),
        (
            lambda: R.encode_batch_v2(records_count=2, payload=R.encode_record(R.Record())),
            ("InvalidRecordException", "premature-eof"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, payload=R.encode_record(R.Record()) * 2),
            ("InvalidRecordException", "records-remaining"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, payload=b"\x7e\x00"),
            ("InvalidRecordException", "invalid-record-size"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, payload=b"\xff" * 6),
            ("IllegalArgumentException", "malformed-varint"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, payload=b"\x04\x00\x00\x00"),
            ("InvalidRecordException", "invalid-record-structure"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, payload=b"\x0c\x00\x00\x00\x01\x01\x01"),
            ("InvalidRecordException", "negative-header-count"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, payload=b"\x0c\x00\x00\x00\x01\x01\x60"),
            ("InvalidRecordException", "header-count-exceeds-remaining"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, payload=b"\x0c\x00\x00\x00\x01\x01\x02\x01\x01"),
            ("InvalidRecordException", "negative-header-key-length"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, payload=b"\x10\x00\x00\x00\x01\x01\x00\x00\x00"),
            ("InvalidRecordException", "record-size-mismatch"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, codec=5, payload=b""),
            ("IllegalArgumentException", "unknown-codec"),
        ),
        (
            lambda: R.encode_batch_v2(records_count=1, codec=C.GZIP, payload=b"junk"),
            ("KafkaException", "corrupt-compressed-stream"),
        ),
        (
            lambda: R.encode_batch_v2(records=[R.Record(key=b"\x00")], control=True),
            ("InvalidRecordException", "invalid-control-key"),
        ),
        (
            lambda: R.encode_batch_v2(records=[R.Record(key=b"\x00\x00\x00\x01", value=b"\x00")], control=True),
            ("InvalidRecordException", "invalid-end-txn-marker"),
        ),
        (lambda: _wrapper(1, C.ZSTD, b"x"), ("InvalidRecordException", "zstd-in-legacy")),
        (lambda: _wrapper(1, 6, b"x"), ("IllegalArgumentException", "unknown-codec")),
        (lambda: _wrapper(0, C.GZIP, None), ("InvalidRecordException", "null-wrapper-value")),
        (lambda: _wrapper(0, C.GZIP, C.compress(C.GZIP, b"")), ("InvalidRecordException", "empty-wrapper")),
        (
            lambda: _wrapper(1, C.GZIP, C.compress(C.GZIP, struct.pack(">qi", 0, 13) + bytes(13))),
            ("CorruptRecordException", "inner-record-too-small"),
        ),
        (
            lambda: _wrapper(1, C.GZIP, C.compress(C.GZIP, _inner(1, 0, b"a", C.GZIP))),
            ("InvalidRecordException", "nested-compression"),
        ),
        (
            lambda: _wrapper(1, C.GZIP, C.compress(C.GZIP, _inner(1, 0, b"a") + _inner(1, 9, b"b"))),
            ("InvalidRecordException", "wrapper-offset-below-last-inner"),
        ),
        (
            lambda: _wrapper(
                1, C.GZIP, C.compress(C.GZIP, struct.pack(">qi", 0, 14) + struct.pack(">Ibb", 0, 5, 0) + bytes(8))
            ),
            ("InvalidRecordException", "invalid-inner-record"),
        ),
        (lambda: R.encode_legacy_message(-3, 0, None, b"abc"), ("InvalidRecordException", "invalid-magic")),
    ],
    ids=lambda v: v[1] if isinstance(v, tuple) else None,
)
def test_deep_iteration_errors(make, expected):
    assert _reason(make()) == expected


def test_legacy_lying_key_length():
    body = bytearray(R.encode_legacy_record(0, b"key", b"v"))
    body[6:10] = struct.pack(">i", 1000)
    body[0:4] = struct.pack(">I", zlib.crc32(bytes(body[4:])))
    assert _reason(R.encode_legacy_entry(0, bytes(body))) == ("InvalidRecordException", "invalid-record-structure")


def test_truncated_inner_stream_just_ends():
    inner = _inner(1, 0, b"a") + _inner(1, 1, b"b")
    recs = R.Batch(0, _wrapper(1, C.GZIP, C.compress(C.GZIP, inner[:-3]))).records()
    assert [r.value for r in recs] == [b"a"]


def test_control_batches():
    commit = R.Batch(0, R.build_control_batch(10, 1, 5, coordinator_epoch=4, producer_id=3))
    (rec,) = commit.records()
    assert commit.is_control and commit.is_transactional
    assert (rec.control_type, rec.coordinator_epoch, rec.offset) == ("COMMIT", 4, 10)
    leader = R.Batch(0, R.build_control_batch(10, 2, 5))
    assert leader.records()[0].control_type == "LEADER_CHANGE"
    unknown = R.Batch(0, R.encode_batch_v2(records=[R.Record(key=b"\x00\x00\x00\x63")], control=True))
    assert unknown.records()[0].control_type == "UNKNOWN"


def test_empty_batch_has_no_records_even_when_compressed_junk_follows():
    raw = R.encode_batch_v2(records_count=0, codec=C.GZIP, payload=b"not gzip")
    assert R.Batch(0, raw).records() == []


def test_decompression_is_capped():
    raw = R.build_batch_v2(0, [(0, None, bytes(5000))], codec=C.ZSTD)
    with pytest.raises(RecordFormatError) as info:
        R.Batch(0, raw).records(max_output=1000)
    assert info.value.reason == "decompression-limit"
