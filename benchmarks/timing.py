"""Interleaved best-of-N timing.

The contenders of one figure run round-robin (A, B, A, B, ...) rather than A×N then B×N, so a
frequency change or a noisy neighbour on a shared CI machine hits both sides of a ratio alike.  The
garbage collector is off while a contender runs (as ``timeit`` does), a full collection runs between
calls and each call's result is freed after the clock stops, so one side does not pay for the
other's garbage.  One untimed warm-up call per contender goes first (page faults of an mmap,
first-touch of fresh buffers); its result is handed to a check, so a contender that silently did
less work (a scan stopping early) cannot produce a flattering ratio.

A contender that needs a fresh state for every call (a recovery rewrites its index files) is a
:class:`Staged`: its ``prepare`` runs before the clock starts and its ``finish`` (checks, closing)
after it stops, for the warm-up and every timed call alike.

Minor page faults per call are counted too (where ``resource`` exists): a contender that allocates a
lot (the model copies every batch) pays for them, and how many it takes depends on the allocator.
:func:`pin_allocator` makes that the same in every run; see its docstring.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import attrs

try:
    import resource
except ImportError:  # not on Windows
    resource = None

_M_TRIM_THRESHOLD = -1  # glibc mallopt parameter
ROUND_BUDGET_S = 0.25  # more rounds for short contenders: until the slowest has run about this long
MAX_ROUNDS_FACTOR = 20  # ... but never more than 20 × repeat rounds


@attrs.frozen
class Timing:
    """Seconds per call of one contender: the best (the figure used for ratios) and the median."""

    best: float
    median: float
    runs: tuple[float, ...]  # one per round
    minor_faults: float | None = None  # per call, mean over the timed runs


@attrs.frozen
class Staged:
    """A contender in three steps, only the middle one timed: ``prepare()`` gives the state,
    ``run(state)`` is the measured call, ``finish(result)`` checks and releases its result."""

    prepare: Callable[[], Any]
    run: Callable[[Any], Any]
    finish: Callable[[Any], None] = lambda result: None


def _minflt() -> int | None:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else None


def pin_allocator() -> bool:
    """On glibc, fix the heap trim threshold (``mallopt(M_TRIM_THRESHOLD, 1 GiB)``); True if done.

    By default glibc moves that threshold up the first time it frees a large (≤ 32 MiB) mmapped
    block, so whether freeing the model's per-batch copies returns the heap top to the kernel — and
    the next run page-faults it back in — depends on what the process allocated before.  Measured:
    the model's 16 KiB-batch figure swung between ~1.4 and ~5 GB/s with the segment size alone.
    Pinning gives every run the recycled-heap case (no faults), the conservative one for "how much
    faster is impl".  Big buffers (segments) are still mmapped and unmapped as usual.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_TRIM_THRESHOLD, 1 << 30) == 1


def _call(fn: Callable[[], Any] | Staged) -> tuple[float, int | None, Any]:
    """(seconds, minor faults, result) of one call; a :class:`Staged` contender's prepare is
    outside the clock and the count."""
    if isinstance(fn, Staged):
        state = fn.prepare()
        f0 = _minflt()
        t0 = time.perf_counter()
        result = fn.run(state)
    else:
        f0 = _minflt()
        t0 = time.perf_counter()
        result = fn()
    t1 = time.perf_counter()
    return t1 - t0, None if f0 is None else _minflt() - f0, result


def _finish(fn: Callable[[], Any] | Staged, result: Any) -> None:
    if isinstance(fn, Staged):
        fn.finish(result)


def measure(
    contenders: dict[str, Callable[[], Any] | Staged],
    repeat: int,
    check: Callable[[str, Any], None] | None = None,
) -> dict[str, Timing]:
    """Time every contender at least ``repeat`` times, interleaved, after one warm-up call each whose
    result goes to ``check(name, result)`` (which raises if the contender did not do the whole job).

    When the slowest contender's warm-up took less than ``ROUND_BUDGET_S / repeat``, more rounds run
    (up to ``MAX_ROUNDS_FACTOR × repeat``), so millisecond-scale figures get a stable best."""
    slowest = 0.0
    for name, fn in contenders.items():
        took, _, result = _call(fn)
        slowest = max(slowest, took)
        if check is not None:
            check(name, result)
        _finish(fn, result)
        del result
    rounds = max(repeat, min(MAX_ROUNDS_FACTOR * repeat, math.ceil(ROUND_BUDGET_S / max(slowest, 1e-9))))
    runs: dict[str, list[float]] = {name: [] for name in contenders}
    faults: dict[str, int] = dict.fromkeys(contenders, 0)
    enabled = gc.isenabled()
    try:
        for _ in range(rounds):
            for name, fn in contenders.items():
                gc.collect()
                gc.disable()
                took, minflt, result = _call(fn)
                if minflt is not None:
                    faults[name] += minflt
                _finish(fn, result)
                del result  # freeing the result (the model's copies) is not timed
                gc.enable()
                runs[name].append(took)
    finally:
        if enabled:
            gc.enable()
        else:
            gc.disable()
    timings = {
        name: Timing(min(r), statistics.median(r), tuple(r), faults[name] / rounds if resource else None)
        for name, r in runs.items()
    }
    return timings


def mb_per_s(nbytes: int, seconds: float) -> float:
    """Throughput in MB/s (MB = 10^6 bytes)."""
    return nbytes / seconds / 1e6


if __name__ == "__main__":  # a part of ``python -m benchmarks``, not a benchmark of its own
    import sys

    print(f"benchmarks.timing: {__doc__.strip().splitlines()[0]}\nIts figures are measured by: python -m benchmarks [--help]")
    sys.exit(0 if sys.argv[1:] in ([], ["--help"], ["-h"]) else 2)
