"""Kafka's LogManager (spec §6) as pure functions of a disk image: the data dirs, the startup that
loads every partition, the recovery-point and log-start checkpoints, the clean-shutdown marker and
the shutdown that writes them.

A disk image is a dict {path: bytes}.  :func:`load` turns an image (plus config, clock and jitter)
into a :class:`LogManager`: each data dir's marker is read and deleted (KAFKA-10471), its
checkpoints read (an unreadable one is an empty map, §6.2 steps 3–4), and each partition directory
loaded by :mod:`model.loader` (Kafka's LogLoader: swaps, segment files, the splits of overflowed
segments, recovery, the leader-epoch cache and the producer snapshots, §5.2–§5.8).
:meth:`LogManager.files` renders the image the broker would leave.

A partition that cannot be loaded (bad directory name, bad file name, an index refusal) ends the
broker's startup, as Kafka's does (§6.2 step 7: the job's exception is rethrown by loadLogs): every
partition's load still runs (the pools drain their queues), then the broker is down with the files as
the loads left them (``LogManager.startup_error``).  The ``isolate`` failure policy is the documented
departure shared with ``impl`` (DESIGN.md ``isolated``; docs/scenario-format.md): the partition is
reported and left out, the others start, and its data dir gets no marker at shutdown.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import attrs

from model import clean_shutdown
from model.checkpoints import IO, CheckpointError, parse_offsets, render_epochs, render_offsets
from model.config import Config
from model.errors import IndexFailure, LogError, RecordFormatError
from model.log import REFUSED_ROLL, Log
from model.loader import (
    ALL_DELETED,
    BRANCHES,
    CLEAN_LOAD,
    EPOCHS,
    EPOCHS_PAST_END,
    INVALID_SWAP_REMOVED,
    LATER_DELETED,
    SPLIT_BELOW_BASE,
    DirQueuedOffline,
    LoadOutcome,
    PartitionFiles,
    PartitionLoadError,
    load_partition,
)
from model.names import LOCK_FILE, log_delete_dir_name, log_dir_name_with_suffix, parse_topic_partition
from model.producer_state import SUFFIX as SNAPSHOT
from model.segment import prefix

__all__ = [  # with the loader's names the harness imports from here
    "LOG_STARTS",
    "LOCK",
    "MARKER",
    "RECOVERY_POINTS",
    "SEGMENT_FILES",
    "ALL_DELETED",
    "BRANCHES",
    "CLEAN_LOAD",
    "EPOCHS_PAST_END",
    "INVALID_SWAP_REMOVED",
    "LATER_DELETED",
    "SPLIT_BELOW_BASE",
    "DirQueuedOffline",
    "LoadOutcome",
    "LogManager",
    "PartitionFiles",
    "PartitionLoadError",
    "load",
    "refused_create",
    "segment_files",
]

MARKER = clean_shutdown.MARKER
RECOVERY_POINTS = "recovery-point-offset-checkpoint"
LOG_STARTS = "log-start-offset-checkpoint"
# LogManager's dir lock (§6.1): its constructor opens (creating) ``.lock`` in every live data dir
# and locks it; a graceful shutdown, or the failure handler taking the dir offline, destroys the
# lock, which deletes the file (KAFKA-16391, 3.8); a crash leaves it.  Its content is never written.
LOCK = LOCK_FILE
SEGMENT_FILES = (".log", ".index", ".timeindex", ".deleted", ".cleaned", ".swap", SNAPSHOT)  # a load's own files


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
    path = p.path
    segments = list(p.log.strays.values()) + p.log.segments + list(p.log.deleted.values())
    return {f"{path}/{prefix(s.base_offset)}.log{'.deleted' if s.deleted else ''}": s.mtime_ms for s in segments}


def random_unique_id(topic: str, partition: int, taken, kind: str = "delete") -> str:
    """Kafka's unique id of a renamed partition directory: a random UUID, dashes removed (§2.3)."""
    return uuid.uuid4().hex


@attrs.define
class Deleting:
    """A log LogManager holds for deletion (``logsToBeDeleted``): renamed ``-delete`` by
    asyncDelete, or found so named by the load (§2.3 rule 2); deleted, files and directory,
    ``file.delete.delay.ms`` after ``queued_ms`` by the ``kafka-delete-logs`` task."""

    files: PartitionFiles
    queued_ms: int


