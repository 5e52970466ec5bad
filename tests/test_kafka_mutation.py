"""``klc mutate-kafka`` (docs/kafka-mutation.md): PIT's results read, mutants built as jars, cases
selected by coverage, results kept and reported — cheap checks on fixtures cut from a real run of
PIT on Kafka 4.3.1's OffsetIndex; the nightly runs PIT and the suite end to end on OffsetIndex."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import attrs
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from conformance.cli import main
from conformance.kafka_mutation import mutant_build, pit, report, results, run, suite
from conformance.kafka_mutation.pit import Mutant, MutationError

FIXTURES = Path(__file__).parent / "fixtures" / "kafka-mutation"
OFFSET_INDEX = "org.apache.kafka.storage.internals.log.OffsetIndex"


def pit_report(tmp_path: Path) -> Path:
    """The fixture's PIT report, with a placeholder for each exported class file (Kafka's bytecode,
    mutated or not, is never committed)."""
    out = tmp_path / "pit"
    shutil.copytree(FIXTURES / "pit-OffsetIndex", out)
    for details in out.rglob("details.txt"):
        (details.parent / f"{OFFSET_INDEX}.class").write_bytes(b"\xca\xfe\xba\xbe placeholder")
    return out


def test_pit_results_are_joined_with_the_exported_mutants(tmp_path):
    found = {m.id: m for m in pit.mutants(pit_report(tmp_path))}
    assert sorted(found) == ["OffsetIndex/1", "OffsetIndex/23", "OffsetIndex/30", "OffsetIndex/8"]
    removed = found["OffsetIndex/23"]
    assert (removed.method, removed.line, removed.mutator) == ("append", 144, "VoidMethodCallMutator")
    assert removed.description == "removed call to org/apache/kafka/storage/internals/log/OffsetIndex::inLock"
    assert removed.kafka_status == "KILLED" and removed.kafka_killed
    assert "appendTooMany" in removed.killing_test
    assert removed.signature == f"{OFFSET_INDEX}.append(JI)V"
    survivor = found["OffsetIndex/1"]
    assert (survivor.method, survivor.line, survivor.kafka_status, survivor.killing_test) == ("sanityCheck", 80, "SURVIVED", "")
    assert not survivor.kafka_killed
    assert found["OffsetIndex/30"].method == "lambda$append$0"
    assert all(os.path.exists(m.class_file) for m in found.values())


def test_a_result_without_its_exported_class_is_refused(tmp_path):
    out = pit_report(tmp_path)
    shutil.rmtree(next(out.rglob("mutants/23")))
    with pytest.raises(MutationError, match="has no exported class"):
        pit.mutants(out)


def test_an_exported_mutant_missing_from_the_results_is_refused(tmp_path):
    out = pit_report(tmp_path)
    xml = out / "mutations.xml"
    xml.write_text("\n".join(line for line in xml.read_text().splitlines() if "<lineNumber>98<" not in line))
    with pytest.raises(MutationError, match="1 exported mutant"):
        pit.mutants(out)


def test_results_that_are_not_xml_are_refused(tmp_path):
    out = pit_report(tmp_path)
    (out / "mutations.xml").write_text("<mutations><mutation")
    with pytest.raises(MutationError, match="not PIT's XML results"):
        pit.mutants(out)


def _jar(path: Path, entries: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return str(path)


def test_the_patched_jar_replaces_exactly_the_mutated_class(tmp_path):
    mutant = pit.mutants(pit_report(tmp_path))[0]
    entry = mutant_build.entry_of(OFFSET_INDEX)
    stock = _jar(tmp_path / "kafka-storage-4.3.1.jar", {entry: b"stock", "a/Other.class": b"other", "kafka/kafka-version.properties": b"version=4.3.1"})
    patched = mutant_build.patched_jar(stock, mutant, str(tmp_path / "m"))
    assert os.path.basename(patched) == "kafka-storage-4.3.1.jar"
    with zipfile.ZipFile(patched) as z, zipfile.ZipFile(stock) as s:
        assert z.namelist() == s.namelist()
        assert z.read(entry) == Path(mutant.class_file).read_bytes()
        assert z.read("a/Other.class") == b"other"
    cp = mutant_build.mutant_classpath(("/m2/kafka-clients-4.3.1.jar", stock), patched)
    assert cp.split(os.pathsep) == ["/m2/kafka-clients-4.3.1.jar", patched]


CHECKPOINT_FILE = "org.apache.kafka.server.common.CheckpointFile"


def _release_jars(tmp_path: Path) -> list[str]:
    """Stand-ins for three of the release's jars (and a test jar, which is never Kafka's code)."""
    return [
        _jar(tmp_path / "kafka-storage-4.3.1.jar", {mutant_build.entry_of(OFFSET_INDEX): b"stock index"}),
        _jar(tmp_path / "kafka-server-common-4.3.1.jar", {mutant_build.entry_of(CHECKPOINT_FILE): b"stock checkpoint"}),
        _jar(tmp_path / "kafka_2.13-4.3.1.jar", {"kafka/log/LogManager.class": b"scala"}),
    ]


def test_the_release_jars_are_told_from_test_jars_and_libraries(tmp_path):
    jars = _release_jars(tmp_path)
    classpath = os.pathsep.join([*jars, "/m2/kafka-storage-4.3.1-test.jar", "/m2/scala-library-2.13.18.jar",
                                 "/m2/kafka-clients-4.3.0.jar"])  # fmt: skip
    assert pit.kafka_jars(classpath, "4.3.1") == tuple(jars)
    with pytest.raises(MutationError, match="no kafka-storage-4.3.1.jar on PIT's classpath"):
        pit.kafka_jars(os.pathsep.join(jars[1:]), "4.3.1")


def test_a_class_is_found_in_whichever_release_jar_holds_it(tmp_path):
    from conformance.kafka_mutation import run

    jars = tuple(_release_jars(tmp_path))
    assert pit.jar_of(CHECKPOINT_FILE, jars) == jars[1]
    assert pit.jar_of("kafka.log.LogManager", jars) == jars[2]
    assert run.resolve_classes(("CheckpointFile", "OffsetIndex", OFFSET_INDEX), jars, "4.3.1") == [CHECKPOINT_FILE, OFFSET_INDEX]
    with pytest.raises(MutationError, match=r"^--classes Nope: no class Nope in any of Kafka 4.3.1's jars "
                                            r"\(kafka-server-common, kafka-storage, kafka_2.13\)$"):  # fmt: skip
        run.resolve_classes(("OffsetIndex", "Nope"), jars, "4.3.1")
    with pytest.raises(MutationError, match="no class a.B in kafka-storage-4.3.1.jar"):
        pit.jar_of("a.B", jars[:1])


def test_a_mutant_of_another_jar_patches_that_jar(tmp_path):
    """A CheckpointFile mutant (kafka-server-common) is built as the release's jars with
    kafka-server-common patched and kafka-storage as released; hot swap takes the stock bytes to
    swap back from the same jar."""
    from conformance.kafka_mutation import hot_swap

    jars = _release_jars(tmp_path)
    class_file = tmp_path / "mutant.class"
    class_file.write_bytes(b"mutated checkpoint")
    mutant = Mutant("CheckpointFile/3", CHECKPOINT_FILE, "write", "(Ljava/util/Collection;)V", 90, "VoidMethodCallMutator",
                    "removed call to flush", "7", "SURVIVED", "", str(class_file))  # fmt: skip
    patched = mutant_build.patched_jar(pit.jar_of(mutant.clazz, jars), mutant, str(tmp_path / "m"))
    assert os.path.basename(patched) == "kafka-server-common-4.3.1.jar"
    with zipfile.ZipFile(patched) as z:
        assert z.read(mutant_build.entry_of(CHECKPOINT_FILE)) == b"mutated checkpoint"
    assert mutant_build.mutant_classpath(tuple(jars), patched).split(os.pathsep) == [jars[0], patched, jars[2]]
    hot_swap._STATE["stock"] = str(tmp_path / "stock")
    assert Path(hot_swap._stock_class(jars, CHECKPOINT_FILE)).read_bytes() == b"stock checkpoint"
    assert Path(hot_swap._stock_class(jars, OFFSET_INDEX)).read_bytes() == b"stock index"


def test_classes_outside_the_log_layer_are_covered_too():
    """The coverage agent records the log layer, and a mutated class of another jar besides."""
    assert suite.prefixes_for([OFFSET_INDEX, CHECKPOINT_FILE, "kafka.log.LogManager"]) == suite.PREFIXES
    assert suite.prefixes_for([OFFSET_INDEX, "org.apache.kafka.server.util.Scheduler"]) == (
        *suite.PREFIXES, "org.apache.kafka.server.util.Scheduler"
    )


@pytest.mark.no_cover
def test_pits_classpath_holds_every_kafka_test_and_the_code_it_mutates():
    """kafka-mutation's Maven build puts every test class of KAFKA_TESTS (kafka-storage's and Scala
    core's test jars, unpacked) and the release's jars (kafka_2.13's and Scala's too) where PIT
    finds them."""
    if shutil.which("mvn") is None:
        pytest.skip("no Maven: kafka-mutation's classpath cannot be built")
    classpath, test_dirs, _agent = pit.build_module()
    assert {"kafka.log.LogLoaderTest", "kafka.log.LogManagerTest"} <= set(pit.CORE_TESTS)
    for test in pit.KAFKA_TESTS:
        entry = mutant_build.entry_of(test)
        assert any((d / entry).is_file() for d in test_dirs), f"{test}: in no unpacked test jar"
    names = {os.path.basename(e) for e in classpath.split(os.pathsep)}
    assert {"scala-library-2.13.18.jar", "kafka_2.13-4.3.1.jar", "kafka_2.13-4.3.1-test.jar", "kafka-metadata-4.3.1-test.jar"} <= names
    jars = pit.kafka_jars(classpath, pit.PINNED)
    assert os.path.basename(pit.jar_of(pit.CLASSES["CheckpointFile"], jars)) == "kafka-server-common-4.3.1.jar"
    assert os.path.basename(pit.jar_of(pit.CLASSES["LogLoader"], jars)) == "kafka-storage-4.3.1.jar"


def test_a_jar_without_the_mutated_class_is_refused(tmp_path):
    mutant = pit.mutants(pit_report(tmp_path))[0]
    stock = _jar(tmp_path / "kafka-storage-4.3.1.jar", {"a/Other.class": b"other"})
    with pytest.raises(MutationError, match="no org/apache/kafka/storage/internals/log/OffsetIndex.class"):
        mutant_build.patched_jar(stock, mutant, str(tmp_path / "m"))


def _base(cases: dict, machine=None) -> dict:
    return {"release": "4.3.1", "digest": "d", "cases": cases, "machine": machine}


def test_cases_are_chosen_by_the_method_they_run(tmp_path):
    found = {m.id: m for m in pit.mutants(pit_report(tmp_path))}
    base = _base({
        "a-slow": {"verdict": "pass", "seconds": 9.0, "methods": [f"{OFFSET_INDEX}.append(JI)V"]},
        "z-quick": {"verdict": "pass", "seconds": 1.0, "methods": [f"{OFFSET_INDEX}.append(JI)V", f"{OFFSET_INDEX}.sanityCheck()V"]},
        "other": {"verdict": "pass", "seconds": 0.5, "methods": [f"{OFFSET_INDEX}.lookup(J)Lx;"]},
        "none": {"verdict": "pass", "seconds": 0.1, "methods": ["org.apache.kafka.storage.internals.log.TimeIndex.entry(I)V"]},
    })  # fmt: skip
    assert suite.covering(found["OffsetIndex/23"], base) == ["z-quick", "a-slow"]  # the quickest first
    assert suite.covering(found["OffsetIndex/1"], base) == ["z-quick"]
    # a lambda of append (no case entered it by its name): the cases that ran append
    assert suite.covering(found["OffsetIndex/30"], base) == ["z-quick", "a-slow"]
    # a method no case entered by its name: every case that entered the class
    lookup_lambda = attrs.evolve(found["OffsetIndex/30"], method="lambda$parseEntry$0")
    assert suite.covering(lookup_lambda, base) == ["other", "z-quick", "a-slow"]
    assert not suite.machine_covers(found["OffsetIndex/23"], base)
    machine = {"examples": 5, "witness": None, "methods": [f"{OFFSET_INDEX}.append(JI)V"], "seconds": 1}
    assert suite.machine_covers(found["OffsetIndex/23"], _base({}, machine))
    assert not suite.machine_covers(found["OffsetIndex/23"], _base({}, machine | {"witness": "fails on stock"}))


def test_a_mutant_no_case_runs_is_not_judged_and_starts_nothing(tmp_path):
    mutant = pit.mutants(pit_report(tmp_path))[0]
    row = suite.judge(mutant, _base({"c": {"verdict": "pass", "seconds": 1, "methods": []}}), "/no/such.jar", str(tmp_path))
    assert row["suite_status"] == suite.NO_COVERAGE and row["cases_run"] == 0


def test_results_are_kept_and_read_back(tmp_path):
    rows = [{"key": "k1", "release": "4.3.1", "mutant": "OffsetIndex/1", "line": 80, "suite_status": "survived", "hot_swap": True}]
    results.append(str(tmp_path / "results"), rows, "w1")
    back = results.read(str(tmp_path / "results"))
    assert back[0]["key"] == "k1" and back[0]["line"] == 80 and back[0]["hot_swap"] is True
    assert results.read(str(tmp_path / "none")) == []
    (tmp_path / "results" / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(results.TableError, match="junk.parquet: not a readable Parquet"):
        results.read(str(tmp_path / "results"))


def test_a_results_file_from_before_the_kafka_io_column_reads_as_judged_without_it(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    old_schema = pa.schema([f for f in results.SCHEMA if f.name != "kafka_io"])
    row = {"key": "k1", "suite_status": "survived", "hot_swap": True}
    pq.write_table(pa.Table.from_pylist([row], schema=old_schema), str(folder / "old.parquet"))
    results.append(str(folder), [dict(row, key="k2", kafka_io=True)], "new")
    back = {r["key"]: r for r in results.read(str(folder))}
    assert back["k1"]["kafka_io"] is False and back["k2"]["kafka_io"] is True


def test_with_kafka_io_the_survivors_judged_without_it_are_judged_again():
    capturing = run.Config(again=True, kafka_io=True, max_cases=12)
    plain = run.Config(again=True, max_cases=12)
    survivor = {"suite_status": suite.SURVIVED, "cases_run": 12, "covering_cases": 40, "kafka_io": False}
    assert run._cut_short(survivor, capturing) and not run._cut_short(survivor, plain)
    assert not run._cut_short(survivor | {"kafka_io": True}, capturing)  # judged with it already
    assert not run._cut_short(survivor | {"suite_status": suite.KILLED}, capturing)


def test_a_hot_swap_kill_the_stock_class_also_shows_is_judged_again_in_a_fresh_jvm(tmp_path, monkeypatch):
    from conformance.kafka_mutation import hot_swap

    mutant = pit.mutants(pit_report(tmp_path))[0]
    base = _base({"c": {"verdict": "pass", "seconds": 1, "methods": [mutant.signature]}})
    verdicts = iter([{"suite_status": suite.KILLED, "witness_case": "c", "witness": "w", "cases_run": 1},
                     {"suite_status": suite.SURVIVED, "witness_case": None, "witness": None, "cases_run": 1}])  # fmt: skip
    stopped = []
    monkeypatch.setattr(hot_swap, "_control", lambda task: "ctl")
    monkeypatch.setattr(hot_swap, "swap", lambda *a: None)
    monkeypatch.setattr(hot_swap, "_swap_back", lambda *a: True)
    monkeypatch.setattr(hot_swap.kafka_jvm, "stop_shared", lambda: stopped.append(1))
    monkeypatch.setattr(hot_swap.suite, "run_cases", lambda *a: next(verdicts))
    monkeypatch.setattr(hot_swap, "_stock_gives_stock_verdict", lambda name, base: False)
    row = hot_swap.judge(mutant, base, {"work": str(tmp_path), "kafka_jars": ["x.jar"]})
    assert row["suite_status"] == suite.SURVIVED and stopped == [1]  # the JVM's state, not the mutant
    verdicts = iter([{"suite_status": suite.KILLED, "witness_case": "c", "witness": "w", "cases_run": 1}] * 2)
    monkeypatch.setattr(hot_swap.suite, "run_cases", lambda *a: next(verdicts))
    row = hot_swap.judge(mutant, base, {"work": str(tmp_path), "kafka_jars": ["x.jar"]})
    assert row["suite_status"] == suite.HARNESS and "stock release differs on c" in row["witness"]
    monkeypatch.setattr(hot_swap, "_stock_gives_stock_verdict", lambda name, base: True)
    verdicts = iter([{"suite_status": suite.KILLED, "witness_case": "c", "witness": "w", "cases_run": 1}])
    row = hot_swap.judge(mutant, base, {"work": str(tmp_path), "kafka_jars": ["x.jar"]})
    assert row["suite_status"] == suite.KILLED and row["witness_case"] == "c"


def test_a_worker_the_system_killed_ends_the_run_in_one_line_keeping_the_waves_before(tmp_path, monkeypatch):
    import concurrent.futures.process

    class Executor:
        calls, stopped = 0, False

        def map(self, fn, items, progress):
            Executor.calls += 1
            if Executor.calls == 2:
                raise concurrent.futures.process.BrokenProcessPool("A process in the process pool was terminated")
            return [[{"key": f"k{Executor.calls}"}] for _ in items]

        def stop(self):
            Executor.stopped = True

    table = str(tmp_path / "results")
    seen = []
    with pytest.raises(MutationError, match="worker process died .* running the same command again resumes"):
        run.judge_waves(Executor(), [[{}], [{}], [{}]], {}, table, 1, seen.append)
    assert [r["key"] for r in results.read(table)] == ["k1"] and seen == [1] and Executor.stopped


def _row(mutant, kafka, suite_status, mutator="VoidMethodCallMutator", cls=OFFSET_INDEX) -> dict:
    return {"key": mutant, "release": "4.3.1", "kafka_build": "d", "mutant": mutant, "class": cls, "method": "m",
            "descriptor": "()V", "line": 1, "mutator": mutator, "description": "x", "kafka_status": kafka,
            "killing_test": "", "suite_status": suite_status, "witness_case": None, "witness": None,
            "covering_cases": 1, "cases_run": 1, "suite_seconds": 1.0, "hot_swap": True}  # fmt: skip


def test_the_report_puts_each_mutant_in_one_bucket(tmp_path):
    rows = [
        _row("a", "KILLED", "killed"), _row("b", "KILLED", "survived"), _row("c", "SURVIVED", "killed", "MathMutator"),
        _row("d", "SURVIVED", "survived", "MathMutator"), _row("e", "NO_COVERAGE", "no_coverage"),
        _row("f", "TIMED_OUT", "harness_error"), _row("g", "SURVIVED", "timed_out", cls="x.TimeIndex"),
    ]  # fmt: skip
    built = report.build(rows, {"release": "4.3.1", "classes": [OFFSET_INDEX], "kafka_tests": ["a.BTest"],
                                "mutators": "DEFAULTS", "machine_examples": 0})  # fmt: skip
    total = built["by_class"]["total"]
    assert (total["both"], total["kafka_only"], total["suite_only"], total["neither"], total["suite_harness_error"]) == (1, 1, 2, 2, 1)
    assert (total["kafka_killed"], total["suite_killed"]) == (3, 3)
    assert built["by_class"]["OffsetIndex"]["mutants"] == 6 and built["by_class"]["TimeIndex"]["suite_only"] == 1
    assert built["by_mutator"]["MathMutator"]["suite_only"] == 1
    assert sorted(r["mutant"] for r in built["survivors_of_both"]) == ["d", "e"]
    assert sorted(r["mutant"] for r in built["killed_by_suite_only"]) == ["c", "g"]
    json_path, html_path = report.write(str(tmp_path), built)
    assert json.loads(Path(json_path).read_text())["mutants"] == 7
    page = Path(html_path).read_text()
    assert "data:image/png;base64," in page and "Survivors of both (2)" in page


@pytest.mark.parametrize(
    "args, says",
    [
        (["--release", "4.4.0"], "--release 4.4.0: no mutation set-up for it (releases: 4.3.1)"),
        (["--classes", " , "], "--classes names no class"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(args, says):
    result = CliRunner().invoke(main, ["mutate-kafka", *args])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [f"klc mutate-kafka: {says}"]


def test_a_corpus_case_that_is_no_scenario_is_one_line(monkeypatch):
    from conformance.kafka_mutation import run
    from conformance.scenario import ScenarioError

    def refuse(config, progress):
        raise ScenarioError('corpora/log/x.json: "expect" has no "verdicts" with an "impl" entry')

    monkeypatch.setattr(run, "run", refuse)
    result = CliRunner().invoke(main, ["mutate-kafka"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        'klc mutate-kafka: corpora/log/x.json: "expect" has no "verdicts" with an "impl" entry'
    ]


def test_a_class_is_run_by_pit_again_only_when_kafkas_test_set_differs(tmp_path, monkeypatch):
    """``--kafka-tests storage`` judges a large class by kafka-storage's tests alone; PIT's kept
    report of a class is reused for the same set and redone for another."""
    from conformance.kafka_mutation import run

    ran = []
    monkeypatch.setattr(pit, "run_pit", lambda classes, out, release, tests: ran.append(tests) or out.mkdir(parents=True, exist_ok=True))
    monkeypatch.setattr(pit, "mutants", lambda folder: [])
    for kafka_tests in ("storage", "storage", "all", "storage"):
        run.pit_for("a.B", tmp_path, "4.3.1", lambda line: None, run.Config(kafka_tests=kafka_tests).tests)
    assert ran == [pit.STORAGE_TESTS, pit.KAFKA_TESTS, pit.STORAGE_TESTS]
    assert set(pit.CORE_TESTS) & set(pit.TEST_SETS["all"]) and not set(pit.CORE_TESTS) & set(pit.TEST_SETS["storage"])
    refused = CliRunner().invoke(main, ["mutate-kafka", "--kafka-tests", "core"])
    assert refused.exit_code == 2 and "'core' is not one of 'all', 'storage'" in refused.output


@pytest.mark.no_cover
def test_a_class_the_release_lacks_is_refused(tmp_path):
    if shutil.which("mvn") is None:
        pytest.skip("no Maven: kafka-mutation's classpath cannot be built")
    result = CliRunner().invoke(main, ["mutate-kafka", "--classes", "OffsetIndex,NoSuchIndex", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "klc mutate-kafka: --classes NoSuchIndex: no class NoSuchIndex in any of Kafka 4.3.1's jars (kafka-clients, "
        "kafka-coordinator-common, kafka-group-coordinator, kafka-group-coordinator-api, kafka-metadata, kafka-raft, "
        "kafka-server, kafka-server-common, kafka-share-coordinator, kafka-storage, kafka-storage-api, kafka-tools-api, "
        "kafka-transaction-coordinator, kafka_2.13)"
    )
    assert not (tmp_path / "pit").exists()  # refused before PIT ran


def test_no_maven_is_a_harness_error(tmp_path, monkeypatch):
    monkeypatch.setattr(pit, "MODULE", tmp_path / "kafka-mutation")  # nothing built there
    (tmp_path / "kafka-mutation").mkdir()
    (tmp_path / "kafka-mutation" / "pom.xml").write_text("<project/>")
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "mvn" else "/usr/bin/" + name)
    result = CliRunner().invoke(main, ["mutate-kafka", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "klc mutate-kafka: kafka-mutation: 'mvn' is not on PATH (Maven builds PIT's classpath)"
    ]


@pytest.mark.slow
@pytest.mark.no_cover
def test_offset_index_mutants_end_to_end(tmp_path):
    """PIT with Kafka 4.3.1's own tests on OffsetIndex, then this suite (the log/ corpus cases by
    coverage, hot-swapped into one JVM) on every mutant: the mutant that drops append's whole
    body (its one call, inLock, removed) is killed by both, with a witness; every mutant is in the
    report exactly once."""
    out = tmp_path / "out"
    command = [os.path.join(os.path.dirname(sys.executable), "klc"), "mutate-kafka", "--classes", "OffsetIndex", "--cases", "log/",
               "--machine-examples", "0", "--out", str(out), "--json"]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, run.stderr[-2000:]
    built = json.loads(run.stdout)
    rows = {r["key"]: r for r in results.read(str(out / "results"))}
    mutants = pit.mutants(out / "pit" / OFFSET_INDEX)
    assert len(mutants) == built["mutants"] == len(rows) > 40
    append = next(
        m for m in mutants if m.method == "append" and m.mutator == "VoidMethodCallMutator" and m.description.endswith("::inLock")
    )
    assert append.kafka_status == "KILLED"
    row = rows[results.key(append)]
    assert row["suite_status"] == "killed" and row["witness_case"].startswith("log/") and "conforms" in row["witness"]
    total = built["by_class"]["total"]
    assert total["mutants"] == sum(total[b] for b in report.BUCKETS)
    assert total["suite_killed"] > 0 and total["kafka_killed"] > 0


@pytest.mark.slow
@pytest.mark.no_cover
def test_cores_loader_tests_kill_loader_mutants_the_storage_tests_leave(tmp_path):
    """PIT runs Scala core's LogLoaderTest (kafka_2.13's test jar, unpacked) against LogLoader's
    mutants: it kills them, among them two that every kafka-storage test of 4.3.1 leaves alive: a
    condition of the bogus-index check at load (loadSegmentFiles, line 364) and one of the swap
    files' handling (load, line 168)."""
    loader = pit.CLASSES["LogLoader"]
    out = pit.run_pit([loader, f"{loader}$*"], tmp_path / "pit", tests=("kafka.log.LogLoaderTest",))
    found = pit.mutants(out)
    killed = [m for m in found if m.kafka_status == "KILLED"]
    assert len(killed) > 20 and all(m.killing_test.startswith("kafka.log.LogLoaderTest.") for m in killed)
    for where in (("loadSegmentFiles", 364, "RemoveConditionalMutator_EQUAL_ELSE"), ("load", 168, "RemoveConditionalMutator_EQUAL_IF")):
        chosen = [m for m in found if (m.method, m.line, m.mutator) == where]
        assert chosen and all(m.kafka_status == "KILLED" for m in chosen), where


