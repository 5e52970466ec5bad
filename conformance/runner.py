"""The one scenario runner (DESIGN.md: one runner, one vocabulary, one set of properties).

:func:`run` executes a :class:`~conformance.scenario.Scenario` step by step against the model and/or
impl (on the simulated or the real storage backend) and checks, after every step, the properties
that apply:

* ``conforms`` — with two targets: the same result for every step, the same logical log (log start
  offset, log end offset, recovery point, segment bases, sizes and bytes, leader epochs) and the same
  files (index files too right after a shutdown or an open, when every index is trimmed or resized);
* ``index-agrees`` — every index entry of every live segment names the batch it points at, and a
  lookup through the index equals a scan (what ``kafka-dump-log --verify-index-only`` checks);
* ``clean-restart`` — after a graceful shutdown every index file is trimmed and sane, and the open
  that follows recovers nothing and (impl) reads no log bytes beyond the active segments' tails and
  opens no index of an inactive segment (KAFKA-7283);
* after a fault step (``crash``, ``fail_io``, ``corrupt``), at the next ``open``: ``durable`` (every
  batch below the recovery point when the power went, in a partition whose directory entry was
  durable, is there), ``prefix`` (every batch was appended at some time, offsets increase, and each
  pair of neighbours were neighbours at some time), ``idempotent-recovery`` (after a crash during an
  ``open``, the log equals the one the uninterrupted load gave, and no clean-shutdown marker is left
  over index files the load had changed, KAFKA-10471) and ``isolated`` (a load error names
  a file of its own partition; an I/O error surfaces as Kafka's KafkaStorageException).

Fault steps share one image: the first impl target on the simulated backend is the image source
(one is added when no target is), runs the interrupted step, and the image its storage leaves is
given to every target (the real backend gets it materialised, DESIGN.md "Storage faults").

Every Hypothesis state machine, corpus case, campaign task and ``klc replay`` goes through here.
"""

from __future__ import annotations

import collections
import errno
import os
import struct
import traceback

import attrs

from conformance import kafka_findings
from conformance import scenario as sc
from conformance.crash_images import Fault, FaultError, corrupt, journal
from conformance.kafka_target import KafkaTarget, Unsupported
from conformance.properties import (
    BAD_INPUT,
    CLEAN_RESTART,
    CONFORMS,
    DURABLE,
    IDEMPOTENT_RECOVERY,
    INDEX_AGREES,
    ISOLATED,
    PREFIX,
)
from conformance.targets import INDEX_SUFFIXES, ImplTarget, ModelTarget, digest, is_index_file
from conformance.tracing import PowerLoss
from model.checkpoints import parse_epochs, parse_offsets
from model.file_records import iterate_file
from model.log_manager import ALL_DELETED, CLEAN_LOAD, EPOCHS_PAST_END, LATER_DELETED, SPLIT_BELOW_BASE

_OWN_PACKAGES = ("model", "impl", "conformance")


_ENTRY_POINTS = ("conformance.runner.step", "conformance.runner.run")  # callers beyond these vary


def own_frames(frames, limit: int = 3) -> tuple[str, ...]:
    """The innermost ``limit`` frames inside model/, impl/ or conformance/ as ``module.function``
    (Hypothesis, Spark, pytest and the standard library left out): where a failure happened, stable
    across line-number edits — the frame part of a campaign signature (ClusterFuzz-style)."""
    out: list[str] = []
    for f in reversed(list(frames)):
        parts = os.path.normpath(f.filename).split(os.sep)
        for package in _OWN_PACKAGES:
            if package in parts[:-1]:
                at = len(parts) - 1 - parts[::-1].index(package)
                module = ".".join(parts[at:])[: -len(".py")]
                out.append(f"{module}.{f.name}")
                break
        if len(out) == limit or (out and out[-1] in _ENTRY_POINTS):
            break
    return tuple(out)


def _detector_frames() -> tuple[str, ...]:
    """Where a violation was found: the checking code that created it."""
    return own_frames(f for f in traceback.extract_stack()[:-2] if not f.filename.startswith("<"))


@attrs.define
class Violation:
    prop: str
    step: int  # index into the scenario's steps (−1: before any step)
    witness: str
    # innermost own frames: of the exception when a target raised, else of the check that found it
    frames: tuple[str, ...] = attrs.field(factory=_detector_frames, eq=False)

    def __str__(self) -> str:
        return f"{self.prop} violated at step {self.step}: {self.witness}"


@attrs.define
class Verdict:
    scenario: sc.Scenario
    targets: list[str]
    results: list[dict] = attrs.Factory(list)  # per step: {target name: result}
    violations: list[Violation] = attrs.Factory(list)
    checked: dict[str, int] = attrs.Factory(dict)  # property → times checked
    load_stats: list[dict] = attrs.Factory(list)
    unsupported: str | None = None  # a step a target could not express: the scenario was not judged
    known: str | None = None  # a known Kafka bug reached (conformance.kafka_findings): not judged after it

    @property
    def ok(self) -> bool:
        return not self.violations and self.unsupported is None and self.known is None

    def to_json(self) -> dict:
        return {
            "targets": self.targets,
            "ok": self.ok,
            "unsupported": self.unsupported,
            "known": self.known,
            "steps": len(self.results),
            "checked": self.checked,
            "violations": [attrs.asdict(v) for v in self.violations],
            "results": self.results,
        }


def _describe(step: sc.Step) -> str:
    if step.partition_level:
        return f"{step.op} {step.topic}-{step.partition}"
    return step.op


def _first_difference(a, b, path="") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'first' if k in a else 'second'}"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}/{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path or '/'}: {_short(a)} != {_short(b)}"


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 160 else text[:157] + "..."


# --- index-agrees ------------------------------------------------------------------------------------


