"""Scenarios: a config and a list of steps — the one vocabulary every path into the suite uses
(DESIGN.md "Scenarios and corpora"; the format is documented in docs/scenario-format.md).

A step is a frozen attrs value with an ``op`` name; :func:`step_from_json` and :meth:`Scenario.from_json`
validate everything a user can write and raise :class:`ScenarioError` naming the step index and the
field.  Batches in an ``append`` are described by their records; :func:`append_bytes` encodes them
(Kafka's producer layout, base offset 0 as a client sends) so a scenario file stays readable.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any, ClassVar

import attrs
from hypothesis import strategies as st

from model import compression
from model.config import Config, ConfigError
from model.records import (
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_BIT,
    build_batch_v2,
    build_control_batch,
    build_legacy_wrapper,
    encode_legacy_message,
)

FORMAT = "klc-scenario"
VERSION = 1
CODECS = {
    "none": compression.NONE,
    "gzip": compression.GZIP,
    "snappy": compression.SNAPPY,
    "lz4": compression.LZ4,
    "zstd": compression.ZSTD,
}
LONG = (-(2**63), 2**63 - 1)
INT = (-(2**31), 2**31 - 1)


class ScenarioError(ValueError):
    """A scenario file or step that cannot be run: names where (file, step index, field)."""


def _int(d: dict, key: str, where: str, default=None, lo=LONG[0], hi=LONG[1]) -> int:
    value = d.get(key, default)
    if value is None or type(value) is not int:
        raise ScenarioError(f"{where}: {key!r} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ScenarioError(f"{where}: {key!r} = {value} is outside [{lo}, {hi}]")
    return value


def _bool(d: dict, key: str, where: str, default: bool) -> bool:
    value = d.get(key, default)
    if type(value) is not bool:
        raise ScenarioError(f"{where}: {key!r} must be true or false, got {value!r}")
    return value


def _str(d: dict, key: str, where: str, default=None) -> str:
    value = d.get(key, default)
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _text(d: dict, key: str, where: str) -> str | None:
    value = d.get(key)
    if value is not None and not isinstance(value, str):
        raise ScenarioError(f"{where}: {key!r} is a string (stored as UTF-8) or null, got {value!r}")
    return value


@attrs.frozen
class Rec:
    """One record: timestamp (ms, ≥ 0), key and value (UTF-8 text or None)."""

    timestamp: int
    key: str | None = None
    value: str | None = None


@attrs.frozen
class BatchSpec:
    records: tuple[Rec, ...]
    codec: str = "none"
    base_offset: int = 0  # follower appends: the offset the leader assigned
    leader_epoch: int = 0  # follower appends: the batch's partition leader epoch
    producer: tuple[int, int, int] | None = None  # an idempotent producer's (id, epoch, base sequence)
    transactional: bool = False  # a transactional producer's data batch (needs ``producer``)
    control: str | None = None  # an end-transaction marker: "COMMIT" or "ABORT" (one record, §1.6)
    coordinator_epoch: int = 0  # the marker's transaction coordinator epoch
    transaction_version: int = 0  # a leader's marker: the WriteTxnMarkers request's (KIP-890: 2 bumps the epoch)
    magic: int = 2  # 0 or 1: a follower's legacy message set (a message per record, or one wrapper)
    log_append_time: int | None = None  # a follower's batch (v2, or magic 1) as a LogAppendTime leader stamped it


class Unsupported(Exception):
    """A step or setting a target cannot express: the scenario is not judged on it (DESIGN.md
    "Targets")."""


STEPS: dict[str, type[Step]] = {}  # op → step class, in the order the classes are defined


class Step:
    """One step: its JSON form, the target operation it is, and what the runner, the crash
    bookkeeping and the state machines need to know of it — declared here, so nothing else asks a
    step its type (docs/harness.md).  A fault is a step with ``strike`` (:mod:`conformance.faults`)."""

    op: ClassVar[str]
    partition_level: ClassVar[bool] = True
    # how the runner takes it: "operation" (every target runs it), "read" (changes nothing),
    # "fault" (one image source runs it, every target gets the image) or "disk" (the disk image
    # changes while the broker is down)
    runs_as: ClassVar[str] = "operation"
    loads: ClassVar[bool] = False  # LogManager startup: every partition loaded (§6.2)
    shuts_down: ClassVar[bool] = False  # a graceful shutdown: everything to the log end durable (§6.3)
    passes_time: ClassVar[bool] = False  # only the clock moves: a clean shutdown stays the last thing done
    # while the broker is down a target still takes it (the rest answer NotRunning)
    runs_when_down: ClassVar[bool] = False
    # a crash or an I/O error may stop it at one of its storage operations (crash machine's swarm)
    interruptible: ClassVar[bool] = False
    # it fsyncs every data dir (writing its checkpoints): every partition's directory entry is durable
    anchors_data_dirs: ClassVar[bool] = False
    # a fault cut from Kafka's own journal: the kafka target must capture its I/O (conformance.kafka_io)
    on_kafka_journal: ClassVar[bool] = False
    # the partition stops being served at the next load (its logs set aside): no durability promise left
    sets_partition_aside: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "op" in cls.__dict__:
            STEPS[cls.op] = cls

    @classmethod
    def drawn(cls, machine, data, topic: str, partition: int) -> Step:
        """This step with its arguments drawn by a state machine, to be interrupted (``interruptible``)."""
        return cls(topic, partition) if cls.partition_level else cls()

    def problem(self, target) -> str | None:
        """What the step itself shows wrong on ``target`` once it ran, or None (a race's double build)."""
        return None

    def wire_requests(self) -> list[dict]:
        """The JSON-lines requests of this step for a Kafka adapter (docs/kafka-target.md)."""
        return [{"op": self.op, **{f.name: getattr(self, f.name) for f in attrs.fields(type(self))}}]

    def wire_result(self, answers: list[dict]) -> dict:
        """The step's result from the adapter's answers to :meth:`wire_requests`."""
        return answers[-1]

    @classmethod
    def fields_from_json(cls, d: dict, where: str) -> dict:
        """The step's own fields from its JSON form, validated (topic and partition are common)."""
        return {}

    def on(self, target) -> dict:
        """Run this step on a target (:class:`conformance.targets.Target`): one of its operations."""
        return target.operate(self)

    def call(self, manager, dirs: list) -> dict:
        """This operation on a running log manager (model's or impl's: the same Kafka names),
        ``dirs`` its data dirs: the step's JSON-able result."""
        raise TypeError(f"{self.op} is not a log manager operation")

    def to_json(self) -> dict:
        out: dict[str, Any] = {"op": self.op}
        for f in attrs.fields(type(self)):
            value = getattr(self, f.name)
            if f.name == "messages":
                value = [{"offset": m.offset, **({"records": m.records} if m.records != 1 else {})} for m in value]
            if f.name == "batches":
                value = [_batch_json(b, self.leader) for b in value]
            if isinstance(value, Step) or hasattr(value, "family"):
                value = value.to_json()
            if f.name in ("steps", "schedule"):  # a race's threads
                value = [v.to_json() if isinstance(v, Step) else v for v in value]
            if value is not None and not (f.default is not attrs.NOTHING and value == f.default and f.name != "topic"):
                out[f.name] = value
        return out


def _batch_json(b: BatchSpec, leader: bool) -> dict:
    follower = {"base_offset": b.base_offset, "leader_epoch": b.leader_epoch} if not leader else {}
    if b.control:
        pid, epoch, _ = b.producer
        return {
            "control": b.control, "timestamp": b.records[0].timestamp, "producer_id": pid,
            "producer_epoch": epoch, "coordinator_epoch": b.coordinator_epoch, **follower,
            **({"transaction_version": b.transaction_version} if b.transaction_version else {}),
        }  # fmt: skip
    return {
        "records": [attrs.asdict(r) for r in b.records],
        **({"codec": b.codec} if b.codec != "none" else {}),
        **({"magic": b.magic} if b.magic != 2 else {}),
        **follower,
        **({"log_append_time": b.log_append_time} if b.log_append_time is not None else {}),
        **(dict(zip(PRODUCER_FIELDS, b.producer, strict=True)) if b.producer else {}),
        **({"transactional": True} if b.transactional else {}),
    }


def _tp(d: dict, where: str) -> dict:
    return {"topic": _str(d, "topic", where, "t"), "partition": _int(d, "partition", where, 0, 0, INT[1])}


@attrs.frozen
class Create(Step):
    op = "create"
    topic: str = "t"
    partition: int = 0
    dir: int = 0  # index into the scenario's data dirs

    @classmethod
    def fields_from_json(cls, d, where):
        return {"dir": _int(d, "dir", where, 0, 0, 64)}

    def on(self, target):
        return target.create(self)

    def call(self, manager, dirs):
        manager.create_log(self.topic, self.partition, dirs[self.dir % len(dirs)])
        return {}


@attrs.frozen
class Append(Step):
    op = "append"
    interruptible = True
    topic: str = "t"
    partition: int = 0
    batches: tuple[BatchSpec, ...] = ()
    leader: bool = True
    leader_epoch: int = 0  # leader appends: the epoch stamped on every batch
    # a client's produce request: the guard a verify_transaction step handed out (its number), 0 none
    verification_guard: int = 0

    @classmethod
    def fields_from_json(cls, d, where):
        leader = _bool(d, "leader", where, True)
        epoch = _int(d, "leader_epoch", where, 0, 0, INT[1])
        guard = _int(d, "verification_guard", where, 0, 0, INT[1])
        if guard and not leader:
            raise ScenarioError(f"{where}: 'verification_guard' is a leader's (a client's produce request)")
        batches = _batches(d, where, leader)
        return {"leader": leader, "leader_epoch": epoch, "batches": batches, "verification_guard": guard}

    def call(self, manager, dirs):
        """One ``UnifiedLog.append`` per request (:func:`append_requests`); a refusal ends the step."""
        log = manager.log(self.topic, self.partition)
        guard = guard_value(manager.guards_handed_out, self.verification_guard)
        infos = [
            log.append(data, self.leader, self.leader_epoch, version, guard)
            for data, version in zip(append_requests(self), transaction_versions(self), strict=True)
        ]
        return {"first": infos[0].first_offset, "last": infos[-1].last_offset}

    @classmethod
    def drawn(cls, machine, data, topic, partition):
        batches = tuple(BatchSpec(machine.draw_records(data)) for _ in range(data.draw(st.integers(1, 3))))
        return cls(topic, partition, batches, True, machine.epochs.get((topic, partition), 0))

    def wire_requests(self):
        """One request per ``UnifiedLog.append`` (:func:`append_requests`), the bytes as hex."""
        fields = {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.name != "batches"}
        if not self.leader and self.batches:
            # a follower's current leader epoch is at least every fetched batch's; Kafka 4.x
            # leaves out batches stamped above the epoch appendAsFollower is given
            fields["leader_epoch"] = max(b.leader_epoch for b in self.batches)
        return [
            {"op": "append", **fields, "data": data.hex(), **({"transaction_version": v} if v else {})}
            for data, v in zip(append_requests(self), transaction_versions(self), strict=True)
        ]

    def wire_result(self, answers):
        return {"first": answers[0]["first"], "last": answers[-1]["last"]}


STALE_GUARD = -1  # a guard this broker never handed out (Kafka's values are positive): it verifies nothing


def guard_number(handed_out: list[int], guard: int) -> int:
    """A guard as a scenario names it: 0 the sentinel, else its place among the guards the running
    broker handed out since it started, 1 the first (a guard handed out again keeps its number)."""
    if guard == 0:
        return 0
    if guard not in handed_out:
        handed_out.append(guard)
    return handed_out.index(guard) + 1


def guard_value(handed_out: list[int], number: int) -> int:
    """The guard an append's ``verification_guard`` names: 0 the sentinel; a number this broker
    has not handed out (one from before a restart) a guard no producer's entry holds."""
    if number == 0:
        return 0
    return handed_out[number - 1] if number <= len(handed_out) else STALE_GUARD


@attrs.frozen
class VerifyTransaction(Step):
    """The partition's part of a transactional produce's verification (KIP-890, Kafka 3.6+; here as
    4.4.0 does it): ``UnifiedLog.maybeStartTransactionVerification``.  A producer epoch below the
    producer's is fenced (InvalidProducerEpochException); a transaction open at this epoch needs no
    guard: the sentinel, 0; else the producer's verification entry — made if it has none, its
    lowest sequence and epoch updated — and its guard.  The entry lives in memory until the
    producer's next transactional batch is appended (or ``producer.id.expiration.ms`` passes).
    Its result: ``{"guard": n}``, n the guard's number (:func:`guard_number`), which an append's
    ``verification_guard`` passes back.  ``supports_epoch_bump``: the client's transaction version is 2."""

    op = "verify_transaction"
    topic: str = "t"
    partition: int = 0
    producer_id: int = 0
    producer_epoch: int = 0
    sequence: int = 0
    supports_epoch_bump: bool = False

    @classmethod
    def fields_from_json(cls, d, where):
        return {
            "producer_id": _int(d, "producer_id", where, 0, 0),
            "producer_epoch": _int(d, "producer_epoch", where, 0, 0, 2**15 - 1),
            "sequence": _int(d, "sequence", where, 0, 0, INT[1]),
            "supports_epoch_bump": _bool(d, "supports_epoch_bump", where, False),
        }

    def call(self, manager, dirs):
        guard = manager.log(self.topic, self.partition).maybe_start_transaction_verification(
            self.producer_id, self.sequence, self.producer_epoch, self.supports_epoch_bump
        )
        return {"guard": guard_number(manager.guards_handed_out, guard)}


@attrs.frozen
class Roll(Step):
    op = "roll"
    interruptible = True
    topic: str = "t"
    partition: int = 0

    def call(self, manager, dirs):
        return {"base": manager.log(self.topic, self.partition).roll().base_offset}


@attrs.frozen
class Read(Step):
    op = "read"
    runs_as = "read"
    topic: str = "t"
    partition: int = 0
    offset: int = 0
    max_bytes: int = 1 << 20
    max_offset: int | None = None
    min_one_message: bool = True
    isolation: str = "read_uncommitted"  # or "read_committed": up to the last stable offset

    @classmethod
    def fields_from_json(cls, d, where):
        isolation = _str(d, "isolation", where, "read_uncommitted")
        if isolation not in ISOLATIONS:
            raise ScenarioError(f"{where}: isolation {isolation!r} is not one of {', '.join(ISOLATIONS)}")
        if isolation == "read_committed" and d.get("max_offset") is not None:
            raise ScenarioError(f"{where}: a read_committed read is bounded by the last stable offset, not max_offset")
        return {
            "offset": _int(d, "offset", where, 0),
            "max_bytes": _int(d, "max_bytes", where, 1 << 20, 0, INT[1]),
            "max_offset": None if d.get("max_offset") is None else _int(d, "max_offset", where),
            "min_one_message": _bool(d, "min_one_message", where, True),
            "isolation": isolation,
        }

    def call(self, manager, dirs):
        log = manager.log(self.topic, self.partition)
        if self.isolation == "read_committed":
            data, aborted = log.read_committed(self.offset, self.max_bytes, self.min_one_message)
            return {"bytes": data.hex(), "aborted": None if aborted is None else [list(a) for a in aborted]}
        return {"bytes": log.read(self.offset, self.max_bytes, self.max_offset, self.min_one_message).hex()}


ISOLATIONS = ("read_uncommitted", "read_committed")  # FetchIsolation HIGH_WATERMARK, TXN_COMMITTED


@attrs.frozen
class OffsetForTimestamp(Step):
    op = "offset_for_timestamp"
    runs_as = "read"
    topic: str = "t"
    partition: int = 0
    timestamp: int = -1

    @classmethod
    def fields_from_json(cls, d, where):
        return {"timestamp": _int(d, "timestamp", where, -1, -3)}

    def call(self, manager, dirs):
        found = manager.log(self.topic, self.partition).offset_for_timestamp(self.timestamp)
        return {"found": list(found) if found else None}


@attrs.frozen
class Truncate(Step):
    op = "truncate"
    interruptible = True
    topic: str = "t"
    partition: int = 0
    offset: int = 0

    @classmethod
    def fields_from_json(cls, d, where):
        return {"offset": _int(d, "offset", where, 0)}

    @classmethod
    def drawn(cls, machine, data, topic, partition):
        tp = (topic, partition)
        return cls(topic, partition, machine.draw_offset(data, tp, machine.leo.get(tp, 0) + 1))

    def call(self, manager, dirs):
        return {"truncated": manager.truncate_to(self.topic, self.partition, self.offset)}


@attrs.frozen
class TruncateFully(Step):
    op = "truncate_fully"
    interruptible = True
    topic: str = "t"
    partition: int = 0
    offset: int = 0

    fields_from_json = Truncate.fields_from_json

    @classmethod
    def drawn(cls, machine, data, topic, partition):
        leo = machine.leo.get((topic, partition), 0)
        return cls(topic, partition, data.draw(st.integers(0, leo + 50), label="offset"))

    def call(self, manager, dirs):
        manager.truncate_fully_and_start_at(self.topic, self.partition, self.offset)
        return {}


@attrs.frozen
class DeleteRecords(Step):
    op = "delete_records"
    interruptible = True
    topic: str = "t"
    partition: int = 0
    offset: int = 0

    fields_from_json = Truncate.fields_from_json
    drawn = Truncate.drawn

    def call(self, manager, dirs):
        return {"log_start_offset": manager.log(self.topic, self.partition).delete_records(self.offset)}


@attrs.frozen
class Flush(Step):
    op = "flush"
    interruptible = True
    topic: str = "t"
    partition: int = 0
    offset: int | None = None

    @classmethod
    def fields_from_json(cls, d, where):
        return {"offset": None if d.get("offset") is None else _int(d, "offset", where, None, 0)}

    def call(self, manager, dirs):
        manager.log(self.topic, self.partition).flush(self.offset)
        return {}


@attrs.frozen
class DeletePartition(Step):
    """A partition deleted while the broker runs (LogManager.asyncDelete, spec §2.3 rule 2): no
    longer served, its directory renamed ``<topic>-<partition>.<unique id>-delete`` (directory
    fsynced), its data dir's recovery-point and log-start checkpoints written without it, and the
    directory deleted ``file.delete.delay.ms`` later by the ``kafka-delete-logs`` task, at a
    ``tick``.  The unique id is the scenario's (conformance.targets.unique_id_source), so every
    target names the directory alike."""

    op = "delete_partition"
    interruptible = True
    topic: str = "t"
    partition: int = 0

    def call(self, manager, dirs):
        return {"renamed": manager.async_delete(self.topic, self.partition)}


@attrs.frozen
class ReplaceCurrentWithFuture(Step):
    """A replica move between data dirs completed (KIP-113, LogManager.replaceCurrentWithFutureLog):
    the partition's future log (a ``-future`` dir the load found) is renamed to the partition's
    name in its data dir and served; the current log's directory is renamed ``-delete`` (the
    scenario's unique id, as ``delete_partition``'s), closed, checkpointed out of its data dir and
    queued for deletion.  A future log in its current log's data dir cannot be renamed over it
    (Kafka's move fails and takes the dir offline): not modelled, ``unsupported``."""

    op = "replace_current_with_future"
    interruptible = True
    topic: str = "t"
    partition: int = 0

    def call(self, manager, dirs):
        future = manager.future_dir_of(self.topic, self.partition)
        if future is not None and manager.current_dir_of(self.topic, self.partition) == future:
            raise Unsupported("replace_current_with_future: the future log is in its current log's data dir")
        return {"renamed": manager.replace_current_with_future(self.topic, self.partition)}


@attrs.frozen
class Retention(Step):
    op = "retention"
    interruptible = True
    partition_level = False

    def call(self, manager, dirs):
        return {"deleted": manager.retention()}


@attrs.frozen
class ExpireProducers(Step):
    """The broker's producer expiration check on every log (``PeriodicProducerExpirationCheck``,
    every ``producer.id.expiration.check.interval.ms``): a producer with no open transaction whose
    last batch's max timestamp is ``producer.id.expiration.ms`` (a day) or more behind the clock is
    forgotten (ProducerStateManager.isProducerExpired: ``>=``), so neither the next snapshot nor a
    cleaning round keeps it.  Its result: the number forgotten."""

    op = "expire_producers"
    partition_level = False

    def call(self, manager, dirs):
        return {"expired": manager.expire_producers()}


@attrs.frozen
class Checkpoint(Step):
    op = "checkpoint"
    interruptible = True
    anchors_data_dirs = True
    partition_level = False

    def call(self, manager, dirs):
        manager.checkpoint_recovery_points()
        manager.checkpoint_log_start_offsets()
        return {}


@attrs.frozen
class Shutdown(Step):
    op = "shutdown"
    interruptible = True
    shuts_down = True
    anchors_data_dirs = True
    partition_level = False

    def on(self, target):
        return target.shutdown()


@attrs.frozen
class Tick(Step):
    op = "tick"
    partition_level = False
    interruptible = True
    passes_time = True
    runs_when_down = True
    ms: int = 1000
    DRAWN_MS: ClassVar[tuple[int, ...]] = (1000, 86_400_000)  # a second; a day, past most retention.ms drawn

    @classmethod
    def fields_from_json(cls, d, where):
        return {"ms": _int(d, "ms", where, 1000, 0, 10**12)}

    @classmethod
    def drawn(cls, machine, data, topic, partition):
        return cls(data.draw(st.sampled_from(list(cls.DRAWN_MS))))

    def on(self, target):
        return target.tick(self.ms)


@attrs.frozen
class Open(Step):
    op = "open"
    partition_level = False
    loads = True
    runs_when_down = True
    anchors_data_dirs = True

    def on(self, target):
        return target.open()


@attrs.frozen
class Unassign(Step):
    """The metadata image stops assigning the partition to this broker while it is down (a
    reassignment, or the topic deleted and made again): at the next startup KRaft's ``isStray``
    holds for its logs, and ``LogManager.loadLog`` renames each one it loads, current or future,
    ``<topic>-<partition>.<id>-stray`` and holds it nowhere (spec §2.3 rule 4; Kafka 4.1 on).  The
    image says so until a ``create`` of the partition (the controller assigns it here again), so a
    log found again after a crash lost the rename is set aside again.  The id is the scenario's
    (conformance.targets unique_id_source), as for ``rename_dir``."""

    op = "unassign"
    runs_when_down = True
    sets_partition_aside = True
    topic: str = "t"
    partition: int = 0

    def on(self, target):
        return target.unassign(self.topic, self.partition)


BROKER_CONFIGS = ("num.recovery.threads.per.data.dir", "transaction.partition.verification.enable")


@attrs.frozen
class AlterConfig(Step):
    """A topic's config altered while the broker runs (the AlterConfigs request; LogManager.updateTopicConfig):
    every log of ``topic`` takes the scenario's config with ``config`` in force — each alteration
    replaces the previous one — from its next operation on; segments keep what they were created
    with (index interval and size, roll jitter).  A log created later, or loaded at the next start,
    takes the scenario's config (docs/departures.md: a topic's config is not kept in metadata here)."""

    op = "alter_config"
    partition_level = False
    topic: str = "t"
    config: dict = attrs.field(factory=dict, hash=False)

    @classmethod
    def fields_from_json(cls, d, where):
        config = d.get("config")
        if not isinstance(config, dict) or not config:
            raise ScenarioError(f"{where}: 'config' must be a non-empty object of topic configs")
        try:
            Config.of(config)
        except ConfigError as e:
            raise ScenarioError(f"{where}: config: {e}") from None
        for key in BROKER_CONFIGS:
            if key in config:
                raise ScenarioError(f"{where}: config: {key} is the broker's, not a topic's")
        return {"topic": _str(d, "topic", where, "t"), "config": dict(config)}

    def call(self, manager, dirs):
        manager.update_topic_config(self.topic, self.config)
        return {}


@attrs.frozen
class PreviousBrokerEpoch(Step):
    """The broker epoch the running broker read from its data dirs' clean-shutdown markers as it
    started, before the load deleted them (LogManager.readBrokerEpochFromCleanShutdownFiles; spec
    §6.4; KIP-966, Kafka 3.7+): what it registers as its last clean shutdown's epoch.  ``null``
    when a data dir had no marker, or one whose content does not map to an epoch, or when two
    dirs gave different epochs.  The load itself goes by the markers' presence alone."""

    op = "previous_broker_epoch"
    runs_as = "read"
    partition_level = False

    def call(self, manager, dirs):
        return {"broker_epoch": manager.previous_broker_epoch}


# the refusals model and impl give where a cleaning round meets what they do not model (model/cleaner.py):
# a legacy batch that would lose records (Kafka rebuilds it) and a control batch whose marker key
# Kafka's ControlRecordType.parse cannot read (only damage makes one; Kafka's failure is not modelled)
CLEANING_NOT_MODELLED = ("UnsupportedLegacyRebuild", "UnsupportedControlBatch")
LEGACY_ROUND = "a log-cleaner round over a legacy (magic 0/1) batch: Kafka 4.x rebuilds every one it keeps as v2"


@attrs.frozen
class Clean(Step):
    """One log-cleaner round on a compacted partition (spec §5.9, §7.9; docs/scenario-format.md):
    every inactive segment is dirty (no cleaner-offset checkpoint), grouped as Kafka groups them
    (KAFKA-5413), each group cleaned into a ``.cleaned`` segment and installed by replaceSegments."""

    op = "clean"
    interruptible = True
    topic: str = "t"
    partition: int = 0

    def call(self, manager, dirs):
        log = manager.log(self.topic, self.partition)
        if log.holds_legacy_batches():
            # Kafka 4.x's filterTo writes no legacy batch as it was: every one a round keeps is
            # rebuilt as a v2 batch (KIP-724), which model and impl do not model
            raise Unsupported(LEGACY_ROUND)
        try:
            return log.clean()
        except Exception as e:
            if getattr(e, "kind", None) in CLEANING_NOT_MODELLED:
                # what Kafka's cleaner does there is not modelled: the round is not judged, on Kafka
                # (whose own cleaner does it) nor between the model and impl
                raise Unsupported(f"a log-cleaner round: {e}") from None
            raise


@attrs.frozen
class Race(Step):
    """Concurrent operations on a running broker (KAFKA-9156, spec §7.4; docs/scenario-format.md).

    Each of ``steps`` runs in its own thread.  The threads stop at impl's interleaving points (a
    thread's start, the lazy index getter, an append between writing and publishing its batch:
    :data:`conformance.schedule.RACE_POINTS`) and
    ``schedule`` names, point by point, which stopped thread goes on, so an interleaving is a
    replayable list, e.g. ``[1, 0, 1, 0]``.  The steps must commute — on one partition at most one
    ``append`` or ``roll``, and then only ``read`` steps bounded by ``max_offset`` beside it — so
    the model, which runs them one after another, has one answer for every schedule."""

    op = "race"
    partition_level = False
    steps: tuple[Step, ...] = ()
    schedule: tuple[int, ...] = ()

    @classmethod
    def fields_from_json(cls, d, where):
        return _race(d, where)

    def on(self, target):
        return target.race(self)

    def problem(self, target):
        if target.built_twice:
            return f"{target.name}: the race built the lazy index {target.built_twice[0]} twice — two index objects for one file (KAFKA-9156)"
        return None


RACE_STEPS = (Append, Roll, Read, OffsetForTimestamp)  # what a race's threads may run
RACE_WRITERS = (Append, Roll)
FAILURE_POLICIES = ("kafka", "isolate")  # Scenario.failure_policy


def _batches(d: dict, where: str, leader: bool) -> tuple[BatchSpec, ...]:
    raw = d.get("batches")
    if not isinstance(raw, list):
        raise ScenarioError(f"{where}: 'batches' must be a list (empty: an append of no batches)")
    out = []
    for i, b in enumerate(raw):
        bw = f"{where}.batches[{i}]"
        if isinstance(b, dict) and "control" in b:
            spec = _marker(b, bw)
        else:
            spec = _data_batch(b, bw)
        if spec.magic < 2 and leader:
            raise ScenarioError(f"{bw}: a leader append takes magic 2 batches (a follower's may be legacy)")
        if spec.log_append_time is not None and leader:
            raise ScenarioError(f"{bw}: log_append_time is what a leader stamped, given on a follower's batch")
        if spec.transaction_version and not leader:
            raise ScenarioError(f"{bw}: transaction_version is a leader's marker's, not a follower's")
        base = _int(b, "base_offset", bw, 0, 0) if not leader else 0
        epoch = _int(b, "leader_epoch", bw, 0, 0, INT[1]) if not leader else 0
        out.append(attrs.evolve(spec, base_offset=base, leader_epoch=epoch))
    return tuple(out)


_DATA_FIELDS = {
    "magic",
    "log_append_time",
    "records",
    "codec",
    "base_offset",
    "leader_epoch",
    "transactional",
    "producer_id",
    "producer_epoch",
    "base_sequence",
}
_MARKER_FIELDS = {
    "control",
    "timestamp",
    "producer_id",
    "producer_epoch",
    "coordinator_epoch",
    "transaction_version",
    "base_offset",
    "leader_epoch",
}


def _data_batch(b, bw: str) -> BatchSpec:
    if not isinstance(b, dict) or not isinstance(b.get("records"), list) or not b["records"]:
        raise ScenarioError(f"{bw}: a batch is an object with a non-empty 'records' list")
    _known(b, _DATA_FIELDS, bw)
    codec = b.get("codec", "none")
    if codec not in CODECS:
        raise ScenarioError(f"{bw}: codec {codec!r} is not one of {', '.join(CODECS)}")
    recs = []
    for j, r in enumerate(b["records"]):
        rw = f"{bw}.records[{j}]"
        if not isinstance(r, dict):
            raise ScenarioError(f"{rw}: a record is an object")
        _known(r, {"timestamp", "key", "value"}, rw)
        recs.append(Rec(_int(r, "timestamp", rw, None, 0), _text(r, "key", rw), _text(r, "value", rw)))
    producer = _producer(b, bw)
    transactional = _bool(b, "transactional", bw, False)
    if transactional and producer is None:
        raise ScenarioError(f"{bw}: a transactional batch gives {', '.join(PRODUCER_FIELDS)}")
    magic = _int(b, "magic", bw, 2, 0, 2)
    if magic < 2 and (producer or codec == "zstd"):
        raise ScenarioError(f"{bw}: a magic {magic} message set has no producer fields and no zstd codec")
    stamped = None if b.get("log_append_time") is None else _int(b, "log_append_time", bw, None, 0)
    if stamped is not None and magic == 0:
        raise ScenarioError(f"{bw}: log_append_time is a leader's stamp, and a magic 0 message has no timestamp")
    return BatchSpec(
        tuple(recs), codec, producer=producer, transactional=transactional, magic=magic, log_append_time=stamped
    )


def _marker(b: dict, bw: str) -> BatchSpec:
    """An end-transaction marker as the coordinator writes it: a control batch of one record, of
    the producer's id and epoch, with no sequence (docs/producer-state.md section 9)."""
    _known(b, _MARKER_FIELDS, bw)
    if b["control"] not in MARKERS:
        raise ScenarioError(f"{bw}: control {b['control']!r} is not one of {', '.join(MARKERS)}")
    for f in ("producer_id", "producer_epoch"):
        if f not in b:
            raise ScenarioError(f"{bw}: a marker gives producer_id and producer_epoch")
    producer = (_int(b, "producer_id", bw, None, 0), _int(b, "producer_epoch", bw, None, 0, 2**15 - 1), -1)
    return BatchSpec(
        (Rec(_int(b, "timestamp", bw, None, 0)),),
        producer=producer,
        control=b["control"],
        coordinator_epoch=_int(b, "coordinator_epoch", bw, 0, 0, INT[1]),
        transaction_version=_int(b, "transaction_version", bw, 0, 0, 2),
    )


def _known(d: dict, fields: set[str], where: str) -> None:
    if set(d) - fields:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(sorted(set(d) - fields))}")


