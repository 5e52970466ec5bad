"""Kafka's own I/O captured on real Kafka (conformance.kafka_io, docs/kafka-target.md): crash images
made from the JVM's own writes, fsyncs and renames, loaded by Kafka's loader; KAFKA-3968 on the
releases that shipped it and fixed it."""

from __future__ import annotations

import os

import pytest

from conformance import crash_images, kafka_io
from conformance import scenario as sc
from conformance import sim_storage as sim
from conformance.crash_images import FAMILIES, Fault, crash_image
from conformance.targets.kafka import KafkaTarget, KafkaTargetError, Unsupported

pytestmark = pytest.mark.no_cover  # the JVM's time, not Python's lines
PROBLEM = kafka_io.capture_problem()
needs_capture = pytest.mark.skipif(PROBLEM is not None, reason=str(PROBLEM))

RECORDS = (sc.Rec(1_700_000_000_000, "k", "v"),)
APPEND = sc.Append(batches=(sc.BatchSpec(RECORDS),))
# a partition made durable in its data dir (the checkpoint), three segments (segment.bytes 200
# rolls at the third append, then a roll), every one flushed
KAFKA_3968 = (sc.Open(), sc.Create(), sc.Checkpoint(), APPEND, APPEND, APPEND, sc.Roll(), APPEND, sc.Flush())
PARTITION = "d0/t-0"


def _captured(release: str | None, steps=KAFKA_3968) -> tuple[KafkaTarget, sim.SimStorage]:
    target = KafkaTarget(sc.Scenario((), {"segment.bytes": 200}), release=release, capture=True)
    storage = None
    for step in steps:
        result, storage = target.capture(step)
        assert "error" not in result, (step, result)
    return target, storage


def _lost_after_load(target: KafkaTarget, image, flushed) -> list:
    """The flushed batches Kafka's loader does not find in ``image`` (what ``durable`` flags)."""
    target.restore(*kafka_io.image_for_restore(image))
    assert target.apply(sc.Open())["started"]
    have = set(target.batches().get(PARTITION, ()))
    return [b for b in flushed if b not in have]


def _new_segment_creates(storage: sim.SimStorage) -> list[int]:
    return [
        i for i, (_, op) in enumerate(crash_images.journal(storage)) if isinstance(op, sim.Create) and op.name.endswith(".log")
    ]


@needs_capture
@pytest.mark.parametrize("release, red", [("2.8.2", True), ("3.0.0", False), (None, False)])
def test_kafka_3968_a_flushed_segment_vanishes_with_its_directory_entry(release, red):
    """KAFKA-3968 (fixed in 3.0.0: ``Log.flush`` fsyncs the partition directory when it flushes a
    segment at or above the recovery point, i.e. for the first time — ``Utils.flushDir``, absent
    from 2.8.2's jars): on 2.8.2 a segment file is fsynced but its directory entry never is, so a
    power loss that loses the directory's unsynced entries takes the file and every flushed batch
    in it.  The crash image is made from Kafka's own journal at the end of the flush."""
    target, storage = _captured(release)
    try:
        state = target.state()["partitions"][PARTITION]
        assert state["recovery_point"] == state["log_end_offset"] == 4  # everything was flushed
        flushed = target.batches()[PARTITION]
        creates = _new_segment_creates(storage)
        # the segments' directory entries that no directory fsync made durable are lost
        image = crash_image(storage, Fault("metadata", lose=tuple(creates)))
        logs = sorted(p.rsplit("/", 1)[1] for p in image.files if p.startswith(f"/{PARTITION}/") and p.endswith(".log"))
        if red:
            assert len(creates) == 3 and logs == []
        else:
            assert creates == [] and logs == [f"{b:020d}.log" for b in (0, 2, 3)]
        lost = _lost_after_load(target, image, flushed)
        assert bool(lost) == red, lost
        if red:
            assert lost == flushed  # offsets 0..3 of d0/t-0, flushed before the crash, are missing
    finally:
        target.close()


@needs_capture
def test_a_captured_roll_ends_as_the_disk_and_begins_as_the_step_before_ended():
    """The storage after all of a step's operations is the disk (a process crash there loses
    nothing); after none of them, it is the storage the previous step ended with."""
    target, storage = _captured(None, KAFKA_3968[:6])
    try:
        before = crash_image(storage, Fault("process")).files
        target.capture(sc.Roll())
        step = target.last_capture
        assert step.operations >= 8, step.summary()  # creates, index trims, fsyncs, the dir fsync
        assert crash_image(step.storage_at(), Fault("process")).files == kafka_io.scan(target.root)[0]
        assert crash_image(step.storage_at(0), Fault("process")).files == before
        files, _dirs, _mtimes = target.image_at(0, Fault("process"))  # as restore takes it
        assert files == {p.lstrip("/"): d for p, d in before.items()}
        now = target.image_at(None, Fault("process"))[0]  # between steps: the disk
        assert now == {p.lstrip("/"): d for p, d in kafka_io.scan(target.root)[0].items()}
        target.apply(APPEND)  # apply: the journal carried forward, the step's start not kept
        assert target.last_capture.operations > 0
        with pytest.raises(ValueError, match="applied, not captured"):
            target.last_capture.storage_at(0)
    finally:
        target.close()


