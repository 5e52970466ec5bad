"""The model's log cleaner (model/cleaner.py): one round's outcomes on small logs built by hand."""

from __future__ import annotations

import struct

import pytest

from model.cleaner import CleaningError, group_segments_by_size
from model.config import Config
from model.errors import LogError
from model.log import Log
from model.records import DELETE_HORIZON_BIT, Record, build_batch_v2, encode_batch_v2, encode_legacy_message
from model.segment import INT32_MAX, Segment

DAY = 86400000


class Clock:
    def __init__(self, now: int):
        self.now = now

    def __call__(self) -> int:
        return self.now


def make_log(now: int = 1000, **config) -> Log:
    overrides = {"cleanup.policy": "compact", **{k.replace("_", "."): v for k, v in config.items()}}
    log = Log("t", 0, Config.of(overrides), Clock(now), lambda name, base: 0, [])
    log.segments.append(log.new_segment(0))
    return log


def append(log: Log, *entries, **fields) -> None:
    """One batch of ``(timestamp, key, value)`` records appended as leader — or, when a record has
    no key, as replication brings it: a compacted topic's leader refuses it (§4.14)."""
    if all(key is not None for _, key, _ in entries):
        log.append(build_batch_v2(0, entries, **fields), True, 0)
    else:
        log.append(build_batch_v2(log.log_end_offset, entries, partition_leader_epoch=0, **fields), False, 0)


def content(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for s in log.segments for b in s.batches() for r in b.records()]


def batches(seg: Segment):
    return [b.header() for b in seg.batches()]


def test_latest_value_per_key_kept_older_dropped():
    log = make_log()
    append(log, (100, b"a", b"a0"), (101, b"b", b"b0"))
    log.roll()
    append(log, (102, b"a", b"a1"), (103, b"c", b"c0"))
    log.roll()
    append(log, (104, b"a", b"a2"))  # active: not in the map, so a1 stays
    assert log.clean() == {"groups": [[0, 2]]}
    assert content(log) == [(1, b"b", b"b0"), (2, b"a", b"a1"), (3, b"c", b"c0"), (4, b"a", b"a2")]
    assert [s.base_offset for s in log.segments] == [0, 4]


def test_fully_kept_batch_is_copied_byte_for_byte_and_partly_kept_one_keeps_its_offsets():
    log = make_log()
    append(log, (100, b"a", b"a0"), (101, b"b", b"b0"), (102, b"c", b"c0"))  # c0 replaced below
    log.roll()
    append(log, (103, b"x", b"x0"), (104, b"y", b"y0"))
    kept_bytes = bytes(log.segments[1].log)
    append(log, (105, b"c", b"c1"))
    log.roll()
    append(log, (106, b"z", b"z"))
    log.clean()
    cleaned = log.segments[0]
    first, second, third = cleaned.batches()
    h = first.header()
    assert (h.offset, h.last_offset_delta, h.records_count) == (0, 2, 2)  # offset 2 dropped, delta kept
    assert [r.offset for r in first.records()] == [0, 1] and first.is_valid()
    assert second.raw == kept_bytes  # all kept, no tombstone: unchanged
    assert third.header().offset == 5


def test_tombstone_gets_a_delete_horizon_then_goes_once_the_clock_reaches_it():
    log = make_log(now=5000)
    append(log, (100, b"k", b"v"))
    log.roll()
    append(log, (200, b"k", None))
    append(log, (300, b"other", b"o"))  # the round's last batch is kept even when empty
    log.roll()
    append(log, (400, b"z", b"z"))
    log.clean()
    cleaned = log.segments[0]
    tomb = cleaned.batches()[0]
    h = tomb.header()
    assert tomb.has_delete_horizon and h.attributes & DELETE_HORIZON_BIT
    assert h.base_timestamp == 5000 + DAY
    assert [(r.offset, r.key, r.value, r.timestamp) for r in tomb.records()] == [(1, b"k", None, 200)]
    assert tomb.is_valid()
    rewritten = bytes(cleaned.log)

    log.clock.now = 5000 + DAY - 1
    log.clean()
    assert bytes(log.segments[0].log) == rewritten  # the horizon is set: nothing to rewrite

    log.clock.now = 5000 + DAY
    log.clean()
    assert content(log) == [(2, b"other", b"o"), (3, b"z", b"z")]


def test_delete_retention_ms_sets_the_horizon():
    log = make_log(now=10, delete_retention_ms=7)
    append(log, (1, b"k", None), (2, b"j", b"v"))
    log.roll()
    append(log, (3, b"z", b"z"))
    log.clean()
    assert log.segments[0].batches()[0].header().base_timestamp == 17


def test_keyless_records_are_dropped():
    log = make_log()
    append(log, (100, None, b"no key"), (101, b"k", b"v"), (102, None, b"no key either"))
    log.roll()
    append(log, (103, b"z", b"z"))
    log.clean()
    assert content(log) == [(1, b"k", b"v"), (3, b"z", b"z")]
    assert log.segments[0].batches()[0].header().last_offset_delta == 2


