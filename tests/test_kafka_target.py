"""The kafka target (docs/kafka-target.md): Apache Kafka's own log layer behind the one target
protocol, and every way it can fail to run said in one line, never as a pass.  The corpus cases'
verdicts on Kafka are checked by tests/test_regressions.py."""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from conformance import kafka_findings, regressions
from conformance import scenario as sc
from conformance.cli import main
from conformance.regressions import CORPORA
from conformance.runner import run
from conformance.targets import HarnessError, kafka_jvm
from conformance.targets.kafka import KafkaTarget, Unsupported

REPO = Path(__file__).resolve().parent.parent
ROLL_CASE = os.path.join(CORPORA, "log", "roll-on-segment-bytes.json")


def _scenario(steps, **config) -> sc.Scenario:
    return sc.Scenario.from_json({"format": "klc-scenario", "version": 1, "config": config, "steps": steps})


def _append(*values, key="k"):
    return {
        "op": "append",
        "batches": [{"records": [{"timestamp": 1700000000000, "key": key, "value": v} for v in values]}],
    }


def test_the_target_runs_the_pinned_release():
    with open(os.path.join(kafka_jvm.PROJECT, "pom.xml"), encoding="utf-8") as f:
        pinned = re.search(r"<kafka.version>([^<]+)</kafka.version>", f.read()).group(1)
    assert kafka_jvm.shared().version == pinned


def test_kafka_and_the_model_agree_on_appends_a_roll_and_a_restart():
    verdict = run(
        _scenario(
            [{"op": "create"}, _append("a", "b"), {"op": "roll"}, _append("c"), {"op": "shutdown"}, {"op": "open"}]
        ),
        ("model", "kafka"),
    )
    assert verdict.ok, verdict.violations
    assert verdict.checked["conforms"] >= 6 and verdict.checked["clean-restart"] >= 2
    appended = [r["kafka"] for r in verdict.results if "first" in r.get("kafka", {})]
    assert appended == [{"first": 0, "last": 1}, {"first": 2, "last": 2}]


def test_conforms_fails_where_kafka_and_the_model_disagree(monkeypatch):
    """Kafka's refused create leaves its segment file, the model's leaves nothing: the suite says
    so on Kafka's own files — as the known finding (corpora/kafka-findings/segment-index-bytes-below-
    a-time-index-entry), and as a violation once the finding is not known."""
    scenario = _scenario([{"op": "create"}], **{"segment.index.bytes": 8})
    witness = "after create t-0: file d0/t-0/00000000000000000000.log: only in kafka"
    verdict = run(scenario, ("model", "kafka"))
    assert verdict.results[0] == {
        "model": {"error": "IllegalArgumentException"},
        "kafka": {"error": "IllegalArgumentException"},
    }
    assert verdict.known == f"segment-index-bytes-below-a-time-index-entry at step 0: {witness}"
    monkeypatch.setattr(kafka_findings, "FINDINGS", ())
    verdict = run(scenario, ("model", "kafka"))
    assert [str(v) for v in verdict.violations] == [f"conforms violated at step 0: {witness}"]


def test_kafka_refuses_what_a_produce_request_may_not_hold_as_the_model_does():
    """LogValidator (§4.14): a keyless record on a compacted topic, a CreateTime more than an hour
    ahead; an append of two batches is two produce requests."""
    now = 1700000000000
    steps = [
        {"op": "create"},
        _append("a", key=None),
        {"op": "append", "batches": [{"records": [{"timestamp": now + 3_600_001, "key": "k", "value": "v"}]}]},
        {"op": "append", "batches": [{"records": [{"timestamp": now + 3_600_000, "key": "k", "value": "v"}]}] * 2},
    ]
    verdict = run(_scenario(steps, **{"cleanup.policy": "compact"}), ("model", "kafka"))
    assert verdict.ok, verdict.violations
    assert [r["kafka"] for r in verdict.results[1:]] == [
        {"error": "InvalidRecordException"},
        {"error": "InvalidTimestampException"},
        {"first": 0, "last": 1},
    ]


def test_a_crash_image_is_loaded_by_kafka():
    steps = [
        {"op": "create"},
        _append("a"),
        {"op": "flush"},
        _append("b"),
        {"op": "crash", "fault": {"family": "process"}},
        {"op": "open"},
    ]
    verdict = run(_scenario(steps), ("model", "kafka"))
    assert verdict.ok, verdict.violations
    assert "impl/sim" in verdict.targets  # the crash image's source
    loaded = verdict.results[-1]["kafka"]["loaded"]
    assert loaded == [{"dir": "d0", "partition": "t-0", "error": None, "recovered": [0]}]


# a setting Kafka 2.x cannot take: one CreateTime bound each way (it has a single one for both)
UNEQUAL_BOUNDS = {"message.timestamp.before.max.ms": 1000, "message.timestamp.after.max.ms": 2000}


def test_a_setting_kafka_cannot_take_is_unsupported_not_passed():
    verdict = run(_scenario([{"op": "create"}], **UNEQUAL_BOUNDS), ("model", "kafka:2.8.2"))
    assert not verdict.ok and not verdict.violations
    assert "message.timestamp.difference.max.ms" in verdict.unsupported


def test_a_roll_jitter_is_the_scenarios_on_kafka(monkeypatch):
    """Each segment Kafka builds takes the scenario's roll jitter (SegmentJitter): the case whose
    roll points show every segment's jitter passes with the scenario's seed and fails when the
    adapter is told another."""
    case = sc.Scenario.load(os.path.join(CORPORA, "log", "roll-jitter-drawn-per-segment.json"))
    assert run(case, ("model", "kafka")).ok
    request = KafkaTarget._request

    def another_seed(self, op, **fields):
        if op == "configure":
            fields["jitter_seed"] += 1
        return request(self, op, **fields)

    monkeypatch.setattr(KafkaTarget, "_request", another_seed)
    assert run(case, ("model", "kafka")).violations


