"""Issue #34: ``LogSegment.recover`` reads plain v2 batches itself and writes the rebuilt index
entries in one piece.  Every outcome must be the one Kafka's loop gives — each batch through
``BatchScan``, each entry appended on its own (the algorithm below, §4.6 as impl ran it before):
the bytes truncated or the exception, the index files' bytes, the max timestamp, the producers,
the map end, the leader epochs and the log bytes counted."""

from __future__ import annotations

import contextlib

import pytest

from conformance.sim_storage import SimStorage
from impl.config import LogConfig
from impl.errors import IndexFailure
from impl.file_records import BatchScan, v2_header_at
from impl.leader_epoch import LeaderEpochCache
from impl.segment import LogSegment, LogSegmentOffsetOverflow
from model.records import build_batch_v2, build_control_batch, encode_legacy_message

D = "/p-0"
T = 1_700_000_000_000


def _reference_recover(seg: LogSegment, epoch_cache) -> int:
    """One header per batch, one append per entry."""
    offsets, times = seg.offset_index.get(rebuild=True), seg.time_index.get(rebuild=True)
    offsets.reset()
    times.reset()
    seg._set_max_ts(None)
    seg.recovered_map_end, seg.recovered_producers = None, []
    try:
        _reference_rebuild(seg, epoch_cache, offsets, times)
    finally:  # the batches the producer state must read (impl.producer_runs), of all those collected
        seg.recovered_producers = _reference_collapse(seg.recovered_producers)
    valid = seg.recovered_valid
    seg.storage.stats.add("log_bytes_read", seg._size)
    truncated = seg._size - valid
    seg._truncate_log(valid)
    offsets.trim_to_valid_size()
    times.maybe_append(*seg.max_timestamp_and_offset(), skip_full_check=True)
    times.trim_to_valid_size()
    return truncated


def _reference_collapse(read: list) -> list:
    """impl.producer_runs's rule, restated over headers: every transactional or control batch, the
    first of each run of a producer's other batches, and any batch with fewer than five data
    batches of its producer after it before the next first batch of a run."""
    keep, in_run, first = set(), set(), set()
    for i, (h, _) in enumerate(read):
        if h.attributes & 0x30:
            keep.add(i)
            in_run.discard(h.producer_id)
        elif h.producer_id not in in_run:
            keep.add(i)
            first.add(i)
            in_run.add(h.producer_id)
    for i, (h, _) in enumerate(read):
        stop = min([j for j in first if j > i], default=len(read))
        later = [j for j in range(i + 1, stop) if read[j][0].producer_id == h.producer_id and not read[j][0].attributes & 0x20]
        if len(later) < 5:
            keep.add(i)
    return [read[i] for i in sorted(keep)]


def _reference_rebuild(seg: LogSegment, epoch_cache, offsets, times) -> None:
    valid = last_entry = 0
    try:
        for h in BatchScan(seg.view()):
            if not seg.can_convert_to_relative_offset(h.last_offset):
                raise LogSegmentOffsetOverflow(seg, h.last_offset)
            if h.max_timestamp > seg.max_timestamp_so_far():
                seg._set_max_ts((h.max_timestamp, h.last_offset))
            if valid - last_entry > seg.config.index_interval_bytes:
                offsets.append(h.last_offset, valid)
                times.maybe_append(*seg.max_timestamp_and_offset())
                last_entry = valid
            valid += h.size
            if h.magic >= 2:
                seg.recovered_map_end = h.last_offset + 1
                if h.producer_id >= 0:
                    seg.recovered_producers.append((h, seg.marker(h)))
            if h.magic >= 2 and epoch_cache is not None and h.partition_leader_epoch >= 0:
                latest = epoch_cache.latest_epoch()
                if latest is None or h.partition_leader_epoch > latest:
                    epoch_cache.assign(h.partition_leader_epoch, h.offset)
    except LogSegmentOffsetOverflow:
        raise
    except Exception:
        for index in (offsets, times):
            with contextlib.suppress(IndexFailure, OSError):
                index.trim_to_valid_size()
        raise
    seg.recovered_valid = valid


def _v2(base: int, n: int = 3, ts: int = T, epoch: int = 0, **fields) -> bytes:
    return build_batch_v2(base, [(ts + i, b"k", b"v" * 40) for i in range(n)], partition_leader_epoch=epoch, **fields)