@pytest.mark.slow
@pytest.mark.no_cover
def test_the_candidate_kafka_test_kills_the_loader_survivor(tmp_path):
    """The candidate JUnit test (kafka-mutation/src/test/java) passes on Kafka 4.3.1 — PIT refuses
    to run on a test that fails unmutated — and kills the LogLoader mutant that keeps `.deleted`
    files at load, which every kafka-storage test of the release leaves alive."""
    out = pit.run_pit([pit.CLASSES["LogLoader"]], tmp_path / "pit", tests=pit.CANDIDATE_TESTS)
    kept = [
        m for m in pit.mutants(out)
        if m.method == "removeTempFilesAndCollectSwapFiles" and m.mutator == "RemoveConditionalMutator_EQUAL_ELSE"
        and m.line == 279
    ]  # fmt: skip
    assert kept and all(m.kafka_status == "KILLED" for m in kept)
    assert all("LoadRemovesDeletedFilesTest" in m.killing_test for m in kept)


def _candidate_kills(tmp_path, clazz: str, test: str, survivors: set) -> None:
    """PIT on ``clazz`` with the candidate ``test`` as its only target test: the test passes on the
    release (PIT leaves out a test that fails unmutated, so it would kill nothing) and kills every
    mutant in ``survivors`` (method, line, mutator), each of which Kafka's own tests leave alive."""
    out = pit.run_pit([pit.CLASSES[clazz]], tmp_path / "pit", tests=(f"klc.mutation.candidates.{test}",))
    judged = [m for m in pit.mutants(out) if (m.method, m.line, m.mutator) in survivors]
    assert len(judged) == len(survivors)
    assert all(m.kafka_status == "KILLED" and test in m.killing_test for m in judged), judged


