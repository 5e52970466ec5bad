"""The model's indexes against the spec's statements (§3.1–§3.8)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.errors import IndexFailure
from model.indexes import AbortedTxn, OffsetIndex, Slots, TimeIndex, TransactionIndex, file_entries


def reason(fn, *args, **kw):
    with pytest.raises(IndexFailure) as info:
        fn(*args, **kw)
    return info.value.kind, info.value.reason


def test_worked_bytes_3_8():
    o = OffsetIndex.create(1000, 1024)
    o.append(1050, 4200)
    o.append(1100, 8400)
    o.trim_to_valid_size()
    assert o.file_bytes().hex() == "000000320000106800000064000020d0"
    t = TimeIndex.create(1000, 1024)
    t.maybe_append(1700000000000, 1099)
    t.trim_to_valid_size()
    assert t.file_bytes().hex() == "0000018bcfe5680000000063"


def test_create_preallocates_rounded_down_and_refuses_tiny_sizes():
    assert OffsetIndex.create(0, 10485760).max_entries == 1310720
    t = TimeIndex.create(0, 10485760)
    assert (t.length, t.max_entries) == (10485756, 873813)
    assert reason(OffsetIndex.create, 0, 7) == ("IllegalArgumentException", "invalid-max-index-size")
    assert reason(TimeIndex.create, 0, 11) == ("IllegalArgumentException", "invalid-max-index-size")


def test_offset_index_append_rules():
    o = OffsetIndex.create(100, 24)
    assert reason(o.append, 99, 1) == ("IndexOffsetOverflowException", "relative-offset-overflow")
    o.append(100, 5)  # an equal-to-base first entry is fine; positions are never checked
    assert reason(o.append, 100, 9) == ("InvalidOffsetException", "offset-not-increasing")
    o.append(101, 1)
    assert reason(o.append, 100 + 2**31, 9) == ("IndexOffsetOverflowException", "relative-offset-overflow")
    o.append(102, 2)
    assert o.is_full() and reason(o.append, 103, 3) == ("IllegalArgumentException", "index-full")
    assert o.can_append_offset(100 + 2**31 - 1) and not o.can_append_offset(99)


def test_existing_file_is_assumed_full_rule_4():
    o = OffsetIndex.create(100, 80)
    o.append(150, 4000)
    reopened = OffsetIndex.open_existing(100, 80, o.file_bytes())
    assert reopened.entries == reopened.max_entries == 10
    assert reopened.last_offset == 100  # the zero slot: relative 0
    reopened.sanity_check()  # vacuous for a zero-padded offset index (§3.5)
    assert reopened.lookup(200) == (100, 0)  # arbitrary-but-deterministic on an unsorted tail (§3.4.8)


def test_time_index_zero_padding_fails_kafka_sanity_check():
    t = TimeIndex.create(100, 120)
    t.maybe_append(5000, 120)
    reopened = TimeIndex.open_existing(100, 120, t.file_bytes())
    assert reopened.last_entry == (0, 100) and reopened.is_full()
    assert reason(reopened.sanity_check) == ("CorruptIndexException", "last-timestamp-below-first")
    only_zeros = TimeIndex.open_existing(100, 120, bytes(120))
    only_zeros.sanity_check()  # passes although "full" (§7.7)


def test_sanity_checks_catch_negative_relative_offsets_and_odd_lengths():
    bad = struct.pack(">ii", 5, 10) + struct.pack(">ii", -1, 20)
    assert reason(OffsetIndex.open_existing(100, 80, bad).sanity_check) == (
        "CorruptIndexException",
        "last-offset-below-base",
    )
    assert reason(OffsetIndex.open_existing(100, 80, bad[:8] + b"\x01").sanity_check) == (
        "CorruptIndexException",
        "length-not-multiple",
    )
    t = struct.pack(">qi", 5, 1) + struct.pack(">qi", 9, -2)
    assert reason(TimeIndex.open_existing(100, 80, t).sanity_check) == (
        "CorruptIndexException",
        "last-offset-below-base",
    )
    assert reason(TimeIndex.open_existing(100, 80, t[:12] + b"\x01").sanity_check) == (
        "CorruptIndexException",
        "length-not-multiple",
    )


def test_time_index_maybe_append_rules():
    t = TimeIndex.create(100, 48)  # 4 slots, full at 3
    t.maybe_append(-1, 100)  # ignored: not above the empty index's −1
    assert t.entries == 0
    t.maybe_append(10, 105)
    t.maybe_append(10, 106)  # equal timestamp: ignored
    assert t.entries == 1
    assert reason(t.maybe_append, 20, 104) == ("InvalidOffsetException", "offset-not-increasing")
    assert reason(t.maybe_append, 9, 107) == ("IllegalStateException", "timestamp-not-increasing")
    t.maybe_append(20, 105)  # equal offset is allowed
    t.maybe_append(30, 110)
    assert t.is_full() and reason(t.maybe_append, 40, 111) == ("IllegalArgumentException", "index-full")
    t.maybe_append(40, 111, skip_full_check=True)  # the reserved final slot
    assert reason(t.maybe_append, 50, 112, skip_full_check=True) == ("BufferOverflowException", "write-past-mapping")
    assert t.lookup(25) == (20, 105) and t.lookup(5) == (-1, 100) and t.lookup(99) == (40, 111)


def test_lookups_and_warm_section():
    o = OffsetIndex.create(0, 8 * 3000)
    for i in range(1, 2500):
        o.append(10 * i, 100 * i)
    first_hot = o.entries - 1 - 1024
    for target in (
        0,
        9,
        10,
        11,
        10 * (first_hot + 1),
        10 * (first_hot + 1) + 5,
        10 * (first_hot + 1) - 1,
        24990,
        10**9,
    ):
        expected = max([e for e in o.logical_entries() if e[0] <= target], default=(0, 0))
        assert o.lookup(target) == expected
    assert o.fetch_upper_bound_offset(150, 100) == (30, 300)
    assert o.fetch_upper_bound_offset(249900, 1) is None
    assert o.fetch_upper_bound_offset(0, 0) == (10, 100)


def test_truncate_to_keeps_strictly_smaller_offsets_and_leaves_bytes():
    o = OffsetIndex.create(0, 80)
    for i in (10, 20, 30):
        o.append(i, i * 10)
    o.truncate_to(25)
    assert o.logical_entries() == [(10, 100), (20, 200)]
    o.truncate_to(20)
    assert o.logical_entries() == [(10, 100)] and o.last_offset == 10
    assert o.slots[2] == (30, 300)  # Kafka only moves the position
    o.truncate_to(5)
    assert o.entries == 0 and o.last_offset == 0
    t = TimeIndex.create(0, 120)
    for ts, off in ((5, 10), (6, 20), (7, 30)):
        t.maybe_append(ts, off)
    t.truncate_to(20)
    assert t.logical_entries() == [(5, 10)] and t.last_entry == (5, 10)


def test_resize_trim_reset():
    o = OffsetIndex.create(0, 80)
    o.append(1, 8)
    assert o.trim_to_valid_size() and o.length == 8 and o.is_full()
    assert not o.trim_to_valid_size()
    assert reason(o.resize, 0) == ("IllegalArgumentException", "resize-below-entries")
    o.resize(1000)
    assert (o.length, o.entries, o.max_entries) == (1000, 1, 125)
    o.reset()
    assert (o.entries, o.length) == (0, 80)
    odd = OffsetIndex.open_existing(0, 80, bytes(12))
    assert odd.length == 12 and odd.entries == 1
    odd.resize(24)
    assert odd.length == 24 and odd.odd_tail == b""
    assert reason(o.entry, 0) == ("IllegalArgumentException", "entry-out-of-range")


def test_transaction_index():
    x = TransactionIndex(100)
    assert x.all_entries() == [] and not x.exists
    x.truncate_to(5)
    a, b, c = AbortedTxn(1, 90, 110, 95), AbortedTxn(2, 111, 120, 115), AbortedTxn(3, 121, 130, 125)
    for txn in (a, b, c):
        x.append(txn)
    assert reason(x.append, AbortedTxn(4, 1, 130, 1)) == ("IllegalArgumentException", "txn-offset-not-increasing")
    assert x.collect_aborted_txns(112, 119) == ([b], True)
    assert x.collect_aborted_txns(0, 1000) == ([a, b, c], False)
    x.truncate_to(120)
    assert x.all_entries() == [a] and x.last_offset == 110
    x.truncate_to(500)
    assert x.last_offset == 110
    reopened = TransactionIndex.open_existing(100, x.data + b"\x00" * 20)  # partial trailing record ignored
    assert reopened.all_entries() == [a] and reopened.last_offset is None
    reopened.append(AbortedTxn(5, 1, 50, 1))  # the in-memory last offset is not recovered (§3.7.2)
    assert reason(reopened.sanity_check) == ("CorruptIndexException", "txn-last-offset-below-base")
    v1 = TransactionIndex.open_existing(100, b"\x01" + a.encode()[1:])
    assert reason(v1.all_entries) == ("KafkaException", "unexpected-txn-version")
    x.reset()
    assert x.data == b"" and x.last_offset is None


def test_file_entries_reads_every_whole_slot_as_kafka_s_pair():
    """§3.2, §3.3, §3.8: big-endian signed pairs, every whole slot (padding too), a partial slot
    dropped, the kind named by the file's suffix with or without .deleted/.swap/.cleaned."""
    offsets = struct.pack(">iiii", 0x32, 4200, -7, 8400) + bytes(8) + b"\x00\x00\x00"
    expected = [(50, 4200), (-7, 8400), (0, 0)]
    for name in ("00000000000000001000.index", "x.index.deleted", "x.index.swap", "x.index.cleaned"):
        assert file_entries(name, offsets) == expected
    assert file_entries("x.index", bytes.fromhex("000000320000106800000064000020d0")) == [(50, 4200), (100, 8400)]
    times = bytes.fromhex("0000018bcfe5680000000063") + struct.pack(">qi", -1, -3) + b"\x01" * 11
    for name in ("x.timeindex", "x.timeindex.deleted", "x.timeindex.swap", "x.timeindex.cleaned"):
        assert file_entries(name, times) == [(1700000000000, 99), (-1, -3)]
    assert file_entries("x.index", b"") == [] and file_entries("x.timeindex", b"\x00" * 11) == []
    for name in ("x.log", "x.txnindex", "x.index.tmp", "x.timeindex.bak", "index"):
        with pytest.raises(ValueError):
            file_entries(name, offsets)


@given(
    st.binary(max_size=40),
    st.integers(0, 6),
    st.lists(st.tuples(st.sampled_from(["set", "resize"]), st.integers(0, 7), st.integers(-3, 3)), max_size=8),
)
def test_slots_behave_like_a_list_of_the_file_s_slots(data, n, ops):
    """model.indexes.Slots keeps only the written bytes; every read must be what a list of tuples
    unpacked from the whole file (zero-padded to ``n`` slots) gives."""
    fmt = struct.Struct(">ii")
    slots = Slots(fmt, n, data)
    padded = (data + bytes(n * 8))[: n * 8]
    reference = [fmt.unpack_from(padded, i * 8) for i in range(n)]
    for op, i, v in ops:
        if op == "set" and i < len(reference):
            slots[i] = reference[i] = (v, -v)
        elif op == "resize":
            slots.resize(i)
            reference = reference[:i] + [(0, 0)] * (i - len(reference))
        assert list(slots) == reference == [slots[j] for j in range(len(slots))]
        assert bytes(slots) == b"".join(fmt.pack(*e) for e in reference)
    assert slots == Slots(fmt, len(reference), bytes(slots)) and slots == reference
