"""Kafka releases as targets (issue 31, docs/kafka-target.md): ``kafka:VERSION`` runs a release by
its generation's adapter, and the historical bugs show on the releases that shipped them."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from conformance import releases
from conformance import scenario as sc
from conformance.cli import main
from conformance.properties.crash_recovery import recovery_skipped
from conformance.runner import run
from conformance.targets.kafka import KafkaTarget, Unsupported
from conformance.targets.kafka_jvm import PINNED

pytestmark = pytest.mark.no_cover  # the JVM's time, not Python's lines

RECORDS = (sc.Rec(1_700_000_000_000, "k", "v"),)


def _broker_with_segments(release: str | None) -> KafkaTarget:
    """A broker that wrote two segments of one partition and shut down cleanly."""
    target = KafkaTarget(sc.Scenario((), {"segment.bytes": 200}), release=release)
    for step in (sc.Open(), sc.Create(), *[sc.Append(batches=(sc.BatchSpec(RECORDS),))] * 6, sc.Shutdown()):
        result = target.apply(step)
        assert "error" not in result, (step, result)
    return target


@pytest.mark.parametrize("release, red", [("2.7.2", True), ("2.8.2", False), ("3.1.2", False), (None, False)])
def test_kafka_10471_marker_kept_through_a_crash_inside_the_load(release, red):
    """KAFKA-10471 (fixed in 2.8.0): up to 2.7 the clean-shutdown marker is deleted only after the
    load, which already resized the active segment's indexes; a crash in between leaves the marker
    over them, so the next start skips recovery and trusts them.  Shown on the releases
    themselves: the JVM dies right after the first partition's log is built (halt_at; on 3.1.2 the
    UnifiedLog that LogLoader's result is handed to)."""
    target = _broker_with_segments(release)
    try:
        before = target.files()
        assert "d0/.kafka_cleanshutdown" in before
        assert target.crash_inside_open("partition-loaded", 1)
        witness = recovery_skipped(before, target.files(), {"d0/t-0"})
        assert (witness is not None) == red, witness
        if red:
            assert "KAFKA-10471" in witness and "d0/.kafka_cleanshutdown" in witness
        loaded = target.apply(sc.Open())["loaded"]
        recovered = [x["recovered"] for x in loaded if x["partition"] == "t-0"][0]
        assert (recovered == []) == red  # the next start skips recovery exactly when the marker stayed
    finally:
        target.close()


KAFKA_7385 = "corpora/KAFKA-7385/emptied-producer-batch-alone-in-a-cleaned-segment.json"


@pytest.mark.slow
@pytest.mark.parametrize("release, error", [("2.0.0", "IllegalArgumentException"), ("2.0.1", None)])
def test_kafka_7385_a_round_keeping_only_an_emptied_batch_on_the_releases(release, error):
    """KAFKA-7385 (fixed in 2.0.1): filterTo kept no last offset of an emptied batch it retained, so
    on 2.0.0 the cleaned segment holding only producer 7's empty batch is appended at offset -1 and
    the second round fails; 2.0.1 runs it as the model does (1.1.1's verdict, an empty time index,
    is recorded in the case)."""
    case = sc.Scenario.load(KAFKA_7385)
    verdict = run(case, ("model", f"kafka:{release}"), stop_at_first=True)
    second_round = verdict.results[17][f"kafka:{release}"]
    assert second_round.get("error") == error, second_round
    if error is None:
        assert second_round == verdict.results[17]["model"]


@pytest.mark.parametrize("release, verdict", [("2.7.2", "fail"), ("2.8.2", "pass"), ("3.1.2", "pass")])
def test_kafka_10101_recovery_point_on_the_releases(release, verdict):
    """KAFKA-10101 (fixed in 2.8.0): the recovery point after an unclean recovery."""
    case = sc.Scenario.load("corpora/KAFKA-10101/recovery-point-stays-after-unclean-recovery.json")
    v = run(case, ("model", f"kafka:{release}"))
    assert ("pass" if v.ok else "fail") == verdict, [str(x) for x in v.violations]
    if verdict == "fail":
        assert "recovery_point" in v.violations[0].witness


