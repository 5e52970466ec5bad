"""What campaigns found, replayed by plain pytest (conformance/campaign):

* every ``corpora/found/<signature>/`` entry gets, on every target it names, the verdict recorded
  when it was written (a mutant's finding keeps failing on the mutant and passing on impl);
* with ``KLC_CAMPAIGN_RESULTS=<out>/results`` set, every failing task in that results table is
  replayed through Hypothesis itself, from the campaign's example-database view (``reuse`` phase
  only: nothing new is generated).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from conformance.campaign import corpus, table
from conformance.campaign.exampledb import CampaignDatabase
from conformance.campaign.tasks import Task, machine_for
from conformance.mutants import mutant_stack, parse_target
from conformance.properties import PropertyViolation

ENTRIES = corpus.entries()


def check_entry(scenario, expected: dict) -> None:
    for target, verdict in expected["verdicts"].items():
        got = corpus.verdict_on(scenario, target)
        assert got == verdict, f"{expected['signature']} on {target}: {got}, expected {verdict}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[os.path.basename(e[0]) for e in ENTRIES])
def test_found_entry_keeps_its_verdicts(entry):
    _folder, scenario, expected = entry
    check_entry(scenario, expected)


def test_found_corpus_is_well_formed():
    """Each entry is named by its signature and names the property its witness shows."""
    for folder, _scenario, expected in ENTRIES:
        assert os.path.basename(folder) == corpus.entry_name(expected["signature"], expected["found_by"]["target"])
        assert expected["status"] in ("caught", "open", "fixed")
        assert expected["signature"].startswith(expected["property"] + "-")
        assert expected["witness"]


def replay_from_database(results: str, row: dict) -> PropertyViolation | None:
    """Rebuild the row's machine and run it on the campaign's example database, reuse phase only."""
    task = Task(row["commit"], row["seed"], row["profile"], row["target"], row["examples"], row["max_steps"])
    _targets, mutant = parse_target(task.target)
    replay = settings(
        database=CampaignDatabase(results), phases=[Phase.reuse], max_examples=1, deadline=None,
        stateful_step_count=task.steps, suppress_health_check=list(HealthCheck), derandomize=False,
    )  # fmt: skip
    with mutant_stack(mutant):
        try:
            run_state_machine_as_test(machine_for(task), settings=replay)
        except PropertyViolation as e:
            return e
    return None


RESULTS = os.environ.get("KLC_CAMPAIGN_RESULTS")
FAILED = [r for r in table.read(RESULTS) if r["status"] == "fail" and r["choices"]] if RESULTS else []


@pytest.mark.skipif(not RESULTS, reason="set KLC_CAMPAIGN_RESULTS=<campaign out>/results to replay a campaign")
@pytest.mark.parametrize("row", FAILED, ids=[f"{r['target']}-seed{r['seed']}" for r in FAILED])
def test_campaign_failure_replays_from_the_example_database(row):
    violation = replay_from_database(RESULTS, row)
    assert violation is not None, f"seed {row['seed']} on {row['target']} no longer fails"
    assert violation.prop == row["property"]
