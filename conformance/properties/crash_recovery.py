"""The crash properties, judged at the first ``open`` after a fault step (``crash``, ``fail_io``,
``corrupt``) or a legacy segment written onto the disk:

* ``durable`` — every batch below the recovery point when the power went, in a partition whose
  directory entry was durable, is there;
* ``prefix`` — every batch was appended at some time, offsets increase, and each pair of
  neighbours were neighbours at some time;
* ``idempotent-recovery`` — after a crash during an ``open``, the log and the producer state equal
  the ones the uninterrupted load gave, and no clean-shutdown marker is left over index files the load had
  changed (KAFKA-10471);
* ``isolated`` — a load error names a file of its own partition; an I/O error while loading fails
  one partition, never more.

:class:`RecoveryTracker` keeps, from the model, what these compare a recovered log with.
"""

from __future__ import annotations

import collections
import errno
import os

import attrs

from conformance import kafkas_own
from conformance import scenario as sc
from conformance.index_files import is_index_file
from conformance.properties import DURABLE, IDEMPOTENT_RECOVERY, ISOLATED, PREFIX, Observation, anywhere, tainted
from conformance.properties.storage_protocol import MARKER
from conformance.targets import without_producers
from conformance.verdicts import first_difference
from model.checkpoints import parse_epochs, parse_offsets
from model.file_records import iterate_file
from model.log_manager import (
    ALL_DELETED,
    CLEAN_LOAD,
    EPOCHS_PAST_END,
    INVALID_SWAP_REMOVED,
    LATER_DELETED,
    SPLIT_BELOW_BASE,
)
from model.producer_state import expired


@attrs.define
class Reference:
    """What the uninterrupted load gave (the model ran the load a crash interrupted): the log
    idempotent-recovery compares the next load with, and where Kafka's own rows exempt it."""

    partitions: dict  # the model's state after the load, per partition
    clean: set[str]  # partitions the load found clean (CLEAN_LOAD)
    took: dict[str, set[str]]  # loader branch → partitions whose load took it
    epochs_ahead: set[str]  # epochs_ahead_of_log_start of the image before the load
    injected: set[str] = attrs.Factory(set)  # partitions a legacy segment was written to after it
    set_aside: set[str] = attrs.Factory(set)  # partition dirs a rename_dir step took away after it
    legacy_batches: set[str] = attrs.Factory(set)  # partitions whose image holds a legacy batch

    @classmethod
    def of(cls, model_target) -> Reference:
        took = {
            b: partitions_that_took(model_target, b)
            for b in (EPOCHS_PAST_END, ALL_DELETED, LATER_DELETED, SPLIT_BELOW_BASE, INVALID_SWAP_REMOVED)
        }
        return cls(
            model_target.state()["partitions"],
            partitions_that_took(model_target, CLEAN_LOAD),
            took,
            epochs_ahead_of_log_start(model_target.image),
            legacy_batches=holding_legacy_batches(model_target.image),
        )

    def not_compared(self, legacy: set[str], corrupted) -> set[str]:
        """Partitions whose log is not compared: the injected ones (not there at the reference
        load), and Kafka's own rows."""
        skip = self.injected | self.set_aside
        skip |= kafkas_own.exempt(
            "recovery-truncates-what-a-clean-load-trusts", {k for k in self.clean if tainted(k, corrupted)}
        )
        skip |= kafkas_own.exempt("recovery-splits-what-a-clean-load-keeps", self.clean & legacy)
        skip |= kafkas_own.exempt("recovery-cut-deletes-later-segments", self.took[LATER_DELETED])
        skip |= kafkas_own.exempt("split-beside-its-original", self.took[SPLIT_BELOW_BASE])
        skip |= kafkas_own.exempt("abandoned-cleaning-completed-after-a-crash", self.took[INVALID_SWAP_REMOVED])
        return skip

    def epochs_not_compared(self) -> set[str]:
        return (
            kafkas_own.exempt("epochs-ahead-of-log-start", self.epochs_ahead)
            | kafkas_own.exempt("epochs-past-end-removed", self.took[EPOCHS_PAST_END])
            | kafkas_own.exempt("epoch-moved-to-the-log-end", epoch_at_the_log_end(self.partitions))
            | kafkas_own.exempt("all-deleted-clears-epochs", self.took[ALL_DELETED])
            | kafkas_own.exempt("clean-load-keeps-epochs", self.clean)
            | kafkas_own.exempt("legacy-append-cleared-epochs", self.legacy_batches)
        )


