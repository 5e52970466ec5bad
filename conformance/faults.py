"""Faults: the steps that change the disk rather than ask the broker — ``crash`` (power loss or a
process crash, between steps or at the k-th storage operation of one), ``fail_io`` (that operation
fails with EIO or ENOSPC), ``corrupt`` (a file damaged while the broker is down) and
``inject_legacy_segment`` (an old broker's segment copied in while it is down).

A fault is one class: its JSON form, like every step (:mod:`conformance.scenario`), and
``strike(context)``, which runs it on the image source — the first impl target on the simulated
backend, whose journal the crash images come from (DESIGN.md "Storage faults") — and returns a
:class:`FaultOutcome`: the results, the image every target restarts from, and what the crash
properties learn (the model's uninterrupted load, whether the image settled, the checks made while
striking).  The session restores the targets from the outcome and hands it to the crash
properties' tracker (:meth:`conformance.properties.crash_recovery.RecoveryTracker.struck`).
"""

from __future__ import annotations

import errno
import os
import re
import struct
import traceback
from typing import Any, ClassVar

import attrs

from conformance import kafkas_own
from conformance.crash_images import (
    CORRUPTIONS,
    Fault,
    FaultError,
    corrupt,
    journal,
    producer_state_damage,
)
from conformance.properties import CONFORMS, IDEMPOTENT_RECOVERY, ISOLATED
from conformance.properties import crash_recovery
from conformance.properties.crash_recovery import Reference
from conformance.scenario import (
    CODECS,
    LONG,
    NO_TIMESTAMP,
    ScenarioError,
    Step,
    Unsupported,
    _bool,
    _during,
    _int,
    _str,
    build_legacy_wrapper,
    encode_legacy_message,
)
from conformance.targets import HarnessError, digest
from model.names import LOCK_FILE, log_dir_name_with_suffix
from conformance.tracing import PowerLoss
from conformance.verdicts import describe, own_frames, where
from model import compression
from model.file_records import iterate_file

IO_ERRORS = ("EIO", "ENOSPC")
# the data dirs' lock files, which every start makes anew: a crash image cut from Kafka's own
# journal leaves them out (impl's does not count their operations: conformance.tracing.UNCOUNTED)
LOCK_FILES = ("/" + LOCK_FILE,)
JOURNALS = ("impl", "kafka")  # whose operations a crash image is cut from


@attrs.frozen
class FaultContext:
    """What a fault may touch: the image source, the model (the uninterrupted run of what a crash
    interrupts), every target, and whether to say what each crash image did to the producer-state
    files (a state machine's events)."""

    source: Any  # ImplTarget on the simulated backend
    model: Any  # ModelTarget | None
    targets: tuple
    data_dirs: int
    report_damage: bool = False


@attrs.define
class FaultOutcome:
    """What a fault did.  ``image`` (files, directories, mtimes): every target restarts from it
    (``stops_broker``: halted first, its clock set to ``clock_ms``); None when the fault changed
    nothing (refused).  The rest is for the crash properties' tracker."""

    results: dict
    image: tuple | None = None
    stops_broker: bool = False
    clock_ms: int | None = None
    kind: str = "refused"  # "crashed", "corrupted", "injected", "renamed" or "refused"
    during: Step | None = None  # the step a crash interrupted, as the model ran it whole
    model_result: dict | None = None
    reference: Reference | None = None  # the model's uninterrupted load, if ``during`` was one
    settled: bool = True  # nothing was pending before the fault (idempotent-recovery may compare)
    checked: list[str] = attrs.Factory(list)  # properties checked while striking
    violations: list[tuple[str, str, tuple[str, ...], bool]] = attrs.Factory(list)  # prop, witness, frames, stop
    damage: tuple[str, ...] = ()  # what the crash image did to producer-state files
    path: str = ""  # the damaged file (corrupted)
    injected: tuple[str, list] | None = None  # partition and batches (injected)
    journal_of: str | None = None  # the target whose own journal the image was cut from, if not impl's

    @property
    def stopped(self) -> bool:
        """A violation ended the scenario while striking: nothing is restored."""
        return any(stop for *_, stop in self.violations)

    @property
    def forgets_shutdown(self) -> bool:
        """The disk changed since the last shutdown: the next open is no clean restart."""
        return self.kind in ("crashed", "injected")