MARKERS = {"ABORT": 0, "COMMIT": 1}  # ControlRecordType ids (§1.6)


PRODUCER_FIELDS = ("producer_id", "producer_epoch", "base_sequence")


def _producer(b: dict, where: str) -> tuple[int, int, int] | None:
    """An idempotent producer's fields, all three or none: its id (a long, not negative), its epoch
    (a short, not negative) and the batch's first sequence number (an int, not negative)."""
    given = [f for f in PRODUCER_FIELDS if f in b]
    if not given:
        return None
    if len(given) != len(PRODUCER_FIELDS):
        raise ScenarioError(f"{where}: an idempotent batch gives {', '.join(PRODUCER_FIELDS)} together")
    return (
        _int(b, "producer_id", where, None, 0),
        _int(b, "producer_epoch", where, None, 0, 2**15 - 1),
        _int(b, "base_sequence", where, None, 0, INT[1]),
    )


def step_from_json(d, where: str = "step") -> Step:
    if not isinstance(d, dict) or not isinstance(d.get("op"), str):
        raise ScenarioError(f"{where}: a step is an object with an 'op' string")
    cls = STEPS.get(d["op"])
    if cls is None:
        raise ScenarioError(f"{where}: unknown op {d['op']!r} (known: {', '.join(STEPS)})")
    known = {f.name for f in attrs.fields(cls)} | {"op"}
    extra = set(d) - known
    if extra:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(sorted(extra))} for op {cls.op!r}")
    kwargs: dict[str, Any] = _tp(d, where) if cls.partition_level else {}
    kwargs.update(cls.fields_from_json(d, where))
    return cls(**kwargs)


