"""Everything a restructure must leave unchanged, as one JSON file to diff before and after.

For every corpus case and every target its ``expect.verdicts`` names (``kafka`` with ``--kafka``):
the verdict (violations without their frames, ``unsupported``, ``known``), every step's result,
the properties checked and how often, and the storage journal of each impl target (the order of
its operations, as a digest).  With ``--mutants``: every mutant check's witness.

    python scripts/behaviour_snapshot.py before.json [--mutants] [--kafka]
    python scripts/behaviour_snapshot.py after.json [--mutants] [--kafka]
    diff <(python -m json.tool before.json) <(python -m json.tool after.json)
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests.mutants

from conformance import regressions
from conformance.campaign.tasks import parse_target
from conformance.mutants import mutant_stack
from conformance.profiles import load_profile
from conformance.runner import Session


def _journal(target) -> str:
    def rel(path):  # the os backend's root is a fresh temp dir
        return (path or "").replace(target.root, "<root>")

    ops = [(op.name, rel(op.path), rel(getattr(op, "target", None))) for op in target.trace or ()]
    return hashlib.sha1(repr(ops).encode()).hexdigest()[:16] + f"/{len(ops)}"


def _run(scenario, target: str, backend: str) -> dict:
    targets, mutant = parse_target(target)
    with mutant_stack(mutant):
        session = Session(scenario, targets, backend)
        try:
            for step in scenario.steps:
                if session.step(step) or session.broken:
                    break
        finally:
            session.close()
    v = session.verdict
    return {
        "violations": [[x.prop, x.step, x.witness] for x in v.violations],
        "unsupported": v.unsupported,
        "known": v.known,
        "checked": v.checked,
        "results": v.results,
        "journals": {t.name: _journal(t) for t in session.targets if t.trace is not None},
    }


def corpus(kafka: bool) -> dict:
    out = {}
    for case in regressions.cases():
        for target in sorted(case.verdicts):
            if target == "kafka" and not kafka:
                continue
            for backend in ("sim", "os") if target == "impl" else ("sim",):
                out[f"{case.name} {target}/{backend}"] = _run(case.scenario, target, backend)
    return out


def mutant_checks() -> dict:
    from conformance.checks import CHECKS
    from conformance.properties import PropertyViolation
    from tests.mutants import ALL_MUTANTS

    out = {}
    for m in ALL_MUTANTS.values():
        for check in m.caught_by:
            try:
                CHECKS[check](m.load())
                out[f"{m.name} by {check}"] = "NOT CAUGHT"
            except PropertyViolation as e:
                out[f"{m.name} by {check}"] = str(e)
    return out


def main(argv: list[str]) -> int:
    path = argv[0]
    load_profile("ci")  # derandomized: the mutant checks' witnesses repeat
    snapshot = {"corpus": corpus("--kafka" in argv)}
    if "--mutants" in argv:
        snapshot["mutants"] = mutant_checks()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(snapshot, f, indent=1, sort_keys=True)
    print(f"{path}: {len(snapshot['corpus'])} corpus runs, {len(snapshot.get('mutants', {}))} mutant checks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
