"""Indexes checked against the log on first use: a lookup never returns a wrong position (§7.3,
§7.8), sound indexes are kept, and a rebuild writes what recovery writes (§4.6)."""

from __future__ import annotations

import struct
import tempfile

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from impl.config import LogConfig
from impl.errors import IndexFailure
from impl.index import OffsetIndex, TimeIndex
from impl.index_verify import ShadowIndexes, verify_offset_index, verify_time_index
from impl.segment import LogSegment
from impl.storage import OsStorage
from model.file_records import iterate_file
from model.indexes import rebuild_from_log
from model.records import build_batch_v2

MAX = 4096
INTERVAL = 200


@st.composite
def logs(draw, base):
    parts, offset = [], base
    for _ in range(draw(st.integers(1, 25))):
        n = draw(st.integers(1, 3))
        ts = draw(st.lists(st.integers(-1, 5000), min_size=n, max_size=n))
        parts.append(build_batch_v2(offset, [(t, None, b"v" * draw(st.integers(0, 150))) for t in ts]))
        offset += n + draw(st.integers(0, 2))
    return b"".join(parts)


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def damage(draw, kind, good: bytes, size: int, other: bytes) -> bytes:
    if kind == "stale":  # entries of a different log (e.g. revived after truncation)
        return other
    if kind == "zero-padded":
        return good + bytes(size * draw(st.integers(1, 20)))
    if kind == "random-entries":
        return draw(st.binary(max_size=10)).ljust(size * draw(st.integers(0, 6)), b"\x01")[: size * 6]
    if kind == "shifted":
        fmt = ">ii" if size == 8 else ">qi"
        out = bytearray(good)
        for i in range(0, len(out) - size + 1, size):
            a, b = struct.unpack_from(fmt, out, i)
            struct.pack_into(fmt, out, i, a + draw(st.integers(-2, 2)), b + draw(st.integers(-2, 2)))
        return bytes(out)
    if kind == "dropped":
        return good[: size * draw(st.integers(0, len(good) // size))]
    if kind == "zero-only":  # KAFKA-19200: full size, no valid entry
        return bytes(size * 10)
    return good


@given(
    st.sampled_from([0, 1000]).flatmap(
        lambda b: st.tuples(logs(b).map(lambda x, b=b: (b, x)), logs(b).map(lambda x, b=b: (b, x)))
    ),
    st.sampled_from(["none", "stale", "zero-padded", "random-entries", "shifted", "dropped", "zero-only"]),
    st.booleans(),
    st.data(),
)
def test_lookups_through_checked_indexes_are_never_wrong(logs_, kind, damage_time, data):
    (base, log), other_case = logs_
    event(f"damage {kind} to {'time' if damage_time else 'offset'} index")
    good_o, good_t, _ = rebuild_from_log(log, base, INTERVAL, MAX)
    other_o, other_t, _ = rebuild_from_log(other_case[1], base, INTERVAL, MAX)
    with tempfile.TemporaryDirectory(prefix="klc-verify-") as d:  # one dir per example: none left behind
        op, tp = f"{d}/{base:020d}.index", f"{d}/{base:020d}.timeindex"
        o_bytes, t_bytes = good_o.file_bytes(), good_t.file_bytes()
        if damage_time:
            t_bytes = damage(data.draw, kind, t_bytes, 12, other_t.file_bytes())
        else:
            o_bytes = damage(data.draw, kind, o_bytes, 8, other_o.file_bytes())
        write(op, o_bytes)
        write(tp, t_bytes)
        with open(f"{d}/{base:020d}.log", "wb") as f:
            f.write(log)
        storage = OsStorage()
        config = LogConfig(index_interval_bytes=INTERVAL, segment_index_bytes=MAX)
        segment = LogSegment(storage, d, base, config, 0, existing=True)  # as loaded without recovery
        try:
            batches = [b.header() for b in iterate_file(log).batches]
            targets = sorted({o for h in batches for o in range(h.offset, h.last_offset + 2)} | {base - 1, 10**9})
            for t in targets:
                expected = next((h for h in batches if h.last_offset >= t), None)
                got = segment.translate_offset(t)
                assert (None if got is None else got.position) == (None if expected is None else expected.position), t
            if kind == "none":
                assert segment.rebuilt_because is None
            event("shadowed" if segment.rebuilt_because else "kept")
            # the index files stay Kafka's whatever the proof found: lookups alone go through the shadow
            assert read(op) == o_bytes and read(tp) == t_bytes
            newest = max((h.max_timestamp for h in batches), default=-1)
            assert max(segment.content_max_timestamp_and_offset()[0], 0) == max(newest, 0)
        finally:
            segment.close_handlers()
            storage.close_all()


def test_kafka_verify_index_only_rules(tmp_path):
    log = b"".join(
        build_batch_v2(i * 3, [(100 + i, None, b"x" * 300), (50, None, b"y"), (60, None, b"z")]) for i in range(10)
    )
    # (batches' max timestamps 100…109 rise, so the time index has one entry per indexed batch)
    good_o, good_t, _ = rebuild_from_log(log, 0, 100, MAX)
    storage = OsStorage()
    write(str(tmp_path / "0.index"), good_o.file_bytes())
    write(str(tmp_path / "0.timeindex"), good_t.file_bytes())
    o = OffsetIndex(storage, str(tmp_path / "0.index"), 0, MAX)
    t = TimeIndex(storage, str(tmp_path / "0.timeindex"), 0, MAX)
    assert o.logical_entries() == good_o.logical_entries() and t.logical_entries() == good_t.logical_entries()
    assert verify_offset_index(o, log) == [] and verify_time_index(t, o, log) == []
    o.resize(MAX)
    o.append(100, 7)  # mid-batch position
    problems = verify_offset_index(o, log)
    assert [(p.key, p.value, p.problem) for p in problems] == [(100, 7, "no batch at this position")]
    o.truncate_to(100)
    o.append(100, len(log) + 50)
    assert verify_offset_index(o, log)[0].problem == "no batch at this position"
    t.resize(MAX)
    t.maybe_append(10**6, 29)
    assert [p.problem for p in verify_time_index(t, o, log)] == ["timestamp mismatch"]


def test_a_shadow_is_sound_and_not_bound_by_the_index_size():
    """Recovery appends one entry per batch; a segment written by multi-batch appends may need more
    than ``segment.index.bytes`` holds, so a rebuild into the index files could not keep them all
    (corpora/crash/lazy-index-rebuild-in-a-small-index.json).  The shadow lookups go through lives
    in memory: an entry per indexed batch, and every lookup a sound lower bound."""
    log = b"".join(build_batch_v2(i * 2, [(100 + i, None, b"x"), (50, None, b"y")]) for i in range(10))
    shadow = ShadowIndexes(log, 0, 0)
    size = len(log) // 10  # batch i holds offsets 2i, 2i+1 and starts at i * size; batch 0 is not indexed
    assert [shadow.offset_lookup(2 * i + 1) for i in range(10)] == [(0, 0)] + [
        (2 * i + 1, i * size) for i in range(1, 10)
    ]
    assert shadow.time_lookup(99) == (-1, 0) and shadow.time_lookup(105) == (105, 11)
    assert shadow.content_max == (109, 19)


def _segment_on(tmp_path, log: bytes, index: bytes, timeindex: bytes, index_bytes: int) -> LogSegment:
    write(str(tmp_path / f"{0:020d}.log"), log)
    write(str(tmp_path / f"{0:020d}.index"), index)
    write(str(tmp_path / f"{0:020d}.timeindex"), timeindex)
    config = LogConfig(index_interval_bytes=INTERVAL, segment_index_bytes=index_bytes)
    return LogSegment(OsStorage(), str(tmp_path), 0, config, 0, existing=True)  # as loaded without recovery


def test_a_zero_padded_index_holds_kafkas_count(tmp_path):
    """impl recognises a zero tail but holds Kafka's count of entries, zero slots included (§3.1
    rule 4), so it decides what Kafka decides: the single-slot time index of
    corpora/found/conforms-ed2155df18 is full and stays full through a truncation, and the roll's
    final entry (the segment's max timestamp, above the zeroed slot's 0) is written past the
    mapping — KAFKA-12734's BufferOverflowException — while lookups go through the shadow."""
    log = b"".join(build_batch_v2(i, [(100 + i, None, b"x" * 300)]) for i in range(4))
    segment = _segment_on(tmp_path, log, b"", bytes(12), 12)
    try:
        times = segment.time_index.get()
        assert (times.recognition, times.recognised, times.entries) == ("zero-padded", 0, 1)
        assert times.is_full() and segment.should_roll(10**9, 10**9, 200, 5, 10, 0)
        assert segment.translate_offset(2).offset == 2  # the first lookup proves the indexes
        assert "time index ends at 0, the segment's max timestamp is 103" in segment.rebuilt_because
        assert segment.find_offset_by_timestamp(102, 0)[1] == 2
        segment.truncate_to(3, 0)  # keeps Kafka's (0, 0) below the target; the max is read from the log
        assert times.entries == 1 and segment.max_timestamp_and_offset() == (102, 2)
        with pytest.raises(IndexFailure) as e:
            segment.on_become_inactive()
        assert e.value.kind == "BufferOverflowException"
    finally:
        segment.close_handlers()

    good_t = rebuild_from_log(log, 0, INTERVAL, MAX)[1].file_bytes()
    padded = good_t + bytes(12 * 5)
    segment = _segment_on(tmp_path, log, b"", padded, MAX)
    try:
        times = segment.time_index.get()
        assert times.recognised == len(good_t) // 12 and times.entries == times.recognised + 5
        assert times.recognised_entries() == times.logical_entries()[: times.recognised]
        assert times.logical_entries()[times.recognised :] == [(0, 0)] * 5
        assert segment.translate_offset(3).offset == 3 and "are zero padding" in segment.rebuilt_because
    finally:
        segment.close_handlers()


@pytest.mark.parametrize("newest, shadowed", [(0, False), (-1, True), (7, True)])
def test_a_sole_zero_time_slot_is_judged_by_the_log(tmp_path, newest, shadowed):
    """A time index whose sole slot is (0, base) may be a real entry: a segment whose newest
    timestamp is 0.  Behind batches without timestamps, or newer ones, it is a zeroed slot and
    lookups and retention go by the shadow."""
    log = build_batch_v2(0, [(newest, None, b"x")])
    segment = _segment_on(tmp_path, log, b"", bytes(12), MAX)
    try:
        assert segment.translate_offset(0).offset == 0
        assert (segment.rebuilt_because is not None) is shadowed
        assert segment.content_max_timestamp_and_offset()[0] == newest
    finally:
        segment.close_handlers()


def test_the_producer_state_scan_leaves_the_proof_to_the_next_lookup(tmp_path):
    """The rebuild's reads start where the offset index says 0, right whatever the index holds,
    so they do not prove it (a load rebuilds every partition's producer state); the next lookup
    still does, and finds the zeroed time entry."""
    log = b"".join(
        build_batch_v2(i, [(100 + i, None, b"x" * 300)], producer_id=7, producer_epoch=0, base_sequence=i)
        for i in range(4)
    )  # with a producer id: the scan hands each batch on
    segment = _segment_on(tmp_path, log, b"", bytes(12), 12)
    try:
        seen = []
        assert segment.scan_batches(0, None, seen.append) == len(log) and len(seen) == 4
        assert not segment.indexes_checked and segment.rebuilt_because is None
        assert segment.translate_offset(2).offset == 2
        assert "time index ends at 0, the segment's max timestamp is 103" in segment.rebuilt_because
    finally:
        segment.close_handlers()
