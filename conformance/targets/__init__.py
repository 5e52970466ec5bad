"""The systems a scenario runs against, behind one protocol (:class:`Target`): the model
(:mod:`.model_target`), impl on a storage backend (:mod:`.impl_target`) and Kafka's own jars
(:mod:`.kafka`).

A step picks the target operation it is (:meth:`conformance.scenario.Step.on`): ``open``,
``shutdown``, ``tick``, ``race`` or ``operate`` (a log manager operation, which the model and impl
run through the same Kafka names, :meth:`conformance.scenario.Step.call`).  Every operation returns
a JSON-able result, ``{"error": kind}`` when Kafka would refuse it — the same form Kafka's target
answers in over its JSON lines.  What the properties read: ``state()`` the logical log of every
partition, ``files()`` the data dirs' files (paths relative to the target's root),
``index_entries()`` the logical index entries of every live segment (with its bytes, whether it is
the active one, and its end offset), ``batches()`` every valid batch.  Each target owns its clock
(advanced only by ``tick``) and gets the same deterministic jitter source.
"""

from __future__ import annotations

import hashlib
import itertools
import zlib
from typing import Protocol

from conformance import scenario as sc
from model.file_records import iterate_file
from model.names import log_dir_name_with_suffix


class HarnessError(RuntimeError):
    """The harness could not run a target — a JVM that died or stopped answering, a build or a tool
    missing — so nothing was judged: never a verdict about the system under test (DESIGN.md
    "Targets": a target reports what it cannot do, it never passes or fails by default).  The runner
    lets it through (a violation is what a target *did*); ``klc`` reports it as a harness error,
    exit status 2, and a campaign task records it as ``status: error``, never as a finding.  It
    belongs to the target protocol, not to :mod:`conformance.verdicts`, because any target raises
    it — Kafka's JVM, or another store speaking the JSON lines — and a verdict is never made of it."""


def refusal(e: Exception) -> dict:
    """A refused operation's result: Kafka's exception class, and what the exception carries that a
    caller reads (``fields``: an UnexpectedAppendOffsetException's first and last offset, which the
    replica fetcher logs and acts on)."""
    return {"error": getattr(e, "kind", type(e).__name__), **getattr(e, "fields", {})}


class Target(Protocol):
    """The one target protocol (DESIGN.md "Targets")."""

    name: str
    running: bool
    clock: Clock
    last_load: list[dict]  # per partition of the last open: dir, partition, error, recovered segments
    trace: list | None  # the storage operations so far (impl targets), else None
    built_twice: list[str]  # lazy indexes the last race built twice (impl targets)
    trusts_its_index_files: bool  # after a fault, keeps index bytes Kafka trusts (kafkas_own)
    compares_producer_state: bool  # its state()'s producers and its snapshot files are compared
    differences: frozenset[str]  # what its release does otherwise by design (conformance.releases)

    def apply(self, step: sc.Step) -> dict: ...
    def durable_view(self): ...  # (SimStorage, root) whose durable state is this target's, or None
    def open(self) -> dict: ...
    def unassign(self, topic: str, partition: int) -> dict: ...
    def create(self, step: sc.Create) -> dict: ...
    def shutdown(self) -> dict: ...
    def tick(self, ms: int) -> dict: ...
    def race(self, step: sc.Race) -> dict: ...
    def operate(self, step: sc.Step) -> dict: ...
    def state(self) -> dict: ...
    def files(self, indexes: bool = True) -> dict[str, bytes]: ...
    def index_entries(self) -> dict: ...
    def batches(self) -> dict[str, list[tuple[int, int, str]]]: ...
    def halt(self) -> None: ...
    def restore(self, files: dict, directories, mtimes: dict) -> None: ...
    def close(self) -> None: ...


class Clock:
    def __init__(self, start_ms: int):
        self.now = start_ms

    def __call__(self) -> int:
        return self.now


def jitter_source(seed: int):
    """A deterministic stand-in for Kafka's per-segment ``Random.nextInt`` (spec §9.2 rule 1)."""

    def draw(partition: str, base: int) -> int:
        return zlib.crc32(f"{seed}:{partition}:{base}".encode()) & 0x7FFFFFFF

    return draw


