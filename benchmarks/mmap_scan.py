"""impl over an ``mmap`` of the segment file versus impl over the same bytes in memory.

The segment is written to a temporary file and mapped read-only; the pages are in the page cache
(just written, plus the untimed warm-up scan), so this measures the cost of scanning through a
mapping — buffer export, page-table walks, minor faults — not disk reads.  ``mmap_over_bytes`` near
1.0 means recovery can scan a mapped segment with no penalty.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from typing import Any

from benchmarks.scan import check_scan
from benchmarks.segments import Segment
from benchmarks.timing import mb_per_s, measure
from impl.file_records import BatchScan


def run(segment: Segment, repeat: int) -> dict[str, Any]:
    data = segment.data
    with tempfile.TemporaryDirectory(prefix="klc-bench-") as tmp:
        path = os.path.join(tmp, "00000000000000000000.log")
        with open(path, "wb") as f:
            f.write(data)
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            timings = measure(
                {"mmap": lambda: BatchScan(mm).run(), "bytes": lambda: BatchScan(data).run()},
                repeat,
                lambda _, scan: check_scan(scan, segment),
            )
    on_map, on_bytes = timings["mmap"].best, timings["bytes"].best
    return {
        "rounds": len(timings["mmap"].runs),
        "bytes": len(data),
        "mmap_s": on_map,
        "bytes_s": on_bytes,
        "mmap_mb_s": mb_per_s(len(data), on_map),
        "bytes_mb_s": mb_per_s(len(data), on_bytes),
        "mmap_over_bytes": on_map / on_bytes,
    }


if __name__ == "__main__":  # a part of ``python -m benchmarks``, not a benchmark of its own
    import sys

    print(f"benchmarks.mmap_scan: {__doc__.strip().splitlines()[0]}\nIts figures are measured by: python -m benchmarks [--help]")
    sys.exit(0 if sys.argv[1:] in ([], ["--help"], ["-h"]) else 2)
