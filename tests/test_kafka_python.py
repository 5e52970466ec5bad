"""Cross-check against kafka-python, an independent implementation of the record formats (spec §1.1–§1.10).

Three directions, each with batches of every magic and codec kafka-python can handle:

1. kafka-python writes (``MemoryRecordsBuilder``; then the bytes a broker would change — base offset,
   partition leader epoch, LogAppendTime — are rewritten with kafka-python's own CRC functions); the
   model (``iterate_file``, ``Batch.header``, ``Batch.records``) and the impl (``BatchScan``) must read
   every header field and every record exactly as kafka-python's reader does.
2. The model writes (``build_batch_v2``, ``encode_batch_v2``, ``build_control_batch``,
   ``encode_legacy_message``, ``build_legacy_wrapper``); kafka-python's ``MemoryRecords`` must accept
   the bytes (``validate_crc``) and read the same records.
3. ``klc dump --json --print-data-log`` on a segment written by kafka-python agrees field for field
   with kafka-python.

Conventions bridged here (nothing else is translated): for legacy batches our header ``offset`` and
``last_offset`` are the offset field of the (wrapper) message, which kafka-python calls
``base_offset`` (§1.1, §1.7); kafka-python reports a v0 timestamp and timestamp type as ``None``
where the spec says −1 / NoTimestampType; kafka-python decodes header keys to ``str``.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest

pytest.importorskip("kafka.record")

import kafka.codec as kafka_codec  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from kafka.record.default_records import DefaultRecordBatch  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatch  # noqa: E402
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder  # noqa: E402
from kafka.record.util import calc_crc32, calc_crc32c  # noqa: E402

from conformance.cli import main  # noqa: E402
from impl.file_records import BatchScan  # noqa: E402
from model import records as R  # noqa: E402
from model.file_records import iterate_file  # noqa: E402
from tests import kafka_python_view as view  # noqa: E402
from tests.kafka_python_view import (  # noqa: E402
    kp_batch_facts,
    kp_header,
    kp_records,
    model_batch_facts,
    model_records,
    our_header,
)

# Spec vocabulary, written out here rather than imported from the model under test.
NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4  # §1.3 codec ids
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
BIG = 1 << 22  # a batch_size no generated batch reaches: kafka-python never refuses an append


def kafka_python_missing(magic: int, codec: int) -> str | None:
    """Why kafka-python cannot write and read ``codec`` at ``magic`` here, or None if it can."""
    if codec == SNAPPY and not kafka_codec.has_snappy():
        return "kafka-python needs python-snappy for snappy"
    if codec == LZ4:
        if not kafka_codec.has_lz4():
            return "kafka-python needs the lz4 package for lz4"
        if magic == 0 and kafka_codec.xxhash is None:
            return "kafka-python's magic-0 lz4 (KAFKA-3160 header checksum) needs the xxhash package, not installed"
    if codec == ZSTD and not kafka_codec.has_zstd():
        return "kafka-python needs zstandard for zstd"
    return None


def _combo(magic: int, codec: int):
    reason = kafka_python_missing(magic, codec)
    marks = [pytest.mark.skip(reason=reason)] if reason else []
    return pytest.param(magic, codec, marks=marks, id=f"v{magic}-{CODEC_NAMES[codec]}")


# zstd exists only for magic 2 (§1.3, §1.7)
COMBOS = [_combo(m, c) for m in (0, 1) for c in (NONE, GZIP, SNAPPY, LZ4)] + [
    _combo(2, c) for c in (NONE, GZIP, SNAPPY, LZ4, ZSTD)
]
AVAILABLE = [
    (m, c) for m in (0, 1, 2) for c in CODEC_NAMES if (m == 2 or c != ZSTD) and kafka_python_missing(m, c) is None
]


# --- strategies -------------------------------------------------------------------------------------

blobs = st.none() | st.binary(max_size=10)
# values that compress well, so that the compressed path is taken (kafka-python v2 falls back to an
# uncompressed batch when compression does not pay)
compressible = st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=3), st.integers(10, 60))
values = blobs | compressible
header_lists = st.lists(st.tuples(st.text(max_size=4), blobs), max_size=3)
timestamps = st.integers(0, 2**42)
offsets = st.integers(0, 2**62)
leader_epochs = st.integers(-1, 2**31 - 1)
producer_states = st.none() | st.tuples(
    st.integers(0, 2**63 - 1),  # producer id
    st.integers(0, 2**15 - 1),  # producer epoch
    st.integers(0, 2**31 - 1) | st.integers(2**31 - 4, 2**31 - 1),  # base sequence, near the wrap too
    st.booleans(),  # transactional
)


def entry_lists(magic: int, min_size: int = 1, max_size: int = 5):
    headers = header_lists if magic >= 2 else st.just([])
    return st.lists(st.tuples(timestamps, blobs, values, headers), min_size=min_size, max_size=max_size)


# --- kafka-python as the writer --------------------------------------------------------------------


def kp_build(
    magic: int,
    codec: int,
    entries,
    *,
    base_offset: int = 0,
    leader_epoch: int = 0,
    producer=None,
    log_append_time: int | None = None,
) -> bytes:
    """kafka-python's producer-side batch, then what the broker does to it on append: assign the
    base offset (v2) / wrapper offset (legacy) and the leader epoch, and — for a LogAppendTime topic —
    set the timestamp type bit and the (max) timestamp and recompute the CRC (§1.5, §1.7)."""
    compressed_legacy = magic < 2 and codec != NONE
    # v2: kafka-python writes offset deltas from the builder offset and base offset 0 (producer side);
    # v1 wrappers: relative inner offsets 0..n-1; v0 wrappers and plain legacy messages: absolute.
    start = 0 if magic == 2 or (magic == 1 and compressed_legacy) else base_offset
    builder = MemoryRecordsBuilder(magic, codec, BIG, offset=start)
    if producer is not None:
        builder.set_producer_state(*producer)
    for ts, key, value, headers in entries:
        assert builder.append(ts, key, value, list(headers)) is not None
    builder.close()
    data = bytearray(builder.buffer())
    if magic == 2:
        struct.pack_into(">q", data, 0, base_offset)  # not covered by the CRC (§1.5)
        struct.pack_into(">i", data, 12, leader_epoch)
        if log_append_time is not None:
            attributes = struct.unpack_from(">h", data, 21)[0] | 0x08
            struct.pack_into(">h", data, 21, attributes)
            struct.pack_into(">q", data, 35, log_append_time)
            struct.pack_into(">I", data, 17, calc_crc32c(memoryview(data)[21:]))
        return bytes(data)
    if compressed_legacy:
        struct.pack_into(">q", data, 0, base_offset + len(entries) - 1)  # wrapper offset = last offset (§1.8)
    if log_append_time is not None and magic == 1:
        pos = 0
        while pos < len(data):  # every shallow message (one wrapper if compressed)
            end = pos + 12 + struct.unpack_from(">i", data, pos + 8)[0]
            data[pos + 17] |= 0x08
            struct.pack_into(">q", data, pos + 18, log_append_time)
            struct.pack_into(">I", data, pos + 12, calc_crc32(memoryview(data)[pos + 16 : end]))
            pos = end
    return bytes(data)


# --- kafka-python as the reader --------------------------------------------------------------------


def kp_batches(data: bytes) -> list[tuple[int, DefaultRecordBatch | LegacyRecordBatch]]:
    return view.kp_batches(MemoryRecords, data)[0]


def assert_agrees_with_kafka_python(data: bytes) -> list[dict]:
    """Model and impl read ``data`` exactly as kafka-python does; returns kafka-python's records."""
    kbs = kp_batches(data)
    it = iterate_file(data)
    scan = BatchScan(data)
    impl_headers = list(scan)
    assert (it.stop, it.valid_bytes, it.error) == ("end", len(data), None)
    assert (scan.stop, scan.valid_bytes, scan.error) == ("end", len(data), None)
    assert len(it.batches) == len(impl_headers) == len(kbs)
    all_records = []
    for mb, ih, (pos, kb) in zip(it.batches, impl_headers, kbs, strict=True):
        assert kb.validate_crc(), f"kafka-python rejects the CRC of the batch at {pos}"
        theirs = kp_header(pos, kb)
        assert our_header(mb.header()) == theirs, "model header"
        assert our_header(ih) == theirs, "impl header"
        assert model_batch_facts(mb) == kp_batch_facts(kb)
        their_records = kp_records(kb)
        assert model_records(mb) == their_records
        all_records += their_records
    return all_records