@pytest.mark.slow
@pytest.mark.no_cover
def test_the_candidate_kafka_test_kills_the_aborted_transactions_survivors(tmp_path):
    """The second candidate JUnit test passes on Kafka 4.3.1 and kills the LocalLog mutants that
    leave a read_committed fetch's aborted-transaction list empty or short, which every
    kafka-storage test of the release leaves alive (PIT's report of the LocalLog run)."""
    _candidate_kills(tmp_path, "LocalLog", "ReadCommittedListsAbortedTransactionsTest", {
        ("addAbortedTransactions", 545, "VoidMethodCallMutator"),
        ("collectAbortedTransactions", 557, "RemoveConditionalMutator_EQUAL_ELSE"),
        ("collectAbortedTransactions", 560, "VoidMethodCallMutator"),
    })  # fmt: skip


@pytest.mark.slow
@pytest.mark.no_cover
def test_the_candidate_kafka_test_kills_the_producer_state_rebuild_survivors(tmp_path):
    """The third candidate JUnit test passes on Kafka 4.3.1 and kills the UnifiedLog mutants of a
    truncation's producer-state rebuild that every kafka-storage test of the release leaves alive:
    reading the log when the state was empty and reached the target (an expired producer comes
    back), and leaving open the transactions the rebuild reads to their end."""
    _candidate_kills(tmp_path, "UnifiedLog", "TruncationRebuildsProducerStateTest", {
        ("rebuildProducerState", 2572, "RemoveConditionalMutator_EQUAL_ELSE"),
        ("rebuildProducerState", 2572, "RemoveConditionalMutator_ORDER_ELSE"),
        ("rebuildProducerState", 2583, "RemoveConditionalMutator_EQUAL_IF"),
        ("lambda$loadProducersFromRecords$0", 2659, "VoidMethodCallMutator"),
        ("loadProducersFromRecords", 2663, "VoidMethodCallMutator"),
    })  # fmt: skip