def _children(image: dict[str, bytes], directory: str) -> dict[str, bytes]:
    """Files directly inside ``directory`` (name → bytes)."""
    lead = directory.rstrip("/") + "/"
    return {p[len(lead) :]: b for p, b in image.items() if p.startswith(lead) and "/" not in p[len(lead) :]}


def _subdirs(image: dict[str, bytes], directory: str, dirs: set[str]) -> list[str]:
    lead = directory.rstrip("/") + "/"
    names = {p[len(lead) :].split("/", 1)[0] for p in image if p.startswith(lead) and "/" in p[len(lead) :]}
    names |= {d[len(lead) :] for d in dirs if d.startswith(lead) and "/" not in d[len(lead) :]}
    return sorted(names)


class LogManager:
    def __init__(
        self, data_dirs, config: Config, clock: Callable[[], int], jitter, broker_epoch: int = -1, unique_ids=None
    ):
        self.data_dirs = list(data_dirs)
        # (topic, partition, taken: dir name → bool, kind) → the unique id of a renamed dir (§2.3)
        self.unique_ids = unique_ids or random_unique_id
        self.deleting: list[Deleting] = []  # logsToBeDeleted, in the order queued
        self.delete_logs_due: int | None = None  # when the kafka-delete-logs task runs next
        self.config = config
        self.clock = clock
        self.jitter = jitter
        self.broker_epoch = broker_epoch
        self.previous_broker_epoch: int | None = None  # read from the markers at startup (§6.4)
        self.partitions: dict[tuple[str, int], PartitionFiles] = {}
        # future logs (a replica moving between data dirs, KIP-113): keyed apart from the current
        # ones, never served; checkpointed, flushed and closed with their data dir's logs
        self.futures: dict[tuple[str, int], PartitionFiles] = {}
        # logs found in -stray dirs: loaded, then held by nothing (never served, closed, checkpointed
        # or deleted: Kafka 4.4.0's LogManager.loadLog only logs them), their files as the load left them
        self.strays: list[PartitionFiles] = []
        # the partitions the metadata image no longer assigns here (KRaft's isStray at startup),
        # the directories the load found and those it set aside -stray
        self.unassigned: frozenset[tuple[str, int]] = frozenset()
        # the verification guards this broker handed to transactional produce requests since it
        # started (KIP-890), in order: a scenario names a guard by its place here
        self.guards_handed_out: list[int] = []
        self.dirs_found: set[str] = set()
        self.set_aside: set[str] = set()
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
        self.kafkas_retention: dict | None = None  # the last retention's answer as Kafka's, if not the same

    # --- the image ------------------------------------------------------------------------------

    def files(self, indexes: bool = True) -> dict[str, bytes]:
        """The image; ``indexes=False`` leaves out the live segments' index files (cheaper)."""
        out = dict(self.extra_files)
        for d, files in self.dir_files.items():
            out.update({f"{d}/{n}": b for n, b in files.items()})
        for p in self.logs_on_disk():
            out.update({f"{p.path}/{n}": b for n, b in _partition_files(p, indexes).items()})
        return out

    def mtimes(self) -> dict[str, int]:
        """Modification times of the ``.log`` files (time retention falls back to them, §4.8),
        also of those kept as found or as a failed load left them: the next start loads them."""
        out = {p: t for p, t in self.extra_mtimes.items() if p in self.extra_files}
        for p in self.logs_on_disk():
            out.update(_partition_mtimes(p))
        return out

    def directories(self) -> set[str]:
        return set(self.data_dirs) | {p.path for p in self.logs_on_disk()} | self.extra_dirs

    def logs_on_disk(self) -> list[PartitionFiles]:
        """The logs whose files the broker holds: those it serves and those it loaded but does not
        serve (a future log, a ``-delete`` dir waiting for its deletion, a ``-stray`` dir, §2.3)."""
        return [*self.partitions.values(), *self.futures.values(), *(h.files for h in self.deleting), *self.strays]

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
        log.fresh_segments = False  # getOrCreateLog's load builds its active indexes (§5.7)
        self.partitions[(topic, partition)] = PartitionFiles(log, data_dir or self.data_dirs[0])
        return log

    def logs_in(self, data_dir: str):
        """LogManager.logsInDir: the current logs of ``data_dir``, then its future logs, by partition
        (a future log in the same dir as its current one takes its place, as Kafka's map does)."""
        out = {tp: p.log for tp, p in self.partitions.items() if p.data_dir == data_dir}
        out.update({tp: p.log for tp, p in self.futures.items() if p.data_dir == data_dir})
        return sorted(out.items())

    def dir_of(self, topic: str, partition: int) -> str:
        return self.partitions[(topic, partition)].data_dir

    def tick(self) -> None:
        now = self.clock()
        for p in self.logs_on_disk():
            p.log.run_due_deletions(now)
        if self.delete_logs_due is not None and self.delete_logs_due <= now:
            self.delete_logs(now)

    def async_delete(self, topic: str, partition: int) -> str | None:
        """LogManager.asyncDelete: the log is no longer served, its directory renamed
        ``<topic>-<partition>.<unique id>-delete`` (§2.3 rule 2) and queued for deletion, then the
        recovery-point and log-start checkpoints of its data dir written without it (§6.5).  The
        new name, or None when there is no such log (an error while any dir is offline, as the log
        may be there).  The log's pending file deletions name its old directory: they delete
        nothing (LogSegment.deleteIfExists), the directory's deletion takes their files."""
        pf = self.partitions.pop((topic, partition), None)
        if pf is None:
            if self.offline:
                dirs = ",".join(sorted(self.offline))
                raise LogError(
                    "KafkaStorageException",
                    f"Failed to delete log for {topic}-{partition} because it may be in one of the offline directories {dirs}",
                )
            return None
        on_disk = self.directories()
        taken = lambda name: any(f"{d}/{name}" in on_disk for d in self.data_dirs)  # noqa: E731
        pf.dir_name = log_delete_dir_name(topic, partition, self.unique_ids(topic, partition, taken))
        pf.log.delete_tasks, pf.log.snapshot_delete_tasks = [], []
        self.deleting.append(Deleting(pf, self.clock()))
        self.checkpoint_recovery_points(pf.data_dir)
        self.checkpoint_log_start_offsets(pf.data_dir)
        return pf.dir_name

    def current_dir_of(self, topic: str, partition: int) -> str | None:
        """The data dir of the partition's current log, or None."""
        pf = self.partitions.get((topic, partition))
        return pf.data_dir if pf else None

    def future_dir_of(self, topic: str, partition: int) -> str | None:
        """The data dir of the partition's future log, or None."""
        pf = self.futures.get((topic, partition))
        return pf.data_dir if pf else None

    def replace_current_with_future(self, topic: str, partition: int) -> str:
        """LogManager.replaceCurrentWithFutureLog (KIP-113): the future log's directory renamed to
        the partition's own name in its data dir (the dir fsynced) and served in place of the
        current log; then the current log's directory renamed ``-delete`` (§2.3 rule 2), the log
        closed (UnifiedLog.close: a producer snapshot, indexes trimmed), its data dir's checkpoints
        written without it and the log queued for deletion.  The ``-delete`` name.  Pending file
        deletions of both logs name their old directories and delete nothing."""
        tp = (topic, partition)
        if tp not in self.partitions:
            raise LogError("KafkaStorageException", f"The current replica for {topic}-{partition} is offline")
        if tp not in self.futures:
            raise LogError("KafkaStorageException", f"The future replica for {topic}-{partition} is offline")
        dest, source = self.futures.pop(tp), self.partitions.pop(tp)
        dest.dir_name = ""
        dest.log.delete_tasks, dest.log.snapshot_delete_tasks = [], []
        self.partitions[tp] = dest
        on_disk = self.directories() | {source.path}
        taken = lambda name: any(f"{d}/{name}" in on_disk for d in self.data_dirs)  # noqa: E731
        source.dir_name = log_delete_dir_name(topic, partition, self.unique_ids(topic, partition, taken))
        source.log.delete_tasks, source.log.snapshot_delete_tasks = [], []
        source.log.close()
        self.checkpoint_recovery_points(source.data_dir)
        self.checkpoint_log_start_offsets(source.data_dir)
        self.deleting.append(Deleting(source, self.clock()))
        return source.dir_name

    def delete_logs(self, now: int) -> None:
        """The ``kafka-delete-logs`` task (LogManager.deleteLogs): every queued log whose
        ``file.delete.delay.ms`` (the broker's) has passed is deleted, directory and all, oldest
        first; then it runs again when the next is due, or after the delay (at least 1 ms) when
        none is queued.  A log whose data dir went offline is not deleted (UnifiedLog.delete
        refuses; the task logs it): its files stay."""
        delay = self.config.file_delete_delay_ms
        while self.deleting and self.deleting[0].queued_ms + delay <= now:
            gone = self.deleting.pop(0).files
            if gone.data_dir in self.offline:
                self.extra_dirs.add(gone.path)
                self.extra_files.update({f"{gone.path}/{n}": b for n, b in _partition_files(gone).items()})
                self.extra_mtimes.update(_partition_mtimes(gone))
        self.delete_logs_due = now + (self.deleting[0].queued_ms + delay - now if self.deleting else max(delay, 1))

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
        for (t, _), p in [*self.partitions.items(), *self.futures.items()]:  # logsByTopic: future logs too
            if t == topic:
                p.log.config = self.config.updated(overrides)

    def retention(self) -> int:
        """One pass of the retention task (LogManager.cleanupLogs): ``deleteOldSegments`` on every
        log, in (topic, partition) order; the number of segments deleted.  Sets
        :attr:`kafkas_retention`: Kafka's count where a damaged final time-index entry makes it
        differ (KAFKA-10207), else None."""
        # a future log's old segments go right after its current log's (cleanupLogs)
        logs = [x for tp, p in sorted(self.partitions.items()) for x in (p, self.futures.get(tp)) if x]
        counts = [(p.log.delete_old_segments(), p.log.kafkas_deleted) for p in logs]
        ours = sum(n for n, _ in counts)
        if any(k == REFUSED_ROLL for _, k in counts):  # cleanupLogs stops at the log whose roll throws
            self.kafkas_retention = {"error": REFUSED_ROLL}
            return ours
        kafkas = sum(n if k is None else k for n, k in counts)
        self.kafkas_retention = None if kafkas == ours else {"deleted": kafkas}
        return ours

    def expire_producers(self) -> int:
        """Every log's producer expiration check at the clock's time, a current log then its future
        log: the number of producers forgotten."""
        logs = [x for tp, p in sorted(self.partitions.items()) for x in (p, self.futures.get(tp)) if x]
        return sum(p.log.producer_state.remove_expired(p.log.clock()) for p in logs)

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
        self.delete_logs_due = None  # so is kafka-delete-logs: a queued log's dir stays for the next load
        # delayed deletions are dropped; their files stay
        for p in [*self.partitions.values(), *self.futures.values(), *self.strays]:
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
                self.dir_files[d][MARKER] = clean_shutdown.content(self.broker_epoch)
                outcome[d] = None
            else:
                outcome[d] = "not every partition finished loading: no clean-shutdown marker (KAFKA-15375)"
        for d in self.data_dirs:  # the dir locks destroyed last, whatever each dir's outcome (§6.3)
            self.dir_files[d].pop(LOCK, None)
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
    unique_ids=None,
    unassigned=frozenset(),
) -> LogManager:
    """The broker's startup on ``image`` (``mtimes``: modification times of its files, 0 where not
    given): a new LogManager holding every loadable partition.  Under Kafka's failure policy a
    partition that failed to load sets ``startup_error``: the startup failed, the broker is down.
    ``unique_ids``: where the unique ids of renamed directories come from (§2.3; random as Kafka's).
    ``unassigned``: the (topic, partition)s the metadata image no longer assigns to this broker,
    whose logs the load sets aside ``-stray`` (KRaft's ``isStray``)."""
    manager = _load(
        image, data_dirs, config, clock, jitter, directories, broker_epoch, mtimes, failure_policy,
        unique_ids or random_unique_id, frozenset(unassigned),
    )  # fmt: skip
    if failure_policy == "kafka":
        manager.startup_error = next((o.error for o in manager.outcomes if o.error and o.fatal), None)
    if manager.startup_error is None:  # LogManager.startup schedules kafka-delete-logs with no delay
        manager.delete_logs(clock())
        if failure_policy == "kafka":
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
            if (dd, sub) == (d, name):  # listed in its place: data dir, then name order
                manager.outcomes.append(LoadOutcome(d, name, None, None, f"{d}/{name}: {e}"))
                continue
            try:
                topic, partition, _ = parse_topic_partition(sub)
            except Exception as e:  # reported too: an operator fixes them all before a restart
                if sub != "remote-log-index-cache":
                    manager.outcomes.append(LoadOutcome(dd, sub, None, None, f"{dd}/{sub}: {e}"))
                continue
            if topic != "__cluster_metadata":
                manager.outcomes.append(LoadOutcome(dd, sub, topic, partition, f"{dd}/{sub}: {why}", fatal=False))


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
        manager.dir_files[d].pop(LOCK, None)  # handleLogDirFailure destroys the dir's lock
        # the current logs of the dir (its future logs below: a future log's current one, in
        # another dir, stays served)
        for tp in [tp for tp, p in manager.partitions.items() if p.data_dir == d]:
            pf = manager.partitions.pop(tp)
            path = f"{d}/{pf.log.name}"
            manager.extra_dirs.add(path)
            manager.extra_files.update({f"{path}/{n}": b for n, b in _partition_files(pf).items()})
            manager.extra_mtimes.update({p: t for p, t in _partition_mtimes(pf).items()})
        for tp in [tp for tp, p in manager.futures.items() if p.data_dir == d]:
            _keep_loaded(manager, manager.futures.pop(tp))
        for stray in [p for p in manager.strays if p.data_dir == d]:
            manager.strays.remove(stray)
            _keep_loaded(manager, stray)
        for gone in [h for h in manager.deleting if h.files.data_dir == d]:  # closed, not deleted
            manager.deleting.remove(gone)
            manager.extra_dirs.add(gone.files.path)
            manager.extra_files.update({f"{gone.files.path}/{n}": b for n, b in _partition_files(gone.files).items()})
            manager.extra_mtimes.update(_partition_mtimes(gone.files))
        for o in manager.outcomes:
            if o.data_dir == d and not o.error:
                o.error = f"{d}/{o.name}: log dir {d} offline ({why})"


