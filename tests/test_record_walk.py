"""impl.record_walk (offset and timestamp of each record, searchForTimestamp, offsetOfMaxTimestamp)
against the model's full decoder on every magic and codec, plus hostile batches and decompression
bombs, which must raise only LogFormatError — with the kind and reason the model gives."""

from __future__ import annotations

import mmap
import struct
import zlib

import cramjam
import crc32c
import lz4.frame
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from conformance.strategies import any_batch, damaged_segments, hostile_batches, small_blobs, timestamps
from impl import codecs
from impl.errors import LogFormatError
from impl.file_records import BatchScan
from impl.record_walk import offset_of_max_timestamp, records, search_for_timestamp
from model import compression as C
from model import records as R
from model.errors import RecordFormatError
from model.file_records import iterate_file
from model.varint import encode_varint, encode_varlong

# The model's records() is a consumer's view and also decodes control-record keys and end-transaction
# markers; Kafka's plain record iteration (what searchForTimestamp uses) does not look at them, and
# neither does the walk.  Where the model fails only for that reason the walk must still succeed.
MODEL_ONLY = {"invalid-control-key", "invalid-end-txn-marker"}


# --- strategies --------------------------------------------------------------------------------

control_batches = st.builds(
    R.build_control_batch,
    st.integers(0, 2**40),
    st.sampled_from([0, 1, 2, 3, 4, 5, 6, 99]),
    timestamps,
    coordinator_epoch=st.integers(0, 2**31 - 1),
    producer_id=st.integers(0, 2**40),
)


@st.composite
def legacy_wrappers(draw) -> bytes:
    """Compressed v0/v1 wrappers, including the wrapper offset 0 special case and a wrapper offset
    below the last inner relative offset."""
    magic = draw(st.sampled_from([0, 1]))
    entries = draw(
        st.lists(st.tuples(timestamps if magic else st.just(-1), small_blobs, small_blobs), min_size=1, max_size=5)
    )
    return R.build_legacy_wrapper(
        magic,
        draw(st.sampled_from([C.GZIP, C.SNAPPY, C.LZ4])),
        draw(st.sampled_from([0, 1, 2, 3, 2**31, 2**62]) | st.integers(0, 2**40)),
        entries,
        timestamp_type=draw(st.sampled_from([R.CREATE_TIME, R.LOG_APPEND_TIME])),
        log_append_time=draw(timestamps),
    )


valid_batches = st.one_of(any_batch, control_batches, legacy_wrappers())
logs = st.lists(valid_batches, max_size=6).map(b"".join)
hostile_logs = st.lists(st.one_of(valid_batches, hostile_batches()), min_size=1, max_size=4).map(b"".join)


# --- the two sides -----------------------------------------------------------------------------


def model_walk(data: bytes, limit: int = C.DEFAULT_MAX_OUTPUT) -> list:
    out = []
    for batch in iterate_file(data).batches:
        try:
            out.append([(r.offset, r.timestamp) for r in batch.records(limit)])
        except RecordFormatError as e:
            out.append((e.kind, e.reason))
    return out


def impl_walk(data, limit: int = codecs.LIMIT) -> list:
    out = []
    for header in BatchScan(data):
        try:
            out.append(records(data, header, limit))
        except LogFormatError as e:
            assert e.position == header.position
            out.append((e.kind, e.reason))
    return out


def without_control_bit(batch: bytes) -> bytes:
    """The same v2 batch, not a control batch (CRC recomputed)."""
    (attributes,) = struct.unpack_from(">h", batch, 21)
    after_crc = struct.pack(">h", attributes & ~R.CONTROL_BIT) + batch[23:]
    return batch[:17] + struct.pack(">I", crc32c.crc32c(after_crc)) + after_crc


def assert_agree(data: bytes, limit: int = C.DEFAULT_MAX_OUTPUT) -> None:
    model, impl = model_walk(data, limit), impl_walk(data, limit)
    assert len(model) == len(impl)
    for batch, m, i in zip(iterate_file(data).batches, model, impl, strict=True):
        if isinstance(m, tuple) and m[1] in MODEL_ONLY:
            # the walk reads a control batch as the model reads the same batch without the flag
            (m,) = model_walk(without_control_bit(batch.raw), limit)
        assert i == m


