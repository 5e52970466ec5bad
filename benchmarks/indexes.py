"""Index benchmarks (issue #3): lookup cost against entry count, and lazy versus eager opening.

    python -m benchmarks.indexes [--segments N] [--lookups N] [--json]

Every figure is a ratio or a count measured within this run; nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import tempfile
import time

from impl.index import LazyIndex, OffsetIndex, TimeIndex
from impl.storage import OsStorage


def _best(fn, repeat: int = 5) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def lookup_cost(d: str, lookups: int) -> list[dict]:
    """ns per lookup and slots read per lookup for indexes of 2^6 … 2^20 entries."""
    rows = []
    for exp in (6, 10, 14, 17, 20):
        n = 1 << exp
        for cls, name in ((OffsetIndex, "offset"), (TimeIndex, "time")):
            if name == "time" and exp not in (10, 17):
                continue
            storage = OsStorage()
            index = cls(storage, f"{d}/{exp}.{name}", 0, cls.ENTRY_SIZE * (n + 2))
            for i in range(1, n + 1):
                if name == "offset":
                    index.append(3 * i, 100 * i)
                else:
                    index.maybe_append(3 * i, 3 * i)
            rng = random.Random(exp)
            targets = [rng.randrange(0, 3 * n + 5) for _ in range(lookups)]
            before = storage.stats.index_bytes_read
            lookup = index.lookup
            seconds = _best(lambda: [lookup(t) for t in targets])
            slots = (storage.stats.index_bytes_read - before) / index.ENTRY_SIZE / (lookups * 5)
            rows.append(
                {"index": name, "entries": n, "ns_per_lookup": seconds / lookups * 1e9, "slots_per_lookup": slots}
            )
            index.close_handler()
    for name in ("offset", "time"):
        group = [r for r in rows if r["index"] == name]
        first = group[0]
        for r in group:
            r["cost_ratio"] = r["ns_per_lookup"] / first["ns_per_lookup"]
            r["log_ratio"] = math.log2(r["entries"]) / math.log2(first["entries"])
    return rows


def lazy_vs_eager(d: str, segments: int) -> dict:
    """Open the indexes of ``segments`` segments lazily (KIP-263) and eagerly with Kafka ≤ 2.2's
    load-time sanity check; then first use after lazy opening."""
    writer = OsStorage()
    paths = []
    for s in range(segments):
        base = s * 1000
        o, t = f"{d}/{base:020d}.index", f"{d}/{base:020d}.timeindex"
        oi, ti = OffsetIndex(writer, o, base, 4096), TimeIndex(writer, t, base, 4096)
        for i in range(1, 51):
            oi.append(base + 10 * i, 500 * i)
            ti.maybe_append(10 * i, base + 10 * i)
        oi.close()
        ti.close()
        paths.append((base, o, t))

    def lazy():
        storage = OsStorage()
        t0 = time.perf_counter()
        handles = [
            (LazyIndex.offset_index(storage, o, b, 4096), LazyIndex.time_index(storage, t, b, 4096))
            for b, o, t in paths
        ]
        return time.perf_counter() - t0, storage, handles

    def eager():
        storage = OsStorage()
        t0 = time.perf_counter()
        for b, o, t in paths:
            for index in (OffsetIndex(storage, o, b, 4096), TimeIndex(storage, t, b, 4096)):
                index.kafka_sanity_check()
                index.close_handler()
        return time.perf_counter() - t0, storage

    lazy_s, lazy_storage, handles = min((lazy() for _ in range(3)), key=lambda r: r[0])
    eager_s, eager_storage = min((eager() for _ in range(3)), key=lambda r: r[0])
    before, opens_before = lazy_storage.stats.index_bytes_read, lazy_storage.stats.opens
    t0 = time.perf_counter()
    for (b, _, _), (lo, lt) in zip(paths, handles, strict=True):
        lo.get().lookup(b + 255)
        lt.get().lookup(255)
        lo.close_handler()  # (a broker keeps them open; here file descriptors are limited)
        lt.close_handler()
    first_use = time.perf_counter() - t0
    return {
        "segments": segments,
        "lazy_seconds": lazy_s,
        "eager_seconds": eager_s,
        "eager_over_lazy": eager_s / lazy_s,
        "lazy_bytes_read": before,
        "lazy_opens": opens_before,
        "eager_bytes_read": eager_storage.stats.index_bytes_read,
        "eager_opens": eager_storage.stats.opens,
        "eager_maps": eager_storage.stats.maps,
        "first_use_seconds": first_use,
        "first_use_bytes_read_per_segment": (lazy_storage.stats.index_bytes_read - before) / segments,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.indexes", description=__doc__)
    p.add_argument("--segments", type=int, default=10_000)
    p.add_argument("--lookups", type=int, default=20_000)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    d = tempfile.mkdtemp(prefix="klc-bench-idx-")
    try:
        lookups = lookup_cost(d, args.lookups)
        opening = lazy_vs_eager(d, args.segments)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if args.json:
        print(json.dumps({"lookups": lookups, "opening": opening}))
        return
    print("lookup cost against entry count (random targets; warm-section binary search, §3.4)")
    print(f"{'index':7} {'entries':>9} {'ns/lookup':>10} {'slots/lookup':>13} {'cost ratio':>11} {'log2 ratio':>11}")
    for r in lookups:
        print(
            f"{r['index']:7} {r['entries']:>9} {r['ns_per_lookup']:>10.0f} {r['slots_per_lookup']:>13.1f} "
            f"{r['cost_ratio']:>11.2f} {r['log_ratio']:>11.2f}"
        )
    o = opening
    print(f"\nopening the .index and .timeindex of {o['segments']} segments (50 entries each, trimmed)")
    print(
        f"  lazy (KIP-263)            {o['lazy_seconds'] * 1e3:9.1f} ms  bytes read {o['lazy_bytes_read']:>10}  opens {o['lazy_opens']}"
    )
    print(
        f"  eager + sanity check      {o['eager_seconds'] * 1e3:9.1f} ms  bytes read {o['eager_bytes_read']:>10}  "
        f"opens {o['eager_opens']}  maps {o['eager_maps']}"
    )
    print(f"  eager / lazy              {o['eager_over_lazy']:9.1f}x")
    print(
        f"  first use after lazy open {o['first_use_seconds'] * 1e3:9.1f} ms  "
        f"({o['first_use_bytes_read_per_segment']:.0f} bytes read per segment: recognition + one lookup per index)"
    )


if __name__ == "__main__":
    main()