def _during(d: dict, where: str, required: bool) -> dict:
    """A fault's ``during`` (the step it interrupts) and ``at_op``."""
    out: dict[str, Any] = {}
    if d.get("during") is not None:
        out["during"] = step_from_json(d["during"], f"{where}.during")
        if out["during"].runs_as == "fault":
            raise ScenarioError(f"{where}.during: a fault cannot happen during another fault")
        if isinstance(out["during"], Race):
            raise ScenarioError(
                f"{where}.during: a fault cannot interrupt a race (which thread it stops would depend on the schedule)"
            )
    elif required:
        raise ScenarioError(f"{where}: 'during' (the step whose operation fails) is required")
    out["at_op"] = _int(d, "at_op", where, 0, 0, 10**9)
    return out


def _race(d: dict, where: str) -> dict:
    raw = d.get("steps")
    if not isinstance(raw, list) or not 2 <= len(raw) <= 4:
        raise ScenarioError(f"{where}: 'steps' must be a list of 2 to 4 steps (one thread each)")
    steps = tuple(step_from_json(s, f"{where}.steps[{i}]") for i, s in enumerate(raw))
    for i, s in enumerate(steps):
        if not isinstance(s, RACE_STEPS):
            raise ScenarioError(
                f"{where}.steps[{i}]: op {s.op!r} cannot race (one of {', '.join(c.op for c in RACE_STEPS)})"
            )
    for i, s in enumerate(steps):
        others = [o for j, o in enumerate(steps) if j != i and (o.topic, o.partition) == (s.topic, s.partition)]
        writers = [o for o in others if isinstance(o, RACE_WRITERS)]
        if isinstance(s, RACE_WRITERS) and writers:
            raise ScenarioError(
                f"{where}.steps[{i}]: a second {'/'.join(c.op for c in RACE_WRITERS)} on {s.topic}-{s.partition} "
                "in one race: their outcome would depend on the schedule"
            )
        if writers and not (isinstance(s, Read) and s.max_offset is not None):
            raise ScenarioError(
                f"{where}.steps[{i}]: beside the {writers[0].op} on {s.topic}-{s.partition} only a read with "
                "'max_offset' can race (what it sees must not depend on the schedule)"
            )
    schedule = d.get("schedule", [])
    if not isinstance(schedule, list) or len(schedule) > 1000:
        raise ScenarioError(f"{where}: 'schedule' must be a list of at most 1000 thread numbers")
    for i, t in enumerate(schedule):
        if type(t) is not int or not 0 <= t < len(steps):
            raise ScenarioError(f"{where}.schedule[{i}]: {t!r} is not a thread number (0 to {len(steps) - 1})")
    return {"steps": steps, "schedule": tuple(schedule)}