def test_a_release_without_an_adapter_is_unsupported_not_a_pass():
    """Anything before 0.11, a 4.x release not tried (4.4.1) and a later generation have no adapter:
    unsupported, never a pass."""
    for release in ("0.10.2.2", "4.4.1", "5.0.0", "not-a-release"):
        with pytest.raises(Unsupported, match="no adapter|not a Kafka release"):
            KafkaTarget(sc.Scenario(()), release=release)
    verdict = run(sc.Scenario((sc.Create(),)), ("model", "kafka:5.0.0"))
    assert verdict.unsupported and not verdict.ok


def test_klc_refuses_a_release_before_0_11_in_one_line_saying_why():
    """0.10.2 reads no v2 batch, has no leader epochs and no log start offset: `--target
    kafka:0.10.2.2` is refused (exit 2) in one line naming that, before any JVM or build."""
    out = CliRunner().invoke(main, ["replay", "--target", "kafka:0.10.2.2", KAFKA_3955])
    assert out.exit_code == 2, out.output
    (line,) = out.stderr.strip().splitlines()
    assert "kafka 0.10.2.2: no adapter" in line and "v2 record batch (KIP-98)" in line and "(KIP-107)" in line, line


KAFKA_3955 = "corpora/KAFKA-3955/overlapping-follower-batches-recovered.json"
THREE = [{"timestamp": 1_700_000_000_000 + i, "key": "k", "value": "v" * 20} for i in range(3)]


def scenario(steps, data_dirs=1) -> sc.Scenario:
    return sc.Scenario.from_json(
        {"format": "klc-scenario", "version": 1, "config": {}, "data_dirs": data_dirs, "steps": steps}
    )


SMALL = scenario(
    [
        {"op": "create", "topic": "t"},
        {"op": "append", "topic": "t", "batches": [{"records": THREE}]},
        {"op": "append", "topic": "t", "batches": [{"records": THREE[:1]}]},
        {"op": "shutdown"},
        {"op": "open"},
        {"op": "read", "topic": "t", "offset": 1},
        {"op": "truncate", "topic": "t", "offset": 2},
        {"op": "crash", "fault": {"family": "process"}},
        {"op": "open"},
    ]
)


@pytest.mark.parametrize("release", ["0.11.0.3", "1.0.2"])
def test_the_releases_before_1_1_run_on_their_own_adapter(release):
    """0.11 and 1.0 run on kafka-target-scala's src/before-1.1 (their LogManager and Log before
    1.1's API), on Java 17 with no JVM option beyond the target's own: appends, a clean restart, a
    read and a truncation agree with the model, files included (one segment: before 2.3 a load
    opens every segment's indexes, KAFKA-7283, which clean-restart judges). The load after the
    crash then recovers the active segment twice, once for its index and once as unflushed, as
    every release before 2.3 does (1.1.1 likewise): the first and only difference."""
    from conformance.targets import kafka_jvm

    assert "before-1.1" in kafka_jvm._source_sets(release)
    target = KafkaTarget(SMALL, release=release)
    try:
        assert target.version == release and not target.compares_producer_state
    finally:
        target.close()
    v = run(SMALL, ("model", f"kafka:{release}"))
    assert v.unsupported is None and v.checked["conforms"] >= len(SMALL.steps) - 1
    assert [str(x) for x in v.violations] == [
        f"conforms violated at step 8: open: model vs kafka:{release} result /loaded[0]/recovered: [0] != [0, 0]"
    ]


def test_0_11_deletes_a_truncated_segment_on_java_17_without_unmapping_its_indexes():
    """0.11's AbstractIndex.forceUnmap links against Java 8's DirectBuffer.cleaner() (answering
    sun.misc.Cleaner): on Java 17 it throws (IllegalAccessError; with --add-exports of sun.nio.ch a
    NoSuchMethodError), and Kafka swallows it ("Error when freeing index buffer"). So the deleted
    segment's mappings wait for the garbage collector, which on Linux changes no file and no answer:
    a truncation's delayed deletion agrees with the model, files included."""
    steps = [
        {"op": "create", "topic": "t"},
        {"op": "append", "topic": "t", "batches": [{"records": THREE[:1]}]},
        {"op": "roll", "topic": "t"},
        {"op": "append", "topic": "t", "batches": [{"records": THREE[1:2]}]},
        {"op": "roll", "topic": "t"},
        {"op": "truncate", "topic": "t", "offset": 1},
        {"op": "tick", "ms": 2000},
        {"op": "shutdown"},
    ]
    case = sc.Scenario.from_json(
        {"format": "klc-scenario", "version": 1, "config": {"file.delete.delay.ms": 1000}, "steps": steps}
    )
    v = run(case, ("model", "kafka:0.11.0.3"))
    assert v.ok, [str(x) for x in v.violations] or v.unsupported
    assert v.checked["conforms"] == len(steps) + 1


