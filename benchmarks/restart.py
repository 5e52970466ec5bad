"""Clean restart of a data dir with many segments: impl's load (lazy indexes, KIP-263) against eager
loading of the same dir (every index materialised and sanity-checked at load, as Kafka ≤ 2.2 did),
as a ratio within one run, plus the log and index bytes each reads at load.

The dir is what a graceful shutdown leaves (spec §6.3): one partition, ``--segments`` segments of one
10-record batch each, trimmed indexes, both checkpoints and the clean-shutdown marker.  Log bytes read
at load can only be the active segment's tail after its last offset-index entry — Kafka's
``readNextOffset`` (spec §4.5 rule 3) — and the target is that and nothing more.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile
import time

from impl.config import LogConfig
from impl.log_manager import LogManager
from impl.storage import OsStorage
from model.records import build_batch_v2

T0 = 1_700_000_000_000


def build_dir(root: str, segments: int) -> int:
    """Write the dir; returns the total bytes of .log files."""
    part = os.path.join(root, "d0", "t-0")
    os.makedirs(part)
    total = 0
    for i in range(segments):
        base = i * 10
        batch = build_batch_v2(base, [(T0 + base + j, b"k%d" % j, b"v" * 40) for j in range(10)])
        prefix = os.path.join(part, f"{base:020d}")
        with open(prefix + ".log", "wb") as f:
            f.write(batch)
        open(prefix + ".index", "wb").close()  # one batch: never indexed (§4.2)
        with open(prefix + ".timeindex", "wb") as f:
            f.write(struct.pack(">qi", T0 + base + 9, 9))  # the final entry written at roll/close (§4.4)
        total += len(batch)
    leo = segments * 10
    d0 = os.path.join(root, "d0")
    with open(os.path.join(part, "leader-epoch-checkpoint"), "w") as f:
        f.write("0\n0\n")
    with open(os.path.join(d0, "recovery-point-offset-checkpoint"), "w") as f:
        f.write(f"0\n1\nt 0 {leo}\n")
    with open(os.path.join(d0, "log-start-offset-checkpoint"), "w") as f:
        f.write("0\n0\n")
    with open(os.path.join(d0, ".kafka_cleanshutdown"), "w") as f:
        f.write('{"version":0,"brokerEpoch":-1}')
    return total


def load_once(root: str, eager: bool) -> dict:
    copy = root + (".eager" if eager else ".lazy")
    shutil.copytree(root, copy)
    storage = OsStorage()
    manager = LogManager(storage, [os.path.join(copy, "d0")], LogConfig(segment_index_bytes=4096), lambda: T0)
    t0 = time.perf_counter()
    loads = manager.startup()
    if eager:  # Kafka ≤ 2.2: every index constructed and sanity-checked at load
        for load in loads:
            for segment in load.log.segments[:-1]:  # (the active one was resized to full size by the load)
                for lazy in (segment.offset_index, segment.time_index):
                    index = lazy.get()
                    index.kafka_sanity_check()
                    lazy.close_handler()  # (our index keeps its descriptor; Kafka closes it after mapping)
    seconds = time.perf_counter() - t0
    assert all(load.error is None for load in loads) and loads[0].log.log_end_offset > 0
    stats = storage.stats
    for log in manager.logs.values():
        log.close_handlers()
    shutil.rmtree(copy)
    return {
        "seconds": seconds,
        "log_bytes_read": stats.log_bytes_read,
        "index_bytes_read": stats.index_bytes_read,
        "opens": stats.opens,
    }


def run(segments: int, repeats: int = 3) -> dict:
    root = tempfile.mkdtemp(prefix="klc-restart-")
    try:
        log_bytes = build_dir(os.path.join(root, "data"), segments)
        data = os.path.join(root, "data")
        lazy, eager = [], []
        for _ in range(repeats):  # interleaved, best of N
            lazy.append(load_once(data, eager=False))
            eager.append(load_once(data, eager=True))
        best_lazy = min(lazy, key=lambda r: r["seconds"])
        best_eager = min(eager, key=lambda r: r["seconds"])
        return {
            "segments": segments,
            "log_bytes_in_dir": log_bytes,
            "lazy": best_lazy,
            "eager": best_eager,
            "eager_over_lazy": best_eager["seconds"] / best_lazy["seconds"],
            "active_tail_bytes": log_bytes // segments,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.restart", description=__doc__)
    p.add_argument("--segments", type=int, default=10_000)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    out = run(args.segments)
    if args.json:
        json.dump(out, sys.stdout)
        print()
        return
    lazy, eager = out["lazy"], out["eager"]
    print(f"clean restart, {out['segments']} segments ({out['log_bytes_in_dir']} log bytes in the dir), best of 3:")
    print(
        f"  impl (lazy indexes)     {lazy['seconds'] * 1e3:8.1f} ms  log bytes read {lazy['log_bytes_read']:>8}  index bytes read {lazy['index_bytes_read']:>8}"
    )
    print(
        f"  eager + sanity checks   {eager['seconds'] * 1e3:8.1f} ms  log bytes read {eager['log_bytes_read']:>8}  index bytes read {eager['index_bytes_read']:>8}"
    )
    print(
        f"  eager / lazy: {out['eager_over_lazy']:.2f}x; the log bytes read are the active segment's tail after its last index entry ({out['active_tail_bytes']} bytes)"
    )


if __name__ == "__main__":
    main()
