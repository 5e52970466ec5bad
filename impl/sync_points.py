"""Named interleaving points for deterministic concurrency tests (cf. RocksDB's TEST_SYNC_POINT).

Production code calls ``sync_point("LazyIndex.get:before-lock")``; normally that is a dictionary
lookup that finds nothing.  A test installs callbacks (e.g. to block one thread until another has
passed a point) with :func:`install`, so a schedule chosen by Hypothesis can force an interleaving
such as KAFKA-9156's (§7.4) without sleeping.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

_callbacks: dict[str, Callable[[str], None]] = {}


def sync_point(name: str) -> None:
    callback = _callbacks.get(name)
    if callback is not None:
        callback(name)


@contextlib.contextmanager
def install(callbacks: dict[str, Callable[[str], None]]) -> Iterator[None]:
    """Install callbacks for the duration of a ``with`` block (tests only)."""
    previous = dict(_callbacks)
    _callbacks.update(callbacks)
    try:
        yield
    finally:
        _callbacks.clear()
        _callbacks.update(previous)
