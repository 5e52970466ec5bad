"""A Kafka build given by its jars (``--kafka-classpath``): which Kafka it is, and whether it can be
judged at all (docs/gate.md).

The build's jars *replace* the release's: the adapter of the build's generation runs on exactly
these jars plus its own third-party dependencies (:func:`kafka_jvm.classpath_of`), so what is
judged is what the user built.  The build is trusted only as far as its jars say: the version and
commit come from ``kafka/kafka-version.properties`` (Kafka's build writes it into kafka-clients and
its other jars), and a set of jars that is not one Kafka — no log classes, two versions, two copies
of a class, a jar of the generation's missing — is refused in one line, never judged as something
else.  :attr:`KafkaBuild.digest` names the jar set by content: runs of two builds of one version
never share results (campaign seeds, reports)."""

from __future__ import annotations

import glob
import hashlib
import os
import re
import zipfile

import attrs

from conformance.targets.kafka_jvm import KafkaTargetError

VERSION_FILE = "kafka/kafka-version.properties"
RELEASE_PREFIX = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")  # 0.MAJOR.MINOR.PATCH before 1.0
# the classes a generation's adapter drives, by the Kafka line that has them (docs/kafka-target.md)
LOG_MANAGER_SCALA = "kafka/log/LogManager.class"
LOG_MANAGER_JAVA = "org/apache/kafka/storage/internals/log/LogManager.class"
UNIFIED_LOG_JAVA = "org/apache/kafka/storage/internals/log/UnifiedLog.class"
UNIFIED_LOG_SCALA = "kafka/log/UnifiedLog.class"
LOG_SCALA = "kafka/log/Log.class"
LOG_CLASSES = (LOG_MANAGER_JAVA, LOG_MANAGER_SCALA, UNIFIED_LOG_JAVA, UNIFIED_LOG_SCALA, LOG_SCALA)
KAFKA_PACKAGES = ("kafka/", "org/apache/kafka/")
SOURCE_TREE_EXTRAS = ("-test.jar", "-sources.jar", "-javadoc.jar", "-test-sources.jar", "-test-fixtures.jar")


class BuildRefused(KafkaTargetError):
    """The classpath is not one Kafka build that can be judged; the message is one line (a harness
    error: nothing was judged)."""


@attrs.frozen
class KafkaBuild:
    """What is judged: the build's jars, the Kafka version and commit they carry, their digest."""

    source: str  # what was given (--kafka-classpath), or where the pinned release's jars came from
    jars: tuple[str, ...]  # every jar, in classpath order
    version: str  # as kafka-version.properties says: 4.3.1, 4.4.0-SNAPSHOT
    commit: str  # its commitId (a source build's git commit; "unknown" when the build wrote none)
    digest: str  # SHA-256 over the jars' names and contents (sorted by name)
    kafka_jars: tuple[str, ...]  # the jars holding Kafka's classes

    @property
    def release(self) -> str:
        """MAJOR.MINOR.PATCH of :attr:`version`, which picks the adapter (a -SNAPSHOT is its line's)."""
        return RELEASE_PREFIX.match(self.version)[0]

    @property
    def line(self) -> tuple[int, int]:
        m = RELEASE_PREFIX.match(self.version)
        return int(m[1]), int(m[2])

    def describe(self) -> str:
        """One line: what was judged."""
        return (
            f"Kafka {self.version} (commit {self.commit}, jars sha256:{self.digest[:16]}, "
            f"{len(self.jars)} jars from {self.source})"
        )

    def to_json(self) -> dict:
        return {
            "version": self.version,
            "commit": self.commit,
            "digest": self.digest,
            "jars": len(self.jars),
            "source": self.source,
        }


