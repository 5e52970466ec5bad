"""Kafka's own table (conformance/kafkas_own.py): every row is needed, and names what needs it."""

from __future__ import annotations

import os

import pytest

from conformance import kafkas_own, regressions
from conformance.properties import ALL
from conformance.runner import run

PINNED = [row for row in kafkas_own.TABLE if row.pinned_by]
SHOWN = [row for row in PINNED if row.on_kafka == kafkas_own.SHOWN]
NEEDED_BY_OURS = [row for row in PINNED if not row.kafka_only]


def test_every_row_names_a_property_a_reason_and_a_spec_section():
    assert len({row.name for row in kafkas_own.TABLE}) == len(kafkas_own.TABLE)
    for row in kafkas_own.TABLE:
        assert row.relaxes in ALL, row.name
        assert row.trigger and row.spec, row.name


@pytest.mark.parametrize("row", NEEDED_BY_OURS, ids=lambda r: r.name)
def test_the_pinned_case_fails_without_its_row(row):
    """With the row in force the case passes on impl; switched off, it fails with the property
    the row relaxes: the row is needed, and the case shows why."""
    case = _case(row.pinned_by)
    assert regressions.verdict_of(regressions.replay(case, "impl")) == "pass"
    with kafkas_own.switched_off(row.name):
        got = [regressions.verdict_of(regressions.replay(case, t)) for t in ("impl", "model")]
    assert f"fail: {row.relaxes}" in got, f"{row.pinned_by} without {row.name}: {got}"


@pytest.mark.parametrize("row", SHOWN, ids=lambda r: r.name)
def test_kafka_itself_does_what_the_row_says(row):
    """The row is Kafka's own on Kafka 4.4.0: the pinned case passes on the kafka target with the
    row in force, and with it off the property fails on the kafka target itself (it is judged
    before the model: the targets run as kafka, then model)."""
    scenario = _case(row.pinned_by).scenario
    assert run(scenario, ("kafka", "model")).ok
    with kafkas_own.switched_off(row.name, *row.shown_with):
        verdict = run(scenario, ("kafka", "model"))
    first = verdict.violations[0] if verdict.violations else None
    assert first is not None and first.prop == row.relaxes and first.witness.startswith("kafka"), str(first)


def test_every_pinned_row_says_what_kafka_does():
    for row in PINNED:
        assert row.on_kafka, row.name
        assert not row.kafka_only or row.on_kafka == kafkas_own.SHOWN, f"{row.name}: needed on Kafka alone, shown nowhere"


def test_an_unknown_row_is_an_error():
    with pytest.raises(KeyError):
        kafkas_own.applies("no-such-row")
    with pytest.raises(KeyError), kafkas_own.switched_off("no-such-row"):
        pass


def test_switched_off_rows_come_back():
    name = kafkas_own.TABLE[0].name
    with kafkas_own.switched_off(name):
        assert not kafkas_own.applies(name)
        assert kafkas_own.exempt(name, {"d0/t-0"}) == set()
    assert kafkas_own.applies(name)
    assert kafkas_own.exempt(name, {"d0/t-0"}) == {"d0/t-0"}


def _case(path: str) -> regressions.Case:
    full = os.path.join(regressions.CHECKOUT, path)
    return next(
        c
        for c in regressions.cases()
        if os.path.samefile(c.path, full if path.endswith(".json") else os.path.join(full, "scenario.json"))
    )