@pytest.mark.slow
@pytest.mark.no_cover
def test_the_candidate_kafka_test_kills_the_append_boundary_survivors(tmp_path):
    """The fourth candidate JUnit test passes on Kafka 4.3.1 and kills four UnifiedLog mutants every
    kafka-storage test of the release leaves alive: a truncation to a negative offset taken, follower
    batches ending at one offset taken, a batch of exactly max.message.bytes refused, and -3 on a
    tie answering the later segment."""
    _candidate_kills(tmp_path, "UnifiedLog", "LogAppendBoundariesTest", {
        ("lambda$truncateTo$1", 2341, "RemoveConditionalMutator_ORDER_ELSE"),
        ("analyzeAndValidateRecords", 1541, "ConditionalsBoundaryMutator"),
        ("analyzeAndValidateRecords", 1551, "ConditionalsBoundaryMutator"),
        ("lambda$fetchOffsetByTimestamp$1", 1733, "ConditionalsBoundaryMutator"),
    })  # fmt: skip


CHECKPOINT_CASES = ("log/checkpoints-replaced-atomically.json", "log/graceful-shutdown-order.json",
                    "log/retention-of-an-empty-segment-after-restart.json")  # fmt: skip


def _mutate_kafka(out: Path, *args: str) -> dict:
    command = [os.path.join(os.path.dirname(sys.executable), "klc"), "mutate-kafka", *args, "--out", str(out), "--json"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=3 * 3600)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


