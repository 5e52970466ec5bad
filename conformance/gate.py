"""``klc check``: the conformance gate as a command — every corpus case (conformance/regressions.py:
log/, crash/, the historical-bug folders, kafka-findings/, found/) on impl with both storage
backends, then the state machines (log, crash, index, file-records) until the time budget, counted
from the start of the run, is spent, each machine at least one round however long the corpora took; a per-property summary and the
cases each machine ran.  A violation anywhere fails the gate, except the recorded failure of a
``found/`` entry whose bug is still open and the recorded finding of a Kafka bug (both listed as
known); so does a machine that ran no case (nothing judged is not a pass).

On a kafka target (``klc gate``, ``klc check --target kafka``: docs/gate.md) the gate judges a Kafka
build instead of impl: every corpus case that records a verdict for that target is replayed on it
and must get that verdict (a recorded ``unsupported``, known finding or failure is expected and
listed as known, anything else is unexpected), then the crash machine runs model against Kafka for
the budget.  A harness error (the build refused, the JVM dead) stops the gate: nothing after it was
judged.  :func:`junit_xml` writes the report for CI systems."""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET

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
from conformance.targets.kafka_jvm import KafkaTargetError


@attrs.define
class GateReport:
    corpus_cases: int = 0
    machine_cases: dict = attrs.Factory(dict)
    violations: list[str] = attrs.Factory(list)
    known: list[str] = attrs.Factory(list)  # open found/ entries and Kafka's own bugs, as recorded
    checked: dict = attrs.Factory(dict)
    seconds: float = 0.0
    target: str = "impl"
    kafka_build: dict | None = None  # what a kafka target judged (kafka_build.KafkaBuild.to_json)
    replays: list[dict] = attrs.Factory(list)  # per corpus replay: case, verdict, recorded, outcome, ...
    unrecorded: int = 0  # corpus cases that record no verdict for a kafka target: not run on it
    harness_error: str | None = None  # what stopped the gate before it judged everything

    @property
    def ok(self) -> bool:
        return not self.violations and self.harness_error is None

    def to_json(self) -> dict:
        return attrs.asdict(self) | {"ok": self.ok}


def _machines(target: str = "impl"):
    if target.startswith("kafka"):
        return {f"crash machine (model vs {target})": make_crash_machine("sim", ("model", target))}
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


def _run_machines(
    report: GateReport, budget_seconds: float, progress, derandomize: bool = False, target: str = "impl"
) -> None:
    """Rounds of every machine until the budget, counted from here, is spent; the first round
    always runs, so every machine runs at least one case (or the gate says it did not).  The gate
    draws afresh each time; ``derandomize`` makes the draws fixed (a test of the rounds)."""
    machines = {name: _counted(m, report.machine_cases, name) for name, m in _machines(target).items()}
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
            except KafkaTargetError:
                raise  # a harness error, never a violation
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


def run_gate(
    budget_seconds: float = 60.0, progress=lambda line: None, target: str = "impl", only: tuple[str, ...] = ()
) -> GateReport:
    """The gate on impl (both storage backends), or on a kafka target (``kafka``, ``kafka:VERSION``;
    the user's build when ``KLC_KAFKA_CLASSPATH`` names one).  ``only``: these corpus cases' files
    instead of every case (:func:`chosen`)."""
    start = time.monotonic()
    report = GateReport(target=target)
    before = verdicts.TOTALS.copy()
    try:
        cases = chosen(only)
        if target.startswith("kafka"):
            _kafka_corpus(report, target, progress, cases)
        else:
            _impl_corpus(report, progress, cases)
        progress(
            f"corpora: {report.corpus_cases} replays, {len(report.violations)} violations, "
            f"{len(report.known)} known open bugs"
        )
        if budget_seconds > 0:  # the budget is the whole run's: the machines get what the corpora left
            _run_machines(report, budget_seconds - (time.monotonic() - start), progress, target=target)
        else:
            progress("state machines: not run (--budget-seconds 0)")
    except KafkaTargetError as e:
        report.harness_error = str(e)
    report.checked = dict(verdicts.TOTALS - before)
    report.seconds = round(time.monotonic() - start, 1)
    return report


def chosen(paths: tuple[str, ...]) -> list:
    """Every corpus case, or the cases of ``paths`` (ValueError naming a file that is not one)."""
    cases = regressions.cases()
    if not paths:
        return cases
    by_path = {os.path.realpath(c.path): c for c in cases}
    for p in paths:
        if os.path.realpath(p) not in by_path:
            raise ValueError(f"{p}: not a case of the corpus (corpora/)")
    return [by_path[os.path.realpath(p)] for p in dict.fromkeys(paths)]