def unique_id_source(seed: int):
    """A deterministic stand-in for the random UUID Kafka gives a renamed partition directory
    (``<topic>-<partition>.<uuid>-delete``, spec §2.3): the first of SHA-256("seed:topic-partition:n")
    in hex, cut to 32 digits, for n = 0, 1, …, whose directory name ``taken`` does not say is on
    disk.  It depends on the files alone, not on which target ran which step, so a target given a
    crash image names the next directory as the image source would; the kafka target's JVM draws
    the same (``DeleteDirNames.java``, woven into Kafka's ``LocalLog.logDeleteDirName``)."""

    def draw(topic: str, partition: int, taken, kind: str = "delete") -> str:
        for n in itertools.count():
            unique = hashlib.sha256(f"{seed}:{topic}-{partition}:{n}".encode()).hexdigest()[:32]
            if not taken(log_dir_name_with_suffix(topic, partition, unique, kind)):
                return unique
        raise AssertionError("unreachable")

    return draw


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


def partition_state(log_start, log_end, recovery_point, segments, epochs, producers=None) -> dict:
    """One partition as every target shows it.  ``producers``: the producer state in memory, one
    snapshot entry per producer (id, epoch, last sequence, last offset, offset delta, timestamp,
    coordinator epoch, open transaction's first offset or −1; docs/producer-state.md), by id —
    None from a target that does not show it (Kafka 2.x: conformance.releases)."""
    state = {
        "log_start_offset": log_start,
        "log_end_offset": log_end,
        "recovery_point": recovery_point,
        "segments": [[base, size, digest(data)] for base, size, data in segments],
        "epochs": [list(e) for e in epochs],
    }
    if producers is not None:
        state["producers"] = sorted(list(e) for e in producers)
    return state


def without_producers(partitions: dict) -> dict:
    """Partitions' states with the producer state left out, to compare with a target that does not
    show it (``compares_producer_state`` false)."""
    return {k: {f: v for f, v in p.items() if f != "producers"} for k, p in partitions.items()}


