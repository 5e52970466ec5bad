"""impl as a target: :mod:`impl.log_manager` on the simulated storage (crash images, operation
traces) or on real files under a temp dir."""

from __future__ import annotations

import _thread
import contextlib
import copy
import functools
import os
import shutil
import tempfile
import threading

import impl.errors
import impl.log
import impl.log_manager
from conformance import scenario as sc
from conformance.crash_images import Fault, crash_image, journal
from conformance.index_files import is_index_file
from conformance.schedule import RACE_POINTS, START_POINT, Scheduler
from conformance.sim_storage import SimStorage, Truncate, Unlink, Write
from conformance.targets import TargetBase, partition_state
from conformance.tracing import Op, TracingStorage
from impl.config import LogConfig
from impl.storage import OsStorage
from impl.sync_points import sync_point
from model.indexes import OffsetIndex, file_entries


class ImplTarget(TargetBase):
    @staticmethod
    def refusals():
        # looked up at call time: a mutant stack (conformance.log_checks) replaces impl.log
        return (impl.log.LogError, impl.errors.IndexFailure, impl.errors.LogFormatError)

    def __init__(self, scenario: sc.Scenario, backend: str = "sim", root: str | None = None):
        super().__init__(scenario)
        self.name = f"impl/{backend}"
        self.backend = backend
        self.config = LogConfig.from_dict(scenario.config)
        if backend == "sim":
            self.root = "/kafka"
            self.storage = SimStorage(clock=self.clock)
            self.storage.make_dirs(self.root)
            self.storage.fsync_dir("/")
        elif backend == "os":
            self._tmp = root is None
            self.root = root or tempfile.mkdtemp(prefix="klc-")
            self.storage = OsStorage()
        else:
            raise ValueError(f"unknown backend {backend!r} (sim or os)")
        self.raw_storage = self.storage
        self.storage = TracingStorage(self.storage)
        self.trace = self.storage.trace
        self.manager: impl.log_manager.LogManager | None = None
        self.load_stats = None
        self.last_reports = []  # impl.loader results of the last open (tests read their reports)

    def durable_view(self):
        return (self.raw_storage, self.root) if self.backend == "sim" else None

    def apply(self, step: sc.Step) -> dict:
        mark = len(self.trace)
        try:
            return super().apply(step)
        finally:
            if self.backend == "os":
                self._stamp(self.trace[mark:])

    def _run_race(self, step: sc.Race) -> list[dict]:
        """One thread per step, interleaved at impl's sync points as ``step.schedule`` says."""

        def thread(s: sc.Step) -> dict:
            sync_point(START_POINT)
            return self._one(s)

        before = self._constructions()
        try:
            return Scheduler(step.schedule, RACE_POINTS).run([functools.partial(thread, s) for s in step.steps])
        finally:
            self.built_twice = sorted(
                path for key, (path, n) in self._constructions().items() if n - before.get(key, (path, 0))[1] > 1
            )

    def _constructions(self) -> dict[int, tuple[str, int]]:
        """Every live segment's lazy indexes: how often each was built (impl.index.LazyIndex)."""
        out = {}
        for log in self.manager.logs.values():
            for segment in log.segments:
                for lazy in (segment.offset_index, segment.time_index):
                    out[id(lazy)] = (lazy.path.removeprefix(self.root + "/"), lazy.constructions)
        return out

    def _stamp(self, ops) -> None:
        """Real files get the wall clock as modification time; give them the scenario's clock, as
        the simulated backend does (time retention falls back to it, spec §4.8)."""
        for path in {op.path for op in ops if op.name in ("write", "truncate", "create")}:
            if self.raw_storage.exists(path):
                self.raw_storage.set_mtime_ms(path, self.clock())

    def _dirs(self) -> list[str]:
        return [f"{self.root}/{d}" for d in self.dir_names]

    def tail_bytes(self) -> int:
        """What Kafka's loader must read of a cleanly shut down log: each partition's active segment
        from its last offset-index entry to the end (readNextOffset, spec §4.5 rule 3)."""
        files = self.files()
        total = 0
        for d in {p.rsplit("/", 1)[0] for p in files if p.endswith(".log")}:
            logs = sorted(p for p in files if p.startswith(d + "/") and p.endswith(".log"))
            index = logs[-1][: -len(".log")] + ".index"
            data = files.get(index, b"")
            slot = OffsetIndex.ENTRY_SIZE
            whole = len(data) // slot * slot  # only the last slot: an index may be megabytes
            entries = file_entries(index, data[max(0, whole - slot) : whole])
            position = entries[-1][1] if entries else 0
            total += max(0, len(files[logs[-1]]) - position)
        return total

    def _open(self) -> list[dict]:
        self.manager = impl.log_manager.LogManager(
            self.storage, self._dirs(), self.config, self.clock, self.jitter,
            failure_policy=self.scenario.failure_policy, unique_ids=self.unique_ids,
            unassigned=frozenset(self.unassigned),
        )  # fmt: skip
        tail = self.tail_bytes()
        before = self.storage.stats.snapshot()
        loads = self.last_reports = self.manager.startup()
        after = self.storage.stats
        self.load_stats = {
            "log_bytes_read": after.log_bytes_read - before.log_bytes_read,
            "producer_state_bytes_read": after.producer_state_bytes_read - before.producer_state_bytes_read,
            "bytes_read": after.bytes_read - before.bytes_read,
            "index_bytes_read": after.index_bytes_read - before.index_bytes_read,
            "tail_bytes": tail,
            # KAFKA-7283 (§7.3): a load opens no index of an inactive segment, it waits for first use
            "inactive_indexes_opened": [
                index.path.removeprefix(self.root + "/")
                for log in self.manager.logs.values()
                for segment in log.segments[:-1]
                for index in (segment.offset_index, segment.time_index)
                if index.is_materialised
            ],
        }
        return [
            {
                "dir": load.data_dir.removeprefix(self.root + "/"),
                "partition": load.name,
                "error": load.error and load.error.replace(self.root + "/", ""),
                "recovered": load.report.recovered_segments if load.report else [],
            }
            | ({"kind": load.kind} if load.kind else {})
            for load in loads
            # the directories the load left (a -delete dir may be gone already: ModelTarget._open)
            if load.kind != "delete" or self.storage.is_dir(f"{load.data_dir}/{load.name}")
        ]

    def _started(self) -> bool:
        return self.manager.startup_error is None

    def _startup_failed(self) -> None:
        self._close_handles()  # what the loads opened goes with the process
        super()._startup_failed()

    def _shutdown(self):
        return {d.removeprefix(self.root + "/"): why is None for d, why in self.manager.shutdown().items()}

    def _tick(self):
        self.manager.tick()

    def halt(self) -> None:
        if self.running and self.manager:
            self._close_handles()
        elif self.backend == "os":
            self.raw_storage.close_all()
        super().halt()

    def _close_handles(self) -> None:
        if self.backend == "os":
            for log in self.manager.held_logs():
                log.close_handlers()
            self.raw_storage.close_all()

    def arm(self, at: int | None, failure=None) -> None:
        if failure is None:
            self.storage.arm(at)
        else:
            self.storage.arm(at, failure)

    def image(self, fault=None) -> tuple[dict, list, dict]:
        """(files, directories, mtimes) relative to the root: what ``fault`` leaves (sim backend),
        or the files as they are (no fault)."""
        lead = self.root + "/"
        if self.backend == "sim":
            img = crash_image(self.raw_storage, fault or Fault("process"))
            files, dirs, mtimes = img.files, img.directories, img.mtimes
        else:
            files = {lead + p: b for p, b in self.files().items()}
            dirs = [dp for dp, _, _ in os.walk(self.root)]
            mtimes = {p: self.raw_storage.mtime_ms(p) for p in files}
        rel = lambda p: p[len(lead) :]  # noqa: E731
        return (
            {rel(p): b for p, b in files.items() if p.startswith(lead)},
            sorted(rel(d) for d in dirs if d.startswith(lead)),
            {rel(p): ms for p, ms in mtimes.items() if p.startswith(lead)},
        )

    def pending_operations(self) -> tuple[list[tuple[object, object]], dict[int, str]]:
        """The simulated backend's operations not yet durable, in order (owner, operation), and the
        path of every file by its inode's id."""
        return journal(self.raw_storage), {id(node): name for name, node in self.raw_storage.inodes()}

    def restore(self, files, directories, mtimes):
        self.halt()
        lead = self.root + "/"
        if self.backend == "sim":
            storage = SimStorage.from_image(
                {lead + p: b for p, b in files.items()},
                [self.root] + [lead + d for d in directories],
                self.clock,
                {lead + p: ms for p, ms in mtimes.items()},
            )
        else:
            shutil.rmtree(self.root, ignore_errors=True)
            os.makedirs(self.root)
            for d in directories:
                os.makedirs(lead + d, exist_ok=True)
            for p, data in files.items():
                with open(lead + p, "wb") as f:
                    f.write(data)
            storage = OsStorage()
            for p, ms in mtimes.items():
                storage.set_mtime_ms(lead + p, ms)
        self.raw_storage = storage
        self.storage = TracingStorage(storage, self.trace)

    def _segment_bytes(self):
        if not self.running:
            return {}
        out = {}
        for (topic, partition), log in self.manager.logs.items():
            d = self.manager._dir_of[(topic, partition)].removeprefix(self.root + "/")
            out[f"{d}/{topic}-{partition}"] = [bytes(s.view()) for s in log.segments]
        return out

    def _call(self, step):
        return step.call(self.manager, self._dirs())

    def state(self) -> dict:
        if not self.running:
            return {"running": False}
        parts = {}
        for (topic, partition), log in sorted(self.manager.logs.items()):
            segs = [(s.base_offset, s.size, bytes(s.view())) for s in log.segments]
            d = self.manager._dir_of[(topic, partition)].removeprefix(self.root + "/")
            parts[f"{d}/{topic}-{partition}"] = partition_state(
                log.log_start_offset, log.log_end_offset, log.recovery_point, segs, log.epoch_cache.entries,
                log.producer_state.producers.values(),
            )  # fmt: skip
        return {"running": True, "partitions": parts}

    def files(self, indexes: bool = True) -> dict[str, bytes]:
        out = {}
        if self.backend == "sim":
            for path, data in self.raw_storage.image().items():
                if path.startswith(self.root + "/") and (indexes or not is_index_file(path)):
                    out[path[len(self.root) + 1 :]] = bytes(data)
            return out
        for dirpath, _dirs, names in os.walk(self.root):
            for name in names:
                if not indexes and is_index_file(name):  # preallocated slots, never compared
                    continue
                full = os.path.join(dirpath, name)
                with open(full, "rb") as f:
                    out[os.path.relpath(full, self.root)] = f.read()
        return out

    def index_entries(self) -> dict:
        out = {}
        if not self.running:
            return out
        for (topic, partition), log in self.manager.logs.items():
            d = self.manager._dir_of[(topic, partition)].removeprefix(self.root + "/")
            segments = log.segments
            for i, s in enumerate(segments):
                if s.offset_index.is_materialised and s.time_index.is_materialised:
                    # the entries its lookups use: the shadow's where the index files proved unsound
                    # (the files stay Kafka's, compared with the model's by conforms) — after a crash
                    # that lost a .log's size but kept its time index, an inactive segment's entry
                    # lies past the end of its log for Kafka and impl alike
                    # (corpora/crash/time-entry-past-a-log-a-crash-emptied.json); for a segment no
                    # lookup used yet, those its proof on first use will give
                    out[f"{d}/{topic}-{partition}/{s.base_offset}"] = (
                        *s.prospective_lookup_entries(),
                        bytes(s.view()),
                        i == len(segments) - 1,
                        segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset,
                    )
        return out

    def close(self) -> None:
        if self.running and self.manager:
            for log in self.manager.logs.values():
                log.close_handlers()
        if self.backend == "os":
            self.raw_storage.close_all()
        if self.backend == "os" and self._tmp:
            shutil.rmtree(self.root, ignore_errors=True)


