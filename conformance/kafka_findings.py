"""Kafka bugs the suite found and pinned, each a folder ``corpora/kafka-findings/<name>/`` with a
README (the rule it breaks, the release, the steps) and a scenario.

The model follows current Kafka, so where Kafka breaks a property the model breaks it alike, and
every target agrees.  A scenario that reaches a known finding is reported as that finding and not
judged further (:attr:`conformance.runner.Verdict.known`): one pinned case shows the bug, and the
state machines and campaigns go on searching for what is not known yet.  A finding matches only
the exact shape of its violation, so anything else a scenario does stays judged.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from conformance import scenario as sc
from conformance.properties import INDEX_AGREES

FOLDER = "kafka-findings"


@attrs.frozen
class Finding:
    name: str  # its folder under corpora/kafka-findings/
    release: str  # the Kafka release it was shown on
    prop: str  # the property it breaks: the first violation it shows
    summary: str
    step_shape: Callable[[sc.Step, dict], bool]  # the step and every target's result that reach it


def _append_refused_by_every_target(step: sc.Step, results: dict, kind: str) -> bool:
    """Every target refused ``step`` — an append, or a race holding one — with ``kind``."""

    def refused(s: sc.Step, r: dict) -> bool:
        if isinstance(s, sc.Race):
            return any(refused(t, x) for t, x in zip(s.steps, r.get("race", ()), strict=False))
        return isinstance(s, sc.Append) and r.get("error") == kind

    return bool(results) and all(refused(step, r) for r in results.values())


FULL_INDEX_MID_APPEND = Finding(
    name="full-index-mid-append",
    release="4.4.0",
    prop=INDEX_AGREES,
    summary="an append of several batches runs out of index slots after writing its bytes: refused, "
    "its batches stay in the .log past the log end offset and its index entries name them",
    step_shape=lambda step, results: _append_refused_by_every_target(step, results, "IllegalArgumentException"),
)

FINDINGS = (FULL_INDEX_MID_APPEND,)


def known(step: sc.Step, results: dict, violation) -> Finding | None:
    """The known finding ``violation`` (the first of ``step``) is, if any."""
    return next((f for f in FINDINGS if violation.prop == f.prop and f.step_shape(step, results)), None)
