"""``klc campaign`` on a cluster (conformance/campaign/driver.py): a campaign on a Spark standalone
master that loses its worker mid-run still finishes, with every task's row and a report; a task that
fails every attempt ends the campaign with one line; a killed driver resumes from the results table;
``--conf``, the yarn and k8s master checks, the throughput figure, the shipped code's cleanup and the
temp files of a campaign and a replay."""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
from click.testing import CliRunner

from conformance.campaign import table
from conformance.campaign.driver import (
    CampaignAborted,
    CampaignConfig,
    CampaignError,
    _ship_code,
    _Spark,
    check_config,
    java_problem,
    master_problem,
    parse_conf,
    run_campaign,
)
from conformance.campaign.tasks import Task, counts_as_scenario, run_task
from conformance.cli import main
from tests.standalone import Standalone

REPO = Path(__file__).resolve().parent.parent
needs_java = pytest.mark.skipif(java_problem() is not None, reason=f"no Java runtime for Spark: {java_problem()}")


def _klc(*args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    """``klc`` from this checkout, in a process group of its own."""
    cmd = [sys.executable, "-c", "from conformance.cli import main; main()", *args]
    env = (env or os.environ) | {"PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw
    )


def _wait_for_rows(out: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not glob.glob(str(out / "results" / "*.parquet")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no wave finished"
        time.sleep(0.2)


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``pid``."""
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                with open(stat.replace("/stat", "/cmdline"), "rb") as f:
                    out.append((int(stat.split("/")[2]), f.read().replace(b"\0", b" ").decode()))
        except (OSError, IndexError, ValueError):
            continue
    return out


# --- a campaign that loses its worker --------------------------------------------------------------


# the nightly's: a minute of a standalone cluster for Spark's own recovery (issue #35's tiers)
@needs_java
@pytest.mark.cluster
@pytest.mark.slow
def test_a_campaign_survives_losing_its_worker(tmp_path):
    """The worker's executor dies first (as the OOM killer or a crash would kill it: Spark counts
    that against the tasks it ran, so with ``spark.task.maxFailures=1`` this aborted the campaign),
    then the worker with everything it started; a new worker joins and the campaign finishes:
    every task's row once, a report, the run record showing the retries, no temp file left."""
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    jtmp = tmp_path / "jtmp"
    jtmp.mkdir()
    out = tmp_path / "out"
    with Standalone(tmp_path / "cluster") as cluster:
        worker = cluster.add_worker(cores=2)
        klc = _klc(
            "campaign", "--master", cluster.url, "--scenarios", "60", "--examples-per-task", "5", "--steps", "20",
            "--target", "impl", "--out", str(out), "--corpus", str(tmp_path / "found"), "--json",
            "--conf", f"spark.executor.extraJavaOptions=-Djava.io.tmpdir={jtmp}",
            env=os.environ | {"TMPDIR": str(private_tmp)},
        )  # fmt: skip
        try:
            _wait_for_rows(out, klc)
            time.sleep(1)  # the second wave running
            executors = [pid for pid, cmd in _children(worker.pid) if "CoarseGrainedExecutorBackend" in cmd]
            assert executors, _children(worker.pid)
            for pid in executors:
                os.kill(pid, signal.SIGKILL)
            time.sleep(3)  # the worker reports the loss; the master gives it a new executor
            cluster.kill(worker)
            cluster.add_worker(cores=2)
            stdout, stderr = klc.communicate(timeout=240)
        finally:
            if klc.poll() is None:
                os.killpg(klc.pid, signal.SIGKILL)
    assert klc.returncode == 0, stderr[-3000:]
    summary = json.loads(stdout)
    rows = table.read(str(out / "results"))
    assert sorted(r["seed"] for r in rows) == list(range(12))  # 60 scenarios / 5 per task, each once
    assert sum(r["scenarios"] for r in rows) == summary["scenarios"] == 60
    assert all(r["status"] == "pass" for r in rows), [r["witness"] for r in rows if r["status"] != "pass"]
    (run_file,) = (out / "runs").iterdir()
    run = json.loads(run_file.read_text())
    assert run["status"] == "finished" and run["master"] == cluster.url == summary["master"]
    assert run["retried"] >= 1, run["waves"]  # the lost tasks ran again
    assert summary["scenarios_per_s"] == pytest.approx(60 / run["fuzz_s"])
    html = (out / "report.html").read_text()
    assert cluster.url in html and f"{summary['scenarios_per_s']:.2f}" in html
    assert list(private_tmp.iterdir()) == [], "the shipped code (klc-code.zip) or other temp files were left"


# --- failures that must end the campaign ------------------------------------------------------------


@needs_java
def test_a_task_that_fails_every_attempt_ends_the_campaign_with_one_line(tmp_path, monkeypatch):
    """Not a lost executor but an exception outside run_task's own handling: Spark retries it
    (local[2,3]: three attempts, as a cluster's maxFailures would) and aborts; the campaign stops
    with Spark's reason and the exception, and keeps what it wrote."""

    def boom(_task):
        raise RuntimeError("the executors cannot run this task")

    monkeypatch.setattr("conformance.campaign.driver._task_row", boom)
    config = CampaignConfig(out=str(tmp_path), scenarios=4, examples_per_task=2, master="local[2,3]")
    started = time.monotonic()
    with pytest.raises(CampaignAborted) as caught:
        run_campaign(config)
    message = str(caught.value)
    attempts = int(re.search(r"\((\d+) failed task attempt", message).group(1))
    assert "\n" not in message and 3 <= attempts <= 6, message  # two tasks, the first to fail 3 times ends it
    assert "RuntimeError: the executors cannot run this task" in message, message
    assert time.monotonic() - started < 120
    (run_file,) = (tmp_path / "runs").iterdir()
    assert json.loads(run_file.read_text())["status"] == "aborted"
    assert "aborted: did not finish" in (tmp_path / "report.html").read_text()


def test_a_killed_driver_resumes_from_the_results_table(tmp_path):
    """The driver killed after its first wave: rerun, it skips the seeds in the table."""
    args = ["campaign", "--executor", "processes", "--scenarios", "40", "--examples-per-task", "5",
            "--steps", "20", "--out", str(tmp_path / "out"), "--corpus", str(tmp_path / "found"), "--json"]  # fmt: skip
    first = _klc(*args)
    try:
        _wait_for_rows(tmp_path / "out", first)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    done = sorted(r["seed"] for r in table.read(str(tmp_path / "out" / "results")))
    assert done and done == list(range(len(done))) and len(done) < 8
    again = _klc(*args)
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr[-2000:]
    assert json.loads(stdout)["skipped_seeds"] == len(done)
    seeds = sorted(r["seed"] for r in table.read(str(tmp_path / "out" / "results")))
    assert seeds == list(range(len(done) + 8)), "a seed ran twice or was left out"


# --- --conf and the master checks -------------------------------------------------------------------


def test_conf_items_are_spark_properties():
    assert parse_conf(["spark.executor.memory=4g", "spark.executor.extraJavaOptions=-Da=b -Dc=d"]) == {
        "spark.executor.memory": "4g",
        "spark.executor.extraJavaOptions": "-Da=b -Dc=d",
    }
    assert parse_conf(["k=1", "k=2", "e="]) == {"k": "2", "e": ""}


@pytest.mark.parametrize(
    "args,message",
    [
        (["--conf", "spark.executor.memory"], "--conf 'spark.executor.memory': expected KEY=VALUE"),
        (["--conf", "=4g"], "--conf '=4g': expected KEY=VALUE"),
        (["--conf", "a=b", "--executor", "processes"], "--conf is for Spark; --executor processes runs without"),
        (["--master", "local[2]", "--executor", "processes"], "--master is for Spark"),
        (["--master", "yarn"], "neither is set"),
    ],
)
def test_bad_conf_and_yarn_without_its_configuration_get_one_line(tmp_path, monkeypatch, args, message):
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    result = CliRunner().invoke(main, ["campaign", "--scenarios", "1", "--out", str(tmp_path / "o"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "o").exists()


def test_yarn_needs_its_configuration_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path / "missing"))
    assert "HADOOP_CONF_DIR=" in master_problem("yarn") and "not a directory" in master_problem("yarn")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert master_problem("yarn") is None


@needs_java
def test_an_unreachable_kubernetes_api_is_one_line_within_six_seconds(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for url in (f"k8s://https://127.0.0.1:{port}", "k8s://192.0.2.1:6443"):  # refused; TEST-NET: no answer
        started = time.monotonic()
        result = CliRunner().invoke(main, ["campaign", "--master", url, "--out", str(tmp_path / "o")])
        assert time.monotonic() - started < 6.5, url
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "Kubernetes API" in lines[0] and "unreachable" in lines[0], result.output


def test_a_listening_kubernetes_api_passes_the_check():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert master_problem(f"k8s://https://127.0.0.1:{port}") is None
        assert master_problem(f"k8s://127.0.0.1:{port}/some/path") is None
        assert master_problem(f"spark://127.0.0.1:{port}") is None
    assert "unreachable" in master_problem(f"k8s://https://127.0.0.1:{port}")


def test_check_config_refuses_a_bad_conf_before_anything_starts():
    with pytest.raises(CampaignError, match="expected KEY=VALUE"):
        check_config(CampaignConfig(conf=("novalue",)))


# --- counting and cleaning up -----------------------------------------------------------------------


def test_a_passing_task_runs_exactly_its_examples():
    """Hypothesis starts (and tears down) examples it then discards; they are not scenarios."""
    for seed in range(3):
        row = run_task(Task("c", seed, "all", "impl", examples=7, steps=30))
        assert row["status"] == "pass" and row["scenarios"] == 7, (seed, row["witness"])


def test_what_counts_as_a_scenario():
    from hypothesis.errors import StopTest, UnsatisfiedAssumption

    assert counts_as_scenario(None, final_replay=False)
    assert counts_as_scenario(AssertionError("a violation"), final_replay=False)
    assert not counts_as_scenario(AssertionError("a violation"), final_replay=True)
    assert not counts_as_scenario(StopTest(0), final_replay=False)
    assert not counts_as_scenario(UnsatisfiedAssumption(), final_replay=False)


def test_stopping_spark_removes_the_shipped_code(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    spark = _Spark.__new__(_Spark)
    spark.shipped = _ship_code()
    assert os.path.basename(spark.shipped) == "klc-code.zip" and os.path.getsize(spark.shipped) > 0
    spark.spark = mock.Mock(**{"stop.side_effect": RuntimeError("the cluster is gone")})
    with pytest.raises(RuntimeError):
        spark.stop()
    assert list(tmp_path.iterdir()) == []


def test_a_campaign_and_a_replay_leave_no_temp_files(tmp_path):
    """Counted in a TMPDIR of their own: a campaign on the process pool, then ``klc replay``."""
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    env = os.environ | {"TMPDIR": str(private_tmp)}
    campaign = _klc("campaign", "--executor", "processes", "--scenarios", "10", "--examples-per-task", "5",
                    "--out", str(tmp_path / "out"), "--corpus", str(tmp_path / "found"), "--json", env=env)  # fmt: skip
    stdout, stderr = campaign.communicate(timeout=300)
    assert campaign.returncode == 0, stderr[-2000:]
    scenarios = [str(p) for p in sorted((REPO / "corpora" / "crash").glob("*.json"))[:3]]
    replay = _klc("replay", "--backend", "os", *scenarios, env=env)  # impl on real files in TMPDIR
    _out, stderr = replay.communicate(timeout=300)
    assert replay.returncode in (0, 1, 3), stderr[-2000:]
    assert list(private_tmp.iterdir()) == []


# --- one campaign at a time in an output folder --------------------------------------------------------

_HOLD = """
import sys
from conformance.campaign.driver import out_lock
class Ui:
    def note(self, text): print(text, flush=True)
with out_lock(sys.argv[1], sys.argv[2], Ui()):
    print("holding", flush=True)
    sys.stdin.read()
"""


def _holder(out: Path, run_id: str) -> subprocess.Popen:
    env = os.environ | {"PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-c", _HOLD, str(out), run_id]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("release", ["done", "killed"])
def test_a_second_campaign_waits_for_the_first_to_let_go_of_out(tmp_path, release):
    """The lock alone (cheap): a second holder waits, told who holds the folder, until the first
    lets go — finishing, or killed (the kernel drops a dead holder's lock)."""
    first = _holder(tmp_path / "out", "first-run")
    assert first.stdout.readline().strip() == "holding"
    second = _holder(tmp_path / "out", "second-run")
    waiting = second.stdout.readline().strip()
    assert waiting.startswith("waiting for campaign first-run (pid ") and f"finish with {tmp_path / 'out'}" in waiting
    time.sleep(0.3)
    assert second.poll() is None
    if release == "done":
        first.stdin.close()
    else:
        first.kill()
    first.wait(timeout=30)
    assert second.stdout.readline().strip() == "holding"
    second.stdin.close()
    assert second.wait(timeout=30) == 0


@pytest.mark.slow
def test_two_campaigns_into_one_out_run_every_seed_once(tmp_path):
    """Started together: the second waits, then skips what the first ran; both runs' rows and
    records are kept, no seed twice."""
    args = ["campaign", "--executor", "processes", "--scenarios", "8", "--examples-per-task", "2", "--steps", "10",
            "--out", str(tmp_path / "out"), "--corpus", str(tmp_path / "found"), "--json"]  # fmt: skip
    both = [_klc(*args), _klc(*args)]
    outputs = [p.communicate(timeout=600) for p in both]
    for p, (stdout, stderr) in zip(both, outputs, strict=True):
        assert p.returncode == 0, stderr[-2000:]
    summaries = sorted((json.loads(out) for out, _err in outputs), key=lambda s: s["skipped_seeds"])
    assert [s["tasks"] for s in summaries] == [4, 4] and [s["skipped_seeds"] for s in summaries] == [0, 4]
    rows = table.read(str(tmp_path / "out" / "results"))
    assert sorted(r["seed"] for r in rows) == list(range(8)), "a seed ran twice or was left out"
    runs = [json.loads(p.read_text()) for p in (tmp_path / "out" / "runs").iterdir()]
    assert sorted(r["run_id"] for r in runs) == sorted(s["run_id"] for s in summaries)
    assert {r["run_id"] for r in rows} == {s["run_id"] for s in summaries}
    assert all(r["status"] == "finished" for r in runs)
