"""``klc campaign`` end to end on Spark local[2] (conformance/campaign): a small campaign against a
mutant finds it, dedupes it to one signature and writes a corpus entry that ``klc replay``, the
corpus test and the example-database view all reproduce; the same campaign against impl finds
nothing; rerunning skips finished seeds; bad arguments, no Java and an unreachable master get one
clear line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conformance import faults
from conformance.campaign import table
from conformance.campaign.driver import CampaignConfig, CampaignError, check_config, java_problem, run_campaign
from conformance.campaign.tasks import Task, run_task, signature
from conformance.cli import main
from conformance.scenario import Scenario
from tests.test_campaign_finds import check_entry, replay_from_database

MUTANT = "recovery-starts-after-rp-segment"
needs_java = pytest.mark.skipif(java_problem() is not None, reason=f"no Java runtime for Spark: {java_problem()}")


def _campaign(out, corpus_dir, target, scenarios=20):
    """A small campaign; its shrink bounded at 3 s a half (the default 120 s shrank this mutant's
    failure for 26 s: the gate's longest wait; the bound and what it keeps are what is tested here)."""
    config = CampaignConfig(
        out=str(out), scenarios=scenarios, master="local[2]", target=target, corpus_dir=str(corpus_dir),
        examples_per_task=10, steps=30, reproduce_attempts=2, shrink_seconds=3,
    )  # fmt: skip
    return run_campaign(config)


@needs_java
def test_a_campaign_against_a_mutant_finds_it_once_resumes_and_replays(tmp_path, monkeypatch):
    """Two campaigns against the mutant (the second resumes the first's results) and what they
    leave, judged in one test: each campaign is a Spark job of about 20 s, which pytest-xdist
    would otherwise run again on every worker that takes a test needing it."""
    out = tmp_path
    first = _campaign(out, out / "found", f"mutant:{MUTANT}")
    again = _campaign(out, out / "found", f"mutant:{MUTANT}")
    _the_mutant_is_found_once(out, first)
    _rerunning_skips_finished_seeds_and_known_signatures(first, again)
    _the_corpus_entry_replays_with_klc_replay_and_pytest(first)
    _pytest_replays_the_failures_from_the_example_database_view(out, first)
    _the_command_exits_1_for_a_new_signature_and_0_once_it_is_known(monkeypatch, first, again)


def _the_mutant_is_found_once(out, first):
    assert len(first.rows) == 2 and first.parallelism == 2
    assert any(r["status"] == "fail" for r in first.rows), "the mutant was not found"
    assert all(r["status"] in ("pass", "fail") for r in first.rows), [r["error"] for r in first.rows if r["error"]]
    assert len(first.findings) == 1, [f["signature"] for f in first.findings]
    finding = first.findings[0]
    assert not finding["flaky"] and finding["reproduced"] == finding["attempts"] == 2
    entries = os.listdir(out / "found")
    assert entries == [f"mutant-{MUTANT}--{finding['signature']}"]
    with open(os.path.join(finding["corpus_path"], "expected.json")) as f:
        expected = json.load(f)
    assert expected["verdicts"] == {f"mutant:{MUTANT}": f"fail: {finding['property']}", "impl": "pass"}
    # the table holds every task, with its rates, branches and (for failures) the example to replay
    rows = table.read(str(out / "results"))
    assert {r["seed"] for r in rows} == set(range(4))
    assert all(r["branches"] for r in rows if r["status"] == "pass")
    html = (out / "report.html").read_text()
    assert finding["signature"] in html


def _rerunning_skips_finished_seeds_and_known_signatures(first, again):
    assert again.skipped == 2
    assert {r["seed"] for r in again.rows} == {2, 3}
    assert {r["seed"] for r in first.rows} == {0, 1}
    assert again.findings == [], "a signature already in the corpus is not written again"


def _the_corpus_entry_replays_with_klc_replay_and_pytest(first):
    entry = first.findings[0]["corpus_path"]
    scenario = os.path.join(entry, "scenario.json")
    runner = CliRunner()
    failing = runner.invoke(main, ["replay", scenario, "--mutant", MUTANT])
    assert failing.exit_code == 1 and "FAIL" in failing.output, failing.output
    passing = runner.invoke(main, ["replay", scenario])
    assert passing.exit_code == 0 and "PASS" in passing.output, passing.output
    with open(os.path.join(entry, "expected.json")) as f:
        check_entry(Scenario.load(scenario), json.load(f))


def _pytest_replays_the_failures_from_the_example_database_view(out, first):
    failed = [r for r in first.rows if r["status"] == "fail"]
    assert failed and all(r["db_key"] and r["choices"] for r in failed)
    for row in failed:
        violation = replay_from_database(str(out / "results"), row)
        assert violation is not None and violation.prop == row["property"]
    # and with the variable set, the pytest file itself collects and runs them
    env = os.environ | {"KLC_CAMPAIGN_RESULTS": str(out / "results")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_campaign_finds.py", "-k", "database"],
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), env=env, capture_output=True, text=True,
    )  # fmt: skip
    in_table = [r for r in table.read(str(out / "results")) if r["status"] == "fail"]  # both runs
    assert proc.returncode == 0 and f"{len(in_table)} passed" in proc.stdout, proc.stdout[-2000:]