@pytest.mark.slow
@pytest.mark.no_cover
def test_checkpoint_file_mutants_end_to_end(tmp_path):
    """CheckpointFile is in kafka-server-common, not kafka-storage: PIT mutates that jar and runs
    Kafka's tests on it (core's LogManagerTest among the killers: core's test jar ran), and this
    suite judges every mutant with kafka-server-common patched, a JVM each, and hot-swapped into
    one JVM, with the same verdicts; a mutant that drops the checkpoint's entries is killed by a
    corpus case."""
    cold_out, hot_out = tmp_path / "cold", tmp_path / "hot"
    cases = [a for c in CHECKPOINT_CASES for a in ("--cases", c)]
    common = ["--classes", "CheckpointFile", *cases, "--machine-examples", "0", "--max-cases", "3"]
    cold = _mutate_kafka(cold_out, *common, "--jvm-per-mutant")
    mutants = pit.mutants(cold_out / "pit" / CHECKPOINT_FILE)
    assert mutants and all(m.clazz.startswith(CHECKPOINT_FILE) for m in mutants)
    assert len(mutants) == cold["mutants"] == cold["by_class"]["total"]["mutants"]
    assert any(m.killing_test.startswith("kafka.log.LogManagerTest") for m in mutants)
    rows = {r["mutant"]: r for r in results.read(str(cold_out / "results"))}
    assert not [r for r in rows.values() if r["suite_status"] == suite.HARNESS]
    write = [m for m in mutants if m.clazz.endswith("$CheckpointWriteBuffer") and m.mutator == "VoidMethodCallMutator"]
    assert write and all(rows[m.id]["suite_status"] == "killed" and rows[m.id]["witness_case"] in CHECKPOINT_CASES for m in write)
    shutil.copytree(cold_out / "pit", hot_out / "pit")  # PIT and the baseline are reused, not redone
    shutil.copy(cold_out / "baseline.json", hot_out / "baseline.json")
    hot = _mutate_kafka(hot_out, *common, "--hot-swap")
    assert hot["by_class"] == cold["by_class"]
    hot_rows = {r["mutant"]: r for r in results.read(str(hot_out / "results"))}
    assert {k: r["suite_status"] for k, r in hot_rows.items()} == {k: r["suite_status"] for k, r in rows.items()}