@needs_capture
@pytest.mark.slow
def test_every_family_at_every_operation_of_a_roll_makes_an_image_kafka_loads():
    """The k-th operation of Kafka 4.4.0's roll: each family's image at every k is one Kafka's
    loader loads, without losing what was flushed before the roll; at the step's end the process
    crash's image is the disk itself."""
    target, storage = _captured(None, KAFKA_3968[:6])  # up to the third append, which rolled
    try:
        flushed = [b for b in target.batches()[PARTITION] if b[1] < target.state()["partitions"][PARTITION]["recovery_point"]]
        target.capture(sc.Roll())
        step = target.last_capture
        images = []
        for k in range(step.operations + 1):
            at = step.storage_at(k)
            n = len(crash_images.journal(at))
            for family in FAMILIES:
                fault = Fault(family, keep=n // 2, lose=tuple(range(0, n, 2)), op=n - 1, cut=1, fill="zero")
                images.append(crash_image(at, fault))
        assert len({tuple(sorted(i.files.items())) for i in images}) > 3  # the families differ
        for image in images[:: max(1, len(images) // 6)]:  # Kafka's loader on a spread of them
            assert _lost_after_load(target, image, flushed) == []
    finally:
        target.close()


@needs_capture
def test_a_jvm_that_dies_inside_a_captured_step_is_a_harness_error():
    target = KafkaTarget(sc.Scenario(()), capture=True)
    try:
        target.capture(sc.Open())
        target.capture(sc.Create())
        target.capture(sc.Shutdown())
        tracer = target.io.tracer
        with pytest.raises(KafkaTargetError, match="died during 'open'"):
            target._request("open", halt_at={"point": "partition-loaded", "count": 1})
        assert target.io.tracer is None and not tracer.alive()  # nothing left tracing
    finally:
        target.close()


def test_capture_off_changes_nothing(monkeypatch):
    monkeypatch.delenv("KLC_KAFKA_CAPTURE", raising=False)
    target = KafkaTarget(sc.Scenario(()))
    try:
        assert target.io is None and target.apply(sc.Open())["started"]
        with pytest.raises(KafkaTargetError, match="capture is off"):
            target.capture(sc.Create())
    finally:
        target.close()
    monkeypatch.setenv("KLC_KAFKA_CAPTURE", "1")
    if PROBLEM is not None:  # the environment asks for capture, the machine cannot: never a pass
        with pytest.raises(Unsupported):
            KafkaTarget(sc.Scenario(()))
        return
    target = KafkaTarget(sc.Scenario(()))
    try:
        assert target.io is not None
    finally:
        target.close()


def test_capture_without_strace_is_unsupported(monkeypatch):
    monkeypatch.setenv("KLC_STRACE", os.path.join(os.sep, "no", "strace"))
    with pytest.raises(Unsupported, match="needs strace"):
        KafkaTarget(sc.Scenario(()), capture=True)


@needs_capture
@pytest.mark.slow
def test_the_crash_machine_finds_kafka_3968_on_2_8_2_unaimed():
    """The crash machine with Kafka 2.8.2's I/O captured, not pointed at the bug, finds a flushed
    segment lost with its directory entry (durable, the image cut from 2.8.2's own journal), and
    3.0.0 passes the scenario it found (corpora/README.md, "Time to catch the real bugs"; seed 2
    found it at 136 examples)."""
    from benchmarks.time_to_catch import measure_one

    row = measure_one("kafka-io:2.8.2..3.0.0@own journal", 2, budget=1800)
    assert row["found"] and row["property"] == "durable", row
    assert "own journal" in row["witness"] and row["fixed_release_passes"], row


# one release of each adapter generation from 1.1 (0.11 and 1.0 differ from the model before any
# fault: their offset index names a batch's last offset), and the pinned one
MACHINE_GENERATIONS = ("2.8.2", "3.7.2", "4.1.1", None)


def _on_kafkas_io(violation) -> bool:
    """A violation a fault on Kafka's own I/O shows: on an image cut from its journal (durable says
    so), or its error path (isolated)."""
    return "own journal" in violation.witness or violation.prop == "isolated"


@needs_capture
@pytest.mark.slow
@pytest.mark.parametrize("release", MACHINE_GENERATIONS, ids=lambda r: r or "pinned")
def test_the_crash_machine_strikes_kafkas_own_io_on_every_generation(release):
    """The crash machine against one release of each generation with Kafka's I/O captured: its
    power losses are cut from Kafka's own journal and its I/O errors fail Kafka's own calls (each
    drawn half the time), and no violation comes of them.  A release departs from the model in
    more than its I/O (every later fix, what changed by design: the corpus cases pin those per
    release), so the machine judges on past every violation that is not of Kafka's I/O; and before
    3.0 past KAFKA-3968's (a flush never fsyncs a new segment's directory: `durable`)."""
    import collections

    from hypothesis.stateful import run_state_machine_as_test

    from conformance.crash_machine import make_crash_machine
    from conformance.log_checks import _fixed_budget
    from conformance.properties import DURABLE
    from conformance.releases import holds_durability_promises
    from conformance.runner import looking_past

    base = make_crash_machine("sim", ("model", "kafka" if release is None else f"kafka:{release}"), capture=True)
    struck: collections.Counter = collections.Counter()

    class Counting(base):
        swarm_kinds = frozenset({"process", "metadata", "torn", "fail_io"})

        def _after_fault(self, step):
            if step.on_kafka_journal:
                struck[step.op] += 1
            super()._after_fault(step)

    kafka_3968 = not holds_durability_promises(release)
    with looking_past(lambda v: not _on_kafkas_io(v) or (kafka_3968 and v.prop == DURABLE), judge_on=True):
        run_state_machine_as_test(Counting, settings=_fixed_budget(MACHINE_EXAMPLES, 25))
    assert struck["crash"] > 0 and struck["fail_io"] > 0, struck


MACHINE_EXAMPLES = 40
