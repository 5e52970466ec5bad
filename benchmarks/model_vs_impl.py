"""Figure 3: how much faster impl scans than the executable model.

``model.file_records.iterate_file`` (validating, as recovery does) against
``impl.file_records.BatchScan(...).run()`` on the same bytes: a prefix of the segment cut at a batch
boundary (the model copies every batch, twice, and builds an ``attrs`` object per batch, so a few MiB
is enough).  ``model_over_impl`` is model time over impl time; throughputs are per MB so the figure
does not depend on the prefix size.
"""

from __future__ import annotations

from typing import Any

from benchmarks.scan import check_scan
from benchmarks.segments import Segment
from benchmarks.timing import mb_per_s, measure
from impl.file_records import BatchScan
from model.file_records import END, iterate_file


def run(segment: Segment, repeat: int, prefix_bytes: int) -> dict[str, Any]:
    part = segment.prefix(prefix_bytes)
    data = part.data

    def check(name: str, result: Any) -> None:
        if name == "impl":
            check_scan(result, part)
        elif result.stop != END or len(result.batches) != part.batches:
            raise RuntimeError(
                f"model iteration stopped early: stop={result.stop} batches={len(result.batches)}/{part.batches}"
            )

    timings = measure({"model": lambda: iterate_file(data), "impl": lambda: BatchScan(data).run()}, repeat, check)
    model, impl = timings["model"].best, timings["impl"].best
    faults = timings["model"].minor_faults
    return {
        "rounds": len(timings["model"].runs),
        "bytes": len(data),
        "batches": part.batches,
        "model_s": model,
        "impl_s": impl,
        "model_median_s": timings["model"].median,
        "impl_median_s": timings["impl"].median,
        "model_mb_s": mb_per_s(len(data), model),
        "impl_mb_s": mb_per_s(len(data), impl),
        "model_us_per_batch": model / part.batches * 1e6,
        "impl_us_per_batch": impl / part.batches * 1e6,
        "model_minor_faults_per_mb": None if faults is None else faults / (len(data) / 1e6),
        "model_over_impl": model / impl,
    }


if __name__ == "__main__":  # a part of ``python -m benchmarks``, not a benchmark of its own
    import sys

    print(f"benchmarks.model_vs_impl: {__doc__.strip().splitlines()[0]}\nIts figures are measured by: python -m benchmarks [--help]")
    sys.exit(0 if sys.argv[1:] in ([], ["--help"], ["-h"]) else 2)
