"""§5.9's crash-point table and its three caveats, as loader cases (conformance/swap_states.py): the
model and impl, on the simulated backend and on a real directory, agree and do what the table says."""

from __future__ import annotations

import pytest

from conformance.swap_states import CASES, judge, load_model


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
    from conformance.swap_states import DIR, DIRECTORIES, INDEX_BYTES, T0
    from model.config import Config
    from model.log_manager import load

    seen = {}
    for case in CASES:
        manager = load(case.image, [DIR], Config.of({"segment.index.bytes": INDEX_BYTES}), lambda: T0,
                       lambda p, b: 0, DIRECTORIES)  # fmt: skip
        seen[case.name] = set(manager.outcomes[0].branches)
    assert "5.2.1e invalid .swap removed" in seen["swap-at-the-smallest-cleaned-offset"]
    assert "5.2.1f .cleaned removed" in seen["writing-cleaned"]
    assert "5.2.3 original replaced by a swap removed" in seen["all-swap"]
    assert "5.2.3 original replaced by a swap removed" not in seen["empty-cleaned-segment"]
    assert "5.2.2 missing .index.swap created full of zero entries" in seen["missing-index-swap"]
    aborted = {"writing-cleaned", "cleaned-to-swap-halfway", "swap-at-the-smallest-cleaned-offset"}
    assert {c.name for c in CASES if "5.2.4 .swap renamed" in seen[c.name]} == {c.name for c in CASES} - aborted
    assert load_model(CASES[0])[0]["segments"] == [0, 6, 12, 18]
