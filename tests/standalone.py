"""A Spark standalone cluster on 127.0.0.1 for tests: a master and workers as subprocesses of the
pyspark installation's own ``bin/spark-class`` (pyspark ships Spark's jars), each in a process group
of its own so a test can kill a worker with its executor and Python workers, as a lost machine."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path


def spark_home() -> str:
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Standalone:
    """``with Standalone(tmp) as c: c.add_worker(); ... c.kill(worker)``: every process it started
    is killed (its whole group) on exit."""

    def __init__(self, work: Path):
        self.work = work
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        # every file the JVMs write goes under ``work``: a SIGKILLed JVM leaves its temp dirs behind
        self.env = os.environ | {
            "SPARK_HOME": spark_home(),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(work / "logs"),
            "SPARK_LOCAL_DIRS": str(work / "local"),  # the executors' too
            "SPARK_DAEMON_JAVA_OPTS": f"-Djava.io.tmpdir={work / 'jtmp'}",
            "SPARK_NO_DAEMONIZE": "1",
        }

    def __enter__(self) -> Standalone:
        for sub in ("logs", "local", "jtmp"):
            (self.work / sub).mkdir(parents=True, exist_ok=True)
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(free_port()))  # fmt: skip
        self._wait(lambda: _listening(self.port), "the master to listen")
        return self

    def __exit__(self, *exc) -> None:
        for p in reversed(self.procs):
            self.kill(p)

    def add_worker(self, cores: int = 1, memory: str = "1g") -> subprocess.Popen:
        return self._start(f"worker{len(self.procs)}", "org.apache.spark.deploy.worker.Worker", self.url,
                           "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                           "--port", str(free_port()), "--webui-port", str(free_port()),
                           "--work-dir", str(self.work / f"worker{len(self.procs)}"))  # fmt: skip

    def kill(self, proc: subprocess.Popen) -> None:
        """SIGKILL the process's group: the worker, its executor JVM and that JVM's Python workers."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(30)

    def _start(self, name: str, cls: str, *args: str) -> subprocess.Popen:
        log = open(self.work / f"{name}.log", "wb")  # noqa: SIM115 — the process writes it until killed
        cmd = [os.path.join(spark_home(), "bin", "spark-class"), cls, *args]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    @staticmethod
    def _wait(ready, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout} s for {what}")
            time.sleep(0.2)
