"""Unclean restart: what impl's load reads and costs on a data dir an unclean shutdown left.

The dir (spec §5.4, §5.6, §6.2): ``--partitions`` partitions of ``--segments`` segments each, v2
batches of ~16 KiB (Kafka's default ``batch.size``) written by ``benchmarks.segments``, trimmed
indexes on the rolled segments and a preallocated, zero-padded (sparse) pair on the active one, no
clean-shutdown marker, and a recovery-point checkpoint whose offset lies inside the middle segment
of each partition.  Every second partition's active segment has a torn tail (half of its last batch),
and in every third one the crash came before the active segment's ``.index`` was created
(KAFKA-13603: expected above the recovery point) — the case in which Kafka recovers that segment
twice in one load (§5.3, then §5.6) and impl once.

Figures, each a ratio within one run:

* **log bytes read at load** (``storage.stats.log_bytes_read``, threads = 1) over the bytes at and
  after the recovery point (target 1.00).  Recovery validates whole segments, so impl — like Kafka —
  also reads the part of the recovery point's segment below it; the ratio over the bytes of the
  segments *from the one containing the recovery point on* shows what is left beyond that: the
  active segment's tail that ``readNextOffset`` reads (§4.5 rule 3).  Beside them, the model's
  count of what Kafka's own algorithm reads on the same image (``LoadOutcome.log_bytes_read``:
  the whole file per recovery, twice for a twice-recovered segment, plus the tail).
* **load / crc32c floor**: the whole load (``LogManager.startup``: listing, opening, recovery with
  index rebuilds, the tail read, checkpoint reads), end to end, over ``crc32c`` alone on every batch
  it must validate (per-batch calls, as ``benchmarks.scan``'s floor).
* **threads 1 / threads N**: the same load with ``num.recovery.threads.per.data.dir`` = 1 and N;
  > 1 is a speed-up.  It cannot exceed the CPU count (reported beside it).

Every load runs on a fresh copy of the dir (written from memory, outside the clock, page cache
warm); the contenders are interleaved and the best run is used, as everywhere here.  ``--cold``
(root only: it empties the whole machine's page cache) syncs and drops the page cache after writing
each copy, as after a real restart, so the load reads from the disk; the thread figure then also
shows how much of that I/O the worker threads overlap.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

import attrs
from crc32c import crc32c

from benchmarks.scan import crc_floor
from benchmarks.segments import build_segment
from impl.config import LogConfig
from impl.log_manager import LogManager
from impl.storage import OsStorage
from model.config import Config
from model.indexes import rebuild_from_log
from model.log_manager import load as model_load

MIB = 1024 * 1024
T0 = 1_700_000_000_000
INDEX_BYTES = 10 * MIB  # segment.index.bytes default: the active segment's preallocated index size
BATCH_BYTES, RECORDS_PER_BATCH = 16 * 1024, 16


@attrs.frozen
class Layout:
    """The built dir, in memory: ``files`` maps a path relative to the root to (bytes, file size);
    a size beyond the bytes is a zero (sparse) tail, as a preallocated index has."""

    files: dict[str, tuple[bytes, int]]
    directories: tuple[str, ...]
    partitions: int
    log_bytes: int  # every .log file
    after_rp_bytes: int  # from the recovery point's batch on
    from_rp_segment_bytes: int  # the segments from the one containing the recovery point on
    crc_ranges: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # .log path → the CRC ranges of its valid batches


def build(partitions: int = 8, segments: int = 4, segment_bytes: int = MIB, seed: int = 0) -> Layout:
    """The data dir ``d0`` an unclean shutdown leaves (see the module docstring)."""
    if segments < 2:
        raise ValueError("need at least 2 segments per partition (the recovery point lies in the middle one)")
    files: dict[str, tuple[bytes, int]] = {}
    directories = ["d0"]
    log_bytes = after_rp = from_rp_segment = 0
    ranges = []
    checkpoint = []
    for p in range(partitions):
        stream = build_segment(f"p{p}", segments * segment_bytes, BATCH_BYTES, RECORDS_PER_BATCH, seed=seed * 1000 + p)
        n = stream.batches
        if n < segments:
            raise ValueError(f"segments of {segment_bytes} bytes are too small for {BATCH_BYTES}-byte batches")
        cuts = [n * i // segments for i in range(segments)] + [n]  # batch index where each segment starts
        middle = segments // 2
        rp_batch = (cuts[middle] + cuts[middle + 1]) // 2  # the recovery point: a batch inside the middle segment
        part = f"d0/t-{p}"
        directories.append(part)
        torn = p % 2 == 1
        index_missing = p % 3 == 2
        for s in range(segments):
            first, last = cuts[s], cuts[s + 1]
            start, end = stream.positions[first], stream.positions[last - 1] + stream.sizes[last - 1]
            data = stream.data[start:end]
            base = first * RECORDS_PER_BATCH
            active = s == segments - 1
            offsets, times, _ = rebuild_from_log(data, base, 4096, INDEX_BYTES)
            if active and torn:
                data = data[: len(data) - stream.sizes[last - 1] // 2]
            prefix = f"{part}/{base:020d}"
            files[prefix + ".log"] = (data, len(data))
            if not (active and index_missing):
                index = offsets.file_bytes()
                files[prefix + ".index"] = (index, INDEX_BYTES if active else len(index))
            stamps = times.file_bytes()
            files[prefix + ".timeindex"] = (stamps, INDEX_BYTES - INDEX_BYTES % 12 if active else len(stamps))
            log_bytes += len(data)
            if s >= middle:
                from_rp_segment += len(data)
                after_rp += len(data) - (stream.positions[rp_batch] - start if s == middle else 0)
                valid = last - 1 if active and torn else last
                ranges.append(
                    (prefix + ".log", tuple((stream.positions[b] - start + 21, stream.positions[b] - start + stream.sizes[b]) for b in range(first, valid)))
                )  # fmt: skip
        files[f"{part}/leader-epoch-checkpoint"] = (b"0\n1\n0 0\n", 8)
        checkpoint.append(f"t {p} {rp_batch * RECORDS_PER_BATCH}")
    rp_text = f"0\n{len(checkpoint)}\n" + "".join(line + "\n" for line in checkpoint)
    files["d0/recovery-point-offset-checkpoint"] = (rp_text.encode(), len(rp_text))
    files["d0/log-start-offset-checkpoint"] = (b"0\n0\n", 4)
    return Layout(files, tuple(directories), partitions, log_bytes, after_rp, from_rp_segment, tuple(ranges))


def write(layout: Layout, root: str) -> None:
    """The dir on disk under ``root`` (zero tails as holes)."""
    for d in layout.directories:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for rel, (data, size) in layout.files.items():
        fd = os.open(os.path.join(root, rel), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            if size > len(data):
                os.ftruncate(fd, size)
        finally:
            os.close(fd)


def summary(loads) -> list:
    """What a load decided, per partition, comparable across runs (paths relative to the dir)."""
    out = []
    for load in loads:
        log, r = load.log, load.report
        out.append(
            (
                load.name,
                load.error,
                None if log is None else (log.log_start_offset, log.log_end_offset, log.recovery_point,
                                          [(s.base_offset, s.size) for s in log.segments]),
                None if r is None else (r.recovered_segments, r.scanned_segments, r.truncated_bytes, r.removed_segments),
            )
        )  # fmt: skip
    return out


def drop_page_cache() -> str | None:
    """Sync, then ask Linux to drop its clean page cache; None if done, else why not."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        return f"cannot drop the page cache ({e.strerror}; needs root on Linux)"
    return None


