"""§5.9's crash-point table and its three caveats, as loader cases (conformance/swap_states.py): the
model and impl, on the simulated backend and on a real directory, agree and do what the table says.
Each case is a scenario with a disk image, run by the one runner, and stored in corpora/swap-states/."""

from __future__ import annotations

import json
import os

import pytest

from conformance import regressions
from conformance import scenario as sc
from conformance.runner import Session
from conformance.swap_states import CASES, CORPUS, judge, loaded, scenario


@pytest.mark.parametrize("backend", ["sim", "os"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_an_interrupted_replacement_is_aborted_or_completed(case, backend):
    judge(case, backend)


def test_the_cases_cover_every_row_and_caveat():
    rows = {c.row for c in CASES}
    assert len([r for r in rows if not r.startswith("caveat")]) == 5
    assert sorted(r.split(":")[0] for r in rows if r.startswith("caveat")) == ["caveat 1", "caveat 2", "caveat 3"]


def test_the_model_reports_the_swap_branches():
    """The loader branches each case goes through are reported (event names of the crash tests)."""
    seen = {}
    for case in CASES:
        session = Session(scenario(case), ("model",))
        seen[case.name] = set(session.model.manager.outcomes[0].branches)
        session.close()
    assert "5.2.1e invalid .swap removed" in seen["swap-at-the-smallest-cleaned-offset"]
    assert "5.2.1f .cleaned removed" in seen["writing-cleaned"]
    assert "5.2.3 original replaced by a swap removed" in seen["all-swap"]
    assert "5.2.3 original replaced by a swap removed" not in seen["empty-cleaned-segment"]
    assert "5.2.2 missing .index.swap created full of zero entries" in seen["missing-index-swap"]
    aborted = {"writing-cleaned", "cleaned-to-swap-halfway", "swap-at-the-smallest-cleaned-offset"}
    assert {c.name for c in CASES if "5.2.4 .swap renamed" in seen[c.name]} == {c.name for c in CASES} - aborted
    assert loaded(CASES[0])["model"][0]["segments"] == [0, 6, 12, 18]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_corpus_holds_each_case_as_it_is_built(case):
    """corpora/swap-states/ is what :func:`scenario` builds (regenerate: python -m conformance.swap_states)."""
    stored = sc.Scenario.load(os.path.join(CORPUS, f"{case.name}.json"))
    assert stored.image == scenario(case).image
    assert (stored.steps, stored.config) == ((), scenario(case).config)
    assert stored.expect["verdicts"]["impl"] == "pass"


def test_an_image_round_trips_and_bad_images_are_named():
    s = scenario(CASES[0])
    assert sc.Scenario.from_json(json.loads(s.dumps())) == s
    base = json.loads(s.dumps())
    for image, message in [
        ({"files": {"../etc/passwd": {"base64": ""}}}, "not a path under a data dir"),
        ({"files": {"d3/t-0/x.log": {"base64": ""}}}, "not a path under a data dir"),
        ({"files": {"d0/t-0/x.log": {"base64": "!!"}}}, "not base64"),
        ({"files": {"d0/t-0/x.log": "AAAA"}}, "a file is an object"),
        ({"files": {}, "extra": 1}, "an image is an object"),
        ({"files": {}, "dirs": "d0"}, "a list of directory paths"),
        ({"files": {}, "damaged": ["d0/t-0/x/y"]}, "not a path under a data dir"),
    ]:
        with pytest.raises(sc.ScenarioError, match=message):
            sc.Scenario.from_json({**base, "image": image}, "case.json")


def test_every_stored_swap_state_is_a_regression_case():
    names = {c.name for c in regressions.cases(group="swap-states")}
    assert names == {f"swap-states/{c.name}.json" for c in CASES}