def judge(obs: Observation):
    """After an ``open``: the crash properties, if a fault came before it (then the tracker resets)."""
    tracker = obs.tracker
    if not obs.step.loads or not tracker.faulted:
        return
    yield from tracker.judge(obs.targets)


class RecoveryTracker:
    """What the crash properties compare a recovered log with.

    ``seen`` and ``pairs``: per partition, every batch ever readable and every pair of neighbours
    ever seen; ``required``: per partition, the batches that must survive a power loss now — below
    the recovery point, at or above the log start offset, in a partition whose directory entry a
    data-dir fsync (a checkpoint write, a shutdown, a load from a durable image) has made durable."""

    def __init__(self):
        self.seen: dict[str, set] = collections.defaultdict(set)
        self.pairs: dict[str, set] = collections.defaultdict(set)
        self.required: dict[str, list] = {}
        self.anchored: set[str] = set()
        self.faulted = False
        self.ever_faulted = False
        self.ever_corrupted: set[str] = set()
        self.reference: Reference | None = None
        self.open_crashed = False
        self.injected_batches: dict[str, list] = {}  # must all be there at the next completed open
        # a promotion a crash interrupted (replaceCurrentWithFutureLog's two renames): the current
        # log's key → the promoted log's key and what it must hold if the promotion took effect —
        # the current log's required batches the future log also had (a future log that lags lacks
        # the rest by design: the promotion replaces the current log's data)
        self.promotions: dict[str, tuple[str, list]] = {}
        self.legacy: set[str] = set()  # partitions an inject_legacy_segment step created
        self.last: tuple[dict, dict] = ({}, {})  # batches and segment bases at the last observe
        # the target whose own journal the last crash image was cut from (None: impl's on the
        # simulated backend): what that target's writes did not make durable, no target can have
        self.journal_of: str | None = None

    def injected(self, key: str, batches: list) -> None:
        """A legacy segment written onto the disk (``inject_legacy_segment``): its messages are
        durable data, so the next completed open must have every one (a split loses nothing)."""
        self.seen[key].update(d for _, _, d in batches)
        self.pairs[key].update((a[2], b[2]) for a, b in zip(batches, batches[1:], strict=False))
        self.injected_batches[key] = list(batches)
        self.legacy.add(key)
        self.faulted = True
        if self.reference is not None:  # not there when the interrupted load ran: not compared
            self.reference.injected.add(key)

    def observe(self, model, step, crashed: bool = False, result: dict | None = None) -> None:
        batches = model.batches()
        state = model.state()["partitions"]
        for key, bs in batches.items():
            self.seen[key].update(d for _, _, d in bs)
            self.pairs[key].update((a[2], b[2]) for a, b in zip(bs, bs[1:], strict=False))
        groups = _installed_groups(model, step, result) if isinstance(step, sc.Clean) else None
        if groups:
            self._cleaning_neighbours(model, step, groups, batches)
        self.last = (batches, {k: [seg[0] for seg in v["segments"]] for k, v in state.items()})
        if not crashed:
            # a partition gone from the log (deleted: its directory renamed away) loses its anchor; a
            # new directory of the same name is a new entry, durable only at the next data-dir fsync
            self.anchored = (self.anchored & set(batches)) | _anchored_by(model, step, result, batches)
        required = {}
        for key, bs in batches.items():
            if key not in self.anchored:
                continue
            rp = state[key]["log_end_offset"] if step is not None and step.shuts_down else state[key]["recovery_point"]
            ls = state[key]["log_start_offset"]
            required[key] = [b for b in bs if b[1] < rp and b[0] >= ls]
        moved = _promoted(model, step, self.required) if crashed else None
        if crashed:  # the interrupted step may or may not have happened: what both states require
            required = {
                k: [b for b in v if b in set(self.required.get(k, ()))]
                for k, v in required.items()
                if k in self.required
            }
        if moved is not None:  # a promotion cut short: the current log's data, unless it took effect
            old, new = moved
            kept = set(batches.get(new, ()))
            required.pop(new, None)
            required[old] = list(self.required[old])
            self.promotions[old] = (new, [b for b in self.required[old] if b in kept])
        self.required = required

    def _cleaning_neighbours(self, model, step, groups, after) -> None:
        """A cleaning round installs its groups one by one (§5.9): a crash between two leaves the
        first ones cleaned and the rest as they were, so the neighbours of every such mix are
        neighbours the log has had.

        And a crash inside one group's swap, once its ``.swap`` files are durable, leaves a mix of
        the group itself: the next load deletes only the originals whose base lies in [swap base,
        swap readNextOffset) and renames the ``.swap`` over the original of the same base (§5.2
        steps 3–4, §5.9 caveat 1).  When cleaning removed the group's last batches, the cleaned
        segment ends early and the originals above its end come back beside it
        (corpora/found/prefix-ba8ffe62e6)."""
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

    def load_interrupted(self, model) -> None:
        """A fault inside a load whose uninterrupted run (the model's, just done) cut a segment and
        deleted the segments after it (§5.6 step 1b, LATER_DELETED).  The deletion goes lowest
        first and is neither atomic nor redone: a load stopped in it leaves the later segments it
        had not reached, and the next load, finding nothing left to cut, keeps them — so the last
        batch kept before the cut may neighbour the first batch of any later segment (Kafka's own
        ``deletion-after-a-recovery-cut-interrupted``)."""
        if not kafkas_own.applies("deletion-after-a-recovery-cut-interrupted"):
            return
        before_batches, before_bases = self.last
        after, state = model.batches(), model.state()["partitions"]
        for key in partitions_that_took(model, LATER_DELETED):
            kept, segments = after.get(key, []), state.get(key, {}).get("segments", [])
            if not kept or not segments:
                continue
            cut = segments[-1][0]  # the segment the recovery cut is the log's last after the load
            for base in (b for b in before_bases.get(key, []) if b > cut):
                first = next((b for b in before_batches.get(key, []) if b[0] >= base), None)
                if first is not None:
                    self.pairs[key].add((kept[-1][2], first[2]))

    def struck(self, outcome, model) -> None:
        """What a fault step did (:class:`conformance.faults.FaultOutcome`), told before the targets
        restart from its image: the model, if it still runs, is as the interrupted step left it."""
        if outcome.kind == "crashed":
            during = outcome.during
            loading = during is not None and during.loads
            if model is not None and model.running:
                if loading:
                    self.load_interrupted(model)
                self.observe(model, during, crashed=True, result=outcome.model_result)
            # idempotent-recovery is judged only on a settled image (nothing pending before the
            # open): otherwise the crash may also have lost what preceded the load
            # (corpora/crash/idempotent-recovery-after-a-crash-inside-the-loader.json)
            self.crashed(outcome.reference if outcome.settled else None, loading)
            self.journal_of = outcome.journal_of
        elif outcome.kind == "corrupted":
            self.corrupted(outcome.path)
        elif outcome.kind == "injected":
            self.injected(*outcome.injected)
        elif outcome.kind == "renamed" and outcome.path:  # a partition dir set aside: no longer served
            self._set_aside({outcome.path})

    def unassigned(self, topic: str, partition: int) -> None:
        """A partition the metadata image no longer assigns here: the next load sets its current
        and future logs aside -stray, no longer served, as a ``rename_dir`` to ``-stray`` does now."""
        name = f"{topic}-{partition}"
        held = {*self.required, *self.injected_batches, *self.anchored}
        self._set_aside({k for k in held | set(self.reference.partitions if self.reference else ()) if _dir_of(k, name)})

    def _set_aside(self, keys: set[str]) -> None:
        """Partition dirs no longer served: nothing of theirs is owed, and a load a crash
        interrupted, which served them, is not compared with the next one there."""
        for key in keys:
            self.required.pop(key, None)
            self.injected_batches.pop(key, None)
            self.anchored.discard(key)
        if self.reference is not None:
            self.reference.set_aside |= keys

    def crashed(self, reference: Reference | None, during_open: bool) -> None:
        self.faulted = self.ever_faulted = True
        if during_open:
            self.open_crashed = True
            if self.reference is None:
                self.reference = reference

    def corrupted(self, path: str) -> None:
        self.faulted = self.ever_faulted = True
        directory = path.rsplit("/", 1)[0]
        self.ever_corrupted.add(directory)
        if "/" in directory:  # a partition's file, not a data dir's checkpoint
            self.ever_corrupted.add(anywhere(directory))
        self.reference = None

    def judge(self, targets):
        """The crash properties on every running target; then nothing is pending any more."""
        running = sorted((t for t in targets if t.running), key=lambda t: t.name != self.journal_of)
        model = next((t for t in running if t.name == "model"), None)
        all_deleted = partitions_that_took(model, ALL_DELETED) if model is not None else set()
        try:
            for t in targets:  # a failed startup too (Kafka's policy): its failed loads are judged
                yield DURABLE, self._unavailable(t)
            for t in running:
                yield from _isolated(t)
                yield DURABLE, self._missing(t, all_deleted)
                yield PREFIX, self._not_a_prefix(t)
                if self.reference is not None and self.open_crashed:
                    yield IDEMPOTENT_RECOVERY, self._not_idempotent(t)
        finally:
            self.faulted = False
            self.journal_of = None
            self.reference = None
            self.open_crashed = False
            self.injected_batches = {}
            self.promotions = {}

    def _missing(self, t, all_deleted: set[str]) -> str | None:
        """durable: the first required batch the recovered log lacks.  Not judged in a partition a
        corrupt step damaged (data may be missing, never wrong) or that failed to load
        (:meth:`_unavailable`)."""
        all_batches = t.batches()
        failed = _failed_loads(t)
        all_deleted = kafkas_own.exempt("log-end-below-log-start", all_deleted)
        required = dict(self.required)
        for key, need in self.injected_batches.items():
            required[key] = [*required.get(key, ()), *need]
        for key, need in sorted(required.items()):
            if tainted(key, self.ever_corrupted) or key.split("/")[-1] in failed or key in all_deleted:
                continue
            promoted = self.promotions.get(key)
            if promoted is not None and key not in all_batches and promoted[0] in all_batches:
                key, need = promoted  # the promotion took effect: the future log's data is the log's
            have = set(all_batches.get(key, ()))
            missing = [b for b in need if b not in have]
            if missing:
                b = missing[0]
                on_disk = b in self.injected_batches.get(key, ())
                why = "on disk when the broker started" if on_disk else "flushed before the crash"
                cut = f" (the crash image was cut from {self.journal_of}'s own journal)" if self.journal_of else ""
                return f"{t.name}: offsets {b[0]}..{b[1]} of {key}, {why}, are missing after recovery{cut}"
        return None

    def _unavailable(self, t) -> str | None:
        """durable: a partition holding batches flushed before the crash failed to load on a record
        it could not read — the broker cannot serve them, and under Kafka's policy it does not
        start.  Not for a partition a corrupt step damaged, nor one an injected I/O error failed."""
        failed = _failed_loads(t)
        for key, need in sorted(self.required.items()):
            error = failed.get(key.split("/")[-1])
            if need and error and _unreadable(error) and not tainted(key, self.ever_corrupted):
                b = need[0]
                return f"{t.name}: offsets {b[0]}..{b[1]} of {key}, flushed before the crash, are unavailable: its load failed ({error})"
        return None

    def _not_a_prefix(self, t) -> str | None:
        starts = {k: p["log_start_offset"] for k, p in (t.state().get("partitions") or {}).items()}
        for key, bs in sorted(t.batches().items()):
            problem = self._prefix_problem(key, bs, starts.get(key, 0))
            if problem:
                return f"{t.name}: {problem}"
        return None

    def _prefix_problem(self, key: str, bs, log_start: int = 0) -> str | None:
        """Not after corruption, ever: the v2 CRC does not cover the base offset or the length
        (§1.5), so a damaged batch can pass recovery and stay readable for good.  Nor a hole
        wholly below the log start offset: those offsets are deleted, and Kafka raises the recovery
        point to a new log start without a flush (``updateLogStartOffset``), so a crash may take
        the unflushed batches below it."""
        if tainted(key, self.ever_corrupted):
            return None
        seen, pairs = self.seen.get(key, set()), self.pairs.get(key, set())
        for i, (base, last, d) in enumerate(bs):
            if d not in seen:
                return f"{key}: batch {base}..{last} after recovery was never appended (phantom or corrupt)"
            # last offsets increase (§4.14): a follower may append a batch whose base lies below the
            # previous batch's last offset (KAFKA-3919's overlapping batches)
            if i and last <= bs[i - 1][1]:
                return f"{key}: batch {base}..{last} follows {bs[i - 1][0]}..{bs[i - 1][1]} (offsets go back)"
            below_start = base <= log_start and bs[i - 1][1] < log_start if i else False
            if i and not below_start and (bs[i - 1][2], d) not in pairs:
                return f"{key}: batches {bs[i - 1][0]}..{bs[i - 1][1]} and {base}..{last} were never neighbours (a hole or a mix of versions)"
        return None

    def _not_idempotent(self, t) -> str | None:
        """idempotent-recovery: the log after a crash during recovery and the next load equals the
        uninterrupted load's, but for the partitions and epochs :class:`Reference` exempts."""
        failed = {load["partition"] for load in t.last_load if load["error"]}
        skip = self.reference.not_compared(self.legacy, self.ever_corrupted)
        got = {k: v for k, v in t.state()["partitions"].items() if k not in skip}
        want = {k: v for k, v in self.reference.partitions.items() if k.split("/")[-1] not in failed and k not in skip}
        if not t.compares_producer_state:
            want = without_producers(want)
        got, want = (_unexpired(d, t.clock.now) for d in (got, want))
        if kafkas_own.applies("producer-below-the-log-start-forgotten"):
            got, want = (_without_snapshot_only_producer_state(d) for d in (got, want))
        ahead = self.reference.epochs_not_compared()
        got, want = ({k: _without_epochs(v) if k in ahead else v for k, v in d.items()} for d in (got, want))
        if got == want:
            return None
        diff = first_difference(want, got)
        return f"{t.name}: after a crash during recovery, {diff} (uninterrupted recovery first, then this one)"


