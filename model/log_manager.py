"""Data dirs, loading, checkpoints, shutdown and the clean-shutdown marker (spec §5.2–§5.7, §6),
as pure functions of a disk image.

A disk image is a dict {path: bytes}.  :func:`load` turns an image (plus config, clock and jitter)
into a :class:`LogManager`; :meth:`LogManager.files` renders the image the broker would leave.  The
loader follows LogLoader.load() step by step for what the log issue covers: ``.deleted`` /
``.cleaned`` / ``.swap`` handling, orphan indexes, load-time recovery when ``.index`` is missing or
the txn index is corrupt, recoverLog after an unclean shutdown (stop at the first segment that lost
bytes and delete the rest), LEO below the log start offset, the empty log, recovery point =
min(checkpoint, LEO) unless clean, epoch-cache truncation.  Not yet: producer snapshots (§5.8) and
splitting overflowed segments (§5.5) — an overflow is this partition's load error.

A partition that cannot be loaded (bad directory name, bad file name, an index refusal) ends the
broker's startup, as Kafka's does (§6.2 step 7: the job's exception is rethrown by loadLogs): every
partition's load still runs (the pools drain their queues), then the broker is down with the files as
the loads left them (``LogManager.startup_error``).  The ``isolate`` failure policy is the documented
departure shared with ``impl`` (DESIGN.md ``isolated``; docs/scenario-format.md): the partition is
reported and left out, the others start, and its data dir gets no marker at shutdown.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from model.checkpoints import IO, CheckpointError, parse_epochs, parse_offsets, render_epochs, render_offsets
from model.config import Config
from model.errors import SNAPPY_ERROR, IndexFailure, LogError, RecordFormatError
from model.file_records import iterate_file
from model.indexes import OffsetIndex, TimeIndex, TransactionIndex, rebuild_from_log
from model.log import Log, assigned_epochs
from model.names import offset_from_file_name, parse_topic_partition
from model.producer_state import DELETED as SNAPSHOT_DELETED
from model.producer_state import REBUILDING, ProducerStateManager, RebuildError, read_producer, rebuild, snapshot_offset
from model.producer_state import SUFFIX as SNAPSHOT
from model.segment import INT32_MAX, Segment, prefix
from model.split import SplitError, split

MARKER = ".kafka_cleanshutdown"
RECOVERY_POINTS = "recovery-point-offset-checkpoint"
LOG_STARTS = "log-start-offset-checkpoint"
EPOCHS = "leader-epoch-checkpoint"
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
SEGMENT_FILES = (".log", ".index", ".timeindex", ".deleted", ".cleaned", ".swap", SNAPSHOT)  # a load's own files


class PartitionLoadError(Exception):
    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}")


class DirQueuedOffline(PartitionLoadError):
    """An I/O error ended this partition's load (a KafkaStorageException the load job swallows):
    the partition is not loaded and its data dir is queued offline (§6.2 step 6, §6.6)."""


# Every loader branch a load can take, by the spec rule behind it (§5, §6.2): what `event()` and
# campaign reports count, and what they list as not reached.
BRANCHES = (
    "5.2.1b .deleted file removed",
    "5.2.1e invalid .swap removed",
    "5.2.1f .cleaned removed",
    "5.2.2 missing .index.swap created full of zero entries",
    "5.2.3 original replaced by a swap removed",
    "5.2.4 .swap renamed",
    "5.3.2 orphan index removed",
    "5.5 overflowed segment split",
    "5.5 split below the segment's base",
    "5.3.3c .index missing: segment recovered",
    "5.3.3c corrupt txn index: segment recovered",
    "5.6.1 unflushed segment recovered",
    "5.6.1b bytes truncated: recovery stops",
    "5.6.1b invalid offset: segment emptied",
    "5.6.1b later unflushed segments deleted",
    "5.6.2 log end below log start: all segments deleted",
    "5.6.3 no segment left: empty segment created",
    "5.6.4 recovery point kept below the log end (checkpoint)",
    "5.7 epoch entries at or past the log end removed",
    "6.2 marker present: clean load",
    "6.2 no marker: unclean load",
    "6.2.3 checkpoint unreadable: empty map",
    "load failed",
)
CLEAN_LOAD = "6.2 marker present: clean load"
LATER_DELETED = "5.6.1b later unflushed segments deleted"
SPLIT_BELOW_BASE = "5.5 split below the segment's base"
EPOCHS_PAST_END = "5.7 epoch entries at or past the log end removed"
ALL_DELETED = "5.6.2 log end below log start: all segments deleted"
INVALID_SWAP_REMOVED = "5.2.1e invalid .swap removed"


@attrs.define
class LoadOutcome:
    data_dir: str
    name: str
    topic: str | None
    partition: int | None
    error: str | None
    fatal: bool = True  # an error Kafka's startup rethrows (not an I/O error, which offlines the dir)
    recovered: list[int] = attrs.Factory(list)
    truncated_bytes: int = 0
    branches: list[str] = attrs.Factory(list)  # the loader rules this load went through (§5, §6.2)
    log_bytes_read: int = 0  # what Kafka's algorithm reads of .log files (recover + readNextOffset)
    producer_state_bytes_read: int = 0  # what its producer-state rebuilds read of them besides
    # the files this load's recoveries wrote, by name in the partition's directory: what a load that
    # fails before its segments are in the log (§5.3) leaves over ``files_now``; from §5.6 on, the
    # log's segments say it (``log_now``) (docs/crash-recovery.md, "a failed load")
    written: dict[str, bytes] = attrs.Factory(dict)
    # the partition's files as the load's steps 1–4 and its splits left them (name → bytes), while it
    # runs: what a failed load leaves of the files as found, before ``written``
    files_now: dict[str, bytes] | None = None
    # the partition's log once its segments are loaded (§5.6 on): from then on the log's segments are
    # what a failed load leaves on disk
    log_now: PartitionFiles | None = None
    # the partition's producer snapshots (name → bytes), changed in place by the load
    snapshots: dict[str, bytes] = attrs.Factory(dict)
    # files a failed split left (its new segments' .cleaned logs, when an Error skipped the cleanup)
    left: dict[str, bytes] = attrs.Factory(dict)

    def took(self, branch: str) -> None:
        assert branch in BRANCHES, branch
        if branch not in self.branches:
            self.branches.append(branch)


@attrs.define(eq=False)
class PartitionFiles:
    """A loaded partition: its Log plus the files the log layer does not own (kept as found)."""

    log: Log
    data_dir: str
    other: dict[str, bytes] = attrs.Factory(dict)  # name → bytes (snapshots, partition.metadata, …)
    epoch_text: bytes = b""  # leader-epoch-checkpoint as last written


def _partition_files(p: PartitionFiles, indexes: bool = True) -> dict[str, bytes]:
    """A loaded partition's files by name in its directory."""
    log = p.log
    out = dict(p.other)
    out[EPOCHS] = render_epochs(log.epochs).encode() if log.epoch_writes else p.epoch_text
    if log.epoch_writes:  # a checkpoint write goes through <name>.tmp, renamed over (§6.5)
        out.pop(f"{EPOCHS}.tmp", None)
    out.update(segment_files(log, indexes))
    out.update(log.producer_state.disk)
    return out