def _keep_loaded(manager: LogManager, pf: PartitionFiles) -> None:
    """A loaded log whose data dir went offline: no longer held, its files stay as they are."""
    manager.extra_dirs.add(pf.path)
    manager.extra_files.update({f"{pf.path}/{n}": b for n, b in _partition_files(pf).items()})
    manager.extra_mtimes.update(_partition_mtimes(pf))


def _load(
    image, data_dirs, config: Config, clock, jitter, directories, broker_epoch, mtimes, policy, unique_ids, unassigned
) -> LogManager:
    manager = LogManager(data_dirs, config, clock, jitter, broker_epoch, unique_ids)
    manager.unassigned = unassigned
    dirs = set(directories)
    manager.dirs_found = dirs
    inside = lambda p: any(p.startswith(d.rstrip("/") + "/") or p == d for d in data_dirs)  # noqa: E731
    manager.extra_files = {p: b for p, b in image.items() if not inside(p)}
    manager.found_mtimes = dict(mtimes or {})
    # BrokerServer reads the markers' broker epoch before the load deletes them (§6.4, KIP-966)
    manager.previous_broker_epoch = clean_shutdown.previous_broker_epoch(
        [_children(image, d).get(MARKER) for d in data_dirs]
    )
    for d in data_dirs:
        found = _open_dir(manager, image, d)
        bad = _unparseable(_subdirs(image, d, dirs)) if policy == "kafka" else None
        if bad is not None:
            _abort_startup(manager, image, dirs, d, bad)
            return _locked(manager, image, dirs)
        ok = True
        for name in _subdirs(image, d, dirs):
            ok = _load_subdir(manager, image, dirs, d, name, found) and ok
        manager.load_completed[d] = ok
    return _locked(manager, image, dirs)