def append_bytes(step: Append) -> bytes:
    """The bytes a producer (leader append) or the leader's fetch response (follower) carries."""
    out = b""
    for b in step.batches:
        entries = [(r.timestamp, _utf8(r.key), _utf8(r.value)) for r in b.records]
        epoch = -1 if step.leader else b.leader_epoch
        pid, producer_epoch, sequence = b.producer or (-1, -1, -1)
        if b.magic < 2:
            out += _legacy_message_set(b)
            continue
        if b.control:
            out += build_control_batch(
                b.base_offset, MARKERS[b.control], b.records[0].timestamp, coordinator_epoch=b.coordinator_epoch,
                producer_id=pid, producer_epoch=producer_epoch, partition_leader_epoch=epoch,
            )  # fmt: skip
            continue
        stamped = {"timestamp_type": LOG_APPEND_TIME, "log_append_time": b.log_append_time} if b.log_append_time is not None else {}
        out += build_batch_v2(
            b.base_offset, entries, codec=CODECS[b.codec], partition_leader_epoch=epoch,
            producer_id=pid, producer_epoch=producer_epoch, base_sequence=sequence, transactional=b.transactional,
            **stamped,
        )  # fmt: skip
    return out


def _legacy_message_set(b: BatchSpec) -> bytes:
    """A follower's legacy records (magic 0 or 1) from ``b.base_offset`` on: uncompressed, one
    message per record; compressed, one wrapper holding them all (§1.8).  A magic 0 message has no
    timestamp.  Stamped by a LogAppendTime leader (``log_append_time``, magic 1): each uncompressed
    message carries the stamp as its timestamp with the timestamp-type attribute, a wrapper carries
    them and its inner records keep their own (LogValidator rewrites only the wrapper, §1.8)."""
    entries = [(r.timestamp if b.magic == 1 else NO_TIMESTAMP, _utf8(r.key), _utf8(r.value)) for r in b.records]
    stamp = b.log_append_time
    if b.codec == "none":
        return b"".join(
            encode_legacy_message(b.magic, b.base_offset + i, key, value, ts)
            if stamp is None
            else encode_legacy_message(b.magic, b.base_offset + i, key, value, stamp, TIMESTAMP_TYPE_BIT)
            for i, (ts, key, value) in enumerate(entries)
        )
    stamped = {"timestamp_type": LOG_APPEND_TIME, "log_append_time": stamp} if stamp is not None else {}
    return build_legacy_wrapper(b.magic, CODECS[b.codec], b.base_offset + len(entries) - 1, entries, **stamped)