def test_only_survivors_cut_short_are_judged_again():
    from conformance.kafka_mutation import run

    wider = run.Config(max_cases=40, again=True)
    row = {"suite_status": "survived", "cases_run": 12, "covering_cases": 104}
    assert run._cut_short(row, wider)
    assert not run._cut_short(row, run.Config(max_cases=12, again=True))
    assert not run._cut_short(row | {"cases_run": 104}, wider)
    assert not run._cut_short(row | {"suite_status": "killed"}, wider)
    assert run._cut_short(row | {"suite_status": "harness_error"}, run.Config(max_cases=12, again=True))
    assert run._cut_short(row, run.Config(max_cases=None, again=True))
    older, newer = {"key": "k", "kafka_build": "d", "n": 1}, {"key": "k", "kafka_build": "d", "n": 2}
    assert run.latest_rows([older, newer, {"key": "k", "kafka_build": "other", "n": 3}], "d") == {"k": newer}

def test_kafka_survivors_only_judges_again_what_kafkas_tests_leave_alive():
    from conformance.kafka_mutation import pit, run

    def mutant(status):
        return pit.Mutant("UnifiedLog/1", "k.UnifiedLog", "append", "()V", 9, "VoidMethodCallMutator", "", "5", status, "", "")

    cut = {"suite_status": "survived", "cases_run": 12, "covering_cases": 150}
    narrow = run.Config(max_cases=40, again=True, kafka_survivors_only=True)
    assert run._judged_again(mutant("SURVIVED"), cut, narrow)
    assert run._judged_again(mutant("NO_COVERAGE"), cut, narrow)
    assert not run._judged_again(mutant("KILLED"), cut, narrow)
    assert not run._judged_again(mutant("TIMED_OUT"), cut, narrow)
    assert run._judged_again(mutant("KILLED"), cut, run.Config(max_cases=40, again=True))
    assert run._judged_again(mutant("KILLED"), cut | {"suite_status": "harness_error"}, narrow)
    assert not run._judged_again(mutant("SURVIVED"), cut, run.Config(max_cases=40, kafka_survivors_only=True))


