"""What a run of the runner reports: :class:`Violation` (a named property and a one-line witness)
and :class:`Verdict` (a scenario's violations, results and check counts), with the helpers that
word a witness (:func:`describe`, :func:`where`, :func:`first_difference`)."""

from __future__ import annotations

import collections
import os
import traceback

import attrs

from conformance import scenario as sc

_OWN_PACKAGES = ("model", "impl", "conformance")
_ENTRY_POINTS = ("conformance.runner.step", "conformance.runner.run")  # callers beyond these vary


def own_frames(frames, limit: int = 3) -> tuple[str, ...]:
    """The innermost ``limit`` frames inside model/, impl/ or conformance/ as ``module.function``
    (Hypothesis, Spark, pytest and the standard library left out): where a failure happened, stable
    across line-number edits — the frame part of a campaign signature (ClusterFuzz-style)."""
    out: list[str] = []
    for f in reversed(list(frames)):
        parts = os.path.normpath(f.filename).split(os.sep)
        for package in _OWN_PACKAGES:
            if package in parts[:-1]:
                at = len(parts) - 1 - parts[::-1].index(package)
                module = ".".join(parts[at:])[: -len(".py")]
                out.append(f"{module}.{f.name}")
                break
        if len(out) == limit or (out and out[-1] in _ENTRY_POINTS):
            break
    return tuple(out)


def _detector_frames() -> tuple[str, ...]:
    """Where a violation was found: the checking code that created it."""
    return own_frames(f for f in traceback.extract_stack()[:-2] if not f.filename.startswith("<"))


@attrs.define
class Violation:
    prop: str
    step: int  # index into the scenario's steps (−1: before any step)
    witness: str
    # innermost own frames: of the exception when a target raised, else of the check that found it
    frames: tuple[str, ...] = attrs.field(factory=_detector_frames, eq=False)

    def __str__(self) -> str:
        return f"{self.prop} violated at step {self.step}: {self.witness}"


@attrs.define
class Verdict:
    scenario: sc.Scenario
    targets: list[str]
    results: list[dict] = attrs.Factory(list)  # per step: {target name: result}
    violations: list[Violation] = attrs.Factory(list)
    checked: dict[str, int] = attrs.Factory(dict)  # property → times checked
    load_stats: list[dict] = attrs.Factory(list)
    unsupported: str | None = None  # a step a target could not express: the scenario was not judged
    known: str | None = None  # a known Kafka bug reached (conformance.kafka_findings): not judged after it

    @property
    def ok(self) -> bool:
        return not self.violations and self.unsupported is None and self.known is None

    def count(self, prop: str) -> None:
        """One check of ``prop`` made (also counted in :data:`TOTALS`)."""
        self.checked[prop] = self.checked.get(prop, 0) + 1
        TOTALS[prop] += 1

    def to_json(self) -> dict:
        return {
            "targets": self.targets,
            "ok": self.ok,
            "unsupported": self.unsupported,
            "known": self.known,
            "steps": len(self.results),
            "checked": self.checked,
            "violations": [attrs.asdict(v) for v in self.violations],
            "results": self.results,
        }


TOTALS: collections.Counter = collections.Counter()  # every check made in this process, by property


def describe(step: sc.Step) -> str:
    if step.partition_level:
        return f"{step.op} {step.topic}-{step.partition}"
    return step.op


def where(e: BaseException) -> str:
    """An exception as a witness names it: class, message and the innermost file and line."""
    tb = traceback.extract_tb(e.__traceback__)
    at = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(e).__name__}: {e}{at}"


def first_difference(a, b, path="") -> str:
    """Where two JSON-like values first differ, as ``/key[index]: a != b``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'first' if k in a else 'second'}"
            if a[k] != b[k]:
                return first_difference(a[k], b[k], f"{path}/{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path or '/'}: {_short(a)} != {_short(b)}"


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 160 else text[:157] + "..."