def index_problem(
    offset_entries, time_entries, log: bytes, active: bool, base: int | None = None, end: int | None = None
) -> str | None:
    """None if every entry is right about ``log`` (a scan is the truth), else the first problem.

    ``end`` is the segment's end offset (the next segment's base, or the log end offset): an entry
    past the last batch but below it is Kafka's own.  A cleaned segment's index entry names the
    largest offset its cleaner kept (``FilterResult.maxOffset``), which may lie below the batch's
    preserved last offset; a truncation into that batch cuts the log before it but keeps every entry
    below the target (§4.7), and the log end offset becomes the target, so the entry names an offset
    the log no longer holds and the next append's entries lie above it (found by the time-to-catch
    control, stop 26: corpora/found/index-agrees-0ed501a4f1).  Its position is a batch start below the
    cut, or the cut itself, now the log end (stop 27: corpora/found/index-agrees-1673607469).  Lookups
    stay right: an entry is a lower bound on its offset's position.

    Not checked: that an inactive segment's last time entry carries its max timestamp (§9.1.4).
    Kafka itself breaks that: after a restart ``truncateTo`` truncates the time index before it
    reloads the max timestamp from it (§4.7 steps 2 and 7), so the max entry is gone for good and
    time retention falls back to the file's mtime.  Lookups stay right, which is what this checks.

    Nor that the first time entry lies above every batch before it.  When a truncation empties the
    time index before the max timestamp was loaded, Kafka's max becomes (−1, base) and §4.7 step 7
    is skipped: the batches left below the cut are forgotten, so the next entry (written at the roll)
    may sit below one of them (found by the crash machine once truncations aimed at segment edges;
    corpora/crash/time-entry-below-a-batch-a-truncation-forgot.json).  From the first entry on,
    entries still lie above every batch between them.

    Nor entries below the segment's ``base``: a relative offset past 2^31 that a legacy broker wrote
    into an index (KAFKA-5413, §3.1) reads back negative.  Kafka keeps such an entry for good, also
    through a truncation, which looks for entries at or above the target (found by the crash machine:
    corpora/crash/overflowed-legacy-time-entry-survives-a-truncation.json)."""
    if base is not None:
        offset_entries = [e for e in offset_entries if e[0] >= base]
        time_entries = [e for e in time_entries if e[1] >= base]
    batches = [(b.position, b.header()) for b in iterate_file(log).batches]
    starts = {p: (h.offset if h.magic >= 2 else h.last_offset) for p, h in batches}
    last_offset = batches[-1][1].last_offset if batches else None
    past = last_offset if end is None or last_offset is None else end - 1  # the largest offset an entry may name
    for i, (key, position) in enumerate(offset_entries):
        if position == len(log) and past is not None and last_offset is not None and last_offset < key <= past:
            continue  # the cut batch's own chunk: its position is the log end now (see above)
        if position not in starts:
            return f"offset index entry {i} ({key}, {position}) does not point at a batch start"
        if starts[position] > key or past is None or key > past:
            return f"offset index entry {i} ({key}, {position}) names an offset its batch does not hold"
    running, j = -1, 0
    for i, (ts, offset) in enumerate(time_entries):
        if past is None or offset > past:
            return f"time index entry {i} ({ts}, {offset}) is past the end of the log"
        while j < len(batches) and batches[j][1].last_offset < offset:
            if i:  # before the first entry: what a truncation may have made Kafka forget
                running = max(running, batches[j][1].max_timestamp)
            j += 1
        if running >= ts:
            return f"time index entry {i} ({ts}, {offset}): an earlier batch already reached {running}"
    return None


def trimmed_index_problem(path: str, data: bytes, zero_slots: bool = True) -> str | None:
    """clean-restart: an index file after a graceful shutdown holds only its entries, in order.

    ``zero_slots=False`` after a fault: Kafka itself can then keep an all-zero entry for good (an
    inactive segment's last time-index entry, written at the roll, is never msynced — the post-roll
    flush starts at the recovery point; a power loss that keeps the trim but not the page leaves
    (0, base), which Kafka's sanity check accepts).  The layout rules still hold."""
    size = 8 if path.endswith(".index") else 12
    if path.endswith(".txnindex"):
        return None
    if len(data) % size:
        return f"{path}: length {len(data)} is not a multiple of {size}"
    fmt = struct.Struct(">ii" if size == 8 else ">qi")
    entries = [fmt.unpack_from(data, i) for i in range(0, len(data), size)]
    for i, e in enumerate(entries):
        if e == (0, 0) and zero_slots:
            return f"{path}: slot {i} is zero (not trimmed to its entries)"
        if e == (0, 0) and not zero_slots:
            continue
        if i and (e[0] <= entries[i - 1][0] if size == 8 else e[0] < entries[i - 1][0]):
            return f"{path}: entry {i} {e} does not increase on entry {i - 1} {entries[i - 1]}"
    return None


# --- the runner -------------------------------------------------------------------------------------


def make_target(kind: str, scenario: sc.Scenario, backend: str = "sim"):
    """A target by name: ``model``, ``impl`` (on ``backend``), or ``kafka`` (Kafka's own jars)."""
    if kind == "model":
        return ModelTarget(scenario)
    if kind == "impl":
        return ImplTarget(scenario, backend)
    if kind == "kafka":
        return KafkaTarget(scenario)
    raise ValueError(f"unknown target {kind!r} (model, impl or kafka)")


