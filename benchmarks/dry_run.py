"""Where the crash machine learns a step's storage operations: a fork of the image source against
a replay of the scenario so far.

Before it interrupts a step at its k-th storage operation, the crash machine needs the list of
operations that step makes (``CrashMachine._dry_run``, which draws k aimed at renames).  It used to
get it by replaying the whole scenario in a fresh session and then running the step — a cost that
grows with the scenario's length, paid at every interrupted step (quadratic over a case).  It now
runs the step on a fork of the image source (``Session.fork_source``: a deep copy of impl on the
simulated backend).  Both give the same list; this measures both, interleaved, at the last
operation step of corpus cases of growing length, as a ratio within one run.

    python -m benchmarks.dry_run [--repeat 5] [--cases 6] [--json]

Nothing here is a test (tests/test_crash_machine.py checks the counts are the operations a crash
at each number interrupts).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import attrs

from benchmarks.timing import measure
from conformance import regressions
from conformance.runner import Session


def _replayed(header, steps, step) -> list[str]:
    """The former way: the scenario so far replayed on a fresh impl, then ``step`` counted."""
    replay = Session(header, ("impl",), "sim", faults=True)
    try:
        for done in steps:
            replay.step(done)
        storage = replay.source.storage
        storage.arm(None)
        storage.counted = []
        replay.source.apply(step)
        return storage.counted
    finally:
        replay.close()


def _forked(session, step) -> list[str]:
    fork = session.fork_source()
    try:
        fork.storage.arm(None)
        fork.storage.counted = []
        fork.apply(step)
        return fork.storage.counted
    finally:
        fork.close()


def _workloads(n: int) -> list[tuple[str, object, list, object]]:
    """Up to ``n`` corpus cases with no fault before their last operation step, longest first:
    (name, header, steps before it, the step)."""
    out = []
    for case in regressions.cases():
        steps = list(case.scenario.steps)
        last = max((i for i, s in enumerate(steps) if s.runs_as == "operation"), default=None)
        if last is None or last < 3:
            continue
        out.append((case.name, attrs.evolve(case.scenario, steps=()), steps[:last], steps[last]))
    out.sort(key=lambda w: -len(w[2]))
    picked = out[: max(1, n // 2)] + out[len(out) // 2 : len(out) // 2 + n - max(1, n // 2)]
    return picked


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dry_run", description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="least timed runs per contender; the best is used (5)")
    p.add_argument("--cases", type=int, default=6, help="corpus cases measured, longest and middling (6)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    rows = []
    for name, header, before, step in _workloads(args.cases):
        session = Session(header, ("model", "impl"), "sim", faults=True)
        try:
            for done in before:
                session.step(done)
            if session.broken:
                continue
            want = _replayed(header, before, step)

            def check(contender, counted, want=want, name=name):
                if counted != want:
                    raise AssertionError(f"{name}: {contender} counted {len(counted)} operations, the replay {len(want)}")

            t = measure(
                {"replay": lambda: _replayed(header, before, step), "fork": lambda: _forked(session, step)},
                args.repeat,
                check,
            )
        finally:
            session.close()
        rows.append({"case": name, "steps before": len(before), "operations": len(want),
                     "replay ms": t["replay"].best * 1e3, "fork ms": t["fork"].best * 1e3,
                     "replay / fork": t["replay"].best / t["fork"].best})  # fmt: skip
    if args.json:
        print(json.dumps({"rows": rows}, indent=1))
        return 0
    print(f"{'case':60} {'steps':>5} {'ops':>4} {'replay ms':>10} {'fork ms':>8} {'ratio':>6}")
    for r in rows:
        print(f"{r['case'][:60]:60} {r['steps before']:5} {r['operations']:4} {r['replay ms']:10.1f} "
              f"{r['fork ms']:8.1f} {r['replay / fork']:6.1f}")  # fmt: skip
    if rows:
        print(f"median replay / fork: {statistics.median(r['replay / fork'] for r in rows):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
