"""A user's Kafka build as the kafka target (docs/gate.md): its jars replace the release's, its
version picks the adapter, a classpath that is not one Kafka is refused in one line, and the gate
turns red on a build broken at the bytecode level.  ``pytest --kafka-classpath PATH`` (``tox -e
kafka -- --kafka-classpath PATH``) also gates the build given."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance import regressions
from conformance.campaign import table
from conformance.campaign.tasks import COLUMNS, Task
from conformance.cli import main
from conformance.gate import run_gate
from conformance.regressions import CORPORA
from conformance.targets import kafka_build, kafka_jvm
from conformance.targets.kafka import KafkaTarget
from tests.kafka_patch import copy_of, release_libs, remove_call

ROLL_CASE = os.path.join(CORPORA, "log", "roll-on-segment-bytes.json")
MARKER_CASE = os.path.join(CORPORA, "KAFKA-10471", "marker-deleted-before-loading.json")
LOG_MANAGER = "org/apache/kafka/storage/internals/log/LogManager"
MARKER_DELETE = "org/apache/kafka/storage/internals/checkpoint/CleanShutdownFileHandler.delete"


@pytest.fixture(autouse=True)
def no_build_leaks():
    """No build given from outside: each test names its own (klc restores the variable it sets), and
    the JVMs of its builds are stopped after it."""
    saved = os.environ.pop(kafka_jvm.BUILD_VARIABLE, None)
    started = set(kafka_jvm._SHARED)
    yield
    os.environ.pop(kafka_jvm.BUILD_VARIABLE, None)
    if saved is not None:
        os.environ[kafka_jvm.BUILD_VARIABLE] = saved
    for classpath in set(kafka_jvm._SHARED) - started:  # a test build's JVM serves no later test
        if not any(kafka_jvm._is_kafkas_own(p) for p in classpath.split(os.pathsep)):
            kafka_jvm._SHARED.pop(classpath).stop()


def _replay(*args: str):
    return CliRunner().invoke(main, ["replay", "--target", "kafka", *args])


def _not_kafka_jar(folder: Path) -> Path:
    jar = folder / "other.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("com/example/Thing.class", b"\xca\xfe\xba\xbe")
    return jar


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda t: t / "empty", "a directory with no jar in it"),
        (lambda t: f"{t / 'empty'}/*", "matches no jar"),
        (lambda t: t / "nowhere", "no such file or directory"),
        (lambda t: (t / "notes.txt", (t / "notes.txt").write_text("x"))[0], "not a jar"),
        (lambda t: _not_kafka_jar(t), "no Kafka log classes in 1 jar(s)"),
    ],
    ids=["empty-dir", "glob-of-nothing", "missing", "not-a-jar", "no-kafka-classes"],
)
def test_a_classpath_without_kafka_is_refused_in_one_line(tmp_path, make, said):
    (tmp_path / "empty").mkdir()
    result = _replay("--kafka-classpath", str(make(tmp_path)), ROLL_CASE)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and said in result.output, result.output
    assert "PASS" not in result.output


def test_kafka_clients_alone_has_no_log_classes(tmp_path):
    clients = [j for j in kafka_jvm.release_build().jars if "kafka-clients" in j]
    result = _replay("--kafka-classpath", clients[0], ROLL_CASE)
    assert result.exit_code == 2 and "no Kafka log classes" in result.output, result.output


def test_two_versions_or_two_copies_of_a_class_are_refused(tmp_path):
    pinned, old = kafka_jvm.release_build(), kafka_jvm.release_build("2.8.2")
    with pytest.raises(kafka_build.BuildRefused, match=r"two Kafka versions in one classpath: 2\.8\.2 .*, 4\.4\.0"):
        kafka_build.inspect_jars([*pinned.jars, *old.jars], "mixed")
    storage = next(j for j in pinned.jars if os.path.basename(j).startswith("kafka-storage-4"))
    twin = tmp_path / "kafka-storage-copy-4.4.0.jar"
    twin.write_bytes(Path(storage).read_bytes())
    assert kafka_build.inspect_jars([*pinned.jars, str(twin)], "same bytes").jars == pinned.jars
    with zipfile.ZipFile(twin, "a") as z:  # another build of the same version: other bytes
        z.writestr("META-INF/rebuilt", "yes")
    with pytest.raises(kafka_build.BuildRefused, match=r"two copies of org\.apache\.kafka\..* one build at a time"):
        kafka_build.inspect_jars([*pinned.jars, str(twin)], "twice")


def test_a_partial_build_is_refused_naming_what_is_missing(tmp_path):
    libs = release_libs(tmp_path, "4.3.1")
    (libs / "kafka_2.13-4.3.1.jar").unlink()  # 4.1–4.3 keep LogManager in the broker's jar
    result = _replay("--kafka-classpath", str(libs), ROLL_CASE)
    assert result.exit_code == 2 and "lack kafka.log.LogManager" in result.output, result.output


def test_a_target_the_jars_contradict_is_refused(tmp_path):
    libs = release_libs(tmp_path, None)
    result = CliRunner().invoke(main, ["replay", "--target", "kafka:2.8.2", "--kafka-classpath", str(libs), ROLL_CASE])
    assert result.exit_code == 2, result.output
    assert "--target kafka:2.8.2 contradicts the build's jars, which are Kafka 4.4.0" in result.output


def test_klc_leaves_its_caller_s_environment_as_it_was(tmp_path):
    """The build a command judges is set for its own targets and workers only: a CliRunner (or any
    in-process caller) finds KLC_KAFKA_CLASSPATH as it was, and its next kafka target runs the release."""
    libs = release_libs(tmp_path, None)
    result = _replay("--kafka-classpath", str(libs), ROLL_CASE)
    assert result.exit_code == 0, result.output
    assert kafka_jvm.BUILD_VARIABLE not in os.environ
    target = KafkaTarget(regressions.cases()[0].scenario)
    try:
        assert target.build is None and kafka_jvm._is_kafkas_own(target.jvm.classpath.split(os.pathsep)[1])
    finally:
        target.close()


def test_a_build_s_identity_is_its_jars():
    """Version and commit as kafka-version.properties has them; the digest changes with any jar."""
    build = kafka_jvm.release_build()
    assert (build.version, build.release, build.line) == (kafka_jvm.PINNED, kafka_jvm.PINNED, (4, 4))
    assert len(build.commit) == 16 and build.commit != "unknown"
    fewer = kafka_build.inspect_jars([j for j in build.jars if "kafka-storage-api" not in j], "fewer")
    assert fewer.digest != build.digest and len(build.digest) == 64


# the cases each release records a verdict for (one pass, one not), judged on its stock jars and on
# the same jars given as a user's build
BUILD_CASES = {
    "4.3.1": ("KAFKA-10207/zeroed-final-time-entry-after-a-clean-shutdown.json", "KAFKA-7283/clean-restart-opens-only-the-active-indexes.json"),
    "2.8.2": ("KAFKA-12520/swap-completed-by-renames-after-a-crash-in-cleaning.json", "KAFKA-10101/recovery-point-stays-after-unclean-recovery.json"),
}  # fmt: skip


@pytest.mark.no_cover  # the JVM's time, not Python's lines
# 2.8.2 (the Scala Log generation) nightly: the gate judges 4.3.1 given as a build, and 2.8.2's
# own jars by the historical cases recorded on it
@pytest.mark.parametrize(
    "release", [pytest.param(r, marks=[pytest.mark.slow] if r == "2.8.2" else []) for r in sorted(BUILD_CASES)]
)
def test_a_release_given_as_a_build_is_judged_by_its_own_adapter(tmp_path, monkeypatch, release):
    libs = release_libs(tmp_path, release)
    cases = [c for c in regressions.cases() if c.name in BUILD_CASES[release]]
    stock = {c.name: regressions.replay(c, f"kafka:{release}") for c in cases}
    monkeypatch.setenv(kafka_jvm.BUILD_VARIABLE, str(libs))
    target = KafkaTarget(cases[0].scenario)
    try:
        assert target.build.version == release and target.jvm.version == release
        jars = target.classpath.split(os.pathsep)
        assert not [j for j in jars if kafka_jvm._is_kafkas_own(j)], "the release's own Kafka jars joined the build"
        assert jars[0].endswith("-1.jar") and str(libs) in jars[1]
    finally:
        target.close()
    for case in cases:
        got = regressions.replay(case, f"kafka:{release}")
        assert (
            regressions.verdict_of(got) == regressions.verdict_of(stock[case.name]) == case.verdicts[f"kafka:{release}"]
        )
        assert str(got) == str(stock[case.name])
    assert {regressions.verdict_of(stock[c.name]) for c in cases} != {"pass"}  # one case does not pass
    out = CliRunner().invoke(
        main, ["replay", "--json", "--target", "kafka", "--kafka-classpath", str(libs), cases[0].path]
    )
    judged = json.loads(out.output.splitlines()[0])["kafka_build"]
    assert judged["version"] == release and judged["digest"] == kafka_build.inspect(str(libs)).digest


@pytest.mark.no_cover
def test_a_build_patched_to_keep_the_clean_shutdown_marker_turns_the_gate_red(tmp_path):
    """KAFKA-10471's rule: LogManager deletes the clean-shutdown marker as the load starts.  The
    pinned release's kafka-storage with that one call removed (ASM, kafka-patch/) fails the gate on
    the rule's own case, naming it; the same jars unpatched pass it."""
    stock = release_libs(tmp_path / "stock", None)
    broken = copy_of(stock, tmp_path / "broken")
    remove_call(broken, f"kafka-storage-{kafka_jvm.PINNED}.jar", LOG_MANAGER, "loadLogs", MARKER_DELETE)
    runs = {}
    for name, libs in (("stock", stock), ("broken", broken)):
        out = tmp_path / f"out-{name}"
        args = ["gate", "--kafka-classpath", str(libs), "--budget-seconds", "0", "--out", str(out), MARKER_CASE]
        runs[name] = (CliRunner().invoke(main, args), out)
    ok, _ = runs["stock"]
    assert ok.exit_code == 0 and ok.output.splitlines()[-1].startswith("GATE PASS"), ok.output
    red, out = runs["broken"]
    last = red.output.splitlines()[-1]
    assert red.exit_code == 1 and last.startswith("GATE FAIL on Kafka 4.4.0"), red.output
    assert "KAFKA-10471/marker-deleted-before-loading.json" in last and "d0/.kafka_cleanshutdown: only in kafka" in last
    junit = (out / "junit.xml").read_text()
    assert 'failures="1"' in junit and f"--kafka-classpath '{broken}'" in junit
    report = json.loads((out / "gate.json").read_text())
    assert report["kafka_build"]["digest"] != kafka_build.inspect(str(stock)).digest
    assert [r["outcome"] for r in report["replays"]] == ["unexpected"]