class Session:
    """Targets started on a scenario's header; :meth:`step` runs one step and returns the new
    violations.  ``steps`` is the scenario so far (what a failing state machine prints)."""

    def __init__(self, scenario: sc.Scenario, targets=("model", "impl"), backend: str = "sim", faults=None):
        self.header = attrs.evolve(scenario, steps=())
        self.targets = []
        self.verdict = Verdict(scenario, list(targets))
        self.broken = False
        try:
            for t in targets:
                self.targets.append(make_target(t, scenario, backend))
        except Unsupported as e:
            self.verdict.unsupported = f"before any step: {e}"
            self.broken = True
        if faults is None:
            faults = any(isinstance(s, FAULT_STEPS + DISK_STEPS) for s in scenario.steps)
        self.source = next((t for t in self.targets if isinstance(t, ImplTarget) and t.backend == "sim"), None)
        if faults and self.source is None:
            self.source = ImplTarget(scenario, "sim")
            self.targets.append(self.source)
        self.model = next((t for t in self.targets if isinstance(t, ModelTarget)), None)
        self.verdict.targets = [t.name for t in self.targets]
        self.steps: list[sc.Step] = []
        self._shutdown_at = None
        self.tracker = RecoveryTracker()
        self.unloadable: set[str] = set()  # partitions the last open left out: their files are not compared
        self.shutdown_dirs: dict[str, bool] = {}  # data dir → whether the last shutdown wrote its marker
        self._apply(sc.Open(), -1)

    @property
    def scenario(self) -> sc.Scenario:
        return attrs.evolve(self.header, steps=tuple(self.steps))

    def step(self, step: sc.Step) -> list[Violation]:
        self.steps.append(step)
        return self._apply(step, len(self.steps) - 1)

    def _apply(self, step: sc.Step, index: int) -> list[Violation]:
        verdict = self.verdict
        before = len(verdict.violations)
        if self.broken:
            return []
        if isinstance(step, FAULT_STEPS):
            self._fault(step, index)
            return verdict.violations[before:]
        if isinstance(step, DISK_STEPS):
            self._inject(step, index)
            return verdict.violations[before:]
        if isinstance(step, sc.Shutdown) and self.model is not None and self.model.running:
            self.tracker.observe(self.model, step)  # a completed shutdown flushes everything
        results = {}
        for t in self.targets:
            mark = len(t.trace) if t.trace is not None else 0
            try:
                results[t.name] = t.apply(step)
            except Unsupported as e:  # not judged: reported, never passed (DESIGN.md "Targets")
                verdict.unsupported = f"step {index} ({_describe(step)}): {e}"
                self.broken = True
                return verdict.violations[before:]
            except Exception as e:  # an operation neither target should refuse blew up
                witness = f"{t.name} raised {_where(e)} during {_describe(step)}"
                prop = BAD_INPUT if isinstance(step, sc.Open) and self.tracker.faulted else CONFORMS
                frames = own_frames(traceback.extract_tb(e.__traceback__))
                verdict.violations.append(Violation(prop, index, witness, frames))
                self.broken = True
                return verdict.violations[before:]
            if isinstance(step, sc.Race) and t.built_twice:
                verdict.violations.append(
                    Violation(
                        CONFORMS,
                        index,
                        f"{t.name}: the race built the lazy index {t.built_twice[0]} twice — two index objects for one file (KAFKA-9156)",
                    )
                )
                self.broken = True
                return verdict.violations[before:]
            if t.trace is not None:
                problem = protocol_problem(t, step, t.trace[mark:])
                _count(verdict, DURABLE)
                if problem:
                    verdict.violations.append(Violation(problem[0], index, f"{t.name}: {problem[1]}"))
        if index >= 0:
            verdict.results.append(results)
        if isinstance(step, sc.Open):
            self.unloadable = {
                x["partition"] for t in self.targets for x in results[t.name].get("loaded", ()) if x["error"]
            }
        if len(verdict.violations) == before:
            _check(
                verdict, self.targets, step, index, results, self._shutdown_at, self.tracker.ever_faulted,
                self.unloadable, self.tracker.ever_corrupted, self.shutdown_dirs,
            )  # fmt: skip
            finding = verdict.violations[before:] and kafka_findings.known(step, results, verdict.violations[before])
            if finding:  # a Kafka bug already pinned: reported as such, the rest not judged
                verdict.known = f"{finding.name} at step {index}: {verdict.violations[before].witness}"
                del verdict.violations[before:]
                self.broken = True
                return []
        if len(verdict.violations) == before and isinstance(step, sc.Open):
            for prop, witness in self.tracker.after_open(self.targets):
                _count(verdict, prop)
                if witness:
                    verdict.violations.append(Violation(prop, index, witness))
                    break
        if self.model is not None and self.model.running and not isinstance(step, READ_STEPS + (sc.Shutdown,)):
            self.tracker.observe(self.model, step, result=results.get(self.model.name, {}))
        if isinstance(step, sc.Shutdown) and "error" not in next(iter(results.values()), {}):
            self._shutdown_at = index
            self.shutdown_dirs = next(iter(results.values()), {}).get("shutdown", {})
        elif not isinstance(step, sc.Tick):  # a refused shutdown (not running) shut nothing down
            self._shutdown_at = None
        return verdict.violations[before:]

    def close(self) -> None:
        for t in self.targets:
            t.close()

    # --- fault steps ------------------------------------------------------------------------------

    def _fault(self, step, index: int) -> None:
        """Run a crash / fail_io / corrupt step: see the module docstring."""
        verdict = self.verdict
        source = self.source
        if source is None:
            raise sc.ScenarioError(f"step {index}: fault steps need an impl target on the simulated backend")
        results = {t.name: {} for t in self.targets}
        if isinstance(step, sc.Corrupt):
            if any(t.running for t in self.targets):
                results = {t.name: {"error": "Running"} for t in self.targets}
            else:
                files, dirs, mtimes = source.image()
                try:
                    files = corrupt(files, step.path, step.offset, step.length, step.kind, step.seed)
                except FaultError:
                    results = {t.name: {"error": "NoSuchFile"} for t in self.targets}
                else:
                    for t in self.targets:
                        t.restore(files, dirs, mtimes)
                    self.tracker.corrupted(step.path)
            verdict.results.append(results)
            return
        during = step.during
        if during is not None and not source.running and not isinstance(during, sc.Open | sc.Tick):
            during = None  # a stopped broker does nothing: the fault falls between steps
        if isinstance(during, sc.Open) and source.running:
            # a running broker refuses an open: the fault falls after it, and there is no load to
            # take idempotent-recovery's reference from (it took the running broker's state)
            during = None
        pending_before = _pending_count(source)
        reference = None
        fault = step.fault if isinstance(step, sc.Crash) and step.fault is not None else Fault("process")
        # a process crash inside a load is judged on its image too (below): every operation
        # persists, so what differs from the image before the open is what the load did
        before = source.image()[0] if isinstance(during, sc.Open) and fault.family == "process" else None
        if during is not None:
            for t in self.targets:
                if t is source:
                    results[t.name] = self._interrupted(t, step, during)
                elif t is self.model:
                    try:
                        results[t.name] = t.apply(during)
                    except Exception as e:
                        verdict.violations.append(
                            Violation(
                                CONFORMS,
                                index,
                                f"{t.name} raised {_where(e)} during {_describe(during)}",
                                own_frames(traceback.extract_tb(e.__traceback__)),
                            )  # fmt: skip
                        )
                        self.broken = True
                        return
                    if isinstance(during, sc.Open) and t.running:
                        reference = t.state()
                        # partitions the uninterrupted load found clean: the crash may turn the next
                        # load into a recovery, which a clean load of corrupt bytes never was
                        reference["clean"] = _partitions_that_took(t, CLEAN_LOAD)
                        reference["epochs_ahead"] = epochs_ahead_of_log_start(t.image) | _partitions_that_took(
                            t, EPOCHS_PAST_END, ALL_DELETED
                        )
                        reference["cut_midway"] = _partitions_that_took(t, LATER_DELETED, SPLIT_BELOW_BASE)
        problem = results.get(source.name, {}).get("problem")
        if problem:
            verdict.violations.append(Violation(problem[0], index, f"{source.name}: {problem[1]}"))
            self.broken = True
            return
        if self.model is not None and self.model.running:
            self.tracker.observe(self.model, during, crashed=True, result=results.get(self.model.name))
        # idempotent-recovery is judged only on a settled image (nothing pending before the open):
        # otherwise the crash may also have lost what preceded the load (corpora/crash/idempotent-recovery-after-a-crash-inside-the-loader.json)
        settled = pending_before == 0
        if source.backend == "sim":  # how many operations the fault chose from (the crash image's size)
            results[source.name] = {**results[source.name], "pending": len(journal(source.raw_storage))}
        files, dirs, mtimes = source.image(fault)
        if before is not None and reference is not None:  # (a power loss may also lose older operations)
            _count(verdict, IDEMPOTENT_RECOVERY)
            skipped = _recovery_skipped(before, files, reference["clean"])
            if skipped:
                verdict.violations.append(Violation(IDEMPOTENT_RECOVERY, index, skipped))
        for t in self.targets:
            t.halt()
            t.restore(files, dirs, mtimes)
            # only the image source and the model ran ``during``: a tick it interrupted moved their
            # clocks, and time passed for the other targets too (the os backend's impl, whose next
            # cleaning round took an earlier delete horizon — found by the os crash machine, stop 24,
            # corpora/crash/tick-interrupted-by-a-crash-moves-every-clock.json)
            t.clock.now = source.clock.now
        # an I/O error the load got past (completed: a checkpoint it could not read is an empty map,
        # §6.2 steps 3–4, so every segment is recovered from 0) interrupted no recovery: that load is
        # another load, whose epoch cache holds what recovering every segment assigns, not a partial
        # one to compare with the uninterrupted load (corpora/found/idempotent-recovery-54eed4fba5)
        got_past = isinstance(step, sc.FailIo) and results.get(source.name, {}).get("completed")
        self.tracker.crashed(reference if settled and not got_past else None, isinstance(during, sc.Open))
        self._shutdown_at = None
        verdict.results.append(results)

    def _inject(self, step: sc.InjectLegacySegment, index: int) -> None:
        """Write the legacy segment into every target's disk image (the broker is down)."""
        source = self.source
        if source is None:
            raise sc.ScenarioError(f"step {index}: {step.op} needs an impl target on the simulated backend")
        key = f"d{step.dir}/{step.topic}-{step.partition}"
        error = None
        if any(t.running for t in self.targets):
            error = "Running"
        elif step.dir >= self.header.data_dirs:
            error = "NoSuchDataDir"
        else:
            files, dirs, mtimes = source.image()
            if key in dirs or any(p.startswith(key + "/") for p in files):
                error = "PartitionExists"
        if error:
            self.verdict.results.append({t.name: {"error": error} for t in self.targets})
            return
        written = sc.legacy_segment_files(step)
        data = written[".log"]
        name = f"{key}/{step.base_offset:020d}"
        files = {**files, **{f"{name}{suffix}": b for suffix, b in written.items()}}
        mtimes = {**mtimes, f"{name}.log": source.clock.now}
        for t in self.targets:
            t.restore(files, [*dirs, key], mtimes)
        batches = [(b.header().offset, b.header().last_offset, digest(b.raw)) for b in iterate_file(data).batches]
        self.tracker.injected(key, batches)
        self._shutdown_at = None  # the disk changed since the shutdown: not a clean restart any more
        self.verdict.results.append({t.name: {"messages": len(batches)} for t in self.targets})

    def _interrupted(self, target, step, during) -> dict:
        """Run ``during`` on the image source with its ``at_op``-th storage operation failing."""
        failure = None
        if isinstance(step, sc.FailIo):
            code = errno.EIO if step.error == "EIO" else errno.ENOSPC
            failure = lambda what, path: OSError(code, f"{os.strerror(code)} ({what})", path)  # noqa: E731
        target.arm(step.at_op, failure)
        try:
            result = target.apply(during)
            result = {**result, "completed": True}
        except PowerLoss as e:
            return {"crashed_at": step.at_op, "operation": e.args[0], "path": e.args[1].removeprefix(target.root + "/")}
        except Exception as e:
            return {
                "problem": (
                    ISOLATED,
                    f"raised {_where(e)} when operation {step.at_op} of {_describe(during)} failed with {getattr(step, 'error', 'a crash')}",
                )
            }
        finally:
            target.arm(None)
        if isinstance(step, sc.FailIo):
            problem = _io_error_problem(result)
            if problem:
                return {"problem": (ISOLATED, problem)}
        return result