def test_0_11_creates_a_log_in_a_chosen_dir_only_where_kafka_would():
    """0.11's createLog puts a new log in the dir holding the fewest (the first among equals); a
    preferred dir came with 1.0. A create naming another dir is unsupported there, never a pass;
    one naming Kafka's pick runs (u-0 goes to d1 once t-0 is in d0), and 1.0.2 runs either."""
    first = scenario([{"op": "create", "topic": "t", "dir": 1}], data_dirs=2)
    v = run(first, ("model", "kafka:0.11.0.3"))
    assert not v.ok and "create in d1: Kafka 0.11.0.3 puts a new log in the dir it picks, here d0" in v.unsupported
    assert run(first, ("model", "kafka:1.0.2")).ok
    both = [{"op": "create", "topic": "t", "dir": 0}, {"op": "create", "topic": "u", "dir": 1},
            {"op": "append", "topic": "u", "batches": [{"records": THREE}]}, {"op": "shutdown"}]  # fmt: skip
    v = run(scenario(both, data_dirs=2), ("model", "kafka:0.11.0.3"))
    assert v.ok, [str(x) for x in v.violations] or v.unsupported


@pytest.mark.parametrize(
    "release, generation",
    [("0.11.0.3", "before-1.1"), ("1.0.2", "before-1.1"), ("1.1.1", "log"), ("3.0.0", "log"), ("3.1.2", "unified-log"),
     ("4.0.0", "unified-log")],
)  # fmt: skip
def test_each_release_is_routed_to_its_generations_sources(release, generation):
    """3.1 renamed kafka.log.Log to UnifiedLog: from 3.1 to 4.0 the Scala adapter compiles
    src/unified-log (the pom's profile), 1.1 to 3.0 src/log, 0.11 and 1.0 src/before-1.1 (0.11's
    broker has no Jackson: the protocol classes take 1.0.2's)."""
    from conformance.targets import kafka_jvm

    options = kafka_jvm._maven_properties(release)
    assert ("-Dgeneration=unified-log" in options) == (generation == "unified-log"), options
    assert ("-Dgeneration=before-1.1" in options) == (generation == "before-1.1"), options
    assert ("-Djackson.version=2.9.6" in options) == (release == "0.11.0.3"), options
    compiled = set(kafka_jvm._source_sets(release))
    assert generation in compiled and not ({"log", "unified-log", "before-1.1"} - {generation}) & compiled, compiled


@pytest.mark.parametrize(
    "release, project, sources",
    [
        ("4.0.0", "kafka-target-scala", "unified-log"),
        ("4.1.1", "kafka-target", "before-4.4"),
        ("4.2.0", "kafka-target", "before-4.4"),
        ("4.3.1", "kafka-target", "before-4.4"),
        (None, "kafka-target", "since-4.4"),
    ],
)
def test_the_storage_generation_is_routed_to_kafka_target_by_its_log_manager(monkeypatch, release, project, sources):
    """4.1 moved UnifiedLog into kafka-storage, 4.4 LogManager: 4.1–4.3 build kafka-target into
    target/VERSION/ with the broker's Scala LogManager (src/before-4.4, the pom's profile), the
    pinned release into target/ with kafka-storage's (src/since-4.4)."""
    from conformance.targets import kafka_jvm

    built = []
    monkeypatch.setattr(kafka_jvm, "build", lambda p=kafka_jvm.PROJECT, v=None: built.append((p.name, v)) or "cp")
    kafka_jvm.build_for(release)
    assert built == [(project, release)]
    assert sources in kafka_jvm._source_sets(release or PINNED)
    if project == "kafka-target":
        options = kafka_jvm._maven_properties(release)
        assert options == ([] if release is None else [f"-Dkafka.version={release}", "-Dmanager.sources=before-4.4"])
        assert kafka_jvm._directory(kafka_jvm.PROJECT, release).name == (release or "target")


def test_the_pinned_release_is_the_default():
    target = KafkaTarget(sc.Scenario(()))
    try:
        assert target.name == "kafka" and target.version == PINNED
    finally:
        target.close()


