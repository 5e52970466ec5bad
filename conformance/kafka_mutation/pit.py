"""PIT on Kafka's own classes, with Kafka's own unit tests from the release's test jar.

``kafka-mutation/`` (Maven) resolves PIT, its JUnit 5 plugin, the release's ``kafka-storage`` jar and
test jar and what those tests need, and unpacks the test jar (PIT looks for target tests only in
directories).  PIT's ``MutationCoverageReport`` then mutates the chosen classes of that jar
(``--mutableCodePaths``), runs the covering tests per mutant (coverage-based selection), and with
the ``EXPORT`` feature writes every mutant's class file beside its details.  :func:`mutants` reads
both into :class:`Mutant` values."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import attrs

from conformance.targets import HarnessError

CHECKOUT = Path(__file__).resolve().parents[2]
MODULE = CHECKOUT / "kafka-mutation"
# the release whose own tests are the yardstick: kafka-storage publishes its test jar, and this
# suite's 4.1-4.3 adapter runs it through the build-gating path (docs/kafka-mutation.md)
PINNED = "4.3.1"
RELEASES = ("4.3.1",)
PACKAGE = "org.apache.kafka.storage.internals.log"
CHECKPOINT = "org.apache.kafka.storage.internals.checkpoint"
# the classes the suite claims to cover, by short name (docs/kafka-mutation.md)
CLASSES = {
    "OffsetIndex": f"{PACKAGE}.OffsetIndex",
    "TimeIndex": f"{PACKAGE}.TimeIndex",
    "TransactionIndex": f"{PACKAGE}.TransactionIndex",
    "AbstractIndex": f"{PACKAGE}.AbstractIndex",
    "LogSegment": f"{PACKAGE}.LogSegment",
    "LogSegments": f"{PACKAGE}.LogSegments",
    "LogLoader": f"{PACKAGE}.LogLoader",
    "LocalLog": f"{PACKAGE}.LocalLog",
    "UnifiedLog": f"{PACKAGE}.UnifiedLog",
    "ProducerStateManager": f"{PACKAGE}.ProducerStateManager",
    "CheckpointFile": "org.apache.kafka.server.common.CheckpointFile",
    "OffsetCheckpointFile": f"{CHECKPOINT}.OffsetCheckpointFile",
    "CleanShutdownFileHandler": f"{CHECKPOINT}.CleanShutdownFileHandler",
}
INDEXES = ("OffsetIndex", "TimeIndex", "TransactionIndex", "AbstractIndex")
# Kafka's own unit tests run against the mutants: those of the log layer in kafka-storage's test jar
STORAGE_TESTS = tuple(
    f"{PACKAGE}.{t}"
    for t in (
        "OffsetIndexTest", "TimeIndexTest", "TransactionIndexTest", "AbstractIndexTest", "LogSegmentTest",
        "LogSegmentsTest", "LocalLogTest", "UnifiedLogTest", "ProducerStateManagerTest",
    )
) + tuple(
    f"{CHECKPOINT}.{t}"
    for t in (
        "CleanShutdownFileHandlerTest", "OffsetCheckpointFileWithFailureHandlerTest",
        "LeaderEpochCheckpointFileWithFailureHandlerTest",
    )
)  # fmt: skip
# ... and those of Scala core's test jar (kafka_2.13): the loader's own tests, and the log manager's
# and cleaner's, which load, recover and checkpoint logs through the same classes
CORE_TESTS = ("kafka.log.LogLoaderTest", "kafka.log.LogManagerTest", "kafka.log.LogCleanerTest")
KAFKA_TESTS = STORAGE_TESTS + CORE_TESTS
# ``--kafka-tests``: core's three classes make PIT's per-mutant reruns 1.76x longer (LogLoader,
# docs/kafka-mutation.md), so a large class can be judged by kafka-storage's alone
TEST_SETS = {"all": KAFKA_TESTS, "storage": STORAGE_TESTS}
# the unpacked test jars (kafka-mutation/pom.xml): PIT looks for target tests only in directories
TEST_DIRS = ("kafka-tests", "kafka-core-tests")
# candidate tests for Kafka: JUnit tests in Kafka's idiom (kafka-mutation/src/test/java) that kill a
# survivor of Kafka's own tests which this suite killed (docs/kafka-mutation.md)
CANDIDATE_TESTS = (
    "klc.mutation.candidates.LoadRemovesDeletedFilesTest", "klc.mutation.candidates.ReadCommittedListsAbortedTransactionsTest",
    "klc.mutation.candidates.TruncationRebuildsProducerStateTest", "klc.mutation.candidates.LogAppendBoundariesTest",
)
MUTATORS = "DEFAULTS,STRONGER"
STATUSES = ("KILLED", "SURVIVED", "TIMED_OUT", "NO_COVERAGE", "MEMORY_ERROR", "RUN_ERROR", "NON_VIABLE")
PIT_TIMEOUT_S = 6 * 3600


class MutationError(HarnessError):
    """Maven, PIT or a mutant's files could not be had: nothing was judged (one line says why)."""


