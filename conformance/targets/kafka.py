"""Apache Kafka's own log layer as a target (DESIGN.md "Targets"; docs/kafka-target.md).

The steps go as JSON lines to the JVM of ``kafka-target/``, which applies them to Kafka's
``LogManager`` and ``UnifiedLog`` over real files in this target's root.  The files are Kafka's:
``files()``, the segments' bytes and crash images are read and written here, on disk, exactly as
the impl target on the os backend does.  A process crash is the JVM forgetting its LogManager
without closing anything; a crash image is materialised into the root before the next ``open``.

What is not compared (each a departure listed in docs/kafka-target.md): on Kafka 2.x producer-state
snapshots (``.snapshot``), which the model writes as 4.x does (docs/producer-state.md), and before
3.8 the data dirs' ``.lock`` files (a shutdown kept them: ``conformance.releases``).  An offset
checkpoint's entries are compared in sorted order on every target (Kafka writes its HashMap's
order: ``conforms.comparable_files``).

With capture on (``capture=True``, ``KLC_KAFKA_CAPTURE=1``) every request's file-system effects are
traced and replayed onto a simulated storage, so crash images can be made from Kafka's own journal
(:mod:`conformance.kafka_io`, :meth:`KafkaTarget.capture`).
"""

from __future__ import annotations

import os
import shutil
import time


from conformance import crash_images, kafka_io, releases
from conformance import scenario as sc
from conformance.index_files import is_index_file
from conformance.scenario import Unsupported
from conformance.targets import TargetBase, partition_state
from conformance.targets.kafka_jvm import (
    HALT_STATUS,
    RELEASE,
    Jvm,
    KafkaTargetError,
    NoAdapter,
    adapter_release,
    build_for,
    classpath_of,
    judged_build,
    scratch_dir,
    shared,
    user_build,
)

CAPTURE_VARIABLE = "KLC_KAFKA_CAPTURE"  # "1": every kafka target of the process captures its I/O

# the first release whose cleaning rounds the machines draw: the adapters drive Kafka's own cleaner
# from 3.1 (ScalaCleanerRound.java), but 3.1-3.8 and 4.0 do not fail a round whose cleaned segment's
# time index is full, as 3.9 and 4.1 on do (corpora/log/failed-cleaning-round-leaves-its-cleaned-files.json)
CLEANER_FROM = (4, 1)
EXPIRY_FROM = (3, 4)  # KIP-854's producer.id.expiration.ms: what the model's producer expiry states
SET_ASIDE_DIRS_FROM = (3, 9)  # the first whose adapter follows -delete, -future and -stray dirs as modelled
UNASSIGNED_FROM = (4, 1)  # KRaft's isStray passed to LogManager.startup: the adapters of 4.1 on
TRANSACTION_VERSION_FROM = (4, 2)  # the first whose appendAsLeader takes a marker's transaction version (KIP-890)
# the first release whose adapter verifies transactions as the model states (KIP-890's
# maybeStartTransactionVerification with an epoch bump, and an append given its guard)
VERIFICATION_FROM = (4, 1)
ZSTD_FROM = (2, 1)  # the first with a zstd codec (KIP-110), for compression.type too
WRITE_SLACK_NS = 1_000_000_000  # a file system's coarsest modification-time step


def runs_cleaning_rounds(target: str) -> bool:
    """Whether the target named ``target`` (as ``--target`` names it: ``model``, ``impl``, ``kafka``,
    ``kafka:VERSION``, ``mutant:NAME``) runs a ``clean`` step as the model states it, so that the
    machines draw it: every one but the kafka target of a release before 4.1 (:data:`CLEANER_FROM`;
    the Log generation, 0.11-3.0, answers ``unsupported``)."""
    return _from(target, CLEANER_FROM)