def expected_timestamps(magic: int, entries, log_append_time: int | None) -> list[int]:
    if magic == 0:
        return [-1] * len(entries)
    if log_append_time is not None:
        return [log_append_time] * len(entries)
    return [e[0] for e in entries]


# --- 1. kafka-python writes, model and impl read -----------------------------------------------------


@pytest.mark.parametrize(("magic", "codec"), COMBOS)
@given(data=st.data())
def test_kafka_python_batches_read_identically(magic, codec, data):
    entries = data.draw(entry_lists(magic), label="entries")
    base_offset = data.draw(offsets, label="base_offset")
    leader_epoch = data.draw(leader_epochs, label="leader_epoch") if magic == 2 else 0
    producer = data.draw(producer_states, label="producer") if magic == 2 else None
    log_append_time = data.draw(st.none() | timestamps, label="log_append_time") if magic >= 1 else None
    raw = kp_build(
        magic, codec, entries, base_offset=base_offset, leader_epoch=leader_epoch, producer=producer,
        log_append_time=log_append_time,
    )  # fmt: skip
    records = assert_agrees_with_kafka_python(raw)
    # and what kafka-python read back is what was written (the premise of the comparison)
    assert [r["offset"] for r in records] == list(range(base_offset, base_offset + len(entries)))
    assert [r["timestamp"] for r in records] == expected_timestamps(magic, entries, log_append_time)
    assert [(r["key"], r["value"]) for r in records] == [(e[1], e[2]) for e in entries]
    assert [r["headers"] for r in records] == [tuple((k.encode(), v) for k, v in e[3]) for e in entries]
    if producer is not None:
        h = iterate_file(raw).batches[0].header()
        assert (h.producer_id, h.producer_epoch, h.base_sequence) == producer[:3]
        assert iterate_file(raw).batches[0].is_transactional == producer[3]