def append_requests(step: Append) -> list[bytes]:
    """What reaches ``UnifiedLog.append``, in order: as leader, one produce request per batch
    (Kafka's LogValidator takes one v2 batch per request, spec §4.14); as follower, one fetch
    response holding every batch."""
    if not step.leader or len(step.batches) <= 1:
        return [append_bytes(step)]
    return [append_bytes(attrs.evolve(step, batches=(b,))) for b in step.batches]


def transaction_versions(step: Append) -> list[int]:
    """The transaction version each request of :func:`append_requests` is appended at: a leader's
    marker's own (the coordinator's WriteTxnMarkers request), 0 for any other request (a follower
    has none: Kafka checks its markers as version 0 does)."""
    if not step.leader or len(step.batches) <= 1:
        return [step.batches[0].transaction_version if step.leader and step.batches else 0]
    return [b.transaction_version for b in step.batches]


def _utf8(s: str | None) -> bytes | None:
    return None if s is None else s.encode("utf-8")


_IMAGE_PATH = re.compile(r"d(\d{1,2})(/[^/\x00]+){0,2}")


@attrs.frozen
class DiskImage:
    """Files and directories on the data dirs before the broker's first startup (a hand-built or
    captured state: an interrupted swap, a legacy segment, a damaged index).  Paths are relative to
    the broker's root and start with a data dir (``d0/t-0/00000000000000000000.log``); a file is
    ``{"base64": ...}`` plus an optional ``"mtime_ms"`` (default: the scenario's clock start).
    ``damaged`` names the partition dirs (or data dirs) the image damaged on purpose: they are
    judged as after a ``corrupt`` step."""

    files: dict  # path → bytes
    dirs: tuple[str, ...] = ()  # directories beyond the data dirs and the files' parents
    mtimes: dict = attrs.Factory(dict)  # path → ms
    damaged: tuple[str, ...] = ()

    def to_json(self) -> dict:
        files = {}
        for path, data in sorted(self.files.items()):
            files[path] = {"base64": base64.b64encode(data).decode("ascii")}
            if path in self.mtimes:
                files[path]["mtime_ms"] = self.mtimes[path]
        out = {"files": files, **({"dirs": list(self.dirs)} if self.dirs else {})}
        return out | ({"damaged": list(self.damaged)} if self.damaged else {})

    @classmethod
    def from_json(cls, d, where: str, data_dirs: int) -> DiskImage:
        if not isinstance(d, dict) or set(d) - {"files", "dirs", "damaged"} or not isinstance(d.get("files", {}), dict):
            raise ScenarioError(
                f"{where}: an image is an object with 'files' (path → file) and optionally 'dirs' and 'damaged'"
            )
        files, mtimes = {}, {}
        for path, f in d.get("files", {}).items():
            fw = f"{where}.files[{path!r}]"
            _image_path(path, fw, data_dirs)
            if not isinstance(f, dict) or set(f) - {"base64", "mtime_ms"} or not isinstance(f.get("base64"), str):
                raise ScenarioError(f"{fw}: a file is an object with 'base64' and optionally 'mtime_ms'")
            try:
                files[path] = base64.b64decode(f["base64"], validate=True)
            except ValueError:
                raise ScenarioError(f"{fw}.base64: not base64") from None
            if "mtime_ms" in f:
                mtimes[path] = _int(f, "mtime_ms", fw, None, 0, 2**62)
        lists = {}
        for key in ("dirs", "damaged"):
            lists[key] = d.get(key, [])
            if not isinstance(lists[key], list):
                raise ScenarioError(f"{where}.{key}: a list of directory paths")
            for i, path in enumerate(lists[key]):
                _image_path(path, f"{where}.{key}[{i}]", data_dirs)
        return cls(files, tuple(lists["dirs"]), mtimes, tuple(lists["damaged"]))

    def directories(self) -> list[str]:
        """Every directory the image needs: the listed ones and each file's parents."""
        out = set(self.dirs)
        for path in self.files:
            parts = path.split("/")[:-1]
            out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return sorted(out)


