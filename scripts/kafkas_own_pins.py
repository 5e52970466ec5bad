"""Which corpus cases need each row of Kafka's-own table (conformance/kafkas_own.py).

    python scripts/kafkas_own_pins.py [ROW ...]

Switches each row off in turn and replays every corpus case that passes with it on (on impl, and
on model where the case expects model to pass): the cases that then fail with the property the
row relaxes are the ones that pin it.  A row's ``pinned_by`` should name one of them.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conformance import kafkas_own, regressions  # noqa: E402
from conformance.profiles import load_profile  # noqa: E402


def pins(row: kafkas_own.Allowance, cases) -> list[str]:
    out = []
    with kafkas_own.switched_off(row.name):
        for case in cases:
            for target in ("impl", "model"):
                if case.verdicts.get(target) != "pass":
                    continue
                v = regressions.replay(case, target)
                if regressions.verdict_of(v) == f"fail: {row.relaxes}":
                    out.append(f"{case.name} ({target})")
                    break
    return out


def main(names: list[str]) -> int:
    load_profile("ci")
    cases = regressions.cases()
    for row in kafkas_own.TABLE:
        if names and row.name not in names:
            continue
        found = pins(row, cases)
        print(f"{row.name} [{row.relaxes}] pinned_by={row.pinned_by}: {len(found)} case(s)")
        for name in found:
            print(f"    {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