class FaultStep(Step):
    """A step the runner hands to :meth:`strike` instead of the targets."""

    runs_as: ClassVar[str] = "fault"
    partition_level: ClassVar[bool] = False

    def on(self, target):
        raise TypeError(f"{self.op} is a fault: the runner applies it to the disk image, not to a target")

    def strike(self, ctx: FaultContext) -> FaultOutcome:
        raise NotImplementedError


class ImplJournal:
    """The image source of a fault on impl's journal: impl on the simulated backend, whose
    ``at_op``-th storage operation raises instead of happening (DESIGN.md "Storage faults")."""

    def __init__(self, target):
        self.target = target

    def pending(self) -> int:
        """Operations not yet durable now (the crash image's size)."""
        return len(journal(self.target.raw_storage))

    def disk(self) -> dict[str, bytes]:
        """The files as a process crash now leaves them (every operation persists)."""
        return self.target.image()[0]

    def run(self, fault: Interrupting, during) -> tuple[dict, str | None]:
        """``during`` cut at the fault's ``at_op``-th operation: (its result, an ``isolated``
        witness if the failure escaped as it must not)."""
        target = self.target
        target.arm(fault.at_op, fault.failure())
        try:
            result = {**target.apply(during), "completed": True}
        except PowerLoss as e:
            return {
                "crashed_at": fault.at_op,
                "operation": e.args[0],
                "path": e.args[1].removeprefix(target.root + "/"),
            }, None
        except HarnessError:  # the image source could not run (Kafka's JVM died): no verdict
            raise
        except Exception as e:
            cause = getattr(fault, "error", "a crash")
            return {}, f"raised {where(e)} when operation {fault.at_op} of {describe(during)} failed with {cause}"
        finally:
            target.arm(None)
        return result, fault.escaped(result)

    def image(self, fault: Fault) -> tuple[dict, list, dict]:
        return self.target.image(fault)


class KafkaJournal:
    """The image source of a fault on Kafka's own journal: the kafka target with its I/O captured
    (:mod:`conformance.kafka_io`).  Kafka runs ``during`` whole, traced; the crash image is cut at
    its ``at_op``-th operation (past its last: after the step)."""

    def __init__(self, target):
        self.target = target
        self.cut: int | None = None  # the operation the crash falls at, once ``during`` ran

    def pending(self) -> int:
        io, capture = self.target.io, self.target.last_capture
        storage = io.storage if self.cut is None else capture.storage_at(self.cut)
        return len(journal(storage))

    def disk(self) -> dict[str, bytes]:
        return self.target.image_at(None, Fault("process"))[0]

    def run(self, fault: Interrupting, during) -> tuple[dict, str | None]:
        if isinstance(fault, FailIo):
            return self._fail(fault, during)
        self.target.capture(during)
        n = self.target.last_capture.operations
        self.cut = min(fault.at_op, n)
        return {"crashed_at": self.cut, "operations": n, **({"completed": True} if self.cut == n else {})}, None

    def _fail(self, fault: FailIo, during) -> tuple[dict, str | None]:
        """``during`` on Kafka with its ``at_op``-th call failing: Kafka's answer, what failed
        (``failed``: the call, e.g. ``msync d0/t-0/00000000000000000000.index``; ``completed``
        when ``during`` made fewer calls), and an ``isolated`` witness if the error escaped
        undeclared or left its data dir online (conformance.properties.crash_recovery)."""
        result, failed = self.target.fail_inside(during, fault.at_op, fault.error)
        self.cut = None  # the disk as Kafka left it: a process-level fault
        if failed.call is None:
            return {**result, "calls": failed.counted, "completed": True}, None
        out = {**result, "failed": failed.call}
        problem = fault.escaped(result) or crash_recovery.undeclared_io_error(result, failed.call, fault.error)
        # a load's failed dirs are in its answer; a shutdown stops the broker either way (what it
        # left is judged at the next load)
        if problem is None and not (during.loads or during.shuts_down or failed.retried):
            problem = crash_recovery.dir_left_online(result, failed.call, fault.error, failed.data_dir, failed.offline)
        return out, problem

    def image(self, fault: Fault) -> tuple[dict, list, dict]:
        """The crash image, less the data dirs' ``.lock`` files (every start makes them anew):
        every target restarts from it."""
        files, dirs, mtimes = self.target.image_at(self.cut, fault)
        kept = {p: b for p, b in files.items() if not p.endswith(LOCK_FILES)}
        return kept, dirs, {p: ms for p, ms in mtimes.items() if p in kept}