class TargetBase:
    """What every target shares: the clock, the jitter source, the broker's life (open, shutdown,
    tick) and the refusals; a target adds how it runs an operation (``_call``) and what it shows."""

    name = "?"
    trusts_its_index_files = False  # whether, after a fault, it keeps index bytes Kafka trusts (KIP-263)
    compares_producer_state = True  # whether its producers and snapshots are compared (not Kafka 2.x)
    differences: frozenset[str] = frozenset()  # conformance.releases: none for the model and impl

    def __init__(self, scenario: sc.Scenario):
        self.scenario = scenario
        self.clock = Clock(scenario.clock_start_ms)
        self.jitter = jitter_source(scenario.jitter_seed)
        self.unique_ids = unique_id_source(scenario.jitter_seed)
        self.dir_names = [f"d{i}" for i in range(scenario.data_dirs)]
        self.running = False
        # partitions the metadata image no longer assigns to this broker: stray at the next startup
        self.unassigned: set[tuple[str, int]] = set()
        self.last_load: list[dict] = []
        self.trace = None  # the storage operation trace (impl targets)
        self.built_twice: list[str] = []  # lazy indexes the last race built twice (impl targets)

    def durable_view(self):
        """(a SimStorage holding this target's files with what is durable and what is pending, the
        data root's path in it) when its journal is known, else None: the durability promises are
        held against it after every step (model.durability)."""
        return None

    def halt(self) -> None:
        """The process is gone: forget everything in memory (files stay as the fault left them)."""
        self.running = False
        self.manager = None

    def restore(self, files: dict, directories, mtimes: dict) -> None:
        """Start over from a disk image (paths relative to the root), as after a crash."""
        raise NotImplementedError

    def batches(self) -> dict[str, list[tuple[int, int, str]]]:
        """Per partition: (base offset, last offset, digest) of every valid batch, in log order."""
        out = {}
        for key, segments in self._segment_bytes().items():
            out[key] = [
                (b.header().offset, b.header().last_offset, digest(b.raw))
                for data in segments
                for b in iterate_file(data).batches
            ]
        return out

    def apply(self, step: sc.Step) -> dict:
        """Run one step: the step picks the operation (:meth:`conformance.scenario.Step.on`)."""
        return step.on(self)

    def tick(self, ms: int) -> dict:
        """Time passes: the clock moves, and a running broker runs its scheduled work."""
        self.clock.now += ms
        if self.running:
            try:
                self._tick()
            except self.refusals() as e:
                return refusal(e)
        return {}

    def open(self) -> dict:
        """LogManager startup: every partition of every data dir loaded.  ``started`` is false when
        the startup failed (the scenario's failure policy, docs/scenario-format.md): the broker is
        then down, its files as the loads left them."""
        if self.running:
            return {"error": "AlreadyRunning"}
        # in data dir and name order, a log the load set aside -stray under its new name
        order = {d: i for i, d in enumerate(self.dir_names)}
        self.last_load = sorted(self._open(), key=lambda x: (order.get(x["dir"], len(order)), x["partition"]))
        self.running = self._started()
        if not self.running:
            self._startup_failed()
        return {"loaded": self.last_load, "started": self.running}

    def unassign(self, topic: str, partition: int) -> dict:
        """The metadata image stops assigning the partition here (:class:`conformance.scenario.Unassign`)."""
        if self.running:
            return {"error": "Running"}
        self.unassigned.add((topic, partition))
        return {}

    def create(self, step: sc.Create) -> dict:
        """A ``create``: the controller assigns the partition here (again), then the log is made."""
        if self.running:
            self.unassigned.discard((step.topic, step.partition))
        return self.operate(step)

    def _started(self) -> bool:
        """Whether the last ``_open`` started the broker."""
        return True

    def _startup_failed(self) -> None:
        """Let go of a broker whose startup failed, its files kept as the loads left them."""
        self.manager = None

    def shutdown(self) -> dict:
        """LogManager shutdown: per data dir, whether it wrote its clean-shutdown marker."""
        if not self.running:
            return {"error": "NotRunning"}
        self.running = False
        return {"shutdown": self._shutdown()}

    def race(self, step: sc.Race) -> dict:
        if not self.running:
            return {"error": "NotRunning"}
        return self._race(step)

    def operate(self, step: sc.Step) -> dict:
        """A log manager operation (``step.call``); Kafka's refusals become ``{"error": kind}``."""
        if not self.running:
            return {"error": "NotRunning"}
        return self._one(step)

    def _one(self, step: sc.Step) -> dict:
        try:
            return self._call(step)
        except self.refusals() as e:
            return refusal(e)

    def _race(self, step: sc.Race) -> dict:
        """A ``race`` (:class:`conformance.scenario.Race`): ``{"race": [result per thread]}``.  A
        read beside a writer must lie at or below the log end offset as the race starts, or its
        answer (data or OffsetOutOfRange) would depend on the schedule: the race is then refused
        as a whole, before any thread runs.  So is a read bounded by the log end offset itself
        when damage left a batch at or above that offset in the log: before the append the bound
        is the log end's position, after it the position translateOffset finds, that batch's (§4.5)."""
        self.built_twice = []
        writers = {(s.topic, s.partition) for s in step.steps if isinstance(s, sc.RACE_WRITERS)}
        for s in step.steps:
            if isinstance(s, sc.Read) and (s.topic, s.partition) in writers:
                try:
                    end = self.log_end_offset(s.topic, s.partition)
                except self.refusals():
                    continue  # no such partition: every thread is refused alike
                if max(s.offset, s.max_offset) > end or (s.max_offset == end and self._offset_past(s, end)):
                    return {"error": "RaceDependsOnSchedule"}
        return {"race": self._run_race(step)}

    def _offset_past(self, read: sc.Read, end: int) -> bool:
        """A batch of ``read``'s partition, framed as translateOffset frames them, whose offset is
        at or above ``end`` (a legacy wrapper's offset is its last: at or above its base)."""
        name = f"/{read.topic}-{read.partition}"
        segments = [data for key, datas in self._segment_bytes().items() if key.endswith(name) for data in datas]
        return any(b.header().offset >= end for data in segments for b in iterate_file(data, validate=False).batches)

    def log_end_offset(self, topic: str, partition: int) -> int:
        return self.manager.log(topic, partition).log_end_offset

    def _run_race(self, step: sc.Race) -> list[dict]:
        """The model has no threads: one step after another (they commute, so any order will do)."""
        return [self._one(s) for s in step.steps]