def test_campaign_seeds_are_keyed_by_the_build(tmp_path):
    """A rerun on another build of the same version runs every seed again; a table written before
    builds were keyed still reads (its rows name no build)."""
    one = Task("c", 1, "all", "kafka:4.3.1", kafka_build="a" * 64)
    assert one.key != Task("c", 1, "all", "kafka:4.3.1", kafka_build="b" * 64).key
    assert one.key == Task("c", 1, "all", "kafka:4.3.1", kafka_build="a" * 64, kafka_classpath="/x").key
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "results"
    folder.mkdir()
    old = table.SCHEMA.remove(table.SCHEMA.get_field_index("kafka_build"))
    row = {c: None for c in COLUMNS if c != "kafka_build"} | {"seed": 3, "target": "kafka"}
    pq.write_table(pa.Table.from_pylist([row], schema=old), folder / "old.parquet")
    table.append(str(folder), [{"seed": 4, "target": "kafka", "kafka_build": "a" * 64}], "new")
    assert sorted((r["seed"], r["kafka_build"]) for r in table.read(str(folder))) == [(3, None), (4, "a" * 64)]


@pytest.mark.no_cover
def test_the_given_build_passes_the_gate(kafka_classpath, monkeypatch):
    """``--kafka-classpath PATH``: every corpus case recording a verdict for the build's release gets
    it on the build, and the crash machine finds nothing against the model."""
    if not kafka_classpath:
        pytest.skip("no build given (pytest --kafka-classpath PATH; tox -e kafka -- --kafka-classpath PATH)")
    build = kafka_build.inspect(kafka_classpath)
    monkeypatch.setenv(kafka_jvm.BUILD_VARIABLE, kafka_classpath)
    adapter = kafka_jvm.adapter_release(build)
    report = run_gate(60.0, print, "kafka" if adapter is None else f"kafka:{adapter}")
    print(build.describe())
    assert report.harness_error is None, report.harness_error
    assert report.ok, "\n".join(report.violations)