def timed_startup(root: str, threads: int, clock) -> tuple[float, list, LogManager, OsStorage]:
    """(seconds, loads, manager, storage) of impl's LogManager starting on ``root``/d0, timed with
    the garbage collector off; the caller closes the logs."""
    storage = OsStorage()
    config = LogConfig(num_recovery_threads_per_data_dir=threads)
    manager = LogManager(storage, [os.path.join(root, "d0")], config, clock, lambda _p, _b: 0)
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        loads = manager.startup()
        seconds = time.perf_counter() - t0
    finally:
        gc.enable()
    return seconds, loads, manager, storage


def load_once(layout: Layout, work: str, threads: int, cold: bool = False) -> dict[str, Any]:
    """Write a fresh copy (``cold``: then drop the page cache), load it (timed), close, delete."""
    root = tempfile.mkdtemp(prefix=f"t{threads}-", dir=work)
    write(layout, root)
    if cold and (why := drop_page_cache()):
        raise RuntimeError(why)
    seconds, loads, manager, storage = timed_startup(root, threads, lambda: T0)
    result = {"seconds": seconds, "log_bytes_read": storage.stats.log_bytes_read, "loads": summary(loads)}
    for log in manager.logs.values():
        log.close_handlers()
    storage.close_all()
    shutil.rmtree(root)
    return result


