"""An I/O error at one of Kafka's own system calls (conformance.kafka_io_errors): the injector on a
small process whose calls are known, then on Kafka's JVM, where Kafka's error path runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conformance import kafka_io, kafka_io_errors
from conformance import scenario as sc
from conformance.regressions import replay_scenario, verdict_of

PROBLEM = kafka_io.capture_problem()
needs_ptrace = pytest.mark.skipif(PROBLEM is not None, reason=str(PROBLEM))

# a worker thread (the injector leaves the launcher's first thread alone) makes eight calls that
# change the file system under the root, one of each kind, and says how each ended
CHILD = r"""
import os, sys, threading
root = sys.argv[1]
def work():
    out = []
    def do(name, f):
        try:
            f()
            out.append([name, 0])
        except OSError as e:
            out.append([name, e.errno])
    fd = {}
    do("mkdir", lambda: os.mkdir(root + "/d"))
    do("create", lambda: fd.setdefault("f", os.open(root + "/d/a", os.O_CREAT | os.O_RDWR, 0o644)))
    do("write", lambda: os.pwrite(fd.get("f", 999), b"x" * 10, 0))
    do("truncate", lambda: os.ftruncate(fd.get("f", 999), 4))
    do("fsync", lambda: os.fsync(fd.get("f", 999)))
    do("rename", lambda: os.rename(root + "/d/a", root + "/d/b"))
    do("unlink", lambda: os.unlink(root + "/d/b"))
    do("rmdir", lambda: os.rmdir(root + "/d"))
    open(os.devnull, "w").write("outside the root: never counted")
    print(__import__("json").dumps(out), flush=True)
go = threading.Event()
t = threading.Thread(target=lambda: (go.wait(), work()))
t.start()
print("ready", flush=True)
sys.stdin.readline()
go.set()
t.join()
"""
KINDS = ["mkdir", "create", "write", "truncate", "fsync", "rename", "unlink", "rmdir"]


def _run_child(tmp_path, at_op: int, error: str = "EIO"):
    root = tmp_path / "root"
    root.mkdir()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"  # its worker thread is there to be traced
        injector = kafka_io_errors.Injector(child.pid, str(root), at_op, error)
        injector.start()
        child.stdin.write("go\n")
        child.stdin.flush()
        outcome = json.loads(child.stdout.readline())
        failed = injector.stop()
    finally:
        child.kill()
        child.wait()
    return outcome, failed


@needs_ptrace
@pytest.mark.parametrize("at_op", [0, 2, 4, 5, 7])
def test_exactly_the_kth_call_under_the_root_fails(tmp_path, at_op):
    outcome, failed = _run_child(tmp_path, at_op)
    assert [name for name, _ in outcome] == KINDS
    assert [code for _, code in outcome[: at_op + 1]] == [0] * at_op + [5]  # EIO there, and only there
    assert failed.call is not None and failed.call.split()[0] == KINDS[at_op]
    assert failed.counted == at_op + 1


@needs_ptrace
def test_a_failed_call_changes_nothing_and_enospc_is_reported(tmp_path):
    outcome, failed = _run_child(tmp_path, 1, "ENOSPC")  # the create fails: no file, so no write
    assert outcome[:3] == [["mkdir", 0], ["create", 28], ["write", 9]]  # EBADF: there is no fd
    assert failed.call == "create d/a"
    assert not (tmp_path / "root" / "d" / "a").exists()


@needs_ptrace
def test_past_the_last_call_nothing_fails_and_every_call_is_counted(tmp_path):
    outcome, failed = _run_child(tmp_path, 99)
    assert outcome == [[k, 0] for k in KINDS]
    assert failed.call is None and failed.counted == len(KINDS)


def test_an_unknown_error_name_is_refused_when_read():
    with pytest.raises(sc.ScenarioError, match="'error' must be one of"):
        sc.step_from_json({"op": "fail_io", "during": {"op": "flush", "topic": "t"}, "error": "EPERM", "journal": "kafka"})
    with pytest.raises(sc.ScenarioError, match="'journal' must be one of"):
        sc.step_from_json({"op": "fail_io", "during": {"op": "flush", "topic": "t"}, "journal": "jvm"})


def _scenario(at_op: int) -> sc.Scenario:
    records = (sc.Rec(1_700_000_000_000, "k", "v"),)
    during = sc.step_from_json({"op": "flush", "topic": "t"})
    fail = sc.step_from_json({"op": "fail_io", "during": during.to_json(), "at_op": at_op, "journal": "kafka"})
    steps = (sc.Open(), sc.Create(), sc.Append(batches=(sc.BatchSpec(records),)), fail, sc.Open(), sc.step_from_json({"op": "read", "topic": "t", "offset": 0}))
    return sc.Scenario(steps)


@needs_ptrace
@pytest.mark.no_cover
@pytest.mark.parametrize(
    "at_op, verdict",
    [
        (0, "pass"),  # the segment's fsync: KafkaStorageException, the image loads, offset 0 kept
        (1, "known: msync-error-escapes-as-an-unchecked-exception"),  # the offset index's msync
        (40, "pass"),  # past the flush's last call: it completes
    ],
)
def test_kafkas_own_flush_with_one_call_failing(at_op, verdict):
    v = replay_scenario(_scenario(at_op), "kafka")
    assert verdict_of(v) == verdict, str(v)


CHECKPOINT_CASE = "corpora/crash/io-error-in-kafkas-own-checkpoint-takes-its-dir-offline.json"


@needs_ptrace
@pytest.mark.no_cover
def test_a_build_that_keeps_a_failed_dir_online_fails_isolated(tmp_path, monkeypatch):
    """The dir-offline half of ``isolated`` can fail: the pinned release's kafka-storage with
    CheckpointFileWithFailureHandler.write's call to LogDirFailureChannel.maybeAddOfflineLogDir
    removed (ASM, kafka-patch/) fails the checkpoint case, the stock jars pass it."""
    from conformance.targets import kafka_jvm
    from tests.kafka_patch import copy_of, release_libs, remove_call

    case = sc.Scenario.load(CHECKPOINT_CASE)
    stock = release_libs(tmp_path / "stock", None)
    broken = copy_of(stock, tmp_path / "broken")
    remove_call(
        broken, f"kafka-storage-{kafka_jvm.PINNED}.jar", "org/apache/kafka/storage/internals/checkpoint/CheckpointFileWithFailureHandler",
        "write", "org/apache/kafka/storage/internals/log/LogDirFailureChannel.maybeAddOfflineLogDir",
    )  # fmt: skip
    verdicts = {}
    try:
        for name, libs in (("stock", stock), ("broken", broken)):
            monkeypatch.setenv(kafka_jvm.BUILD_VARIABLE, str(libs))
            verdicts[name] = replay_scenario(case, "kafka")
    finally:  # the test builds' capturing JVMs serve no later test
        for classpath in [c for c in kafka_io._JVMS if str(tmp_path) in c]:
            kafka_io._JVMS.pop(classpath).stop()
    assert verdicts["stock"] is None, str(verdicts["stock"])
    assert verdict_of(verdicts["broken"]) == "fail: isolated"
    assert "create d0/recovery-point-offset-checkpoint.tmp failed with EIO, the step completed, and log dir d0 stayed online" in str(verdicts["broken"])
