"""How often the crash machine's faults reach a kind of damage: its ``event()`` labels counted.

    python scripts/fault_coverage.py [EXAMPLES] [SEED ...] [--prefix TEXT ...]

Runs the simulated crash machine (generate phase only, fresh cases) for EXAMPLES cases per seed
(default 300; seeds default 1 2 3) and prints, per event whose label starts with one of the
prefixes (default: what crash images and corrupt steps did to producer-state files, issue 32),
how many times it happened and in how many cases, beside the number of crashes.  A failure stops
its seed and is printed with its property, witness and scenario (a line ``scenario: JSON``).
"""

from __future__ import annotations

import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hypothesis  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

import conformance.crash_machine as crash_machine  # noqa: E402
import conformance.log_machine as log_machine  # noqa: E402
from conformance.profiles import fresh_cases  # noqa: E402

PREFIXES = ("crash image:", "corrupt: snapshot", "corrupt: txnindex")


def measure(examples: int, seed: int, prefixes: tuple[str, ...]) -> None:
    events, cases, seen = collections.Counter(), collections.Counter(), set()

    def count(label, *args, **kwargs):
        events[label] += 1
        seen.add(label)
        return real_event(label, *args, **kwargs)

    real_event = crash_machine.event
    machine = crash_machine.make_crash_machine("sim")

    class Counted(machine):
        def __init__(self):
            cases.update(seen | {"cases"})
            seen.clear()
            super().__init__()

    crash_machine.event = log_machine.event = count
    budget = settings(
        max_examples=examples, stateful_step_count=30, deadline=None, database=None,
        suppress_health_check=list(HealthCheck), phases=[hypothesis.Phase.generate], report_multiple_bugs=False,
    )  # fmt: skip
    started = time.monotonic()
    try:
        with fresh_cases():
            hypothesis.seed(seed)(lambda: run_state_machine_as_test(Counted, settings=budget))()
    except Exception as e:  # noqa: BLE001 — a violation ends the seed; it is reported, not hidden
        print(f"seed {seed}: stopped by {str(e).splitlines()[0][:300]}")
        for line in [*str(e).splitlines(), *getattr(e, "__notes__", [])]:
            if line.startswith("scenario: "):  # replay it: klc replay FILE
                print(line)
    finally:
        crash_machine.event = log_machine.event = real_event
    cases.update(seen)
    crashes = sum(n for label, n in events.items() if label.startswith("crash family:"))
    print(f"seed {seed}: {cases['cases']} cases, {crashes} crashes, {time.monotonic() - started:.0f} s")
    for label in sorted(events):
        if label.startswith(prefixes):
            print(f"  {label}: {events[label]} times, in {cases[label]} cases")


def main(argv: list[str]) -> int:
    prefixes = PREFIXES
    if "--prefix" in argv:
        at = argv.index("--prefix")
        argv, prefixes = argv[:at], tuple(argv[at + 1 :])
    numbers = [int(a) for a in argv]
    examples = numbers[0] if numbers else 300
    for seed in numbers[1:] or [1, 2, 3]:
        measure(examples, seed, prefixes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