def _locked(manager: LogManager, image, dirs: set[str]) -> LogManager:
    """Every data dir holding its ``.lock``, as LogManager's constructor left it before the load
    (§6.1): created empty where missing, a stale one's bytes kept (the open does not truncate).  A
    ``.lock`` that is a directory cannot be opened, but it is also a partition dir Kafka cannot name,
    which fails the startup first (§2.3): it stays as found."""
    for d in manager.data_dirs:
        if LOCK not in _subdirs(image, d, dirs):
            manager.dir_files.setdefault(d, {}).setdefault(LOCK, b"")
    return manager


@attrs.define
class _DirFound:
    """What a data dir's startup read before its partitions load (§6.2 steps 2–4)."""

    had_marker: bool
    recovery_points: dict
    log_starts: dict
    bad_checkpoints: bool  # either checkpoint unreadable (read as an empty map)


def _open_dir(manager: LogManager, image, d: str) -> _DirFound:
    """§6.2 steps 2–4 on data dir ``d``: the clean-shutdown marker read and deleted at once
    (KAFKA-10471), the two checkpoints created if missing (§6.1 item 4) and read."""
    files = _children(image, d)
    had_marker = MARKER in files
    files.pop(MARKER, None)
    manager.had_marker[d] = had_marker
    for name in (RECOVERY_POINTS, LOG_STARTS):
        files.setdefault(name, b"")
    manager.dir_files[d] = files
    recovery_points = _read_offsets(manager, d, files[RECOVERY_POINTS], f"{d}/{RECOVERY_POINTS}")
    log_starts = _read_offsets(manager, d, files[LOG_STARTS], f"{d}/{LOG_STARTS}")
    bad_checkpoints = None in (recovery_points, log_starts)
    return _DirFound(had_marker, recovery_points or {}, log_starts or {}, bad_checkpoints)