@pytest.mark.parametrize(("magic", "codec"), [c for c in COMBOS if c.values[1] != NONE])
def test_compressed_path_is_taken(magic, codec):
    """With compressible values kafka-python really writes ``codec`` (v2 falls back to none when
    compression does not pay), and model and impl still agree with it."""
    entries = [(1_000 + i, b"key-%d" % i, b"value " * 40, [("h", b"x")] if magic == 2 else []) for i in range(4)]
    raw = kp_build(magic, codec, entries, base_offset=7, producer=(3, 1, 0, True) if magic == 2 else None)
    (pos, kb), *_ = kp_batches(raw)
    assert kb.compression_type == codec
    assert iterate_file(raw).batches[0].codec == codec
    records = assert_agrees_with_kafka_python(raw)
    assert [r["value"] for r in records] == [b"value " * 40] * 4


def test_kafka_python_sequence_wraps_like_the_model():
    """§1.4.6: a base sequence near INT32_MAX wraps to 0 in the middle of the batch."""
    entries = [(5, None, b"v", [])] * 4
    raw = kp_build(2, NONE, entries, producer=(1, 0, 2**31 - 2, False))
    records = assert_agrees_with_kafka_python(raw)
    assert [r["sequence"] for r in records] == [2**31 - 2, 2**31 - 1, 0, 1]


# --- 2. the model writes, kafka-python reads ----------------------------------------------------------

V2_CODECS = [pytest.param(c, id=CODEC_NAMES[c]) for c in CODEC_NAMES if kafka_python_missing(2, c) is None]


@st.composite
def v2_fields(draw):
    pid = draw(st.integers(-1, 2**63 - 1))
    if pid == -1:
        epoch, seq, transactional = -1, -1, False
    else:
        epoch = draw(st.integers(0, 2**15 - 1))
        seq = draw(st.integers(-1, 2**31 - 1))
        transactional = draw(st.booleans())
    return {
        "producer_id": pid,
        "producer_epoch": epoch,
        "base_sequence": seq,
        "transactional": transactional,
        "partition_leader_epoch": draw(leader_epochs),
    }


