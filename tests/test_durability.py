"""The model's statement of Kafka's durability protocol (model/durability.py) and the check that holds
a target's journal to it after every step (storage_protocol.promise_problem, the runner)."""

from __future__ import annotations

import attrs

from conformance import kafka_findings
from conformance import scenario as sc
from conformance.properties.storage_protocol import promise_problem
from conformance.releases import holds_durability_promises
from conformance.mutants import mutant_stack
from conformance.runner import Session, run
from conformance.sim_storage import SimStorage
from conformance.verdicts import Violation
from model import durability
from model.durability import Promise
from tests.mutants import ALL_MUTANTS

KAFKA_3968 = "flush-leaves-segment-entries-unsynced"

REC = sc.Rec(1_700_000_000_000, "k", "v")


def _append():
    return sc.Append(batches=(sc.BatchSpec(records=(REC,)),))


def _scenario(*steps, config=None) -> sc.Scenario:
    return sc.Scenario(config=config or {"segment.bytes": 200}, steps=(sc.Create(), sc.Checkpoint(), *steps))


def _model_after(steps):
    """The model's LogManager after the scenario's steps (run alone)."""
    scenario = _scenario(*steps)
    session = Session(scenario, ("model",), "sim")
    try:
        for step in scenario.steps:
            assert not session.step(step), session.verdict.violations
        return session.model.manager
    finally:
        session.close()


def test_a_flush_promises_the_segments_it_covered_and_no_other():
    manager = _model_after((_append(), _append(), _append(), sc.Roll(), _append()))
    before = durability.recovery_points(manager)
    assert before == {"d0/t-0": 3}  # the roll flushed up to its new segment
    manager.partitions[("t", 0)].log.flush()
    promises = durability.promised(manager, {"d0/t-0"}, before)
    assert [(p.path, p.below) for p in promises] == [("d0/t-0/00000000000000000003.log", 4)]
    assert promises[0].length == len(manager.partitions[("t", 0)].log.segments[-1].log)
    assert durability.promised(manager, set(), before) == []  # a partition not anchored: nothing
    assert durability.promised(manager, {"d0/t-0"}, durability.recovery_points(manager)) == []


def test_a_shutdown_promises_every_segment_to_the_log_end():
    manager = _model_after((_append(), _append(), _append(), _append()))
    before = durability.recovery_points(manager)
    promises = durability.promised(manager, {"d0/t-0"}, before, shut_down=True)
    log = manager.partitions[("t", 0)].log
    assert before == {"d0/t-0": 2} and [s.base_offset for s in log.segments] == [0, 2]
    # segment 0 was promised by the roll that closed it; the shutdown covers 2..4
    assert [(p.path, p.below) for p in promises] == [("d0/t-0/00000000000000000002.log", 4)]
    assert promises[0].length == len(log.segments[1].log)


def _storage_with_segment(dir_synced: bool, file_synced: bool = True) -> SimStorage:
    s = SimStorage()
    s.make_dirs("/r/d0/t-0")
    s.fsync_dir("/")
    s.fsync_dir("/r")
    s.fsync_dir("/r/d0")
    f = s.open("/r/d0/t-0/00000000000000000000.log", create=True)
    f.append(b"batch-one|batch-two")
    if file_synced:
        f.fsync()
    if dir_synced:
        s.fsync_dir("/r/d0/t-0")
    return s


PROMISE = [Promise("d0/t-0/00000000000000000000.log", 9, 1)]


def test_a_promise_kept_needs_the_bytes_and_every_directory_entry_durable():
    assert promise_problem(PROMISE, _storage_with_segment(dir_synced=True), "/r") is None
    lost = promise_problem(PROMISE, _storage_with_segment(dir_synced=False), "/r")
    assert lost and "a power loss now takes the file" in lost
    unsynced = _storage_with_segment(dir_synced=True, file_synced=False)
    problem = promise_problem(PROMISE, unsynced, "/r")  # the entry is durable, the data is not
    assert problem and "a power loss now keeps other bytes from byte 0" in problem


def test_a_promise_past_what_the_target_holds_is_left_to_conforms():
    s = _storage_with_segment(dir_synced=False)
    assert promise_problem([Promise("d0/t-0/00000000000000000000.log", 999, 1)], s, "/r") is None
    assert promise_problem([Promise("d0/t-0/00000000000000000099.log", 1, 1)], s, "/r") is None


def test_the_runner_holds_impl_to_it_and_catches_the_kafka_3968_mutant():
    steps = (_append(), _append(), _append(), sc.Roll(), _append(), sc.Flush())
    ok = run(_scenario(*steps), ("model", "impl"))
    assert ok.ok and ok.checked.get("durable", 0) > 0, ok
    with mutant_stack(KAFKA_3968):
        bad = run(_scenario(*steps), ("model", "impl"))
    first = bad.violations[0]
    assert first.prop == "durable" and "nothing crashed" in first.witness, first
    assert "a power loss now takes the file" in first.witness


def test_the_mutant_edits_the_flush_only():
    mutant = ALL_MUTANTS[KAFKA_3968]
    assert mutant.module == "impl.log" and "fsync_dir" in mutant.old and mutant.new == ""


def test_releases_before_kafka_3968s_fix_are_held_to_crash_images_only():
    assert not holds_durability_promises("2.8.2") and not holds_durability_promises("1.1.1")
    assert holds_durability_promises("3.0.0") and holds_durability_promises("4.4.0")
    assert holds_durability_promises(None)  # the pinned release


def test_the_finding_is_a_promise_broken_below_the_flushs_start_only():
    finding = kafka_findings.FLUSH_BELOW_THE_RECOVERY_POINT
    below = Violation("durable", 4, "impl/sim: d0/t-0/00000000000000000044.log: the batches below the "
                      "recovery point 50 (from 49) end at byte 219, a power loss now keeps other bytes from byte 0",
                      ("model.durability.promised",))  # fmt: skip
    at = attrs.evolve(below, witness=below.witness.replace("(from 49)", "(from 44)"))
    crashed = attrs.evolve(below, frames=("conformance.properties.crash_recovery._missing",))
    assert finding.violation_shape(below)
    assert not finding.violation_shape(at) and not finding.violation_shape(crashed)