def follows_set_aside_dirs(target: str) -> bool:
    """Whether ``target`` runs ``delete_partition`` and ``replace_current_with_future`` and loads
    ``-delete``, ``-future`` and ``-stray`` dirs as the model states: every one but the kafka target
    of a release before 3.9, whose adapter answers some of them ``unsupported`` (docs/departures.md,
    "Deleted partitions", "Future and stray directories")."""
    return _from(target, SET_ASIDE_DIRS_FROM)


def sets_unassigned_logs_aside(target: str) -> bool:
    """Whether ``target`` runs a startup whose metadata image no longer assigns a partition
    (``unassign``): every one but the kafka target of a release before 4.1, whose adapter passes
    LogManager no ``isStray`` predicate."""
    return _from(target, UNASSIGNED_FROM)


def expires_producers(target: str) -> bool:
    """Whether ``target`` runs ``expire_producers`` as the model states it: every one but the
    kafka target of a release before 3.4, which forgets producers by another config (KIP-854)."""
    return _from(target, EXPIRY_FROM)


def takes_transaction_versions(target: str) -> bool:
    """Whether ``target`` appends a marker at transaction version 2 as the model states: every one but
    the kafka target of a release before 4.2, which takes no version (unsupported)."""
    return _from(target, TRANSACTION_VERSION_FROM)


def verifies_transactions(target: str) -> bool:
    """Whether ``target`` runs ``verify_transaction`` and an append's ``verification_guard`` as the
    model states, with ``transaction.partition.verification.enable`` on: every one but the kafka
    target of a release before :data:`VERIFICATION_FROM`."""
    return _from(target, VERIFICATION_FROM)


def has_zstd(target: str) -> bool:
    """Whether ``target`` knows the zstd codec (``compression.type=zstd``): every one but the kafka
    target of a release before 2.1."""
    return _from(target, ZSTD_FROM)


def _from(target: str, since: tuple[int, int]) -> bool:
    if not target.startswith("kafka:"):
        return True
    m = RELEASE.fullmatch(target.split(":", 1)[1])
    return m is None or (int(m[1]), int(m[2])) >= since


class KafkaRefusal(Exception):
    """Kafka threw: ``kind`` is its exception class, as the scenario format names refusals."""

    def __init__(self, kind: str, message: str, fields: dict | None = None):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.fields = fields or {}  # what the exception carries besides its message (an append's offsets)