IO_ERRORS = (os.strerror(errno.EIO), os.strerror(errno.ENOSPC))  # what a fail_io step injects


def _failed_loads(t) -> dict[str, str]:
    """Partition name → the error of its load, for each partition the target's last open failed."""
    return {load["partition"]: load["error"] for load in t.last_load if load["error"]}


def _unreadable(error: str) -> bool:
    """A load that failed on a record it could not read (what recovery is there to cut), not on an
    injected I/O error nor on a limit of the configuration (a full index is Kafka's own)."""
    return any(k in error for k in ("CorruptRecordException", "InvalidRecordException")) and not any(
        m in error for m in (*IO_ERRORS, "offline", "halts")
    )


def _isolated(t):
    """isolated: a load error names a file of its own partition."""
    for load in t.last_load:
        error = load["error"]
        if error and load["partition"] and load["partition"] not in error:
            yield ISOLATED, f"{t.name}: the load error of {load['partition']} names no file of it: {error}"


def _promoted(model, step, required: dict) -> tuple[str, str] | None:
    """For a promotion (replace_current_with_future) a crash interrupted: the key whose batches
    were required before it and the promoted log's key, or None."""
    if not isinstance(step, sc.ReplaceCurrentWithFuture) or model is None or model.manager is None:
        return None
    new_dir = model.manager.current_dir_of(step.topic, step.partition)
    name = f"{step.topic}-{step.partition}"
    old = next((k for k in required if k.endswith(f"/{name}") and k != f"{new_dir}/{name}"), None)
    return None if new_dir is None or old is None else (old, f"{new_dir}/{name}")