def kafka_journal(targets) -> KafkaJournal:
    """The kafka target whose own I/O is captured, as an image source; Unsupported without one."""
    for t in targets:
        if getattr(t, "io", None) is not None:
            return KafkaJournal(t)
    raise Unsupported("a fault on Kafka's own journal needs the kafka target with its I/O captured (strace)")


class Interrupting(FaultStep):
    """A fault that may stop ``during`` at its ``at_op``-th storage operation (a crash, an I/O
    error): the image source runs ``during`` until then, the model runs it whole."""

    def failure(self):
        """What the ``at_op``-th operation raises instead of happening: None, a power loss."""
        return None

    def fault_image(self) -> Fault:
        return Fault("process")

    def image_source(self, ctx: FaultContext):
        """Whose journal the crash image comes from: impl's on the simulated backend."""
        return ImplJournal(ctx.source)

    def effective_during(self, source):
        """``during`` as a broker in the source's state can be interrupted in it: a stopped broker
        does nothing but load or tick, and a running one refuses a load — then the fault falls
        between steps (and a refused load gives no reference to compare the next with)."""
        during = self.during
        if during is not None and not source.running and not during.runs_when_down:
            return None
        if during is not None and during.loads and source.running:
            return None
        return during

    def strike(self, ctx: FaultContext) -> FaultOutcome:
        source = self.image_source(ctx)
        during = self.effective_during(source.target)
        out = FaultOutcome({t.name: {} for t in ctx.targets}, kind="crashed", stops_broker=True, during=during)
        out.journal_of = source.target.name if isinstance(source, KafkaJournal) else None
        out.settled = source.pending() == 0
        fault = self.fault_image()
        loading = during is not None and during.loads
        # a process crash inside a load is judged on its image too: every operation persists, so
        # what differs from the image before the open is what the load did
        before = source.disk() if loading and fault.family == "process" else None
        if during is not None:
            self._run_interrupted(ctx, source, during, out)
            if out.stopped:
                return out
        out.model_result = out.results.get(ctx.model.name) if ctx.model is not None else None
        # how many operations the fault chose from (the crash image's size)
        name = source.target.name
        out.results[name] = {**out.results[name], "pending": source.pending()}
        live = source.target.files() if ctx.report_damage else None
        out.image = source.image(fault)
        out.clock_ms = source.target.clock.now  # time passed for every target, also where a tick was cut short
        if live is not None:
            out.damage = producer_state_damage(live, out.image[0])
        if before is not None and out.reference is not None:  # (a power loss may also lose older operations)
            out.checked.append(IDEMPOTENT_RECOVERY)
            skipped = crash_recovery.recovery_skipped(before, out.image[0], out.reference.clean)
            if skipped:
                out.violations.append((IDEMPOTENT_RECOVERY, skipped, (crash_recovery.__name__ + ".recovery_skipped",), False))
        return out

    def _run_interrupted(self, ctx: FaultContext, source, during, out: FaultOutcome) -> None:
        """``during`` on the image source, cut at its ``at_op``-th operation, and on the model
        uninterrupted (its load, if ``during`` was one, is the reference)."""
        problem = None
        for t in ctx.targets:
            if t is source.target:
                out.results[t.name], problem = source.run(self, during)
            elif t is ctx.model:
                try:
                    out.results[t.name] = t.apply(during)
                except Exception as e:
                    frames = own_frames(traceback.extract_tb(e.__traceback__))
                    out.violations.append((CONFORMS, f"{t.name} raised {where(e)} during {describe(during)}", frames, True))
                    return
                if during.loads and t.running:
                    out.reference = Reference.of(t)
        if problem:
            out.violations.append((ISOLATED, f"{source.target.name}: {problem}", (f"{__name__}._interrupted",), True))

    def escaped(self, result: dict) -> str | None:
        """An ``isolated`` witness in the result of a ``during`` that ran to its end, or None."""
        return None


