"""The two things a scenario runs against: the model, and impl on a storage backend.

Both expose the same small surface to :mod:`conformance.runner`: ``apply(step)`` returns a JSON-able
result (``{"error": kind}`` when Kafka would refuse the operation), ``state()`` the logical log of
every partition, ``files()`` the data dirs' files (paths relative to the target's root), and
``index_entries()`` the logical index entries of every live segment (with its bytes, whether it is
the active one, and its end offset: the next segment's base, or the log end offset).  Each target
owns its clock (advanced only by ``tick``) and gets the same deterministic jitter source.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import struct
import tempfile
import zlib

import impl.errors
import impl.log
import impl.log_manager
import model.errors
import model.log
import model.log_manager
from conformance import scenario as sc
from conformance.crash_images import Fault, crash_image
from conformance.schedule import RACE_POINTS, START_POINT, Scheduler
from conformance.sim_storage import SimStorage
from conformance.tracing import TracingStorage
from impl.config import LogConfig
from impl.storage import OsStorage
from impl.sync_points import sync_point
from model.config import Config
from model.file_records import iterate_file

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


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


def is_index_file(path: str) -> bool:
    name = path.removesuffix(".deleted").removesuffix(".swap").removesuffix(".cleaned")
    return name.endswith(INDEX_SUFFIXES)


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


def appended(ranges) -> dict:
    """An ``append`` step's result from its requests' (first, last) offsets, taken in order: the
    first request's first offset and the last one's last.  A refusal stops the step there."""
    ranges = list(ranges)
    return {"first": ranges[0][0], "last": ranges[-1][1]}


class NotRunning(Exception):
    pass


def _partition_state(log_start, log_end, recovery_point, segments, epochs) -> dict:
    return {
        "log_start_offset": log_start,
        "log_end_offset": log_end,
        "recovery_point": recovery_point,
        "segments": [[base, size, digest(data)] for base, size, data in segments],
        "epochs": [list(e) for e in epochs],
    }


class _Target:
    name = "?"

    def __init__(self, scenario: sc.Scenario):
        self.scenario = scenario
        self.clock = Clock(scenario.clock_start_ms)
        self.jitter = jitter_source(scenario.jitter_seed)
        self.dir_names = [f"d{i}" for i in range(scenario.data_dirs)]
        self.running = False
        self.last_load: list[dict] = []
        self.trace = None  # the storage operation trace (impl targets)
        self.built_twice: list[str] = []  # lazy indexes the last race built twice (impl targets)

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
        if isinstance(step, sc.Tick):
            self.clock.now += step.ms
            if self.running:
                try:
                    self._tick()
                except self.refusals() as e:
                    return {"error": getattr(e, "kind", type(e).__name__)}
            return {}
        if isinstance(step, sc.Open):
            if self.running:
                return {"error": "AlreadyRunning"}
            self.last_load = self._open()
            self.running = True
            return {"loaded": self.last_load}
        if not self.running:
            return {"error": "NotRunning"}
        if isinstance(step, sc.Shutdown):
            self.running = False
            return {"shutdown": self._shutdown()}
        if isinstance(step, sc.Race):
            return self._race(step)
        return self._one(step)

    def _one(self, step: sc.Step) -> dict:
        try:
            return self._apply(step)
        except self.refusals() as e:
            return {"error": getattr(e, "kind", type(e).__name__)}

    def _race(self, step: sc.Race) -> dict:
        """A ``race`` (:class:`conformance.scenario.Race`): ``{"race": [result per thread]}``.  A
        read beside a writer must lie at or below the log end offset as the race starts, or its
        answer (data or OffsetOutOfRange) would depend on the schedule: the race is then refused
        as a whole, before any thread runs."""
        self.built_twice = []
        writers = {(s.topic, s.partition) for s in step.steps if isinstance(s, sc.RACE_WRITERS)}
        for s in step.steps:
            if isinstance(s, sc.Read) and (s.topic, s.partition) in writers:
                try:
                    end = self.log_end_offset(s.topic, s.partition)
                except self.refusals():
                    continue  # no such partition: every thread is refused alike
                if max(s.offset, s.max_offset) > end:
                    return {"error": "RaceDependsOnSchedule"}
        return {"race": self._run_race(step)}

    def log_end_offset(self, topic: str, partition: int) -> int:
        return self.manager.log(topic, partition).log_end_offset

    def _run_race(self, step: sc.Race) -> list[dict]:
        """The model has no threads: one step after another (they commute, so any order will do)."""
        return [self._one(s) for s in step.steps]


class ModelTarget(_Target):
    name = "model"

    @staticmethod
    def refusals():
        return (model.log.LogError, model.errors.IndexFailure, model.errors.RecordFormatError)

    def __init__(self, scenario: sc.Scenario):
        super().__init__(scenario)
        self.config = Config.of(scenario.config)
        self.image: dict[str, bytes] = {}
        self.mtimes: dict[str, int] = {}
        self.directories: set[str] = set()
        self.manager: model.log_manager.LogManager | None = None

    def _open(self) -> list[dict]:
        self.manager = model.log_manager.load(
            self.image, self.dir_names, self.config, self.clock, self.jitter, self.directories, mtimes=self.mtimes
        )
        return [
            {"dir": o.data_dir, "partition": o.name, "error": o.error, "recovered": o.recovered}
            for o in self.manager.outcomes
        ]

    def _shutdown(self):
        outcome = {d: why is None for d, why in self.manager.shutdown().items()}
        self.image = self.manager.files()
        self.mtimes = self.manager.mtimes()
        self.directories = self.manager.directories()
        return outcome

    def _tick(self):
        self.manager.tick()

    def restore(self, files, directories, mtimes):
        self.halt()
        self.image = dict(files)
        self.directories = set(directories)
        self.mtimes = {p: ms for p, ms in mtimes.items() if p.endswith((".log", ".log.deleted", ".log.swap"))}

    def _segment_bytes(self):
        if not self.running:
            return {}
        return {
            f"{p.data_dir}/{topic}-{partition}": [bytes(s.log) for s in p.log.segments]
            for (topic, partition), p in self.manager.partitions.items()
        }

    def _apply(self, step):
        m = self.manager
        if isinstance(step, sc.Create):
            m.create_log(step.topic, step.partition, self.dir_names[step.dir % len(self.dir_names)])
            return {}
        if isinstance(step, sc.Retention):
            return {
                "deleted": sum(
                    log.delete_old_segments() for _, log in sorted((tp, p.log) for tp, p in m.partitions.items())
                )
            }
        if isinstance(step, sc.Checkpoint):
            m.checkpoint_recovery_points()
            m.checkpoint_log_start_offsets()
            return {}
        log = m.log(step.topic, step.partition)
        if isinstance(step, sc.Append):
            return appended(log.append(data, step.leader, step.leader_epoch) for data in sc.append_requests(step))
        if isinstance(step, sc.Roll):
            return {"base": log.roll().base}
        if isinstance(step, sc.Read):
            return {"bytes": log.read(step.offset, step.max_bytes, step.max_offset, step.min_one_message).hex()}
        if isinstance(step, sc.OffsetForTimestamp):
            found = log.offset_for_timestamp(step.timestamp)
            return {"found": list(found) if found else None}
        if isinstance(step, sc.Truncate):
            truncated = log.truncate_to(step.offset)
            if truncated:
                m.checkpoint_recovery_points(m.dir_of(step.topic, step.partition))
            return {"truncated": truncated}
        if isinstance(step, sc.TruncateFully):
            log.truncate_fully_and_start_at(step.offset)
            m.checkpoint_recovery_points(m.dir_of(step.topic, step.partition))
            return {}
        if isinstance(step, sc.DeleteRecords):
            return {"log_start_offset": log.delete_records(step.offset)}
        if isinstance(step, sc.Flush):
            log.flush(step.offset)
            return {}
        if isinstance(step, sc.Clean):
            return log.clean()
        raise AssertionError(step)

    def state(self) -> dict:
        if not self.running:
            return {"running": False}
        parts = {}
        for (topic, partition), p in sorted(self.manager.partitions.items()):
            log = p.log
            segs = [(s.base, s.size, bytes(s.log)) for s in log.segments]
            parts[f"{p.data_dir}/{topic}-{partition}"] = _partition_state(
                log.log_start_offset, log.log_end_offset, log.recovery_point, segs, log.epochs
            )
        return {"running": True, "partitions": parts}

    def files(self, indexes: bool = True) -> dict[str, bytes]:
        return dict(self.manager.files(indexes)) if self.running else dict(self.image)

    def index_entries(self) -> dict:
        out = {}
        if not self.running:
            return out
        for (topic, partition), p in self.manager.partitions.items():
            for i, s in enumerate(p.log.segments):
                out[f"{p.data_dir}/{topic}-{partition}/{s.base}"] = (
                    s.offset_index.logical_entries(),
                    s.time_index.logical_entries(),
                    bytes(s.log),
                    i == len(p.log.segments) - 1,
                    p.log.segments[i + 1].base if i + 1 < len(p.log.segments) else p.log.log_end_offset,
                )
        return out

    def close(self) -> None:
        pass


class ImplTarget(_Target):
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
            index = files.get(logs[-1][: -len(".log")] + ".index", b"")
            position = struct.unpack_from(">i", index, len(index) - 4)[0] if len(index) >= 8 else 0
            total += max(0, len(files[logs[-1]]) - position)
        return total

    def _open(self) -> list[dict]:
        self.manager = impl.log_manager.LogManager(self.storage, self._dirs(), self.config, self.clock, self.jitter)
        tail = self.tail_bytes()
        before = self.storage.stats.snapshot()
        loads = self.manager.startup()
        after = self.storage.stats
        self.load_stats = {
            "log_bytes_read": after.log_bytes_read - before.log_bytes_read,
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
            for load in loads
        ]

    def _shutdown(self):
        return {d.removeprefix(self.root + "/"): why is None for d, why in self.manager.shutdown().items()}

    def _tick(self):
        self.manager.tick()

    def halt(self) -> None:
        if self.running and self.manager and self.backend == "os":
            for log in self.manager.logs.values():
                log.close_handlers()
        if self.backend == "os":
            self.raw_storage.close_all()
        super().halt()

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

    def _apply(self, step):
        m = self.manager
        if isinstance(step, sc.Create):
            m.create_log(step.topic, step.partition, self._dirs()[step.dir % len(self.dir_names)])
            return {}
        if isinstance(step, sc.Retention):
            return {"deleted": m.retention()}
        if isinstance(step, sc.Checkpoint):
            m.checkpoint_recovery_points()
            m.checkpoint_log_start_offsets()
            return {}
        if isinstance(step, sc.Truncate):
            return {"truncated": m.truncate_to(step.topic, step.partition, step.offset)}
        if isinstance(step, sc.TruncateFully):
            m.truncate_fully_and_start_at(step.topic, step.partition, step.offset)
            return {}
        log = m.log(step.topic, step.partition)
        if isinstance(step, sc.Append):
            return appended(
                (r.first_offset, r.last_offset)
                for r in (log.append(data, step.leader, step.leader_epoch) for data in sc.append_requests(step))
            )
        if isinstance(step, sc.Roll):
            return {"base": log.roll().base_offset}
        if isinstance(step, sc.Read):
            return {"bytes": log.read(step.offset, step.max_bytes, step.max_offset, step.min_one_message).hex()}
        if isinstance(step, sc.OffsetForTimestamp):
            found = log.offset_for_timestamp(step.timestamp)
            return {"found": list(found) if found else None}
        if isinstance(step, sc.DeleteRecords):
            return {"log_start_offset": log.delete_records(step.offset)}
        if isinstance(step, sc.Flush):
            log.flush(step.offset)
            return {}
        if isinstance(step, sc.Clean):
            return log.clean()
        raise AssertionError(step)

    def state(self) -> dict:
        if not self.running:
            return {"running": False}
        parts = {}
        for (topic, partition), log in sorted(self.manager.logs.items()):
            segs = [(s.base_offset, s.size, bytes(s.view())) for s in log.segments]
            d = self.manager._dir_of[(topic, partition)].removeprefix(self.root + "/")
            parts[f"{d}/{topic}-{partition}"] = _partition_state(
                log.log_start_offset, log.log_end_offset, log.recovery_point, segs, log.epoch_cache.entries
            )
        return {"running": True, "partitions": parts}

    def files(self, indexes: bool = True) -> dict[str, bytes]:
        out = {}
        if self.backend == "sim":
            for path, data in self.raw_storage.image().items():
                if path.startswith(self.root + "/"):
                    out[path[len(self.root) + 1 :]] = bytes(data)
            return out
        for dirpath, _dirs, names in os.walk(self.root):
            for name in names:
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
                    # (corpora/crash/time-entry-past-a-log-a-crash-emptied.json)
                    out[f"{d}/{topic}-{partition}/{s.base_offset}"] = (
                        *s.lookup_entries(),
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
