"""Bounded exhaustive crash testing in the spirit of CrashMonkey's ACE (Mohan et al., OSDI 2018).

Where the crash state machine samples, this enumerates: every workload of up to ``length``
operations from a small alphabet (on one partition, after a fixed prelude), a crash at every
storage operation of the workload's last operation and right after it, and at each crash point
every fault family with parameters chosen from the number of operations pending at that point
(:func:`faults_for`).  Crashing inside the last operation of every workload also covers a crash
inside every earlier one, since each prefix of a workload is a workload of its own.

Every case is an ordinary scenario (prelude, workload, ``crash``, then ``open``, ``read``, ``append``,
``shutdown``, ``open``, ``read``), run by the one runner with every DESIGN.md property checked; a
failure is reported as the scenario JSON, replayable with ``klc replay``.  Sizes: :data:`SIZES`
(``ci``: workloads of up to 2 operations over a reduced alphabet, a few parameters per family and
every single lost operation; ``deep``: the same up to 3 operations; ``nightly``: 3 operations, the
full alphabet, both preludes and every parameter).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterator

import attrs

from conformance import faults
from conformance import scenario as sc
from conformance.crash_images import Fault
from conformance.runner import Session
from conformance.verdicts import Verdict

T0 = 1_700_000_000_000
CONFIG = {
    "segment.bytes": 700,  # a few appends per segment: appends roll on their own
    "index.interval.bytes": 0,  # an index entry per append
    "segment.index.bytes": 1024,  # preallocated indexes, small enough to copy at every crash
    "retention.bytes": 500,  # retention deletes old segments
    "file.delete.delay.ms": 0,  # … and their .deleted files at once
}


def _append(n: int) -> sc.Append:
    batches = tuple(sc.BatchSpec(tuple(sc.Rec(T0 + n * 10 + i, f"k{i}", "v" * 20) for i in range(2))) for _ in range(2))
    return sc.Append("t", 0, batches, True, 0)


OPERATIONS: dict[str, sc.Step] = {
    "append": _append(0),
    "roll": sc.Roll("t", 0),
    "truncate": sc.Truncate("t", 0, 3),
    "delete_records": sc.DeleteRecords("t", 0, 2),
    "flush": sc.Flush("t", 0),
    "checkpoint": sc.Checkpoint(),
    "retention": sc.Retention(),
    "shutdown": sc.Shutdown(),
    "open": sc.Open(),
}

PRELUDES: dict[str, tuple[sc.Step, ...]] = {
    # the partition just created: its directory and first segment are not durable yet
    "fresh": (sc.Create("t", 0),),
    # two segments flushed and checkpointed, then an unflushed append on the active one
    "settled": (sc.Create("t", 0), _append(1), sc.Roll("t", 0), _append(2), sc.Flush("t", 0), sc.Checkpoint())
    + (_append(3),),
}


@attrs.frozen
class Size:
    length: int  # operations per workload, at most
    alphabet: tuple[str, ...]
    preludes: tuple[str, ...]
    every_parameter: bool  # False: a few parameters per family


GATE_ALPHABET = ("append", "roll", "truncate", "flush", "checkpoint", "shutdown", "open")
SIZES = {
    # the gate (corpora/README.md, "What the gate leaves to the nightly"): the 6 workloads of one
    # operation, a crash inside every operation of the alphabet
    "ci": Size(1, GATE_ALPHABET, ("settled",), False),
    # the mutant check's size: 198 workloads, the shortest that catches every crash-exhaustive
    # mutant (truncate-cut-unsynced needs a third operation)
    "deep": Size(3, GATE_ALPHABET, ("settled",), False),
    "nightly": Size(3, tuple(OPERATIONS), tuple(PRELUDES), True),
}
SIZES["dev"] = SIZES["ci"]


def workloads(size: Size) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(prelude, operations): every sequence of 1..length operations in which ``open`` follows
    ``shutdown`` and nothing else does (a stopped broker does nothing)."""
    for prelude in size.preludes:
        for n in range(1, size.length + 1):
            for ops in itertools.product(size.alphabet, repeat=n):
                if _valid(ops):
                    yield prelude, ops


def _valid(ops: tuple[str, ...]) -> bool:
    for before, after in itertools.pairwise(("start", *ops)):
        if (before == "shutdown") != (after == "open"):
            return False
    return True