def _partition_mtimes(p: PartitionFiles) -> dict[str, int]:
    path = f"{p.data_dir}/{p.log.name}"
    segments = list(p.log.strays.values()) + p.log.segments + list(p.log.deleted.values())
    return {f"{path}/{prefix(s.base_offset)}.log{'.deleted' if s.deleted else ''}": s.mtime_ms for s in segments}


def _children(image: dict[str, bytes], directory: str) -> dict[str, bytes]:
    """Files directly inside ``directory`` (name → bytes)."""
    lead = directory.rstrip("/") + "/"
    return {p[len(lead) :]: b for p, b in image.items() if p.startswith(lead) and "/" not in p[len(lead) :]}


def _subdirs(image: dict[str, bytes], directory: str, dirs: set[str]) -> list[str]:
    lead = directory.rstrip("/") + "/"
    names = {p[len(lead) :].split("/", 1)[0] for p in image if p.startswith(lead) and "/" in p[len(lead) :]}
    names |= {d[len(lead) :] for d in dirs if d.startswith(lead) and "/" not in d[len(lead) :]}
    return sorted(names)


def _file_offset(directory: str, name: str) -> int:
    try:
        return offset_from_file_name(name)
    except Exception as e:
        raise PartitionLoadError(f"{directory}/{name}", f"file name does not start with an offset ({e})") from None