def test_klc_load_tells_what_a_release_does_with_a_real_broker_dir(shared_dir):
    """``klc load --target kafka:VERSION`` (issue 31 item 6): Kafka 2.8.2's own loader on a copy of a
    crashed 3.x broker's dir reports every partition as Kafka 4.4.0's does; a release without an
    adapter is refused with exit 2, never reported as loaded."""
    import json

    from click.testing import CliRunner

    from conformance.cli import main

    live = (
        shared_dir / "real-data" / "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions" / "live-aec5bda1"
    )
    data = str(next(p for p in live.iterdir() if p.is_dir()))
    reports = {}
    for target in ("kafka:2.8.2", "kafka"):
        r = CliRunner().invoke(main, ["load", "--json", "--target", target, data])
        assert r.exit_code == 4, r.output  # _schemas-0: high watermark 42 checkpointed, log end 41
        reports[target] = json.loads(r.output)
    assert reports["kafka:2.8.2"]["kafka"] == "2.8.2" and reports["kafka"]["kafka"] == PINNED
    assert len(reports["kafka"]["partitions"]) == 4
    assert reports["kafka:2.8.2"]["partitions"] == reports["kafka"]["partitions"]
    r = CliRunner().invoke(main, ["load", "--target", "kafka:5.0.0", data])
    assert r.exit_code == 2 and "no adapter" in r.output


KAFKA_6388 = "corpora/KAFKA-6388/roll-of-an-empty-active-segment-with-a-full-index.json"
KAFKA_6264 = "corpora/KAFKA-6264/legacy-overflowed-segment-split-at-load.json"


@pytest.mark.parametrize(
    "row, case, release, witness",
    [
        (releases.EMPTY_MARKER, KAFKA_6388, "2.3.1", "file d0/.kafka_cleanshutdown"),
        (releases.UNWRITTEN_CHECKPOINT, KAFKA_6264, "2.3.1", "file d0/log-start-offset-checkpoint"),
    ],
)
def test_each_release_difference_is_needed(monkeypatch, row, case, release, witness):
    """Every row of conformance/releases.py lets a case through on a release that passes it, and
    without that row alone the case fails there on exactly that aspect."""
    scenario = sc.Scenario.load(case)
    assert run(scenario, ("model", f"kafka:{release}")).ok
    every = releases.differences
    monkeypatch.setattr(releases, "differences", lambda r: every(r) - {row})
    v = run(scenario, ("model", f"kafka:{release}"))
    assert not v.ok and witness in v.violations[0].witness, [str(x) for x in v.violations]


def test_release_differences_apply_to_the_releases_before_the_change():
    assert releases.differences(None) == releases.differences(PINNED) == frozenset()
    assert releases.EMPTY_MARKER in releases.differences("3.6.2")
    assert releases.EMPTY_MARKER not in releases.differences("3.7.0")
    assert releases.UNWRITTEN_CHECKPOINT in releases.differences("2.6.3")
    assert releases.differences("2.7.0") == {releases.EMPTY_MARKER, releases.LOCK_KEPT, releases.PRODUCERS_NOT_SHOWN}
    assert releases.differences("3.1.2") == {releases.EMPTY_MARKER, releases.LOCK_KEPT}  # producer state shown
    assert releases.differences("3.7.2") == {releases.LOCK_KEPT}  # KAFKA-16391: 3.8 deletes .lock
    assert releases.differences("3.8.0") == frozenset()


def test_klc_matrix_prints_release_by_case_against_the_recorded_verdicts():
    """KAFKA-6388 (fixed in 2.1.1): red at its first append on 2.1.0; on 2.1.1 past it, red at the
    restart by KAFKA-7283 (fixed in 2.3); green on 2.3.1 — the verdicts the case records."""
    out = CliRunner().invoke(
        main, ["matrix", "--release", "2.1.0", "--release", "2.1.1", "--release", "3.1.2", KAFKA_6388]
    )
    assert out.exit_code == 0, out.output
    rows = {line.split()[0]: line.split(None, 1)[1] for line in out.stdout.splitlines()[1:4]}
    assert rows == {"2.1.0": "=fail: conforms@1", "2.1.1": "=fail: clean-restart@6", "3.1.2": "=pass"}, out.stdout
    assert out.stdout.splitlines()[0].split() == ["release", "#1"] and "  #1  KAFKA-6388/" in out.stdout