FAULT_STEPS = (sc.Crash, sc.FailIo, sc.Corrupt)
DISK_STEPS = (sc.InjectLegacySegment,)  # change the disk while the broker is down; not faults
READ_STEPS = (sc.Read, sc.OffsetForTimestamp)


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f" at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    return f"{type(e).__name__}: {e}{where}"


def _pending_count(target) -> int:
    if not isinstance(target, ImplTarget) or target.backend != "sim":
        return 0
    from conformance.crash_images import journal

    return len(journal(target.raw_storage))


def _io_error_problem(result: dict) -> str | None:
    """isolated: an I/O error while loading fails one partition (or one data dir), never more.
    (Elsewhere it must reach the caller as a declared error, KafkaStorageException: anything else
    is an unexpected exception, reported by the caller.)"""
    io = (os.strerror(errno.EIO), os.strerror(errno.ENOSPC))
    failed = [x for x in result.get("loaded", ()) if x["error"] and any(m in x["error"] for m in io)]
    if len(failed) > 1:
        return f"one I/O error failed {len(failed)} partitions: {'; '.join(x['error'] for x in failed)}"
    return None


class RecoveryTracker:
    """What the crash properties compare a recovered log with (see the module docstring).

    ``history``: per partition, every batch ever readable and every pair of neighbours ever seen;
    ``required``: per partition, the batches that must survive a power loss now — below the recovery
    point, at or above the log start offset, in a partition whose directory entry a data-dir fsync
    (a checkpoint write, a shutdown, a load from a durable image) has made durable."""

    def __init__(self):
        self.seen: dict[str, set] = collections.defaultdict(set)
        self.pairs: dict[str, set] = collections.defaultdict(set)
        self.required: dict[str, list] = {}
        self.anchored: set[str] = set()
        self.faulted = False
        self.ever_faulted = False
        self.ever_corrupted: set[str] = set()
        self.reference = None
        self.open_crashed = False
        self.injected_batches: dict[str, list] = {}  # must all be there at the next completed open
        self.legacy: set[str] = set()  # partitions an inject_legacy_segment step created
        self.last: tuple[dict, dict] = ({}, {})  # batches and segment bases at the last observe

    def injected(self, key: str, batches: list) -> None:
        """A legacy segment written onto the disk (``inject_legacy_segment``): its messages are
        durable data, so the next completed open must have every one (a split loses nothing)."""
        self.seen[key].update(d for _, _, d in batches)
        self.pairs[key].update((a[2], b[2]) for a, b in zip(batches, batches[1:], strict=False))
        self.injected_batches[key] = list(batches)
        self.legacy.add(key)
        self.faulted = True
        if self.reference is not None:  # not there when the interrupted load ran: not compared
            self.reference.setdefault("injected", set()).add(key)

    def observe(self, model, step, crashed: bool = False, result: dict | None = None) -> None:
        batches = model.batches()
        state = model.state()["partitions"]
        for key, bs in batches.items():
            self.seen[key].update(d for _, _, d in bs)
            self.pairs[key].update((a[2], b[2]) for a, b in zip(bs, bs[1:], strict=False))
        if isinstance(step, sc.Clean) and (result or {}).get("groups"):
            self._cleaning_neighbours(model, step, result["groups"], batches)
        self.last = (batches, {k: [seg[0] for seg in v["segments"]] for k, v in state.items()})
        if isinstance(step, sc.Checkpoint | sc.Shutdown | sc.Open) and not crashed:
            self.anchored |= set(batches)
        elif (
            # a truncation writes the dir's recovery-point checkpoint (which fsyncs the data dir)
            # only if it removed something (§4.7, LogManager.truncateTo)
            (isinstance(step, sc.TruncateFully) or (isinstance(step, sc.Truncate) and (result or {}).get("truncated")))
            and not crashed
            and (step.topic, step.partition) in model.manager.partitions
        ):
            d = f"{model.manager.dir_of(step.topic, step.partition)}/"
            self.anchored |= {k for k in batches if k.startswith(d)}
        required = {}
        for key, bs in batches.items():
            if key not in self.anchored:
                continue
            rp = state[key]["log_end_offset"] if isinstance(step, sc.Shutdown) else state[key]["recovery_point"]
            ls = state[key]["log_start_offset"]
            required[key] = [b for b in bs if b[1] < rp and b[0] >= ls]
        if crashed:  # the interrupted step may or may not have happened: what both states require
            required = {
                k: [b for b in v if b in set(self.required.get(k, ()))]
                for k, v in required.items()
                if k in self.required
            }
        self.required = required

    def _cleaning_neighbours(self, model, step, groups, after) -> None:
        """A cleaning round installs its groups one by one (§5.9): a crash between two leaves the
        first ones cleaned and the rest as they were, so the neighbours of every such mix are
        neighbours the log has had.

        And a crash inside one group's swap, once its ``.swap`` files are durable, leaves a mix of
        the group itself: the next load deletes only the originals whose base lies in [swap base,
        swap readNextOffset) and renames the ``.swap`` over the original of the same base (§5.2
        steps 3–4, §5.9 caveat 1).  When cleaning removed the group's last batches, the cleaned
        segment ends early and the originals above its end come back beside it (found by the
        time-to-catch control, stop 26: corpora/found/prefix-ba8ffe62e6)."""
        before, bases = self.last
        key = f"{model.manager.dir_of(step.topic, step.partition)}/{step.topic}-{step.partition}"
        old, new, bases = before.get(key, []), after.get(key, []), bases.get(key, [])
        ranges = []
        for group in groups:
            later = [b for b in bases if b > group[-1]]
            ranges.append((group[0], later[0] if later else 2**63))
        mixes = []
        for installed in range(1, len(groups)):
            mixes.append(
                [b for b in new if b[0] < ranges[installed][0]]
                + [b for b in old if ranges[installed][0] <= b[0] < ranges[-1][1]]
                + [b for b in new if b[0] >= ranges[-1][1]]
            )
        for start, end in ranges:
            cleaned = [b for b in new if start <= b[0] < end]
            read_next = cleaned[-1][1] + 1 if cleaned else start
            kept = [s for s in bases if s >= max(read_next, start + 1)]
            back = kept[0] if kept else 2**63
            mixes.append(
                [b for b in new if b[0] < end]
                + [b for b in old if back <= b[0] < ranges[-1][1]]
                + [b for b in new if b[0] >= ranges[-1][1]]
            )
        for mixed in mixes:
            self.pairs[key].update((a[2], b[2]) for a, b in zip(mixed, mixed[1:], strict=False))

    def crashed(self, reference, during_open: bool) -> None:
        self.faulted = self.ever_faulted = True
        if during_open:
            self.open_crashed = True
            if self.reference is None:
                self.reference = reference

    def corrupted(self, path: str) -> None:
        self.faulted = self.ever_faulted = True
        self.ever_corrupted.add(path.rsplit("/", 1)[0])
        self.reference = None

    def after_open(self, targets) -> list[tuple[str, str | None]]:
        if not self.faulted:
            return []
        out = []
        running = [t for t in targets if t.running]
        # Kafka's own: a load that finds the log end below the checkpointed log start deletes every
        # segment (§5.6 step 2).  A truncation below the log start (truncateFullyAndStartAt) writes
        # the recovery-point checkpoint but not the log-start one, so batches appended and flushed
        # after it, below the old log start, are deleted by the load after a crash (found by the
        # time-to-catch control, stop 27: corpora/found/durable-1e5a11ef87)
        model = next((t for t in running if isinstance(t, ModelTarget)), None)
        all_deleted = _partitions_that_took(model, ALL_DELETED) if model is not None else set()
        for t in running:
            for load in t.last_load:
                error = load["error"]
                if error and load["partition"] and load["partition"] not in error:
                    out.append(
                        (ISOLATED, f"{t.name}: the load error of {load['partition']} names no file of it: {error}")
                    )
            all_batches = t.batches()
            failed = {load["partition"] for load in t.last_load if load["error"]}
            required = dict(self.required)
            for key, need in self.injected_batches.items():
                required[key] = [*required.get(key, ()), *need]
            for key, need in sorted(required.items()):
                have = set(all_batches.get(key, ()))
                missing = [b for b in need if b not in have]
                if tainted(key, self.ever_corrupted) or key.split("/")[-1] in failed or key in all_deleted:
                    continue  # corruption: data may be missing, never wrong; unloadable: isolated
                if missing:
                    b = missing[0]
                    why = (
                        "on disk when the broker started"
                        if b in self.injected_batches.get(key, ())
                        else "flushed before the crash"
                    )
                    out.append(
                        (DURABLE, f"{t.name}: offsets {b[0]}..{b[1]} of {key}, {why}, are missing after recovery")
                    )
                    break
            else:
                out.append((DURABLE, None))
            for key, bs in sorted(all_batches.items()):
                problem = self._prefix_problem(key, bs)
                if problem:
                    out.append((PREFIX, f"{t.name}: {problem}"))
                    break
            else:
                out.append((PREFIX, None))
            if self.reference is not None and self.open_crashed:
                got = t.state()["partitions"]
                # a corrupted partition whose uninterrupted load was clean may differ: recovery
                # truncates corruption a clean load never reads (Kafka deletes the marker first)
                skip = {k for k in self.reference.get("clean", set()) if tainted(k, self.ever_corrupted)}
                skip |= self.reference.get("injected", set())
                # a legacy partition the uninterrupted load found clean: the recovery the crash
                # turns the next load into may split what a clean load keeps (§7.9: overflow is
                # found only in recovered segments), and a partition never checkpointed recovers
                # from 0 where a clean load starts at its end (§5.6 step 4)
                skip |= {k for k in self.reference.get("clean", set()) if k in self.legacy}
                # Kafka's own: a recovery that cuts a segment short deletes the later unflushed
                # segments after the cut, and neither is made durable (§5.6 step 1b).  A crash that
                # keeps the cut and loses the renames leaves the later segments, which the next load
                # keeps: nothing is cut any more.  The log end offset can then differ, past a range
                # with no batches (found by the time-to-catch control, stop 22,
                # corpora/crash/recovery-crashed-after-a-cut-keeps-the-later-segments.json); the
                # durable and prefix properties still check the batches.  Likewise a split at load
                # whose new segments all lie below or above the original's base: its rename to
                # .deleted is not durable before the new segments' renames (§5.9 steps 3–5), and a
                # crash that loses only it leaves the original beside them (found by the time-to-catch
                # control, stop 23; corpora/found/idempotent-recovery-6b9fcf50d5)
                skip |= self.reference.get("cut_midway", set())
                got = {k: v for k, v in got.items() if k not in skip}
                want = {
                    k: v
                    for k, v in self.reference["partitions"].items()
                    if k.split("/")[-1] not in failed and k not in skip
                }
                # Kafka's own: see epochs_ahead_of_log_start, and a load whose truncateFromEnd
                # removed entries a recovery had not assigned (model.log_manager.EPOCHS_PAST_END:
                # the next recovery assigns them from the batches).  And a partition the uninterrupted
                # load found clean: the crash (after the marker was deleted, KAFKA-10471) turns the
                # next load into a recovery, which assigns epochs from the recovered batches where
                # the clean load took the checkpoint as it was — after truncateFromEnd removed the
                # only entry above a batch below the log start, the two differ (found by the
                # time-to-catch control, corpora/crash/clean-load-crashed-recovery-rebuilds-the-epoch-cache.json).
                # And a load that found the log end below the checkpointed log start (model.log_manager.
                # ALL_DELETED): it removes every segment, then clears the epoch cache (recoverLog's
                # clearAndFlush), then creates a segment at the log start; a crash between the first
                # two leaves the checkpoint, which the next load keeps, truncated from the start (found by the
                # time-to-catch control, stop 25, corpora/crash/crash-before-the-epoch-cache-is-cleared.json)
                ahead = self.reference.get("epochs_ahead", set()) | self.reference.get("clean", set())
                got, want = ({k: _without_epochs(v) if k in ahead else v for k, v in d.items()} for d in (got, want))
                diff = _first_difference(want, got) if got != want else None
                out.append(
                    (
                        IDEMPOTENT_RECOVERY,
                        diff
                        and f"{t.name}: after a crash during recovery, {diff} (uninterrupted recovery first, then this one)",
                    )
                )
        self.faulted = False
        self.reference = None
        self.open_crashed = False
        self.injected_batches = {}
        return out

    def _prefix_problem(self, key: str, bs) -> str | None:
        """Not after corruption, ever: the v2 CRC does not cover the base offset or the length
        (§1.5), so a damaged batch can pass recovery and stay readable for good."""
        if tainted(key, self.ever_corrupted):
            return None
        seen, pairs = self.seen.get(key, set()), self.pairs.get(key, set())
        for i, (base, last, d) in enumerate(bs):
            if d not in seen:
                return f"{key}: batch {base}..{last} after recovery was never appended (phantom or corrupt)"
            # last offsets increase (Kafka's own rule, §4.14): a follower may append a batch whose base
            # lies below the previous batch's last offset (KAFKA-3919's overlapping batches)
            if i and last <= bs[i - 1][1]:
                return f"{key}: batch {base}..{last} follows {bs[i - 1][0]}..{bs[i - 1][1]} (offsets go back)"
            if i and (bs[i - 1][2], d) not in pairs:
                return f"{key}: batches {bs[i - 1][0]}..{bs[i - 1][1]} and {base}..{last} were never neighbours (a hole or a mix of versions)"
        return None