def _load_subdir(manager: LogManager, image, dirs: set[str], d: str, name: str, found: _DirFound) -> bool:
    """One directory of data dir ``d``: a partition's loaded, others kept as found (the remote
    index cache, the metadata log, a name that is no partition's, §2.3); False if it failed."""
    path = f"{d}/{name}"
    if name == "remote-log-index-cache":
        _keep(manager, image, path, dirs)
        return True
    try:
        topic, partition, kind = parse_topic_partition(name)
    except Exception as e:
        manager.outcomes.append(LoadOutcome(d, name, None, None, f"{path}: {e}"))
        _keep(manager, image, path, dirs)
        return False
    if topic == "__cluster_metadata":
        _keep(manager, image, path, dirs)
        return True
    outcome = LoadOutcome(d, name, topic, partition, None, kind=kind)
    outcome.took(CLEAN_LOAD if found.had_marker else "6.2 no marker: unclean load")
    if found.bad_checkpoints:
        outcome.took("6.2.3 checkpoint unreadable: empty map")
    try:
        _load_log(manager, image, d, topic, partition, found, outcome)
        ok = True
    except (PartitionLoadError, LogError, IndexFailure, RecordFormatError) as e:
        _failed(manager, image, dirs, path, outcome, e)
        ok = False
    manager.outcomes.append(outcome)
    return ok


