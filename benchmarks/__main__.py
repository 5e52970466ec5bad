"""``python -m benchmarks``: build the segments, run every benchmark, print the ratios.

Progress goes to stderr; stdout carries either the table or (``--json``) one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

import crc32c

from benchmarks import clean_start, mmap_scan, model_vs_impl, recovery, scan, stateful, unclean
from benchmarks.segments import build_segment
from benchmarks.timing import pin_allocator

MIB = 1024 * 1024
SCHEMA = 1

# label -> (target batch bytes, records per batch)
SHAPES = {"16k": (16 * 1024, 16), "1k": (1024, 4)}
SHAPE_NAMES = {"16k": "16 KiB batches", "1k": "1 KiB batches"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="impl scan figures as ratios measured within one run (nothing here is a test).",
    )
    p.add_argument("--size-mib", type=float, default=64, help="segment size for the impl/crc/mmap figures (64)")
    p.add_argument("--model-size-mib", type=float, default=8, help="prefix scanned for model vs impl (8)")
    p.add_argument("--repeat", type=int, default=5, help="least timed runs per contender; the best is used (5)")
    p.add_argument("--seed", type=int, default=0, help="seed for the segment contents (0)")
    p.add_argument("--unclean-partitions", type=int, default=8, help="partitions in the unclean-restart dir (8)")
    p.add_argument("--unclean-segments", type=int, default=4, help="segments per partition there (4, >= 2)")
    p.add_argument("--unclean-segment-mib", type=float, default=1, help="segment size there (1)")
    p.add_argument("--threads", type=int, default=4, help="num.recovery.threads.per.data.dir to compare with 1 (4)")
    p.add_argument(
        "--unclean-cold", action="store_true", help="drop the page cache before each unclean-restart load (root only)"
    )
    p.add_argument("--clean-partitions", type=int, default=10, help="partitions in the clean-start dir (10)")
    p.add_argument("--clean-segments", type=int, default=10_000, help="segments there, in all (10000)")
    p.add_argument(
        "--stateful-examples", type=int, default=20,
        help="examples per state machine per round in the stateful-throughput figure (20; 0 skips it)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument(
        "--no-pin-malloc", action="store_true",
        help="leave glibc's heap trim threshold dynamic (model figures then depend on allocation history)",
    )  # fmt: skip
    return p


def _environment() -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "crc32c": importlib.metadata.version("crc32c"),
        "crc32c_hardware": bool(getattr(crc32c, "hardware_based", False)),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "commit": commit,
    }


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    pinned = False if args.no_pin_malloc else pin_allocator()
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "environment": {**_environment(), "malloc_trim_pinned": pinned},
        "parameters": {
            "size_mib": args.size_mib,
            "model_size_mib": args.model_size_mib,
            "repeat": args.repeat,
            "seed": args.seed,
            "unclean_partitions": args.unclean_partitions,
            "unclean_segments": args.unclean_segments,
            "unclean_segment_mib": args.unclean_segment_mib,
            "threads": args.threads,
            "unclean_cold": args.unclean_cold,
            "clean_partitions": args.clean_partitions,
            "clean_segments": args.clean_segments,
            "stateful_examples": args.stateful_examples,
            "statistic": "best",
        },
        "segments": {},
        "scan": {},
        "model_vs_impl": {},
        "mmap": {},
        "recovery": {},
    }
    for label, (batch_bytes, records) in SHAPES.items():
        _log(f"building {args.size_mib:g} MiB segment of {SHAPE_NAMES[label]} with model.records.build_batch_v2 ...")
        seg = build_segment(label, int(args.size_mib * MIB), batch_bytes, records, seed=args.seed)
        out["segments"][label] = {
            "bytes": len(seg.data),
            "batches": seg.batches,
            "records_per_batch": records,
            "mean_batch_bytes": seg.mean_batch_bytes,
        }
        _log(f"  impl vs crc32c floor ({seg.batches} batches) ...")
        out["scan"][label] = scan.run(seg, args.repeat)
        _log("  model vs impl ...")
        out["model_vs_impl"][label] = model_vs_impl.run(seg, args.repeat, int(args.model_size_mib * MIB))
        _log("  impl over mmap vs bytes ...")
        out["mmap"][label] = mmap_scan.run(seg, args.repeat)
        _log("  LogSegment.recover() of the segment file vs one crc32c call ...")
        out["recovery"][label] = recovery.run(seg, args.repeat)
        del seg
    _log(
        f"unclean restart: {args.unclean_partitions} partitions x {args.unclean_segments} segments of "
        f"{args.unclean_segment_mib:g} MiB, loads with 1 and {args.threads} threads ..."
    )
    out["unclean_restart"] = unclean.run(
        args.unclean_partitions,
        args.unclean_segments,
        int(args.unclean_segment_mib * MIB),
        args.repeat,
        args.threads,
        args.seed,
        args.unclean_cold,
    )
    _log(f"clean start: {args.clean_partitions} partitions, {args.clean_segments} segments ...")
    out["clean_start"] = clean_start.run(args.clean_partitions, args.clean_segments, args.repeat)
    if args.stateful_examples:
        _log(f"stateful throughput: the toy, log and crash machines, {args.stateful_examples} examples each ...")
        out["stateful"] = stateful.run(list(stateful.CONTENDERS), args.stateful_examples, min(args.repeat, 3))
    out["elapsed_s"] = time.perf_counter() - started
    return out


def render(r: dict[str, Any]) -> str:
    env, par = r["environment"], r["parameters"]
    labels = list(r["segments"])
    hw = "hardware" if env["crc32c_hardware"] else "SOFTWARE fallback"
    lines = [
        f"kafka-log-conformance benchmarks ({env['commit'] or 'no git commit'})",
        f"{env['implementation']} {env['python']}, crc32c {env['crc32c']} ({hw}), {env['platform']}, {env['cpus']} CPUs",
        f"best of >= {par['repeat']} interleaved runs (more for short ones); MB = 10^6 bytes; ratios are time over time within this run"
        + ("" if env["malloc_trim_pinned"] else "; malloc trim NOT pinned"),
        "",
    ]
    rows: list[tuple[str, ...]] = [("", *(SHAPE_NAMES[x] for x in labels))]

    def row(name: str, fmt: str, get) -> None:
        rows.append((name, *(fmt.format(get(x)) for x in labels)))

    seg, sc, mv, mm = r["segments"], r["scan"], r["model_vs_impl"], r["mmap"]
    row("segment", "{}", lambda x: f"{seg[x]['bytes'] / MIB:.1f} MiB, {seg[x]['batches']} batches")
    row("mean batch", "{:.0f} B", lambda x: seg[x]["mean_batch_bytes"])
    row("impl scan", "{:.0f} MB/s", lambda x: sc[x]["impl_mb_s"])
    row("crc32c floor (per-batch slices)", "{:.0f} MB/s", lambda x: sc[x]["crc_floor_mb_s"])
    row("crc32c one call, whole segment", "{:.0f} MB/s", lambda x: sc[x]["crc_one_call_mb_s"])
    row("impl / crc32c floor", "{:.2f}x", lambda x: sc[x]["impl_over_crc"])
    row("impl overhead beyond crc, per batch", "{:.0f} ns", lambda x: sc[x]["impl_overhead_ns_per_batch"])
    row("model-vs-impl prefix", "{}", lambda x: f"{mv[x]['bytes'] / MIB:.1f} MiB, {mv[x]['batches']} batches")
    row("model iterate_file", "{:.0f} MB/s", lambda x: mv[x]["model_mb_s"])
    row("impl scan (same prefix)", "{:.0f} MB/s", lambda x: mv[x]["impl_mb_s"])
    row("model / impl (impl is N x faster)", "{:.1f}x", lambda x: mv[x]["model_over_impl"])
    if all(mv[x]["model_minor_faults_per_mb"] is not None for x in labels):
        row("model minor page faults", "{:.0f} /MB", lambda x: mv[x]["model_minor_faults_per_mb"])
    row("impl over mmap", "{:.0f} MB/s", lambda x: mm[x]["mmap_mb_s"])
    row("impl mmap / bytes", "{:.2f}x", lambda x: mm[x]["mmap_over_bytes"])
    if r.get("recovery"):
        rc = r["recovery"]
        row("recovery (LogSegment.recover)", "{:.0f} MB/s", lambda x: rc[x]["recovery_mb_s"])
        row("recovery / crc32c one call", "{:.2f}", lambda x: rc[x]["recovery_over_crc_one_call"])
        row("recovery / crc32c floor", "{:.2f}", lambda x: rc[x]["recovery_over_crc_floor"])
        row("recovery per batch", "{:.0f} ns", lambda x: rc[x]["recovery_ns_per_batch"])
    widths = [max(len(cells[i]) for cells in rows) for i in range(len(rows[0]))]
    for cells in rows:
        lines.append(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        )
    if "unclean_restart" in r:
        lines += ["", *unclean.render(r["unclean_restart"])]
    if "clean_start" in r:
        lines += ["", *clean_start.render(r["clean_start"])]
    if "stateful" in r:
        lines += ["", *stateful.render(r["stateful"])]
    lines += ["", f"total {r['elapsed_s']:.1f} s (segment building included)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.repeat < 1 or args.size_mib <= 0 or args.model_size_mib <= 0:
        _parser().error("--repeat, --size-mib and --model-size-mib must be positive")
    if args.stateful_examples < 0:
        _parser().error("--stateful-examples must be >= 0")
    if args.unclean_partitions < 1 or args.unclean_segments < 2 or args.unclean_segment_mib <= 0 or args.threads < 1:
        _parser().error(
            "--unclean-partitions and --threads must be >= 1, --unclean-segments >= 2, --unclean-segment-mib > 0"
        )
    if args.clean_partitions < 1 or args.clean_segments < args.clean_partitions:
        _parser().error("--clean-partitions must be >= 1, --clean-segments >= --clean-partitions")
    if args.unclean_cold and (why := unclean.drop_page_cache()):
        _parser().error(f"--unclean-cold: {why}")
    result = run(args)
    print(json.dumps(result, sort_keys=True) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