class KafkaTarget(TargetBase):
    trusts_its_index_files = True  # Kafka's own (kafkas_own: index-trusted-after-a-fault)

    @staticmethod
    def refusals():
        return (KafkaRefusal,)

    def __init__(
        self, scenario: sc.Scenario, classpath: str | None = None, release: str | None = None, capture: bool | None = None
    ):
        """``release``: the Kafka release to run (None: the pinned one, kafka_jvm.PINNED); a release
        no adapter runs is :class:`Unsupported`.  ``capture`` (default: ``KLC_KAFKA_CAPTURE=1`` in
        the environment): Kafka's own I/O is traced on the JVM capturing targets share and replayed
        onto a simulated storage (:mod:`conformance.kafka_io`; :meth:`capture`)."""
        super().__init__(scenario)
        if scenario.failure_policy != "kafka":
            raise Unsupported(
                f"failure_policy {scenario.failure_policy!r}: Kafka's startup fails on a failed partition load"
            )
        self.build = None  # what is judged (kafka_build.KafkaBuild): a given classpath is the caller's
        if classpath is None and user_build() is not None:  # the user's jars, in place of the release's
            self.build = judged_build(release)
            release = release or adapter_release(self.build)
            classpath = classpath_of(self.build)
        self.classpath = classpath
        self.release = release
        if capture is None:
            capture = os.environ.get(CAPTURE_VARIABLE, "") not in ("", "0")
        self.io: kafka_io.IoCapture | None = None
        self.last_capture: kafka_io.StepCapture | None = None
        if capture:
            try:
                kafka_io.strace_binary()
            except kafka_io.CaptureUnsupported as e:
                raise Unsupported(str(e)) from None
        self.capturing = capture
        try:
            self.jvm = self._start_jvm()
        except NoAdapter as e:
            if self.build is not None:  # a build no adapter runs: nothing can judge it
                raise KafkaTargetError(f"kafka target: {self.build.describe()}: {e}") from None
            raise Unsupported(str(e)) from None
        if self.build is not None and self.jvm.version != self.build.version:
            raise KafkaTargetError(
                f"kafka target: the JVM runs Kafka {self.jvm.version}, not the build's {self.build.version}: "
                "its classpath mixes in other Kafka jars"
            )
        self.name = "kafka" if release is None else f"kafka:{release}"
        self.differences = releases.differences(release)
        self.compares_producer_state = releases.PRODUCERS_NOT_SHOWN not in self.differences
        self.version = self.jvm.version
        self.root = scratch_dir("klc-kafka-")  # removed at exit if a harness error leaves it
        for d in self.dir_names:
            os.makedirs(os.path.join(self.root, d))
        self.manager = None
        self.started = False
        self.index_builds: dict[str, int] = {}  # the last race's index objects per file (Race.java)
        self.stamped: dict[str, int] = {}  # path → the mtime (ns) last given to it
        try:
            if capture:
                self.io = kafka_io.IoCapture(self.root, self.clock)
            self._configure()
        except kafka_io.CaptureUnsupported as e:
            self._close_capture()
            shutil.rmtree(self.root, ignore_errors=True)
            raise Unsupported(str(e)) from None
        except KafkaRefusal as e:  # a config the model took (they must agree): never judged as a pass
            shutil.rmtree(self.root, ignore_errors=True)
            raise KafkaTargetError(f"kafka target: Kafka {self.version} refuses the scenario's config: {e}") from None
        except BaseException:  # unsupported or the JVM gone: no target, no directory left
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _configure(self) -> None:
        self._request(
            "configure", root=self.root, data_dirs=self.dir_names, config=self.scenario.config, clock_ms=self.clock(),
            jitter_seed=self.scenario.jitter_seed,
        )  # fmt: skip

    def _start_jvm(self):
        """The JVM: the process's shared one, or with capture the one capturing targets share (a
        tracer attached to the shared JVM would see, and have to cut, every other target's requests)."""
        if not self.capturing:
            return shared(self.classpath, self.release)
        return kafka_io.captured_jvm(self.classpath or build_for(self.release), Jvm)

    def _close_capture(self) -> None:
        if self.io is not None:
            self.io.close()

    def _request(self, op: str, **fields) -> dict:
        began_ns = time.time_ns()
        message = {"op": op, "now_ms": self.clock(), **fields}
        if self.io is None:
            answer = self.jvm.request(message)
        else:
            try:
                answer = self.io.request(self.jvm.process.pid, lambda: self.jvm.request(message))
            except kafka_io.CaptureUnsupported as e:  # no ptrace permission: never judged
                raise Unsupported(str(e)) from None
            except kafka_io.CaptureError as e:  # the tracer failed: a harness error
                raise KafkaTargetError(f"kafka target: {e}{self.jvm._tail()}") from None
        self._stamp(began_ns)  # a refused request may have written files too
        if self.io is not None:
            try:
                self.io.settle()
            except kafka_io.CaptureUnsupported as e:
                raise Unsupported(str(e)) from None
        if "unsupported" in answer:
            raise Unsupported(f"kafka {self.version}: {answer['unsupported']}")
        if "refused" in answer:
            raise KafkaRefusal(answer["refused"], answer.get("message", ""), answer.get("fields"))
        return answer["ok"]

    def _stamp(self, began_ns: int) -> None:
        """Files Kafka wrote during the request get the scenario clock as modification time, as
        impl's os backend gives them (time retention falls back to a segment's mtime, spec §4.8).
        A time Kafka set itself (``setLastModified``: a split's segments keep the original's) lies
        before the request, in scenario time, and is kept."""
        now_ns = self.clock() * 1_000_000
        for path in self._walk():
            mtime = os.stat(path).st_mtime_ns
            if self.stamped.get(path) == mtime:
                continue
            if mtime >= began_ns - WRITE_SLACK_NS:
                os.utime(path, ns=(now_ns, now_ns))
                mtime = now_ns
            self.stamped[path] = mtime

    def _walk(self):
        for dirpath, _dirs, names in os.walk(self.root):
            for name in names:
                yield os.path.join(dirpath, name)

    # --- the broker's life --------------------------------------------------------------------

    def _open(self) -> list[dict]:
        return self._open_answer()

    def _open_answer(self, **fields) -> list[dict]:
        # the partitions the metadata image no longer assigns here (sc.Unassign): KRaft's isStray
        answer = self._request("open", unassigned=sorted([t, p] for t, p in self.unassigned), **fields)
        self.started = answer["started"]
        # KAFKA-7283 (§7.3): what clean-restart judges of a load, as impl's load_stats has it
        self.load_stats = {"inactive_indexes_opened": self._inactive(answer.get("indexes_built", {}))}
        for x in answer["loaded"]:  # a work count (benchmarks/vs_kafka.py), not a result the targets share
            x.pop("recovered_bytes", None)
            if x.get("error"):  # Kafka names the files it failed on by absolute path: relative to the data dirs here
                x["error"] = x["error"].replace(os.path.join(self.root, ""), "")
        return answer["loaded"]

    def _inactive(self, built: dict[str, int]) -> list[str]:
        """The index files built by the load that belong to a segment the log holds after it, below
        the largest base offset of its partition's ``.log`` files as the load left them (what impl
        counts: its log's segments but the last). An index object whose file the load renamed
        ``.deleted`` is not one: it read the then active segment's next offset before deleting it
        (a log end below the checkpoint's log start, KAFKA-12520's load path, spec §7.3)."""
        held: dict[str, set[int]] = {}
        for path in self._walk():
            folder, name = os.path.split(os.path.relpath(path, self.root))
            if name.endswith(".log") and name[:-4].isdigit():
                held.setdefault(folder, set()).add(int(name[:-4]))
        out = []
        for path in sorted(built):
            folder, name = os.path.split(path)
            base, _, suffix = name.partition(".")
            bases = held.get(folder, set())
            if suffix in ("index", "timeindex") and base.isdigit() and int(base) in bases and int(base) < max(bases):
                out.append(path)
        return out

    def _started(self) -> bool:
        return self.started

    def _shutdown(self):
        return self._request("shutdown")["shutdown"]

    def _tick(self):
        self._request("tick")

    # --- Kafka's own I/O (conformance.kafka_io) ----------------------------------------------

    def apply(self, step: sc.Step, points: bool = False) -> dict:
        """With capture, the step's operations are replayed onto the storage, and with ``points``
        (:meth:`capture`) the storage as the step began is kept for ``storage_at``."""
        if self.io is None:
            return super().apply(step)
        self.io.begin_step(points)
        try:
            return step.on(self)
        finally:
            self.last_capture = self.io.end_step()

    def durable_view(self):
        """Kafka's own journal (capture on): its storage's paths are absolute from the root.  None
        before 3.0 (conformance.releases.holds_durability_promises: KAFKA-3968)."""
        if self.io is None or not releases.holds_durability_promises(self.release):
            return None
        return self.io.storage, ""

    def capture(self, step: sc.Step):
        """Apply ``step`` with Kafka's I/O captured: (its result, the SimStorage holding every
        operation pending since the last durable point, this step's included).  The step's own
        operations: ``self.last_capture`` (:class:`conformance.kafka_io.StepCapture`; ``.operations``
        how many, ``.storage_at(k)`` the storage after the first ``k``).  The storage is the
        target's: crash images may be taken from it, never changed."""
        if self.io is None:
            raise KafkaTargetError("kafka target: capture is off (KafkaTarget(capture=True) or KLC_KAFKA_CAPTURE=1)")
        result = self.apply(step, points=True)
        return result, self.io.storage

    def fail_inside(self, step: sc.Step, at_op: int, error: str):
        """Apply ``step`` with the ``at_op``-th of Kafka's own calls that change a file under the
        root failing with ``error`` (EIO, ENOSPC; :mod:`conformance.kafka_io_errors`): (its result,
        what failed — ``.call`` None when the step made fewer such calls and ran whole)."""
        if self.io is None:
            raise KafkaTargetError("kafka target: capture is off (KafkaTarget(capture=True) or KLC_KAFKA_CAPTURE=1)")
        self.io.arm(at_op, error)
        try:
            result = self.apply(step)
            if self.io.failed.call is not None and self.tracks_offline_dirs:  # the channel's answer, untraced
                self.io.failed.offline = tuple(self._request("offline_dirs")["offline"])
        finally:
            failed = self.io.disarm()
        return result, failed

    @property
    def tracks_offline_dirs(self) -> bool:
        """Kafka takes a data dir offline on an I/O error (KIP-112, from 1.0; 0.11 has no failure
        channel: an I/O error there fails the broker)."""
        major, minor = (int(x) for x in self.version.split(".")[:2])
        return (major, minor) >= (1, 0)

    def image_at(self, k: int | None, fault) -> tuple[dict, list, dict]:
        """The disk a crash leaves under ``fault`` (a :class:`conformance.crash_images.Fault`) at
        operation ``k`` of the last step :meth:`capture` ran, or with ``k`` None now, between
        steps — as :meth:`restore` takes it, for every target of the scenario."""
        if self.io is None:
            raise KafkaTargetError("kafka target: capture is off (KafkaTarget(capture=True) or KLC_KAFKA_CAPTURE=1)")
        if k is None:
            storage = self.io.storage
        elif self.last_capture is None:
            raise KafkaTargetError("kafka target: no step was captured (KafkaTarget.capture)")
        else:
            storage = self.last_capture.storage_at(k)
        return kafka_io.image_for_restore(crash_images.crash_image(storage, fault))

    def halt(self) -> None:
        if self.running:
            self._request("halt")
        super().halt()

    def crash_inside_open(self, point: str, count: int) -> bool:
        """Start the broker and let its JVM die right after the ``count``-th ``point`` of the load
        (``segment-recovered``: a LogSegment.recover returned; ``partition-loaded``: a log was
        built) — a process crash inside Kafka's own load, files as the JVM left them
        (docs/kafka-target.md, ``halt_at``).  A fresh JVM serves the next step, as an operator's
        restart would.  False when the load had fewer such events (it then completed: running)."""
        if self.running:
            raise KafkaRefusal("AlreadyRunning", "the broker is running")
        try:
            self.last_load = self._open_answer(halt_at={"point": point, "count": count})
        except KafkaTargetError:
            if self.jvm.alive() or self.jvm.process.returncode != HALT_STATUS:
                raise
            self.jvm = self._start_jvm()  # the operator's restart: a new process
            self._configure()
            return True
        self.running = self.started
        return False

    def restore(self, files, directories, mtimes):
        """Start over from a disk image: the JVM lets go of the old broker, the root is rewritten."""
        self.halt()
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root)
        for d in [*self.dir_names, *directories]:
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        for p, data in files.items():
            with open(os.path.join(self.root, p), "wb") as f:
                f.write(data)
        self.stamped = {}
        for p in files:
            ms = mtimes.get(p, self.clock())
            full = os.path.join(self.root, p)
            os.utime(full, ns=(ms * 1_000_000, ms * 1_000_000))
            self.stamped[full] = ms * 1_000_000
        if self.io is not None:  # the image is what the disk holds: durable
            self.io.reset()

    # --- steps ----------------------------------------------------------------------------------

    def _call(self, step):
        return step.wire_result([self._request(**r) for r in step.wire_requests()])

    def _run_race(self, step: sc.Race) -> list[dict]:
        """One JVM thread per step, released together (Race.java): Kafka's own code decides the
        interleaving, ``step.schedule`` is impl's.  ``index_builds``: the index objects Kafka built
        per file; ``built_twice`` the files it built two for (KAFKA-9156)."""
        threads = [[{"now_ms": self.clock(), **r} for r in s.wire_requests()] for s in step.steps]
        answer = self._request("race", threads=threads)
        self.index_builds = answer["index_builds"]
        self.built_twice = sorted(path for path, n in self.index_builds.items() if n > 1)
        return [self._thread_result(s, answers) for s, answers in zip(step.steps, answer["race"], strict=True)]

    def _thread_result(self, step, answers: list[dict]) -> dict:
        for a in answers:
            if "harness" in a:
                raise KafkaTargetError(f"kafka target: {a['harness']}")
            if "unsupported" in a:
                raise Unsupported(f"kafka {self.version}: {a['unsupported']}")
            if "refused" in a:
                return {"error": a["refused"]}
        return step.wire_result([a["ok"] for a in answers])

    def log_end_offset(self, topic: str, partition: int) -> int:
        partitions = self._request("state")["partitions"]
        key = next((k for k in partitions if k.split("/", 1)[1] == f"{topic}-{partition}"), None)
        if key is None:
            raise KafkaRefusal("UnknownTopicOrPartitionException", f"{topic}-{partition} has no log")
        return partitions[key]["log_end_offset"]

    def _segment_bytes(self):
        out = {}
        if not self.running:
            return out
        for key, p in self._request("state")["partitions"].items():
            out[key] = [self._log_bytes(key, name, size) for _base, size, name in p["segments"]]
        return out

    def _log_bytes(self, key: str, name: str, size: int) -> bytes:
        """The first ``size`` bytes of the segment file ``name`` (as Kafka named it) of ``key``.

        A segment Kafka lists whose file is not in its data dir (a build that deleted it, or wrote it
        elsewhere) reads as empty: the log then differs from the model's, a verdict on Kafka rather
        than a failure of the harness."""
        try:
            with open(os.path.join(self.root, key, name), "rb") as f:
                return f.read(size)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return b""

    # --- observations -------------------------------------------------------------------------

    def state(self) -> dict:
        if not self.running:
            return {"running": False}
        parts = {}
        for key, p in self._request("state")["partitions"].items():
            segs = [(base, size, self._log_bytes(key, name, size)) for base, size, name in p["segments"]]
            parts[key] = partition_state(
                p["log_start_offset"], p["log_end_offset"], p["recovery_point"], segs, p["epochs"],
                p.get("producers"),
            )  # fmt: skip
        return {"running": True, "partitions": parts}

    def files(self, indexes: bool = True) -> dict[str, bytes]:
        out = {}
        for full in self._walk():
            if not indexes and is_index_file(full):  # megabytes of preallocated slots, never compared
                continue
            with open(full, "rb") as f:
                data = f.read()
            out[os.path.relpath(full, self.root)] = data
        return out

    def index_entries(self) -> dict:
        if not self.running:
            return {}
        files = {
            f"{key}/{base}": (name, size)
            for key, p in self._request("state")["partitions"].items()
            for base, size, name in p["segments"]
        }
        out = {}
        for key, e in self._request("index_entries")["segments"].items():
            partition, base = key.rsplit("/", 1)
            out[key] = (
                [tuple(x) for x in e["offsets"]],
                [tuple(x) for x in e["times"]],
                self._log_bytes(partition, *files[key]),
                e["active"],
                e["end"],
            )
        return out

    def close(self) -> None:
        try:
            if self.running and self.jvm.alive():
                self._request("halt")
        except (KafkaTargetError, KafkaRefusal):
            pass
        self.running = False
        self._close_capture()
        shutil.rmtree(self.root, ignore_errors=True)


__all__ = ["KafkaRefusal", "KafkaTarget", "KafkaTargetError", "Unsupported", "runs_cleaning_rounds"]
