"""``klc check`` must not pass what it did not run (conformance/gate.py)."""

from __future__ import annotations

from conformance import gate


def test_every_machine_runs_at_least_one_round_whatever_the_budget():
    report = gate.GateReport()  # fixed draws: this checks the rounds; the machines' tests search
    gate._run_machines(report, 0.001, progress=lambda line: None, derandomize=True)
    assert report.ok, report.violations
    assert set(report.machine_cases) == set(gate._machines())
    assert all(n >= 1 for n in report.machine_cases.values()), report.machine_cases


def test_a_machine_that_ran_no_case_fails_the_gate(monkeypatch):
    monkeypatch.setattr(gate, "run_state_machine_as_test", lambda machine, settings: None)
    report = gate.GateReport()
    gate._run_machines(report, 0.001, progress=lambda line: None)
    assert not report.ok
    assert len(report.violations) == len(gate._machines())
    assert all("ran no case, so judged nothing (not a pass)" in v for v in report.violations)


def test_the_budget_is_the_whole_runs_time(monkeypatch):
    """``--budget-seconds`` counts the corpora too: the machines get what the corpora left."""
    import time

    replay = gate.regressions.replay

    def slow_replay(case, target, backend="sim"):
        time.sleep(0.5)
        return replay(case, target, backend)

    given = []
    monkeypatch.setattr(gate.regressions, "replay", slow_replay)
    monkeypatch.setattr(gate, "_run_machines", lambda report, budget, progress, target: given.append(budget))
    case = gate.regressions.cases()[0].path
    gate.run_gate(budget_seconds=10, only=(case,))
    assert len(given) == 1 and given[0] <= 10 - 2 * 0.5  # two replays: the simulated and the real files
