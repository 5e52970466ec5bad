"""Figures 1 and 2: impl's recovery scan over the CRC-32C floor.

Recovery must checksum every byte of every batch, so the least any scan can cost is ``crc32c`` over
each batch's CRC range.  The floor here is exactly that: a Python loop over the precomputed
``[position + 21, position + size)`` ranges, calling ``crc32c.crc32c`` on a memoryview slice of each
— the same calls impl makes, minus reading headers, comparing and yielding.  ``impl_over_crc`` is
impl's time over the floor's (1.0 would be a scan that costs nothing beyond its checksums); the
difference, divided by the batch count, is impl's own overhead per batch.

For orientation, ``crc_one_call`` is a single ``crc32c`` call over the whole segment: raw checksum
throughput with no per-call cost at all.
"""

from __future__ import annotations

from typing import Any

from crc32c import crc32c

from benchmarks.segments import Segment
from benchmarks.timing import mb_per_s, measure
from impl.file_records import END, BatchScan


def crc_floor(buf, ranges: list[tuple[int, int]]) -> int:
    """``crc32c`` over every range of ``buf``, through one memoryview, as impl slices it."""
    n = 0
    with memoryview(buf) as mv:
        for a, b in ranges:
            crc32c(mv[a:b])
            n += 1
    return n


def check_scan(scan: BatchScan, segment: Segment) -> None:
    """A scan that stopped early would make every ratio meaningless: refuse it."""
    if scan.stop != END or scan.batches != segment.batches or scan.valid_bytes != len(segment.data):
        raise RuntimeError(
            f"impl scan of the {segment.label} segment stopped early: stop={scan.stop} batches={scan.batches}"
            f"/{segment.batches} valid_bytes={scan.valid_bytes}/{len(segment.data)} error={scan.error}"
        )


def run(segment: Segment, repeat: int) -> dict[str, Any]:
    data = segment.data
    ranges = segment.crc_ranges()

    def check(name: str, result: Any) -> None:
        if name == "impl":
            check_scan(result, segment)
        elif name == "crc_floor" and result != segment.batches:
            raise RuntimeError("crc floor did not visit every batch")

    timings = measure(
        {
            "impl": lambda: BatchScan(data).run(),
            "crc_floor": lambda: crc_floor(data, ranges),
            "crc_one_call": lambda: crc32c(data),
        },
        repeat,
        check,
    )
    impl, floor, whole = timings["impl"].best, timings["crc_floor"].best, timings["crc_one_call"].best
    nbytes = len(data)
    return {
        "rounds": len(timings["impl"].runs),
        "bytes": nbytes,
        "batches": segment.batches,
        "impl_s": impl,
        "crc_floor_s": floor,
        "crc_one_call_s": whole,
        "impl_median_s": timings["impl"].median,
        "crc_floor_median_s": timings["crc_floor"].median,
        "impl_mb_s": mb_per_s(nbytes, impl),
        "crc_floor_mb_s": mb_per_s(nbytes, floor),
        "crc_one_call_mb_s": mb_per_s(nbytes, whole),
        "impl_over_crc": impl / floor,
        "impl_overhead_ns_per_batch": (impl - floor) / segment.batches * 1e9,
    }


if __name__ == "__main__":  # a part of ``python -m benchmarks``, not a benchmark of its own
    import sys

    print(f"benchmarks.scan: {__doc__.strip().splitlines()[0]}\nIts figures are measured by: python -m benchmarks [--help]")
    sys.exit(0 if sys.argv[1:] in ([], ["--help"], ["-h"]) else 2)