def test_check_s_target_options_are_checked_before_anything_runs(tmp_path):
    runner = CliRunner()
    bogus = runner.invoke(main, ["check", "--target", "kafka:four"])
    assert bogus.exit_code == 2 and "use impl, kafka or kafka:VERSION" in bogus.output
    stray = runner.invoke(main, ["check", "--kafka-classpath", str(tmp_path)])
    assert stray.exit_code == 2 and "goes with --target kafka" in stray.output
    impl = runner.invoke(main, ["gate", "--target", "impl"])
    assert impl.exit_code == 2 and "klc gate judges Kafka" in impl.output
    not_a_case = runner.invoke(main, ["gate", str(tmp_path / "mine.json")])
    assert not_a_case.exit_code == 2 and "mine.json: not a case of the corpus" in not_a_case.output


def test_junit_xml_says_what_failed_what_was_expected_and_what_was_judged():
    import xml.etree.ElementTree as ET

    from conformance.gate import GateReport, junit_xml

    report = GateReport(target="kafka", kafka_build={"version": "4.4.0", "digest": "d" * 64})
    report.replays = [
        {"case": "log/a.json", "path": "corpora/log/a.json", "on": "kafka", "verdict": "fail: conforms",
         "recorded": "pass", "outcome": "unexpected", "witness": "conforms violated at step 1: x", "seconds": 1.0},
        {"case": "log/b.json", "path": "corpora/log/b.json", "on": "kafka", "verdict": "unsupported",
         "recorded": "unsupported", "outcome": "expected", "witness": "unsupported: clean", "seconds": 0.5},
        {"case": "log/c.json", "path": "corpora/log/c.json", "on": "kafka", "verdict": "pass",
         "recorded": "pass", "outcome": "pass", "witness": None, "seconds": 0.5},
    ]  # fmt: skip
    report.machine_cases = {"crash machine (model vs kafka)": 7}
    report.violations = [
        "corpora/log/a.json on kafka: ...",
        "crash machine (model vs kafka): prefix violated at step 3",
    ]
    suite = ET.fromstring(junit_xml(report, "klc replay --target kafka --kafka-classpath 'B'"))
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped"), suite.get("errors")) == (
        "4",
        "2",
        "1",
        "0",
    )
    first = suite.find("testcase/failure")
    assert (
        "conforms violated at step 1" in first.text
        and "klc replay --target kafka --kafka-classpath 'B' corpora/log/a.json" in first.text
    )
    assert {p.get("name"): p.get("value") for p in suite.iter("property")}["kafka.version"] == "4.4.0"
    report.harness_error = "kafka target: the JVM died"
    assert ET.fromstring(junit_xml(report)).get("errors") == "1" and not report.ok