def forked(target: ImplTarget) -> ImplTarget:
    """A deep copy of an impl target on the simulated backend — its log manager, its indexes'
    mappings and its storage with every pending operation — to run a step on without touching the
    original.  Locks are made anew; a mapping is a view of the copied file's bytes."""
    if target.backend != "sim":
        raise ValueError("only a target on the simulated backend can be forked")
    with _forking():
        return copy.deepcopy(target)


def _copy_view(view: memoryview, memo: dict) -> memoryview:
    try:
        underlying = view.obj
    except ValueError:  # released (an unmapped index): a released view again
        released = memoryview(b"")
        released.release()
        return released
    if not isinstance(underlying, bytearray) or view.nbytes != len(underlying) or view.format != "B":
        raise TypeError("cannot fork a view of part of a buffer")
    return memoryview(copy.deepcopy(underlying, memo))


@contextlib.contextmanager
def _forking():
    """copy.deepcopy taught locks and whole-file views, while a fork is made."""
    dispatch = copy._deepcopy_dispatch  # noqa: SLF001 - the documented hook is per class, these are builtins
    added = {_thread.LockType: lambda lock, memo: threading.Lock(), memoryview: _copy_view}
    # values that never change (frozen, no reference to a file or a directory): shared, not copied —
    # a fork's journal and trace hold hundreds of them
    added.update(dict.fromkeys((Op, Write, Truncate, Unlink), lambda value, memo: value))
    saved = {k: dispatch[k] for k in added if k in dispatch}
    dispatch.update(added)
    try:
        yield
    finally:
        for k in added:
            dispatch.pop(k, None)
        dispatch.update(saved)
