"""Stateful throughput: steps per second of the state machines CI runs, over a toy machine's.

A state machine's budget is examples × steps, so its steps per second decide how much searching a
gate of fixed length does.  The toy machine (a list with append/pop rules and one invariant, below)
is what Hypothesis itself costs per step: generating a rule and its arguments, the engine's
bookkeeping, one trivial invariant.  Each machine runs here as its CI test runs it — on the
simulated backend, under the suite's one generation policy (:func:`conformance.profiles.fresh_cases`,
the toy too), the crash machine at 40 steps — with the same number of examples, and the figures are
ratios within one run, contenders interleaved:

* ``steps/s over the toy's`` — the issue's goals (issue #34): the log machine ≥ 0.5, the crash
  machine ≥ 0.25;
* where a machine's time goes: its rules, its invariants, and the rest (Hypothesis generating the
  step, the engine, the machine's set-up and teardown), from Hypothesis's own per-rule and
  per-invariant run times.

    python -m benchmarks.stateful [--examples 20] [--repeat 3] [--only NAME ...] [--json]

Steps are counted at each invariant check (Hypothesis checks invariants once before the first step
and after every step), less one per example.  Nothing here is a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test


class ToyMachine(RuleBasedStateMachine):
    """Hypothesis's own cost per step: two rules with an integer argument, one invariant."""

    def __init__(self):
        super().__init__()
        self.items: list[int] = []

    @rule(x=st.integers(0, 1000))
    def append(self, x):
        self.items.append(x)

    @rule()
    def pop(self):
        if self.items:
            self.items.pop()

    @invariant()
    def bounded(self):
        assert len(self.items) >= 0


@attrs.define
class Counts:
    """What one run of a machine did, from its invariant checks."""

    examples: int = 0
    checks: int = 0
    rule_s: float = 0.0
    invariant_s: float = 0.0

    @property
    def steps(self) -> int:
        return self.checks - self.examples


def counted(machine: type[RuleBasedStateMachine], counts: Counts) -> type[RuleBasedStateMachine]:
    """``machine`` with its invariant checks counted; each example's rule and invariant times are
    added at its teardown (Hypothesis keeps them per example, keyed ``execute:rule:NAME`` and
    ``execute:invariant:NAME``)."""

    class Counted(machine):
        def check_invariants(self, settings, output, runtimes):
            counts.checks += 1
            self._runtimes = runtimes
            return super().check_invariants(settings, output, runtimes)

        def teardown(self):
            counts.examples += 1
            for label, seconds in getattr(self, "_runtimes", {}).items():
                if label.startswith("execute:rule:"):
                    counts.rule_s += seconds
                elif label.startswith("execute:invariant:"):
                    counts.invariant_s += seconds
            super().teardown()

    Counted.__name__ = machine.__name__
    return Counted


@attrs.frozen
class Contender:
    name: str
    machine: Callable[[], type[RuleBasedStateMachine]]  # imported late: the toy needs none of it
    steps: int  # stateful_step_count, as its CI test sets it
    fresh: bool = True  # run under conformance.profiles.fresh_cases, as its CI test does


def _log_machine():
    from conformance.log_machine import make_log_machine

    return make_log_machine("sim")


def _crash_machine():
    from conformance.crash_machine import make_crash_machine

    return make_crash_machine("sim")


CONTENDERS = {
    "toy": Contender("toy", lambda: ToyMachine, 50),
    "log machine": Contender("log machine", _log_machine, 50),
    "crash machine": Contender("crash machine", _crash_machine, 40),
}
GOALS = {"log machine": 0.5, "crash machine": 0.25}  # steps/s over the toy's (issue #34)


def run_once(c: Contender, examples: int) -> tuple[Counts, float]:
    from conformance.profiles import fresh_cases

    counts = Counts()
    machine = counted(c.machine(), counts)
    s = settings(
        max_examples=examples, stateful_step_count=c.steps, derandomize=True, database=None, deadline=None,
        phases=[Phase.generate], suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    with fresh_cases() if c.fresh else contextlib.nullcontext():
        t0 = time.perf_counter()
        run_state_machine_as_test(machine, settings=s)
        wall = time.perf_counter() - t0
    if counts.examples < 1 or counts.steps < counts.examples:
        raise RuntimeError(f"{c.name}: ran {counts.examples} examples of {counts.steps} steps")
    return counts, wall


def run(names: list[str], examples: int, repeat: int) -> dict[str, Any]:
    """Interleaved rounds; each contender's best round (highest steps/s) is its figure."""
    best: dict[str, dict[str, Any]] = {}
    for _ in range(repeat):
        for name in names:
            counts, wall = run_once(CONTENDERS[name], examples)
            row = {
                "examples": counts.examples,
                "steps": counts.steps,
                "wall_s": wall,
                "steps_per_s": counts.steps / wall,
                "rules_share": counts.rule_s / wall,
                "invariants_share": counts.invariant_s / wall,
            }
            row["rest_share"] = 1 - row["rules_share"] - row["invariants_share"]
            if name not in best or row["steps_per_s"] > best[name]["steps_per_s"]:
                best[name] = row
    toy = best.get("toy")
    for name, row in best.items():
        row["over_toy"] = row["steps_per_s"] / toy["steps_per_s"] if toy else None
        row["goal"] = GOALS.get(name)
    return {"examples": examples, "repeat": repeat, "machines": best}


def render(r: dict[str, Any]) -> list[str]:
    lines = [
        f"stateful throughput ({r['examples']} examples, best of {r['repeat']} interleaved rounds; shares of wall time)",
        f"{'machine':<14} {'steps':>6} {'steps/s':>8} {'/ toy':>6} {'goal':>6} {'rules':>6} {'invariants':>10} {'rest':>6}",
    ]
    for name, m in r["machines"].items():
        over = "" if m["over_toy"] is None else f"{m['over_toy']:.2f}"
        goal = "" if m["goal"] is None else f"≥{m['goal']:.2f}"
        lines.append(
            f"{name:<14} {m['steps']:>6} {m['steps_per_s']:>8.0f} {over:>6} {goal:>6} "
            f"{m['rules_share']:>6.0%} {m['invariants_share']:>10.0%} {m['rest_share']:>6.0%}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.stateful", description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=20, help="examples per machine per round (20)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved rounds; the best is used (3)")
    p.add_argument("--only", nargs="+", choices=list(CONTENDERS), help="these machines (the toy always runs)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.examples < 1 or args.repeat < 1:
        p.error("--examples and --repeat must be >= 1")
    names = ["toy", *[n for n in (args.only or CONTENDERS) if n != "toy"]]
    r = run(names, args.examples, args.repeat)
    print(json.dumps(r, sort_keys=True) if args.json else "\n".join(render(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