def test_a_cleaning_round_on_kafka_stops_at_the_last_stable_offset():
    """With a transaction open in the second segment, Kafka's round (CleanerRound.java, bounded as
    LogCleanerManager.cleanableOffsets bounds it) cleans the first segment alone, as the model
    does; once the COMMIT is written, the next round takes all three inactive segments."""
    case = sc.Scenario.load(os.path.join(CORPORA, "log", "cleaning-stops-at-the-last-stable-offset.json"))
    verdict = run(case, ("model", "kafka"))
    assert verdict.ok, verdict.violations
    assert _clean_results(verdict, "kafka") == [{"groups": [[0]]}, {"groups": [[0, 2, 4]]}]


CLEAN_CASE = os.path.join(CORPORA, "log", "compaction-rounds-on-kafkas-own-cleaner.json")


def _clean_results(verdict, target):
    return [r[target] for r in verdict.results if "groups" in r.get(target, {})]


def test_a_cleaning_round_on_kafka_agrees_with_the_model():
    """Kafka 4.4.0's own Cleaner (CleanerRound.java) runs the case's three rounds: each installs
    the groups the model installs, with the same files (segments, indexes, .deleted renames) —
    at least one group of several segments, so the round did clean."""
    case = sc.Scenario.load(CLEAN_CASE)
    verdict = run(case, ("model", "kafka"))
    assert verdict.ok, verdict.violations
    kafka = _clean_results(verdict, "kafka")
    assert kafka == _clean_results(verdict, "model") and len(kafka) == 3
    assert any(len(group) > 1 for r in kafka for group in r["groups"])
    assert verdict.checked["conforms"] >= len(case.steps)


@pytest.mark.slow
def test_a_cleaning_round_on_the_scala_cleaner_agrees_with_the_model():
    """Kafka 3.9.1's Scala kafka.log.Cleaner (ScalaCleanerRound.java) runs the case's three rounds
    as the model does. The Log generation's (2.8.2) keeps a tombstone by segment mtimes, before
    KIP-534: a round over the case's tombstone is unsupported there; 1.0.2's cleaner is not driven."""
    case = sc.Scenario.load(CLEAN_CASE)
    verdict = run(case, ("model", "kafka:3.9.1"))
    assert verdict.ok, (verdict.violations, verdict.unsupported)
    assert _clean_results(verdict, "kafka:3.9.1") == _clean_results(verdict, "model")
    older = run(case, ("model", "kafka:2.8.2"))
    assert not older.violations and "before 3.1 (KIP-534)" in (older.unsupported or ""), older.unsupported
    oldest = run(case, ("model", "kafka:1.0.2"))
    assert not oldest.violations and "driven from 1.1 on" in (oldest.unsupported or ""), oldest.unsupported


@pytest.mark.parametrize("wrong", ["a group left out of the answer", "no round run"])
def test_a_wrong_cleaning_answer_from_the_adapter_fails_conforms(monkeypatch, wrong):
    """The case fails when the adapter answers other groups than Kafka installed, and when it
    answers the model's groups without letting Kafka clean (the files then differ)."""
    request = KafkaTarget._request

    def lying(self, op, **fields):
        if op != "clean":
            return request(self, op, **fields)
        if wrong == "no round run":
            return {"groups": [[0, 3], [5, 8]]}
        answer = request(self, op, **fields)
        return {"groups": answer["groups"][:-1]}

    monkeypatch.setattr(KafkaTarget, "_request", lying)
    verdict = run(sc.Scenario.load(CLEAN_CASE), ("model", "kafka"))
    assert [v.prop for v in verdict.violations] == ["conforms"]
    assert verdict.violations[0].step == 11


def test_a_segment_kafka_lists_without_its_file_is_a_verdict_not_a_harness_error(monkeypatch):
    """A build that lists a segment whose file is not in its data dir (a mutant of
    LocalLog.createAndDeleteSegment deletes the new file; one of parentDir writes it elsewhere)
    reads as an empty segment: the log differs from the model's, ``conforms`` fails."""
    request = KafkaTarget._request

    def elsewhere(self, op, **fields):
        answer = request(self, op, **fields)
        if op == "state":
            for p in answer["partitions"].values():
                p["segments"] = [(base, size, "elsewhere-" + name) for base, size, name in p["segments"]]
        return answer

    monkeypatch.setattr(KafkaTarget, "_request", elsewhere)
    verdict = run(sc.Scenario.load(ROLL_CASE), ("model", "kafka"))
    assert [v.prop for v in verdict.violations] == ["conforms"], verdict