def _recovery_skipped(before: dict[str, bytes], after: dict[str, bytes], clean: set[str]) -> str | None:
    """A crash inside a load that left a data dir's clean-shutdown marker over index files the load
    had already changed (the active segment's, resized to full size): the next start skips recovery
    and takes their zero tail as entries — KAFKA-10471 (§6.2, §7.6).  ``clean``: the partitions the
    uninterrupted load found clean.  None if no such partition."""
    for partition in sorted(clean):
        marker = f"{partition.split('/')[0]}/{MARKER}"
        if marker not in after:
            continue
        prefix = partition + "/"
        changed = sorted(
            p
            for p in set(before) | set(after)
            if p.startswith(prefix) and is_index_file(p) and before.get(p) != after.get(p)
        )
        if changed:
            return (
                f"the crash inside the load left {marker} over {changed[0]}, which the "
                "load had changed: the next start skips recovery and trusts it (KAFKA-10471)"
            )
    return None


def _partitions_that_took(model_target, *branches: str) -> set[str]:
    """``d<N>/<topic>-<partition>`` of every partition whose last load took one of ``branches``."""
    return {f"{o.data_dir}/{o.name}" for o in model_target.manager.outcomes if set(branches) & set(o.branches)}


def epochs_ahead_of_log_start(image: dict[str, bytes]) -> set[str]:
    """Partitions whose leader-epoch checkpoint begins above the log start offset checkpointed for
    them.  delete_records and retention write the epoch cache's truncateFromStart at once, the
    log start offset only at the next checkpoint; after a crash in between Kafka's load truncates
    that entry from the end against the older log start and writes the cache out, and recovery
    then re-assigns an epoch only above the latest one cached — so a second load, from what the
    first wrote, rebuilds a different cache ("the earliest leader epoch may not be flushed during
    a hard failure", LogLoader).  Kafka's recovery is not idempotent there: idempotent-recovery
    leaves their epoch caches out (found by the time-to-catch control, stop 18)."""
    out = set()
    for path, data in image.items():
        if not path.endswith("/leader-epoch-checkpoint"):
            continue
        partition_dir = path.rsplit("/", 1)[0]
        data_dir, name = partition_dir.rsplit("/", 1)
        topic, _, number = name.rpartition("-")
        try:
            epochs = parse_epochs(data, path)
            raw = image.get(f"{data_dir}/log-start-offset-checkpoint")
            starts = parse_offsets(raw, data_dir) if raw else {}  # none written yet: every start is 0
        except Exception:  # noqa: BLE001 - an unreadable checkpoint: Kafka's load decides, not this
            continue
        if epochs and epochs[0][1] > starts.get((topic, int(number) if number.isdigit() else -1), 0):
            out.add(partition_dir)
    return out