class LogManager:
    def __init__(self, data_dirs, config: Config, clock: Callable[[], int], jitter, broker_epoch: int = -1):
        self.data_dirs = list(data_dirs)
        self.config = config
        self.clock = clock
        self.jitter = jitter
        self.broker_epoch = broker_epoch
        self.partitions: dict[tuple[str, int], PartitionFiles] = {}
        self.dir_files: dict[str, dict[str, bytes]] = {d: {} for d in self.data_dirs}  # name → bytes
        self.extra_dirs: set[str] = set()  # directories kept as found (bad names, failed loads)
        self.extra_mtimes: dict[str, int] = {}  # modification times of kept .log files
        self.found_mtimes: dict[str, int] = {}  # the image's, as the load found them
        self.failed: dict[tuple[str, int], str] = {}  # partitions whose load failed → why
        self.extra_files: dict[str, bytes] = {}
        self.had_marker: dict[str, bool] = {}
        self.load_completed: dict[str, bool] = {}
        self.outcomes: list[LoadOutcome] = []
        self.startup_error: str | None = None  # why the startup failed (Kafka's failure policy), or None
        self.queued_offline: dict[str, str] = {}  # data dir → the I/O error the load queued it offline for
        self.offline: dict[str, str] = {}  # data dirs the failure handler took offline (§6.6) → why
        self.kafkas_retention: int | None = None  # the last retention's count as Kafka's, if not the same

    # --- the image ------------------------------------------------------------------------------

    def files(self, indexes: bool = True) -> dict[str, bytes]:
        """The image; ``indexes=False`` leaves out the live segments' index files (cheaper)."""
        out = dict(self.extra_files)
        for d, files in self.dir_files.items():
            out.update({f"{d}/{n}": b for n, b in files.items()})
        for p in self.partitions.values():
            path = f"{p.data_dir}/{p.log.name}"
            out.update({f"{path}/{n}": b for n, b in _partition_files(p, indexes).items()})
        return out

    def mtimes(self) -> dict[str, int]:
        """Modification times of the ``.log`` files (time retention falls back to them, §4.8),
        also of those kept as found or as a failed load left them: the next start loads them."""
        out = {p: t for p, t in self.extra_mtimes.items() if p in self.extra_files}
        for p in self.partitions.values():
            out.update(_partition_mtimes(p))
        return out

    def directories(self) -> set[str]:
        return set(self.data_dirs) | {f"{p.data_dir}/{p.log.name}" for p in self.partitions.values()} | self.extra_dirs

    # --- logs -------------------------------------------------------------------------------------

    def log(self, topic: str, partition: int) -> Log:
        try:
            return self.partitions[(topic, partition)].log
        except KeyError:
            raise LogError("UnknownTopicOrPartitionException", f"{topic}-{partition} has no log") from None

    def create_log(self, topic: str, partition: int, data_dir: str | None = None) -> Log:
        if (topic, partition) in self.partitions:
            return self.partitions[(topic, partition)].log
        if (topic, partition) in self.failed:
            raise LogError("KafkaStorageException", refused_create(topic, partition, self.failed[(topic, partition)]))
        if self.offline:  # getOrCreateLog (§6.6): no new log while any dir is offline
            dirs = ",".join(sorted(self.offline))
            raise LogError(
                "KafkaStorageException", f"Can not create log for {topic}-{partition}: log dirs {dirs} are offline"
            )
        parse_topic_partition(f"{topic}-{partition}")
        log = Log(topic, partition, self.config, self.clock, self.jitter, [])
        log.segments.append(log.new_segment(0))
        self.partitions[(topic, partition)] = PartitionFiles(log, data_dir or self.data_dirs[0])
        return log

    def logs_in(self, data_dir: str):
        return sorted((tp, p.log) for tp, p in self.partitions.items() if p.data_dir == data_dir)

    def dir_of(self, topic: str, partition: int) -> str:
        return self.partitions[(topic, partition)].data_dir

    def tick(self) -> None:
        now = self.clock()
        for p in self.partitions.values():
            p.log.run_due_deletions(now)

    def truncate_to(self, topic: str, partition: int, offset: int) -> bool:
        """LogManager.truncateTo: truncate the partition's log (§4.7); whether it truncated.  A
        truncation writes the recovery-point checkpoint of the partition's data dir (§6.5)."""
        truncated = self.log(topic, partition).truncate_to(offset)
        if truncated:
            self.checkpoint_recovery_points(self.dir_of(topic, partition))
        return truncated

    def truncate_fully_and_start_at(self, topic: str, partition: int, offset: int) -> None:
        """LogManager.truncateFullyAndStartAt: every segment deleted and the log restarted at
        ``offset`` (§4.7), then the recovery-point checkpoint of its data dir written (§6.5)."""
        self.log(topic, partition).truncate_fully_and_start_at(offset)
        self.checkpoint_recovery_points(self.dir_of(topic, partition))

    def update_topic_config(self, topic: str, overrides: dict) -> None:
        """LogManager.updateTopicConfig: every log of ``topic`` takes the broker's config with
        ``overrides`` in force (UnifiedLog.updateConfig); its segments keep what they were created
        with (index interval, index size, roll jitter), and a log created later takes the broker's."""
        for (t, _), p in self.partitions.items():
            if t == topic:
                p.log.config = self.config.updated(overrides)

    def retention(self) -> int:
        """One pass of the retention task (LogManager.cleanupLogs): ``deleteOldSegments`` on every
        log, in (topic, partition) order; the number of segments deleted.  Sets
        :attr:`kafkas_retention`: Kafka's count where a damaged final time-index entry makes it
        differ (KAFKA-10207), else None."""
        counts = [(p.log.delete_old_segments(), p.log.kafkas_deleted) for _, p in sorted(self.partitions.items())]
        ours = sum(n for n, _ in counts)
        kafkas = sum(n if k is None else k for n, k in counts)
        self.kafkas_retention = None if kafkas == ours else kafkas
        return ours

    def live_dirs(self) -> list[str]:
        return [d for d in self.data_dirs if d not in self.offline]

    def checkpoint_recovery_points(self, data_dir: str | None = None) -> None:
        for d in [data_dir] if data_dir else self.live_dirs():
            entries = {tp: log.recovery_point for tp, log in self.logs_in(d)}
            self.dir_files[d][RECOVERY_POINTS] = render_offsets(entries).encode()
            self.dir_files[d].pop(RECOVERY_POINTS + ".tmp", None)  # written via the temp file (§6.5)

    def checkpoint_log_start_offsets(self, data_dir: str | None = None) -> None:
        for d in [data_dir] if data_dir else self.live_dirs():
            entries = {
                tp: log.log_start_offset
                for tp, log in self.logs_in(d)
                if log.log_start_offset > log.segments[0].base_offset
            }
            self.dir_files[d][LOG_STARTS] = render_offsets(entries).encode()
            self.dir_files[d].pop(LOG_STARTS + ".tmp", None)

    def shutdown(self) -> dict[str, str | None]:
        outcome = {}
        for p in self.partitions.values():  # delayed deletions are dropped; their files stay
            p.log.delete_tasks = []
            p.log.snapshot_delete_tasks = []
        for d in self.data_dirs:
            if d in self.offline:  # not a live dir: no checkpoints, no marker (§6.6)
                outcome[d] = f"log dir {d} is offline ({self.offline[d]})"
                continue
            failed = None  # each log is flushed and closed by a job of its own (§6.3)
            for _, log in self.logs_in(d):
                log.flush(log.log_end_offset, inclusive=True)
                try:
                    log.close()
                except IndexFailure as e:
                    failed = failed or f"closing {log.name} failed: {e}"
            if failed:  # a failed job costs the dir its checkpoints and its marker
                outcome[d] = failed
                continue
            self.checkpoint_recovery_points(d)
            self.checkpoint_log_start_offsets(d)
            if self.had_marker.get(d) or self.load_completed.get(d, True):
                self.dir_files[d][MARKER] = b'{"version":0,"brokerEpoch":%d}' % self.broker_epoch
                outcome[d] = None
            else:
                outcome[d] = "not every partition finished loading: no clean-shutdown marker (KAFKA-15375)"
        return outcome


# --- loading (§6.2, §5.2) --------------------------------------------------------------------------------


def load(
    image: dict[str, bytes],
    data_dirs,
    config: Config,
    clock,
    jitter,
    directories=(),
    broker_epoch=-1,
    mtimes=None,
    failure_policy: str = "kafka",
) -> LogManager:
    """The broker's startup on ``image`` (``mtimes``: modification times of its files, 0 where not
    given): a new LogManager holding every loadable partition.  Under Kafka's failure policy a
    partition that failed to load sets ``startup_error``: the startup failed, the broker is down."""
    manager = _load(image, data_dirs, config, clock, jitter, directories, broker_epoch, mtimes, failure_policy)
    if failure_policy == "kafka":
        manager.startup_error = next((o.error for o in manager.outcomes if o.error and o.fatal), None)
        if manager.startup_error is None:
            _take_offline(manager)
    return manager


def _unparseable(names: list[str]) -> tuple[str, Exception] | None:
    """The first partition directory name Kafka cannot parse, with why (§2.3)."""
    for name in names:
        if name == "remote-log-index-cache":
            continue
        try:
            parse_topic_partition(name)
        except Exception as e:
            return name, e
    return None


def _abort_startup(manager: LogManager, image, dirs: set[str], d: str, bad: tuple[str, Exception]) -> None:
    """Kafka's loadLogs parses a data dir's partition names before it submits their loads, and a
    name it cannot parse is a KafkaException out of loadLogs (§2.3, §6.2 step 5): that dir and every
    later one load nothing, their files as found (later dirs keep their markers)."""
    name, e = bad
    manager.outcomes.append(LoadOutcome(d, name, None, None, f"{d}/{name}: {e}"))
    why = f"not loaded: the startup failed at {d}/{name}"
    later = manager.data_dirs[manager.data_dirs.index(d) :]
    for dd in later:
        if dd != d:
            files = _children(image, dd)
            for checkpoint in (RECOVERY_POINTS, LOG_STARTS):
                files.setdefault(checkpoint, b"")  # created by LogManager's constructor (§6.1 item 4)
            manager.dir_files[dd] = files
        for sub in _subdirs(image, dd, dirs):
            _keep(manager, image, f"{dd}/{sub}", dirs)
            if (dd, sub) == (d, name):
                continue
            try:
                topic, partition, _ = parse_topic_partition(sub)
            except Exception as e:  # reported too: an operator fixes them all before a restart
                if sub != "remote-log-index-cache":
                    manager.outcomes.append(LoadOutcome(dd, sub, None, None, f"{dd}/{sub}: {e}"))
                continue
            if topic != "__cluster_metadata":
                manager.outcomes.append(LoadOutcome(dd, sub, topic, partition, f"{dd}/{sub}: {why}"))