def test_klc_replay_on_kafka_and_its_exit_statuses(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(main, ["replay", "--target", "kafka", ROLL_CASE])
    assert ok.exit_code == 0 and "model vs kafka" in ok.output, ok.output
    jitter = tmp_path / "bounds.json"
    jitter.write_text(_scenario([{"op": "create"}], **UNEQUAL_BOUNDS).dumps())
    unsupported = runner.invoke(main, ["replay", "--target", "kafka:2.8.2", str(jitter)])
    assert unsupported.exit_code == 3 and unsupported.output.startswith("UNSUPPORTED"), unsupported.output
    missing = runner.invoke(
        main, ["replay", "--target", "kafka", "--kafka-classpath", str(tmp_path / "no.jar"), ROLL_CASE]
    )
    assert missing.exit_code == 2 and "no.jar: no such file" in missing.output
    wrong = runner.invoke(main, ["replay", "--kafka-classpath", str(jitter), ROLL_CASE])
    assert wrong.exit_code == 2 and "goes with --target kafka" in wrong.output


def test_a_jvm_that_dies_mid_scenario_is_a_harness_error():
    target = KafkaTarget(_scenario([]))
    target.apply(sc.Open())
    target.jvm.process.kill()
    target.jvm.process.wait()
    with pytest.raises(kafka_jvm.KafkaTargetError, match="JVM has exited|JVM died|stopped reading"):
        target.apply(sc.Create())
    target.close()
    assert not os.path.exists(target.root)
    assert kafka_jvm.shared().alive()  # the next target starts a fresh one


def _wait_stopped(pid: int, within_s: float = 10.0) -> None:
    """Until every thread of ``pid`` is stopped (state T in each /proc/PID/task/*/stat)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        states = []
        for stat in glob.glob(f"/proc/{pid}/task/*/stat"):
            try:
                with open(stat) as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                continue
        if states and all(s in ("T", "t") for s in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop within {within_s} s")


def test_a_jvm_that_stops_answering_is_stopped(monkeypatch):
    jvm = kafka_jvm.Jvm(kafka_jvm.build())
    try:
        os.kill(jvm.process.pid, signal.SIGSTOP)  # a JVM that hangs: it reads nothing and answers nothing
        _wait_stopped(jvm.process.pid)  # the stop lands asynchronously: on a loaded machine it can lag
        monkeypatch.setattr(kafka_jvm, "ANSWER_TIMEOUT_S", 0.2)
        hung = r"no answer to 'hello' within 0 s \(KLC_KAFKA_TIMEOUT\); the JVM was killed"
        with pytest.raises(kafka_jvm.KafkaTargetError, match=hung):
            jvm.request({"op": "hello"})
        assert not jvm.alive()
    finally:  # a failed check must not leave a stopped JVM behind
        if jvm.process.poll() is None:
            jvm.process.kill()
            jvm.process.wait()


def test_the_jvm_runs_in_a_dir_of_its_own_that_goes_with_it(tmp_path, monkeypatch):
    classpath = kafka_jvm.shared().classpath
    monkeypatch.chdir(tmp_path)  # a classpath relative to the caller's dir still names the jars
    relative = os.pathsep.join(os.path.relpath(e, tmp_path) for e in classpath.split(os.pathsep))
    jvm = kafka_jvm.Jvm(relative)
    try:
        cwd = os.readlink(f"/proc/{jvm.process.pid}/cwd")
        assert cwd == jvm.workdir and not cwd.startswith(str(tmp_path))
    finally:
        jvm.stop()
    assert not jvm.alive() and not os.path.exists(jvm.workdir)
    assert list(tmp_path.iterdir()) == []


def test_a_jvm_dir_left_by_a_process_that_died_is_swept(tmp_path, monkeypatch):
    """A klc process that ends without its exit handlers (a pool's worker, a SIGKILL) leaves its
    JVMs' dirs; the next JVM started anywhere removes those of dead processes, never a live one's."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{kafka_jvm.WORKDIR_PREFIX}{dead.pid}-abc"
    live = tmp_path / f"{kafka_jvm.WORKDIR_PREFIX}{os.getpid()}-abc"
    other = tmp_path / "klc-jvm-notes"
    for d in (stale, live, other):
        d.mkdir()
    kafka_jvm._sweep_workdirs()
    assert not stale.exists() and live.exists() and other.exists()


def test_a_classpath_without_the_target_names_the_jvm_failure(tmp_path):
    with pytest.raises(
        kafka_jvm.KafkaTargetError, match=r"JVM (died|has exited).*ClassNotFoundException|klc\.kafka\.Main"
    ):
        kafka_jvm.Jvm(str(tmp_path / "empty.jar"))


def test_a_malformed_request_is_a_harness_error():
    fresh = kafka_jvm.Jvm(kafka_jvm.shared().classpath)
    try:
        with pytest.raises(kafka_jvm.KafkaTargetError, match="the first request must be configure"):
            fresh.request({"op": "create"})
    finally:
        fresh.stop()


def test_no_java_or_maven_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(kafka_jvm.KafkaTargetError, match="'java' is not on PATH"):
        kafka_jvm.Jvm("x.jar")
    project = tmp_path / "kafka-target"
    (project / "src").mkdir(parents=True)
    (project / "pom.xml").write_text("<project/>")
    with pytest.raises(kafka_jvm.KafkaTargetError, match="is not on PATH"):
        kafka_jvm.build(project)


def test_a_failed_build_names_maven_s_complaint(tmp_path):
    project = tmp_path / "kafka-target"
    (project / "src").mkdir(parents=True)
    (project / "pom.xml").write_text("<project>not a pom</project>")
    with pytest.raises(kafka_jvm.KafkaTargetError, match="the Maven build of .* failed"):
        kafka_jvm.build(project)
    with pytest.raises(kafka_jvm.KafkaTargetError, match="no Maven project"):
        kafka_jvm.build(tmp_path / "nowhere")


def test_full_index_mid_append_on_kafka():
    """corpora/kafka-findings/full-index-mid-append: Kafka 4.4.0 keeps a refused append's batches,
    wedges the log, and reads them back after a restart."""
    case = next(c for c in regressions.cases() if c.name == "kafka-findings/full-index-mid-append")
    create, follower, leader, shutdown, open_, read = case.scenario.steps
    target = KafkaTarget(case.scenario)
    target.apply(sc.Open())
    target.apply(create)
    assert target.apply(follower) == {"error": "IllegalArgumentException"}
    refused = target.state()["partitions"]["d0/t-0"]
    assert refused["log_end_offset"] == 0 and refused["segments"][0][:2] == [0, 140]  # the bytes stay
    assert target.index_entries()["d0/t-0/0"][0] == [(1, 70)]  # an entry past the log end
    assert target.apply(leader) == {"error": "KafkaException"}  # every later append: the log is wedged
    target.apply(shutdown)
    target.apply(open_)
    assert target.state()["partitions"]["d0/t-0"]["log_end_offset"] == 2  # the refused batches are the log
    assert bytes.fromhex(target.apply(read)["bytes"]) == target._log_bytes("d0/t-0", "00000000000000000000.log", 140)
    target.close()


def test_segment_index_bytes_below_a_time_entry_on_kafka():
    """corpora/kafka-findings/segment-index-bytes-below-a-time-index-entry: Kafka 4.4.0 leaves a
    refused create's partition half made, loads it on a retry, and an append writes its batch before
    it fails, the batch read back after a restart."""
    case = next(
        c for c in regressions.cases() if c.name == "kafka-findings/segment-index-bytes-below-a-time-index-entry"
    )
    create, append, shutdown, open_ = case.scenario.steps
    target = KafkaTarget(case.scenario)
    target.apply(sc.Open())
    assert target.apply(create) == {"error": "IllegalArgumentException"}
    left = {name: len(data) for name, data in target.files().items() if name.startswith("d0/t-0/")}
    assert left == {
        "d0/t-0/00000000000000000000.log": 0,
        "d0/t-0/00000000000000000000.index": 8,
        "d0/t-0/00000000000000000000.timeindex": 0,
        "d0/t-0/leader-epoch-checkpoint": 0,
    }
    assert target.state()["partitions"] == {}  # no log, yet its files stay
    assert target.apply(create) == {}  # a retry loads what the refused create left
    assert target.apply(append) == {"error": "IllegalArgumentException"}
    refused = target.state()["partitions"]["d0/t-0"]
    assert refused["log_end_offset"] == 0 and refused["segments"][0][:2] == [0, 371]  # the batch stays
    target.apply(shutdown)
    target.apply(open_)
    assert target.state()["partitions"]["d0/t-0"]["log_end_offset"] == 1  # the refused batch is the log
    target.close()


def test_klc_load_on_kafka_reports_a_missing_dir_and_refuses_a_stray_classpath(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(main, ["load", "--target", "kafka", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    stray = runner.invoke(main, ["load", "--kafka-classpath", str(tmp_path), str(tmp_path)])
    assert stray.exit_code == 2 and "goes with --target kafka" in stray.output
    (tmp_path / "d" / "t-0").mkdir(parents=True)
    (tmp_path / "d" / "t-0" / "00000000000000000000.log").write_bytes(b"\0" * 100)  # a zeroed tail only
    report = runner.invoke(main, ["load", "--count-batches", "--target", "kafka", str(tmp_path / "d")])
    assert report.exit_code == 0, report.output
    assert report.output.splitlines()[0] == "as Apache Kafka 4.4.0 loads it (the kafka target)"
    assert "t-0: log start 0, log end 0, recovery point 0, segments 0(0 B, 0 batches)" in report.output
    assert "recovered segments [0, 0], 100 bytes truncated" in report.output


def test_a_config_kafka_refuses_is_a_harness_error(tmp_path, monkeypatch):
    """The model validates configs as LogConfig does; one it let through that Kafka refuses is said
    in one line, never judged."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    unchecked = sc.Scenario((), {"segment.bytes": 2**31})  # built directly: no validation
    with pytest.raises(kafka_jvm.KafkaTargetError, match="refuses the scenario's config: ConfigException"):
        KafkaTarget(unchecked)
    assert list(tmp_path.iterdir()) == []


def test_a_target_that_cannot_start_leaves_no_directory(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(Unsupported, match="message.timestamp.difference.max.ms"):
        KafkaTarget(_scenario([], **UNEQUAL_BOUNDS), release="2.8.2")
    assert list(tmp_path.iterdir()) == []


def _adapter_checkout(root, source="class A {}"):
    """A kafka-target project with one source, as a fresh clone has it: nothing built."""
    project = root / "kafka-target"
    (project / "src" / "main").mkdir(parents=True)
    (project / "src" / "main" / "A.java").write_text(source)
    (project / "pom.xml").write_text("<project/>")
    return project


def test_a_fresh_checkout_takes_the_build_another_checkout_made(tmp_path, monkeypatch):
    """Issue #35: the adapter's build is cached by the digest of what it reads, so a second clone of
    the same sources copies it instead of running Maven; a changed source, or a cached classpath
    naming a jar the local repository lost, builds again; KLC_BUILD_CACHE=off keeps no cache."""
    dependency = tmp_path / "m2" / "kafka-storage.jar"
    dependency.parent.mkdir()
    dependency.write_bytes(b"jar")
    builds = []

    def maven(project, version=None):
        builds.append(project)
        target = kafka_jvm._directory(project, version)
        target.mkdir(parents=True, exist_ok=True)
        (target / "classpath.txt").write_text(str(dependency))
        kafka_jvm._jar(project, version).write_bytes(b"adapter of " + str(project).encode())

    monkeypatch.setattr(kafka_jvm, "_run_maven", maven)
    monkeypatch.setattr(kafka_jvm, "BUILD_CACHE", tmp_path / "cache")
    first, second = _adapter_checkout(tmp_path / "one"), _adapter_checkout(tmp_path / "two")
    assert kafka_jvm.build(first) == f"{kafka_jvm._jar(first, None)}{os.pathsep}{dependency}"
    assert kafka_jvm.build(second) == f"{kafka_jvm._jar(second, None)}{os.pathsep}{dependency}"
    assert builds == [first]  # the second clone copied the first one's jar
    assert kafka_jvm._jar(second, None).read_bytes() == kafka_jvm._jar(first, None).read_bytes()
    changed = _adapter_checkout(tmp_path / "three", "class A { int x; }")
    kafka_jvm.build(changed)
    assert builds == [first, changed]
    dependency.unlink()  # the cached classpath now names a missing jar: built again
    kafka_jvm.build(_adapter_checkout(tmp_path / "four"))
    assert builds[-1] == tmp_path / "four" / "kafka-target"
    dependency.write_bytes(b"jar")
    monkeypatch.setattr(kafka_jvm, "BUILD_CACHE", kafka_jvm.Path("off"))
    kafka_jvm.build(_adapter_checkout(tmp_path / "five"))
    assert builds[-1] == tmp_path / "five" / "kafka-target" and not (tmp_path / "off").exists()


# --- a dead or hung JVM mid-scenario: a harness error, exit 2, never a verdict ------------------------

TXN_CASE = os.path.join(CORPORA, "log", "transactions-markers-and-the-last-stable-offset.json")


def _klc(*args: str, env: dict) -> subprocess.Popen:
    """``klc`` from this checkout, in a process group of its own."""
    cmd = [sys.executable, "-c", "from conformance.cli import main; main()", *args]
    return subprocess.Popen(
        cmd, cwd=REPO, env=os.environ | {"PYTHONPATH": str(REPO)} | env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _java_child(pid: int) -> int | None:
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(stat.replace("/stat", "/cmdline"), "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if int(fields[1]) == pid and b"klc.kafka.Main" in cmdline:
            return int(stat.split("/")[2])
    return None


def _once_steps_ran(tmp: str, proc: subprocess.Popen) -> int:
    """The JVM's pid, once the scenario's create step has made its partition's first segment."""
    deadline = time.monotonic() + 300
    while not glob.glob(os.path.join(tmp, "klc-kafka-*", "d0", "*", "*.log")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the scenario never got to its first step"
        time.sleep(0.02)
    return _java_child(proc.pid)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_a_jvm_killed_or_hung_mid_replay_is_a_harness_error_not_a_verdict(tmp_path, how):
    """The JVM killed by PID mid-scenario, or stopped (SIGSTOP) for KLC_KAFKA_TIMEOUT=4 s: exit 2, one
    harness-error line naming how the JVM ended and its stderr — no FAIL, no conforms violation —
    and no klc-kafka-* dir left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    replay = _klc("replay", "--target", "kafka", TXN_CASE, env={"TMPDIR": str(tmp), "KLC_KAFKA_TIMEOUT": "4"})
    try:
        os.kill(_once_steps_ran(str(tmp), replay), getattr(signal, how))
        stdout, stderr = replay.communicate(timeout=120)
    finally:
        if replay.poll() is None:
            os.killpg(replay.pid, signal.SIGKILL)
    assert replay.returncode == 2, (stdout, stderr)
    assert "FAIL" not in stdout and "violated" not in stdout + stderr, (stdout, stderr)
    (line,) = [s for s in stderr.splitlines() if s.strip()]
    assert line.startswith(f"klc replay: {TXN_CASE}: HARNESS ERROR, not a verdict: kafka target: "), line
    ended = "died during '" if how == "SIGKILL" else "no answer to '"
    assert ended in line and ("killed by SIGKILL" if how == "SIGKILL" else "within 4 s") in line, line
    assert "its stderr ends: " in line or "it wrote nothing on stderr" in line, line
    assert list(tmp.iterdir()) == []


def test_the_runner_lets_a_harness_error_through(monkeypatch):
    """A target whose JVM dies: the runner raises the harness error, never a conforms violation."""
    target = KafkaTarget(_scenario([]))
    target.close()

    def dead(self, step):
        raise kafka_jvm.KafkaTargetError("kafka target: the JVM died during 'append' (killed by SIGKILL)")

    monkeypatch.setattr(KafkaTarget, "_call", dead)
    with pytest.raises(HarnessError, match="the JVM died during 'append'"):
        run(_scenario([{"op": "create"}, _append("a")]), ("model", "kafka"))


# --- a long-lived JVM does not wear out -----------------------------------------------------------------


def _held(pid: int) -> tuple[int, int]:
    """The JVM's open descriptors and memory mappings."""
    with open(f"/proc/{pid}/maps") as f:
        return len(os.listdir(f"/proc/{pid}/fd")), sum(1 for _ in f)


# AbandonedHandles.BOUND (kafka-target/src/shared/java): descriptors or mapped buffers halts may
# leave behind before one collects them
ABANDONED_BOUND = 256


@pytest.mark.parametrize(
    "partitions,loads,release",
    [
        pytest.param(40, 12, None, id="gate"),
        pytest.param(2000, 50, None, id="nightly", marks=pytest.mark.slow),
        # the Scala adapters: kafka.log.Log with Yammer's own registry, UnifiedLog with server-common's
        pytest.param(40, 12, "2.3.1", id="2.3.1", marks=pytest.mark.slow),
        pytest.param(40, 12, "3.9.1", id="3.9.1", marks=pytest.mark.slow),
    ],
)
def test_one_jvm_loads_a_crashed_dir_again_and_again(tmp_path, monkeypatch, partitions, loads, release):
    """``klc load --target kafka``'s load, repeated in one JVM as a campaign or a mutation run
    repeats loads for hours: what the earlier loads held is let go.  Each load of a crashed dir
    held one descriptor and two index mappings per partition until the JVM died (Kafka's metrics
    registry kept every abandoned log reachable: 2,000 partitions failed at the 10th load as
    'log dir dir0 failed'); now a halt collects them once they pass the adapter's bound, so the
    descriptors and mappings after every load stay within that bound and one load's worth of those
    after the first.  Twelve loads of 40 partitions without a collection would pass it (440
    descriptors and 880 mappings more)."""
    from benchmarks.load_scale import build
    from operator_tools.load_report import load_dirs_on_kafka

    monkeypatch.setattr(kafka_jvm, "ANSWER_TIMEOUT_S", 900)  # 2,000 partitions on a busy machine: minutes
    data = build(str(tmp_path), partitions, clean=False)
    jvm = kafka_jvm.Jvm(kafka_jvm.build_for(release))
    try:
        held = []
        for _ in range(loads):
            report = load_dirs_on_kafka([data], {}, jvm)
            assert report["startup_error"] is None and len(report["partitions"]) == partitions
            assert not [p["error"] for p in report["partitions"] if p["error"]]
            held.append(_settled(jvm.process.pid, held[0] if held else None, partitions))
        assert all(_bounded((f, m), held[0], partitions) for f, m in held), held
    finally:
        jvm.stop()


def _bounded(now: tuple[int, int], first: tuple[int, int], partitions: int) -> bool:
    return now[0] - first[0] < ABANDONED_BOUND + partitions and now[1] - first[1] < 2 * (ABANDONED_BOUND + partitions)


def _settled(pid: int, first: tuple[int, int] | None, partitions: int) -> tuple[int, int]:
    """What the JVM holds after a load, given a moment for the JDK's cleaners (which close and
    unmap what the collector freed) when it holds more than the bound allows."""
    deadline = time.monotonic() + 5
    while True:
        now = _held(pid)
        if first is None or _bounded(now, first, partitions) or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def _int_max_segment(root: str) -> None:
    """A partition after a clean shutdown whose one segment is Int.MAX bytes long (sparse: a batch at
    0, a hole, a batch at offset 5 ending at Int.MAX, the offset index's one entry naming it)."""
    import struct

    from model.records import build_batch_v2

    os.makedirs(f"{root}/d0/t-0", exist_ok=True)
    last = build_batch_v2(5, [(1700000000000, b"k", b"v")])
    at = 2**31 - 1 - len(last)
    with open(f"{root}/d0/t-0/00000000000000000000.log", "wb") as f:
        f.write(build_batch_v2(0, [(1700000000000, b"k", b"v")]))
        f.seek(at)
        f.write(last)
    Path(f"{root}/d0/t-0/00000000000000000000.index").write_bytes(struct.pack(">ii", 5, at))
    Path(f"{root}/d0/t-0/00000000000000000000.timeindex").write_bytes(struct.pack(">qi", 1700000000000, 5))
    Path(f"{root}/d0/.kafka_cleanshutdown").touch()


def test_an_append_to_a_segment_at_int_max_bytes_rolls_first_as_on_kafka(tmp_path, monkeypatch):
    """A segment file of exactly Int.MAX bytes loads (FileRecords takes it), and the next append
    rolls before it writes (§4.3 rule 1: size > segment.bytes − the append's size), so nothing is
    refused; a follower's batch below the log end is refused as any other.  impl on real files and
    Kafka 4.4.0 on the same sparse image, compared by their answers and the files' names and sizes
    (the harness's digests would read 2 GiB); the model holds files in memory and is not run here."""
    from conformance.targets.impl_target import ImplTarget

    monkeypatch.setattr(ImplTarget, "tail_bytes", lambda self: 0)  # the clean-restart measure reads every file
    scenario = _scenario([], **{"segment.bytes": 2**31 - 1})
    batch = sc.BatchSpec((sc.Rec(1700000000000, "k", "v"),))
    steps = [sc.Open(), sc.Append("t", 0, (batch,)), sc.Append("t", 0, (attrs.evolve(batch, base_offset=3),), False)]
    answers = {}
    for name, target in (("impl", ImplTarget(scenario, "os", str(tmp_path))), ("kafka", KafkaTarget(scenario))):
        try:
            _int_max_segment(target.root)
            results = [target.apply(s) for s in steps]
            logs = sorted(Path(target.root, "d0", "t-0").glob("*.log"))
            answers[name] = (results[1:], [(p.name, p.stat().st_size) for p in logs])
        finally:
            target.halt()
    assert answers["impl"] == answers["kafka"]
    (appended, refused), logs = answers["kafka"]
    assert appended == {"first": 6, "last": 6}
    assert refused == {"error": "UnexpectedAppendOffsetException", "first_offset": 3, "last_offset": 3}
    assert logs == [(f"{0:020d}.log", 2**31 - 1), (f"{6:020d}.log", 70)]


def test_unexpected_append_offset_is_worded_as_kafka_words_it():
    """A follower's append below the log end: impl's and the model's UnexpectedAppendOffsetException
    say what Kafka 4.4.0's says, word for word — which offset was checked (a legacy first batch's
    last), the log end, the first ten record offsets, the append's last offset and the log start."""
    from conformance.targets.impl_target import ImplTarget
    from conformance.targets.model_target import ModelTarget

    case = sc.Scenario.load(os.path.join(CORPORA, "log", "unexpected-append-offset-carries-its-offsets.json"))
    refused = [i for i, s in enumerate(case.steps) if isinstance(s, sc.Append) and not s.leader][:4]
    messages = {}
    for name, make in (("model", ModelTarget), ("impl", ImplTarget), ("kafka", KafkaTarget)):
        target = make(case)
        try:
            target.apply(sc.Open())
            said = []
            for i, step in enumerate(case.steps[: refused[-1] + 1]):
                if i not in refused:
                    target.apply(step)
                    continue
                with pytest.raises(target.refusals()) as info:
                    target._call(step)
                said.append(str(info.value))
            messages[name] = said
        finally:
            target.halt()
    assert messages["model"] == messages["impl"] == messages["kafka"]
    assert messages["kafka"][2] == (
        "UnexpectedAppendOffsetException: Unexpected offset in append to t-0. Last offset of the first batch 2 is "
        "less than the next offset 3. First 10 offsets in append: 1, 2, 4, last offset in append: 4. Log start offset = 0"
    )


MARKER_CONTENTS = [
    b'{"version":0,"brokerEpoch":7}', b"", b"   ", b"junk", b"\0" * 30, b"null", b"[]", b"7", b'{"version":0}',
    b'{"brokerEpoch":null}', b'{"brokerEpoch":7} trailing junk', b'  {"brokerEpoch":7}\n', b'{"brokerEpoch":"7"}',
    b'{"brokerEpoch":""}', b'{"brokerEpoch":"x"}', b'{"brokerEpoch":7.9}', b'{"brokerEpoch":-7.9}', b'{"brokerEpoch":1e3}',
    b'{"brokerEpoch":true}', b'{"brokerEpoch":[7]}', b'{"brokerEpoch":{}}', b'{"brokerEpoch":9223372036854775807}',
    b'{"brokerEpoch":9223372036854775808}', b'{"brokerEpoch":1e30}', b'{"version":"x","brokerEpoch":7}',
    b'{"version":2147483648,"brokerEpoch":7}', b'{"version":1.5,"brokerEpoch":7}', b'{"version":null,"brokerEpoch":7}',
    b'{"version":true,"brokerEpoch":7}', b'{"brokerEpoch":7,"brokerEpoch":8}', b'{"brokerEpoch":7,"other":[1,{"a":2}]}',
    b'{"brokerEpoch":NaN}', b'{"brokerEpoch":"1_0"}', b'{"brokerEpoch":" 7"}', b'{"brokerEpoch":"+7"}',
    b'{"brokerEpoch":"7.5"}', b'{"brokerEpoch":"0x10"}', b'{"brokerEpoch":-1}', b"{'brokerEpoch':7}", b'{"brokerEpoch":7',
    b'\xef\xbb\xbf{"brokerEpoch":7}', b'{"brokerEpoch":07}', b'{"brokerEpoch":"1e2"}', b'{"brokerEpoch":"Infinity"}',
]  # fmt: skip
# two data dirs' markers: the epochs combined as readBrokerEpochFromCleanShutdownFiles combines them
MARKER_PAIRS = [
    (b'{"brokerEpoch":5}', b'{"brokerEpoch":6}'), (b'{"brokerEpoch":-1}', b'{"brokerEpoch":6}'),
    (b'{"brokerEpoch":6}', b'{"brokerEpoch":-1}'), (b'{"brokerEpoch":5}', None), (None, None),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("release", [None, "3.9.1"])
def test_the_marker_content_matrix_on_kafka(release):
    """The broker epoch the model and impl read from a clean-shutdown marker, content by content and
    for two data dirs together, is what Kafka reads (Jackson's mapping, CleanShutdownFileHandler.read,
    LogManager.readBrokerEpochFromCleanShutdownFiles; §6.4).  The corpus case
    ``corpora/log/clean-shutdown-marker-content.json`` is the gate's cheap check."""
    import base64

    cases = [(c,) for c in MARKER_CONTENTS] + MARKER_PAIRS
    differ = []
    for markers in cases:
        files = {f"d{i}/.kafka_cleanshutdown": {"base64": base64.b64encode(m).decode()} for i, m in enumerate(markers) if m is not None}
        scenario = sc.Scenario.from_json(
            {"format": "klc-scenario", "version": 1, "config": {}, "data_dirs": len(markers), "image": {"files": files},
             "steps": [{"op": "previous_broker_epoch"}]}
        )  # fmt: skip
        verdict = run(scenario, ("model", "impl", "kafka" if release is None else f"kafka:{release}"))
        if verdict.violations:
            differ.append((markers, verdict.results[-1]))
    assert differ == []


def test_a_round_over_legacy_batches_is_unsupported_everywhere():
    """Kafka 4.x's cleaner writes no legacy batch as it was (filterTo: every magic 0/1 batch it keeps
    is rebuilt as v2, found by the crash machine against 4.4.0); model and impl do not model that,
    so a round over one is not judged, on every target, Kafka's adapter included."""
    wrapper = {"records": [{"timestamp": 1700000000000, "key": k, "value": v} for k, v in (("a", "0"), ("a", "1"), ("b", "2"))],
               "codec": "gzip", "magic": 1, "base_offset": 0, "leader_epoch": 0}  # fmt: skip
    steps = [{"op": "create"}, {"op": "append", "batches": [wrapper], "leader": False}, {"op": "roll"}, {"op": "clean"}]
    for targets in (("model", "impl"), ("kafka",)):
        verdict = run(_scenario(steps, **{"cleanup.policy": "compact"}), targets)
        assert not verdict.ok and not verdict.violations
        assert verdict.unsupported.endswith(sc.LEGACY_ROUND), targets


def test_a_round_meeting_a_control_batch_damage_made_is_unsupported():
    """A bit flip that makes a non-transactional batch a control batch, in a segment a clean
    shutdown left trusted: model and impl refuse to guess what Kafka's CleanedTransactionMetadata
    does (UnsupportedControlBatch), so the round is not judged (scenario.CLEANING_NOT_MODELLED)."""
    steps = [
        {"op": "create"}, _append("a"), {"op": "roll"}, _append("b"), {"op": "shutdown"},
        {"op": "corrupt", "path": "d0/t-0/00000000000000000000.log", "offset": 22, "kind": "bitflip", "seed": 5},
        {"op": "open"}, {"op": "clean"},
    ]  # fmt: skip
    verdict = run(_scenario(steps, **{"cleanup.policy": "compact"}), ("model", "impl"))
    assert not verdict.ok and not verdict.violations
    assert verdict.unsupported.startswith("step 7 (clean t-0): a log-cleaner round: UnsupportedControlBatch")


def _set_aside(kind: str, copy: bool) -> list[dict]:
    """A partition with a batch, shut down, its dir set aside as ``kind`` in d0 (``copy``: beside it)."""
    return [{"op": "create"}, _append("a"), {"op": "shutdown"},
            {"op": "rename_dir", "kind": kind, "copy": copy}, {"op": "open"}]  # fmt: skip


def test_a_promotion_in_one_data_dir_is_unsupported_on_kafka_too():
    """A future copy beside its current log in one data dir loads on Kafka 4.4.0 as the model says
    (a future log, keyed apart); its promotion, Kafka's rename over the current dir, is not
    modelled: unsupported on Kafka as on model and impl, never judged."""
    steps = [*_set_aside("future", True), {"op": "replace_current_with_future"}]
    for targets in (("model", "impl"), ("model", "kafka")):
        verdict = run(_scenario(steps), targets)
        assert not verdict.violations and "current log's data dir" in (verdict.unsupported or ""), targets
        assert [x.get("kind", "") for x in verdict.results[4]["model"]["loaded"]] == ["", "future"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["future", "stray"])
def test_a_set_aside_dir_is_followed_from_kafka_3_1_and_unsupported_before(kind):
    """The Scala LogManagers of 3.1–4.3 follow -future dirs as 4.4's does (-stray ones from 3.6,
    when KRaft's stray replicas came), and the Log generation's from 2.8; before, an open that
    meets one is unsupported, never passed."""
    steps = _set_aside(kind, kind == "future")
    for release in ("4.3.1", "3.9.1"):
        verdict = run(_scenario(steps), ("model", f"kafka:{release}"))
        assert verdict.ok, (release, verdict.violations, verdict.unsupported)
        assert [x.get("kind", "") for x in verdict.results[4][f"kafka:{release}"]["loaded"]] == (
            ["", "future"] if kind == "future" else ["stray"]
        )
    for release in ("2.7.2", *(("2.8.2", "3.4.1") if kind == "stray" else ())):
        verdict = run(_scenario(steps), ("model", f"kafka:{release}"))
        assert not verdict.violations and f"a -{kind} directory" in (verdict.unsupported or ""), verdict.unsupported


@pytest.mark.slow
def test_a_delete_dir_at_load_is_unsupported_before_kafka_3_9():
    """Before 3.9 Kafka's startup runs kafka-delete-logs after a fixed delay, not the model's none
    (log.initial.task.delay.ms came with 3.9): a load meeting a -delete dir is unsupported there
    and judged from 3.9."""
    case = sc.Scenario.load(os.path.join(CORPORA, "crash", "delete-dir-found-at-load-goes-without-delay.json"))
    assert run(case, ("model", "kafka:3.9.1")).ok
    verdict = run(case, ("model", "kafka:3.7.2"))
    assert not verdict.violations and "a -delete directory" in (verdict.unsupported or ""), verdict.unsupported


def test_a_running_kafka_holds_its_data_dirs_lock_and_a_crash_keeps_the_file():
    """Kafka's LogManager locks each data dir's .lock (FileChannel.tryLock): the kernel names the
    JVM as its holder, which is how klc load tells a live broker's dir (operator_tools.dir_lock).
    The adapter's crash lets the lock go without deleting the file, as a dead process does."""
    from operator_tools import dir_lock

    target = KafkaTarget(_scenario([]))
    try:
        target.apply(sc.Open())
        d0 = os.path.join(target.root, "d0")
        assert dir_lock.holder(d0) == target.jvm.process.pid
        target.halt()
        assert os.path.isfile(os.path.join(d0, ".lock")) and dir_lock.holder(d0) is None
    finally:
        target.close()


def test_a_recovery_pool_woken_for_a_queued_load_is_not_drained(tmp_path):
    """After a failed startup the adapter waits for the loads queued behind the failed one. A pool
    thread woken for one but not yet scheduled still reads WAITING in getTask: the adapter reads the
    pool's queue first, so it waits for that load (tests/java/klc/kafka/RecoveryPoolsCheck.java holds
    the wake-up back with a gate; a loaded machine made the stray case's answer miss its load)."""
    source = REPO / "tests" / "java" / "klc" / "kafka" / "RecoveryPoolsCheck.java"
    classpath = kafka_jvm.build()
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path), str(source)], check=True, timeout=120)
    done = subprocess.run(
        ["java", "-cp", os.pathsep.join([str(tmp_path), classpath]), "klc.kafka.RecoveryPoolsCheck"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (0, "drained after the load"), done.stderr[-2000:]


def test_a_startup_a_refused_name_failed_leaves_no_jvm_behind_at_quit(tmp_path):
    """Kafka's loadLogs never shuts down the recovery pool of a data dir loaded before a later dir's
    partition name failed the startup: its threads idle, and the adapter counts them drained (the
    answer comes at once). At quit the JVM ends anyway, not waiting on Kafka's threads."""
    (tmp_path / "d0" / "a-0").mkdir(parents=True)
    (tmp_path / "d0" / "a-0" / "00000000000000000000.log").write_bytes(b"")
    (tmp_path / "d1" / "t-x").mkdir(parents=True)
    jvm = kafka_jvm.Jvm(kafka_jvm.build())
    try:
        jvm.request({"op": "configure", "root": str(tmp_path), "data_dirs": ["d0", "d1"], "config": {}, "clock_ms": 0})
        answer = jvm.request({"op": "open", "now_ms": 0}, timeout_s=30)["ok"]
        assert answer["started"] is False and [x["partition"] for x in answer["loaded"]] == ["a-0", "t-x"]
    finally:
        jvm.stop()
    assert jvm.process.returncode == 0  # quit, not killed after stop's 5 s