def test_mutant_picks_the_mutants_a_run_judges():
    from conformance.kafka_mutation import pit, run

    def mutant(n, status="SURVIVED"):
        return pit.Mutant(f"UnifiedLog/{n}", "k.UnifiedLog", "read", "()V", n, "VoidMethodCallMutator", "", str(n), status, "", "")

    ms = [mutant(1), mutant(2), mutant(3)]
    cut = {"suite_status": "survived", "cases_run": 12, "covering_cases": 150}
    latest = {results.key(ms[0]): cut, results.key(ms[1]): cut}
    again = run.Config(again=True, max_cases=40, only=("UnifiedLog/2", "UnifiedLog/3"))
    assert [m.id for m in run.to_judge(ms, latest, again, ["k.UnifiedLog"])] == ["UnifiedLog/2", "UnifiedLog/3"]
    assert [m.id for m in run.to_judge(ms, latest, run.Config(), ["k.UnifiedLog"])] == ["UnifiedLog/3"]
    with pytest.raises(MutationError, match="--mutant UnifiedLog/9: no such mutant of k.UnifiedLog"):
        run.to_judge(ms, latest, run.Config(only=("UnifiedLog/9",)), ["k.UnifiedLog"])


def test_a_kill_made_by_hot_swap_is_judged_again_in_a_jvm_of_its_own():
    from conformance.kafka_mutation import run

    killed = {"suite_status": "killed", "cases_run": 1, "covering_cases": 20, "hot_swap": True}
    assert run._cut_short(killed, run.Config(again=True, hot_swap=False))
    assert run._cut_short(killed | {"suite_status": "timed_out"}, run.Config(again=True, hot_swap=False))
    assert not run._cut_short(killed, run.Config(again=True, hot_swap=True))
    assert not run._cut_short(killed | {"hot_swap": False}, run.Config(again=True, hot_swap=False))


