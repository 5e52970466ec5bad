"""conformance/kafka_findings.py: a known Kafka bug matches only the exact shape of its violation —
for a departure of the model (lookups by the content), only Kafka's answer the model predicts."""

from __future__ import annotations

import attrs

from conformance import regressions
from conformance import scenario as sc
from conformance.kafka_findings import LOOKUP_BY_A_KEPT_MAX, LOOKUP_BY_A_LOST_MAX, RETENTION_BY_A_DAMAGED_ENTRY, known
from conformance.properties import CONFORMS, INDEX_AGREES
from conformance.runner import Session
from conformance.verdicts import Violation

CASE = next(c for c in regressions.cases() if c.name == "kafka-findings/lookup-by-a-lost-max-timestamp")
LOOKUP = CASE.scenario.steps[-1]
OURS = {"found": [1700000000500, 1]}  # offset 1 is the first record at or after the target
VIOLATION = Violation(CONFORMS, 8, "offset_for_timestamp t-0: model vs kafka result", ())


def _model_after(steps) -> object:
    session = Session(attrs.evolve(CASE.scenario, steps=()), targets=("model",))
    for step in steps:
        assert session.step(step) == []
    return session.model


def test_kafkas_answer_from_the_lost_max_is_the_finding():
    model = _model_after(CASE.scenario.steps)
    assert model.kafkas_lookup_by_a_lost_max(LOOKUP) == {"found": None}
    assert known(LOOKUP, {"model": OURS, "kafka": {"found": None}}, VIOLATION, model) is LOOKUP_BY_A_LOST_MAX
    assert known(LOOKUP, {"model": OURS, "kafka:2.8.2": {"found": None}}, VIOLATION, model) is LOOKUP_BY_A_LOST_MAX


def test_any_other_difference_stays_a_violation():
    model = _model_after(CASE.scenario.steps)
    other = {"model": OURS, "kafka": {"found": [1699000000000, 0]}}
    assert known(LOOKUP, other, VIOLATION, model) is None  # not what the lost max gives
    assert known(LOOKUP, {"model": OURS, "kafka": {"found": None}}, VIOLATION, None) is None  # no model to predict
    assert known(LOOKUP, {"model": OURS, "impl/sim": {"found": None}}, VIOLATION, model) is None  # not Kafka
    wrong_prop = Violation(INDEX_AGREES, 8, "", ())
    assert known(LOOKUP, {"model": OURS, "kafka": {"found": None}}, wrong_prop, model) is None


def test_a_max_loaded_before_the_truncation_is_not_lost():
    """A lookup before the truncation loads the max; the truncation then recomputes it (§4.7 rule 7)."""
    steps = list(CASE.scenario.steps)
    steps.insert(5, sc.OffsetForTimestamp(topic="t", timestamp=-3))
    model = _model_after(steps)
    assert not model.manager.log("t", 0).stale_max_timestamp()
    assert model.kafkas_lookup_by_a_lost_max(LOOKUP) is None


ZEROED = next(
    c for c in regressions.cases() if c.name == "KAFKA-10207/zeroed-final-time-entry-after-a-clean-shutdown.json"
)
RETENTION = ZEROED.scenario.steps[-2]
RETAINED = Violation(CONFORMS, 9, "retention: model vs kafka result /deleted: 0 != 1", ())


def _model_through(case, last) -> object:
    session = Session(attrs.evolve(case.scenario, steps=()), targets=("model", "impl"))  # impl makes the faults
    for step in case.scenario.steps[: last + 1]:
        assert session.step(step) == []
    return session.model


def test_kafkas_retention_by_a_zeroed_entry_is_predicted():
    """The model keeps the segment (its content is new); Kafka trusts the zeroed entry and deletes it."""
    assert isinstance(RETENTION, sc.Retention)
    model = _model_through(ZEROED, 9)
    assert model.kafkas_retention_by_a_damaged_entry(RETENTION) == {"deleted": 1}
    results = {"model": {"deleted": 0}, "impl/sim": {"deleted": 0}, "kafka": {"deleted": 1}}
    assert known(RETENTION, results, RETAINED, model) is RETENTION_BY_A_DAMAGED_ENTRY


def test_any_other_retention_difference_stays_a_violation():
    model = _model_through(ZEROED, 9)
    ours = {"model": {"deleted": 0}, "impl/sim": {"deleted": 0}}
    assert known(RETENTION, {**ours, "kafka": {"deleted": 2}}, RETAINED, model) is None  # not the prediction
    assert known(RETENTION, {**ours, "impl/sim": {"deleted": 1}, "kafka": {"deleted": 1}}, RETAINED, model) is None
    assert known(RETENTION, {**ours, "kafka": {"deleted": 1}}, RETAINED, None) is None  # no model to predict
    undamaged = _model_through(ZEROED, 6)  # before the corrupt step: the same counts everywhere
    undamaged.apply(RETENTION)
    assert undamaged.kafkas_retention_by_a_damaged_entry(RETENTION) is None


KEPT = next(c for c in regressions.cases() if c.name == "kafka-findings/lookup-by-a-max-timestamp-a-truncation-kept")


def test_kafkas_lookup_by_a_kept_max_is_predicted_only_above_the_content():
    model = _model_through(KEPT, len(KEPT.scenario.steps) - 1)
    lookup = KEPT.scenario.steps[-1]
    assert model.kafkas_lookup_by_a_kept_max(lookup) == {"found": None}
    assert model.kafkas_lookup_by_a_lost_max(lookup) is None  # the other direction
    ours = {"model": {"found": [1600000000000, 0]}, "impl/sim": {"found": [1600000000000, 0]}}
    violation = Violation(CONFORMS, 4, "offset_for_timestamp legacy-1: model vs kafka result", ())
    assert known(lookup, {**ours, "kafka": {"found": None}}, violation, model) is LOOKUP_BY_A_KEPT_MAX
    assert known(lookup, {**ours, "kafka": {"found": [1600000000005, 1073741812]}}, violation, model) is None
    before = _model_through(KEPT, len(KEPT.scenario.steps) - 3)  # before the truncation: nothing kept
    assert before.kafkas_lookup_by_a_kept_max(lookup) is None
