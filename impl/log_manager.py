"""LogManager: several data dirs, startup (load), checkpoints, graceful shutdown and the
clean-shutdown marker (spec §6.1–§6.5).

Startup, per data dir: the marker is deleted as soon as it is seen (KAFKA-10471), both offset
checkpoints are read (an unreadable one counts as empty), and every partition directory is loaded.
What a partition that cannot be loaded costs is the failure policy (docs/scenario-format.md):

* ``kafka`` (Kafka's, the default): every partition's load runs, then a load that failed with
  anything but an I/O error — or a directory whose name is not a partition name — fails the startup
  (``startup_error``; §6.2 step 7); an I/O error takes the partition's data dir offline once its
  loads are done (§6.6 item 3).
* ``isolate`` (better for operators; DESIGN.md ``isolated``): such a partition or directory is
  reported with the file and reason and left out, every other partition loads.  Its data dir is not
  certified clean at the next shutdown (no marker), so its partitions are recovered next time.

Partitions of one data dir load in parallel on ``num.recovery.threads.per.data.dir`` threads (§6.2;
default 1) when the storage declares itself thread-safe (``thread_safe`` on its class: the real
backend does; the simulated one, whose journal orders every operation of every file for crash
images, does not, and neither does the tracing wrapper, so conformance runs stay sequential).
Only ``PartitionLoader.load`` runs on the workers; everything a load decides at the dir level —
duplicate partitions, ``logs``/``failed`` updates, the loader's delayed deletions — happens on the
calling thread, partition by partition in directory order, so the outcome is the same as with one
thread.

Shutdown, per data dir: flush every log through its log end offset (even an empty active segment,
KAFKA-13603), close it, then write the recovery-point and log-start-offset checkpoints, and only
then the marker — only if the dir had one at startup or finished loading (KAFKA-15375).
"""

from __future__ import annotations

import errno
import random
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import attrs

from impl import clean_shutdown
from impl.checkpoints import CheckpointError, read_offsets, write_offsets
from impl.config import LogConfig
from impl.errors import IndexFailure, LogError, LogFormatError
from impl.index import TimeIndex
from impl.leader_epoch import LeaderEpochCache
from impl.loader import LoadError, LoadReport, PartitionLoader
from impl.log import STORAGE_ERROR, PartitionLog, Scheduler, storage_errors
from impl.names import log_delete_dir_name, log_stray_dir_name, parse_topic_partition
from impl.segment import LogSegment, filename_prefix
from impl.storage import Storage

MARKER = clean_shutdown.MARKER
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LOCK = ".lock"  # LogManager's dir lock: made at startup, deleted by its destroy (KAFKA-16391)
IGNORED_DIRS = ("remote-log-index-cache",)
METADATA_TOPIC = "__cluster_metadata"


@attrs.define
class PartitionLoad:
    """One partition directory's load: the log, or the error that left it out."""

    data_dir: str
    name: str
    topic: str | None
    partition: int | None
    log: PartitionLog | None
    error: str | None
    report: LoadReport | None = None
    # the error is one Kafka rethrows out of its startup (not an I/O error, which offlines the dir)
    fatal: bool = False
    kind: str = ""  # the directory's suffix (§2.3): "", "delete", "future" or "stray"


@attrs.define
class Deleting:
    """A log held for deletion (LogManager's ``logsToBeDeleted``): its ``-delete`` directory goes
    ``file.delete.delay.ms`` after ``queued_ms``."""

    log: PartitionLog
    data_dir: str
    path: str
    queued_ms: int


@attrs.define
class DataDirState:
    path: str
    had_clean_shutdown: bool = False
    load_completed: bool = False
    offline: bool = False
    queued_offline: str | None = None  # the I/O error that queued it offline during the load (§6.6)
    warnings: list[str] = attrs.Factory(list)


@attrs.frozen
class _Loaded:
    """What one partition's load produced, before the manager registers it."""

    name: str
    topic: str
    partition: int
    loader: PartitionLoader
    log: PartitionLog | None
    error: str | None
    io_error: bool = False  # the load failed on storage (Kafka: IOException, KafkaStorageException)


class _StartupAborted(Exception):
    """A data dir holds a directory whose name Kafka cannot parse (the kafka failure policy)."""

    def __init__(self, bad: PartitionLoad):
        self.bad = bad
        super().__init__(bad.error)


def _in_order(futures: list[Future]) -> Iterator[_Loaded]:
    """The results of finished futures in order; an exception is raised when its turn comes, and
    then (or if the caller stops early) the logs loaded behind it are closed, never registered."""
    for i, future in enumerate(futures):
        try:
            yield future.result()
        except BaseException:
            for later in futures[i + 1 :]:
                if later.exception() is None and later.result().log is not None:
                    later.result().log.close_handlers()
            raise