def jars_of(spec: str) -> list[str]:
    """The jars a ``--kafka-classpath`` names: entries separated by the path separator, each a jar,
    a glob (``libs/*``, Java's spelling of a directory's jars), a directory of jars (a release's
    ``libs/``, or its root holding ``libs/``), or a Kafka source tree whose build made its jars
    (``./gradlew jar``: every module's ``build/libs`` and core's ``dependant-libs``)."""
    out: list[str] = []
    for entry in [e for e in spec.split(os.pathsep) if e.strip()]:
        out += _entry_jars(entry)
    if not out:
        raise BuildRefused(f"{spec!r}: names no jar")
    return list(dict.fromkeys(os.path.abspath(j) for j in out))


def _entry_jars(entry: str) -> list[str]:
    if any(c in entry for c in "*?["):
        found = sorted(p for p in glob.glob(entry) if p.endswith(".jar") and os.path.isfile(p))
        if not found:
            raise BuildRefused(f"{entry}: matches no jar")
        return found
    if os.path.isfile(entry):
        if not entry.endswith(".jar"):
            raise BuildRefused(f"{entry}: not a jar (a classpath entry must be a jar, a directory of jars or a glob)")
        return [entry]
    if not os.path.isdir(entry):
        raise BuildRefused(f"{entry}: no such file or directory")
    if _is_source_tree(entry):
        return _source_tree_jars(entry)
    if os.path.isdir(os.path.join(entry, "libs")) and not glob.glob(os.path.join(entry, "*.jar")):
        entry = os.path.join(entry, "libs")  # a release's root: bin/, config/, libs/
    found = sorted(glob.glob(os.path.join(entry, "*.jar")))
    if not found:
        raise BuildRefused(f"{entry}: a directory with no jar in it")
    return found


def _is_source_tree(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "settings.gradle")) and os.path.isdir(os.path.join(path, "clients"))


def _source_tree_jars(root: str) -> list[str]:
    """A Kafka checkout's build outputs: ``*/build/libs`` and ``*/*/build/libs`` (storage/api,
    server-common, ...) without test, source and javadoc jars, and core's ``dependant-libs*``
    (the jars the broker runs with: third-party ones, and copies of the modules' own, which the
    modules' jars stand for)."""
    built = glob.glob(os.path.join(root, "*", "build", "libs", "*.jar"))
    built += glob.glob(os.path.join(root, "*", "*", "build", "libs", "*.jar"))
    built = sorted(j for j in built if not j.endswith(SOURCE_TREE_EXTRAS))
    if not built:
        raise BuildRefused(f"{root}: a Kafka source tree with no built jar (run ./gradlew jar there first)")
    names = {os.path.basename(j) for j in built}
    deps = sorted(glob.glob(os.path.join(root, "core", "build", "dependant-libs*", "*.jar")))
    return built + [d for d in deps if os.path.basename(d) not in names]


_JAR_FACTS: dict[tuple[str, int, int], tuple[str, str | None, frozenset[str]]] = {}


