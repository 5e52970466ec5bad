"""The regression corpora: every case under ``corpora/`` with the verdict it expects per target
(DESIGN.md "Scenarios and corpora", corpora/README.md).

* ``corpora/log/``, ``corpora/crash/`` — the log layer's and crash recovery's cases;
* ``corpora/KAFKA-*/`` and the other named folders — the historical Kafka bugs (spec §7), each case
  failing on the mutant that reproduces the old behaviour;
* ``corpora/kafka-findings/<name>/`` — bugs of Kafka itself, shown on the release named in its
  README; every target, the model included, reaches them (:mod:`conformance.kafka_findings`);
* ``corpora/found/<signature>/`` — what fuzzing campaigns found (:mod:`conformance.campaign.corpus`).

A case's ``expect`` (scenario files; ``expected.json`` for ``found/``) holds ``verdicts``: target →
``pass``, ``fail: <property>``, ``known: <finding>`` (a Kafka bug every target reaches) or
``unsupported`` (a step the target cannot run: on ``kafka``, or a crash cut from Kafka's own journal), for ``impl``, ``model``, ``kafka`` and ``mutant:NAME`` targets, measured when
the case was written; and ``witnesses``: target → the one-line witness of the first violation.
``klc check`` replays every case on impl; ``tests/test_regressions.py`` checks every recorded verdict.
"""

from __future__ import annotations

import glob
import json
import os

import attrs

from conformance import kafka_findings
from conformance import scenario as sc
from conformance.mutants import mutant_stack, parse_target
from conformance.runner import run

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPORA = os.path.join(CHECKOUT, "corpora")
FOUND = "found"
KAFKA_FINDINGS = kafka_findings.FOLDER  # Kafka bugs the suite found


@attrs.frozen
class Case:
    path: str  # the scenario file
    group: str  # the folder under corpora/: log, crash, KAFKA-10471, found, ...
    scenario: sc.Scenario
    verdicts: dict  # target -> "pass" | "fail: <property>"
    witnesses: dict  # target -> one-line witness of its first violation
    status: str = "fixed"  # found/ entries: caught, open or fixed; named cases are never open

    @property
    def name(self) -> str:
        rel = os.path.relpath(self.path, CORPORA)
        return rel[: -len("/scenario.json")] if rel.endswith("/scenario.json") else rel

    @property
    def mutants(self) -> list[str]:
        return [t.split(":", 1)[1] for t in self.verdicts if t.startswith("mutant:")]


def _named(path: str, group: str) -> Case:
    scenario = sc.Scenario.load(path)
    expect = scenario.expect
    verdicts = expect.get("verdicts")
    if not isinstance(verdicts, dict) or "impl" not in verdicts:
        raise sc.ScenarioError(f'{path}: "expect" has no "verdicts" with an "impl" entry (docs/scenario-format.md)')
    return Case(path, group, scenario, dict(verdicts), dict(expect.get("witnesses", {})))


def _found(entry: str) -> Case:
    path = os.path.join(entry, "expected.json")
    with open(path, encoding="utf-8") as f:
        expected = json.load(f)
    target = expected["found_by"]["target"]
    witnesses = {target: expected["witness"]} if expected["verdicts"].get(target, "pass") != "pass" else {}
    return Case(
        os.path.join(entry, "scenario.json"),
        FOUND,
        sc.Scenario.load(os.path.join(entry, "scenario.json")),
        dict(expected["verdicts"]),
        witnesses,
        expected["status"],
    )


def groups(root: str = CORPORA) -> list[str]:
    """The folders under ``root`` that hold cases, ``log`` and ``crash`` first, ``found`` last."""
    names = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    first = [g for g in ("log", "crash") if g in names]
    rest = [g for g in names if g not in first and g != FOUND]
    return first + rest + ([FOUND] if FOUND in names else [])


def cases(root: str = CORPORA, group: str | None = None) -> list[Case]:
    """Every case, in a stable order (``group`` limits it to one folder)."""
    out = []
    for g in groups(root) if group is None else [group]:
        folder = os.path.join(root, g)
        if g == FOUND:
            out += [_found(os.path.dirname(p)) for p in sorted(glob.glob(os.path.join(folder, "*", "expected.json")))]
        elif g == KAFKA_FINDINGS:  # one folder a finding: its scenario and a README
            out += [_named(p, g) for p in sorted(glob.glob(os.path.join(folder, "*", "scenario.json")))]
        else:
            out += [_named(p, g) for p in sorted(glob.glob(os.path.join(folder, "*.json")))]
    return out


@attrs.frozen
class NotJudged:
    """The case was not judged to its end: a target could not express a step (the runner's
    ``Verdict.unsupported``), or it reached a known Kafka bug (``Verdict.known``)."""

    why: str
    kind: str = "unsupported"

    def __str__(self) -> str:
        return f"{self.kind}: {self.why}"


def replay_scenario(scenario: sc.Scenario, target: str, backend: str = "sim"):
    """The first violation ``scenario`` gets on ``target`` (``impl``, ``model``, ``kafka``,
    ``mutant:NAME``); :class:`NotJudged` if a target could not run a step; None if it passes."""
    targets, mutant = parse_target(target)
    with mutant_stack(mutant):
        verdict = run(scenario, targets, backend)
    if verdict.violations:
        return verdict.violations[0]
    if verdict.known:
        return NotJudged(verdict.known, "known")
    return NotJudged(verdict.unsupported) if verdict.unsupported else None


def replay(case: Case, target: str, backend: str = "sim"):
    return replay_scenario(case.scenario, target, backend)


def verdict_of(violation) -> str:
    if isinstance(violation, NotJudged):
        return violation.kind if violation.kind == "unsupported" else f"known: {violation.why.split()[0]}"
    return "pass" if violation is None else f"fail: {violation.prop}"


def measure(scenario: sc.Scenario, targets: list[str]) -> dict:
    """``expect`` for a new case: the verdict and witness on each target, as they are now."""
    verdicts, witnesses = {}, {}
    for target in targets:
        v = replay_scenario(scenario, target)
        verdicts[target] = verdict_of(v)
        if v is not None:
            witnesses[target] = str(v)
    return {"verdicts": verdicts, "witnesses": witnesses}
