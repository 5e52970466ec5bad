"""The ACE-style bounded exhaustive crash test (conformance/exhaustive.py): every workload of one
operation (``nightly``: up to three) after a settled prelude × a crash at every storage operation of
its last operation and right after it × every fault family.  One test per workload, so xdist spreads
them; the size follows the Hypothesis profile (``nightly``: the full alphabet, both preludes, every
parameter).  Not traced by coverage: every image is an ordinary scenario, and tracing tripled the
sweep's time (issue #35)."""

from __future__ import annotations

import functools
import json

import pytest

from conformance import kafka_io
from conformance.crash_images import FAMILIES, Fault
from conformance.exhaustive import (
    CLEAN_CRASH_INDEX,
    PRELUDES,
    STRAY_CRASH_INDEX,
    SIZES,
    Tally,
    clean_scenario,
    explore,
    explore_kafka,
    explore_kafka_io_errors,
    faults_for,
    kafka_io_error_scenario,
    kafka_scenario,
    scenario,
    split_scenario,
    stray_scenario,
    sweep,
    workloads,
)
from conformance.runner import run
from conformance.scenario import Scenario
from tests.conftest import PROFILE

SIZE = SIZES[PROFILE]
WORKLOADS = list(workloads(SIZE))

pytestmark = pytest.mark.no_cover


@pytest.mark.parametrize("prelude, ops", WORKLOADS, ids=[f"{p}:{'-'.join(o)}" for p, o in WORKLOADS])
def test_every_crash_point_of_the_workload_recovers(prelude, ops):
    tally = Tally()
    verdict = explore(prelude, ops, SIZE.every_parameter, tally)
    assert verdict is None, f"{verdict.violations[0]}\nscenario: {verdict.scenario.dumps()}"
    assert tally.crash_points >= 1 and tally.images >= tally.crash_points


@pytest.mark.slow  # the gate: corpora/crash/split-crashed-*.json, the crash points two mutants need
@pytest.mark.parametrize("recover_log", [False, True], ids=["loadSegmentFiles", "recoverLog"])
def test_every_crash_point_of_a_split_recovers(recover_log):
    """#6: a crash at every storage operation of a load that splits an overflowed legacy segment
    (§5.5: .cleaned files written and flushed, renamed .swap in descending order, then to their
    final names, §5.9), under every fault family: every message survives (durable), the next load
    rolls the split back or completes it (prefix, conforms), and equals an uninterrupted load
    (idempotent-recovery)."""
    tally = Tally()
    verdict = sweep(functools.partial(split_scenario, recover_log=recover_log), 2, SIZE.every_parameter, tally)
    assert verdict is None, f"{verdict.violations[0]}\nscenario: {verdict.scenario.dumps()}"
    # the load's own operations: the split's files, renames and fsyncs are among them
    assert tally.crash_points >= 20 and "5.5 overflowed segment split" in tally.branches


@pytest.mark.slow  # the gate: the cleaning crash cases (corpora/crash/*cleaning*.json, KAFKA-12520's swap)
def test_every_crash_point_of_a_cleaning_recovers():
    """#6: a crash at every storage operation of a log-cleaning round that installs two groups
    (§5.9: each .cleaned segment written and flushed, renamed .swap, the originals .deleted, the
    .swap renamed final, the directory fsynced), under every fault family: nothing flushed is lost
    beyond what the round removes (durable), the log is the uncleaned or the cleaned version of
    each group (prefix), and model and impl agree on the load that completes or rolls back the
    swap (conforms)."""
    tally = Tally()
    verdict = sweep(clean_scenario, CLEAN_CRASH_INDEX, SIZE.every_parameter, tally)
    assert verdict is None, f"{verdict.violations[0]}\nscenario: {verdict.scenario.dumps()}"
    # two groups, each: .cleaned files written and fsynced, four renames each way, dir fsyncs
    assert tally.crash_points >= 30


def test_the_sweep_covers_what_it_claims():
    """Sizes stay what the docs say; every family is tried at every crash point with pending
    operations; workloads obey the open-only-after-shutdown rule; cases replay as scenarios."""
    ci, deep = SIZES["ci"], SIZES["deep"]
    assert ci.length == 1 and len(WORKLOADS if SIZE is ci else list(workloads(ci))) == 6
    assert deep.length == 3 and deep.alphabet == ci.alphabet and len(list(workloads(deep))) == 198
    assert {f.family for f in faults_for(7, False)} == set(FAMILIES)
    assert len(faults_for(7, True)) > len(faults_for(7, False)) > len(faults_for(1, False))
    assert faults_for(0, False) == faults_for(0, True) and len(faults_for(0, False)) == 1
    for _, ops in workloads(SIZES["nightly"]):
        assert all((op == "open") == (i > 0 and ops[i - 1] == "shutdown") for i, op in enumerate(ops)), ops
    case = scenario("settled", ("append", "truncate"), 2, faults_for(9, False)[3])
    assert Scenario.from_json(json.loads(case.dumps())) == case


KAFKA_IO = pytest.mark.skipif(kafka_io.capture_problem() is not None, reason="strace or ptrace unavailable here")
KAFKA_WORKLOADS = list(workloads(SIZES["ci"]))


