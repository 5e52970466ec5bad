"""The JVM behind the kafka target: building it and talking to it.

One adapter per generation of Kafka's log API, each a Maven project speaking the same JSON lines
(docs/kafka-target.md): ``kafka-target/`` for kafka-storage's Java ``UnifiedLog`` of 4.1 on (the
pinned release, :data:`PINNED`, built into ``target/``; 4.1–4.3, whose ``LogManager`` is still the
broker's Scala class, into ``target/<version>/``), ``kafka-target-scala/`` for the Scala ``LogManager``
and log of 1.1–4.0 (its ``kafka.log.Log`` up to 3.0, ``kafka.log.UnifiedLog`` from 3.1), built once
per release into ``target/<version>/``; both compile the protocol classes of
``kafka-target/src/shared``.  :func:`build_for` picks the adapter of a release, or says there is
none.  A project is built on first use (offline when the local repository already holds what it
needs, online otherwise) and its jar and classpath are reused while no source changed.  A user's
own Kafka build (``--kafka-classpath``, :data:`BUILD_VARIABLE`) runs on the adapter of its version
with exactly its jars in place of the release's (:func:`classpath_of`, :mod:`.kafka_build`).  One JVM
serves every kafka target of a process (a test worker, a campaign task): starting it costs more
than most scenarios (docs/kafka-target.md).  Every failure — no Java, no Maven, a build that
fails, a JVM that dies or stops answering — is a :class:`KafkaTargetError` with one line saying
what happened, and the tail of the JVM's stderr where there is one.
"""

from __future__ import annotations

import atexit
import collections
import fcntl
import glob
import hashlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from conformance.targets import HarnessError

CHECKOUT = Path(__file__).resolve().parents[2]
PROJECT = CHECKOUT / "kafka-target"  # kafka-storage's UnifiedLog: 4.1 on, the pinned release
SCALA_PROJECT = CHECKOUT / "kafka-target-scala"  # the Scala LogManager: kafka.log.Log of 1.1–3.0, UnifiedLog of 3.1–4.0
UNIFIED_LOG = "unified-log"  # kafka-target-scala's sources and pom profile for kafka.log.UnifiedLog
BEFORE_1_1 = "before-1.1"  # kafka-target-scala's sources and pom profile for 0.11 and 1.0's kafka.log.Log
# 0.11's broker uses no Jackson: the protocol classes compile against 1.0.2's own
JACKSON_BEFORE_1_0 = "2.9.6"
# kafka-target's LogManager sources: kafka-storage's Java class from 4.4, the broker's Scala one before
SINCE_4_4, BEFORE_4_4 = "since-4.4", "before-4.4"
M2_REPOSITORY = Path(os.environ.get("KLC_M2_REPOSITORY", Path.home() / ".m2" / "repository"))
SHARED_SOURCES = PROJECT / "src" / "shared"  # the protocol classes both compile
PINNED = "4.4.0"  # kafka-target/pom.xml's kafka.version (tests/test_kafka_target.py checks)
# MAJOR.MINOR.PATCH; before 1.0 Kafka numbered its releases 0.MAJOR.MINOR.PATCH (0.11.0.3)
RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")
HALT_STATUS = 70  # the exit status of a JVM halted by an open's halt_at (LoadCrash.java)
ANSWER_TIMEOUT_S = float(os.environ.get("KLC_KAFKA_TIMEOUT", "120"))
STARTUP_TIMEOUT_S = 120  # the first answer, at least: a JVM's start on a busy machine is no hang
BUILD_TIMEOUT_S = 900
# small heap work, short-lived: the serial collector and the C1 compiler start fastest; the target
# attaches Byte Buddy to itself to see LogSegment.recover (docs/kafka-target.md)
JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djdk.attach.allowAttachSelf=true")


def extra_options() -> list[str]:
    """``KLC_KAFKA_JVM_OPTIONS``: more options for the adapter's JVM, split on whitespace (an agent
    such as kafka-mutation's method coverage, docs/kafka-mutation.md)."""
    return os.environ.get("KLC_KAFKA_JVM_OPTIONS", "").split()


