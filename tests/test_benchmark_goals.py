"""benchmarks.goals: the speed goals' table in one command.  Its arguments refused in one line, a
goal judged met only when its figure reaches it, a section that cannot run named and the exit
status 1, and (nightly) every section once, small.  Nothing here is timed: the figures are the
benchmark's to report, never asserted."""

from __future__ import annotations

import json

import pytest

from benchmarks import goals, time_to_catch


@pytest.mark.parametrize("argv,says", [(["--seeds", "0"], "must be > 0"), (["--skip", "all"], "invalid choice")])
def test_bad_arguments_are_refused_in_one_line(argv, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        goals.main(argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def _cell(mutant, seed, seconds):
    found = seconds is not None
    return {"mutant": mutant, "machine": "crash machine", "seed": seed, "found": found, "property": "durable" if found else None,
            "examples": 3 if found else None, "seconds": seconds, "witness": "w" if found else None}  # fmt: skip


def test_a_mutant_meets_the_time_to_catch_goal_only_when_caught_on_every_seed_in_time():
    rows = [_cell("fast", 0, 2.0), _cell("fast", 1, 9.0), _cell("fast", 2, 59.0),
            _cell("slow-median", 0, 11.0), _cell("slow-median", 1, 12.0), _cell("slow-median", 2, 1.0),
            _cell("one-late", 0, 1.0), _cell("one-late", 1, 1.0), _cell("one-late", 2, 61.0),
            _cell("one-missed", 0, 1.0), _cell("one-missed", 1, None), _cell("one-missed", 2, 1.0)]  # fmt: skip
    meets = {s["mutant"]: time_to_catch.meets_goal(s, 3) for s in time_to_catch.summarise(rows, 3, 60)}
    assert meets == {"fast": True, "slow-median": False, "one-late": False, "one-missed": False}
    r = {"seeds": 3, "budget": 60, "mutants": 4, "meeting": sum(meets.values()), "control_found": "0/3"}
    (row,) = goals.time_to_catch_figures(r)
    assert (row.median, row.goal, row.met) == (1, "4/4", False)


def test_a_ratio_below_its_goal_is_not_met_and_one_at_it_is():
    machines = {"toy": {"over_toy": 1.0, "steps_per_s": 10_000, "rules_share": 0.01},
                "log machine": {"over_toy": 0.5, "steps_per_s": 5_000, "rules_share": 0.7},
                "crash machine": {"over_toy": 0.2, "steps_per_s": 2_000, "rules_share": 0.8}}  # fmt: skip
    met = {f.name.split(" steps")[0]: f.met for f in goals.stateful_figures({"machines": machines})}
    assert met == {"log machine": True, "crash machine": False}


def test_a_section_that_cannot_run_is_named_and_the_run_fails(monkeypatch, capsys):
    def no_java(quick):
        raise SystemExit("benchmarks.vs_kafka: 'java' is not on PATH")

    monkeypatch.setattr(goals, "run_recover", no_java)
    code = goals.main(["--quick", "--skip", "load", "kafka-target", "time-to-catch"])
    out = capsys.readouterr().out
    assert code == 1
    assert "NOT MEASURED: recover: SystemExit: benchmarks.vs_kafka: 'java' is not on PATH" in out
    assert "log machine steps/s / a toy machine's" in out  # the other sections still ran


@pytest.mark.slow
def test_every_section_runs_small(tmp_path, capsys):
    out = tmp_path / "goals.json"
    assert goals.main(["--quick", "--jobs", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["results"]) == set(goals.SECTIONS) and not result["not_measured"]
    names = [r["name"] for r in result["rows"]]
    assert sum("LogSegment.recover" in n for n in names) == len(goals.RECOVER_SHAPES)
    assert sum("Kafka's own load" in n for n in names) == 2
    assert all(r["median"] is not None for r in result["rows"])