def faults_for(pending: int, every_parameter: bool) -> list[Fault]:
    """The images to try at a crash point with ``pending`` operations not yet durable: every family,
    with its parameters at the edges and the middle of the journal (all of them if
    ``every_parameter``), and every single lost operation (``reorder``, ALICE's omit-one) always.
    Duplicates (a short journal) are dropped."""
    if pending == 0:
        return [Fault("process")]
    last = pending - 1
    points = range(pending) if every_parameter else sorted({0, pending // 2, last})
    out = [Fault("process")]
    out += [Fault("prefix", keep=k) for k in points]
    out += [Fault("reorder", lose=(i,)) for i in range(pending)]  # ALICE's omit-one, every one
    fills = ("absent", "zero", "junk") if every_parameter else ("zero",)
    out += [Fault("torn", op=i, unit=512, cut=0, fill=f, seed=i) for i in points for f in fills]
    out += [Fault("size_ahead", op=i) for i in points]
    out += [Fault("metadata", lose=tuple(range(pending)), data=True), Fault("metadata", lose=(), data=False)]
    if every_parameter:
        out += [Fault("metadata", lose=(i,), data=True) for i in points]
    return list(dict.fromkeys(out))


def scenario(prelude: str, ops: tuple[str, ...], at_op: int | None, fault: Fault) -> sc.Scenario:
    """The prelude, the workload with a crash inside its last operation at storage operation
    ``at_op`` (None: right after it), then a restart, a read of everything, an append, a graceful
    shutdown, another restart and a read."""
    steps = [*PRELUDES[prelude], *(OPERATIONS[o] for o in ops[:-1])]
    last = OPERATIONS[ops[-1]]
    if at_op is None:
        steps += [last, faults.Crash(fault)]
    else:
        steps.append(faults.Crash(fault, last, at_op))
    # the recovered log must also take appends and restart cleanly (clean-restart, KAFKA-10471)
    read = sc.Read("t", 0, 0, 1 << 20, None, False)
    steps += [sc.Open(), read, _append(9), sc.Shutdown(), sc.Open(), read]
    return sc.Scenario(tuple(steps), config=CONFIG, clock_start_ms=T0)


@attrs.define
class Tally:
    scenarios: int = 0
    crash_points: int = 0
    images: int = 0  # distinct (crash point, fault) cases
    branches: collections.Counter = attrs.Factory(collections.Counter)  # loader branches the model took


def _run(case: sc.Scenario, tally: Tally, targets: tuple[str, ...] = ("model", "impl")) -> Verdict:
    """:func:`conformance.runner.run`, also counting the loader branches of the first ``open``."""
    session = Session(case, targets)
    try:
        opens = 0
        for step in case.steps:
            if session.step(step) or session.broken:
                break
            if isinstance(step, sc.Open) and opens == 0 and session.model is not None and session.model.running:
                opens += 1  # the recovery after the crash (the later one follows a graceful shutdown)
                for outcome in session.model.manager.outcomes:
                    tally.branches.update(outcome.branches)
    finally:
        session.close()
    tally.scenarios += 1
    verdict = session.verdict
    verdict.scenario = case
    return verdict


def explore(prelude: str, ops: tuple[str, ...], every_parameter: bool, tally: Tally | None = None) -> Verdict | None:
    """Run every crash point × fault of one workload; the first failing verdict, or None."""
    crash_index = len(PRELUDES[prelude]) + len(ops) - 1
    return sweep(lambda at_op, fault: scenario(prelude, ops, at_op, fault), crash_index, every_parameter, tally)


def kafka_scenario(prelude: str, ops: tuple[str, ...], at_op: int | None, fault: Fault) -> sc.Scenario:
    """:func:`scenario` with its crash cut from Kafka's own journal (conformance.kafka_io): the
    crash points are Kafka's writes, fsyncs and renames inside the workload's last operation."""
    case = scenario(prelude, ops, at_op, fault)
    steps = tuple(attrs.evolve(s, journal="kafka") if isinstance(s, faults.Crash) else s for s in case.steps)
    return attrs.evolve(case, steps=steps)


def explore_kafka(
    prelude: str, ops: tuple[str, ...], every_parameter: bool, tally: Tally | None = None, release: str | None = None
) -> Verdict | None:
    """:func:`explore` on Kafka (the pinned release, or ``release``) against the model, every crash
    point of Kafka's own journal × every fault family."""
    crash_index = len(PRELUDES[prelude]) + len(ops) - 1
    target = f"kafka:{release}" if release else "kafka"
    return sweep(
        lambda at_op, fault: kafka_scenario(prelude, ops, at_op, fault), crash_index, every_parameter, tally,
        targets=("model", target), source=target,
    )  # fmt: skip


def kafka_io_error_scenario(prelude: str, ops: tuple[str, ...], at_op: int, error: str) -> sc.Scenario:
    """:func:`scenario` with, in place of the crash, Kafka's own ``at_op``-th call that changes a
    file inside the workload's last operation failing with ``error`` (conformance.kafka_io_errors)."""
    case = scenario(prelude, ops, at_op, Fault("process"))
    steps = tuple(
        faults.FailIo(s.during, at_op, error, "kafka") if isinstance(s, faults.Crash) and s.during is not None else s
        for s in case.steps
    )
    return attrs.evolve(case, steps=steps)


def explore_kafka_io_errors(
    prelude: str, ops: tuple[str, ...], tally: Tally | None = None, release: str | None = None
) -> Verdict | None:
    """Every one of Kafka's own calls inside the workload's last operation failed in turn, with
    each error of ``faults.IO_ERRORS``, until the operation makes fewer calls: the first failing
    verdict, or None.  The model is the judge of what Kafka's error path leaves on disk."""
    tally = tally if tally is not None else Tally()
    target = f"kafka:{release}" if release else "kafka"
    index = len(PRELUDES[prelude]) + len(ops) - 1
    at_op = 0
    while True:
        for error in faults.IO_ERRORS:
            verdict = _run(kafka_io_error_scenario(prelude, ops, at_op, error), tally, ("model", target))
            tally.images += 1
            if _failed(verdict):
                return verdict
        reached = verdict.results[index] if len(verdict.results) > index else {}  # (a known finding stops early)
        if reached.get(target, {}).get("completed"):
            return None  # past the operation's last call
        tally.crash_points += 1
        at_op += 1


# A legacy segment (spec §7.9) whose last two messages overflow its base: the load after it splits
# it in three (§5.5) through .cleaned/.swap files (§5.9), so every storage operation of a split is a
# crash point.  No index files here; split_scenario decides (the split then happens in
# loadSegmentFiles after a clean shutdown, or in recoverLog after a crash).
LEGACY_SPLIT = faults.InjectLegacySegment(
    "legacy", 0, 0, None,
    (faults.LegacyMessage(0), faults.LegacyMessage(5, 3), faults.LegacyMessage(2**31 + 4), faults.LegacyMessage(2**32 + 9)),
    1, "gzip", False, T0 - 10_000,
)  # fmt: skip


def split_scenario(at_op: int | None, fault: Fault, recover_log: bool = False) -> sc.Scenario:
    """A crash at storage operation ``at_op`` of the load that splits :data:`LEGACY_SPLIT` (None:
    right after it), then the same restart, read, append, shutdown, restart and read as
    :func:`scenario`.  ``recover_log``: the segment comes with its index files and the broker had
    crashed, so recoverLog finds the overflow — with the segment in the map, replaceSegments
    renames it ``.deleted`` (§5.9 step 3); else loadSegmentFiles does, after a clean shutdown."""
    open_ = sc.Open()
    legacy = attrs.evolve(LEGACY_SPLIT, indexes=recover_log)
    steps = [faults.Crash(Fault("process")) if recover_log else sc.Shutdown(), legacy]
    steps += [open_, faults.Crash(fault)] if at_op is None else [faults.Crash(fault, open_, at_op)]
    read = sc.Read("legacy", 0, 0, 1 << 20, None, False)
    append = attrs.evolve(_append(9), topic="legacy")
    steps += [sc.Open(), read, append, sc.Shutdown(), sc.Open(), read]
    return sc.Scenario(tuple(steps), config=CONFIG, clock_start_ms=T0)


COMPACTED = {**CONFIG, "cleanup.policy": "compact", "delete.retention.ms": 0}


def _keyed(n: int, keys: str, tombstone: str = "") -> sc.Append:
    """One batch: a record per key of ``keys``, the key ``tombstone`` (if any) deleted."""
    recs = tuple(sc.Rec(T0 + n * 10 + i, k, None if k == tombstone else f"v{n}" * 5) for i, k in enumerate(keys))
    return sc.Append("t", 0, (sc.BatchSpec(recs),), True, 0)


def clean_scenario(at_op: int | None, fault: Fault) -> sc.Scenario:
    """A crash at storage operation ``at_op`` of a cleaning round (None: right after it) over
    three flushed, checkpointed segments of a compacted log that the round cleans in two groups
    (``segment.bytes`` bounds a group, KAFKA-5413's grouping), with superseded values, a
    tombstone past its delete horizon, and batches kept whole; then the restart, read, append,
    shutdown, restart and read of :func:`scenario`.  Each group is written ``.cleaned``, flushed
    and installed by replaceSegments (§5.9), so every crash point lands before, inside or after
    an installation."""
    steps = [sc.Create("t", 0), _keyed(1, "abc"), _keyed(2, "ab"), sc.Roll("t", 0), _keyed(3, "cd", "c")]
    steps += [_keyed(4, "e"), sc.Roll("t", 0), _keyed(5, "af"), _keyed(6, "g"), sc.Roll("t", 0), _keyed(7, "h")]
    steps += [sc.Flush("t", 0), sc.Checkpoint(), sc.Tick(1)]
    clean = sc.Clean("t", 0)
    steps += [clean, faults.Crash(fault)] if at_op is None else [faults.Crash(fault, clean, at_op)]
    read = sc.Read("t", 0, 0, 1 << 20, None, False)
    steps += [sc.Open(), read, _append(9), sc.Shutdown(), sc.Open(), read]
    return sc.Scenario(tuple(steps), config={**COMPACTED, "segment.bytes": 400}, clock_start_ms=T0)


CLEAN_CRASH_INDEX = next(i for i, s in enumerate(clean_scenario(0, Fault("process")).steps) if isinstance(s, faults.Crash))


def stray_scenario(at_op: int | None, fault: Fault) -> sc.Scenario:
    """A crash at storage operation ``at_op`` of a startup (None: right after it) whose metadata
    image no longer assigns t-0 (its current log in d0) nor v-0 (a future log in d1 whose current
    one is gone): the load renames both ``-stray`` (KRaft's isStray, atomicMoveWithFallback and a
    data-dir fsync each) and serves u-0 beside v's; then the restart, reads of t and u, t created
    again (assigned here anew), a shutdown, a restart and a read of t."""
    append = lambda topic, n: attrs.evolve(_append(n), topic=topic)  # noqa: E731
    steps = [sc.Create("t", 0), sc.Create("u", 0, 1), sc.Create("v", 0, 1), append("t", 1), sc.Roll("t", 0)]
    steps += [append("t", 2), append("u", 3), append("v", 4), sc.Shutdown()]
    steps += [faults.RenameDir("v", 0, "future", 1), sc.Unassign("t", 0), sc.Unassign("v", 0)]
    open_ = sc.Open()
    steps += [open_, faults.Crash(fault)] if at_op is None else [faults.Crash(fault, open_, at_op)]
    read = lambda topic: sc.Read(topic, 0, 0, 1 << 20, None, False)  # noqa: E731
    steps += [sc.Open(), read("t"), read("u"), sc.Create("t", 0), _append(9), sc.Shutdown(), sc.Open(), read("t")]
    return sc.Scenario(tuple(steps), config=CONFIG, data_dirs=2, clock_start_ms=T0)


STRAY_CRASH_INDEX = next(i for i, s in enumerate(stray_scenario(0, Fault("process")).steps) if isinstance(s, faults.Crash))


def sweep(
    build, crash_index: int, every_parameter: bool, tally: Tally | None = None,
    targets: tuple[str, ...] = ("model", "impl"), source: str = "impl/sim",
) -> Verdict | None:
    """Every crash point × fault of the scenarios ``build(at_op, fault)`` whose step ``crash_index``
    crashes inside an operation (``at_op`` counts its storage operations; None: after it) on
    ``targets``; ``source`` is the target whose journal the images are cut from (its crash result
    says whether the operation completed and how many operations were pending)."""
    tally = tally if tally is not None else Tally()
    at_op: int | None = 0
    while True:
        probe = _run(build(at_op, Fault("process")), tally, targets)
        if _failed(probe):
            return probe
        index = crash_index + (1 if at_op is None else 0)
        result = probe.results[index].get(source, {})
        if at_op is not None and result.get("completed"):
            at_op = None  # the operation finished before this storage operation: crash after it
            continue
        tally.crash_points += 1
        for fault in faults_for(result.get("pending", 0), every_parameter)[1:]:
            verdict = _run(build(at_op, fault), tally, targets)
            tally.images += 1
            if _failed(verdict):
                return verdict
        tally.images += 1
        if at_op is None:
            return None
        at_op += 1


def _failed(verdict: Verdict) -> bool:
    """A violation or a step not run; an image that reaches a known Kafka bug every target reaches
    (corpora/kafka-findings) is no failure of the sweep."""
    return bool(verdict.violations) or verdict.unsupported is not None