@attrs.frozen
class Crash(Interrupting):
    """Power loss (spec §9.3; DESIGN.md "Storage faults").  With ``during``, that step runs until
    its ``at_op``-th storage operation (counted from 0), which never happens; without, the crash
    comes between steps.  ``fault`` picks what of the not-yet-durable operations reached the disk
    (:class:`conformance.crash_images.Fault`).  Every target stops and is left the same image.

    ``journal`` says whose operations the image is cut from: ``impl`` (impl on the simulated
    backend, the default) or ``kafka`` — Kafka's own writes, fsyncs and renames, captured from the
    kafka target's JVM (:mod:`conformance.kafka_io`): then Kafka runs ``during`` whole and the
    image keeps what its first ``at_op`` operations made durable under ``fault``."""

    op = "crash"
    fault: Any = None  # crash_images.Fault
    during: Any = None  # Step | None
    at_op: int = 0
    journal: str = "impl"

    @classmethod
    def fields_from_json(cls, d, where):
        source = _str(d, "journal", where, "impl")
        if source not in JOURNALS:
            raise ScenarioError(f"{where}: 'journal' must be one of {', '.join(JOURNALS)}")
        return {
            **_during(d, where, required=False),
            "fault": _fault_of(d.get("fault", {"family": "process"}), f"{where}.fault"),
            "journal": source,
        }

    def fault_image(self) -> Fault:
        return self.fault if self.fault is not None else Fault("process")

    def image_source(self, ctx):
        return kafka_journal(ctx.targets) if self.journal == "kafka" else ImplJournal(ctx.source)

    @property
    def on_kafka_journal(self) -> bool:  # type: ignore[override]
        return self.journal == "kafka"


@attrs.frozen
class FailIo(Interrupting):
    """The ``at_op``-th storage operation of ``during`` fails with EIO or ENOSPC.  Kafka turns it
    into a KafkaStorageException and takes the log dir offline (§6.6); the broker here stops with
    its files as they are (no power loss), and the next ``open`` loads them.

    ``journal`` says whose operation fails: ``impl`` (impl on the simulated backend, the default)
    or ``kafka`` — the ``at_op``-th of the kafka target's own system calls that change a file under
    its root, failed in its JVM (:mod:`conformance.kafka_io_errors`), so that Kafka's own error path
    runs; the disk as Kafka then left it is the image every target loads."""

    op = "fail_io"
    during: Any = None
    at_op: int = 0
    error: str = "EIO"
    journal: str = "impl"

    @classmethod
    def fields_from_json(cls, d, where):
        during = _during(d, where, required=True)
        error = d.get("error", "EIO")
        if error not in IO_ERRORS:
            raise ScenarioError(f"{where}: 'error' must be one of {', '.join(IO_ERRORS)}")
        source = _str(d, "journal", where, "impl")
        if source not in JOURNALS:
            raise ScenarioError(f"{where}: 'journal' must be one of {', '.join(JOURNALS)}")
        return {**during, "error": error, "journal": source}

    def failure(self):
        code = errno.EIO if self.error == "EIO" else errno.ENOSPC
        return lambda what, path: OSError(code, f"{os.strerror(code)} ({what})", path)

    def image_source(self, ctx):
        return kafka_journal(ctx.targets) if self.journal == "kafka" else ImplJournal(ctx.source)

    @property
    def on_kafka_journal(self) -> bool:  # type: ignore[override]
        return self.journal == "kafka"

    def escaped(self, result):
        return crash_recovery.io_error_problem(result)

    def strike(self, ctx):
        out = super().strike(ctx)
        # an I/O error a step got past (it completed): Kafka's own row says whether the image counts
        # as settled (an unreadable checkpoint is read as empty)
        completed = out.results.get(out.journal_of or ctx.source.name, {}).get("completed")
        if completed and kafkas_own.applies("unreadable-checkpoint-is-empty"):
            out.settled = False
        return out