def _outcome(log: bytes, recover, config: LogConfig, base: int = 0):
    storage = SimStorage()
    storage.make_dirs(D)
    f = storage.open(f"{D}/{base:020d}.log", create=True)
    f.write_at(0, log)
    f.close()
    seg = LogSegment(storage, D, base, config, 0, existing=True)
    cache = LeaderEpochCache(storage, D)
    try:
        result = recover(seg, cache)
    except (IndexFailure, LogSegmentOffsetOverflow, ValueError) as e:
        result = (type(e).__name__, str(e))
    offsets, times = seg.offset_index.get(), seg.time_index.get()
    return {
        "result": result,
        "index": offsets.file_bytes(),
        "timeindex": times.file_bytes(),
        "entries": (offsets.entries, offsets.last_offset, times.entries, times.last_entry),
        "max_ts": (seg._max_ts, seg._max_ts_as_loaded),
        "map_end": seg.recovered_map_end,
        "producers": seg.recovered_producers,
        "epochs": cache.entries,
        "stats": storage.stats.snapshot(),
        "size": seg.size,
    }


def _segments():
    plain = b"".join(_v2(3 * i, ts=T + 7 * i) for i in range(40))
    yield "plain", plain, {}
    yield "timestamps-fall-and-repeat", b"".join(_v2(3 * i, ts=T - 5 * (i % 4)) for i in range(30)), {}
    yield "epochs-rise", b"".join(_v2(3 * i, epoch=i // 7) for i in range(30)), {}
    yield "torn-tail", plain[:-25], {}
    yield "short-tail", plain + b"\0" * 17, {}
    damaged = bytearray(plain)
    damaged[len(_v2(0)) * 20 + 70] ^= 1
    yield "crc-fails-midway", bytes(damaged), {}
    overlap = b"".join(_v2(3 * i, n=3 if i != 20 else 1) for i in range(19)) + _v2(40) + _v2(30) + _v2(60)
    yield "overlapping-batches", overlap, {}  # KAFKA-3955: InvalidOffsetException midway
    yield "offset-overflow", _v2(0) + _v2(2**31 + 5), {}
    producers = b"".join(
        _v2(3 * i, producer_id=7, producer_epoch=0, base_sequence=3 * i, transactional=True) for i in range(10)
    ) + build_control_batch(30, 0, T, producer_id=7, producer_epoch=0, partition_leader_epoch=0)
    yield "producers-and-a-marker", producers + _v2(31), {}
    legacy = b"".join(encode_legacy_message(1, i, b"k", b"v" * 100, T + i) for i in range(20))
    yield "legacy-then-v2", legacy + b"".join(_v2(20 + 3 * i) for i in range(20)), {}
    yield "index-fills-up", plain, {"segment_index_bytes": 64}
    yield "epoch-with-negative-base", _v2(-5, epoch=3), {}
    yield "empty", b"", {}


@pytest.mark.parametrize("interval", [0, 150, 4096])
@pytest.mark.parametrize("name,log,overrides", list(_segments()), ids=[c[0] for c in _segments()])
def test_recovery_matches_one_append_per_entry(name, log, overrides, interval):
    config = LogConfig(index_interval_bytes=interval, **overrides)
    want = _outcome(log, _reference_recover, config)
    got = _outcome(log, lambda seg, cache: seg.recover(cache), config)
    assert got == want


def test_v2_header_at_is_the_scans_header():
    log = b"".join(_v2(3 * i, producer_id=i, base_sequence=i) for i in range(5))
    for h in BatchScan(log):
        assert v2_header_at(log, h.position, h.size) == h


def test_write_entries_leaves_what_appends_leave():
    storage = SimStorage()
    storage.make_dirs(D)
    one = LogSegment(storage, D, 100, LogConfig(), 0)
    many = LogSegment(storage, D, 200, LogConfig(), 0)
    offsets, times = one.offset_index.get(), one.time_index.get()
    for i in range(5):
        offsets.append(100 + 10 * i, 64 * i)
        times.maybe_append(T + i, 100 + 10 * i)
    flat_offsets = [x for i in range(5) for x in (10 * i, 64 * i)]
    flat_times = [x for i in range(5) for x in (T + i, 10 * i)]
    many.offset_index.get().write_entries(flat_offsets)
    many.time_index.get().write_entries(flat_times)
    assert flat_offsets == flat_times == []
    assert many.offset_index.get().file_bytes() == offsets.file_bytes()
    assert many.time_index.get().file_bytes() == times.file_bytes()
    assert many.offset_index.get().last_offset - 200 == offsets.last_offset - 100
    assert many.time_index.get().last_entry == (T + 4, 240)