class KafkaTargetError(HarnessError):
    """The kafka target could not be built, started, or it stopped answering: a harness error,
    never a verdict about Kafka."""


class NoAdapter(KafkaTargetError):
    """No adapter can run this release (its generation has none yet, or it is no release)."""


def build_for(version: str | None = None) -> str:
    """The classpath of the adapter that runs Kafka ``version`` (None: the pinned release)."""
    if version is None or version == PINNED:
        return build(PROJECT)
    m = RELEASE.fullmatch(version)
    if m is None:
        raise NoAdapter(f"kafka target: {version!r} is not a Kafka release (MAJOR.MINOR.PATCH, e.g. 2.8.2)")
    if _line(version) < (0, 11):
        raise NoAdapter(f"kafka {version}: {NO_V2_BATCHES}")
    if (0, 11) <= _line(version) <= (4, 0):  # the Scala LogManager: kafka.log.Log to 3.0, UnifiedLog from 3.1
        return build(SCALA_PROJECT, version)
    if (4, 1) <= _line(version) <= (4, 3):  # kafka-storage's UnifiedLog under the Scala LogManager
        return build(PROJECT, version)
    generation = {4: "the storage module at a release not tried yet"}
    raise NoAdapter(
        f"kafka {version}: no adapter for {generation.get(int(m[1]), 'this generation')} "
        f"(adapters: 0.11–4.3 and {PINNED}; docs/kafka-target.md)"
    )


# why a release before 0.11 has no adapter: its log reads none of the scenario format's leader appends
NO_V2_BATCHES = (
    "no adapter: Kafka before 0.11 reads no v2 record batch (KIP-98), the format of every leader "
    "append of the scenario format, and has neither leader epochs (KIP-101) nor a log start offset "
    "(KIP-107), which every state it is compared on holds (docs/kafka-target.md)"
)


# --- a build given by its jars (--kafka-classpath, KLC_KAFKA_CLASSPATH; docs/gate.md) ----------------

BUILD_VARIABLE = "KLC_KAFKA_CLASSPATH"  # the user's build, as --kafka-classpath takes it


# the release whose adapter runs a build of an unpublished version (a -SNAPSHOT of its line): the
# line's last release the adapters were built and run for (docs/kafka-target.md)
LINE_RELEASES = {
    (0, 11): "0.11.0.3", (1, 0): "1.0.2", (1, 1): "1.1.1", (2, 0): "2.0.1", (2, 1): "2.1.1", (2, 2): "2.2.2", (2, 3): "2.3.1", (2, 4): "2.4.1",
    (2, 7): "2.7.2", (2, 8): "2.8.2", (3, 0): "3.0.0", (3, 1): "3.1.2", (3, 4): "3.4.1", (3, 6): "3.6.2",
    (3, 7): "3.7.2", (3, 9): "3.9.1", (4, 0): "4.0.0", (4, 1): "4.1.1", (4, 2): "4.2.1", (4, 3): "4.3.1",
}  # fmt: skip


def adapter_release(build) -> str | None:
    """The release whose adapter build runs ``build`` (a :class:`kafka_build.KafkaBuild`; None: the
    pinned one): 4.4's is the pinned adapter, a published release its own, an unpublished version
    (``4.3.2-SNAPSHOT``) its line's last release the adapters ran (:data:`LINE_RELEASES`)."""
    if build.line == _line(PINNED):
        return None
    if RELEASE.fullmatch(build.version):
        return build.release
    return LINE_RELEASES.get(build.line, build.release)


def contradicts(release: str | None, build) -> bool:
    """``--target kafka:release`` names another Kafka than ``build``'s jars: another version, unless
    the build is an unpublished one that release's adapter runs (a -SNAPSHOT of its line)."""
    if release is None or release == build.release:
        return False
    return RELEASE.fullmatch(build.version) is not None or release != (adapter_release(build) or PINNED)