@attrs.frozen
class Corrupt(FaultStep):
    """Damage a file while the broker is down (not a crash): ``length`` bytes at ``offset`` zeroed
    or junk, or one bit flipped.  ``path`` is relative to the broker's root (``d0/t-0/…log``)."""

    op = "corrupt"
    path: str = ""
    offset: int = 0
    length: int = 1
    kind: str = "bitflip"
    seed: int = 0

    @classmethod
    def fields_from_json(cls, d, where):
        kind = d.get("kind", "bitflip")
        if kind not in CORRUPTIONS:
            raise ScenarioError(f"{where}: 'kind' must be one of {', '.join(CORRUPTIONS)}")
        return {
            "path": _str(d, "path", where),
            "offset": _int(d, "offset", where, 0, 0),
            "length": _int(d, "length", where, 1, 1, 1 << 30),
            "kind": kind,
            "seed": _int(d, "seed", where, 0),
        }

    def strike(self, ctx):
        """Damage one file of every target's image (the broker must be down)."""
        if any(t.running for t in ctx.targets):
            return FaultOutcome({t.name: {"error": "Running"} for t in ctx.targets})
        files, dirs, mtimes = ctx.source.image()
        try:
            files = corrupt(files, self.path, self.offset, self.length, self.kind, self.seed)
        except FaultError:
            return FaultOutcome({t.name: {"error": "NoSuchFile"} for t in ctx.targets})
        return FaultOutcome({t.name: {} for t in ctx.targets}, (files, dirs, mtimes), kind="corrupted", path=self.path)


@attrs.frozen
class LegacyMessage:
    """One shallow legacy message: ``offset`` is its offset field — for a compressed wrapper the
    offset of its last inner record — and ``records`` how many records it holds (more than one
    only in a compressed wrapper, whose inner offsets are consecutive up to ``offset``)."""

    offset: int
    records: int = 1

    @property
    def first(self) -> int:
        return self.offset - self.records + 1


@attrs.frozen
class InjectLegacySegment(FaultStep):
    """A segment an old broker left (spec §7.9, KAFKA-6264): v0/v1 messages at the explicit offsets
    given, which may lie beyond ``base`` + 2^31−1 — what KAFKA-4451's rolls and KAFKA-5413's
    cleaner wrote before 0.10.2.2/0.11.0.  A disk-state step, not a fault: while the broker is down
    it creates the directory of a partition that is not on disk yet (a log moved over from an old
    cluster) holding ``<base>.log``, plus empty ``.index``/``.timeindex`` files if ``indexes`` (a
    segment the loader trusts after a clean shutdown, §5.4) — without them the load recovers it
    (§5.3).  A segment found overflowed at load is split (§5.5); every injected message must
    survive that, interrupted anywhere (``durable``).  v1 messages are timestamped ``timestamp``,
    ``timestamp`` + 1, …; v0 messages have none."""

    op = "inject_legacy_segment"
    runs_as = "disk"
    partition_level = True
    topic: str = "t"
    partition: int = 0
    dir: int = 0
    base: int | None = None  # the file's base offset; default: the first message's first offset
    messages: tuple[LegacyMessage, ...] = ()
    magic: int = 1
    codec: str = "none"
    indexes: bool = False
    timestamp: int = 0

    @classmethod
    def fields_from_json(cls, d, where):
        return _legacy_segment(d, where)


    @property
    def base_offset(self) -> int:
        return self.messages[0].first if self.base is None else self.base

    def strike(self, ctx):
        """Write the legacy segment into every target's disk image (the broker is down)."""
        key = f"d{self.dir}/{self.topic}-{self.partition}"
        error = None
        if any(t.running for t in ctx.targets):
            error = "Running"
        elif self.dir >= ctx.data_dirs:
            error = "NoSuchDataDir"
        else:
            files, dirs, mtimes = ctx.source.image()
            if key in dirs or any(p.startswith(key + "/") for p in files):
                error = "PartitionExists"
        if error:
            return FaultOutcome({t.name: {"error": error} for t in ctx.targets})
        written = legacy_segment_files(self)
        name = f"{key}/{self.base_offset:020d}"
        files = {**files, **{f"{name}{suffix}": b for suffix, b in written.items()}}
        mtimes = {**mtimes, f"{name}.log": ctx.source.clock.now}
        batches = [
            (b.header().offset, b.header().last_offset, digest(b.raw)) for b in iterate_file(written[".log"]).batches
        ]
        results = {t.name: {"messages": len(batches)} for t in ctx.targets}
        return FaultOutcome(results, (files, [*dirs, key], mtimes), kind="injected", injected=(key, batches))


