"""Unclean recovery of one segment: ``LogSegment.recover()`` over one ``crc32c`` call.

``benchmarks.scan`` times ``BatchScan.run()``, which decodes no header; recovery (spec §4.6) also
reads every batch's header, keeps the max timestamp, rebuilds both indexes (an entry per
``index.interval.bytes``, 4096 by default: one per batch for batches larger than that), collects the
producers of v2 batches and follows the leader epochs.  This benchmark times that path as the loader
runs it:

* the segment (``benchmarks.segments``) is written to a temporary directory with the trimmed
  ``.index`` and ``.timeindex`` a clean close would have left, and a leader-epoch checkpoint holding
  the segment's epoch (0 from offset 0), so the epoch rule runs on every batch without writing;
* before every call, outside the clock, the index files are rewritten to that state and the segment
  is opened as ``impl.loader`` opens it (``LogSegment(..., existing=True)`` on :class:`OsStorage`,
  ``LogConfig()`` defaults) with a :class:`LeaderEpochCache` read from the dir;
* the timed call is ``segment.recover(epoch_cache)``: mapping the log, the scan, the index rebuild
  (files resized, written, trimmed);
* after every call, outside the clock: nothing truncated, the log bytes read counted once, the
  entry counts and the epoch cache as expected; after the warm-up call also the index files' bytes,
  against entries computed here from the batch headers (§4.6's rules, written out independently).
  A recovery that stops early or rebuilds the wrong entries aborts the run.

``recovery_over_crc_one_call`` is the time of one ``crc32c`` call over the whole segment (in
memory) over the recovery's: the fraction of raw checksum speed recovery reaches (1.0 would be a
recovery costing nothing beyond one checksum pass).  Beside it, the same over the per-batch-slice
floor of ``benchmarks.scan`` (what any Python loop calling ``crc32c`` once per batch pays).
"""

from __future__ import annotations

import os
import struct
import tempfile
from typing import Any

import attrs
from crc32c import crc32c

from benchmarks.scan import crc_floor
from benchmarks.segments import Segment
from benchmarks.timing import Staged, mb_per_s, measure
from impl.checkpoints import write_epochs
from impl.config import LogConfig
from impl.leader_epoch import CHECKPOINT_NAME, LeaderEpochCache
from impl.segment import LogSegment
from impl.storage import OsStorage

_v2_fields = struct.Struct(">q15xi8xq").unpack_from  # base offset, last offset delta, max timestamp
EPOCHS = [(0, 0)]  # the segments' batches carry partition leader epoch 0 from offset 0


@attrs.frozen
class Expected:
    """What a correct recovery of the segment rebuilds: the index files' bytes."""

    offset_index: bytes
    time_index: bytes

    @property
    def offset_entries(self) -> int:
        return len(self.offset_index) // 8

    @property
    def time_entries(self) -> int:
        return len(self.time_index) // 12


def expected_indexes(segment: Segment, interval: int) -> Expected:
    """§4.6 over the benchmark segment (base offset 0, every batch valid): an offset entry (last
    offset, position) at a batch more than ``interval`` bytes past the previous entry, with a time
    entry (max timestamp so far, its batch's last offset) if that timestamp grew, and the final
    time entry after the scan."""
    offsets, times = [], []
    best = (-1, 0)
    last_entry = 0
    for position in segment.positions:
        base, delta, max_ts = _v2_fields(segment.data, position)
        if max_ts > best[0]:
            best = (max_ts, base + delta)
        if position - last_entry > interval:
            offsets.append(struct.pack(">ii", base + delta, position))
            if best[0] > (times[-1][0] if times else -1):
                times.append(best)
            last_entry = position
    if best[0] > (times[-1][0] if times else -1):
        times.append(best)
    return Expected(b"".join(offsets), b"".join(struct.pack(">qi", ts, off) for ts, off in times))