# --- differential --------------------------------------------------------------------------------


def test_the_cap_is_the_models():
    assert codecs.LIMIT == C.DEFAULT_MAX_OUTPUT == 256 * 1024 * 1024


@given(logs)
def test_walk_matches_the_model(data):
    assert_agree(data)


@given(st.one_of(hostile_batches(), damaged_segments(), hostile_logs))
def test_hostile_input_fails_as_the_model_does(data):
    assert_agree(data)


@st.composite
def bombs(draw) -> tuple[bytes, int]:
    """A batch whose payload expands to n bytes, and a cap near n."""
    n = draw(st.integers(0, 6000))
    value = bytes(n) if draw(st.booleans()) else bytes(range(256)) * (n // 256)
    if draw(st.booleans()):
        data = R.build_batch_v2(7, [(5, None, value)], codec=draw(st.sampled_from([C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])))
        size = len(R.encode_record(R.Record(value=value)))
    else:
        magic = draw(st.sampled_from([0, 1]))
        data = R.build_legacy_wrapper(magic, draw(st.sampled_from([C.GZIP, C.SNAPPY, C.LZ4])), 9, [(5, None, value)])
        size = len(R.encode_legacy_message(magic, 9, None, value, 5))
    return data, draw(st.sampled_from([0, 1, size - 1, size, size + 1]) | st.integers(0, 7000))


@given(bombs())
def test_output_cap_matches_the_model(bomb):
    data, limit = bomb
    assert_agree(data, max(limit, 0))


def _oracle(data: bytes, target: int, start: int, starting_offset: int):
    """searchForTimestamp by brute force over the model's records."""
    for batch in iterate_file(data, start).batches:
        if batch.header().max_timestamp >= target:
            try:
                try:
                    recs = batch.records()
                except RecordFormatError as e:
                    if e.reason not in MODEL_ONLY:
                        raise
                    recs = R.Batch(batch.position, without_control_bit(batch.raw)).records()
            except RecordFormatError as e:
                return e.kind, e.reason
            for r in recs:
                if r.timestamp >= target and r.offset >= starting_offset:
                    return r.timestamp, r.offset
    return None


def _search(data, target: int, start: int, starting_offset: int):
    try:
        return search_for_timestamp(data, target, start, starting_offset)
    except LogFormatError as e:
        return e.kind, e.reason


@given(st.data(), st.one_of(logs, hostile_logs))
def test_search_for_timestamp_matches_a_brute_force_scan(data, log):
    batches = iterate_file(log).batches
    start = data.draw(st.sampled_from([0] + [b.position for b in batches]))
    seen = []
    for b in batches:
        seen += [b.header().max_timestamp, b.header().offset]
        try:
            seen += [x for r in b.records() for x in (r.timestamp, r.offset)]
        except RecordFormatError:
            pass
    near = st.sampled_from(sorted({x + d for x in seen for d in (-1, 0, 1)} or {0}))
    target = data.draw(near | timestamps)
    starting_offset = data.draw(near | st.integers(-1, 2**41))
    assert _search(log, target, start, starting_offset) == _oracle(log, target, start, starting_offset)


# --- by hand -----------------------------------------------------------------------------------


def walk(data) -> list:
    (header,) = BatchScan(data)
    return records(data, header)


def fails(data, limit: int = codecs.LIMIT) -> tuple[str, str]:
    (header,) = BatchScan(data)
    with pytest.raises(LogFormatError) as e:
        records(data, header, limit)
    assert e.value.position == header.position == 0
    return e.value.kind, e.value.reason


ENTRIES = [(10, b"a", b"x"), (20, None, b"y"), (15, b"c", None)]


@pytest.mark.parametrize("codec", [C.NONE, C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
def test_v2_offsets_and_timestamps(codec):
    assert walk(R.build_batch_v2(40, ENTRIES, codec=codec)) == [(40, 10), (41, 20), (42, 15)]
    append = R.build_batch_v2(40, ENTRIES, codec=codec, timestamp_type=R.LOG_APPEND_TIME, log_append_time=99)
    assert walk(append) == [(40, 99), (41, 99), (42, 99)]
    assert (
        walk(R.encode_batch_v2(base_offset=3, records_count=0, codec=7, payload=b"?")) == []
    )  # no records: codec unread


@pytest.mark.parametrize("codec", [C.GZIP, C.SNAPPY, C.LZ4])
def test_legacy_wrappers(codec):
    v1 = R.build_legacy_wrapper(1, codec, 100, ENTRIES)  # inner relative 0, 1, 2
    assert walk(v1) == [(98, 10), (99, 20), (100, 15)]
    append = R.build_legacy_wrapper(1, codec, 100, ENTRIES, timestamp_type=R.LOG_APPEND_TIME, log_append_time=77)
    assert walk(append) == [(98, 77), (99, 77), (100, 77)]
    assert walk(R.build_legacy_wrapper(1, codec, 0, ENTRIES)) == [(0, 10), (1, 20), (2, 15)]  # librdkafka
    assert fails(R.build_legacy_wrapper(1, codec, 1, ENTRIES)) == (
        "InvalidRecordException",
        "wrapper-offset-below-last-inner",
    )
    assert walk(R.build_legacy_wrapper(0, codec, 100, ENTRIES)) == [(98, -1), (99, -1), (100, -1)]  # absolute


def test_shallow_legacy_messages():
    assert walk(R.encode_legacy_message(0, 5, b"k", b"v")) == [(5, -1)]
    assert walk(R.encode_legacy_message(1, 5, None, b"v", 1234)) == [(5, 1234)]


def test_control_batches_are_walked_like_any_other():
    assert walk(R.build_control_batch(8, 1, 555, coordinator_epoch=3)) == [(8, 555)]
    odd = R.encode_batch_v2(base_offset=8, records=[R.Record(key=b"?")], control=True, base_timestamp=6)
    assert walk(odd) == [(8, 6)]  # the key is not interpreted


def test_magic_0_lz4_frames_carry_kafkas_wrong_header_checksum():
    data = R.build_legacy_wrapper(0, C.LZ4, 2, ENTRIES)
    (header,) = BatchScan(data)
    frame = data[12 + 22 :]  # crc, magic, attributes, null key (4), value length (4)
    with pytest.raises(codecs.CodecError):  # the standard check refuses it
        codecs.unlz4(frame, 1000)
    assert walk(data) == [(0, -1), (1, -1), (2, -1)]
    cut = R.encode_legacy_message(0, 2, None, frame[:4] + b"\x68\x40" + b"\0" * 3, attributes=C.LZ4)
    assert fails(cut) == ("KafkaException", "corrupt-compressed-stream")  # content size flag, no room for it


def _records(*recs: R.Record) -> bytes:
    return b"".join(map(R.encode_record, recs))


@pytest.mark.parametrize(
    ("codec", "payload"),
    [
        (C.SNAPPY, bytes(cramjam.snappy.compress_raw(_records(R.Record(value=b"v"))))),  # no xerial framing
        (C.GZIP, C.zlib_gzip(_records(R.Record(value=b"v"))) + C.zlib_gzip(b"")),  # concatenated members
        (C.ZSTD, C.compress(C.ZSTD, _records(R.Record(value=b"v"))[:3]) + C.compress(C.ZSTD, b"\x00\x01\x02v\x00")),
    ],
)
def test_alternative_framings(codec, payload):
    data = R.encode_batch_v2(base_offset=4, codec=codec, records_count=1, base_timestamp=9, payload=payload)
    assert walk(data) == [(4, 9)] == model_walk(data)[0]


def _raw_batch(payload: bytes, count: int = 1, codec: int = C.NONE) -> bytes:
    return R.encode_batch_v2(records_count=count, base_timestamp=0, codec=codec, payload=payload)


def test_malformed_records():
    good = _records(R.Record(key=b"k", value=b"v", headers=((b"h", None),)))
    body = good[1:]
    cases = {
        b"": ("InvalidRecordException", "premature-eof"),
        b"\x80": ("InvalidRecordException", "premature-eof"),  # length varint cut
        b"\xff\xff\xff\xff\xff\x01": ("IllegalArgumentException", "malformed-varint"),
        good[:-1]: ("InvalidRecordException", "invalid-record-size"),
        encode_varint(3) + b"\x00\x80\x80\x80": ("InvalidRecordException", "invalid-record-structure"),
        encode_varint(12) + b"\x00" + b"\xff" * 11: ("InvalidRecordException", "invalid-record-structure"),
        encode_varint(len(body) + 1) + body + b"\x00": ("InvalidRecordException", "record-size-mismatch"),
        good + b"\x00": ("InvalidRecordException", "records-remaining"),
        encode_varint(5) + b"\x00\x00\x00\x01\x01\x01": ("InvalidRecordException", "negative-header-count"),
        encode_varint(5) + b"\x00\x00\x00\x01\x01\x08": ("InvalidRecordException", "header-count-exceeds-remaining"),
        encode_varint(6) + b"\x00\x00\x00\x01\x01\x02\x01": ("InvalidRecordException", "negative-header-key-length"),
    }
    for payload, expected in cases.items():
        assert fails(_raw_batch(payload)) == expected == model_walk(_raw_batch(payload))[0], payload
    assert fails(_raw_batch(good, count=-1)) == ("InvalidRecordException", "negative-record-count")
    assert fails(_raw_batch(good, count=2)) == ("InvalidRecordException", "premature-eof")
    assert fails(R.encode_batch_v2(records_count=1, codec=5, payload=good)) == (
        "IllegalArgumentException",
        "unknown-codec",
    )
    ts = encode_varlong(-(2**63))
    body = b"\x00" + ts + encode_varint(2**31 - 1) + b"\x01\x01\x00"  # null key, null value, no headers
    edge = encode_varint(len(body)) + body
    assert walk(R.encode_batch_v2(base_offset=1, records_count=1, base_timestamp=0, payload=edge)) == [
        (2**31, -(2**63))
    ]


@pytest.mark.parametrize("codec", [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD])
def test_corrupt_compressed_payloads(codec):
    packed = C.compress(codec, _records(R.Record(value=b"v" * 100)))
    for payload in (packed[: len(packed) // 2], packed[:8] + bytes(len(packed) - 8)):
        data = _raw_batch(payload, codec=codec)
        assert fails(data) == ("KafkaException", "corrupt-compressed-stream") == model_walk(data)[0], payload
    for payload in (b"", b"\x00", b"\x01", packed[:4]):
        data = _raw_batch(payload, codec=codec)
        assert fails(data) == model_walk(data)[0], payload


def test_legacy_wrapper_failures():
    def wrapper(codec, value, magic=1):
        return R.encode_legacy_message(magic, 5, None, value, 0, codec)

    inner = R.encode_legacy_message(1, 0, None, b"v", 3)
    assert fails(wrapper(C.ZSTD, C.compress(C.ZSTD, inner))) == ("InvalidRecordException", "zstd-in-legacy")
    assert fails(wrapper(6, inner)) == ("IllegalArgumentException", "unknown-codec")
    assert fails(wrapper(C.GZIP, None)) == ("InvalidRecordException", "null-wrapper-value")
    assert fails(wrapper(C.GZIP, C.compress(C.GZIP, inner[:11]))) == ("InvalidRecordException", "empty-wrapper")
    assert walk(wrapper(C.GZIP, C.compress(C.GZIP, inner + inner[:20]))) == [(5, 3)]  # truncated tail ignored
    nested = R.encode_legacy_message(1, 0, None, b"v", 3, C.GZIP)
    assert fails(wrapper(C.GZIP, C.compress(C.GZIP, nested))) == ("InvalidRecordException", "nested-compression")
    tiny = struct.pack(">qi", 0, 13) + bytes(13)
    assert fails(wrapper(C.GZIP, C.compress(C.GZIP, tiny))) == ("CorruptRecordException", "inner-record-too-small")
    odd = bytearray(inner)
    odd[16] = 5  # inner magic 5
    assert fails(wrapper(C.GZIP, C.compress(C.GZIP, bytes(odd)))) == ("InvalidRecordException", "invalid-inner-record")


def _stream(compressor, flush, n: int) -> bytes:
    chunk, out = bytes(1 << 20), bytearray()
    for _ in range(n >> 20):
        out += compressor(chunk)
    return bytes(out + compressor(bytes(n & 0xFFFFF)) + flush())


def _bomb(codec: int, n: int) -> bytes:
    """A compressed stream of n zero bytes, built without holding them in memory."""
    if codec == C.GZIP:
        c = zlib.compressobj(1, zlib.DEFLATED, 31)
        return _stream(c.compress, c.flush, n)
    if codec == C.ZSTD:
        c = zstandard.ZstdCompressor().compressobj()
        return _stream(c.compress, c.flush, n)
    c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
    return c.begin() + _stream(c.compress, c.flush, n)


@pytest.mark.parametrize("codec", [C.GZIP, C.LZ4, C.ZSTD])
def test_decompression_bombs_stop_at_256_mib(codec):
    assert fails(_raw_batch(_bomb(codec, codecs.LIMIT + 1), codec=codec)) == ("KafkaException", "decompression-limit")


def test_snappy_bombs_are_refused_before_expanding():
    claim = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])  # a raw block claiming 4 GiB
    assert fails(_raw_batch(claim + b"\x00" * 8, codec=C.SNAPPY)) == ("KafkaException", "decompression-limit")
    block = bytes(cramjam.snappy.compress_raw(bytes(60_000)))
    xerial = C.XERIAL_HEADER + (struct.pack(">i", len(block)) + block) * 3
    assert fails(_raw_batch(xerial, codec=C.SNAPPY), limit=150_000) == ("KafkaException", "decompression-limit")


def test_search_for_timestamp_by_hand():
    log = (
        R.build_batch_v2(0, [(100, None, b"a"), (300, None, b"b"), (200, None, b"c")])
        + R.build_legacy_wrapper(1, C.GZIP, 5, [(150, None, b"d"), (400, None, b"e")])
        + R.build_batch_v2(6, [(50, None, b"f")], timestamp_type=R.LOG_APPEND_TIME, log_append_time=500)
    )
    assert search_for_timestamp(log, 150, 0, 0) == (300, 1)  # the record's own timestamp
    assert search_for_timestamp(log, 150, 0, 2) == (200, 2)  # offsets below starting_offset skipped
    assert search_for_timestamp(log, 301, 0, 0) == (400, 5)  # v1 wrapper, relative inner offsets
    second = list(BatchScan(log))[1].position
    assert search_for_timestamp(log, 0, second, 0) == (150, 4)  # from a position
    assert search_for_timestamp(log, 450, 0, 0) == (500, 6)  # LogAppendTime: the batch's max timestamp
    assert search_for_timestamp(log, 501, 0, 0) is None
    assert search_for_timestamp(log, 0, len(log), 0) is None


def test_search_on_any_buffer_releases_it(tmp_path):
    bad = R.encode_batch_v2(records_count=1, base_timestamp=0, max_timestamp=10**6, payload=b"\x80")
    log = R.build_batch_v2(0, [(100, None, b"a")]) + bad
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(log)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for buf in (log, bytearray(log), memoryview(log).cast("b"), mm):
            assert search_for_timestamp(buf, 100, 0, 0) == (100, 0)
            with pytest.raises(LogFormatError) as e:
                search_for_timestamp(buf, 101, 0, 0)
            assert e.value.reason == "premature-eof" and e.value.position == len(log) - len(bad)
    assert mm.closed  # closing worked while the error (and its traceback) was alive


def test_offset_of_max_timestamp():
    data = R.build_batch_v2(10, [(5, b"a", b"x"), (9, b"b", b"y"), (9, b"c", b"z"), (7, None, None)])
    (header,) = BatchScan(data)
    assert offset_of_max_timestamp(data, header) == 11
    log_append = R.build_batch_v2(
        10, [(5, b"a", b"x"), (1, b"b", b"y")], timestamp_type=R.LOG_APPEND_TIME, log_append_time=99
    )
    (header,) = BatchScan(log_append)
    assert offset_of_max_timestamp(log_append, header) == 10
    v0 = R.encode_legacy_message(0, 3, None, b"v")
    (header,) = BatchScan(v0)
    assert offset_of_max_timestamp(v0, header) is None


def test_truncated_magic0_lz4_header_is_a_declared_error_in_the_model_too():
    """Found by the walk's differential test: the model raised a bare IndexError here."""
    from model.errors import RecordFormatError
    from model.records import encode_legacy_message

    data = encode_legacy_message(0, 2, None, b"\x04\x22\x4d\x18\x68\x40" + bytes(3), attributes=3)
    (batch,) = iterate_file(data).batches
    try:
        batch.records()
    except RecordFormatError as e:
        assert e.position == 0
    else:
        raise AssertionError("a truncated LZ4 frame header decoded")
