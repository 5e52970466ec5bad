"""Re-measure the recorded verdicts of corpus cases after a deliberate behaviour change.

    python scripts/record_verdicts.py CASE.json [CASE.json ...]

Replays each case on every target its ``expect.verdicts`` names and rewrites ``expect`` (verdicts
and witnesses) in place, keeping the rest of the file.  Prints each change: a verdict that moves
is a behaviour change to explain in the case's note and the commit, never a silent update.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import attrs  # noqa: E402

from conformance import regressions  # noqa: E402
from conformance import scenario as sc  # noqa: E402


def record(path: str) -> list[str]:
    scenario = sc.Scenario.load(path)
    before = scenario.expect.get("verdicts", {})
    expect = {**scenario.expect, **regressions.measure(scenario, list(before))}
    if not expect["witnesses"]:
        del expect["witnesses"]
    with open(path, "w", encoding="utf-8") as f:
        f.write(attrs.evolve(scenario, expect=expect).dumps())
    return [f"{path}: {t}: {before[t]} -> {v}" for t, v in expect["verdicts"].items() if before.get(t) != v]


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in paths:
        for change in record(path):
            print(change)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