def test_a_source_tree_is_read_by_its_build_outputs(tmp_path):
    """A Kafka checkout after ``./gradlew jar``: every module's build/libs (test, source and javadoc
    jars left out: a test jar holds copies of no main class, but would be a second build) and
    core's dependant-libs; before the build, one line says to run it."""
    tree = tmp_path / "kafka"
    (tree / "clients").mkdir(parents=True)
    (tree / "settings.gradle").write_text("rootProject.name = 'kafka'\n")
    with pytest.raises(kafka_build.BuildRefused, match="a Kafka source tree with no built jar"):
        kafka_build.jars_of(str(tree))
    modules = {"kafka-clients": "clients", "kafka-storage-api": "storage/api", "kafka-storage": "storage",
               "kafka-server-common": "server-common"}  # fmt: skip
    pinned = kafka_jvm.release_build()
    for jar in pinned.jars:
        module = modules[kafka_build.artifact_of(jar)]
        libs = tree / module / "build" / "libs"
        libs.mkdir(parents=True, exist_ok=True)
        (libs / os.path.basename(jar)).symlink_to(jar)
    storage = next(j for j in pinned.jars if kafka_build.artifact_of(j) == "kafka-storage")
    (tree / "storage" / "build" / "libs" / "kafka-storage-4.4.0-test.jar").symlink_to(storage)
    deps = tree / "core" / "build" / "dependant-libs-2.13.16"
    deps.mkdir(parents=True)
    (deps / os.path.basename(storage)).symlink_to(storage)  # copyDependantLibs copies the modules' jars too
    third_party = [j for j in kafka_jvm.build_for(None).split(os.pathsep)[1:] if not kafka_jvm._is_kafkas_own(j)]
    for jar in third_party:
        (deps / os.path.basename(jar)).symlink_to(jar)
    build = kafka_build.inspect(str(tree))
    assert len(build.jars) == len(pinned.jars) + len(third_party)
    assert (build.version, build.commit) == (pinned.version, pinned.commit)
    assert not any(j.endswith("-test.jar") for j in build.jars)
    assert kafka_jvm.classpath_of(build).split(os.pathsep)[1 : 1 + len(build.jars)] == list(build.jars)


