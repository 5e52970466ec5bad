"""Clean start: ``LogManager.startup`` on a data dir a graceful shutdown left, over its floor.

The dir (spec §6.3, §6.4): ``--partitions`` partition dirs holding ``--segments`` segments between
them, each segment one 10-record v2 batch with the trimmed indexes a close leaves (an empty
``.index`` — one batch is never indexed, §4.2 — and a ``.timeindex`` holding the final entry of
§4.4), a ``leader-epoch-checkpoint`` with epoch 0 from offset 0, the producer snapshot the close
took at the log end offset (§5.8), both offset checkpoints and the clean-shutdown marker.  After a
clean shutdown nothing of a segment may be read or recovered (spec §5.4): what is left is listing
the dirs and opening each ``.log`` (Kafka keeps every segment's ``.log`` open), which is the floor.

Figures, each within one run:

* **load / floor**: ``LogManager`` construction and ``startup()`` end to end, over the floor —
  ``os.scandir`` of the data dir and ``os.listdir`` of every partition dir, and ``os.open`` +
  ``os.close`` of every ``.log``.  Interleaved with the floor, best of ``--repeat``.
* **file-system calls per segment**: one extra, untimed load with every ``os`` function the real
  storage calls counted (``os.stat`` also counts ``os.path.exists``/``isdir``), and each
  ``mmap.mmap`` counted as its ``fstat`` + ``mmap``; ``stat`` calls (stat, lstat, fstat) apart.

Before timing, the first load is checked — every partition loaded, every segment there, log end
offset, recovery point and log start offset right, no segment recovered, log bytes read exactly the
active segments' tails after their last index entry (``readNextOffset``, §4.5 rule 3), nothing else
read — and between loads the dir is put back as the shutdown left it (the marker written again, the
active segments' indexes, which every load resizes to ``segment.index.bytes`` (§5.7), cut back);
after the first load the whole dir is compared with the original, so every load does the same work.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import gc
import json
import mmap
import os
import shutil
import statistics
import struct
import tempfile
import time
from typing import Any

import attrs
from crc32c import crc32c

from impl.config import LogConfig
from impl.log_manager import LOCK, LogManager
from impl.storage import OsStorage
from model.records import build_batch_v2

T0 = 1_700_000_000_000
RECORDS = 10  # per segment: one batch
MARKER = b'{"version":0,"brokerEpoch":-1}'
EPOCHS = b"0\n1\n0 0\n"  # epoch 0 from offset 0
EMPTY_SNAPSHOT = struct.pack(">hIi", 1, crc32c(b"\0\0\0\0"), 0)  # version 1, crc, no entries (§5.8)
INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes (Kafka's default)
# the os functions the real storage (impl.storage.OsStorage) reaches; os.path.exists/isdir go through os.stat
COUNTED = ("stat", "lstat", "fstat", "lseek", "open", "close", "listdir", "scandir", "ftruncate", "pread", "pwrite",
           "fsync", "unlink", "replace", "rename", "utime", "makedirs", "mkdir")  # fmt: skip
STATS = ("stat", "lstat", "fstat")


@attrs.frozen
class Layout:
    data_dir: str
    partitions: int
    segments: tuple[int, ...]  # per partition
    active_tail_bytes: int  # the active segments' .log bytes after their last index entry, all partitions
    active_indexes: tuple[tuple[str, int], ...]  # (path, size) of every active segment's index files


@functools.cache
def _segment_bytes(base: int) -> bytes:
    records = [(T0 + j, b"k%d" % j, b"v" * 40) for j in range(RECORDS)]
    return build_batch_v2(base, records, partition_leader_epoch=0)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def build(root: str, partitions: int, segments: int, distinct: bool = False) -> Layout:
    """Write the dir; ``segments`` spread over the partitions (the first ones get one more).

    The rolled segments' files are hard links to one ``.log``, one ``.index`` and one ``.timeindex``
    (``distinct``: each ``.log`` a file of its own, holding its own offsets).  Creating a file costs
    0.3-0.7 ms on this ext4, so 10,000 ``.log`` files take seconds to build; a clean load reads none
    of them (``check`` proves it), and opening or stat-ing a link costs what a file of its own does
    (within ~5 % here, on both sides of the ratio).  The active segments' files are their own."""
    data = os.path.join(root, "d0")
    os.makedirs(data)
    counts = tuple(segments // partitions + (p < segments % partitions) for p in range(partitions))
    rolled = {
        ".log": (os.path.join(root, "rolled.log"), _segment_bytes(0)),
        ".index": (os.path.join(root, "rolled.index"), b""),  # one batch is never indexed (§4.2)
        ".timeindex": (os.path.join(root, "rolled.timeindex"), struct.pack(">qi", T0 + RECORDS - 1, RECORDS - 1)),
    }  # (the final time entry written at roll/close, §4.4; the same timestamps in every segment)
    for path, content in rolled.values():
        _write(path, content)
    tail, active = 0, []
    for p, count in enumerate(counts):
        part = os.path.join(data, f"t-{p}")
        os.mkdir(part)
        for i in range(count):
            base = i * RECORDS
            prefix = os.path.join(part, f"{base:020d}")
            for suffix, (source, content) in rolled.items():
                if suffix == ".log" and (distinct or i == count - 1):
                    content = _segment_bytes(base)
                    _write(prefix + suffix, content)
                elif i < count - 1:
                    os.link(source, prefix + suffix)
                else:  # the active segment's, which every load resizes (§5.7)
                    _write(prefix + suffix, content)
        tail += len(_segment_bytes(base))
        active += [(prefix + ".index", 0), (prefix + ".timeindex", 12)]
        _write(os.path.join(part, f"{count * RECORDS:020d}.snapshot"), EMPTY_SNAPSHOT)
        _write(os.path.join(part, "leader-epoch-checkpoint"), EPOCHS)
    lines = "".join(f"t {p} {count * RECORDS}\n" for p, count in enumerate(counts))
    _write(os.path.join(data, "recovery-point-offset-checkpoint"), f"0\n{partitions}\n{lines}".encode())
    _write(os.path.join(data, "log-start-offset-checkpoint"), b"0\n0\n")
    _write(os.path.join(data, ".kafka_cleanshutdown"), MARKER)
    return Layout(data, partitions, counts, tail, tuple(active))


def floor(layout: Layout) -> int:
    """List the data dir and every partition dir, open and close every ``.log``; the ``.log`` count."""
    opened = 0
    with os.scandir(layout.data_dir) as entries:
        for entry in entries:
            if entry.is_dir():
                for name in os.listdir(entry.path):
                    if name.endswith(".log"):
                        os.close(os.open(f"{entry.path}/{name}", os.O_RDONLY))
                        opened += 1
    return opened


def load(layout: Layout) -> tuple[LogManager, OsStorage, list]:
    """The timed part: the manager built and started, as a broker's startup does."""
    storage = OsStorage()
    manager = LogManager(storage, [layout.data_dir], LogConfig(segment_index_bytes=INDEX_BYTES), lambda: T0)
    return manager, storage, manager.startup()


def release(manager: LogManager, storage: OsStorage) -> None:
    for log in manager.logs.values():
        log.close_handlers()
    storage.close_all()


def reset(layout: Layout) -> None:
    """Put the dir back as the shutdown left it: the marker, the active indexes' trimmed sizes, and
    no dir lock (the load made one; a shutdown deletes it)."""
    for path, size in layout.active_indexes:
        os.truncate(path, size)
    _write(os.path.join(layout.data_dir, ".kafka_cleanshutdown"), MARKER)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(layout.data_dir, LOCK))


