"""SIGTERM and SIGHUP end a ``klc`` command as SIGINT does (conformance/cli.py): what the command
cleans up on the way out is cleaned up — ``klc load``'s private ``klc-load-*`` copy, ``klc replay
--target kafka``'s ``klc-kafka-*`` root and its JVM, a campaign's run record written as
interrupted — and the exit status is 128 + the signal.  Each test sends the signal to a ``klc``
subprocess mid-work, with a TMPDIR of its own to count what is left."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.load_scale import build
from conformance.regressions import CORPORA

REPO = Path(__file__).resolve().parent.parent


def _klc(*args: str, tmp: Path) -> subprocess.Popen:
    """``klc`` from this checkout, in a process group of its own, with TMPDIR ``tmp``."""
    cmd = [sys.executable, "-c", "from conformance.cli import main; main()", *args]
    env = os.environ | {"PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def _when(condition, proc: subprocess.Popen, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, (what, proc.communicate())
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


def _stopped(proc: subprocess.Popen, signum: int) -> tuple[str, str]:
    """Send ``signum`` to the klc process alone (not its group), wait for it to end."""
    try:
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signum, (proc.returncode, stdout, stderr[-3000:])
    assert f"klc: stopped by {signal.Signals(signum).name}" in stderr, stderr[-3000:]
    return stdout, stderr


def _children(pid: int) -> list[int]:
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(stat.split("/")[2]))
        except (OSError, IndexError, ValueError):
            continue
    return out


@pytest.fixture(scope="module")
def big_dir(tmp_path_factory) -> str:
    """A crashed data dir of 400 partitions: its private copy and load take a few seconds."""
    return build(str(tmp_path_factory.mktemp("dirs")), 400, clean=False)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_load_removes_its_private_copy(tmp_path, big_dir, signum):
    load = _klc("load", big_dir, tmp=tmp_path)
    _when(lambda: glob.glob(str(tmp_path / "klc-load-*" / "*" / "*" / "*.log")), load, "the copy began")
    _stopped(load, signum)
    assert list(tmp_path.iterdir()) == []


def test_replay_on_kafka_removes_its_root_and_stops_its_jvm(tmp_path):
    case = os.path.join(CORPORA, "log", "transactions-markers-and-the-last-stable-offset.json")
    replay = _klc("replay", "--target", "kafka", case, tmp=tmp_path)
    _when(lambda: glob.glob(str(tmp_path / "klc-kafka-*" / "d0" / "*" / "*.log")), replay, "a step ran")
    jvms = _children(replay.pid)
    assert jvms
    _stopped(replay, signal.SIGTERM)
    assert list(tmp_path.iterdir()) == []
    time.sleep(0.5)
    assert not [pid for pid in jvms if os.path.exists(f"/proc/{pid}") and _state(pid) != "Z"]


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_campaign_writes_its_run_record_as_interrupted(tmp_path):
    out = tmp_path / "out"
    (tmp_path / "tmp").mkdir()
    campaign = _klc("campaign", "--executor", "processes", "--budget-minutes", "10", "--examples-per-task", "2",
                    "--steps", "10", "--out", str(out), "--corpus", str(tmp_path / "found"), "--json",
                    tmp=tmp_path / "tmp")  # fmt: skip
    _when(lambda: glob.glob(str(out / "results" / "*.parquet")), campaign, "a wave finished")
    workers = _children(campaign.pid)
    _stopped(campaign, signal.SIGTERM)
    (record,) = (out / "runs").iterdir()
    run = json.loads(record.read_text())
    assert run["status"] == "interrupted" and run["tasks"] >= 1, run
    assert "did not finish" in (out / "report.html").read_text()
    time.sleep(0.5)
    assert not [pid for pid in workers if _state(pid) not in ("gone", "Z")], "a pool worker outlived the campaign"