def _without_epochs(state: dict) -> dict:
    return {k: v for k, v in state.items() if k != "epochs"}


def run(scenario: sc.Scenario, targets=("model", "impl"), backend: str = "sim", stop_at_first: bool = True) -> Verdict:
    session = Session(scenario, targets, backend)
    try:
        for step in scenario.steps:
            if session.step(step) and stop_at_first:
                break
            if session.broken:
                break
    finally:
        session.close()
    verdict = session.verdict
    verdict.scenario = scenario
    return verdict


CHECKPOINT_NAMES = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "leader-epoch-checkpoint")
MARKER = ".kafka_cleanshutdown"


def protocol_problem(target, step, ops) -> tuple[str, str] | None:
    """§6.5 and §6.3 on the operations one step performed (see :mod:`conformance.tracing`)."""
    base = lambda p: p.rsplit("/", 1)[-1]  # noqa: E731
    parent = lambda p: p.rsplit("/", 1)[0]  # noqa: E731
    for i, op in enumerate(ops):
        if op.name in ("write", "truncate") and base(op.path) in CHECKPOINT_NAMES:
            return (
                DURABLE,
                f"{base(op.path)} in {parent(op.path)} rewritten in place during {_describe(step)}: a crash mid-write would tear it (§6.5: temp file, fsync, rename)",
            )
        if op.name == "rename" and base(op.target) in CHECKPOINT_NAMES:
            last = next((o for o in reversed(ops[:i]) if o.path == op.path), None)
            if last is None or last.name != "fsync":
                return DURABLE, f"{op.path} renamed over {base(op.target)} without an fsync first (§6.5 step 2)"
            if not any(o.name == "fsync_dir" and o.path == parent(op.target) for o in ops[i + 1 :]):
                return DURABLE, f"rename to {op.target} not followed by an fsync of {parent(op.target)} (§6.5 step 4)"
    if isinstance(step, sc.Shutdown):
        for i, op in enumerate(ops):
            if base(op.path) == MARKER and op.name in ("create", "write"):
                d = parent(op.path)
                needed = [f"{d}/{n}" for n in CHECKPOINT_NAMES[:2]]
                done = {o.target for o in ops[:i] if o.name == "rename"}
                missing = [n for n in needed if n not in done]
                if missing:
                    return (
                        CLEAN_RESTART,
                        f"clean-shutdown marker of {d} written before {base(missing[0])} (§6.3: marker last)",
                    )
                late = [
                    o
                    for o in ops[i + 1 :]
                    if o.path.startswith(d + "/") and base(o.path) != MARKER and o.name != "unlink"
                ]
                if late:
                    return (
                        CLEAN_RESTART,
                        f"clean-shutdown marker of {d} written before {late[0].name} of {late[0].path} (§6.3: marker last)",
                    )
    return None