def _is_kafkas_own(path: str) -> bool:
    """A jar of Kafka's Maven group in the local repository: what a user's build replaces."""
    return Path(path).is_relative_to(M2_REPOSITORY / "org" / "apache" / "kafka")


def classpath_of(build) -> str:
    """The JVM classpath judging ``build`` (a :class:`kafka_build.KafkaBuild`): its generation's
    adapter jar, then exactly the build's jars, then the adapter's third-party dependencies
    (byte-buddy, log4j) — the release's own Kafka jars are left out, never joined.  A build the
    adapter cannot run (a generation without one, a log class or a Kafka jar it needs missing) is
    refused in one line."""
    from conformance.targets import kafka_build

    adapter, *deps = build_for(adapter_release(build)).split(os.pathsep)
    missing = kafka_build.missing_classes(build)
    if missing:
        raise kafka_build.BuildRefused(
            f"{build.source}: Kafka {build.version}'s jars lack {', '.join(missing)}, which its adapter drives: a partial build?"
        )
    have = {kafka_build.artifact_of(j) for j in build.kafka_jars}
    needed = sorted({kafka_build.artifact_of(d) for d in deps if _is_kafkas_own(d)} - have)
    if needed:
        raise kafka_build.BuildRefused(
            f"{build.source}: no {', '.join(needed)} jar among the build's jars (Kafka {build.version}'s adapter runs on it)"
        )
    return os.pathsep.join([adapter, *build.jars, *[d for d in deps if not _is_kafkas_own(d)]])


_RELEASE_BUILDS: dict[str | None, object] = {}


def release_build(version: str | None = None):
    """The published release ``version`` (None: the pinned one) as a :class:`kafka_build.KafkaBuild`:
    the Kafka jars its adapter's Maven build names, so a stock run says what it judged too."""
    from conformance.targets import kafka_build

    if version not in _RELEASE_BUILDS:
        jars = [j for j in build_for(version).split(os.pathsep)[1:] if _is_kafkas_own(j)]
        _RELEASE_BUILDS[version] = kafka_build.inspect_jars(jars, f"Maven Central's kafka {version or PINNED}")
    return _RELEASE_BUILDS[version]


def user_build():
    """The build ``KLC_KAFKA_CLASSPATH`` names (the ``--kafka-classpath`` of klc, the pytest option,
    a campaign's workers), or None: read once per process and value."""
    from conformance.targets import kafka_build

    spec = os.environ.get(BUILD_VARIABLE) or None
    if spec is None:
        return None
    if spec not in _USER_BUILDS:
        _USER_BUILDS[spec] = kafka_build.inspect(spec)
    return _USER_BUILDS[spec]


_USER_BUILDS: dict[str, object] = {}


def judged_build(release: str | None = None):
    """What a kafka target of ``release`` judges in this process: the user's build when one is
    given (refused when ``release`` contradicts its version), else the published release."""
    build = user_build()
    if build is None:
        return release_build(release)
    if contradicts(release, build):
        raise KafkaTargetError(
            f"kafka target: --target kafka:{release} contradicts the build's jars, which are Kafka {build.version} "
            f"({build.source})"
        )
    return build


def _line(version: str) -> tuple[int, int]:
    """A release's major and minor version."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _maven_properties(version: str | None) -> list[str]:
    """-D options of a release's build: kafka_2.13 is published from 2.4.0 on, kafka_2.12 before
    (the pom's before-2.4 profile also picks that era's Scheduler trait); from 3.0 the release's pom
    declares Jackson at runtime scope only, so the protocol classes name the release's own Jackson;
    from 3.1 the partition's log is ``kafka.log.UnifiedLog`` (the pom's unified-log sources).
    4.1–4.3 build kafka-target with the broker's Scala ``LogManager`` (its before-4.4 sources)."""
    if version is None:
        return []
    if _line(version) >= (4, 1):
        return [f"-Dkafka.version={version}", f"-Dmanager.sources={_manager_sources(version)}"]
    scala = ["-Dscala.binary.version=2.12"] if _before_2_4(version) else []
    jackson = [f"-Djackson.version={_release_jackson(version)}"] if _line(version) >= (3, 0) else []
    jackson = [f"-Djackson.version={JACKSON_BEFORE_1_0}"] if _line(version) < (1, 0) else jackson
    generation = [f"-Dgeneration={UNIFIED_LOG}"] if _line(version) >= (3, 1) else []
    generation = [f"-Dgeneration={BEFORE_1_1}"] if _line(version) < (1, 1) else generation
    return [f"-Dkafka.version={version}", *scala, *jackson, *generation]