def _dir_of(key: str, name: str) -> bool:
    """Whether the partition directory ``key`` (``d<n>/<dir>``) holds the partition ``name``'s
    current log or its future log (``<name>.<id>-future``)."""
    leaf = key.rsplit("/", 1)[-1]
    return leaf == name or (leaf.startswith(name + ".") and leaf.endswith("-future"))


def _anchored_by(model, step, result, batches) -> set[str]:
    """Partitions whose directory entry ``step`` made durable: a checkpoint, a shutdown or an open
    fsyncs every data dir; a truncation writes its dir's recovery-point checkpoint (which fsyncs the
    dir) only if it removed something (§4.7, LogManager.truncateTo)."""
    if step.anchors_data_dirs:
        # a refused step (an open of a running broker, a checkpoint of a stopped one) fsyncs nothing
        return set() if "error" in (result or {}) else set(batches)
    if isinstance(step, sc.ReplaceCurrentWithFuture) and "renamed" in (result or {}):
        # the promoted log's directory entry: renamed, then its data dir fsynced
        d = model.manager.current_dir_of(step.topic, step.partition)
        return {f"{d}/{step.topic}-{step.partition}"}
    truncated = isinstance(step, sc.TruncateFully) or (
        isinstance(step, sc.Truncate) and (result or {}).get("truncated")
    )
    if truncated and (step.topic, step.partition) in model.manager.partitions:
        d = f"{model.manager.dir_of(step.topic, step.partition)}/"
        return {k for k in batches if k.startswith(d)}
    return set()