TOTALS: collections.Counter = collections.Counter()  # every check made in this process, by property


def _count(verdict: Verdict, prop: str) -> None:
    verdict.checked[prop] = verdict.checked.get(prop, 0) + 1
    TOTALS[prop] += 1


def _check(
    verdict: Verdict,
    made,
    step,
    index: int,
    results: dict,
    shutdown_at,
    faulted: bool = False,
    unloadable=(),
    corrupted=(),
    shutdown_dirs=None,
) -> None:
    # an open that a running broker refused loaded nothing: its lazily created indexes are as
    # unsettled as before it (found by the time-to-catch control, stop 26: corpora/found/conforms-4cc52035c1)
    refused = isinstance(step, sc.Open) and any((r or {}).get("error") == "AlreadyRunning" for r in results.values())
    settled = isinstance(step, sc.Shutdown | sc.Open) and not refused
    for b in made[1:]:
        a = made[0]
        names = [a.name, b.name]
        _count(verdict, CONFORMS)
        ra, rb = _comparable(results[a.name]), _comparable(results[b.name])
        if ra != rb:
            verdict.violations.append(
                Violation(
                    CONFORMS, index, f"{_describe(step)}: {names[0]} vs {names[1]} result {_first_difference(ra, rb)}"
                )
            )
            return
        sa, sb = a.state(), b.state()
        if sa != sb:
            verdict.violations.append(
                Violation(CONFORMS, index, f"after {_describe(step)}: log state {_first_difference(sa, sb)}")
            )
            return
        fa = _comparable_files(a.files(settled), settled, unloadable, corrupted, faulted)
        fb = _comparable_files(b.files(settled), settled, unloadable, corrupted, faulted)
        if fa != fb:
            diff = sorted(set(fa) ^ set(fb)) or sorted(p for p in fa if fa[p] != fb[p])
            p = diff[0]
            detail = (
                f"only in {names[0] if p in fa else names[1]}"
                if p not in fa or p not in fb
                else f"{len(fa[p])} bytes vs {len(fb[p])} bytes, first difference at byte {_first_byte_diff(fa[p], fb[p])}"
            )
            verdict.violations.append(Violation(CONFORMS, index, f"after {_describe(step)}: file {p}: {detail}"))
            return
    for t in made:
        if faulted and isinstance(t, ModelTarget | KafkaTarget):
            # the model holds Kafka's index files, and Kafka its own, which after a fault may be
            # padding or junk it trusts (KIP-263): on Kafka 4.4.0 a time entry past the end of a
            # log a crash emptied (corpora/crash/time-entry-past-a-log-a-crash-emptied.json)
            continue
        _count(verdict, INDEX_AGREES)
        for key, (offsets, times, log, active, end) in sorted(t.index_entries().items()):
            if tainted(key.rsplit("/", 1)[0], corrupted):
                continue  # a corrupted partition's unrecovered indexes stay as Kafka trusts them (KIP-263)
            problem = index_problem(offsets, times, log, active, int(key.rsplit("/", 1)[-1]), end)
            if problem:
                verdict.violations.append(Violation(INDEX_AGREES, index, f"{t.name} segment {key}: {problem}"))
                return
    if isinstance(step, sc.Shutdown):
        for t in made:
            _count(verdict, CLEAN_RESTART)
            for path, data in sorted(t.files().items()):
                if path.endswith(INDEX_SUFFIXES) and not tainted(path.rsplit("/", 1)[0], corrupted):
                    problem = trimmed_index_problem(path, data, zero_slots=not faulted)
                    if problem:
                        verdict.violations.append(
                            Violation(CLEAN_RESTART, index, f"{t.name} after shutdown: {problem}")
                        )
                        return
    if isinstance(step, sc.Open) and shutdown_at is not None:
        shutdown_dirs = shutdown_dirs or {}
        for t in made:
            _count(verdict, CLEAN_RESTART)
            unclean = {d for d, clean in shutdown_dirs.items() if not clean}  # e.g. a dir with an unloadable partition
            recovered = [
                (load["partition"], load["recovered"])
                for load in t.last_load
                if load["recovered"] and load.get("dir") not in unclean
            ]
            if recovered:
                verdict.violations.append(
                    Violation(CLEAN_RESTART, index, f"{t.name} recovered {recovered} after a graceful shutdown")
                )
                return
            stats = getattr(t, "load_stats", None)
            # the cost is Kafka's for intact files: a corrupted index's last entry points anywhere, and
            # impl proves such an index against the log before it trusts it (docs/crash-recovery.md;
            # corpora/crash/clean-load-reads-more-behind-a-corrupted-index.json)
            if stats is not None and not unclean and not corrupted:
                verdict.load_stats.append(stats)
                if stats["log_bytes_read"] > stats["tail_bytes"]:
                    verdict.violations.append(
                        Violation(
                            CLEAN_RESTART,
                            index,
                            f"{t.name} read {stats['log_bytes_read']} log bytes while loading after a graceful shutdown; "
                            f"only the {stats['tail_bytes']} bytes after the active segments' last index entries are needed",
                        )
                    )
                    return
                if stats["inactive_indexes_opened"]:
                    verdict.violations.append(
                        Violation(
                            CLEAN_RESTART,
                            index,
                            f"{t.name} opened {', '.join(stats['inactive_indexes_opened'])} while loading after a "
                            "graceful shutdown; an inactive segment's index waits for first use (KAFKA-7283)",
                        )
                    )
                    return