def check(layout: Layout, storage: OsStorage, loads: list) -> None:
    """Raise unless the load did the whole job and nothing more (see the module docstring)."""
    if len(loads) != layout.partitions or any(load.error for load in loads):
        raise RuntimeError(f"not every partition loaded: {[load.error for load in loads if load.error]}")
    for load in loads:
        count = layout.segments[load.partition]
        log, report = load.log, load.report
        bases = [s.base_offset for s in log.segments]
        if bases != [i * RECORDS for i in range(count)]:
            raise RuntimeError(f"{load.name}: segments {bases[:3]}... ({len(bases)}), expected {count}")
        leo = count * RECORDS
        if (log.log_start_offset, log.recovery_point, log.log_end_offset) != (0, leo, leo):
            raise RuntimeError(f"{load.name}: start, recovery point, end {log.log_start_offset}, "
                               f"{log.recovery_point}, {log.log_end_offset}; expected 0, {leo}, {leo}")  # fmt: skip
        if report.recovered_segments or report.deleted_files or report.scanned_segments:
            raise RuntimeError(f"{load.name}: a clean start recovered or deleted something: {report}")
    stats = storage.stats
    if stats.log_bytes_read != layout.active_tail_bytes or stats.producer_state_bytes_read:
        raise RuntimeError(
            f"log bytes read {stats.log_bytes_read} (+{stats.producer_state_bytes_read} for producer state), "
            f"expected the active segments' tails, {layout.active_tail_bytes}"
        )


def _files(top: str) -> dict[str, tuple[int, bytes]]:
    out = {}
    for dirpath, _dirs, names in os.walk(top):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, top)] = (os.fstat(f.fileno()).st_size, f.read(4096))
    return out


class _CountingMmap(mmap.mmap):
    counts: collections.Counter = collections.Counter()

    def __new__(cls, *args, **kwargs):
        cls.counts["mmap"] += 1
        return super().__new__(cls, *args, **kwargs)