def io_error_problem(result: dict) -> str | None:
    """isolated: an I/O error while loading fails one partition (or one data dir), never more.
    (Elsewhere it must reach the caller as a declared error, KafkaStorageException: anything else
    is an unexpected exception, reported by the caller.)"""
    failed = [x for x in result.get("loaded", ()) if x["error"] and any(m in x["error"] for m in IO_ERRORS)]
    # the rest of a dir the failure handler took offline failed with it (Kafka's policy, §6.6)
    own = [x for x in failed if f"log dir {x['dir']} offline" not in x["error"]]
    if len(own) > 1 or len({x["dir"] for x in failed}) > 1:
        return f"one I/O error failed {len(failed)} partitions: {'; '.join(x['error'] for x in failed)}"
    return None


# The JDK's checked exceptions for a failed file-system call (java.io, java.nio.file,
# java.nio.channels): a Kafka method declares them (``throws IOException``), so every caller must
# handle them — the broker's callers do, with the handler that takes the log dir offline (§6.6)
CHECKED_IO_EXCEPTIONS = frozenset({
    "IOException", "FileSystemException", "NoSuchFileException", "FileAlreadyExistsException",
    "AccessDeniedException", "DirectoryNotEmptyException", "NotDirectoryException",
    "AtomicMoveNotSupportedException", "FileSystemLoopException", "ClosedChannelException",
    "SyncFailedException", "EOFException", "FileNotFoundException",
})  # fmt: skip


