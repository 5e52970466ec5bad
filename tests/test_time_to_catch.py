"""The time-to-catch benchmark's bookkeeping (benchmarks/time_to_catch.py): a mutant cell that only
found the control's bug is not a catch."""

from __future__ import annotations

import pytest

from benchmarks.time_to_catch import CONTROL_NAME, discount_control_findings, main, measure_one, summarise


def _row(mutant, seed, witness=None):
    found = witness is not None
    return {"mutant": mutant, "machine": "crash machine", "seed": seed, "found": found, "property": "conforms" if found else None,
            "examples": 5 if found else None, "seconds": 1.0 if found else None, "witness": witness}  # fmt: skip


def test_a_cell_failing_with_the_controls_witness_is_not_found():
    rows = [
        _row(CONTROL_NAME, 0, "[conforms] conforms violated at step 9: open: /recovered: [0] != [1]"),
        _row(CONTROL_NAME, 1),
        _row("m", 0, "[conforms] conforms violated at step 12: open: /recovered: [0] != [1]"),  # the control's bug
        _row("m", 1, "[conforms] conforms violated at step 12: open: /recovered: [0] != [1]"),  # clean control seed
        _row("n", 0, "[durable] durable violated at step 3: offsets 1..2 are missing"),  # its own witness
    ]
    assert discount_control_findings(rows) == [("m", 0)]
    found = {s["mutant"]: s["found"] for s in summarise(rows, 2, 60)}
    assert found == {CONTROL_NAME: "1/2", "m": "1/2", "n": "1/1"}


def test_an_examples_cap_ends_a_cell_before_its_seconds():
    """--examples N: a cell stops after N examples whatever its seconds budget (a comparison of two
    strategies that does not depend on the machine's speed)."""
    row = measure_one(CONTROL_NAME, 0, budget=600, examples=2)
    assert row["found"] is False and row["mutant"] == CONTROL_NAME


def test_a_bad_examples_cap_is_a_usage_error():
    with pytest.raises(SystemExit) as e:
        main(["--examples", "0", "--only", "crc-range-off-by-one"])
    assert e.value.code == 2


@pytest.mark.no_cover  # the JVM's time
def test_a_release_row_finds_its_bug_and_checks_it_on_the_fix_release():
    """``kafka:2.1.0..2.1.1`` (issue 31 item 5): the crash machine against 2.1.0 fails, not pointed
    at KAFKA-6388, and the fix release 2.1.1 passes the scenario it failed (the fix's difference)."""
    row = measure_one("kafka:2.1.0..2.1.1", 0, budget=120, examples=50)
    assert row["found"] and row["fixed_release_passes"] is True, row
    assert "append" in row["witness"] and "kafka:2.1.0" in row["witness"]
    assert summarise([row], 1, 120)[0]["fix"] == "1/1"


CASE = "corpora/log/roll-on-segment-bytes.json"  # fails conforms at step 3 on this mutant, and on
MUTANT = "mutant:roll-one-batch-late"  # with every step after (a late roll changes what follows)


def _on_the_mutant(**looking):
    from conformance import scenario as sc
    from conformance.mutants import mutant_stack
    from conformance.runner import looking_past, run

    scenario = sc.Scenario.load(CASE)
    with mutant_stack(MUTANT.removeprefix("mutant:")), looking_past(**looking):
        return scenario, run(scenario, ("model", "impl"), stop_at_first=False)


def test_a_violation_looked_past_ends_the_scenario_as_known():
    _scenario, verdict = _on_the_mutant(predicate=lambda v: v.prop == "conforms")
    assert verdict.violations == [] and verdict.known.startswith("looked past at step ")


def test_a_violation_not_looked_past_is_a_failure():
    _scenario, verdict = _on_the_mutant(predicate=lambda v: v.prop != "conforms")
    assert [v.prop for v in verdict.violations][:1] == ["conforms"] and verdict.known is None


def test_judging_on_runs_the_scenario_to_its_end_past_every_violation_looked_past():
    scenario, verdict = _on_the_mutant(predicate=lambda v: True, judge_on=True)
    assert verdict.violations == [] and verdict.known is None
    assert len(verdict.results) == len(scenario.steps)  # every step ran and was judged


def test_a_release_row_names_its_releases_and_the_witness_it_looks_for():
    from benchmarks.time_to_catch import _Release

    row = _Release("kafka:2.3.1..2.4.1@KAFKA-9156")
    assert (row.buggy, row.fixed, row.target) == ("2.3.1", "2.4.1", "kafka:2.3.1")
    assert row.witness.search("the race built the lazy index x twice (KAFKA-9156)")
    assert _Release("kafka:2.1.0..2.1.1").witness is None