def test_klc_matrix_fails_when_a_release_no_longer_gets_its_recorded_verdict(monkeypatch):
    from conformance import matrix as mx

    monkeypatch.setattr(mx, "cell", lambda case, release: mx.Cell("pass", None, "fail: conforms"))
    out = CliRunner().invoke(main, ["matrix", "--release", "2.1.0", KAFKA_6388])
    assert out.exit_code == 1 and "differs from the recorded verdict" in out.stderr
    assert mx.short(mx.Cell("pass", None, "fail: conforms")) == "!pass"


def test_the_matrix_grid_fits_its_width_whatever_the_cases():
    """Every release x every KAFKA-* case in at most 100 columns: releases are rows, the cases'
    columns wrap into blocks, a legend names them (the table was 495 columns wide)."""
    from conformance import matrix as mx

    cases = mx.bug_cases()
    grid = {(c.name, r): mx.Cell("fail: clean-restart", "x at step 12: y", "fail: clean-restart") for c in cases
            for r in mx.RELEASES}  # fmt: skip
    lines = mx.render(grid, cases, mx.RELEASES)
    assert max(map(len, lines)) <= mx.WIDTH and len(cases) > 5
    assert sum(line.startswith("release") for line in lines) > 1  # wrapped
    assert sum(line.startswith(mx.PINNED) for line in lines) == sum(line.startswith("release") for line in lines)
    legend = {line.strip() for line in lines}
    assert all(f"#{i}  {c.name}" in legend for i, c in enumerate(cases, 1))
    assert sum(line.count("=fail: clean-restart@12") for line in lines) == len(cases) * len(mx.RELEASES)


def test_klc_matrix_refuses_what_it_cannot_replay():
    assert CliRunner().invoke(main, ["matrix", "--release", "2.x", KAFKA_6388]).exit_code == 2
    assert CliRunner().invoke(main, ["matrix", "--release", "2.1.0", "README.md"]).exit_code == 2


KAFKA_9156 = "corpora/KAFKA-9156/concurrent-fetches-open-a-loaded-segments-index.json"


def test_kafka_9156_two_fetches_build_one_index_twice_on_2_3_1():
    """KAFKA-9156 (fixed in 2.4.0) with real threads: two fetches released together are the first
    to open a loaded segment's lazy offset index; 2.3.1 builds two objects for the file in about
    half of such races (scripts/kafka_9156.py), so one of ten replays of the case's three races
    shows it (a miss would take about 10^-10).  2.4.1's verdict is recorded in the case."""
    case = sc.Scenario.load(KAFKA_9156)
    witnesses = []
    for _ in range(10):
        v = run(case, ("model", "kafka:2.3.1"))
        witnesses += [x.witness for x in v.violations]
        if witnesses:
            break
    assert witnesses and "twice" in witnesses[0] and "(KAFKA-9156)" in witnesses[0], witnesses


def test_a_release_build_is_stale_only_for_the_sources_it_compiles(tmp_path):
    """A release before 2.4 compiles src/log and src/before-2.4, 2.4–3.0 src/log and src/since-2.4,
    3.1–4.0 src/unified-log, 4.1–4.3 kafka-target's src/before-4.4 and the pinned release its
    src/since-4.4 (the pom's profiles): a change to another generation's or era's file leaves a jar
    as Maven left it, and must not make it look stale."""
    import os

    from conformance.targets import kafka_jvm

    shared = max(f.stat().st_mtime for f in kafka_jvm.SHARED_SOURCES.rglob("*") if f.is_file())
    mtimes = {"main": shared + 50, "log": shared + 60, "before-2.4": shared + 100, "since-2.4": shared + 300}
    mtimes["unified-log"] = shared + 200
    mtimes["before-4.4"], mtimes["since-4.4"] = shared + 150, shared + 250
    mtimes["before-1.1"] = shared + 70
    for era, mtime in mtimes.items():
        f = tmp_path / "src" / era / "A.java"
        f.parent.mkdir(parents=True)
        f.write_text("class A {}")
        os.utime(f, (mtime, mtime))
    (tmp_path / "pom.xml").write_text("<project/>")
    os.utime(tmp_path / "pom.xml", (50, 50))
    assert kafka_jvm._newest_source(tmp_path, "2.3.1") == mtimes["before-2.4"]
    assert kafka_jvm._newest_source(tmp_path, "1.1.1") == mtimes["before-2.4"]
    mtimes["before-2.4"] = shared + 40
    os.utime(tmp_path / "src" / "before-2.4" / "A.java", (mtimes["before-2.4"],) * 2)
    assert kafka_jvm._newest_source(tmp_path, "1.0.2") == mtimes["before-1.1"]  # not src/log's
    assert kafka_jvm._newest_source(tmp_path, "2.8.2") == mtimes["since-2.4"]
    assert kafka_jvm._newest_source(tmp_path, "3.1.2") == mtimes["unified-log"]
    assert kafka_jvm._newest_source(tmp_path, "4.1.1") == mtimes["before-4.4"]
    assert kafka_jvm._newest_source(tmp_path, None) == kafka_jvm._newest_source(tmp_path, PINNED) == mtimes["since-4.4"]
    os.utime(tmp_path / "src" / "main" / "A.java", (shared + 400, shared + 400))  # both generations compile src/main
    for release in ("2.3.1", "3.1.2", "4.1.1", None):
        assert kafka_jvm._newest_source(tmp_path, release) == shared + 400