def undeclared_io_error(result: dict, call: str, error: str) -> str | None:
    """isolated: an I/O error inside a step that fails it reaches the caller as Kafka's declared
    KafkaStorageException (its log dir taken offline, §6.6) or as a checked IOException, which the
    method declares and the broker's callers handle — never as an unchecked exception, which gets
    past every IOException handler and leaves the dir online over a file the failed call left
    unknown.  A step that swallowed the error and completed is not judged here (what it left is
    judged at the next load)."""
    name = result.get("error")
    if name is None or name == "KafkaStorageException" or name in CHECKED_IO_EXCEPTIONS:
        return None
    return f"{call} failed with {error} and the step raised {name}, not KafkaStorageException"


def dir_left_online(result: dict, call: str, error: str, data_dir: str, offline: tuple[str, ...] | None) -> str | None:
    """isolated: an I/O error in a data dir that Kafka did not get past by making the call again
    (a fallback move, a retry) takes that dir offline (LogDirFailureChannel, §6.6, KIP-112),
    whatever the step then answered — a checkpoint that swallows the KafkaStorageException
    included — so its partitions move to other replicas instead of being written to a failing
    disk.  A checked IOException leaves that to the broker's caller, whose handler does it.
    ``offline``: the dirs Kafka queued offline after the step (None: not known)."""
    if offline is None or data_dir in offline or result.get("error") in CHECKED_IO_EXCEPTIONS:
        return None
    outcome = f"the step raised {result['error']}" if result.get("error") else "the step completed"
    return f"{call} failed with {error}, {outcome}, and log dir {data_dir} stayed online"