@contextlib.contextmanager
def counting_calls():
    """Count the calls of every ``COUNTED`` os function and of ``mmap.mmap`` while inside."""
    counts: collections.Counter = collections.Counter()
    saved = {name: getattr(os, name) for name in COUNTED}

    def counted(name, fn):
        def call(*args, **kwargs):
            counts[name] += 1
            return fn(*args, **kwargs)

        return call

    real_mmap = mmap.mmap
    _CountingMmap.counts = counts
    try:
        for name, fn in saved.items():
            setattr(os, name, counted(name, fn))
        mmap.mmap = _CountingMmap
        yield counts
    finally:
        mmap.mmap = real_mmap
        for name, fn in saved.items():
            setattr(os, name, fn)


def count_calls(layout: Layout) -> dict[str, float]:
    """File-system calls per segment of one load (untimed): total, stats, opens, listings."""
    with counting_calls() as counts:
        manager, storage, loads = load(layout)
    release(manager, storage)
    reset(layout)
    counts["fstat"] += counts["mmap"]  # CPython's mmap fstats the file first
    n = sum(layout.segments)
    return {
        "calls_per_segment": sum(counts.values()) / n,
        "stats_per_segment": sum(counts[name] for name in STATS) / n,
        "opens_per_segment": counts["open"] / n,
        "listings": counts["listdir"] + counts["scandir"],
        "by_call": dict(sorted(counts.items())),
    }


def run(partitions: int = 10, segments: int = 10_000, repeat: int = 5, distinct: bool = False) -> dict[str, Any]:
    work = tempfile.mkdtemp(prefix="klc-clean-start-")
    try:
        layout = build(work, partitions, segments, distinct)
        before = _files(layout.data_dir)
        manager, storage, loads = load(layout)  # warm-up, and the checks
        check(layout, storage, loads)
        release(manager, storage)
        reset(layout)
        after = _files(layout.data_dir)
        if after != before:
            changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            raise RuntimeError(f"the reset does not restore the dir: {changed[:5]}")
        if floor(layout) != segments:
            raise RuntimeError("the floor did not open every .log")
        calls = count_calls(layout)
        runs: dict[str, list[float]] = {"load": [], "floor": []}
        for _ in range(repeat):  # interleaved, best of N
            gc.collect()
            gc.disable()
            try:
                t0 = time.perf_counter()
                manager, storage, loads = load(layout)
                runs["load"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                floor(layout)
                runs["floor"].append(time.perf_counter() - t0)
            finally:
                gc.enable()
            release(manager, storage)
            del manager, storage, loads
            reset(layout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    best = {k: min(v) for k, v in runs.items()}
    return {
        "partitions": partitions,
        "segments": segments,
        "distinct_logs": distinct,
        "load_s": best["load"],
        "load_median_s": statistics.median(runs["load"]),
        "floor_s": best["floor"],
        "floor_median_s": statistics.median(runs["floor"]),
        "load_over_floor": best["load"] / best["floor"],
        "load_us_per_segment": best["load"] / segments * 1e6,
        **calls,
        "rounds": repeat,
    }


def render(r: dict[str, Any]) -> list[str]:
    calls = ", ".join(f"{name} {n / r['segments']:.2f}" for name, n in r["by_call"].items())
    return [
        f"clean start: {r['partitions']} partitions, {r['segments']} segments, clean-shutdown marker present"
        + ("" if r["distinct_logs"] else " (rolled segments' files hard-linked)"),
        f"  load (LogManager.startup) / floor             {r['load_over_floor']:>8.2f}x  "
        f"(load {r['load_s'] * 1e3:.1f} ms, {r['load_us_per_segment']:.1f} us a segment; "
        f"floor {r['floor_s'] * 1e3:.1f} ms: list the dirs, open and close every .log)",
        f"  file-system calls per segment                 {r['calls_per_segment']:>8.2f}   "
        f"(stat {r['stats_per_segment']:.2f}, open {r['opens_per_segment']:.2f}; "
        f"{r['listings']} listings in all)",
        f"  per segment, by call: {calls}",
    ]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.clean_start", description=__doc__.split("\n\n")[0])
    p.add_argument("--partitions", type=int, default=10, help="partition dirs (10)")
    p.add_argument("--segments", type=int, default=10_000, help="segments in all, spread over the partitions (10000)")
    p.add_argument("--repeat", type=int, default=5, help="timed loads (and floors), interleaved; the best is used (5)")
    p.add_argument(
        "--distinct-logs", action="store_true",
        help="every rolled segment's .log a file of its own (default: hard links to one; see build())",
    )  # fmt: skip
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.partitions < 1 or args.segments < args.partitions or args.repeat < 1:
        p.error("--partitions and --repeat must be >= 1, --segments >= --partitions")
    out = run(args.partitions, args.segments, args.repeat, args.distinct_logs)
    print(json.dumps(out, sort_keys=True) if args.json else "\n".join(render(out)))


if __name__ == "__main__":
    main()