def _impl_corpus(report: GateReport, progress, cases) -> None:
    ticker = _Ticker(progress, len(cases))
    for case in cases:
        for backend in ("sim", "os"):
            began = time.monotonic()
            violation = regressions.replay(case, "impl", backend)
            report.corpus_cases += 1
            verdict = regressions.verdict_of(violation)
            expected = verdict == case.verdicts.get("impl")
            # as recorded: an open found/ bug, a Kafka bug, or a step impl cannot run (a crash cut
            # from Kafka's own journal), listed as known; any other failure is a violation
            known = expected and (
                case.status == "open" or case.group == regressions.KAFKA_FINDINGS or verdict == "unsupported"
            )
            _record(report, case, f"impl/{backend}", violation, "impl" if violation is None or known else None, began)
            if violation is None:
                continue
            line = f"corpora/{case.name} ({backend}): {violation}"
            (report.known if known else report.violations).append(line)
        ticker.tick()


def _kafka_corpus(report: GateReport, target: str, progress, cases) -> None:
    """Every case that records a verdict for ``target``, replayed on it: the recorded verdict is
    expected (a non-pass one listed as known), any other is a violation."""
    judged = [c for c in cases if target in c.verdicts]
    report.unrecorded = len(cases) - len(judged)
    ticker = _Ticker(progress, len(judged))
    for case in judged:
        began = time.monotonic()
        violation = regressions.replay(case, target)
        report.corpus_cases += 1
        verdict, recorded = regressions.verdict_of(violation), case.verdicts[target]
        _record(report, case, target, violation, target if verdict == recorded else None, began)
        if verdict != recorded:
            why = "" if violation is None else f": {violation}"
            report.violations.append(f"corpora/{case.name} on {target}: {verdict}, recorded {recorded}{why}")
        elif violation is not None:
            report.known.append(f"corpora/{case.name} on {target}: {violation}")
        ticker.tick()


def _record(report: GateReport, case, where: str, violation, expected_on, began: float) -> None:
    verdict = regressions.verdict_of(violation)
    report.replays.append({
        "case": case.name, "path": case.path, "on": where, "verdict": verdict,
        "recorded": case.verdicts.get(where.split("/")[0]),
        "outcome": "pass" if violation is None else "expected" if expected_on else "unexpected",
        "witness": None if violation is None else str(violation), "seconds": round(time.monotonic() - began, 3),
    })  # fmt: skip


class _Ticker:
    """A progress line about every 10 s while the corpus replays."""

    def __init__(self, progress, total: int):
        self.progress, self.total, self.done, self.last = progress, total, 0, time.monotonic()

    def tick(self) -> None:
        self.done += 1
        if time.monotonic() - self.last >= 10:
            self.last = time.monotonic()
            self.progress(f"corpora: {self.done}/{self.total} cases")


def junit_xml(report: GateReport, replay_command: str = "klc replay") -> str:
    """The report as JUnit XML: one testcase per corpus replay (failure: unexpected verdict, with
    the command that reproduces it; skipped: a recorded non-pass verdict) and per state machine."""
    suite = ET.Element("testsuite", name=f"klc gate on {report.target}", time=str(report.seconds))
    props = ET.SubElement(suite, "properties")
    for key, value in sorted((report.kafka_build or {}).items()):
        ET.SubElement(props, "property", name=f"kafka.{key}", value=str(value))
    failures = skipped = errors = 0
    for r in report.replays:
        case = ET.SubElement(suite, "testcase", classname=f"corpora.{r['on']}", name=r["case"], time=str(r["seconds"]))
        if r["outcome"] == "unexpected":
            failures += 1
            fail = ET.SubElement(case, "failure", message=f"{r['verdict']}, recorded {r['recorded']}")
            fail.text = f"{r['witness'] or ''}\nreproduce: {replay_command} {r['path']}"
        elif r["outcome"] == "expected":
            skipped += 1
            ET.SubElement(case, "skipped", message=f"as recorded: {r['verdict']}")
    machine_lines = [v for v in report.violations if not v.startswith("corpora/")]
    for name, n in report.machine_cases.items():
        case = ET.SubElement(suite, "testcase", classname="machines", name=name, time="0")
        ET.SubElement(case, "system-out").text = f"{n} cases"
        for line in [v for v in machine_lines if v.startswith(name)]:
            failures += 1
            ET.SubElement(case, "failure", message=line.split("\n")[0][:500]).text = line
    if report.harness_error:
        errors += 1
        case = ET.SubElement(suite, "testcase", classname="harness", name="harness")
        ET.SubElement(case, "error", message=report.harness_error)
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", str(errors))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