def _load_log(manager: LogManager, image, d: str, topic: str, partition: int, found: _DirFound, outcome) -> None:
    """LogManager.loadLog: the partition's directory loaded (:mod:`model.loader`) into the manager."""
    path = f"{d}/{outcome.name}"
    pf = load_partition(
        _children(image, path), path, topic, partition, manager.config, manager.clock, manager.jitter,
        found.had_marker, found.recovery_points.get((topic, partition), 0),
        found.log_starts.get((topic, partition), 0), outcome, manager.found_mtimes,
    )  # fmt: skip
    if d in manager.queued_offline and pf.log.producer_state.unstable_after_load():
        # UnifiedLog's constructor turns the first unstable offset into offset metadata
        # by a read, which an offline dir refuses (docs/producer-state.md rule 61)
        raise PartitionLoadError(
            path,
            f"KafkaStorageException: The log dir {d} is already offline due to a previous IO exception",
        )
    pf.data_dir = d
    if outcome.kind in ("", "future") and (topic, partition) in manager.unassigned:
        _set_aside(manager, pf, outcome)
        return
    # loadLog makes the log (its load runs whole), then refuses a second one (IllegalStateException)
    if (topic, partition) in manager.partitions and outcome.kind == "":
        raise PartitionLoadError(path, f"Duplicate log directories for {topic}-{partition}")
    if (topic, partition) in manager.futures and outcome.kind == "future":
        other = manager.futures[(topic, partition)].path
        raise PartitionLoadError(path, f"Duplicate log directories found: {path}, {other}")
    if outcome.kind:
        pf.dir_name = outcome.name
    if outcome.kind == "delete":  # loaded, then queued for deletion, never served (§2.3, §6.2 step 6)
        manager.deleting.append(Deleting(pf, manager.clock()))
    elif outcome.kind == "future":  # the partition's future log (KIP-113), keyed apart
        manager.futures[(topic, partition)] = pf
    elif outcome.kind == "stray":  # loaded and logged, then held by nothing (Kafka 4.4.0's loadLog)
        manager.strays.append(pf)
    else:
        manager.partitions[(topic, partition)] = pf
    outcome.written, outcome.files_now, outcome.log_now = {}, None, None  # only a failure needs them