def _take_offline(manager: LogManager) -> None:
    """The log-dir failure handler after the load (§6.6 item 2): each data dir an I/O error queued
    offline stops serving its logs, which are closed without a flush, their files as the load left
    them.  The first data dir holds the broker's metadata log (KRaft's default ``metadata.log.dir``):
    its failure halts the broker, as does losing the last live dir."""
    for d in [d for d in manager.data_dirs if d in manager.queued_offline]:
        why = manager.queued_offline[d]
        if d == manager.data_dirs[0] or len(manager.offline) + 1 == len(manager.data_dirs):
            manager.startup_error = f"log dir {d} failed ({why}): the broker halts"
            return
        manager.offline[d] = why
        for tp, log in manager.logs_in(d):
            pf = manager.partitions.pop(tp)
            path = f"{d}/{log.name}"
            manager.extra_dirs.add(path)
            manager.extra_files.update({f"{path}/{n}": b for n, b in _partition_files(pf).items()})
            manager.extra_mtimes.update({p: t for p, t in _partition_mtimes(pf).items()})
        for o in manager.outcomes:
            if o.data_dir == d and not o.error:
                o.error = f"{d}/{o.name}: log dir {d} offline ({why})"


def _load(image, data_dirs, config: Config, clock, jitter, directories, broker_epoch, mtimes, policy) -> LogManager:
    manager = LogManager(data_dirs, config, clock, jitter, broker_epoch)
    dirs = set(directories)
    inside = lambda p: any(p.startswith(d.rstrip("/") + "/") or p == d for d in data_dirs)  # noqa: E731
    manager.extra_files = {p: b for p, b in image.items() if not inside(p)}
    manager.found_mtimes = dict(mtimes or {})
    for d in data_dirs:
        files = _children(image, d)
        had_marker = MARKER in files
        files.pop(MARKER, None)  # deleted at once (KAFKA-10471)
        manager.had_marker[d] = had_marker
        for name in (RECOVERY_POINTS, LOG_STARTS):
            files.setdefault(name, b"")
        manager.dir_files[d] = files
        recovery_points = _read_offsets(manager, d, files[RECOVERY_POINTS], f"{d}/{RECOVERY_POINTS}")
        log_starts = _read_offsets(manager, d, files[LOG_STARTS], f"{d}/{LOG_STARTS}")
        bad_checkpoints = None in (recovery_points, log_starts)
        recovery_points, log_starts = recovery_points or {}, log_starts or {}
        bad = _unparseable(_subdirs(image, d, dirs)) if policy == "kafka" else None
        if bad is not None:
            _abort_startup(manager, image, dirs, d, bad)
            return manager
        ok = True
        for name in _subdirs(image, d, dirs):
            path = f"{d}/{name}"
            if name == "remote-log-index-cache":
                _keep(manager, image, path, dirs)
                continue
            try:
                topic, partition, _ = parse_topic_partition(name)
            except Exception as e:
                manager.outcomes.append(LoadOutcome(d, name, None, None, f"{path}: {e}"))
                _keep(manager, image, path, dirs)
                ok = False
                continue
            if topic == "__cluster_metadata":
                _keep(manager, image, path, dirs)
                continue
            outcome = LoadOutcome(d, name, topic, partition, None)
            outcome.took(CLEAN_LOAD if had_marker else "6.2 no marker: unclean load")
            if bad_checkpoints:
                outcome.took("6.2.3 checkpoint unreadable: empty map")
            try:
                if (topic, partition) in manager.partitions:
                    raise PartitionLoadError(path, f"Duplicate log directories for {topic}-{partition}")
                pf = _load_partition(
                    _children(image, path), path, topic, partition, config, clock, jitter, had_marker,
                    recovery_points.get((topic, partition), 0), log_starts.get((topic, partition), 0), outcome,
                    mtimes or {},
                )  # fmt: skip
                if d in manager.queued_offline and pf.log.producer_state.unstable_after_load():
                    # UnifiedLog's constructor turns the first unstable offset into offset metadata
                    # by a read, which an offline dir refuses (docs/producer-state.md rule 61)
                    raise PartitionLoadError(
                        path,
                        f"KafkaStorageException: The log dir {d} is already offline due to a previous IO exception",
                    )
                pf.data_dir = d
                manager.partitions[(topic, partition)] = pf
                outcome.written, outcome.files_now, outcome.log_now = {}, None, None  # only a failure needs them
            except (PartitionLoadError, LogError, IndexFailure, RecordFormatError) as e:
                outcome.error = str(e)
                if isinstance(e, DirQueuedOffline):
                    outcome.fatal = False
                    manager.queued_offline.setdefault(d, str(e))
                outcome.took("load failed")
                if (topic, partition) not in manager.partitions:
                    manager.failed[(topic, partition)] = outcome.error
                _keep_failed(manager, image, path, dirs, outcome)
                ok = False
            manager.outcomes.append(outcome)
        manager.load_completed[d] = ok
    return manager


def refused_create(topic: str, partition: int, reason: str) -> str:
    """Why creating a log whose directory failed to load is refused.

    Kafka takes the whole data dir offline when a partition fails to load (§6.6), so it cannot
    create anything there; we keep the other partitions online but leave the failed directory and
    its files exactly as found: creating over it would either load the damaged files again or
    replace data an operator may still recover."""
    return f"{topic}-{partition} failed to load and is kept as found until the next start ({reason})"


def _keep(manager: LogManager, image, path: str, dirs: set[str]) -> None:
    manager.extra_dirs.add(path)
    manager.extra_dirs |= {x for x in dirs if x.startswith(path + "/")}
    manager.extra_files.update({p: b for p, b in image.items() if p.startswith(path + "/")})
    manager.extra_mtimes.update({p: t for p, t in manager.found_mtimes.items() if p.startswith(path + "/")})