@attrs.frozen
class RenameDir(FaultStep):
    """A partition directory set aside while the broker is down, as Kafka names such directories
    (spec §2.3 rule 2): ``d<dir>/<topic>-<partition>`` renamed ``<topic>-<partition>.<id>-<kind>``
    in data dir ``to_dir`` (default: its own), or with ``copy`` copied there and kept.  A disk-state
    step, not a fault: ``future`` is a replica moving between data dirs (KIP-113) — a copy in
    another dir is a move caught up but not promoted, a rename one whose current log is gone;
    ``stray`` is a log KRaft's metadata no longer assigns to this broker (``isStrayReplica``, which
    needs the metadata image and is not modelled: docs/departures.md).  The id is the scenario's
    (conformance.targets.unique_id_source), so every target finds the same name."""

    op = "rename_dir"
    runs_as = "disk"
    partition_level = True
    topic: str = "t"
    partition: int = 0
    kind: str = "future"
    dir: int = 0
    to_dir: int | None = None
    copy: bool = False

    @classmethod
    def fields_from_json(cls, d, where):
        kind = _str(d, "kind", where, "future")
        if kind not in RENAMED_KINDS:
            raise ScenarioError(f"{where}: 'kind' must be one of {', '.join(RENAMED_KINDS)}")
        out = {"kind": kind, "dir": _int(d, "dir", where, 0, 0, 15), "copy": _bool(d, "copy", where, False)}
        if d.get("to_dir") is not None:
            out["to_dir"] = _int(d, "to_dir", where, None, 0, 15)
        return out

    def strike(self, ctx):
        """Rename (or copy) the directory in every target's disk image (the broker is down)."""
        source = f"d{self.dir}/{self.topic}-{self.partition}"
        to_dir = self.dir if self.to_dir is None else self.to_dir
        error = None
        if any(t.running for t in ctx.targets):
            error = "Running"
        elif max(self.dir, to_dir) >= ctx.data_dirs:
            error = "NoSuchDataDir"
        else:
            files, dirs, mtimes = ctx.source.image()
            if source not in dirs:
                error = "NoSuchPartitionDir"
        if error:
            return FaultOutcome({t.name: {"error": error} for t in ctx.targets})
        on_disk = set(dirs)
        taken = lambda name: any(f"d{i}/{name}" in on_disk for i in range(ctx.data_dirs))  # noqa: E731
        unique = ctx.source.unique_ids(self.topic, self.partition, taken, self.kind)
        target = f"d{to_dir}/{log_dir_name_with_suffix(self.topic, self.partition, unique, self.kind)}"
        moved = lambda p: target + p[len(source) :]  # noqa: E731
        inside = [p for p in files if p.startswith(source + "/")]
        files = {**files, **{moved(p): files[p] for p in inside}}
        mtimes = {**mtimes, **{moved(p): mtimes[p] for p in inside if p in mtimes}}
        dirs = [*dirs, target]
        if not self.copy:
            files = {p: b for p, b in files.items() if p not in inside}
            mtimes = {p: t for p, t in mtimes.items() if p not in inside}
            dirs = [x for x in dirs if x != source]
        results = {t.name: {"renamed": target} for t in ctx.targets}
        return FaultOutcome(results, (files, dirs, mtimes), kind="renamed", path=source if not self.copy else "")


RENAMED_KINDS = ("future", "stray")