@attrs.frozen
class Mutant:
    """One PIT mutant: where it is, what PIT's run of Kafka's tests did with it, its class file."""

    id: str  # ShortClass/N: the EXPORT folder's number within its class
    clazz: str  # the mutated class, dotted
    method: str
    descriptor: str
    line: int
    mutator: str  # PIT's mutator, short: VoidMethodCallMutator, RemoveConditionalMutator_ORDER_ELSE
    description: str  # "removed call to ...::flush"
    indexes: str  # PIT's instruction indexes, "5" or "5,7": with the mutator, the mutant's identity
    kafka_status: str  # PIT's status with Kafka's tests: KILLED, SURVIVED, TIMED_OUT, NO_COVERAGE, ...
    killing_test: str  # Kafka's test that killed it ("" when none)
    class_file: str  # the mutant's bytecode (EXPORT)

    @property
    def short_class(self) -> str:
        return self.clazz.rsplit(".", 1)[-1]

    @property
    def signature(self) -> str:
        """``class.method(descriptor)``: the method coverage's spelling (MethodCoverage.java)."""
        return f"{self.clazz}.{self.method}{self.descriptor}"

    @property
    def kafka_killed(self) -> bool:
        """Kafka's tests detected it: a failing test, or a timeout or memory error they caused
        (PIT's own "detected")."""
        return self.kafka_status in ("KILLED", "TIMED_OUT", "MEMORY_ERROR")


def build_module(release: str = PINNED) -> tuple[str, tuple[Path, ...], Path]:
    """(classpath, unpacked Kafka test jars, agent jar) of ``kafka-mutation/`` for ``release``,
    built by Maven if needed (offline first, then online)."""
    if release not in RELEASES:
        raise MutationError(f"kafka {release}: no mutation set-up (releases: {', '.join(RELEASES)})")
    out = MODULE / "target" / release
    cp, agent = out / "classpath.txt", out / "kafka-mutation-1.jar"
    tests = tuple(out / d for d in TEST_DIRS)
    stamp = out / ".built"  # Maven leaves an unchanged classpath.txt as it was: its own time says nothing
    newest = max(p.stat().st_mtime for p in [MODULE / "pom.xml", *(MODULE / "src").rglob("*.java")])
    built = cp.exists() and all(t.is_dir() for t in tests) and agent.exists() and stamp.exists()
    if not (built and stamp.stat().st_mtime >= newest):
        _maven(release)
        stamp.touch()
    return cp.read_text().strip(), tests, agent