def test_empty_last_batch_of_the_round_keeps_its_header():
    log = make_log()
    append(log, (100, b"k", b"v0"))
    append(log, (101, b"k", b"v1"))
    append(log, (102, None, b"keyless"))  # the batch just below the active segment
    log.roll()
    append(log, (103, b"z", b"z"))
    log.clean()
    hs = batches(log.segments[0])
    assert [(h.offset, h.records_count) for h in hs] == [(1, 1), (2, 0)]
    assert hs[1].base_timestamp == -1 and hs[1].max_timestamp == 102


def test_groups_respect_segment_bytes():
    probe = build_batch_v2(0, [(1, b"k0", b"v")])
    log = make_log(segment_bytes=2 * len(probe) + 1)
    for i in range(4):
        append(log, (1, b"k%d" % i, b"v"))
        log.roll()
    assert log.clean() == {"groups": [[0, 1], [2, 3]]}
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    assert [s.size for s in log.segments] == [2 * len(probe), 2 * len(probe), 0]


def test_groups_respect_segment_index_bytes():
    log = make_log(index_interval_bytes=0, segment_index_bytes=24)  # 3 offset entries (2 time entries + final)
    for i in range(3):
        append(log, (i, b"k%d" % i, b"v"))
        append(log, (i, b"j%d" % i, b"v"))  # the second append of a segment writes one index entry
        log.roll()
    assert [s.offset_index.size_in_bytes() for s in log.segments[:3]] == [8, 8, 8]
    assert [s.time_index.size_in_bytes() for s in log.segments[:3]] == [12, 12, 12]
    # offset entries 8+8 ≤ 24 but time entries 12+12 ≤ 24, a third (36) is too many
    groups = group_segments_by_size(log.segments[:3], 2**31, 24, 2**31)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 2], [4]]
    # Kafka 4.x indexes the cleaned segment batch by batch (§4.2): segment 2's first batch, no
    # longer the first of its segment, needs a third time entry the group's index has no room
    # for — the cleaner reaches corpora/kafka-findings/full-index-mid-append too
    with pytest.raises(CleaningError, match="full time index"):
        log.clean()


@pytest.mark.parametrize(("active_base", "groups"), [(INT32_MAX + 1, [[0, 1]]), (INT32_MAX + 2, [[0], [1]])])
def test_groups_respect_the_relative_offset_limit(active_base, groups):
    log = make_log()
    append(log, (1, b"a", b"a"))
    log.roll()
    log.append(
        build_batch_v2(100, [(2, b"b", b"b")], partition_leader_epoch=0), False, 0
    )  # follower: offset 100 in segment 1
    log.roll(active_base)
    log.append(build_batch_v2(active_base, [(3, b"c", b"c")], partition_leader_epoch=0), False, 0)
    assert [s.base_offset for s in log.segments] == [0, 1, active_base]
    assert log.clean() == {"groups": groups}
    assert content(log) == [(0, b"a", b"a"), (100, b"b", b"b"), (active_base, b"c", b"c")]


def test_an_empty_segment_joins_a_group_whatever_its_offsets():
    log = make_log()
    append(log, (1, b"a", b"a"))
    log.roll()  # segment 1 stays empty
    log.roll(INT32_MAX + 10)
    log.append(build_batch_v2(INT32_MAX + 10, [(3, b"c", b"c")], partition_leader_epoch=0), False, 0)
    assert log.clean() == {"groups": [[0, 1]]}


def test_the_active_segment_is_never_cleaned():
    log = make_log()
    append(log, (1, b"k", b"v0"))
    append(log, (2, b"k", b"v1"))
    before = bytes(log.active.log)
    assert log.clean() == {"groups": []}
    assert bytes(log.active.log) == before and len(log.segments) == 1 and not log.deleted


def test_nothing_to_clean_when_the_log_starts_in_the_active_segment():
    log = make_log()
    append(log, (1, b"k", b"v0"))
    log.roll()
    append(log, (2, b"k", b"v1"))
    log.delete_records(1)
    assert log.clean() == {"groups": []}
    assert [s.base_offset for s in log.segments] == [0, 1]


def test_not_compacted():
    log = make_log(cleanup_policy="delete")
    append(log, (1, b"k", b"v"))
    log.roll()
    with pytest.raises(LogError) as e:
        log.clean()
    assert e.value.kind == "NotCompacted"


def test_compact_and_delete_is_cleaned():
    log = make_log(cleanup_policy="compact,delete")
    append(log, (1, b"k", b"v"))
    append(log, (2, b"k", b"w"))
    log.roll()
    assert log.clean() == {"groups": [[0]]}
    assert content(log) == [(1, b"k", b"w")]