def _legacy_segment(d: dict, where: str) -> dict:
    if not re.fullmatch(r"[a-zA-Z0-9._-]{1,249}", d.get("topic", "t")) or d.get("topic") in (".", ".."):
        raise ScenarioError(f"{where}: 'topic' must be a legal topic name ([a-zA-Z0-9._-], 1 to 249 characters)")
    kwargs: dict[str, Any] = {"dir": _int(d, "dir", where, 0, 0, 64)}
    kwargs["magic"] = _int(d, "magic", where, 1, 0, 1)
    kwargs["codec"] = d.get("codec", "none")
    if kwargs["codec"] not in CODECS or kwargs["codec"] == "zstd":
        raise ScenarioError(f"{where}: 'codec' must be one of none, gzip, snappy, lz4 (no zstd before magic 2)")
    kwargs["indexes"] = _bool(d, "indexes", where, False)
    kwargs["timestamp"] = _int(d, "timestamp", where, 0, 0, 2**62)
    raw = d.get("messages")
    if not isinstance(raw, list) or not 1 <= len(raw) <= 10_000:
        raise ScenarioError(f"{where}: 'messages' must be a list of 1 to 10000 messages")
    messages = []
    for i, m in enumerate(raw):
        mw = f"{where}.messages[{i}]"
        if not isinstance(m, dict) or set(m) - {"offset", "records"}:
            raise ScenarioError(f"{mw}: a message is an object with 'offset' and optionally 'records'")
        records = _int(m, "records", mw, 1, 1, 1000)
        if records > 1 and kwargs["codec"] == "none":
            raise ScenarioError(f"{mw}: only a compressed wrapper holds more than one record (set 'codec')")
        msg = LegacyMessage(_int(m, "offset", mw, None, records - 1, LONG[1]), records)
        if messages and msg.first <= messages[-1].offset:
            raise ScenarioError(f"{mw}: offsets must increase (first offset {msg.first} after {messages[-1].offset})")
        messages.append(msg)
    kwargs["messages"] = tuple(messages)
    if d.get("base") is not None:
        kwargs["base"] = _int(d, "base", where, None, 0, LONG[1])
        if kwargs["base"] > messages[0].first:
            raise ScenarioError(f"{where}: 'base' {kwargs['base']} is above the first offset {messages[0].first}")
    return kwargs


def legacy_segment_files(step: InjectLegacySegment) -> dict[str, bytes]:
    """The files of an ``inject_legacy_segment`` step by suffix: the ``.log``, and with ``indexes``
    what a clean shutdown of the old broker left — an empty offset index (lookups then scan from
    the start: always right) and a time index holding only the final entry (the max timestamp and
    its message's offset) for v1.  Brokers before 2.0 cast relative offsets to int unchecked
    (§7.9), so an overflowed segment's entry holds the wrapped value."""
    files = {".log": legacy_segment_bytes(step)}
    if step.indexes:
        files[".index"] = files[".timeindex"] = b""
        if step.magic == 1:
            last = step.messages[-1].offset
            newest = step.timestamp + sum(m.records for m in step.messages) - 1
            relative = (last - step.base_offset + 2**31) % 2**32 - 2**31
            files[".timeindex"] = struct.pack(">qi", newest, relative)
    return files


def legacy_segment_bytes(step: InjectLegacySegment) -> bytes:
    """The ``.log`` file of an ``inject_legacy_segment`` step: each message's records are keyed
    ``k<offset>`` with value ``v<offset>`` (v1: timestamps from ``step.timestamp``, one per record)."""
    codec = CODECS[step.codec]
    out = bytearray()
    ts = step.timestamp
    for m in step.messages:
        entries = []
        for o in range(m.first, m.offset + 1):
            entries.append((ts if step.magic == 1 else NO_TIMESTAMP, f"k{o}".encode(), f"v{o}".encode()))
            ts += 1
        if codec == compression.NONE:
            out += encode_legacy_message(step.magic, m.offset, entries[0][1], entries[0][2], entries[0][0])
        else:
            out += build_legacy_wrapper(step.magic, codec, m.offset, entries)
    return bytes(out)


def _fault_of(d, where: str) -> Fault:
    if not isinstance(d, dict):
        raise ScenarioError(f"{where}: a fault is an object with a 'family'")
    known = {f.name for f in attrs.fields(Fault)}
    if set(d) - known:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(sorted(set(d) - known))}")
    kwargs: dict[str, Any] = {"family": d.get("family", "process")}
    for k in ("keep", "op", "cut", "seed"):
        if k in d:
            kwargs[k] = _int(d, k, where, 0, 0 if k != "seed" else LONG[0])
    if "unit" in d:
        kwargs["unit"] = _int(d, "unit", where, 512)
    if "fill" in d:
        kwargs["fill"] = d["fill"]
    if "data" in d:
        kwargs["data"] = _bool(d, "data", where, True)
    if "lose" in d:
        lose = d["lose"]
        if not isinstance(lose, list) or any(type(i) is not int or i < 0 for i in lose):
            raise ScenarioError(f"{where}: 'lose' must be a list of operation numbers (integers ≥ 0)")
        kwargs["lose"] = tuple(lose)
    try:
        return Fault(**kwargs)
    except (FaultError, TypeError) as e:
        raise ScenarioError(f"{where}: {e}") from None
