"""``python -m benchmarks.stateful`` (issue #34 item 5): its step counts are exact, its result
checks are enforced; the figures themselves are not asserted (nothing timed is a test)."""

from __future__ import annotations

import attrs
import pytest

from benchmarks import stateful

# benchmarks collect garbage before every timed run (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("frozen_heap")


def test_counts_every_step_of_every_example():
    toy = attrs.evolve(stateful.CONTENDERS["toy"], steps=5)
    counts, wall = stateful.run_once(toy, 3)
    assert (counts.examples, counts.steps) == (3, 15)
    assert wall > 0 and counts.rule_s > 0 and counts.invariant_s > 0


def test_a_run_that_counted_nothing_is_refused(monkeypatch):
    """Were the counting hook lost (a Hypothesis release renaming ``check_invariants``), the
    figure would be zero steps a second: refused instead."""
    monkeypatch.setattr(stateful, "counted", lambda machine, counts: machine)
    with pytest.raises(RuntimeError, match="toy: ran 0 examples of 0 steps"):
        stateful.run_once(stateful.CONTENDERS["toy"], 1)


def test_the_table_names_each_machine_against_the_toy_and_its_goal():
    r = stateful.run(["toy", "log machine"], 2, 1)
    machines = r["machines"]
    assert machines["toy"]["over_toy"] == 1.0
    assert machines["log machine"]["goal"] == 0.5 and machines["log machine"]["steps"] > 0
    shares = machines["log machine"]
    assert shares["rules_share"] + shares["invariants_share"] + shares["rest_share"] == pytest.approx(1)
    lines = stateful.render(r)
    assert lines[2].startswith("toy") and lines[3].startswith("log machine") and "≥0.50" in lines[3]