def _facts(jar: str) -> tuple[str, str | None, frozenset[str]]:
    """(SHA-256 of the jar, its kafka-version.properties text or None, its Kafka class entries),
    kept per process by path, size and modification time."""
    st = os.stat(jar)
    key = (jar, st.st_size, st.st_mtime_ns)
    if key not in _JAR_FACTS:
        digest = hashlib.sha256()
        with open(jar, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        try:
            with zipfile.ZipFile(jar) as z:
                names = z.namelist()
                props = z.read(VERSION_FILE).decode("utf-8", "replace") if VERSION_FILE in names else None
        except (zipfile.BadZipFile, OSError) as e:
            raise BuildRefused(f"{jar}: not a readable jar ({e})") from None
        classes = frozenset(n for n in names if n.endswith(".class") and n.startswith(KAFKA_PACKAGES))
        _JAR_FACTS[key] = (digest.hexdigest(), props, classes)
    return _JAR_FACTS[key]


def _properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out


def inspect(spec: str, source: str | None = None) -> KafkaBuild:
    """The build ``spec`` names (:func:`jars_of`), or :class:`BuildRefused` saying in one line why
    it cannot be judged."""
    return inspect_jars(jars_of(spec), source or spec)


def inspect_jars(jars: list[str], source: str) -> KafkaBuild:
    """The build of ``jars``; a jar with the same bytes as an earlier one is the same jar (the JVM
    loads the first) and is left out, so only different copies of a class are refused."""
    seen: set[str] = set()
    unique = []
    for jar in jars:
        if _facts(jar)[0] not in seen:
            seen.add(_facts(jar)[0])
            unique.append(jar)
    jars = unique
    facts = {j: _facts(j) for j in jars}
    versions: dict[str, list[str]] = {}
    commits = set()
    for jar, (_d, props, _c) in facts.items():
        if props is not None:
            p = _properties(props)
            versions.setdefault(p.get("version", "?"), []).append(os.path.basename(jar))
            commits.add(p.get("commitId", "unknown"))
    owners: dict[str, list[str]] = {}
    for jar, (_d, _p, classes) in facts.items():
        for c in classes:
            owners.setdefault(c, []).append(jar)
    log_classes = [c for c in LOG_CLASSES if c in owners]
    if not log_classes:
        raise BuildRefused(
            f"{source}: no Kafka log classes in {len(jars)} jar(s) (neither kafka.log.LogManager nor "
            "org.apache.kafka.storage.internals.log.UnifiedLog): not a Kafka build"
        )
    if len(versions) > 1:
        named = ", ".join(f"{v} ({sorted(js)[0]})" for v, js in sorted(versions.items()))
        raise BuildRefused(f"{source}: two Kafka versions in one classpath: {named}")
    twice = sorted(c for c, js in owners.items() if len(js) > 1)
    if twice:
        js = owners[twice[0]]
        raise BuildRefused(
            f"{source}: two copies of {_class_name(twice[0])} ({os.path.basename(js[0])}, "
            f"{os.path.basename(js[1])}) and {len(twice) - 1} other class(es): one build at a time"
        )
    if not versions:
        raise BuildRefused(f"{source}: no {VERSION_FILE} in any jar (kafka-clients holds it): which Kafka is this?")
    (version,) = versions
    if not RELEASE_PREFIX.match(version):
        raise BuildRefused(f"{source}: {VERSION_FILE} says version {version!r}, not MAJOR.MINOR.PATCH")
    digest = hashlib.sha256()
    for jar in sorted(jars, key=lambda j: (os.path.basename(j), j)):
        digest.update(f"{os.path.basename(jar)}\0{facts[jar][0]}\n".encode())
    kafka_jars = tuple(j for j in jars if facts[j][2] or facts[j][1] is not None)
    commit = "unknown" if len(commits) != 1 else commits.pop()
    return KafkaBuild(source, tuple(jars), version, commit, digest.hexdigest(), kafka_jars)


def required_classes(line: tuple[int, int]) -> tuple[str, ...]:
    """The log classes the adapter of ``line``'s generation drives (docs/kafka-target.md)."""
    if line >= (4, 4):
        return (LOG_MANAGER_JAVA, UNIFIED_LOG_JAVA)
    if line >= (4, 1):
        return (LOG_MANAGER_SCALA, UNIFIED_LOG_JAVA)
    if line >= (3, 1):
        return (LOG_MANAGER_SCALA, UNIFIED_LOG_SCALA)
    return (LOG_MANAGER_SCALA, LOG_SCALA)


def missing_classes(build: KafkaBuild) -> list[str]:
    present = set().union(*(_facts(j)[2] for j in build.kafka_jars))
    return [_class_name(c) for c in required_classes(build.line) if c not in present]


def _class_name(entry: str) -> str:
    return entry.removesuffix(".class").replace("/", ".")


def artifact_of(jar: str) -> str:
    """A Kafka jar's artifact id by its name: ``kafka-storage-api-4.4.0.jar`` → ``kafka-storage-api``."""
    name = os.path.basename(jar).removesuffix(".jar")
    m = re.match(r"(.+?)-\d", name)
    return m[1] if m else name