def model_bytes_read(layout: Layout) -> tuple[int, list[list[int]]]:
    """What Kafka's algorithm reads of .log files loading the same image (the model's count), and
    its recoveries per partition."""
    image = {f"/bench/{rel}": data + bytes(size - len(data)) if rel.endswith(".log") else data[:size]
             for rel, (data, size) in layout.files.items() if not rel.endswith((".index", ".timeindex"))}  # fmt: skip
    for rel, (data, size) in layout.files.items():
        if rel.endswith((".index", ".timeindex")):
            image[f"/bench/{rel}"] = data + bytes(size - len(data))
    manager = model_load(
        image, ["/bench/d0"], Config.of({}), lambda: T0, lambda _p, _b: 0, {f"/bench/{d}" for d in layout.directories}
    )
    if any(o.error for o in manager.outcomes):
        raise RuntimeError(f"the model failed to load the dir: {[o.error for o in manager.outcomes if o.error]}")
    return sum(o.log_bytes_read for o in manager.outcomes), [o.recovered for o in manager.outcomes]


def run(
    partitions: int = 8,
    segments: int = 4,
    segment_bytes: int = MIB,
    repeat: int = 5,
    threads: int = 4,
    seed: int = 0,
    cold: bool = False,
) -> dict[str, Any]:
    layout = build(partitions, segments, segment_bytes, seed)
    kafka_read, kafka_recovered = model_bytes_read(layout)
    segments_data = {rel: layout.files[rel][0] for rel, _ in layout.crc_ranges}
    ranges = [(rel, list(r)) for rel, r in layout.crc_ranges]
    must_validate = sum(b - a + 21 for _, r in ranges for a, b in r)  # whole batches

    def floor() -> int:
        return sum(crc_floor(segments_data[rel], r) for rel, r in ranges)

    work = tempfile.mkdtemp(prefix="klc-unclean-")
    try:
        first = load_once(layout, work, 1)  # warm-up, and the checks
        parallel = load_once(layout, work, threads)
        if any(entry[1] for entry in first["loads"]):
            raise RuntimeError(f"a partition failed to load: {[e for e in first['loads'] if e[1]]}")
        if parallel["loads"] != first["loads"] or parallel["log_bytes_read"] != first["log_bytes_read"]:
            raise RuntimeError("the load with several threads differs from the load with one")
        if [entry[3][0] for entry in first["loads"]] != kafka_recovered:
            raise RuntimeError("impl's recoveries differ from the model's")
        runs: dict[str, list[float]] = {"t1": [], f"t{threads}": [], "crc_floor": []}
        for _ in range(repeat):  # interleaved, best of N
            runs["t1"].append(load_once(layout, work, 1, cold)["seconds"])
            runs[f"t{threads}"].append(load_once(layout, work, threads, cold)["seconds"])
            gc.collect()
            t0 = time.perf_counter()
            floor()
            runs["crc_floor"].append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    best = {k: min(v) for k, v in runs.items()}
    whole = b"".join(segments_data.values())
    t0 = time.perf_counter()
    crc32c(whole)
    one_call = time.perf_counter() - t0
    impl_read = first["log_bytes_read"]
    scanned = sum(len(entry[3][1]) for entry in first["loads"])
    recovered = sum(len(entry[3][0]) for entry in first["loads"])
    return {
        "partitions": partitions,
        "segments_per_partition": segments,
        "segment_bytes": segment_bytes,
        "log_bytes_in_dir": layout.log_bytes,
        "bytes_at_or_after_rp": layout.after_rp_bytes,
        "bytes_from_rp_segment": layout.from_rp_segment_bytes,
        "bytes_to_validate": must_validate,
        "impl_log_bytes_read": impl_read,
        "kafka_log_bytes_read": kafka_read,
        "segments_recovered_kafka": recovered,
        "segments_scanned_impl": scanned,
        "impl_over_after_rp": impl_read / layout.after_rp_bytes,
        "impl_over_from_rp_segment": impl_read / layout.from_rp_segment_bytes,
        "kafka_over_after_rp": kafka_read / layout.after_rp_bytes,
        "kafka_over_impl": kafka_read / impl_read,
        "load_s": best["t1"],
        "load_median_s": statistics.median(runs["t1"]),
        "crc_floor_s": best["crc_floor"],
        "crc_one_call_s": one_call,
        "load_over_crc_floor": best["t1"] / best["crc_floor"],
        "load_mb_s": impl_read / best["t1"] / 1e6,
        "threads": threads,
        "cpus": os.cpu_count(),
        f"load_t{threads}_s": best[f"t{threads}"],
        "threads_speedup": best["t1"] / best[f"t{threads}"],
        "rounds": repeat,
        "cold": cold,
    }


