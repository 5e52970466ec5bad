"""``klc check``: the conformance gate as a command — every corpus case (conformance/regressions.py:
log/, crash/, the historical-bug folders, kafka-findings/, found/) on impl with both storage
backends, then the state machines (log, crash, index, file-records) for the time budget, counted
from the end of the corpora, each machine at least one round; a per-property summary and the
cases each machine ran.  A violation anywhere fails the gate, except the recorded failure of a
``found/`` entry whose bug is still open and the recorded finding of a Kafka bug (both listed as
known); so does a machine that ran no case (nothing judged is not a pass)."""

from __future__ import annotations

import time

import attrs
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import impl.file_records
import impl.index
from conformance import regressions, verdicts
from conformance.crash_machine import make_crash_machine
from conformance.file_records_machine import make_file_records_machine
from conformance.index_machine import make_index_machine
from conformance.log_machine import make_log_machine
from conformance.properties import PropertyViolation


@attrs.define
class GateReport:
    corpus_cases: int = 0
    machine_cases: dict = attrs.Factory(dict)
    violations: list[str] = attrs.Factory(list)
    known: list[str] = attrs.Factory(list)  # open found/ entries and Kafka's own bugs, as recorded
    checked: dict = attrs.Factory(dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict:
        return attrs.asdict(self) | {"ok": self.ok}


def _machines():
    return {
        "log machine (impl on the simulated backend)": make_log_machine("sim"),
        "log machine (impl on real files)": make_log_machine("os"),
        "crash machine (impl on the simulated backend)": make_crash_machine("sim"),
        "index machine": make_index_machine(impl.index),
        "file-records machine": make_file_records_machine(impl.file_records),
    }


ROUND = 10  # examples per machine per round


def _counted(machine, counts: dict, name: str):
    """``machine`` counting the cases it ran (its teardown runs once per case)."""

    class Counted(machine):
        def teardown(self):
            counts[name] = counts.get(name, 0) + 1
            super().teardown()

    Counted.__name__ = Counted.__qualname__ = machine.__name__
    return Counted


def _run_machines(report: GateReport, budget_seconds: float, progress, derandomize: bool = False) -> None:
    """Rounds of every machine until the budget, counted from here, is spent; the first round
    always runs, so every machine runs at least one case (or the gate says it did not).  The gate
    draws afresh each time; ``derandomize`` makes the draws fixed (a test of the rounds)."""
    machines = {name: _counted(m, report.machine_cases, name) for name, m in _machines().items()}
    start = last_report = time.monotonic()
    first = True
    while (first or time.monotonic() - start < budget_seconds) and not report.violations:
        for name, machine in machines.items():
            if not first and time.monotonic() - start >= budget_seconds:
                break
            try:
                run_state_machine_as_test(machine, settings=_round_settings(derandomize))
            except PropertyViolation as e:
                report.violations.append(f"{name}: {e}")
            except Exception as e:  # noqa: BLE001 — the gate reports any failure
                report.violations.append(f"{name}: {type(e).__name__}: {e}")
        first = False
        if time.monotonic() - last_report >= 10:
            last_report = time.monotonic()
            progress(f"state machines: {sum(report.machine_cases.values())} cases in {last_report - start:.0f} s")
    idle = [n for n in machines if not report.machine_cases.get(n)]
    report.violations += [f"{n}: ran no case, so judged nothing (not a pass)" for n in idle if not report.violations]


def _round_settings(derandomize: bool = False) -> settings:
    return settings(
        max_examples=ROUND, database=None, deadline=None, derandomize=derandomize, stateful_step_count=30,
        phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck),
    )  # fmt: skip


def run_gate(budget_seconds: float = 60.0, progress=lambda line: None) -> GateReport:
    start = time.monotonic()
    report = GateReport()
    before = verdicts.TOTALS.copy()
    for case in regressions.cases():
        for backend in ("sim", "os"):
            violation = regressions.replay(case, "impl", backend)
            report.corpus_cases += 1
            if violation is None:
                continue
            line = f"corpora/{case.name} ({backend}): {violation}"
            expected = regressions.verdict_of(violation) == case.verdicts.get("impl")
            if expected and (case.status == "open" or case.group == regressions.KAFKA_FINDINGS):
                report.known.append(line)
            else:
                report.violations.append(line)
    progress(
        f"corpora: {report.corpus_cases} replays, {len(report.violations)} violations, "
        f"{len(report.known)} known open bugs"
    )
    if budget_seconds > 0:
        _run_machines(report, budget_seconds, progress)
    else:
        progress("state machines: not run (--budget-seconds 0)")
    report.checked = dict(verdicts.TOTALS - before)
    report.seconds = round(time.monotonic() - start, 1)
    return report