def segment_files(log: Log, indexes: bool = True) -> dict[str, bytes]:
    """The files of ``log``'s segments by name in its directory: each live segment's ``.log`` and
    (with ``indexes``) its two indexes, each segment scheduled for deletion's ``.log.deleted``;
    before them the files of the strays left out of the map (:meth:`Log.replace_segments`),
    which a live or deleted segment's file of the same name replaces."""
    out = {}
    for s in list(log.strays.values()) + log.segments + list(log.deleted.values()):
        out[f"{prefix(s.base_offset)}.log{'.deleted' if s.deleted else ''}"] = bytes(s.log)
        if indexes and not s.deleted:
            out[f"{prefix(s.base_offset)}.index"] = s.offset_index.file_bytes()
            out[f"{prefix(s.base_offset)}.timeindex"] = s.time_index.file_bytes()
        if s.txn_index.exists and not s.deleted:  # a file once its first entry is written (§3.7)
            out[f"{prefix(s.base_offset)}.txnindex"] = s.txn_index.data
    return out


def _keep_failed(manager: LogManager, image, path: str, dirs: set[str], outcome: LoadOutcome) -> None:
    """A partition whose load failed keeps its files as the load left them (docs/crash-recovery.md,
    "A failed load"): the files as found, changed by what steps 1–4 (temporary files, swaps) and
    the splits of overflowed segments did on disk, then by what its recoveries wrote."""
    _keep(manager, image, path, dirs)
    now, written = outcome.files_now, outcome.written
    if outcome.log_now is not None:  # the segments are the log's, recovered or split as they went
        now, written = {**outcome.log_now.other, **segment_files(outcome.log_now.log)}, {}
        if outcome.log_now.log.epoch_writes:  # the recoveries' epoch cache, checkpointed as it changed
            now[EPOCHS] = render_epochs(outcome.log_now.log.epochs).encode()
            now.pop(f"{EPOCHS}.tmp", None)  # the write's temp file, renamed over it
            manager.extra_files.pop(f"{path}/{EPOCHS}.tmp", None)
    if now is not None:
        now = {**now, **outcome.snapshots}
    if now is not None:
        for name in _children(image, path):
            if name not in now and name.endswith(SEGMENT_FILES):  # removed or renamed by the load
                manager.extra_files.pop(f"{path}/{name}", None)
        manager.extra_files.update({f"{path}/{n}": b for n, b in now.items()})
    manager.extra_files.update({f"{path}/{n}": b for n, b in written.items()})
    manager.extra_files.update({f"{path}/{n}": b for n, b in outcome.left.items()})
    if outcome.topic is not None:  # the epoch cache's checkpoint file is made, empty, before the loader runs
        manager.extra_files.setdefault(f"{path}/{EPOCHS}", b"")
    # a rename keeps a file's modification time (a .swap renamed at step 4); a segment the load
    # made (a split) has the time it was written; a file that stays, the time it had.  Time
    # retention of a segment without timestamps goes by that mtime (§4.8): a dropped one reads as
    # 1970 and the next load's retention deletes the segment
    # (pinned by corpora/crash/failed-partition-keeps-its-mtimes-through-a-shutdown.json)
    made = {}
    if outcome.log_now is not None:
        log = outcome.log_now.log
        for seg in list(log.strays.values()) + log.segments + list(log.deleted.values()):
            made[f"{path}/{prefix(seg.base_offset)}.log{'.deleted' if seg.deleted else ''}"] = seg.mtime_ms
    found = manager.found_mtimes
    for p in manager.extra_files:
        if p.startswith(path + "/") and p.endswith((".log", ".log.deleted")):
            manager.extra_mtimes[p] = made.get(p, found.get(p, found.get(f"{p}.swap", 0)))