@pytest.mark.slow  # about 200 images a workload on the JVM; the gate: the test below
@KAFKA_IO
@pytest.mark.parametrize("prelude, ops", KAFKA_WORKLOADS, ids=[f"{p}:{'-'.join(o)}" for p, o in KAFKA_WORKLOADS])
def test_every_crash_point_of_kafkas_own_journal_recovers(prelude, ops):
    """The same sweep with the crash points Kafka 4.4.0's own writes, fsyncs and renames inside the
    workload's last operation (its journal captured, conformance.kafka_io), the model the judge."""
    tally = Tally()
    verdict = explore_kafka(prelude, ops, SIZE.every_parameter, tally)
    assert verdict is None, f"{verdict.violations[0] if verdict.violations else verdict.unsupported}\nscenario: {verdict.scenario.dumps()}"
    assert tally.crash_points >= 2 and tally.images >= tally.crash_points


@KAFKA_IO
def test_a_sweep_case_is_cut_from_kafkas_journal_at_its_crash_point():
    """What the Kafka sweep reads at each crash point: Kafka ran the operation to its ``at_op``-th
    storage operation, and says how many it made and how many were not yet durable."""
    case = kafka_scenario("settled", ("flush",), 1, Fault("process"))
    index = len(PRELUDES["settled"])
    assert case.steps[index].journal == "kafka" and case.steps[index].at_op == 1
    verdict = run(case, ("model", "kafka"))
    assert verdict.ok, [str(v) for v in verdict.violations]
    result = verdict.results[index]["kafka"]
    assert result["crashed_at"] == 1 and result["operations"] > 1 and "pending" in result
    assert not result.get("completed")


@pytest.mark.slow
@KAFKA_IO
@pytest.mark.parametrize("release, red", [("2.8.2", True), ("3.0.0", False)])
def test_the_kafka_sweep_finds_kafka_3968_where_it_lived(release, red):
    """Not aimed at it: a roll, then a flush crashed at each of Kafka's own operations. 2.8.2 never
    fsyncs a new segment's directory entry, so an image loses segment files whose data was flushed
    (durable); 3.0.0 fsyncs the parent directory on a segment's first flush."""
    verdict = explore_kafka("settled", ("roll", "flush"), False, Tally(), release=release)
    if red:
        assert verdict is not None and verdict.violations and verdict.violations[0].prop == "durable", verdict
        assert "flushed before the crash, are missing" in verdict.violations[0].witness
    else:
        assert verdict is None, f"{verdict.violations[0] if verdict.violations else verdict.unsupported}"


@pytest.mark.slow  # about 30 failed calls a workload on the JVM; the gate: tests/test_kafka_io_errors.py
@KAFKA_IO
@pytest.mark.parametrize("prelude, ops", KAFKA_WORKLOADS, ids=[f"{p}:{'-'.join(o)}" for p, o in KAFKA_WORKLOADS])
def test_every_call_of_kafkas_own_journal_failing_is_handled(prelude, ops):
    """Each of Kafka 4.4.0's own calls inside the workload's last operation failed in turn with EIO,
    then ENOSPC (conformance.kafka_io_errors): Kafka answers KafkaStorageException or a checked
    IOException, or completes, and what its error path left loads as the model says (a known
    finding — the flush's index msync — ends its case as known)."""
    tally = Tally()
    verdict = explore_kafka_io_errors(prelude, ops, tally)
    assert verdict is None, f"{verdict.violations[0] if verdict.violations else verdict.unsupported}\nscenario: {verdict.scenario.dumps()}"
    assert tally.crash_points >= 2 and tally.images == 2 * (tally.crash_points + 1)


# one release of each adapter generation from 1.1 (0.11 and 1.0 differ from the model before any
# fault: their offset index names a batch's last offset; the finding's case shows them failing)
GENERATIONS = ("2.8.2", "3.7.2", "4.1.1")


@pytest.mark.slow
@KAFKA_IO
@pytest.mark.parametrize("release", GENERATIONS)
def test_kafkas_own_calls_fail_on_every_adapter_generation(release):
    """The I/O-error sweep of a truncation and of a flush on one release of each generation: every
    call fails in turn, and the flush's index msync is the known finding on each."""
    for ops in (("truncate",), ("flush",)):
        tally = Tally()
        verdict = explore_kafka_io_errors("settled", ops, tally, release=release)
        assert verdict is None, f"{ops}: {verdict.violations[0] if verdict.violations else verdict.unsupported}"
        assert tally.crash_points >= 3, (ops, tally)
    known = run(kafka_io_error_scenario("settled", ("flush",), 1, "EIO"), ("model", f"kafka:{release}"))
    assert known.known and known.known.startswith("msync-error-escapes-as-an-unchecked-exception"), known.known
    assert f"kafka:{release}: msync d0/t-0/" in known.known and "UncheckedIOException" in known.known


@pytest.mark.slow  # the gate: corpora/crash/unassigned-partitions-set-aside-at-startup.json, a lost rename
def test_every_crash_point_of_a_startup_setting_partitions_aside_recovers():
    """A crash at every storage operation of a startup that sets aside the logs of two partitions
    the metadata image no longer assigns (KRaft's isStray: a current log and a future one, each
    renamed ``-stray`` and its data dir fsynced), under every fault family: the next load sets
    aside what a lost rename left (the image still says so), serves the rest as before (conforms,
    durable for the partition kept), and equals an uninterrupted load (idempotent-recovery)."""
    tally = Tally()
    verdict = sweep(stray_scenario, STRAY_CRASH_INDEX, SIZE.every_parameter, tally)
    assert verdict is None, f"{verdict.violations[0]}\nscenario: {verdict.scenario.dumps()}"
    # the load's own operations: the two renames and their fsyncs are among them
    assert tally.crash_points >= 8