def tainted(partition: str, corrupted) -> bool:
    """Whether a ``corrupt`` step damaged this partition (``d0/t-0``): one of its files, or a file
    of its data dir (``d0``: a checkpoint, whose damage reaches every partition of the dir)."""
    return partition in corrupted or partition.split("/", 1)[0] in corrupted


def _comparable(result: dict) -> dict:
    if "loaded" in result:  # error texts name files the same way but are worded per implementation
        return {"loaded": [{**x, "error": bool(x["error"])} for x in result["loaded"]]}
    return result


def _comparable_files(
    files: dict[str, bytes], settled: bool, unloadable=(), corrupted=(), faulted: bool = False
) -> dict[str, bytes]:
    """Index files are compared only when settled (right after shutdown or open): in between, an
    index exists only once materialised and its file keeps preallocated slots.  The files of a
    partition that failed to load are not compared: Kafka leaves them half-recovered (the loader
    writes as it goes) and takes the dir offline; the model keeps them as found.  Nor are the index
    files of a partition a ``corrupt`` step damaged: Kafka keeps an unrecovered index as found,
    stale slots past its entries included, where impl zeroes what a truncation drops (impl.index)
    — the answers through it are compared, the bytes are not.  After a fault, an index file made
    only of zero slots is compared as empty (:func:`_without_zero_slots`)."""
    if unloadable:
        files = {p: d for p, d in files.items() if not (p.count("/") >= 2 and p.split("/")[1] in unloadable)}
    if corrupted:
        files = {p: d for p, d in files.items() if not (is_index_file(p) and tainted(p.rsplit("/", 1)[0], corrupted))}
    if faulted:
        files = {p: _without_zero_slots(p, d) if is_index_file(p) else d for p, d in files.items()}
    if settled:
        return {p: d for p, d in files.items() if not (is_index_file(p) and p.endswith(".deleted"))}
    return {p: d for p, d in files.items() if not is_index_file(p)}


def _without_zero_slots(path: str, data: bytes) -> bytes:
    """An index file of two or more slots, all zero, read as empty: no index holds two all-zero
    entries (offsets and timestamps increase), so this is padding — the zero-filled ``.index`` of
    §5.9 caveat 3, which Kafka keeps as full.  (impl trimmed it until stop 28; it now holds Kafka's
    count too, and this allowance stays until a campaign without it shows it unneeded.)  One zero
    slot can be a real entry (the base offset at position 0) and is compared, as is everything else."""
    size = 12 if ".timeindex" in path else 8
    return b"" if len(data) >= 2 * size and len(data) % size == 0 and not any(data) else data


def _first_byte_diff(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