@pytest.mark.parametrize("codec", V2_CODECS)
@given(
    base_offset=offsets,
    entries=st.lists(
        st.tuples(
            timestamps, blobs, values, st.lists(st.tuples(st.text(max_size=4).map(str.encode), blobs), max_size=3)
        ),
        min_size=1,
        max_size=5,
    ),
    fields=v2_fields(),
    log_append_time=st.none() | timestamps,
)
def test_model_v2_batches_accepted_by_kafka_python(codec, base_offset, entries, fields, log_append_time):
    ts_type = R.LOG_APPEND_TIME if log_append_time is not None else R.CREATE_TIME
    raw = R.build_batch_v2(
        base_offset, entries, codec=codec, timestamp_type=ts_type, log_append_time=log_append_time, **fields
    )
    records = assert_agrees_with_kafka_python(raw)
    ((_, kb),) = kp_batches(raw)
    assert (kb.compression_type, kb.producer_id, kb.producer_epoch, kb.base_sequence) == (
        codec, fields["producer_id"], fields["producer_epoch"], fields["base_sequence"],
    )  # fmt: skip
    assert (kb.is_transactional, kb.leader_epoch) == (fields["transactional"], fields["partition_leader_epoch"])
    assert [r["offset"] for r in records] == list(range(base_offset, base_offset + len(entries)))
    assert [r["timestamp"] for r in records] == expected_timestamps(2, entries, log_append_time)
    assert [(r["key"], r["value"], r["headers"]) for r in records] == [(e[1], e[2], tuple(e[3])) for e in entries]


@pytest.mark.parametrize("codec", V2_CODECS)
@given(
    base_offset=offsets,
    first_delta=st.integers(0, 10),
    gaps=st.lists(st.integers(1, 1000), max_size=5),
    ts_deltas=st.lists(st.integers(-(2**40), 2**40), min_size=6, max_size=6),
    base_timestamp=timestamps,
    value=values,
    empty=st.booleans(),
)
def test_model_encoded_batches_with_offset_gaps(
    codec, base_offset, first_delta, gaps, ts_deltas, base_timestamp, value, empty
):
    """``encode_batch_v2`` with the offset gaps compaction leaves and unordered timestamps, or the
    empty batch compaction may leave (§1.4.2): kafka-python accepts it and reads the same records."""
    deltas = [] if empty else [first_delta + sum(gaps[:i]) for i in range(len(gaps) + 1)]
    records = [
        R.Record(offset_delta=d, timestamp_delta=t, value=value) for d, t in zip(deltas, ts_deltas, strict=False)
    ]
    raw = R.encode_batch_v2(
        base_offset=base_offset, records=records, codec=codec,
        base_timestamp=-1 if empty else base_timestamp,
        max_timestamp=base_timestamp + max(ts_deltas[: len(records)], default=0),
        last_offset_delta=deltas[-1] if deltas else first_delta + sum(gaps),
    )  # fmt: skip
    read = assert_agrees_with_kafka_python(raw)
    assert [r["offset"] for r in read] == [base_offset + d for d in deltas]
    assert [r["timestamp"] for r in read] == [base_timestamp + t for t in ts_deltas[: len(records)]]
    ((_, kb),) = kp_batches(raw)
    assert (kb.records_count, kb.last_offset) == (
        len(records),
        base_offset + (deltas[-1] if deltas else first_delta + sum(gaps)),
    )


@given(
    base_offset=offsets,
    control_type=st.sampled_from([0, 1]),
    timestamp=timestamps,
    coordinator_epoch=st.integers(0, 2**31 - 1),
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(0, 2**15 - 1),
    leader_epoch=leader_epochs,
)
def test_model_control_batches_accepted_by_kafka_python(
    base_offset, control_type, timestamp, coordinator_epoch, producer_id, producer_epoch, leader_epoch
):
    raw = R.build_control_batch(
        base_offset, control_type, timestamp, coordinator_epoch=coordinator_epoch, producer_id=producer_id,
        producer_epoch=producer_epoch, partition_leader_epoch=leader_epoch,
    )  # fmt: skip
    (record,) = assert_agrees_with_kafka_python(raw)
    ((_, kb),) = kp_batches(raw)
    assert kb.is_control_batch and kb.is_transactional
    (kr,) = list(kb)
    assert (kr.version, kr.commit, kr.abort) == (0, control_type == 1, control_type == 0)
    assert record["control_type"] == ("COMMIT" if control_type == 1 else "ABORT")
    assert record["coordinator_epoch"] == coordinator_epoch
    assert (record["offset"], record["timestamp"]) == (base_offset, timestamp)