class RecoveryDir:
    """The segment's directory and the per-call steps of the staged contender."""

    def __init__(self, root: str, segment: Segment, config: LogConfig):
        self.dir, self.segment, self.config = root, segment, config
        self.expected = expected_indexes(segment, config.index_interval_bytes)
        self.storage = OsStorage()
        self.prefix = f"{root}/{0:020d}"
        with open(self.prefix + ".log", "wb") as f:
            f.write(segment.data)
        write_epochs(self.storage, f"{root}/{CHECKPOINT_NAME}", EPOCHS)
        self.calls = 0

    def _write(self, suffix: str, data: bytes) -> None:
        with open(self.prefix + suffix, "wb") as f:
            f.write(data)

    def prepare(self) -> tuple[LogSegment, LeaderEpochCache]:
        self._write(".index", self.expected.offset_index)
        self._write(".timeindex", self.expected.time_index)
        segment = LogSegment(self.storage, self.dir, 0, self.config, now_ms=0, existing=True)
        return segment, LeaderEpochCache(self.storage, self.dir)

    @staticmethod
    def run(state: tuple[LogSegment, LeaderEpochCache]) -> tuple[LogSegment, LeaderEpochCache, int, int]:
        segment, cache = state
        before = segment.storage.stats.log_bytes_read
        return segment, cache, segment.recover(cache), before

    def finish(self, result: tuple[LogSegment, LeaderEpochCache, int, int]) -> None:
        segment, cache, truncated, before = result
        try:
            self._check(segment, cache, truncated, before)
        finally:
            segment.close_handlers()
        if self.calls == 0:
            self._check_files()
        self.calls += 1

    def _check(self, segment: LogSegment, cache: LeaderEpochCache, truncated: int, before: int) -> None:
        """A recovery that stopped early or rebuilt other entries would make the ratio meaningless."""
        got = (
            truncated,
            segment.storage.stats.log_bytes_read - before,
            segment.offset_index.get().entries,
            segment.time_index.get().entries,
            cache.entries,
        )
        want = (0, len(self.segment.data), self.expected.offset_entries, self.expected.time_entries, EPOCHS)
        if got != want:
            raise RuntimeError(
                f"recovery of the {self.segment.label} segment: (truncated, log bytes read, offset entries, "
                f"time entries, epochs) = {got}, expected {want}"
            )

    def _check_files(self) -> None:
        for suffix, data in ((".index", self.expected.offset_index), (".timeindex", self.expected.time_index)):
            with open(self.prefix + suffix, "rb") as f:
                if f.read() != data:
                    raise RuntimeError(f"recovery of the {self.segment.label} segment rebuilt a different {suffix}")
        if os.path.getsize(self.prefix + ".log") != len(self.segment.data):
            raise RuntimeError(f"recovery of the {self.segment.label} segment changed the .log")


def run(segment: Segment, repeat: int, config: LogConfig | None = None) -> dict[str, Any]:
    data = segment.data
    ranges = segment.crc_ranges()
    with tempfile.TemporaryDirectory(prefix="klc-bench-recovery-") as tmp:
        rd = RecoveryDir(tmp, segment, config or LogConfig())

        def check(name: str, result: Any) -> None:
            if name == "crc_floor" and result != segment.batches:
                raise RuntimeError("crc floor did not visit every batch")

        timings = measure(
            {
                "recovery": Staged(rd.prepare, rd.run, rd.finish),
                "crc_one_call": lambda: crc32c(data),
                "crc_floor": lambda: crc_floor(data, ranges),
            },
            repeat,
            check,
        )
        checked = rd.calls
    rec, whole, floor = timings["recovery"].best, timings["crc_one_call"].best, timings["crc_floor"].best
    nbytes = len(data)
    return {
        "rounds": len(timings["recovery"].runs),
        "checked_calls": checked,
        "bytes": nbytes,
        "batches": segment.batches,
        "offset_index_entries": rd.expected.offset_entries,
        "time_index_entries": rd.expected.time_entries,
        "recovery_s": rec,
        "recovery_median_s": timings["recovery"].median,
        "crc_one_call_s": whole,
        "crc_floor_s": floor,
        "recovery_mb_s": mb_per_s(nbytes, rec),
        "crc_one_call_mb_s": mb_per_s(nbytes, whole),
        "crc_floor_mb_s": mb_per_s(nbytes, floor),
        "recovery_over_crc_one_call": whole / rec,
        "recovery_over_crc_floor": floor / rec,
        "recovery_ns_per_batch": rec / segment.batches * 1e9,
    }


if __name__ == "__main__":  # a part of ``python -m benchmarks``, not a benchmark of its own
    import sys

    print(f"benchmarks.recovery: {__doc__.strip().splitlines()[0]}\nIts figures are measured by: python -m benchmarks [--help]")
    sys.exit(0 if sys.argv[1:] in ([], ["--help"], ["-h"]) else 2)