def _installed_groups(model, step: sc.Clean, result: dict | None) -> list[list[int]]:
    """The groups a cleaning round installed: its result's, or, when a later group failed the
    round (an error result), the ones installed before it — they stay cleaned, §5.9."""
    if (result or {}).get("groups"):
        return result["groups"]
    partition = model.manager.partitions.get((step.topic, step.partition)) if model.manager else None
    return partition.log.installed_groups if partition is not None else []


def recovery_skipped(before: dict[str, bytes], after: dict[str, bytes], clean: set[str]) -> str | None:
    """idempotent-recovery: a crash inside a load that left a data dir's clean-shutdown marker over
    index files the load had already changed (the active segment's, resized to full size): the next
    start skips recovery and takes their zero tail as entries — KAFKA-10471 (§6.2, §7.6).
    ``clean``: the partitions the uninterrupted load found clean.  None if no such partition."""
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


def partitions_that_took(model_target, *branches: str) -> set[str]:
    """``d<N>/<topic>-<partition>`` of every partition whose last load took one of ``branches``."""
    return {f"{o.data_dir}/{o.name}" for o in model_target.manager.outcomes if set(branches) & set(o.branches)}


def holding_legacy_batches(image: dict[str, bytes]) -> set[str]:
    """Partitions a ``.log`` of which holds a magic 0 or 1 batch (Kafka's own
    ``legacy-append-cleared-epochs``), read by framing."""
    out = set()
    for path, data in image.items():
        if path.endswith(".log") and any(not b.is_v2 for b in iterate_file(data, validate=False).batches):
            out.add(path.rsplit("/", 1)[0])
    return out


def epochs_ahead_of_log_start(image: dict[str, bytes]) -> set[str]:
    """Partitions whose leader-epoch checkpoint begins above the log start offset checkpointed for
    them (Kafka's own ``epochs-ahead-of-log-start``)."""
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


def _unexpired(partitions: dict, now_ms: int) -> dict:
    """The partitions with the producers expired at ``now_ms`` left out: the reference load ran at
    the crash, this one maybe a day later, and whether a load keeps an expired producer depends on
    the route it reads it by (a snapshot drops it, a batch read back keeps it until the periodic
    check), not on the interruption (docs/producer-state.md rule 35)."""
    out = {}
    for key, p in partitions.items():
        if "producers" in p:
            p = {**p, "producers": [e for e in p["producers"] if not expired(e, now_ms)]}
        out[key] = p
    return out


def _without_snapshot_only_producer_state(partitions: dict) -> dict:
    """The partitions without the producers whose last batch lies below the log start offset, or
    who have no batch in the log at all (last offset −1: known from a marker alone) — Kafka's own
    ``producer-below-the-log-start-forgotten``: only a snapshot carries such a producer (KIP-360
    keeps it past retention), and which snapshot a load keeps depends on the checkpoints it finds,
    not on the interruption (docs/producer-state.md rules 14, 17)."""
    out = {}
    for key, p in partitions.items():
        if "producers" in p:
            start = p["log_start_offset"]
            # and the coordinator epoch (field 6), which a marker sets and only a snapshot keeps
            # once the marker's segment is not read again: Kafka 4.4.0 loses it the same way
            # (corpora/crash/coordinator-epoch-forgotten-by-an-interrupted-load.json)
            p = {**p, "producers": [[*e[:6], None, *e[7:]] for e in p["producers"] if e[3] >= start]}
        out[key] = p
    return out


def epoch_at_the_log_end(partitions: dict) -> set[str]:
    """Partitions whose last epoch entry starts at or past the log end (Kafka's own
    ``epoch-moved-to-the-log-end``)."""
    return {k for k, p in partitions.items() if p["epochs"] and p["epochs"][-1][1] >= p["log_end_offset"]}


def _without_epochs(state: dict) -> dict:
    return {k: v for k, v in state.items() if k != "epochs"}