def _release_jackson(version: str) -> str:
    """The jackson-databind version the release's kafka_2.13 pom declares, read from the local Maven
    repository (fetched there first when missing: ``mvn dependency:get`` of that pom)."""
    pom = M2_REPOSITORY / "org/apache/kafka/kafka_2.13" / version / f"kafka_2.13-{version}.pom"
    if not pom.is_file():
        artifact = f"-Dartifact=org.apache.kafka:kafka_2.13:{version}:pom"
        get = ["mvn", "-q", "-B", "dependency:get", artifact, "-Dtransitive=false"]
        subprocess.run(get, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if not pom.is_file():
        raise KafkaTargetError(f"kafka target: Maven has no pom of kafka_2.13 {version} (is it a published release?)")
    m = re.search(r"<artifactId>jackson-databind</artifactId>\s*<version>([^<]+)</version>", pom.read_text())
    if m is None:
        raise KafkaTargetError(f"kafka target: kafka_2.13 {version}'s pom names no jackson-databind")
    return m[1]


def _directory(project: Path, version: str | None) -> Path:
    return project / "target" / version if version else project / "target"


def _jar(project: Path, version: str | None) -> Path:
    return _directory(project, version) / f"{project.name}-1.jar"


def _newest_source(project: Path, version: str | None = None) -> float:
    """The newest of the files the build of ``version`` (None: the pinned release) compiles:
    src/main, the release's generation (``src/log`` or ``src/unified-log``) and its scheduler's era
    (``src/before-2.4``, ``src/since-2.4``), or in kafka-target its LogManager's (``src/before-4.4``,
    ``src/since-4.4``); a change to another generation's or era's sources leaves this jar as is."""
    return max(path.stat().st_mtime for _, path in _build_inputs(project, version))


def _build_inputs(project: Path, version: str | None) -> list[tuple[str, Path]]:
    """(name, path) of every file the build of ``version`` reads: the pom, the shared protocol
    classes and the source sets of :func:`_source_sets`."""
    named = [("pom.xml", project / "pom.xml")]
    named += [(f"shared/{f.relative_to(SHARED_SOURCES)}", f) for f in SHARED_SOURCES.rglob("*")]
    for d in _source_sets(version or PINNED):
        named += [(str(f.relative_to(project)), f) for f in (project / "src" / d).rglob("*")]
    return sorted((name, path) for name, path in named if path.is_file())


def _source_sets(version: str) -> tuple[str, ...]:
    """The folders of src that the pom compiles for ``version``: kafka-target's from 4.1,
    kafka-target-scala's before."""
    if _line(version) >= (4, 1):
        return ("main", _manager_sources(version))
    if _line(version) >= (3, 1):
        return ("main", UNIFIED_LOG)
    if _line(version) < (1, 1):
        return ("main", BEFORE_1_1, "before-2.4")
    return ("main", "log", "before-2.4" if _before_2_4(version) else "since-2.4")


def _manager_sources(version: str) -> str:
    """4.4 moved LogManager from the broker's Scala ``kafka.log`` to kafka-storage."""
    return SINCE_4_4 if _line(version) >= (4, 4) else BEFORE_4_4


def _before_2_4(version: str | None) -> bool:
    return version is not None and _line(version) < (2, 4)


def _built(project: Path, version: str | None = None) -> bool:
    """The jar is newer than every source and every jar its classpath names is in the local
    Maven repository (a fresh machine has a classpath file only if someone copied it there)."""
    jar, classpath = _jar(project, version), _directory(project, version) / "classpath.txt"
    if not (jar.is_file() and classpath.is_file() and jar.stat().st_mtime >= _newest_source(project, version)):
        return False
    return all(os.path.isfile(p) for p in classpath.read_text().strip().split(os.pathsep) if p)


def build(project: Path = PROJECT, version: str | None = None) -> str:
    """The classpath of the built target (jar first), building it when any source is newer;
    ``version`` builds that Kafka release into ``target/<version>/`` (``-Dkafka.version``).  A
    build whose sources another checkout built already is taken from :data:`BUILD_CACHE`."""
    if not (project / "pom.xml").is_file():
        raise KafkaTargetError(f"kafka target: no Maven project at {project}")
    with open(project.parent / ".kafka-target.lock", "w") as lock:  # xdist workers build once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _built(project, version) and not _from_cache(project, version):
            what = f"{project.name} for Kafka {version or PINNED}"
            print(
                f"klc: building {what} with Maven (once per release and source change)...", file=sys.stderr, flush=True
            )
            began = time.monotonic()
            _run_maven(project, version)
            print(f"klc: built {what} in {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
            _to_cache(project, version)
    classpath = (_directory(project, version) / "classpath.txt").read_text().strip()
    return os.pathsep.join([str(_jar(project, version)), classpath])


# Built adapters by the digest of what their build reads, shared by every checkout of the machine: a
# fresh clone (CI, a worktree) otherwise runs Maven once per release, 6-16 s each.
# KLC_BUILD_CACHE=off builds in the checkout only.
BUILD_CACHE = Path(os.environ.get("KLC_BUILD_CACHE") or Path.home() / ".cache" / "klc" / "kafka-target")


def _source_digest(project: Path, version: str | None) -> str:
    """SHA-256 of the adapter's project, the release's Maven properties and every file the build of
    ``version`` reads, by name and content."""
    digest = hashlib.sha256(json.dumps([project.name, version, _maven_properties(version)]).encode())
    for name, path in _build_inputs(project, version):
        digest.update(f"\0{name}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _cache_entry(project: Path, version: str | None) -> Path | None:
    return None if str(BUILD_CACHE) == "off" else BUILD_CACHE / _source_digest(project, version)


def _from_cache(project: Path, version: str | None) -> bool:
    """Copy a cached build of the same sources into the checkout's target directory; False when
    there is none, it cannot be copied, or it names a jar the local Maven repository lacks."""
    entry = _cache_entry(project, version)
    if entry is None or not (entry / "adapter.jar").is_file() or not (entry / "classpath.txt").is_file():
        return False
    try:
        _directory(project, version).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(entry / "classpath.txt", _directory(project, version) / "classpath.txt")
        shutil.copyfile(entry / "adapter.jar", _jar(project, version))  # newer than every source now
    except OSError:
        return False
    return _built(project, version)


def _to_cache(project: Path, version: str | None) -> None:
    """Keep a finished build for other checkouts: written beside the entry, then renamed into place.
    The cache only saves time: one that cannot be written is left as it is."""
    entry = _cache_entry(project, version)
    if entry is None or entry.exists():
        return
    partial = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=entry.parent))
        shutil.copyfile(_directory(project, version) / "classpath.txt", partial / "classpath.txt")
        shutil.copyfile(_jar(project, version), partial / "adapter.jar")
        os.rename(partial, entry)
    except OSError:
        if partial is not None:
            shutil.rmtree(partial, ignore_errors=True)


def _run_maven(project: Path, version: str | None = None) -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise KafkaTargetError(
                f"kafka target: {tool!r} is not on PATH (the target needs Java 17+ and Maven; see docs/kafka-target.md)"
            )
    last = None
    for offline in (True, False):  # offline first: a warm local repository needs no network
        release = _maven_properties(version)
        cmd = ["mvn", "-q", "-B", *(["-o"] if offline else []), "package", "-DskipTests", *release]
        try:
            done = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise KafkaTargetError(f"kafka target: the Maven build did not finish in {BUILD_TIMEOUT_S} s") from None
        if done.returncode == 0 and _built(project, version):
            return
        last = (done.stdout + done.stderr).strip().splitlines()
    errors = [line.strip() for line in last if "ERROR" in line and ("/" in line or ":" in line)][:3] or last[-3:]
    raise KafkaTargetError(f"kafka target: the Maven build of {project} failed: {' | '.join(errors)}")


WORKDIR_PREFIX = "klc-jvm-"  # then the pid of the klc process that started the JVM


def _sweep_workdirs() -> None:
    """Remove the JVM dirs whose klc process is gone: a process that ends without running its exit
    handlers (a pool's worker, a SIGKILL) leaves its JVMs' dirs behind."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), WORKDIR_PREFIX + "*-*")):
        owner = os.path.basename(path)[len(WORKDIR_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _absolute(classpath: str) -> str:
    """``classpath`` with each entry made absolute (the JVM runs in a dir of its own); a ``*``
    entry stays a wildcard."""
    return os.pathsep.join(os.path.abspath(e) if e else e for e in classpath.split(os.pathsep))


class Jvm:
    """One running kafka-target process: :meth:`request` sends a JSON line and returns the answer.

    A JVM that exits, or gives no answer within :data:`ANSWER_TIMEOUT_S` (then it is killed: a hung
    JVM reads no ``quit`` either), is a :class:`KafkaTargetError` naming the request, how the
    process ended and the tail of its stderr.  A request interrupted on our side (SIGINT, or SIGTERM
    and SIGHUP, which ``klc`` turns into the same interruption) kills the JVM too: its answer would
    otherwise be read as the answer to the next request."""

    def __init__(self, classpath: str):
        java = shutil.which("java")
        if java is None:
            raise KafkaTargetError("kafka target: 'java' is not on PATH (the target needs Java 17+)")
        self.classpath = classpath
        # its own working dir: what the JVM or a patched class writes by a relative name (a mutant's
        # stray file, a crash report) lands there, not in the caller's dir, and goes with the JVM
        _sweep_workdirs()
        self.workdir = tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-")
        self.process = subprocess.Popen(
            [java, *JVM_OPTIONS, *extra_options(), "-cp", _absolute(classpath), "klc.kafka.Main"],
            cwd=self.workdir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        self.answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.process.stdout, self.answers.put), daemon=True).start()
        keep = self.stderr.append if not os.environ.get("KLC_KAFKA_DEBUG") else _kept_and_echoed(self.stderr)
        self.stderr_pump = threading.Thread(target=self._pump, args=(self.process.stderr, keep), daemon=True)
        self.stderr_pump.start()
        self.version = self.request({"op": "hello"}, max(ANSWER_TIMEOUT_S, STARTUP_TIMEOUT_S))["ok"]["kafka"]

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink(line.rstrip("\n"))
        if sink.__name__ == "put":
            sink(None)

    def alive(self) -> bool:
        return self.process.poll() is None

    def request(self, message: dict, timeout_s: float | None = None) -> dict:
        if not self.alive():
            raise KafkaTargetError(f"kafka target: the JVM has exited ({self._ended()}){self._tail()}")
        sent = json.dumps(message) + "\n"
        try:
            line = self._exchange(sent, message.get("op"), ANSWER_TIMEOUT_S if timeout_s is None else timeout_s)
        except KafkaTargetError:
            raise
        except BaseException:  # interrupted: the JVM would answer this request to the next one
            self.kill()
            raise
        try:
            answer = json.loads(line)
        except ValueError:
            raise KafkaTargetError(f"kafka target: not a JSON answer: {line[:200]!r}{self._tail()}") from None
        if "harness" in answer:
            raise KafkaTargetError(f"kafka target: {answer['harness']}")
        return answer

    def _exchange(self, sent: str, op: str | None, timeout_s: float) -> str:
        """Send one request line, wait for its answer line; a JVM that dies or hangs meanwhile is a
        :class:`KafkaTargetError`."""
        try:
            self.process.stdin.write(sent)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self._reap()
            raise KafkaTargetError(
                f"kafka target: the JVM stopped reading requests ({e}; {self._ended()}){self._tail()}"
            ) from None
        try:
            line = self.answers.get(timeout=timeout_s)
        except queue.Empty:
            self.kill()  # it is hung: it would not read a quit either
            raise KafkaTargetError(
                f"kafka target: no answer to {op!r} within {timeout_s:.0f} s "
                f"(KLC_KAFKA_TIMEOUT); the JVM was killed{self._tail()}"
            ) from None
        if line is None:
            self._reap()
            raise KafkaTargetError(f"kafka target: the JVM died during {op!r} ({self._ended()}){self._tail()}")
        return line

    def _reap(self) -> None:
        """Wait for a JVM whose output ended, and for the last of its stderr (what it said as it died)."""
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
        self.stderr_pump.join(timeout=5)
        self._drop_workdir()

    def _drop_workdir(self) -> None:
        if self.process.poll() is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _ended(self) -> str:
        """How the process ended: its exit status, or the signal that killed it."""
        code = self.process.returncode
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    def _tail(self) -> str:
        lines = [s for s in self.stderr if s.strip()][-5:]
        if not lines:
            return "; it wrote nothing on stderr (KLC_KAFKA_DEBUG=1 has Kafka log there)"
        return "; its stderr ends: " + " | ".join(lines)

    def stop(self) -> None:
        if self.alive():
            try:
                self.process.stdin.write('{"op": "quit"}\n')
                self.process.stdin.flush()
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self._drop_workdir()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self.stderr_pump.join(timeout=5)
        self._drop_workdir()


_SHARED: dict[str, Jvm] = {}


def shared(classpath: str | None = None, version: str | None = None) -> Jvm:
    """The process's JVM for ``classpath`` (default: the build of ``version``'s adapter, the pinned
    release when None), started on first use."""
    classpath = classpath or build_for(version)
    jvm = _SHARED.get(classpath)
    if jvm is None or not jvm.alive():
        jvm = _SHARED[classpath] = Jvm(classpath)
    return jvm


_SCRATCH: set[str] = set()


def scratch_dir(prefix: str) -> str:
    """A new temp dir for a JVM's files (a kafka target's root), removed when this process exits
    if its owner did not remove it: a harness error or an interruption (SIGINT, SIGTERM, SIGHUP)
    while a target was still being set up leaves no ``klc-kafka-*`` behind."""
    for gone in [d for d in _SCRATCH if not os.path.isdir(d)]:  # removed by their owners
        _SCRATCH.discard(gone)
    path = tempfile.mkdtemp(prefix=prefix)
    _SCRATCH.add(path)
    return path


def stop_shared(keep: frozenset[str] = frozenset()) -> None:
    """Stop the JVMs this process started but those of the classpaths in ``keep`` (each quits),
    so the next kafka target starts a new one: a per-case or per-build run (docs/kafka-mutation.md)."""
    for classpath in [c for c in _SHARED if c not in keep]:
        _SHARED.pop(classpath).stop()


def shared_classpaths() -> frozenset[str]:
    """The classpaths of the JVMs this process runs now."""
    return frozenset(c for c, jvm in _SHARED.items() if jvm.alive())


@atexit.register
def _stop_all() -> None:
    """At exit: every JVM stopped (killed when it does not quit), then what they left removed."""
    for jvm in _SHARED.values():
        jvm.stop()
    for path in _SCRATCH:
        shutil.rmtree(path, ignore_errors=True)


def _kept_and_echoed(kept: collections.deque):
    """KLC_KAFKA_DEBUG: the JVM's stderr lines are kept for error reports and echoed to ours."""

    def append(line: str) -> None:
        kept.append(line)
        print(line, file=sys.stderr, flush=True)

    return append