@pytest.mark.parametrize("magic", [0, 1])
@given(
    base_offset=offsets,
    messages=st.lists(st.tuples(timestamps, blobs, values), min_size=1, max_size=4),
)
def test_model_legacy_messages_accepted_by_kafka_python(magic, base_offset, messages):
    raw = b"".join(
        R.encode_legacy_message(magic, base_offset + i, key, value, ts if magic == 1 else -1)
        for i, (ts, key, value) in enumerate(messages)
    )
    records = assert_agrees_with_kafka_python(raw)
    assert [r["offset"] for r in records] == list(range(base_offset, base_offset + len(messages)))
    assert [(r["key"], r["value"]) for r in records] == [(k, v) for _, k, v in messages]
    assert [r["timestamp"] for r in records] == [ts if magic == 1 else -1 for ts, _, _ in messages]
    assert all(r["crc_valid"] for r in records)


LEGACY_WRAPPERS = [c for c in COMBOS if c.values[0] < 2 and c.values[1] != NONE]


@pytest.mark.parametrize(("magic", "codec"), LEGACY_WRAPPERS)
@given(
    entries=st.lists(st.tuples(timestamps, blobs, values), min_size=1, max_size=5),
    extra=st.integers(0, 2**62),
    log_append_time=st.none() | timestamps,
)
def test_model_legacy_wrappers_accepted_by_kafka_python(magic, codec, entries, extra, log_append_time):
    last_offset = len(entries) - 1 + extra  # a wrapper of n records has last offset >= n - 1
    if magic == 0:
        log_append_time = None
        entries = [(-1, k, v) for _, k, v in entries]
    ts_type = R.LOG_APPEND_TIME if log_append_time is not None else R.CREATE_TIME
    raw = R.build_legacy_wrapper(
        magic, codec, last_offset, entries, timestamp_type=ts_type, log_append_time=log_append_time
    )
    records = assert_agrees_with_kafka_python(raw)
    assert [r["offset"] for r in records] == list(range(last_offset - len(entries) + 1, last_offset + 1))
    assert [(r["key"], r["value"]) for r in records] == [(k, v) for _, k, v in entries]
    assert [r["timestamp"] for r in records] == expected_timestamps(magic, entries, log_append_time)
    assert all(r["crc_valid"] for r in records)


def test_model_reference_segment_accepted_by_kafka_python():
    """Every magic and codec in one segment (the harness's own reference segment, §1.12 plus
    wrappers and a control batch): kafka-python reads it batch for batch as the model does."""
    from conformance.formats import mixed_reference_segment, spec_vector_segment

    for data in (spec_vector_segment(), mixed_reference_segment()):
        records = assert_agrees_with_kafka_python(data)
        assert records


# --- 3. klc dump on a segment kafka-python wrote ------------------------------------------------------


def _b64(j):
    return None if j is None else base64.b64decode(j["base64"])


def expected_dump_batch(position: int, kb) -> dict:
    d = kp_header(position, kb)
    facts = kp_batch_facts(kb)
    v2 = kb.magic >= 2
    d.update(
        codec=CODEC_NAMES[facts["codec"]],
        timestamp_type=facts["timestamp_type"],
        is_transactional=facts["is_transactional"],
        is_control=facts["is_control"],
        base_offset=kb.base_offset if v2 else None,
        count=kb.records_count if v2 else None,
        last_sequence=kb.last_sequence if v2 else -1,
        is_valid=kb.validate_crc(),
    )
    return d