def test_a_worker_whose_jars_are_not_the_campaign_s_build_is_a_harness_error():
    """A task names the digest of the jars its campaign judges; a worker that would judge others
    (another machine's libs/, a rebuilt dir) records a harness error saying so, never a verdict."""
    from conformance.campaign.tasks import run_task

    row = run_task(Task("c", 1, "all", "kafka", examples=1, steps=2, kafka_build="0" * 64))
    assert row["status"] == "error" and row["kafka_build"] == "0" * 64
    assert "not the campaign's build sha256:0000000000000000" in row["witness"], row["witness"]
    assert row["scenarios"] == 0


@pytest.mark.no_cover
def test_klc_load_judges_the_build_and_says_so(tmp_path):
    libs = release_libs(tmp_path / "build", "2.8.2")
    (tmp_path / "d" / "t-0").mkdir(parents=True)
    (tmp_path / "d" / "t-0" / "00000000000000000000.log").write_bytes(b"\0" * 100)
    text = CliRunner().invoke(main, ["load", "--target", "kafka", "--kafka-classpath", str(libs), str(tmp_path / "d")])
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[0] == "as Apache Kafka 2.8.2 loads it (the kafka target)"
    assert lines[-1].startswith("judged: Kafka 2.8.2 (commit ") and str(libs) in lines[-1]
    args = ["load", "--json", "--target", "kafka", "--kafka-classpath", str(libs), str(tmp_path / "d")]
    report = json.loads(CliRunner().invoke(main, args).output)
    assert report["kafka"] == "2.8.2" and report["kafka_build"]["digest"] == kafka_build.inspect(str(libs)).digest


def test_a_harness_error_stops_the_gate_with_exit_2_never_a_verdict(tmp_path, monkeypatch):
    """A JVM that dies mid-gate: the gate stops there, says so in its last line and in junit.xml
    (an error, not a failure), and exits 2."""

    def dead(case, target, backend="sim"):
        raise kafka_jvm.KafkaTargetError("kafka target: the JVM died during 'open' (exit 137)")

    monkeypatch.setattr(regressions, "replay", dead)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["gate", "--budget-seconds", "0", "--out", str(out), ROLL_CASE])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1].startswith("GATE ERROR on Kafka 4.4.0"), result.output
    assert "the JVM died during 'open'" in result.output.splitlines()[-1]
    assert 'errors="1"' in (out / "junit.xml").read_text() and 'failures="0"' in (out / "junit.xml").read_text()
    assert json.loads((out / "gate.json").read_text())["ok"] is False


def test_an_unpublished_version_is_run_by_its_line_s_adapter():
    """A source build's -SNAPSHOT: the 4.4 line by the pinned adapter, an older line by its last
    release's; a --target of another release still contradicts it."""

    def build(version):
        return kafka_build.KafkaBuild("tree", (), version, "abc", "0" * 64, ())

    assert kafka_jvm.adapter_release(build("4.4.1-SNAPSHOT")) is None
    assert kafka_jvm.adapter_release(build("4.3.2-SNAPSHOT")) == "4.3.1"
    assert kafka_jvm.adapter_release(build("4.3.1")) == "4.3.1"
    assert not kafka_jvm.contradicts("4.3.1", build("4.3.2-SNAPSHOT"))
    assert kafka_jvm.contradicts("4.2.1", build("4.3.2-SNAPSHOT"))
    assert kafka_jvm.contradicts("4.4.0", build("4.4.1")) and not kafka_jvm.contradicts(None, build("4.4.1"))
    assert not kafka_jvm.contradicts("4.4.0", build("4.4.1-SNAPSHOT"))