def render(r: dict[str, Any]) -> list[str]:
    n = r["threads"]
    return [
        f"unclean restart: {r['partitions']} partitions x {r['segments_per_partition']} segments of "
        f"{r['segment_bytes'] / MIB:g} MiB ({r['log_bytes_in_dir'] / MIB:.1f} MiB of logs), recovery point inside each middle segment"
        + (", page cache dropped before each load" if r.get("cold") else ", page cache warm"),
        f"  log bytes read at load, impl                  {r['impl_log_bytes_read']:>12}  ({r['segments_scanned_impl']} segment scans)",
        f"  log bytes read at load, Kafka (model's count) {r['kafka_log_bytes_read']:>12}  ({r['segments_recovered_kafka']} segment recoveries)",
        f"  bytes at and after the recovery point         {r['bytes_at_or_after_rp']:>12}",
        f"  bytes of the segments from the rp's one on    {r['bytes_from_rp_segment']:>12}",
        f"  impl read / bytes at+after rp                 {r['impl_over_after_rp']:>12.2f}x  (Kafka {r['kafka_over_after_rp']:.2f}x)",
        f"  impl read / segments from the rp's one on     {r['impl_over_from_rp_segment']:>12.2f}x",
        f"  Kafka read / impl read                        {r['kafka_over_impl']:>12.2f}x",
        f"  load (end to end) / crc32c floor              {r['load_over_crc_floor']:>12.2f}x  "
        f"(load {r['load_s'] * 1e3:.1f} ms, {r['load_mb_s']:.0f} MB/s read; floor {r['crc_floor_s'] * 1e3:.1f} ms)",
        f"  load threads 1 / threads {n}                    {r['threads_speedup']:>12.2f}x  "
        f"(threads {n}: {r[f'load_t{n}_s'] * 1e3:.1f} ms; {r['cpus']} CPUs)",
    ]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.unclean", description=__doc__.split("\n\n")[0])
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--segments", type=int, default=4, help="segments per partition (>= 2)")
    p.add_argument("--segment-mib", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cold", action="store_true", help="drop the page cache before each load (root only)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.partitions < 1 or args.segments < 2 or args.segment_mib <= 0 or args.threads < 1 or args.repeat < 1:
        p.error("--partitions, --threads and --repeat must be >= 1, --segments >= 2, --segment-mib > 0")
    if args.cold and (why := drop_page_cache()):
        p.error(f"--cold: {why}")
    out = run(
        args.partitions, args.segments, int(args.segment_mib * MIB), args.repeat, args.threads, args.seed, args.cold
    )
    if args.json:
        json.dump(out, sys.stdout, sort_keys=True)
        print()
    else:
        print("\n".join(render(out)))


if __name__ == "__main__":
    main()