def dump_record_view(j: dict) -> dict:
    d = {
        "offset": j["offset"],
        "timestamp": j["timestamp"],
        "timestamp_type": j["timestamp_type"],
        "key": _b64(j["key"]),
        "value": _b64(j["value"]),
        "key_size": j["key_size"],
        "value_size": j["value_size"],
        "header_keys": j["header_keys"],
        "headers": [(h["key"], _b64(h["value"])) for h in j["headers"]],
    }
    if "crc" in j:
        d.update(crc=j["crc"], crc_valid=j["is_valid"])
    return d


def kp_dump_record_view(r: dict, kb) -> dict:
    d = {
        "offset": r["offset"],
        "timestamp": r["timestamp"],
        "timestamp_type": r["timestamp_type"],
        "key": r["key"],
        "value": r["value"],
        "key_size": -1 if r["key"] is None else len(r["key"]),
        "value_size": -1 if r["value"] is None else len(r["value"]),
        "header_keys": [k.decode() for k, _ in r["headers"]],
        "headers": [(k.decode(), v) for k, v in r["headers"]],
    }
    if kb.magic < 2:
        d.update(crc=r["crc"], crc_valid=r["crc_valid"])
    return d


def assert_dump_agrees_with_kafka_python(path) -> int:
    data = path.read_bytes()
    result = CliRunner().invoke(main, ["dump", "--json", "--print-data-log", str(path)])
    assert result.exit_code == 0, result.output
    assert result.exception is None, result.exception
    objs = [json.loads(line) for line in result.output.splitlines()]
    dumped = [o for o in objs if o["type"] == "batch"]
    assert not [o for o in objs if o["type"] == "error"]
    assert objs[-1] == {
        "type": "end", "file": str(path), "stop": "end", "valid_bytes": len(data), "file_size": len(data),
        "batches": len(dumped),
    }  # fmt: skip
    kbs = kp_batches(data)
    assert len(dumped) == len(kbs)
    for got, (pos, kb) in zip(dumped, kbs, strict=True):
        want = expected_dump_batch(pos, kb)
        assert {k: got[k] for k in want} == want
        assert [dump_record_view(r) for r in got["records"]] == [kp_dump_record_view(r, kb) for r in kp_records(kb)]
    return len(kbs)


@st.composite
def kafka_python_segments(draw):
    """1–4 batches of any available magic/codec, at increasing offsets, as one segment."""
    parts, offset = [], draw(st.integers(0, 2**40))
    for _ in range(draw(st.integers(1, 4))):
        magic, codec = draw(st.sampled_from(AVAILABLE))
        entries = draw(entry_lists(magic, max_size=3))
        producer = draw(producer_states) if magic == 2 else None
        lat = draw(st.none() | timestamps) if magic >= 1 else None
        parts.append(
            kp_build(
                magic,
                codec,
                entries,
                base_offset=offset,
                leader_epoch=draw(leader_epochs) if magic == 2 else 0,
                producer=producer,
                log_append_time=lat,
            )  # fmt: skip
        )
        offset += len(entries)
    return b"".join(parts)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segment=kafka_python_segments())
def test_dump_json_of_kafka_python_segment(tmp_path, segment):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(segment)
    assert assert_dump_agrees_with_kafka_python(path) >= 1


def test_dump_json_of_kafka_python_segment_every_codec(tmp_path):
    """One batch of every magic/codec kafka-python can write here, with keys, null values, headers,
    producer state and a LogAppendTime batch, in one segment."""
    parts, offset = [], 0
    for i, (magic, codec) in enumerate(AVAILABLE):
        entries = [
            (1_700_000_000_000 + j, b"k%d" % j if j % 2 else None, b"payload " * 12 if j < 2 else None,
             [("trace", b"t%d" % j), ("empty", None)] if magic == 2 else [])
            for j in range(3)
        ]  # fmt: skip
        producer = (1000 + i, 2, 10 * i, i % 2 == 0) if magic == 2 else None
        lat = 1_800_000_000_000 if i % 3 == 0 and magic >= 1 else None
        parts.append(kp_build(magic, codec, entries, base_offset=offset, leader_epoch=5, producer=producer,
                              log_append_time=lat))  # fmt: skip
        offset += len(entries)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(parts))
    assert assert_dump_agrees_with_kafka_python(path) >= len(AVAILABLE)