def _random_jitter(_partition: str, _base: int) -> int:
    return random.getrandbits(31)


def _random_unique_id(_topic: str, _partition: int, _taken, _kind: str = "delete") -> str:
    return uuid.uuid4().hex  # Kafka's: a random UUID, dashes removed (§2.3)


class LogManager:
    def __init__(
        self,
        storage: Storage,
        data_dirs: list[str],
        config: LogConfig,
        clock: Callable[[], int],
        jitter: Callable[[str, int], int] = _random_jitter,
        topic_configs: dict[str, LogConfig] | None = None,
        broker_epoch: int = -1,
        failure_policy: str = "kafka",
        unique_ids: Callable[..., str] = _random_unique_id,
        unassigned: frozenset[tuple[str, int]] = frozenset(),
    ):
        self.storage = storage
        self.unique_ids = unique_ids  # (topic, partition, taken: dir name → bool, kind) → a renamed dir's id
        # the partitions the metadata image no longer assigns here: KRaft's isStray at startup
        self.unassigned = unassigned
        # the verification guards handed to transactional produce requests since startup (KIP-890)
        self.guards_handed_out: list[int] = []
        self.deleting: list[Deleting] = []  # logsToBeDeleted, oldest first
        self.delete_logs_due: int | None = None  # the next run of the kafka-delete-logs task
        self.data_dirs = list(data_dirs)
        self.config = config
        self.topic_configs = topic_configs or {}
        self.clock = clock
        self.jitter = jitter
        self.broker_epoch = broker_epoch
        self.previous_broker_epoch: int | None = None  # read from the markers at startup (§6.4)
        self.scheduler = Scheduler()
        self.dirs = {d: DataDirState(d) for d in self.data_dirs}
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self._dir_of: dict[tuple[str, int], str] = {}
        # future logs (KIP-113: a replica moving between data dirs), keyed apart and never served;
        # checkpointed, flushed and closed with their data dir's logs
        self.futures: dict[tuple[str, int], PartitionLog] = {}
        self._future_dir_of: dict[tuple[str, int], str] = {}
        # logs of -stray dirs: loaded, then held by nothing (Kafka 4.4.0's loadLog only logs them)
        self.strays: list[tuple[str, PartitionLog]] = []  # (data dir, log)
        self.failed: dict[tuple[str, int], str] = {}  # partitions whose load failed → why
        self.loads: list[PartitionLoad] = []
        self.failure_policy = failure_policy
        self.locked: set[str] = set()  # the data dirs whose .lock this startup holds (dirLocks)
        self.startup_error: str | None = None  # why the startup failed (the kafka policy), or None
        # a load looked at and not served (klc load): each log's files are closed once it is loaded,
        # so the descriptors held stay those of the loads in flight, whatever the partition count
        # (Kafka keeps every segment's .log open; a dir of 10^5 partitions needs 10^5 descriptors)
        self.close_after_load = False

    def config_for(self, topic: str) -> LogConfig:
        return self.topic_configs.get(topic, self.config)

    # --- startup (§6.1, §6.2) --------------------------------------------------------------------

    def _ensure_checkpoint_files(self, data_dir: str) -> None:
        for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT):
            path = f"{data_dir}/{name}"
            if not self.storage.exists(path):
                self.storage.open(path, create=True).close()

    def _read_checkpoint(self, state: DataDirState, name: str) -> dict:
        try:
            return read_offsets(self.storage, f"{state.path}/{name}")
        except Exception as e:  # §6.2 steps 3–4: any failure → empty map (recover everything)
            state.warnings.append(f"{state.path}/{name}: {e}; using an empty map")
            if isinstance(e, OSError) or getattr(e, "kind", None) == "IOException":  # §6.5 rule 6
                state.queued_offline = state.queued_offline or f"{state.path}/{name}: {e}"
            return {}

    def startup(self) -> list[PartitionLoad]:
        loads = []
        live = []
        for data_dir in self.data_dirs:
            try:
                if not self.storage.exists(data_dir):  # §6.1: created, and its parent fsynced
                    self.storage.make_dirs(data_dir)
                    self.storage.fsync_dir(data_dir.rsplit("/", 1)[0] or "/")
                self._ensure_checkpoint_files(data_dir)
                live.append(data_dir)
            except OSError as e:
                loads.append(self._offline(data_dir, e))
        for data_dir in live:
            self._lock(data_dir)
        # BrokerServer reads the markers' broker epoch before the load deletes them (§6.4, KIP-966)
        self.previous_broker_epoch = self._read_broker_epoch(live)
        for i, data_dir in enumerate(live):
            try:
                loads += self._load_dir(self.dirs[data_dir])
            except OSError as e:  # the marker could not be deleted, the dir not listed: offline
                loads.append(self._offline(data_dir, e))
                self._unlock(data_dir)
            except _StartupAborted as e:
                self.loads = loads + self._not_loaded(live[i:], e.bad)
                self.startup_error = e.bad.error
                return self.loads
        self.loads = loads
        if self.failure_policy == "kafka":
            self.startup_error = next((load.error for load in loads if load.fatal), None)
        if self.startup_error is None:  # LogManager.startup runs kafka-delete-logs at once (no initial delay)
            self.delete_logs()
            if self.failure_policy == "kafka":
                self._take_offline(loads)
        return loads

    def _lock(self, data_dir: str) -> None:
        """lockLogDirs (§6.1): ``.lock`` opened, created where missing (a stale one's bytes kept).
        One that cannot be opened queues the dir offline; one that is a directory is also a
        partition dir no name parses, which fails the startup first (§2.3)."""
        path = f"{data_dir}/{LOCK}"
        try:
            if self.storage.is_dir(path):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            if not self.storage.exists(path):
                self.storage.open(path, create=True).close()
            self.locked.add(data_dir)
        except OSError as e:
            state = self.dirs[data_dir]
            state.queued_offline = state.queued_offline or f"Disk error while locking directory {data_dir}: {e}"

    def _unlock(self, data_dir: str) -> None:
        """FileLock.destroy of a dir this startup locked: the lock file deleted, a failure ignored
        (``File.delete``'s false)."""
        if data_dir not in self.locked:
            return
        self.locked.discard(data_dir)
        path = f"{data_dir}/{LOCK}"
        try:
            if self.storage.exists(path):
                self.storage.unlink(path)
        except OSError:
            pass

    def _read_broker_epoch(self, live: list[str]) -> int | None:
        """LogManager.readBrokerEpochFromCleanShutdownFiles: none unless every data dir is live
        and each marker gives one (a marker that cannot be read gives none)."""
        if len(live) < len(self.data_dirs):
            return None
        epochs = []
        for data_dir in live:
            try:
                data = self.storage.read_small(f"{data_dir}/{MARKER}", clean_shutdown.READ_LIMIT)
            except OSError:  # none, or unreadable: Kafka's read fails alike
                return None
            epochs.append(clean_shutdown.read_broker_epoch(data))
        return clean_shutdown.combined(epochs)

    def _not_loaded(self, data_dirs: list[str], bad: PartitionLoad) -> list[PartitionLoad]:
        """The entries of a startup aborted at ``bad``: every partition of its dir and of the later
        ones, ``bad`` among them, none loaded (their files as found, later dirs' markers kept)."""
        out = []
        why = f"not loaded: the startup failed at {bad.data_dir}/{bad.name}"
        for data_dir in data_dirs:
            for name in self.storage.list_dir(data_dir):
                path = f"{data_dir}/{name}"
                if (data_dir, name) == (bad.data_dir, bad.name):  # in its place: data dir, then name order
                    out.append(bad)
                    continue
                if name in IGNORED_DIRS:
                    continue
                if not self.storage.is_dir(path):
                    continue
                try:
                    topic, partition, _kind = parse_topic_partition(name)
                except Exception as e:  # reported too: an operator fixes them all before a restart
                    out.append(PartitionLoad(data_dir, name, None, None, None, f"{path}: {e}", fatal=True))
                    continue
                if topic != METADATA_TOPIC:
                    out.append(PartitionLoad(data_dir, name, topic, partition, None, f"{path}: {why}"))
        return out

    def _take_offline(self, loads: list[PartitionLoad]) -> None:
        """The log-dir failure handler after the load (§6.6 item 2): each data dir an I/O error
        queued offline stops serving its logs, closed without a flush.  The first data dir holds the
        broker's metadata log (KRaft's default ``metadata.log.dir``): its failure halts the broker,
        as does losing the last live dir."""
        for d in self.data_dirs:
            state = self.dirs[d]
            if state.queued_offline is None or state.offline:
                continue
            if d == self.data_dirs[0] or all(self.dirs[x].offline for x in self.data_dirs if x != d):
                self.startup_error = f"log dir {d} failed ({state.queued_offline}): the broker halts"
                return
            state.offline = True
            self._unlock(d)  # handleLogDirFailure destroys the dir's lock
            for load in loads:
                if load.data_dir == d and load.log is not None:
                    self.logs.pop((load.topic, load.partition)).close_handlers()
                    del self._dir_of[(load.topic, load.partition)]
                    load.log = None
                    load.error = f"{d}/{load.name}: log dir {d} offline ({state.queued_offline})"
                elif load.data_dir == d and load.error is None and load.kind in ("future", "stray"):
                    load.error = f"{d}/{load.name}: log dir {d} offline ({state.queued_offline})"
            self._drop_held_in(d)

    def _offline(self, data_dir: str, e: OSError) -> PartitionLoad:
        """§6.6: an I/O error outside any one partition takes the whole data dir offline."""
        state = self.dirs[data_dir]
        state.offline = True
        state.load_completed = False
        for tp in [tp for tp, d in self._dir_of.items() if d == data_dir]:
            self.logs.pop(tp).close_handlers()
            del self._dir_of[tp]
        self._drop_held_in(data_dir)
        where = e.filename or data_dir
        return PartitionLoad(data_dir, "", None, None, None, f"{where}: {e.strerror or e}; log dir {data_dir} offline")

    def _drop_held_in(self, data_dir: str) -> None:
        """A data dir gone offline: its future and stray logs closed and no longer held."""
        for tp in [tp for tp, d in self._future_dir_of.items() if d == data_dir]:
            self.futures.pop(tp).close_handlers()
            del self._future_dir_of[tp]
        for held in [s for s in self.strays if s[0] == data_dir]:
            self.strays.remove(held)
            held[1].close_handlers()

    def recovery_threads(self) -> int:
        """Threads loading one dir's partitions: the config's, or 1 where the storage is not
        declared thread-safe (see the module docstring)."""
        if not getattr(type(self.storage), "thread_safe", False):
            return 1
        return self.config.num_recovery_threads_per_data_dir

    def _load_dir(self, state: DataDirState) -> list[PartitionLoad]:
        marker = f"{state.path}/{MARKER}"
        state.had_clean_shutdown = self.storage.exists(marker)
        if state.had_clean_shutdown:
            self.storage.unlink(marker)  # at once, before any log is loaded (KAFKA-10471)
            # Better than Kafka, which does not fsync the dir here: a power loss later in the load
            # could bring the marker back over indexes the load already resized to full size, and
            # the next start would skip recovery and take them as full (KAFKA-10471's mechanism).
            self.storage.fsync_dir(state.path)
        recovery_points = self._read_checkpoint(state, RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint(state, LOG_START_OFFSET_CHECKPOINT)
        entries: list[PartitionLoad | tuple[str, str, int]] = []  # in directory order
        kinds: dict[str, str] = {}  # name → its suffix (§2.3)
        names, dirs = self.storage.scan_dir(state.path)  # one read of the dir, no stat each
        for name in names:
            path = f"{state.path}/{name}"
            if name not in dirs or name in IGNORED_DIRS:
                continue
            try:
                topic, partition, kind = parse_topic_partition(name)
            except Exception as e:  # Kafka: a KafkaException out of loadLogs (fatal, §2.3)
                entries.append(PartitionLoad(state.path, name, None, None, None, f"{path}: {e}", fatal=True))
                continue
            if topic == METADATA_TOPIC:
                continue
            kinds[name] = kind
            entries.append((name, topic, partition))
        bad = next((e for e in entries if isinstance(e, PartitionLoad)), None)
        if bad is not None and self.failure_policy == "kafka":
            # Kafka parses every name before it submits a load: the KafkaException leaves loadLogs
            # with nothing of this dir loaded (§2.3, §6.2 step 5)
            raise _StartupAborted(bad)
        jobs = [e for e in entries if isinstance(e, tuple)]

        def load(job: tuple[str, str, int]) -> _Loaded:
            return self._load_partition(state, *job, recovery_points, log_starts)

        threads = min(self.recovery_threads(), len(jobs))
        loaded = self._parallel(load, jobs, threads) if threads > 1 else (load(job) for job in jobs)
        loads = []
        for entry in entries:
            loads.append(entry if isinstance(entry, PartitionLoad) else self._register(state, next(loaded), kinds))
        state.load_completed = all(load.error is None for load in loads)
        io_failed = next((load for load in loads if load.error and not load.fatal), None)
        if io_failed is not None:  # §6.6 item 3: the dir is queued offline once its loads are done
            state.queued_offline = state.queued_offline or io_failed.error
        return loads

    def _parallel(self, load, jobs: list, threads: int) -> Iterator[_Loaded]:
        """``load`` of every job on ``threads`` workers; the results in job order.  All jobs run to
        the end (a failure in one loses none of the others); an exception a job raised — any
        ``BaseException``, a simulated power loss too — is raised when its turn comes, after the
        logs of the jobs behind it are closed (they are not registered, as with one thread)."""
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="klc-recovery") as pool:
            futures: list[Future] = [pool.submit(load, job) for job in jobs]
        return _in_order(futures)

    def _load_partition(self, state, name, topic, partition, recovery_points, log_starts) -> _Loaded:
        """One partition's ``PartitionLoader.load`` (on a worker thread when loading in parallel):
        touches nothing of this manager's state."""
        path = f"{state.path}/{name}"
        tp = (topic, partition)
        loader = PartitionLoader(
            self.storage,
            path,
            topic,
            partition,
            self.config_for(topic),
            self.clock,
            self.jitter,
            self.scheduler,
            state.had_clean_shutdown,
            recovery_points.get(tp, 0),
            log_starts.get(tp, 0),
        )
        try:
            return _Loaded(name, topic, partition, loader, loader.load(), None)
        except OSError as e:
            return _Loaded(name, topic, partition, loader, None, str(e), io_error=True)
        except LogError as e:
            return _Loaded(name, topic, partition, loader, None, str(e), io_error=e.kind == STORAGE_ERROR)
        except CheckpointError as e:  # the leader-epoch checkpoint, read as the epoch cache is built
            return _Loaded(name, topic, partition, loader, None, str(e), io_error=e.kind == "IOException")
        except (LoadError, LogFormatError, IndexFailure, ValueError) as e:
            return _Loaded(name, topic, partition, loader, None, str(e))
        finally:
            if self.close_after_load:
                loader.close_handlers()

    def _taken(self, name: str) -> bool:
        """Whether a directory of this name is in any data dir: a renamed dir's id must be new (§2.3)."""
        return any(self.storage.exists(f"{d}/{name}") for d in self.data_dirs)

    def _set_aside(self, state: DataDirState, loaded: _Loaded) -> PartitionLoad:
        """KRaft's isStray holds for a loaded current or future log (its partition unassigned):
        loadLog renames its directory ``<topic>-<partition>.<id>-stray`` (atomicMoveWithFallback,
        the data dir fsynced) and holds it nowhere, before any duplicate check (Kafka 4.4.0)."""
        topic, partition, log = loaded.topic, loaded.partition, loaded.log
        name = log_stray_dir_name(topic, partition, self.unique_ids(topic, partition, self._taken, "stray"))
        path = f"{state.path}/{name}"
        self.storage.rename(log.dir, path)
        self.storage.fsync_dir(state.path)
        log.moved_to(path)
        self.strays.append((state.path, log))
        return PartitionLoad(state.path, name, topic, partition, None, None, loaded.loader.report, kind="stray")

    def _register(self, state: DataDirState, loaded: _Loaded, kinds: dict[str, str]) -> PartitionLoad:
        """On the calling thread, in directory order: the load's delayed deletions queued, the log
        registered — or refused as a duplicate, or the partition remembered as failed."""
        name, topic, partition, loader, log = loaded.name, loaded.topic, loaded.partition, loaded.loader, loaded.log
        path = f"{state.path}/{name}"
        tp = (topic, partition)
        self.scheduler.adopt(loader.deferred)
        if loaded.error is not None and loaded.io_error:  # Kafka's failure channel: at once
            state.queued_offline = state.queued_offline or loaded.error
        if loaded.error is None and state.queued_offline is not None and log.producer_state.unstable_after_load():
            # UnifiedLog's constructor reads to turn the first unstable offset into offset metadata,
            # which a dir already offline refuses
            log.close_handlers()
            error = f"{path}: KafkaStorageException: The log dir {state.path} is already offline due to a previous IO exception"
            loaded = attrs.evolve(loaded, log=None, error=error)
        if loaded.error is not None:
            if tp not in self.logs:
                self.failed[tp] = loaded.error
            return PartitionLoad(
                state.path, name, topic, partition, None, loaded.error, loader.report, fatal=not loaded.io_error,
                kind=kinds[name],
            )  # fmt: skip
        kind = kinds[name]
        if kind in ("", "future") and tp in self.unassigned:
            return self._set_aside(state, loaded)
        if kind == "delete":  # loaded, then queued for deletion, never served (§2.3, §6.2 step 6)
            self.deleting.append(Deleting(log, state.path, path, self.clock()))
            return PartitionLoad(state.path, name, topic, partition, None, None, loader.report, kind="delete")
        if kind == "stray":  # loaded and logged, then held by nothing: never served, closed or deleted
            self.strays.append((state.path, log))
            return PartitionLoad(state.path, name, topic, partition, None, None, loader.report, kind="stray")
        if kind == "future":  # the partition's future log, keyed apart from its current one (KIP-113)
            if tp in self.futures:
                log.close_handlers()
                other = f"{self._future_dir_of[tp]}/{self.futures[tp].dir.rsplit('/', 1)[-1]}"
                return PartitionLoad(
                    state.path, name, topic, partition, None,
                    f"Duplicate log directories found: {path}, {other}", loader.report, fatal=True, kind="future",
                )  # fmt: skip
            self.futures[tp] = log
            self._future_dir_of[tp] = state.path
            return PartitionLoad(state.path, name, topic, partition, None, None, loader.report, kind="future")
        if tp in self.logs:
            log.close_handlers()
            other = self._dir_of[tp]
            return PartitionLoad(
                state.path,
                name,
                topic,
                partition,
                None,
                f"Duplicate log directories for {topic}-{partition} are found in both {other} and {path}",
                loader.report,
                fatal=True,  # IllegalStateException (§6.2 step 6)
            )
        self.logs[tp] = log
        self._dir_of[tp] = state.path
        return PartitionLoad(state.path, name, topic, partition, log, None, loader.report)

    # --- logs ----------------------------------------------------------------------------------

    @storage_errors
    def create_log(self, topic: str, partition: int, data_dir: str | None = None) -> PartitionLog:
        """getOrCreateLog: a new partition directory with one empty segment at offset 0."""
        tp = (topic, partition)
        if tp in self.logs:
            return self.logs[tp]
        offline = sorted(d for d, state in self.dirs.items() if state.offline)
        if offline:  # getOrCreateLog (§6.6): no new log while any dir is offline
            raise LogError(
                "KafkaStorageException",
                f"Can not create log for {topic}-{partition}: log dirs {','.join(offline)} are offline",
            )
        if tp in self.failed:
            # Kafka would have offlined the whole dir (§6.6); we refuse just this partition
            raise LogError(
                "KafkaStorageException",
                f"{topic}-{partition} failed to load and is kept as found until the next start ({self.failed[tp]})",
            )
        data_dir = data_dir or self.data_dirs[0]
        parse_topic_partition(f"{topic}-{partition}")
        path = f"{data_dir}/{topic}-{partition}"
        config = self.config_for(topic)
        if config.segment_index_bytes < TimeIndex.ENTRY_SIZE:
            # Kafka's load ends by resizing the new segment's indexes (§5.7), which materialises the
            # time index: a max size below one entry is refused (IllegalArgumentException) before
            # the partition exists; our indexes are lazy, so the check is made here, up front
            raise IndexFailure(
                "IllegalArgumentException",
                "invalid-max-index-size",
                f"Invalid max index size: {config.segment_index_bytes}",
                f"{path}/{filename_prefix(0)}.timeindex",
            )
        self.storage.make_dirs(path)
        epoch_cache = LeaderEpochCache(self.storage, path)
        bound = config.jitter_bound()
        jitter = self.jitter(f"{topic}-{partition}", 0) % bound if bound else 0
        segment = LogSegment(self.storage, path, 0, config, self.clock(), jitter, preallocate=config.preallocate)
        # getOrCreateLog runs LogLoader.load on the new directory, which ends by resizing the active
        # segment's indexes (§5.7): both are built, their files made — visible once the log is
        # deleted, as its -delete dir is never closed (corpora/log/delete-dir-of-a-new-log.json)
        segment.resize_indexes(config.segment_index_bytes)
        log = PartitionLog(
            self.storage,
            path,
            topic,
            partition,
            config,
            self.clock,
            self.jitter,
            self.scheduler,
            [segment],
            0,
            0,
            0,
            epoch_cache,
        )
        self.logs[tp] = log
        self._dir_of[tp] = data_dir
        return log

    def log(self, topic: str, partition: int) -> PartitionLog:
        try:
            return self.logs[(topic, partition)]
        except KeyError:
            raise LogError("UnknownTopicOrPartitionException", f"{topic}-{partition} has no log") from None

    def logs_in(self, data_dir: str) -> list[tuple[tuple[str, int], PartitionLog]]:
        """LogManager.logsInDir: the dir's current logs, then its future logs by partition (a future
        log beside its current one in the same dir takes its place, as Kafka's map does)."""
        out = {tp: log for tp, log in self.logs.items() if self._dir_of[tp] == data_dir}
        out.update({tp: log for tp, log in self.futures.items() if self._future_dir_of[tp] == data_dir})
        return sorted(out.items())

    def held_logs(self) -> list[PartitionLog]:
        """Every log whose files the broker holds open: current, future, queued for deletion, stray."""
        deleting, strays = [d.log for d in self.deleting], [log for _, log in self.strays]
        return [*self.logs.values(), *self.futures.values(), *deleting, *strays]

    @storage_errors
    def tick(self) -> int:
        """Run the delayed tasks (file deletions) whose time has come, then kafka-delete-logs if due."""
        ran = self.scheduler.run_due(self.clock())
        if self.delete_logs_due is not None and self.delete_logs_due <= self.clock():
            failed = self.delete_logs()
            if failed is not None:  # the step reports it: the broker's failure handler is not run here
                raise failed
        return ran

    @storage_errors
    def async_delete(self, topic: str, partition: int) -> str | None:
        """LogManager.asyncDelete (§2.3 rule 2): the log leaves the served logs, its directory is
        renamed ``<topic>-<partition>.<unique id>-delete`` (atomicMoveWithFallback: the data dir
        fsynced), then its data dir's recovery-point and log-start checkpoints are written without it
        (§6.5) and it is queued for deletion.  The new name; None when there is no such log (an error
        while a dir is offline, which may hold it).  The log stays open until it is deleted; its
        pending file deletions name its old directory and delete nothing (deleteIfExists)."""
        tp = (topic, partition)
        log = self.logs.get(tp)
        if log is None:
            offline = sorted(d for d, state in self.dirs.items() if state.offline)
            if offline:
                raise LogError(
                    "KafkaStorageException",
                    f"Failed to delete log for {topic}-{partition} because it may be in one of the offline "
                    f"directories {','.join(offline)}",
                )
            return None
        data_dir = self._dir_of[tp]
        name = log_delete_dir_name(topic, partition, self.unique_ids(topic, partition, self._taken))
        del self.logs[tp], self._dir_of[tp]
        path = f"{data_dir}/{name}"
        self.storage.rename(log.dir, path)
        self.storage.fsync_dir(data_dir)
        self.deleting.append(Deleting(log, data_dir, path, self.clock()))
        self.checkpoint_recovery_points(data_dir)
        self.checkpoint_log_start_offsets(data_dir)
        return name

    def current_dir_of(self, topic: str, partition: int) -> str | None:
        """The data dir of the partition's current log, or None."""
        return self._dir_of.get((topic, partition))

    def future_dir_of(self, topic: str, partition: int) -> str | None:
        """The data dir of the partition's future log, or None."""
        return self._future_dir_of.get((topic, partition))

    @storage_errors
    def replace_current_with_future(self, topic: str, partition: int) -> str:
        """LogManager.replaceCurrentWithFutureLog (KIP-113): the future log's directory renamed to
        the partition's own name (atomicMoveWithFallback: its data dir fsynced) and served in place
        of the current log; then the current log's directory renamed ``-delete`` (§2.3 rule 2), the
        log closed (a producer snapshot, indexes trimmed), its data dir's checkpoints written
        without it, and the log queued for deletion.  The ``-delete`` name."""
        tp = (topic, partition)
        if tp not in self.logs:
            raise LogError("KafkaStorageException", f"The current replica for {topic}-{partition} is offline")
        if tp not in self.futures:
            raise LogError("KafkaStorageException", f"The future replica for {topic}-{partition} is offline")
        dest, dest_dir = self.futures[tp], self._future_dir_of[tp]
        source, source_dir = self.logs[tp], self._dir_of[tp]
        path = f"{dest_dir}/{topic}-{partition}"
        self.storage.rename(dest.dir, path)
        self.storage.fsync_dir(dest_dir)
        dest.moved_to(path)
        del self.futures[tp], self._future_dir_of[tp]
        self.logs[tp], self._dir_of[tp] = dest, dest_dir

        name = log_delete_dir_name(topic, partition, self.unique_ids(topic, partition, self._taken))
        gone = f"{source_dir}/{name}"
        self.storage.rename(source.dir, gone)
        self.storage.fsync_dir(source_dir)
        source.moved_to(gone)
        source.close()
        self.checkpoint_recovery_points(source_dir)
        self.checkpoint_log_start_offsets(source_dir)
        self.deleting.append(Deleting(source, source_dir, gone, self.clock()))
        return name

    def delete_logs(self) -> OSError | None:
        """The ``kafka-delete-logs`` task (LogManager.deleteLogs): each queued log whose
        ``file.delete.delay.ms`` (the broker's) has passed is deleted, oldest first — its files, then
        its directory (UnifiedLog.delete; a log in a dir gone offline is refused and kept) — and the
        task runs again when the next is due, or after the delay (at least 1 ms) when none is queued.
        An I/O error deleting one queues its data dir offline and the task goes on (the task catches
        the KafkaStorageException); the first such error is returned."""
        now, delay = self.clock(), self.config.file_delete_delay_ms
        failed = None
        while self.deleting and self.deleting[0].queued_ms + delay <= now:
            gone = self.deleting.pop(0)
            state = self.dirs[gone.data_dir]
            if state.offline:
                continue
            try:
                self._delete_dir(gone)
            except OSError as e:  # UnifiedLog.delete: the dir queued offline (§6.6), the task goes on
                failed = failed or e
                state.queued_offline = state.queued_offline or f"{e.filename or gone.path}: {e.strerror or e}"
        self.delete_logs_due = now + (self.deleting[0].queued_ms + delay - now if self.deleting else max(delay, 1))
        return failed

    def _delete_dir(self, gone: Deleting) -> None:
        """UnifiedLog.delete: the log's files closed and deleted, then its (now empty) directory."""
        gone.log.close_handlers()
        for name in self.storage.list_dir(gone.path):
            self.storage.unlink(f"{gone.path}/{name}")
        self.storage.remove_dir(gone.path)

    @storage_errors
    def truncate_to(self, topic: str, partition: int, offset: int) -> bool:
        truncated = self.log(topic, partition).truncate_to(offset)
        if truncated:
            self.checkpoint_recovery_points(self._dir_of[(topic, partition)])
        return truncated

    @storage_errors
    def truncate_fully_and_start_at(self, topic: str, partition: int, offset: int) -> None:
        self.log(topic, partition).truncate_fully_and_start_at(offset)
        self.checkpoint_recovery_points(self._dir_of[(topic, partition)])

    # --- checkpoints (§6.5) ------------------------------------------------------------------------

    @storage_errors
    def checkpoint_recovery_points(self, data_dir: str | None = None) -> None:
        for d in [data_dir] if data_dir else [d for d in self.data_dirs if not self.dirs[d].offline]:
            entries = {tp: log.recovery_point for tp, log in self.logs_in(d)}
            write_offsets(self.storage, f"{d}/{RECOVERY_POINT_CHECKPOINT}", entries)

    @storage_errors
    def checkpoint_log_start_offsets(self, data_dir: str | None = None) -> None:
        """Only logs whose start offset is above their first segment's base are written (§6.3 b)."""
        for d in [data_dir] if data_dir else [d for d in self.data_dirs if not self.dirs[d].offline]:
            entries = {
                tp: log.log_start_offset
                for tp, log in self.logs_in(d)
                if log.log_start_offset > log.segments[0].base_offset
            }
            write_offsets(self.storage, f"{d}/{LOG_START_OFFSET_CHECKPOINT}", entries)

    def update_topic_config(self, topic: str, overrides: dict) -> None:
        """LogManager.updateTopicConfig: UnifiedLog.updateConfig on every log of ``topic``, the
        broker's config with ``overrides`` in force; its segments keep what they were created with."""
        for (t, _), log in [*self.logs.items(), *self.futures.items()]:  # logsByTopic: future logs too
            if t == topic:
                log.config = self.config.updated(overrides)

    @storage_errors
    def retention(self) -> int:
        """cleanupLogs: deleteOldSegments on each current log, then on its future log if any."""
        logs = [x for tp, log in sorted(self.logs.items()) for x in (log, self.futures.get(tp)) if x]
        return sum(log.delete_old_segments() for log in logs)

    def expire_producers(self) -> int:
        """Each log's PeriodicProducerExpirationCheck, a current log then its future log."""
        logs = [x for tp, log in sorted(self.logs.items()) for x in (log, self.futures.get(tp)) if x]
        return sum(log.producer_state.remove_expired(log.clock()) for log in logs)

    # --- shutdown (§6.3, §6.4) ------------------------------------------------------------------------

    def write_marker(self, data_dir: str) -> None:
        f = self.storage.open(f"{data_dir}/{MARKER}", create=True)
        try:
            f.truncate(0)
            f.write_at(0, clean_shutdown.marker_content(self.broker_epoch))
            f.fsync()
        finally:
            f.close()

    def shutdown(self) -> dict[str, str | None]:
        """Returns, per data dir, None if it shut down cleanly (marker written) or why not."""
        outcome = {}
        self.scheduler.drop_all()
        self.delete_logs_due = None  # kafka-delete-logs too: a queued log's directory stays for the next load
        for d in self.data_dirs:
            state = self.dirs[d]
            if state.offline:
                outcome[d] = f"{d} is offline"
                continue
            try:
                failed = None
                for _, log in self.logs_in(d):
                    log.flush(log.log_end_offset, inclusive=True)
                    try:
                        log.close()
                    except IndexFailure as e:  # a close job of its own fails; the others run (§6.3)
                        failed = failed or e
                if failed:
                    raise failed
                self.checkpoint_recovery_points(d)
                self.checkpoint_log_start_offsets(d)
            except (OSError, IndexFailure, LogFormatError, LogError) as e:
                outcome[d] = f"shutdown of {d} failed: {e}"  # no checkpoints, no marker
                continue
            if state.had_clean_shutdown or state.load_completed:
                try:
                    self.write_marker(d)
                except OSError as e:
                    outcome[d] = f"shutdown of {d} failed: {e}"
                    continue
                outcome[d] = None
            else:
                outcome[d] = "not every partition finished loading: no clean-shutdown marker (KAFKA-15375)"
        for d in self.data_dirs:  # the dir locks destroyed last, whatever each dir's outcome (§6.3)
            self._unlock(d)
        self.logs.clear()
        self.futures.clear()
        return outcome