def _epoch_cache(entries: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """LeaderEpochFileCache's constructor assigns the checkpointed entries one by one, so a file
    whose entries do not both increase (only damage writes one) collapses as appends would: an
    entry drops every earlier one whose epoch or start offset is not below its own.  Not written
    back.  (Entries with a negative field are left as read.)"""
    if any(epoch < 0 or start < 0 for epoch, start in entries):
        return list(entries)
    cache: list[tuple[int, int]] = []
    for epoch, start in entries:
        cache = assigned_epochs(cache, epoch, start) or cache
    return cache


def _read_offsets(manager: LogManager, data_dir: str, data: bytes, path: str) -> dict | None:
    """§6.2 steps 3–4: any failure → an empty map (None: tell the caller); an IOException also
    queues the data dir offline (CheckpointFileWithFailureHandler, §6.5 rule 6)."""
    try:
        return parse_offsets(data, path)
    except CheckpointError as e:
        if e.kind == IO:
            manager.queued_offline.setdefault(data_dir, str(e))
        return None


def _load_partition(
    files, path, topic, partition, config, clock, jitter, clean, rp_checkpoint, ls_checkpoint, outcome, mtimes
):
    files = dict(files)
    epochs_text = files.pop(EPOCHS, b"")
    try:
        epochs = parse_epochs(epochs_text, f"{path}/{EPOCHS}")
    except CheckpointError as e:  # read first, as the epoch cache is built (§6.5 rule 6)
        raise (DirQueuedOffline if e.kind == IO else PartitionLoadError)(f"{path}/{EPOCHS}", str(e)) from None
    log = Log(topic, partition, config, clock, jitter, [], epochs=_epoch_cache(epochs))
    pf = PartitionFiles(log, "", epoch_text=epochs_text)
    outcome.files_now = files  # changed in place below, as Kafka changes the directory
    outcome.snapshots = {n: files.pop(n) for n in list(files) if n.endswith((SNAPSHOT, SNAPSHOT_DELETED))}
    log.producer_state = _producer_state(outcome.snapshots, path)

    # step 1: temp files, swaps (§5.2 steps 1–4)
    cleaned = [n for n in files if n.endswith(".cleaned")]
    min_cleaned = min((_file_offset(path, n) for n in cleaned), default=None)
    for name in list(files):
        if name.endswith(".deleted") and not name.endswith(".checkpoint.deleted"):
            del files[name]
            outcome.took("5.2.1b .deleted file removed")
    for name in [n for n in outcome.snapshots if n.endswith(SNAPSHOT_DELETED)]:
        del outcome.snapshots[name]
        outcome.took("5.2.1b .deleted file removed")
    swaps = [n for n in files if n.endswith(".swap")]
    for name in swaps:
        if min_cleaned is not None and _file_offset(path, name) >= min_cleaned:
            del files[name]
            outcome.took(INVALID_SWAP_REMOVED)
    for name in cleaned:
        del files[name]
        outcome.took("5.2.1f .cleaned removed")
    log_swaps = [n for n in files if n.endswith(".log.swap")]
    if log_swaps:
        low = min(_file_offset(path, n) for n in log_swaps)
        high = max(_swap_next_offset(files, n, _file_offset(path, n), config, clock, outcome, path) for n in log_swaps)
        for name in list(files):
            if name.endswith(".swap"):
                continue
            try:
                offset = offset_from_file_name(name)
            except Exception:
                continue
            if low <= offset < high:
                del files[name]
                outcome.took("5.2.3 original replaced by a swap removed")
        for name in list(outcome.snapshots):
            if low <= snapshot_offset(name) < high:  # a snapshot's name parses, or the load failed first
                del outcome.snapshots[name]
                outcome.took("5.2.3 original replaced by a swap removed")
    mtimes = dict(mtimes)
    for name in [n for n in files if n.endswith(".swap")]:
        files[name[: -len(".swap")]] = files.pop(name)
        # a rename keeps the file's modification time: retention of a segment without timestamps
        # goes by it (§4.8; pinned by corpora/crash/swap-renamed-at-load-keeps-its-mtime.json)
        if f"{path}/{name}" in mtimes:
            mtimes[f"{path}/{name[: -len('.swap')]}"] = mtimes.pop(f"{path}/{name}")
        outcome.took("5.2.4 .swap renamed")
    # §5.3 loadSegmentFiles, started over after splitting an overflowed segment (§5.5)
    while True:
        remaining = dict(files)
        try:
            segments = _load_segment_files(remaining, path, log, config, clock, jitter, outcome, mtimes, ls_checkpoint)
            break
        except _Overflow as e:
            # Kafka recovers a segment before adding it to the map, so replaceSegments finds no old
            # segment to rename .deleted: the split's files replace the original's only where their
            # names are the same (§5.9 step 3 filters old segments by the map)
            for seg in e.recovered:  # closed before the retry: recovered ones write their indexes
                seg.close()
                files[f"{prefix(seg.base_offset)}.index"] = seg.offset_index.file_bytes()
                files[f"{prefix(seg.base_offset)}.timeindex"] = seg.time_index.file_bytes()
            # the recovery's index reset resized both files to full size (materialising a missing
            # one) and wrote the entries of the batches before the overflow (§4.6 steps 1, 3)
            for suffix, entry, index in ((".index", 8, e.written[0]), (".timeindex", 12, e.written[1])):
                name, size = f"{prefix(e.segment.base_offset)}{suffix}", config.segment_index_bytes // entry * entry
                index.trim_to_valid_size()
                head = index.file_bytes()
                files[name] = head + files.get(name, b"")[len(head) : size].ljust(size - len(head), b"\0")
            for new in _split(e.segment, log, outcome, path, e.written):
                files[f"{prefix(new.base_offset)}.log"] = bytes(new.log)
                files[f"{prefix(new.base_offset)}.index"] = new.offset_index.file_bytes()
                files[f"{prefix(new.base_offset)}.timeindex"] = new.time_index.file_bytes()
                mtimes[f"{path}/{prefix(new.base_offset)}.log"] = new.mtime_ms
    pf.other = remaining
    log.segments = [segments[b] for b in sorted(segments)]
    outcome.log_now = pf
    # §5.6 recoverLog, started over after splitting an overflowed segment (§5.5)
    while not clean:
        try:
            _recover_log(log, rp_checkpoint, ls_checkpoint, outcome, path, clock, config)
            break
        except _Overflow as e:
            new_segments = _split(e.segment, log, outcome, path, e.written)
            log.replace_segments(new_segments, [e.segment])
    leo = None
    if log.segments:
        leo = _next_offset(log.segments[-1], path)
        outcome.log_bytes_read += _tail_bytes(log.segments[-1])
        if leo < ls_checkpoint:
            outcome.took("5.6.2 log end below log start: all segments deleted")
            gone = list(log.segments)
            log.remove_and_delete(gone)
            # no snapshot renamed: Kafka passes removeAndDeleteSegmentsAsync the live view of its
            # segment map, empty once they are removed, so its deleteProducerSnapshotsAsync gets
            # none; truncateFullyAndStartAt then deletes every snapshot at once (rule 32)
            log.epochs_clear()
            log.producer_state.truncate_fully_and_start_at(ls_checkpoint)
            leo = None
    if not log.segments:
        outcome.took("5.6.3 no segment left: empty segment created")
        log.segments.append(log.new_segment(ls_checkpoint))
    if clean and leo is not None:
        recovery_point = leo
    else:
        leo = _next_offset(log.segments[-1], path) if leo is None else leo
        recovery_point = min(rp_checkpoint, leo)
        if rp_checkpoint < leo:
            outcome.took("5.6.4 recovery point kept below the log end (checkpoint)")
    log.segments[-1].offset_index.resize(config.segment_index_bytes)
    log.segments[-1].time_index.resize(config.segment_index_bytes)
    cache = list(log.epochs)
    log.epochs_truncate_from_end(leo)
    if log.epochs != cache:
        # Kafka's own, not idempotent: the recovery before it assigned no epoch its batches carry
        # (not above the latest, §4.6 step 3f), so the next load's recovery, from the cache without
        # those entries, assigns them anew (corpora/found/idempotent-recovery-0607043e93)
        outcome.took(EPOCHS_PAST_END)
    log.log_start_offset = max(ls_checkpoint, log.segments[0].base_offset)
    log.epochs_truncate_from_start(ls_checkpoint)
    log.log_end_offset = leo
    log.recovery_point = max(recovery_point, log.log_start_offset)
    # the producer state (rules 39.7–8 of docs/producer-state.md): stray snapshots removed, rebuilt
    log.producer_state.remove_stray_snapshots([s.base_offset for s in log.segments])
    outcome.producer_state_bytes_read += _rebuild(
        log.producer_state, log.segments, log.log_start_offset, leo, clock, clean, path
    )
    return pf


def _producer_state(snapshots: dict[str, bytes], path: str) -> ProducerStateManager:
    """The partition's ProducerStateManager as UnifiedLog.create makes it; a snapshot name that is
    no offset fails the load (NumberFormatException, rule 34)."""
    try:
        return ProducerStateManager.listing(snapshots)
    except ValueError as e:
        bad = next(n for n in sorted(snapshots) if n.endswith(SNAPSHOT) and not _is_offset(n))
        raise PartitionLoadError(f"{path}/{bad}", f"NumberFormatException: {e}") from None


def _is_offset(name: str) -> bool:
    try:
        snapshot_offset(name)
        return True
    except ValueError:
        return False


def _rebuild(psm, segments, log_start: int, last_offset: int, clock, clean: bool, path: str) -> int:
    """rebuildProducerState during a load; what its scan cannot read fails the load, naming the
    segment."""
    try:
        return rebuild(psm, segments, log_start, last_offset, clock(), clean)
    except RebuildError as e:
        raise PartitionLoadError(f"{path}/{prefix(e.base)}.log", f"{REBUILDING}: {e.cause}") from None


def _recover_segment(seg: Segment, segments: list[Segment], log: Log, outcome, path: str, log_start: int) -> int:
    """LogLoader.recoverSegment: a manager of its own over the directory rebuilds the producer
    state up to the segment (rule 17 of docs/producer-state.md), the segment is recovered, and a
    snapshot is taken at the offset after its last v2 batch."""
    psm = ProducerStateManager.listing(outcome.snapshots)
    outcome.producer_state_bytes_read += _rebuild(psm, segments, log_start, seg.base_offset, log.clock, False, path)
    removed = _recover(seg, log, outcome, path)
    v2 = [b for b in iterate_file(bytes(seg.log)).batches if b.is_v2]
    for batch in v2:  # LogSegment.recover updates the producers of the batches it keeps
        read_producer(psm, batch, seg.txn_index)
    if v2:
        psm.update_map_end(v2[-1].header().last_offset + 1)
    _wrote(outcome, seg)
    psm.take_snapshot()
    return removed


class _Overflow(Exception):
    """LogSegmentOffsetOverflowException out of a recovery (§4.6 step 3b): the loader splits
    ``segment`` and starts the step over (§5.5).  ``recovered``: the segments this pass of
    loadSegmentFiles had recovered before it (their indexes are materialised)."""

    def __init__(self, segment: Segment, written, recovered=()):
        self.segment, self.written, self.recovered = segment, written, list(recovered)


def _load_segment_files(files, path, log, config, clock, jitter, outcome, mtimes, log_start) -> dict[int, Segment]:
    """§5.3 on the files left after step 1–4; pops the segments' files from ``files``."""
    for name in [n for n in files if n.endswith(INDEX_SUFFIXES)]:
        if f"{prefix(_file_offset(path, name))}.log" not in files:
            del files[name]
            outcome.took("5.3.2 orphan index removed")
    segments: dict[int, Segment] = {}
    recovered: list[Segment] = []
    for name in sorted(n for n in files if n.endswith(".log")):
        base = _file_offset(path, name)
        p = prefix(base)
        if len(files[name]) > INT32_MAX:  # FileRecords' constructor: a segment is at most Int.MAX bytes
            raise PartitionLoadError(
                f"{path}/{name}",
                f"KafkaException: The size of segment {path}/{name} ({len(files[name])}) is larger than the "
                f"maximum allowed segment size of {INT32_MAX}",
            )
        bound = config.jitter_bound()
        seg = Segment(base, config, clock(), jitter(log.name, base) % bound if bound else 0, bytearray(files.pop(name)))
        seg.mtime_ms = mtimes.get(f"{path}/{name}", 0)
        index_bytes, time_bytes = files.pop(f"{p}.index", None), files.pop(f"{p}.timeindex", None)
        txn = files.pop(f"{p}.txnindex", None)
        seg.offset_index = OffsetIndex.open_existing(base, config.segment_index_bytes, index_bytes or b"")
        seg.time_index = TimeIndex.open_existing(base, config.segment_index_bytes, time_bytes or b"")
        if txn is not None:
            seg.txn_index = TransactionIndex.open_existing(base, txn)
        reason = None
        if index_bytes is None:
            reason = f"{path}/{p}.index does not exist"
            outcome.took("5.3.3c .index missing: segment recovered")
        elif txn is not None:
            try:
                seg.txn_index.sanity_check()
            except IndexFailure as e:
                reason = str(e)
                outcome.took("5.3.3c corrupt txn index: segment recovered")
        if reason:
            try:
                lower = [segments[b] for b in sorted(segments)]
                outcome.truncated_bytes += _recover_segment(seg, lower, log, outcome, path, log_start)
            except _Overflow as e:
                raise _Overflow(seg, e.written, recovered) from None
            except IndexFailure as e:  # Kafka's load fails on any index refusal here (§5.3)
                raise PartitionLoadError(f"{path}/{p}.log", str(e)) from None
            recovered.append(seg)
        segments[base] = seg
    return segments


def _recover_log(log: Log, rp_checkpoint: int, log_start: int, outcome, path: str, clock, config) -> None:
    """§5.6 step 1: recover every unflushed segment until one loses bytes; delete the rest."""
    floor = max((s.base_offset for s in log.segments if s.base_offset <= rp_checkpoint), default=None)
    unflushed = [s for s in log.segments if floor is None or s.base_offset >= floor]
    for i, seg in enumerate(unflushed):
        outcome.took("5.6.1 unflushed segment recovered")
        try:
            removed = _recover_segment(seg, list(log.segments), log, outcome, path, log_start)
        except IndexFailure as e:
            if e.kind != "InvalidOffsetException":
                raise PartitionLoadError(f"{path}/{prefix(seg.base_offset)}.log", str(e)) from None
            outcome.took("5.6.1b invalid offset: segment emptied")
            removed = seg.size
            seg.log = bytearray()
            seg.mtime_ms = clock() if removed else seg.mtime_ms
            seg.offset_index = OffsetIndex.create(seg.base_offset, config.segment_index_bytes)
            seg.time_index = TimeIndex.create(seg.base_offset, config.segment_index_bytes)
        outcome.truncated_bytes += removed
        if removed > 0:
            outcome.took("5.6.1b bytes truncated: recovery stops")
            if unflushed[i + 1 :]:
                outcome.took(LATER_DELETED)
            log.remove_and_delete(unflushed[i + 1 :])
            log.delete_producer_snapshots(unflushed[i + 1 :])
            break


def _split(seg: Segment, log: Log, outcome: LoadOutcome, path: str, written) -> list[Segment]:
    """§5.5: the segments that replace an overflowed one (:mod:`model.split`).  ``written``: the
    index entries its recovery rebuilt before the overflow, which stay on disk, trimmed, if the
    split fails the load (docs/crash-recovery.md, "A failed load")."""
    outcome.took("5.5 overflowed segment split")
    try:
        new = split(seg, log.new_segment, log.clock())
    except (SplitError, IndexFailure, LogError) as e:  # also an index refusal: a full index (§3.1)
        for index in written:
            index.trim_to_valid_size()
        seg.offset_index, seg.time_index = written
        _wrote(outcome, seg)
        if getattr(e, "kind", None) == SNAPPY_ERROR:  # not an Exception: the split's cleanup does not run
            outcome.left.update({f"{prefix(n.base_offset)}.log.cleaned": bytes(n.log) for n in e.made})
        raise PartitionLoadError(
            f"{path}/{prefix(seg.base_offset)}.log", f"cannot split the overflowed segment: {e}"
        ) from None
    if new and min(n.base_offset for n in new) != seg.base_offset:
        # no new segment takes the original's name: replaceSegments renames it .deleted (§5.9 step 3)
        # and nothing makes that durable before the new segments' renames (step 5 syncs once, at the
        # end), so a power loss can keep both (docs/swap-files.md, "a split below the segment's base")
        outcome.took(SPLIT_BELOW_BASE)
    return new


def _tail_bytes(seg: Segment) -> int:
    """What readNextOffset reads of the log: from the last offset-index entry's position to the end
    (§4.5 rule 3)."""
    entries = seg.offset_index.logical_entries()
    return seg.size - (entries[-1][1] if entries else 0)


def _next_offset(seg: Segment, path: str, name: str | None = None) -> int:
    """readNextOffset (§4.5 rule 3) of a segment being loaded; a framing error in the tail it
    scans fails the partition's load, naming the file and position (Kafka's load throws)."""
    try:
        return seg.read_next_offset()
    except RecordFormatError as e:
        raise PartitionLoadError(f"{path}/{name or prefix(seg.base_offset) + '.log'}", str(e)) from None


def _swap_next_offset(files: dict[str, bytes], name: str, base: int, config: Config, clock, outcome, path: str) -> int:
    """§5.2 step 2: readNextOffset of a ``.log.swap`` segment, which materialises its offset index —
    a missing ``.index.swap`` is created empty at its full preallocated size (§5.9 caveat 3) and is
    later renamed into place like the other swap files."""
    index_name = name[: -len(".log.swap")] + ".index.swap"
    if index_name not in files:
        files[index_name] = bytes(8 * (config.segment_index_bytes // 8))
        outcome.took("5.2.2 missing .index.swap created full of zero entries")
    seg = Segment(base, config, clock(), 0, bytearray(files[name]))
    seg.offset_index = OffsetIndex.open_existing(base, config.segment_index_bytes, files[index_name])
    outcome.log_bytes_read += _tail_bytes(seg)
    return _next_offset(seg, path, name)


def _recover(seg: Segment, log: Log, outcome: LoadOutcome, path: str) -> int:
    """§4.6 on the model: indexes rebuilt from the batches, the log cut after the last valid one,
    new leader epochs found in v2 batches assigned."""
    outcome.recovered.append(seg.base_offset)
    outcome.log_bytes_read += seg.size  # LogSegment.recover reads the whole file
    seg.txn_index.reset()  # rebuilt from the markers by the producer updates (rule 57)
    max_ts = (-1, seg.base_offset)  # recover leaves maxTimestampAndOffsetSoFar known, not lazy (§4.6)
    for batch in iterate_file(bytes(seg.log)).batches:
        h = batch.header()
        if h.max_timestamp > max_ts[0]:
            max_ts = (h.max_timestamp, h.last_offset)
        if not seg.fits(h.last_offset):
            # the batches before it were indexed first, and an index refusal among them comes first
            config = seg.config
            try:
                written = rebuild_from_log(
                    bytes(seg.log),
                    seg.base_offset,
                    config.index_interval_bytes,
                    config.segment_index_bytes,
                    batch.position,
                )
            except IndexFailure as e:
                _refused(e, seg, outcome)
                raise
            raise _Overflow(seg, written[:2])
        if h.magic >= 2 and h.partition_leader_epoch >= 0:
            if not log.epochs or h.partition_leader_epoch > log.epochs[-1][0]:
                log.assign_epoch(h.partition_leader_epoch, h.offset)
    try:
        offsets, times, valid = rebuild_from_log(
            bytes(seg.log), seg.base_offset, seg.config.index_interval_bytes, seg.config.segment_index_bytes
        )
    except IndexFailure as e:
        _refused(e, seg, outcome)
        raise
    removed = seg.size - valid
    del seg.log[valid:]
    if removed:
        seg.mtime_ms = log.clock()
    seg.offset_index, seg.time_index = offsets, times
    seg.max_ts = max_ts
    _wrote(outcome, seg)
    return removed


def _refused(e: IndexFailure, seg: Segment, outcome: LoadOutcome) -> None:
    """A recovery refused by an index (a full one, §3.1): the entries rebuilt before the refusal
    stay on disk, and the log is not cut."""
    if hasattr(e, "partial"):
        seg.offset_index, seg.time_index = e.partial
        _wrote(outcome, seg)


def _wrote(outcome: LoadOutcome, seg: Segment) -> None:
    """Note what a recovery left of ``seg`` on disk, for the case the load fails later: its log as
    cut and its indexes as rebuilt, trimmed to their entries (docs/crash-recovery.md, "a failed load";
    impl writes a load's recoveries as it goes, as Kafka does; corpora/found/conforms-9d085cfd83)."""
    p = prefix(seg.base_offset)
    outcome.written[f"{p}.log"] = bytes(seg.log)
    outcome.written[f"{p}.index"] = seg.offset_index.file_bytes()
    outcome.written[f"{p}.timeindex"] = seg.time_index.file_bytes()
    if seg.txn_index.exists:
        outcome.written[f"{p}.txnindex"] = seg.txn_index.data