def test_kafka_tests_kept_reuses_the_pit_report_whatever_its_tests(tmp_path):
    from conformance.kafka_mutation import pit, run

    clazz = "org.apache.kafka.storage.internals.log.OffsetIndex"
    with pytest.raises(MutationError, match="--kafka-tests kept: .*OffsetIndex holds no finished PIT report"):
        run.pit_for(clazz, tmp_path, "4.3.1", print, None)
    folder = tmp_path / "pit" / clazz
    folder.mkdir(parents=True)
    eleven = list(pit.STORAGE_TESTS[:-1])
    (folder / "done.json").write_text(json.dumps({"release": "4.3.1", "class": clazz, "tests": eleven, "mutators": pit.MUTATORS}))
    assert run.kept_tests(tmp_path, clazz, "4.3.1") == eleven
    assert run.kept_tests(tmp_path, clazz, "4.4.0") is None
    assert run.Config(kafka_tests="kept").tests is None
    assert run._tests_run(run.Config(kafka_tests="kept"), tmp_path, [clazz]) == sorted(eleven)



def test_a_kept_row_takes_kafkas_verdict_from_this_runs_pit_report(tmp_path):
    """The suite's verdict of a mutant is kept across runs; Kafka's is the current PIT report's
    (a larger set of Kafka's tests may kill what an older one left alive)."""
    from conformance.kafka_mutation import run

    mutants = pit.mutants(pit_report(tmp_path))
    survivor = next(m for m in mutants if m.kafka_status == "SURVIVED")
    kept = _row(survivor.id, "SURVIVED", "killed") | {"key": results.key(survivor), "mutant": "OffsetIndex/999"}
    now = attrs.evolve(survivor, kafka_status="KILLED", killing_test="kafka.log.LogLoaderTest.[method:x()]")
    rows = run.with_kafka_verdicts({kept["key"]: kept, "gone": _row("gone", "KILLED", "killed")}, [now])
    assert [(r["mutant"], r["kafka_status"], r["killing_test"], r["suite_status"]) for r in rows] == [
        (survivor.id, "KILLED", "kafka.log.LogLoaderTest.[method:x()]", "killed")
    ]


def test_the_documented_table_is_the_kept_report():
    """docs/kafka-mutation.md's side-by-side rows are the counts of the report the run wrote
    (docs/kafka-mutation-4.3.1.json), and the report's buckets add up per class."""
    docs = Path(__file__).resolve().parent.parent / "docs"
    kept = json.loads((docs / "kafka-mutation-4.3.1.json").read_text())
    text = (docs / "kafka-mutation.md").read_text()
    for name, c in kept["by_class"].items():
        assert c["mutants"] == sum(c[b] for b in report.BUCKETS)
        label = f"**{name}**" if name == "total" else name
        row = (f"| {label} | {c['mutants']} | {c['kafka_killed']} ({100 * c['kafka_killed'] / c['mutants']:.0f}%) | "
               f"{c['suite_killed']} ({100 * c['suite_killed'] / c['mutants']:.0f}%) | {c['both']} | {c['kafka_only']} | "
               f"{c['suite_only']} | {c['neither']} | {c['suite_harness_error']} |")  # fmt: skip
        assert row in text, row
    assert len(kept["survivors_of_both"]) == kept["by_class"]["total"]["neither"]