def _maven(release: str) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MutationError("kafka-mutation: 'mvn' is not on PATH (Maven builds PIT's classpath)")
    last = ""
    for offline in (["-o"], []):
        run = subprocess.run(
            [mvn, "-q", *offline, "-f", str(MODULE / "pom.xml"), "package", f"-Dkafka.version={release}"],
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        if run.returncode == 0:
            return
        last = (run.stdout + run.stderr).strip().splitlines()[-1:] or ["(no output)"]
        last = last[0]
    raise MutationError(f"kafka-mutation: Maven could not build PIT's classpath for Kafka {release}: {last}")


def kafka_jars(classpath: str, release: str) -> tuple[str, ...]:
    """The release's own Kafka jars on PIT's classpath (``kafka-storage-4.3.1.jar``,
    ``kafka-server-common-4.3.1.jar``, ``kafka_2.13-4.3.1.jar``, ...; not the test jars): the code
    PIT may mutate."""
    jars = tuple(
        e for e in classpath.split(os.pathsep)
        if re.fullmatch(rf"kafka[-_][\w.-]*-{re.escape(release)}\.jar", os.path.basename(e))
    )  # fmt: skip
    if not any(os.path.basename(j) == f"kafka-storage-{release}.jar" for j in jars):
        raise MutationError(f"kafka-mutation: no kafka-storage-{release}.jar on PIT's classpath")
    return jars


def classes_of(jar: str) -> set[str]:
    return _classes_of(jar, os.stat(jar).st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _classes_of(jar: str, _mtime: int) -> frozenset[str]:
    with zipfile.ZipFile(jar) as z:
        return frozenset(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))


def jar_of(clazz: str, jars: tuple[str, ...] | list[str]) -> str:
    """The jar among ``jars`` that holds ``clazz`` (dotted), or a :class:`MutationError`."""
    for jar in jars:
        if clazz in classes_of(jar):
            return jar
    raise MutationError(f"no class {clazz} in {', '.join(os.path.basename(j) for j in jars)}")


def run_pit(classes: list[str], out: Path, release: str = PINNED, tests: tuple[str, ...] = KAFKA_TESTS,
            threads: int = 1, log=None) -> Path:  # fmt: skip
    """PIT over ``classes`` (dotted names) with Kafka's ``tests``; its report folder ``out`` (XML
    and CSV results, ``export/`` with every mutant's class).  A PIT that fails is a
    :class:`MutationError` with its last lines."""
    classpath, test_dirs, _agent = build_module(release)
    jars = kafka_jars(classpath, release)
    mutable = sorted({jar_of(c, jars) for c in classes if "*" not in c})  # PIT mutates only these jars
    java = shutil.which("java")
    if java is None:
        raise MutationError("kafka-mutation: 'java' is not on PATH (PIT needs Java 17+)")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    command = [
        java, "-cp", os.pathsep.join([*map(str, test_dirs), str(test_dirs[0].parent / "test-classes"), classpath]),
        "org.pitest.mutationtest.commandline.MutationCoverageReport",
        "--reportDir", str(out), "--targetClasses", ",".join(classes), "--targetTests", ",".join(tests),
        "--sourceDirs", str(out), "--mutableCodePaths", ",".join(mutable), "--mutators", MUTATORS,
        "--outputFormats", "XML,CSV", "--threads", str(threads), "--features", "+EXPORT",
        "--timestampedReports=false", "--verbosity", "QUIET_WITH_PROGRESS",
        # LogManagerTest.testInvalidLogDirNotFailLogManager fails unmutated as root (it makes a dir
        # unwritable, which root writes anyway): PIT leaves a test that fails on the stock release out
        # of its coverage, and says which in pit.log, rather than refusing the run
        "--skipFailingTests=true",
    ]  # fmt: skip
    with open(out / "pit.log", "w", encoding="utf-8") as logf:
        run = subprocess.run(command, stdout=logf, stderr=subprocess.STDOUT, timeout=PIT_TIMEOUT_S)
    if run.returncode != 0 or not (out / "mutations.xml").exists():
        tail = (out / "pit.log").read_text(errors="replace").strip().splitlines()[-3:]
        raise MutationError(f"PIT failed (exit {run.returncode}) on {', '.join(classes)}: {' | '.join(tail)}")
    return out


_DETAILS = re.compile(
    r"clazz=(?P<clazz>[^,]+), method=(?P<method>[^,]+), methodDesc=(?P<desc>[^\]]+)\], "
    r"indexes=\[(?P<indexes>[^\]]*)\], mutator=(?P<mutator>[^\]]+)\]"
)


def _key(clazz: str, method: str, desc: str, indexes: str, mutator: str) -> tuple:
    return clazz, method, desc, indexes.replace(" ", ""), mutator


def mutants(report: Path) -> list[Mutant]:
    """Every mutant of a PIT report folder: ``mutations.xml`` joined with ``export/`` by the
    mutant's identity (class, method, descriptor, instruction indexes, mutator).  A mutant in the
    results without exported bytecode, or the reverse, is a :class:`MutationError`."""
    exported = _exported(report)
    try:
        root = ET.parse(report / "mutations.xml").getroot()
    except (ET.ParseError, OSError) as e:
        raise MutationError(f"{report / 'mutations.xml'}: not PIT's XML results ({e})") from None
    out = []
    for m in root.iter("mutation"):
        text = {c.tag: (c.text or "") for c in m}
        indexes = ",".join(i.text or "" for i in m.iter("index"))
        key = _key(text["mutatedClass"], text["mutatedMethod"], text["methodDescription"], indexes, text["mutator"])
        if key not in exported:
            raise MutationError(f"{report}: mutant {key} has no exported class under export/")
        ident, class_file = exported.pop(key)
        out.append(
            Mutant(
                ident, key[0], key[1], key[2], int(text.get("lineNumber") or 0),
                key[4].rsplit(".", 1)[-1], text.get("description", ""), indexes, m.get("status", "?"),
                text.get("killingTest", "") or "", class_file,
            )
        )  # fmt: skip
    if exported:
        raise MutationError(f"{report}: {len(exported)} exported mutant(s) missing from mutations.xml")
    return sorted(out, key=lambda x: (x.clazz, int(x.id.rsplit("/", 1)[1])))


def _exported(report: Path) -> dict[tuple, tuple[str, str]]:
    found = {}
    for details in (report / "export").rglob("mutants/*/details.txt"):
        m = _DETAILS.search(details.read_text(errors="replace"))
        if m is None:
            raise MutationError(f"{details}: not PIT's mutant details")
        clazz = m["clazz"]
        class_file = details.parent / f"{clazz}.class"
        if not class_file.exists():
            raise MutationError(f"{details.parent}: no {clazz}.class")
        ident = f"{clazz.rsplit('.', 1)[-1]}/{details.parent.name}"
        found[_key(clazz, m["method"], m["desc"], m["indexes"], m["mutator"])] = (ident, str(class_file))
    return found