def _image_path(path, where: str, data_dirs: int) -> None:
    m = _IMAGE_PATH.fullmatch(path) if isinstance(path, str) else None
    if m is None or int(m.group(1)) >= data_dirs or any(p in (".", "..") for p in path.split("/")):
        raise ScenarioError(
            f"{where}: {path!r} is not a path under a data dir (d0 … d{data_dirs - 1}, at most two levels below it)"
        )


@attrs.frozen
class Scenario:
    """What a run needs: topic config, data dirs, the clock's start, the jitter seed, the steps."""

    steps: tuple[Step, ...]
    config: dict = attrs.Factory(dict)
    data_dirs: int = 1
    clock_start_ms: int = 1_700_000_000_000
    jitter_seed: int = 0
    note: str = ""
    expect: dict = attrs.Factory(dict)  # e.g. {"violation": "conforms"} for a corpus case
    image: DiskImage | None = None  # the data dirs as the broker finds them at its first startup
    # what a partition that fails to load costs (docs/scenario-format.md, "Failure policy"): "kafka",
    # Kafka's (the broker's startup fails, §6.2 step 7), or "isolate", impl's (the partition is left
    # out, the rest starts); every target runs under the one in force
    failure_policy: str = "kafka"

    def to_json(self) -> dict:
        out = {"format": FORMAT, "version": VERSION, "config": self.config, "data_dirs": self.data_dirs}
        if self.failure_policy != "kafka":
            out["failure_policy"] = self.failure_policy
        out |= {"clock_start_ms": self.clock_start_ms, "jitter_seed": self.jitter_seed}
        if self.note:
            out["note"] = self.note
        if self.expect:
            out["expect"] = self.expect
        if self.image is not None:
            out["image"] = self.image.to_json()
        out["steps"] = [s.to_json() for s in self.steps]
        return out

    def dumps(self) -> str:
        head = json.dumps({k: v for k, v in self.to_json().items() if k != "steps"}, sort_keys=False)[:-1]
        steps = ",\n    ".join(json.dumps(s.to_json()) for s in self.steps)
        return f'{head}, "steps": [\n    {steps}\n]}}\n'

    @classmethod
    def from_json(cls, d, where: str = "scenario") -> Scenario:
        if not isinstance(d, dict):
            raise ScenarioError(f"{where}: a scenario is a JSON object")
        if d.get("format") != FORMAT or d.get("version") != VERSION:
            raise ScenarioError(f'{where}: expected "format": "{FORMAT}" and "version": {VERSION}')
        extra = set(d) - {
            "format",
            "version",
            "config",
            "data_dirs",
            "clock_start_ms",
            "jitter_seed",
            "note",
            "expect",
            "image",
            "failure_policy",
            "steps",
        }
        if extra:
            raise ScenarioError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
        config = d.get("config", {})
        if not isinstance(config, dict):
            raise ScenarioError(f"{where}: 'config' must be an object of topic configs")
        try:
            Config.of(config)
        except ConfigError as e:
            raise ScenarioError(f"{where}: config: {e}") from None
        steps = d.get("steps")
        if not isinstance(steps, list):
            raise ScenarioError(f"{where}: 'steps' must be a list")
        data_dirs = _int(d, "data_dirs", where, 1, 1, 16)
        image = None if d.get("image") is None else DiskImage.from_json(d["image"], f"{where}: image", data_dirs)
        policy = d.get("failure_policy", "kafka")
        if policy not in FAILURE_POLICIES:
            raise ScenarioError(
                f"{where}: 'failure_policy' must be one of {', '.join(FAILURE_POLICIES)}, got {policy!r}"
            )
        return cls(
            tuple(step_from_json(s, f"{where}: steps[{i}]") for i, s in enumerate(steps)),
            config,
            data_dirs,
            _int(d, "clock_start_ms", where, 1_700_000_000_000, 0, 2**62),
            _int(d, "jitter_seed", where, 0),
            d.get("note", "") if isinstance(d.get("note", ""), str) else "",
            d.get("expect", {}) if isinstance(d.get("expect", {}), dict) else {},
            image,
            policy,
        )

    @classmethod
    def load(cls, path: str) -> Scenario:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except json.JSONDecodeError as e:
            raise ScenarioError(f"{path}: not JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
        except UnicodeDecodeError as e:
            raise ScenarioError(f"{path}: not UTF-8 text (byte {e.start})") from None
        return cls.from_json(data, path)
