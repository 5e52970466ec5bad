"""The JVM behind the kafka target: building it from ``kafka-target/`` and talking to it.

The Maven project is built on first use (offline when the local repository already holds what it
needs, online otherwise) and its jar and classpath are reused while no source changed.  One JVM
serves every kafka target of a process (a test worker, a campaign task): starting it costs more
than most scenarios (docs/kafka-target.md).  Every failure — no Java, no Maven, a build that
fails, a JVM that dies or stops answering — is a :class:`KafkaTargetError` with one line saying
what happened, and the tail of the JVM's stderr where there is one.
"""

from __future__ import annotations

import atexit
import collections
import fcntl
import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2] / "kafka-target"
JAR = "kafka-target-1.jar"
ANSWER_TIMEOUT_S = float(os.environ.get("KLC_KAFKA_TIMEOUT", "120"))
BUILD_TIMEOUT_S = 900
# small heap work, short-lived: the serial collector and the C1 compiler start fastest; the target
# attaches Byte Buddy to itself to see LogSegment.recover (docs/kafka-target.md)
JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djdk.attach.allowAttachSelf=true")


class KafkaTargetError(RuntimeError):
    """The kafka target could not be built, started, or it stopped answering: a harness error,
    never a verdict about Kafka."""


def _newest_source(project: Path) -> float:
    files = [project / "pom.xml", *(project / "src").rglob("*")]
    return max(f.stat().st_mtime for f in files if f.is_file())


def _built(project: Path) -> bool:
    """The jar is newer than every source and every jar its classpath names is in the local
    Maven repository (a fresh machine has a classpath file only if someone copied it there)."""
    jar, classpath = project / "target" / JAR, project / "target" / "classpath.txt"
    if not (jar.is_file() and classpath.is_file() and jar.stat().st_mtime >= _newest_source(project)):
        return False
    return all(os.path.isfile(p) for p in classpath.read_text().strip().split(os.pathsep) if p)


def build(project: Path = PROJECT) -> str:
    """The classpath of the built target (jar first), building it when any source is newer."""
    if not (project / "pom.xml").is_file():
        raise KafkaTargetError(f"kafka target: no Maven project at {project}")
    with open(project.parent / ".kafka-target.lock", "w") as lock:  # xdist workers build once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _built(project):
            _run_maven(project)
    classpath = (project / "target" / "classpath.txt").read_text().strip()
    return os.pathsep.join([str(project / "target" / JAR), classpath])


def _run_maven(project: Path) -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise KafkaTargetError(
                f"kafka target: {tool!r} is not on PATH (the target needs Java 17+ and Maven; see docs/kafka-target.md)"
            )
    last = None
    for offline in (True, False):  # offline first: a warm local repository needs no network
        cmd = ["mvn", "-q", "-B", *(["-o"] if offline else []), "package", "-DskipTests"]
        try:
            done = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise KafkaTargetError(f"kafka target: the Maven build did not finish in {BUILD_TIMEOUT_S} s") from None
        if done.returncode == 0 and _built(project):
            return
        last = (done.stdout + done.stderr).strip().splitlines()
    errors = [line.strip() for line in last if "ERROR" in line and ("/" in line or ":" in line)][:3] or last[-3:]
    raise KafkaTargetError(f"kafka target: the Maven build of {project} failed: {' | '.join(errors)}")


class Jvm:
    """One running kafka-target process: :meth:`request` sends a JSON line and returns the answer."""

    def __init__(self, classpath: str):
        java = shutil.which("java")
        if java is None:
            raise KafkaTargetError("kafka target: 'java' is not on PATH (the target needs Java 17+)")
        self.classpath = classpath
        self.process = subprocess.Popen(
            [java, *JVM_OPTIONS, "-cp", classpath, "klc.kafka.Main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        self.answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.process.stdout, self.answers.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.process.stderr, self.stderr.append), daemon=True).start()
        self.version = self.request({"op": "hello"})["ok"]["kafka"]

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink(line.rstrip("\n"))
        if sink.__name__ == "put":
            sink(None)

    def alive(self) -> bool:
        return self.process.poll() is None

    def request(self, message: dict) -> dict:
        if not self.alive():
            raise KafkaTargetError(f"kafka target: the JVM has exited ({self.process.returncode}){self._tail()}")
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise KafkaTargetError(f"kafka target: the JVM stopped reading requests ({e}){self._tail()}") from None
        try:
            line = self.answers.get(timeout=ANSWER_TIMEOUT_S)
        except queue.Empty:
            self.stop()
            raise KafkaTargetError(
                f"kafka target: no answer to {message.get('op')!r} within {ANSWER_TIMEOUT_S:.0f} s; the JVM was stopped{self._tail()}"
            ) from None
        if line is None:
            self.process.wait(timeout=10)
            raise KafkaTargetError(
                f"kafka target: the JVM died during {message.get('op')!r} (exit {self.process.returncode}){self._tail()}"
            )
        try:
            answer = json.loads(line)
        except ValueError:
            raise KafkaTargetError(f"kafka target: not a JSON answer: {line[:200]!r}{self._tail()}") from None
        if "harness" in answer:
            raise KafkaTargetError(f"kafka target: {answer['harness']}")
        return answer

    def _tail(self) -> str:
        lines = [s for s in self.stderr if s.strip()][-5:]
        return ("; stderr: " + " | ".join(lines)) if lines else ""

    def stop(self) -> None:
        if self.alive():
            try:
                self.process.stdin.write('{"op": "quit"}\n')
                self.process.stdin.flush()
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


_SHARED: dict[str, Jvm] = {}


def shared(classpath: str | None = None) -> Jvm:
    """The process's JVM for ``classpath`` (default: the project's build), started on first use."""
    classpath = classpath or build()
    jvm = _SHARED.get(classpath)
    if jvm is None or not jvm.alive():
        jvm = _SHARED[classpath] = Jvm(classpath)
    return jvm


@atexit.register
def _stop_all() -> None:
    for jvm in _SHARED.values():
        jvm.stop()