def test_old_segments_are_scheduled_for_deletion_and_the_cleaned_one_has_the_last_sources_mtime():
    log = make_log(now=1000, file_delete_delay_ms=500)
    append(log, (1, b"k", b"v"))
    old0 = log.active
    log.clock.now = 2000
    log.roll()
    append(log, (2, b"k", b"w"))
    old1 = log.active
    log.clock.now = 3000
    log.roll()
    assert (old0.mtime_ms, old1.mtime_ms) == (1000, 2000)
    log.clock.now = 9000
    log.clean()
    cleaned = log.segments[0]
    assert cleaned not in (old0, old1) and cleaned.base_offset == 0
    assert cleaned.mtime_ms == 2000
    assert log.deleted == {0: old0, 1: old1} and old0.deleted and old1.deleted
    assert sorted(log.delete_tasks) == [(9500, 0), (9500, 1)]
    assert cleaned.offset_index.length == cleaned.offset_index.size_in_bytes()  # made inactive: trimmed
    log.run_due_deletions(9500)
    assert log.deleted == {}


def test_a_batch_with_a_wrong_crc_is_filtered_like_any_other():
    """The cleaner never calls ensureValid: a CRC mismatch is copied as it is."""
    log = make_log()
    append(log, (1, b"k", b"v"))
    log.roll()
    bad = encode_batch_v2(base_offset=1, records=[Record(key=b"j", value=b"w")], base_timestamp=2, max_timestamp=2)
    bad = bad[:17] + struct.pack(">I", 12345) + bad[21:]
    log.active.log += bad
    log.set_log_end_offset(2)
    log.roll()
    assert log.clean() == {"groups": [[0, 1]]}
    assert bytes(log.segments[0].log).endswith(bad)


def _corrupt_layout():
    """Four one-batch segments cleaned one group each, the log starting in segment 2."""
    probe = build_batch_v2(0, [(1, b"k0", b"v")])
    log = make_log(segment_bytes=len(probe) + 30)
    for i in range(3):
        append(log, (1, b"k%d" % i, b"v"))
        log.roll()
    append(log, (1, b"k3", b"v"))
    return log, len(probe)


def test_a_corrupt_batch_fails_the_round_naming_file_and_position_groups_before_it_stay():
    log, size = _corrupt_layout()
    log.delete_records(2)  # the offset map reads segment 2 only: segment 1's damage is met while cleaning
    seg0, seg1, seg2, active = log.segments
    seg1.log += struct.pack(">qi", 9, 3) + bytes(10)  # a size field below 14
    damaged = bytes(seg1.log)
    with pytest.raises(CleaningError) as e:
        log.clean()
    assert e.value.kind == "CorruptRecordException"
    assert (e.value.path, e.value.position) == ("t-0/00000000000000000001.log", size)
    assert "t-0/00000000000000000001.log" in str(e.value)
    assert log.segments[0] is not seg0 and log.segments[1:] == [seg1, seg2, active]  # group [0] installed
    assert list(log.deleted) == [0]
    assert bytes(seg1.log) == damaged


def test_a_corrupt_batch_in_the_dirty_section_fails_before_anything_is_installed():
    log, size = _corrupt_layout()
    seg1 = log.segments[1]
    struct.pack_into(">b", seg1.log, 16, 7)  # magic 7
    before = list(log.segments)
    with pytest.raises(CleaningError) as e:
        log.clean()
    assert (e.value.kind, e.value.path, e.value.position) == (
        "CorruptRecordException",
        "t-0/00000000000000000001.log",
        0,
    )
    assert log.segments == before and not log.deleted


def test_an_overflowed_legacy_segment_is_split_and_the_round_aborted():
    log = make_log()
    legacy = Segment(0, log.config, 0, 0)
    high = INT32_MAX + 1
    legacy.log += encode_legacy_message(1, 0, b"a", b"a", 10) + encode_legacy_message(1, high, b"b", b"b", 11)
    legacy.mtime_ms = 77
    active = log.new_segment(high + 1)
    log.segments = [legacy, active]
    log.log_end_offset = log.recovery_point = high + 1
    assert log.clean() == {"groups": [], "split": 0}
    assert [s.base_offset for s in log.segments] == [0, high, high + 1]
    assert [s.mtime_ms for s in log.segments[:2]] == [77, 77]
    assert log.deleted == {0: legacy}
    assert content(log) == [(0, b"a", b"a"), (high, b"b", b"b")]


def test_index_entries_of_a_cleaned_segment_follow_its_batches_not_its_reads():
    """Three ~100 KiB batches: the 262144-byte read holds the first two, the second read the third —
    two appends to the cleaned segment, whose entries are still one per batch after the first, as
    the source's: Kafka 4.x's LogSegment.append indexes batch by batch (§4.2)."""
    log = make_log(index_interval_bytes=0)
    for i in range(3):
        append(log, (i, b"k%d" % i, bytes(100_000)))
    log.roll()
    append(log, (9, b"z", b"z"))
    source_entries = log.segments[0].offset_index.logical_entries()
    log.clean()
    second, third = log.segments[0].batches()[1:3]
    assert source_entries == [(1, second.position), (2, third.position)]
    assert log.segments[0].offset_index.logical_entries() == source_entries