def _set_aside(manager: LogManager, pf, outcome: LoadOutcome) -> None:
    """KRaft's ``isStray`` holds for a loaded current or future log (its partition unassigned):
    Kafka 4.4.0's loadLog renames its directory ``<topic>-<partition>.<id>-stray`` (§2.3 rule 2,
    ``renameDir``: atomicMoveWithFallback, the data dir fsynced) and registers it nowhere, before the
    duplicate checks; the load lists it under that name, as a ``-stray`` dir it found."""
    topic, partition = pf.log.topic, pf.log.partition
    held = manager.dirs_found | manager.set_aside
    taken = lambda name: any(f"{d}/{name}" in held for d in manager.data_dirs)  # noqa: E731
    pf.dir_name = log_dir_name_with_suffix(topic, partition, manager.unique_ids(topic, partition, taken, "stray"), "stray")
    manager.set_aside.add(pf.path)
    outcome.name, outcome.kind = pf.dir_name, "stray"
    # the load's pending file deletions (a split's originals, renamed .deleted) name the old
    # directory: they delete nothing, and the files stay in the -stray dir (as after a -delete or
    # a future replica's promotion)
    pf.log.delete_tasks, pf.log.snapshot_delete_tasks = [], []
    manager.strays.append(pf)
    outcome.written, outcome.files_now, outcome.log_now = {}, None, None


def _failed(manager: LogManager, image, dirs: set[str], path: str, outcome: LoadOutcome, e: Exception) -> None:
    """A partition whose load failed: an I/O error queues its data dir offline (§6.6), any other
    fails the startup under Kafka's policy; its files are kept as the load left them."""
    outcome.error = str(e)
    if isinstance(e, DirQueuedOffline):
        outcome.fatal = False
        manager.queued_offline.setdefault(outcome.data_dir, str(e))
    outcome.took("load failed")
    key = (outcome.topic, outcome.partition)
    if key not in manager.partitions:
        manager.failed[key] = outcome.error
    _keep_failed(manager, image, path, dirs, outcome)


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
        if indexes and not s.deleted and not s.indexes_unmade:
            out[f"{prefix(s.base_offset)}.index"] = s.offset_index.file_bytes()
            out[f"{prefix(s.base_offset)}.timeindex"] = s.time_index.file_bytes()
        if s.txn_index.exists and not s.deleted:  # a file once its first entry is written (§3.7)
            out[f"{prefix(s.base_offset)}.txnindex"] = s.txn_index.data
    for s in log.cleaned_left.values():
        out.update(_cleaned_files(s, indexes))
    return out


def _cleaned_files(s, indexes: bool) -> dict[str, bytes]:
    """The files of a failed round's new segment (``Log.cleaned_left``): its ``.log.cleaned``, and
    its lazy indexes once its first append made them (``LogSegment.append`` reads both), preallocated
    as the round left them."""
    name = prefix(s.base_offset)
    out = {f"{name}.log.cleaned": bytes(s.log)}
    if indexes and s.size:
        out[f"{name}.index.cleaned"] = s.offset_index.file_bytes()
        out[f"{name}.timeindex.cleaned"] = s.time_index.file_bytes()
    if s.txn_index.exists:
        out[f"{name}.txnindex.cleaned"] = s.txn_index.data
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


def _read_offsets(manager: LogManager, data_dir: str, data: bytes, path: str) -> dict | None:
    """§6.2 steps 3–4: any failure → an empty map (None: tell the caller); an IOException also
    queues the data dir offline (CheckpointFileWithFailureHandler, §6.5 rule 6)."""
    try:
        return parse_offsets(data, path)
    except CheckpointError as e:
        if e.kind == IO:
            manager.queued_offline.setdefault(data_dir, str(e))
        return None