@needs_java
def test_the_same_campaign_against_impl_finds_nothing(tmp_path):
    result = _campaign(tmp_path, tmp_path / "found", "impl")
    assert len(result.rows) == 2
    assert [r for r in result.rows if r["status"] != "pass"] == []
    assert result.findings == [] and not (tmp_path / "found").exists()


def test_a_task_is_addressed_by_its_seed():
    """Same task, same cases: the row (but its timings) is a function of the task."""
    a = run_task(Task("c", 3, "power-loss", f"mutant:{MUTANT}", examples=5, steps=20))
    b = run_task(Task("c", 3, "power-loss", f"mutant:{MUTANT}", examples=5, steps=20))
    for k in ("status", "signature", "steps", "scenarios", "fault_kinds", "max_crashes", "branches", "choices"):
        assert a[k] == b[k], k
    assert set(a["fault_kinds"]) <= {"process", "prefix", "reorder", "torn", "size_ahead", "metadata"}


def test_signature_ignores_particulars_but_not_the_property_or_place():
    frames = ("conformance.properties.crash_recovery.judge",)
    assert signature("durable", "offset 42 missing in d0/t-0/0.log", frames) == signature(
        "durable", "offset 7 missing in d1/x-3/9.log", frames
    )
    assert signature("durable", "offset 42 missing", frames) != signature("prefix", "offset 42 missing", frames)
    assert signature("durable", "offset 42 missing", frames) != signature("durable", "offset 42 missing", ())


def test_signature_tells_the_state_a_difference_lies_in():
    """Two idempotent-recovery findings, one in a log's segments and one in its epoch cache, are two
    signatures; a same-kind difference elsewhere in the same state has one."""
    frames = ("conformance.properties.crash_recovery.judge",)
    lead = "idempotent-recovery violated at step 5: model: after a crash during recovery, "
    tail = " (uninterrupted recovery first, then this one)"
    segments = signature("idempotent-recovery", lead + "/d0/legacy-0/segments: [[0, 56, 'b1']] != []" + tail, frames)
    epochs = signature("idempotent-recovery", lead + "/d0/orders-1/epochs: [] != [[2, 7]]" + tail, frames)
    other = signature("idempotent-recovery", lead + "/d1/t-3/segments[2][1]: 68 != 0" + tail, frames)
    assert segments != epochs
    assert segments == other


