"""A deterministic thread scheduler driven by sync points (DESIGN.md "Concurrency").

Each participating thread stops at every sync point it reaches; the scheduler then lets exactly one
stopped thread continue, chosen by the next entry of ``order`` (a list Hypothesis draws), and waits
until it stops again or ends.  Only a thread released towards a lock another stopped thread holds
(:data:`LOCKING`) is passed over, after ``settle`` seconds, until it stops right after taking the
lock.  Real-thread races become replayable schedules: the KAFKA-9156 interleaving is simply
``[0, 1, 0, 1, …]``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from impl import sync_points

#: impl's lazy index getter (impl.index.LazyIndex.get): the KAFKA-9156 window lies between them
LAZY_POINTS = (
    "LazyIndex.get:checked-unmaterialised",
    "LazyIndex.get:locked",
    "LazyIndex.get:constructing",
    "LazyIndex.get:constructed",
)
#: impl's append (impl.log.UnifiedLog.append) between writing a batch into the active segment and
#: publishing the new log end offset: a fetch bounded by the log end offset must not read the batch
APPEND_POINTS = ("UnifiedLog.append:written",)
#: every thread of a ``race`` step stops here first, so no two threads ever run unscheduled code at once
START_POINT = "race:start"
RACE_POINTS = (START_POINT, *LAZY_POINTS, *APPEND_POINTS)


#: points after which a thread takes the lazy index's lock, and points at which a parked thread holds it
LOCKING = (frozenset(LAZY_POINTS[:1]), frozenset(LAZY_POINTS[1:]))


class Scheduler:
    """``locking``: (points after which a released thread takes a lock, points at which a parked
    thread holds it).  A thread released from the first while another is parked at the second
    blocks on the lock: given ``settle`` seconds to show otherwise, it then counts as blocked until
    it reaches its next point (impl marks one right after the lock is taken).  Any other released
    thread is waited for (up to ``limit``) until it reaches its next point or ends, so no two
    threads run unscheduled code at once, however slow the machine — a fixed short settle for every
    thread let a merely slow one run beside the next."""

    def __init__(
        self,
        order: Sequence[int],
        points: Sequence[str],
        settle: float = 0.02,
        limit: float = 10.0,
        locking: tuple[frozenset, frozenset] = LOCKING,
    ):
        self.order = list(order)
        self.points = list(points)
        self.settle = settle
        self.limit = limit
        self.locking = locking
        self.trace: list[tuple[int, str]] = []
        self._cond = threading.Condition()
        self._waiting: dict[int, str] = {}
        self._blocked: set[int] = set()  # released, waiting for a lock a parked thread holds
        self._go: set[int] = set()
        self._local = threading.local()

    def _hit(self, name: str) -> None:
        me = getattr(self._local, "tid", None)
        if me is None:  # a thread that is not part of the schedule
            return
        with self._cond:
            self._blocked.discard(me)
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
                    self._blocked.discard(i)
                    self._cond.notify_all()

        threads = [threading.Thread(target=wrap, args=(i, b), daemon=True) for i, b in enumerate(bodies)]
        with sync_points.install({p: self._hit for p in self.points}):
            for t in threads:
                t.start()
            order = list(self.order)
            with self._cond:
                while len(finished) < len(threads):
                    # every thread parked at a point, finished, or blocked on a lock a parked one holds
                    settled = lambda: len(self._waiting) + len(finished) + len(self._blocked) >= len(threads)  # noqa: E731
                    if not self._cond.wait_for(settled, timeout=self.limit):
                        raise TimeoutError("a released thread neither reached a sync point nor ended")
                    if not self._waiting:  # the lock's holder ended: a blocked thread takes it next
                        if not self._cond.wait_for(
                            lambda: self._waiting or len(finished) == len(threads), timeout=self.limit
                        ):
                            raise TimeoutError(f"threads {sorted(self._blocked)} blocked with nobody to release")
                        continue
                    candidates = sorted(self._waiting)
                    pick = order.pop(0) % len(bodies) if order else candidates[0]
                    if pick not in self._waiting:
                        pick = candidates[0]
                    point = self._waiting.pop(pick)
                    self.trace.append((pick, point))
                    takes, holds = self.locking
                    blocks = point in takes and any(p in holds for p in self._waiting.values())
                    self._go.add(pick)
                    self._cond.notify_all()
                    if blocks and not self._cond.wait_for(
                        lambda: pick in self._waiting or pick in finished, timeout=self.settle
                    ):
                        self._blocked.add(pick)
            for t in threads:
                t.join(self.limit)
        if errors:
            raise errors[0]
        return results
