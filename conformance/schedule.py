"""A deterministic thread scheduler driven by sync points (DESIGN.md "Concurrency").

Each participating thread stops at every sync point it reaches; the scheduler then lets exactly one
stopped thread continue, chosen by the next entry of ``order`` (a list Hypothesis draws).  A thread
that does not reach a sync point within ``settle`` seconds is considered blocked (e.g. on a lock) or
running to completion, and the others are scheduled meanwhile.  Real-thread races become replayable
schedules: the KAFKA-9156 interleaving is simply ``[0, 1, 0, 1, …]``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from impl import sync_points

#: impl's lazy index getter (impl.index.LazyIndex.get): the KAFKA-9156 window lies between them
LAZY_POINTS = ("LazyIndex.get:checked-unmaterialised", "LazyIndex.get:constructing", "LazyIndex.get:constructed")
#: every thread of a ``race`` step stops here first, so no two threads ever run unscheduled code at once
START_POINT = "race:start"
RACE_POINTS = (START_POINT, *LAZY_POINTS)


class Scheduler:
    def __init__(self, order: Sequence[int], points: Sequence[str], settle: float = 0.02, limit: float = 10.0):
        self.order = list(order)
        self.points = list(points)
        self.settle = settle
        self.limit = limit
        self.trace: list[tuple[int, str]] = []
        self._cond = threading.Condition()
        self._waiting: dict[int, str] = {}
        self._go: set[int] = set()
        self._local = threading.local()

    def _hit(self, name: str) -> None:
        me = getattr(self._local, "tid", None)
        if me is None:  # a thread that is not part of the schedule
            return
        with self._cond:
            self._waiting[me] = name
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: me in self._go, timeout=self.limit):
                raise TimeoutError(f"scheduler never released thread {me} at {name}")
            self._go.discard(me)

    def run(self, bodies: Sequence[Callable[[], object]]) -> list[object]:
        """Run each body in its own thread under the schedule; return their results (or raise the
        first exception a body raised)."""
        results: list[object] = [None] * len(bodies)
        errors: list[BaseException] = []
        finished: set[int] = set()

        def wrap(i: int, body: Callable[[], object]) -> None:
            self._local.tid = i
            try:
                results[i] = body()
            except BaseException as e:  # noqa: BLE001 - reported to the caller
                errors.append(e)
            finally:
                with self._cond:
                    finished.add(i)
                    self._cond.notify_all()

        threads = [threading.Thread(target=wrap, args=(i, b), daemon=True) for i, b in enumerate(bodies)]
        with sync_points.install({p: self._hit for p in self.points}):
            for t in threads:
                t.start()
            order = list(self.order)
            with self._cond:
                while len(finished) < len(threads):
                    # let every running thread reach a sync point, finish, or block elsewhere
                    self._cond.wait_for(lambda: len(self._waiting) + len(finished) >= len(threads), timeout=self.settle)
                    if not self._waiting:
                        if not self._cond.wait_for(
                            lambda: self._waiting or len(finished) == len(threads), timeout=self.limit
                        ):
                            raise TimeoutError("no thread made progress")
                        continue
                    candidates = sorted(self._waiting)
                    pick = order.pop(0) % len(bodies) if order else candidates[0]
                    if pick not in self._waiting:
                        pick = candidates[0]
                    self.trace.append((pick, self._waiting.pop(pick)))
                    self._go.add(pick)
                    self._cond.notify_all()
            for t in threads:
                t.join(self.limit)
        if errors:
            raise errors[0]
        return results