@pytest.mark.parametrize(
    "args,message",
    [
        (["--scenarios", "0"], "--scenarios must be at least 1"),
        (["--scenarios", "5", "--budget-minutes", "1"], "not both"),
        (["--target", "nonsense"], "unknown target 'nonsense'"),
        (["--target", "mutant:no-such-mutant"], "unknown mutant 'no-such-mutant'"),
        (["--profile", "gentle"], "unknown fault profile 'gentle'"),
        (["--shrink-seconds", "0"], "--shrink-seconds must be positive, got 0"),
        (["--shrink-seconds", "nan"], "--shrink-seconds must be positive, got nan"),
        (["--master", "http://x"], "is not a Spark master URL"),
        (["--master", "spark://127.0.0.1:9"], "unreachable"),
    ],
)
def test_bad_arguments_get_one_clear_line(tmp_path, args, message):
    result = CliRunner().invoke(main, ["campaign", "--out", str(tmp_path / "o"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_no_java_runtime_is_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert "Java runtime" in java_problem()
    result = CliRunner().invoke(main, ["campaign", "--scenarios", "1", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "JAVA_HOME" in result.output and "Traceback" not in result.output


def test_a_results_folder_with_foreign_files_is_refused(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "x.parquet").write_bytes(b"not parquet")
    with pytest.raises(CampaignError, match="x.parquet"):
        run_campaign(CampaignConfig(out=str(tmp_path), scenarios=1, executor="processes"))
    with pytest.raises(CampaignError):
        check_config(CampaignConfig(out=str(tmp_path / "results" / "x.parquet")))


def _the_command_exits_1_for_a_new_signature_and_0_once_it_is_known(monkeypatch, first, again):
    """``klc campaign``'s exit status on these two campaigns' results (the whole command on the
    process pool: the nightly's test below)."""
    from conformance.campaign import driver

    for result, status in ((first, 1), (again, 0)):
        monkeypatch.setattr(driver, "run_campaign", lambda config, ui=None, result=result: result)
        ran = CliRunner().invoke(main, ["campaign", "--target", f"mutant:{MUTANT}", "--json"])
        assert ran.exit_code == status, ran.output
        assert len(json.loads(ran.output)["findings"]) == len(result.findings)


def _cli_campaign(out, corpus, scenarios: int):
    """``klc campaign`` on the process-pool executor (the same tasks without Spark), 5 examples a seed."""
    args = [
        "campaign", "--scenarios", str(scenarios), "--examples-per-task", "5", "--steps", "30", "--reproduce", "1",
        "--target", f"mutant:{MUTANT}", "--executor", "processes", "--out", str(out), "--corpus", str(corpus), "--json",
    ]  # fmt: skip
    return CliRunner().invoke(main, args)


@pytest.mark.slow  # two campaigns on the process pool under coverage: about a minute of the gate
def test_exit_status_is_1_for_a_new_signature_and_0_once_it_is_known(tmp_path):
    first = _cli_campaign(tmp_path / "o", tmp_path / "found", scenarios=5)
    assert first.exit_code == 1, first.output
    summary = json.loads(first.output)
    assert summary["failed_tasks"] == 1 and len(summary["findings"]) == 1
    # resumed: the seed is in the results already, nothing new runs
    again = _cli_campaign(tmp_path / "o", tmp_path / "found", scenarios=5)
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["skipped_seeds"] == 1 and json.loads(again.output)["findings"] == []


@pytest.mark.slow  # two campaigns on the process pool under coverage, as above
def test_a_fresh_run_beside_the_corpus_finds_nothing_new(tmp_path):
    """Run again from scratch (a new results folder) beside the same corpus: the same seeds fail
    with the signatures the corpus knows now, so nothing is new.  (Not two more seeds: other seeds
    may catch the mutant another way, a new signature.)"""
    first = _cli_campaign(tmp_path / "o", tmp_path / "found", scenarios=10)
    assert first.exit_code == 1, first.output
    fresh = _cli_campaign(tmp_path / "o2", tmp_path / "found", scenarios=10)
    assert fresh.exit_code == 0, fresh.output
    summary = json.loads(fresh.output)
    assert summary["failed_tasks"] >= 1 and summary["skipped_seeds"] == 0 and summary["findings"] == []


# --- a harness error in a task: recorded with its cause, never a finding ------------------------------


@pytest.fixture
def jvm_killed_once(monkeypatch):
    """The kafka target's JVM killed by PID (SIGKILL) as the first step after the broker's start is
    sent to it, once: the example that hit it fails with a harness error, Hypothesis's replay of it
    passes."""
    from conformance.targets import kafka_jvm

    request, killed = kafka_jvm.Jvm.request, []
    around_steps = ("hello", "configure", "open", "state", "index_entries", "halt")

    def request_then_die(self, message, *args):
        if message["op"] not in around_steps and not killed:
            os.kill(self.process.pid, 9)
            self.process.wait()
            killed.append(message["op"])
        return request(self, message, *args)

    monkeypatch.setattr(kafka_jvm.Jvm, "request", request_then_die)
    return killed


def test_a_task_whose_jvm_dies_is_a_harness_error_row_not_a_failure(jvm_killed_once):
    row = run_task(Task("c", 0, "power-loss", "kafka", examples=2, steps=8))
    assert jvm_killed_once == ["create"]
    assert row["status"] == "error" and row["property"] is None, row
    assert row["witness"].startswith("harness error: kafka target: the JVM has exited (killed by SIGKILL)"), row
    assert row["signature"].startswith("error-") and "KafkaTargetError" in row["error"], row


def test_a_campaign_shows_a_harness_error_with_its_cause_and_exits_2(tmp_path, jvm_killed_once):
    """On the process pool (forked: the dying JVM goes with it): no finding, one console line."""
    args = ["campaign", "--scenarios", "2", "--examples-per-task", "2", "--steps", "8", "--profile", "power-loss",
            "--target", "kafka", "--executor", "processes", "--out", str(tmp_path / "o"),
            "--corpus", str(tmp_path / "found")]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    (line,) = [s for s in result.output.splitlines() if "HARNESS ERROR" in s]
    assert "in 1 task(s), seed(s) 0: harness error: kafka target: the JVM has exited (killed by SIGKILL)" in line, line
    assert "NEW " not in result.output and not (tmp_path / "found").exists()
    (row,) = table.read(str(tmp_path / "o" / "results"))
    assert row["status"] == "error"


# --- shrinking: bounded, and the console hears of each scenario's end ---------------------------------


def test_shrinking_is_bounded(monkeypatch):
    """Hypothesis's shrinker runs under SHRINK_SECONDS, and whole-step deletion stops at its bound."""
    from hypothesis.internal.conjecture import engine

    from conformance.campaign import tasks

    seen = []

    def fake_run(task, shrinking, want=None):
        seen.append(engine.MAX_SHRINKING_SECONDS)
        return {}, None, None

    monkeypatch.setattr(tasks, "_run", fake_run)
    monkeypatch.setattr(tasks, "replay_signature", lambda scenario, target: ("sig", None))
    row = {"commit": "c", "seed": 0, "profile": "all", "target": "impl", "examples": 1, "max_steps": 5,
           "status": "fail", "property": "durable", "witness": "w", "signature": "sig",
           "steps": Scenario(steps=(faults.Crash(), faults.Crash())).dumps()}  # fmt: skip
    before = engine.MAX_SHRINKING_SECONDS
    tasks.shrink(row)
    tasks.shrink(row, seconds=3)  # --shrink-seconds
    assert seen == [tasks.SHRINK_SECONDS, 3] and engine.MAX_SHRINKING_SECONDS == before
    calls = []
    monkeypatch.setattr(tasks, "replay_signature", lambda scenario, target: calls.append(1) or ("sig", None))
    scenario = Scenario(steps=tuple(faults.Crash() for _ in range(6)))
    assert tasks.drop_steps(scenario, "impl", "sig", seconds=0) == scenario and calls == []
    assert len(tasks.drop_steps(scenario, "impl", "sig").steps) == 1 and calls


def test_the_shrink_bound_s_stated_default_is_the_one_used():
    from conformance.campaign import tasks

    help_text = CliRunner().invoke(main, ["campaign", "--help"], terminal_width=400).output
    assert f"[default: {tasks.SHRINK_SECONDS:g}]" in " ".join(help_text.split())
    assert CampaignConfig().shrink_seconds == tasks.SHRINK_SECONDS


def test_each_shrunk_scenario_is_said_on_the_console():
    from conformance.campaign.driver import _shrink_progress

    lines = []
    ui = type("Ui", (), {"note": lambda self, text: lines.append(text)})()
    progress = _shrink_progress(ui, 3)
    for done in (0, 0, 1, 1, 3):
        progress(done)
    assert [line.split(" done")[0] for line in lines] == ["shrink: 1/3", "shrink: 3/3"]


# --- on a kafka target a task captures Kafka's own I/O, so its power losses may be cut from it ------


def test_a_kafka_task_captures_kafkas_own_io():
    from conformance.campaign.tasks import machine_for

    on_kafka = machine_for(Task("c", 0, "power-loss", "kafka:2.8.2", examples=2, steps=8))
    on_impl = machine_for(Task("c", 0, "power-loss", "impl", examples=2, steps=8))
    assert on_kafka.capture_kafka_io and not on_impl.capture_kafka_io
    assert on_kafka.__name__.endswith("_io") and on_kafka.__name__ != on_impl.__name__  # database keys differ


@pytest.mark.slow
@pytest.mark.no_cover
def test_a_kafka_task_runs_its_scenarios_with_the_capture_on():
    row = run_task(Task("c", 1, "power-loss", "kafka", examples=4, steps=12))
    assert row["status"] == "pass" and row["scenarios"] == 4, row["error"]


def test_a_find_on_kafkas_own_journal_is_written_with_impl_unsupported(tmp_path, monkeypatch):
    """A campaign find whose crash is cut from Kafka's own journal is replayed on impl for its
    corpus entry: impl cannot run that step, and the entry says so (it had ended the campaign with
    a traceback at its last stage, 2026-11-29)."""
    from conformance.campaign import corpus

    scenario = Scenario.load("corpora/kafka-findings/truncate-interrupted-leaves-a-hole/scenario.json")
    finding = {
        "signature": "prefix-0000000000", "target": "kafka", "property": "prefix", "witness": "w",
        "steps": scenario.dumps(), "commit": "c", "seed": 19, "profile": "all", "run_id": "r",
        "flaky": False, "reproduced": 3, "attempts": 3,
    }  # fmt: skip
    original = corpus.verdict_on  # Kafka's verdict as the campaign found it; impl's replayed for real
    monkeypatch.setattr(corpus, "verdict_on", lambda s, t: "fail: prefix" if t == "kafka" else original(s, t))
    entry = corpus.write_entry(str(tmp_path), finding)
    with open(os.path.join(entry, "expected.json")) as f:
        verdicts = json.load(f)["verdicts"]
    assert verdicts["kafka"] == "fail: prefix"
    assert verdicts["impl"] == "unsupported"