KAFKA_12520 = "corpora/KAFKA-12520/swap-completed-by-renames-after-a-crash-in-cleaning.json"


def test_3_1_2_runs_a_corpus_case_to_its_recorded_verdict():
    """KAFKA-12520 end to end on the first UnifiedLog release, producer state and snapshot files
    compared (3.1 is after the producer-state-not-shown row): the verdict the case records."""
    case = sc.Scenario.load(KAFKA_12520)
    assert case.expect["verdicts"]["kafka:3.1.2"] == "pass"
    target = KafkaTarget(case, release="3.1.2")
    try:
        assert target.compares_producer_state and target.version == "3.1.2"
    finally:
        target.close()
    v = run(case, ("model", "kafka:3.1.2"))
    assert v.ok, [str(x) for x in v.violations]


def test_4_1_1_runs_a_corpus_case_to_its_recorded_verdict():
    """KAFKA-12520 end to end on the first release of kafka-storage's UnifiedLog, under the broker's
    Scala LogManager (4.1–4.3): producer state and snapshot files compared, the verdict the case
    records (tests/test_regressions.py checks each case's 4.1.1 and 4.3.1 verdicts)."""
    release = "4.1.1"
    case = sc.Scenario.load(KAFKA_12520)
    assert case.expect["verdicts"][f"kafka:{release}"] == "pass"
    target = KafkaTarget(case, release=release)
    try:
        assert target.compares_producer_state and target.version == release
    finally:
        target.close()
    v = run(case, ("model", f"kafka:{release}"))
    assert v.ok, [str(x) for x in v.violations]


@pytest.mark.slow
@pytest.mark.no_cover
@pytest.mark.parametrize("release", ["3.2.2", "3.3.2"])
def test_the_releases_between_3_1_and_3_4_start(release):
    """3.2 and 3.3's LogManager takes the transaction timeout before maxPidExpirationMs; without
    that constructor the adapter could not start them, and (before adapter failures were harness
    errors) every case was judged a conforms failure at the first open on those releases."""
    v = run(sc.Scenario.load("corpora/log/roll-on-segment-bytes.json"), ("model", f"kafka:{release}"))
    assert v.ok and v.unsupported is None, [str(x) for x in v.violations]


def test_a_codec_a_release_lacks_is_unsupported_and_one_it_has_is_judged():
    """compression.type zstd before 2.1 (KIP-110): 1.1's LogConfig refuses the name, so the scenario
    cannot be expressed there (unsupported, before any step, never a refusal judged); lz4, which
    1.1 has, rebuilds the leader's uncompressed batch byte for byte as the model does."""
    steps = [{"op": "create", "topic": "t"}, {"op": "append", "topic": "t", "batches": [{"records": THREE}]}]
    for codec, unsupported in (("zstd", True), ("lz4", False)):
        case = sc.Scenario.from_json(
            {"format": "klc-scenario", "version": 1, "config": {"compression.type": codec}, "steps": steps}
        )
        v = run(case, ("model", "kafka:1.1.1"))
        if unsupported:
            assert not v.ok and "compression.type zstd: Kafka 1.1.1 has no such codec" in v.unsupported, v.unsupported
        else:
            assert v.ok and v.unsupported is None and v.checked["conforms"] == 3, [str(x) for x in v.violations]
