"""``klc campaign``: fuzzing campaigns of crash scenarios on Spark (local mode by default).

Stages, as in ClusterFuzz:

1. **fuzz** — waves of :class:`~conformance.campaign.tasks.Task` (seed-addressed, stateless) run on
   the executors; each wave's rows are appended to the results table (:mod:`.table`) at once, and seeds
   already in the table for this commit, profile, target and Kafka build are skipped (resumable);
2. **reproduce** — each new signature's scenario is replayed N times (a signature that does not come
   back every time is marked flaky);
3. **shrink** — its task is rerun with Hypothesis's shrinker on;
4. **dedupe** — shrunk findings with the same signature are one finding;
5. **corpus** — one folder per new signature under ``corpora/found/`` (:mod:`.corpus`).

Then ``<out>/report.html`` (:mod:`.report`) and ``<out>/findings.json``.  Every stage's work is a plain
function of its input row, so the same code runs on Spark executors or in local processes
(``executor="processes"``, the baseline the campaign benchmark compares Spark with).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import fcntl
import json
import multiprocessing
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Callable
from importlib.metadata import version

import attrs

from conformance.campaign import corpus, table
from conformance.campaign.report import scenarios_per_second, write_report
from conformance.campaign.tasks import SHRINK_SECONDS, Task, TaskError, reproduce, run_task, shrink
from model.log_manager import BRANCHES


class CampaignError(Exception):
    """A campaign that cannot start: bad arguments, no Java runtime, an unreachable master."""


class CampaignAborted(CampaignError):
    """A campaign that started and could not finish: a Spark job failed after its retries."""


@attrs.frozen
class CampaignConfig:
    out: str = "campaign-out"
    budget_minutes: float | None = None
    scenarios: int | None = None
    master: str | None = None  # None: Spark local mode on every core
    profile: str = "all"
    target: str = "impl"
    examples_per_task: int = 20
    steps: int = 40
    corpus_dir: str | None = None  # None: corpora/found of the checkout
    reproduce_attempts: int = 3
    shrink_seconds: float = SHRINK_SECONDS  # each half of one failure's shrink (tasks.shrink)
    executor: str = "spark"  # or "processes"
    workers: int | None = None  # processes executor: how many (default: every core)
    commit: str | None = None  # None: the checkout's
    kafka_build: dict | None = None  # a kafka target's jars (kafka_build.KafkaBuild.to_json): keys the seeds
    kafka_classpath: str = ""  # the user's build the workers judge ("": the release's own jars)
    conf: tuple[str, ...] = ()  # --conf KEY=VALUE, passed to Spark


@attrs.define
class CampaignResult:
    run_id: str
    rows: list[dict]
    skipped: int
    findings: list[dict]
    seconds: float  # the whole campaign: Spark's start, fuzz stage, triage
    parallelism: int
    report: str
    run: dict  # OUT/runs/<run_id>.json: master, executors, fuzz stage seconds (docs/campaign.md)

    @property
    def scenarios_per_s(self) -> float | None:
        return scenarios_per_second(self.run)

    @property
    def failures(self) -> list[dict]:
        return [r for r in self.rows if r["status"] != "pass"]

    @property
    def scenarios(self) -> int:
        return sum(r["scenarios"] for r in self.rows)


def current_commit() -> str:
    """The checkout's commit (``+dirty`` with local changes), or the package version outside git."""
    root = corpus.CHECKOUT
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "v" + version("kafka-log-conformance")


# --- checks before anything starts ------------------------------------------------------------------

_MASTER = re.compile(
    r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|spark://.+|yarn|k8s://.+|mesos://.+)$"
)


def check_config(config: CampaignConfig) -> None:
    if config.budget_minutes is not None and config.scenarios is not None:
        raise CampaignError("give --budget-minutes or --scenarios, not both")
    if config.budget_minutes is not None and not config.budget_minutes > 0:
        raise CampaignError(f"--budget-minutes must be positive, got {config.budget_minutes}")
    if config.scenarios is not None and config.scenarios < 1:
        raise CampaignError(f"--scenarios must be at least 1, got {config.scenarios}")
    if config.examples_per_task < 1 or config.steps < 1 or config.reproduce_attempts < 1:
        raise CampaignError("--examples-per-task, --steps and --reproduce must be at least 1")
    if not config.shrink_seconds > 0:
        raise CampaignError(f"--shrink-seconds must be positive, got {config.shrink_seconds}")
    if config.executor not in ("spark", "processes"):
        raise CampaignError(f"unknown executor {config.executor!r} (spark or processes)")
    parse_conf(config.conf)
    if config.executor != "spark" and (config.conf or config.master):
        raise CampaignError(
            f"{'--conf' if config.conf else '--master'} is for Spark; --executor processes runs without Spark"
        )
    try:
        Task("x", 0, config.profile, config.target)
    except (TaskError, ValueError) as e:
        raise CampaignError(str(e)) from None
    if config.master is not None and not _MASTER.match(config.master):
        raise CampaignError(
            f"--master {config.master!r} is not a Spark master URL "
            "(local, local[N], local[*], spark://HOST:PORT, yarn, k8s://URL)"
        )
    if os.path.exists(config.out) and not os.path.isdir(config.out):
        raise CampaignError(f"--out {config.out}: exists and is not a directory")


def parse_conf(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` items as Spark properties (the value may hold ``=``; the last of a key wins)."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise CampaignError(f"--conf {item!r}: expected KEY=VALUE (e.g. spark.executor.memory=4g)")
        out[key.strip()] = value
    return out


def java_problem() -> str | None:
    """Why Spark cannot start a JVM here, or None.  Spark 4 needs Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        where = f"JAVA_HOME={home} has no bin/java" if home else "no `java` on PATH and JAVA_HOME is unset"
        return (
            f"Spark needs a Java runtime (17 or newer) and none was found ({where}); install one "
            "(Debian: apt-get install openjdk-17-jre-headless) or run with --executor processes"
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return f"Spark needs a Java runtime, and {java} does not run: {e}"
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m:
        major = int(m.group(2)) if m.group(1) == "1" else int(m.group(1))
        if major < 17:
            return f"Spark needs Java 17 or newer; {java} is Java {major}"
    return None


CONNECT_TIMEOUT_S = 5


def master_problem(master: str) -> str | None:
    """Why ``master`` cannot run a campaign, found before Spark starts, or None.  Spark itself retries
    an unreachable standalone master for a minute and prints pages of JVM stack traces for an
    unreachable Kubernetes API or a YARN master without its Hadoop configuration."""
    if master.startswith("spark://"):
        hosts = master[len("spark://") :].split(",")
        if any(_accepts(*_host_port(hp, 7077)) for hp in hosts):
            return None
        return (
            f"Spark master {master} is unreachable (no connection to {', '.join(hosts)} within {CONNECT_TIMEOUT_S} s)"
        )
    if master.startswith("k8s://"):
        url = master[len("k8s://") :]
        scheme, sep, rest = url.partition("://")
        if not sep:  # Spark's default: k8s://HOST:PORT is https
            scheme, rest = "https", url
        hostport = rest.split("/", 1)[0]
        host, port = _host_port(hostport, 443 if scheme == "https" else 80)
        if _accepts(host, port):
            return None
        return f"Kubernetes API {url} is unreachable (no connection to {host}:{port} within {CONNECT_TIMEOUT_S} s)"
    if master == "yarn":
        for var in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):
            if os.environ.get(var) and os.path.isdir(os.environ[var]):
                return None
        said = ", ".join(f"{v}={os.environ[v]}" for v in ("HADOOP_CONF_DIR", "YARN_CONF_DIR") if os.environ.get(v))
        return "--master yarn needs HADOOP_CONF_DIR or YARN_CONF_DIR naming the cluster's Hadoop configuration " + (
            f"directory ({said}: not a directory)" if said else "directory (neither is set)"
        )
    return None


def _host_port(hostport: str, default_port: int) -> tuple[str, int | None]:
    """``HOST:PORT``, ``HOST``, ``[V6]:PORT`` or a bare IPv6 address; port None when not a number."""
    if hostport.startswith("["):
        host, _, port = hostport[1:].partition("]")
        port = port.removeprefix(":")
    elif hostport.count(":") == 1:
        host, _, port = hostport.partition(":")
    else:
        host, port = hostport, ""
    try:
        return host, int(port) if port else default_port
    except ValueError:
        return host, None


def _accepts(host: str, port: int | None) -> bool:
    if port is None:
        return False
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return True
    except (OSError, ValueError):
        return False


# --- executors --------------------------------------------------------------------------------------


def _task_row(d: dict) -> dict:
    return run_task(Task(**d))


class _Processes:
    """The baseline: a local process pool running the same functions."""

    master = "processes"
    retried = 0  # a pool does not retry

    def __init__(self, workers: int | None):
        self.parallelism = workers or os.cpu_count() or 1
        self.pool = concurrent.futures.ProcessPoolExecutor(
            self.parallelism, mp_context=multiprocessing.get_context("fork")
        )

    def executors(self) -> int:
        return self.parallelism

    def map(self, fn: Callable, items: list, progress: Callable[[int], None]) -> list:
        futures = [self.pool.submit(fn, x) for x in items]
        pending = set(futures)
        while pending:  # the bar's clock moves while tasks run, as it does on Spark
            _done, pending = concurrent.futures.wait(pending, timeout=0.5)
            progress(len(futures) - len(pending))
        return [f.result() for f in futures]

    def stop(self) -> None:
        self.pool.shutdown()

    def cancel(self) -> None:
        """Interrupted (SIGINT, SIGTERM, SIGHUP): the tasks still queued or running are dropped and
        the workers ended, so that stopping does not wait for them."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        terminate = getattr(self.pool, "terminate_workers", None)  # Python 3.14
        if terminate is not None:
            terminate()
            return
        for process in list((getattr(self.pool, "_processes", None) or {}).values()):
            process.terminate()


# A task lost with its executor is rerun elsewhere: tasks are pure functions of their seed, so a
# rerun gives the same row.  Spark counts a task lost with an executor that died (killed by the OOM
# killer, crashed: "Command exited with code 137") against spark.task.maxFailures — at 1, one such
# death aborted the campaign — but not one lost with its whole worker ("worker lost").  Four
# attempts ride out a few lost executors per task; a task that fails four times fails
# deterministically (an exception outside run_task's own handling, executors whose Python cannot
# import the shipped code) and Spark aborts the job: the campaign ends with one line.  Excluding
# executors after failures (spark.excludeOnFailure.enabled) stays off: a dead executor is gone
# anyway, and a deterministic failure fails on every executor.  Local mode has no executors to lose
# and ignores this setting (local[N,F] sets it there).
TASK_MAX_FAILURES = 4


class _Spark:
    """Spark (local mode unless a master is given): one Spark task per campaign task."""

    def __init__(self, master: str | None, conf: dict[str, str] | None = None):
        problem = java_problem() or (master_problem(master) if master else None)
        if problem:
            raise CampaignError(problem)
        self.master = master or "local[*]"
        self.shipped: str | None = None
        self.retried = 0  # failed task attempts in the last map (each retried, up to TASK_MAX_FAILURES)
        # executors on other machines need PYSPARK_PYTHON (or spark.pyspark.python) naming their
        # Python when it is not at this path: docs/campaign.md, "Executors' Python"
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        try:
            from pyspark.sql import SparkSession  # pyspark: optional and slow to import
        except ImportError as e:
            raise CampaignError(f"pyspark is not installed ({e}); install the project (pip install -e .)") from None
        log4j = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
        # the driver JVM starts before any SparkConf is read: its options go on the submit line
        os.environ.setdefault(
            "PYSPARK_SUBMIT_ARGS", f"--driver-java-options -Dlog4j2.configurationFile=file:{log4j} pyspark-shell"
        )
        builder = (
            SparkSession.builder.master(self.master)
            .appName("klc campaign")
            .config("spark.ui.enabled", "false")
            .config("spark.python.worker.reuse", "true")
            .config("spark.task.maxFailures", str(TASK_MAX_FAILURES))
            .config("spark.ui.showConsoleProgress", "false")  # the driver draws its own bar
        )
        conf = dict(conf or {})
        java_options = f"-Dlog4j2.configurationFile=file:{log4j} " + conf.pop("spark.executor.extraJavaOptions", "")
        builder = builder.config("spark.executor.extraJavaOptions", java_options.strip())
        for key, value in conf.items():  # the user's --conf last: it wins
            builder = builder.config(key, value)
        try:
            self.spark = builder.getOrCreate()
        except Exception as e:  # noqa: BLE001 — Py4J/JVM failures: one clear line
            raise CampaignError(f"could not start Spark on {self.master}: {_first_line(e)}") from None
        self.sc = self.spark.sparkContext
        self.sc.setLogLevel("ERROR")
        if not self.master.startswith("local"):
            try:
                self.shipped = _ship_code()
                self.sc.addPyFile(self.shipped)
            except BaseException:
                self.stop()
                raise

    @property
    def parallelism(self) -> int:
        """The executors' cores now (at least 2): executors come and go on a cluster."""
        return self.sc.defaultParallelism

    def executors(self) -> int:
        """Live executors; local mode's one JVM counts as one."""
        infos = self.sc._jsc.sc().statusTracker().getExecutorInfos()  # the driver's is among them
        return max(len(infos) - 1, 1)

    def map(self, fn: Callable, items: list, progress: Callable[[int], None]) -> list:
        result: dict = {}
        group = f"klc-{uuid.uuid4().hex[:8]}"

        def collect():
            try:
                self.sc.setJobGroup(group, "klc campaign wave")
                result["rows"] = self.sc.parallelize(items, len(items)).map(fn).collect()
            except BaseException as e:  # noqa: BLE001 — re-raised on the driver thread
                result["error"] = e

        worker = threading.Thread(target=collect, daemon=True)
        worker.start()
        tracker = self.sc.statusTracker()
        while worker.is_alive():
            worker.join(0.5)
            progress(min(self._count(tracker, group, "numCompletedTasks"), len(items)))
        self.retried = self._count(tracker, group, "numFailedTasks")
        if "error" in result:
            raise CampaignAborted(
                f"a Spark job failed ({self.retried} failed task attempt(s)): {spark_failure(result['error'])}"
            )
        progress(len(items))
        return result["rows"]

    @staticmethod
    def _count(tracker, group: str, field: str) -> int:
        """``field`` of SparkStageInfo summed over the group's stages: numCompletedTasks, or
        numFailedTasks (task attempts that failed: a lost executor's tasks, each then retried)."""
        total = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info else ():
                s = tracker.getStageInfo(stage)
                total += getattr(s, field) if s else 0
        return total

    def stop(self) -> None:
        try:
            self.spark.stop()
        finally:
            if self.shipped:
                shutil.rmtree(os.path.dirname(self.shipped), ignore_errors=True)
                self.shipped = None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


_ABORTED = re.compile(r"Job aborted due to stage failure: (.*)$", re.M)


def spark_failure(e: BaseException) -> str:
    """One line for a failed Spark job: Spark's reason (``Task 3 in stage 0.0 failed 4 times ...
    ExecutorLostFailure``) and the Python exception's last line, not Py4J's ``An error occurred
    while calling o81.collect`` nor the Python worker's traceback."""
    text = str(e)
    aborted = _ABORTED.search(text)
    py_errors = [
        line.strip()
        for line in text.splitlines()
        if re.match(r"\s*[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b(:|$)", line)
        and not line.strip().startswith(("org.apache", "py4j", "java."))
    ]
    parts = [aborted.group(1).strip() if aborted else _first_line(e)]
    if py_errors:
        parts.append(py_errors[-1])
    return "; ".join(dict.fromkeys(parts))[:500]


def _ship_code() -> str:
    """A zip of model/, impl/, conformance/ and tests/mutants for executors on other machines (their
    Python needs the project's dependencies installed; the code itself comes from this commit), in
    a temp dir of its own that :meth:`_Spark.stop` removes."""
    folder = tempfile.mkdtemp(prefix="klc-ship-")
    path = os.path.join(folder, "klc-code.zip")
    try:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for top in ("model", "impl", "conformance", "tests/mutants"):
                for base, _dirs, files in os.walk(os.path.join(corpus.CHECKOUT, top)):
                    for name in files:
                        if name.endswith((".py", ".properties")):
                            full = os.path.join(base, name)
                            z.write(full, os.path.relpath(full, corpus.CHECKOUT))
            z.writestr("tests/__init__.py", "")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return path


# --- the campaign -----------------------------------------------------------------------------------


def _seeds(done: set[int]):
    seed = 0
    while True:
        if seed not in done:
            yield seed
        seed += 1


def run_campaign(config: CampaignConfig, ui=None) -> CampaignResult:
    """Run a campaign; ``ui`` (optional) gets ``start(total, unit)``, ``advance_to(n, elapsed_s)``,
    ``stage(text)`` and ``note(text)``."""
    check_config(config)
    ui = ui or _SilentUi()
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    if config.executor == "spark":  # what keeps Spark from starting, said before anything is written in OUT
        problem = java_problem() or (master_problem(config.master) if config.master else None)
        if problem:
            raise CampaignError(problem)
    with out_lock(config.out, run_id, ui):
        return _run_campaign(config, ui, run_id)


LOCK_FILE = ".campaign.lock"


@contextlib.contextmanager
def out_lock(out: str, run_id: str, ui):
    """One campaign at a time in ``out``: a second one waits here until the first has written its
    rows, run record and report, then reads the table and skips what the first ran — no seed runs
    twice, no row is lost.  A POSIX record lock (``lockf``) on ``OUT/.campaign.lock``: the kernel
    releases it when the holder dies, however it dies, and unlike ``flock`` it is not inherited by
    the process pool's forked workers (a killed driver's orphans would hold it)."""
    try:
        os.makedirs(out, exist_ok=True)
        lock = open(os.path.join(out, LOCK_FILE), "a+", encoding="utf-8")
    except OSError as e:
        raise CampaignError(f"--out {out}: cannot create its lock file ({e.strerror or e})") from None
    with lock:
        try:
            fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.seek(0)
            holder = lock.read().strip() or "another campaign"
            waiting = f"waiting for {holder} to finish with {out} (one campaign at a time in an output folder)"
            if isinstance(ui, _SilentUi):  # --json: said on stderr, the summary stays alone on stdout
                print(f"klc campaign: {waiting}", file=sys.stderr, flush=True)
            else:
                ui.note(waiting)
            fcntl.lockf(lock, fcntl.LOCK_EX)
        lock.seek(0)
        lock.truncate()
        lock.write(f"campaign {run_id} (pid {os.getpid()} on {socket.gethostname()})\n")
        lock.flush()
        yield  # closing the file releases the lock


def _run_campaign(config: CampaignConfig, ui, run_id: str) -> CampaignResult:
    start = time.monotonic()
    commit = config.commit or current_commit()
    results = table.results_dir(config.out)
    try:
        previous = table.read(results)
    except table.TableError as e:
        raise CampaignError(str(e)) from None
    ours = (commit, config.profile, config.target, (config.kafka_build or {}).get("digest"))
    done = {  # a harness error judged nothing: its seed runs again
        r["seed"]
        for r in previous
        if (r["commit"], r["profile"], r["target"], r.get("kafka_build")) == ours and r["status"] != "error"
    }
    corpus_dir = config.corpus_dir or (corpus.DEFAULT_CORPUS if os.path.isdir(os.path.dirname(corpus.DEFAULT_CORPUS)) else os.path.join(config.out, "found"))  # fmt: skip
    executor = (
        _Spark(config.master, parse_conf(config.conf)) if config.executor == "spark" else _Processes(config.workers)
    )
    run = {
        "run_id": run_id, "commit": commit, "profile": config.profile, "target": config.target,
        "master": executor.master, "executor": config.executor, "conf": parse_conf(config.conf),
        "examples_per_task": config.examples_per_task, "status": "fuzzing", "waves": [],
        "kafka_build": config.kafka_build,
    }  # fmt: skip
    rows: list[dict] = []
    report = os.path.join(config.out, "report.html")
    try:
        try:
            _fuzz(executor, config, commit, run_id, _seeds(done), rows, run, ui)
            findings = _triage(executor, rows, corpus_dir, config.reproduce_attempts, config.shrink_seconds, ui)
        except BaseException as e:
            # what finished is in the table; the run record and the report say the run did not
            run["status"] = "aborted" if isinstance(e, CampaignAborted) else "interrupted"
            if isinstance(e, KeyboardInterrupt) and hasattr(executor, "cancel"):
                executor.cancel()
            _finish_run(config.out, run, rows, start)
            _write_outputs(config.out, report, rows, [], run)
            if isinstance(e, CampaignAborted):
                raise CampaignAborted(
                    f"{e} — {len(rows)} finished task(s) kept in {table.results_dir(config.out)} "
                    f"(rerunning resumes after them), report: {report}"
                ) from None
            raise
    finally:
        executor.stop()
    run["status"] = "finished"
    _finish_run(config.out, run, rows, start)
    _write_outputs(config.out, report, rows, findings, run)
    return CampaignResult(run_id, rows, len(done), findings, run["total_s"], run["cores"], report, run)


def _fuzz(executor, config: CampaignConfig, commit: str, run_id: str, seeds, rows: list, run: dict, ui) -> None:
    """The fuzz stage: waves of tasks until the scenario goal or the budget; each wave's rows go to
    the table at once.  Its clock (``run["fuzz_s"]``) starts once the executors are up: the budget,
    the progress bar's elapsed time and the throughput figure all count fuzzing only."""
    results = table.results_dir(config.out)
    goal = -(-config.scenarios // config.examples_per_task) if config.scenarios is not None else None
    budget = None if goal is not None else 60.0 * (config.budget_minutes or 1.0)
    ui.start(goal if goal is not None else budget, "tasks" if goal is not None else "s")
    t0 = time.monotonic()
    run["fuzz_s"] = 0.0
    while True:
        elapsed = time.monotonic() - t0
        n = goal - len(rows) if goal is not None else (0 if elapsed >= budget else 10**9)
        n = min(n, max(2 * executor.parallelism, 2))
        if n <= 0:
            break
        batch = [
            attrs.asdict(
                Task(
                    commit,
                    next(seeds),
                    config.profile,
                    config.target,
                    config.examples_per_task,
                    config.steps,
                    run_id,
                    (config.kafka_build or {}).get("digest", ""),
                    config.kafka_classpath,
                )  # fmt: skip
            )
            for _ in range(n)
        ]
        base = len(rows)

        def progress(k: int, base=base) -> None:
            now = time.monotonic() - t0
            ui.advance_to(base + k if goal is not None else min(now, budget), now)

        new = executor.map(_task_row, batch, progress)
        wave = len(run["waves"])
        table.append(results, new, f"{run_id}-{wave:05d}")
        rows.extend(new)
        run["fuzz_s"] = time.monotonic() - t0
        wave_s = run["fuzz_s"] - elapsed
        run["waves"].append(
            {
                "tasks": len(new),
                "seconds": round(wave_s, 3),
                "executors": executor.executors(),
                "cores": executor.parallelism,
                "retried": executor.retried,
            }
        )
        ui.note(
            f"wave {wave + 1}: {len(new)} tasks, {sum(r['status'] != 'pass' for r in new)} failed, "
            f"{wave_s:.1f} s on {run['waves'][-1]['executors']} executor(s)"
            + (f", {executor.retried} task attempt(s) failed and retried" if executor.retried else "")
        )
    ui.advance_to(len(rows) if goal is not None else run["fuzz_s"], run["fuzz_s"])


def _finish_run(out: str, run: dict, rows: list[dict], start: float) -> None:
    """Fill in the run's totals and write ``OUT/runs/<run_id>.json`` (docs/campaign.md)."""
    run["tasks"] = len(rows)
    run["scenarios"] = sum(r["scenarios"] for r in rows)
    run["fuzz_s"] = round(run.get("fuzz_s", 0.0), 3)
    run["total_s"] = round(time.monotonic() - start, 3)
    run["executors"] = max((w["executors"] for w in run["waves"]), default=0)
    run["cores"] = max((w["cores"] for w in run["waves"]), default=0)
    run["retried"] = sum(w["retried"] for w in run["waves"])
    run["scenarios_per_s"] = scenarios_per_second(run)
    folder = os.path.join(out, "runs")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{run['run_id']}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(run, f, indent=1)
    os.replace(path + ".tmp", path)


def _triage(executor, rows: list[dict], corpus_dir: str, attempts: int, shrink_s: float, ui) -> list[dict]:
    """reproduce → shrink → dedupe → corpus, for signatures not in the corpus yet."""
    known = corpus.known_entries(corpus_dir)
    first: dict[str, dict] = {}
    for r in sorted((r for r in rows if r["status"] == "fail"), key=lambda r: (r["n_steps"], r["seed"])):
        if corpus.entry_name(r["signature"], r["target"]) not in known:
            first.setdefault(r["signature"], r)
    if not first:
        return []
    reps = list(first.values())
    ui.stage(f"reproduce: {len(reps)} new signature(s) × {attempts}")
    counts = executor.map(_reproduce, [(r, attempts) for r in reps], lambda _k: None)
    ui.stage(f"shrink: {len(reps)} scenario(s), at most {2 * shrink_s:g} s each")
    shrunk = executor.map(functools.partial(shrink, seconds=shrink_s), reps, _shrink_progress(ui, len(reps)))
    findings: dict[str, dict] = {}
    for r, c, s in zip(reps, counts, shrunk, strict=True):
        finding = {**r, **(s or {}), "reproduced": c["reproduced"], "attempts": c["attempts"], "flaky": c["flaky"]}
        finding["original_signature"] = r["signature"]
        if corpus.entry_name(finding["signature"], finding["target"]) in known or finding["signature"] in findings:
            continue  # dedupe: shrinking led two signatures to one
        findings[finding["signature"]] = finding
    ui.stage(f"corpus: {len(findings)} new entr{'y' if len(findings) == 1 else 'ies'} in {corpus_dir}")
    for f in findings.values():
        f["corpus_path"] = corpus.write_entry(corpus_dir, f)
    return list(findings.values())


def _shrink_progress(ui, total: int):
    """A line each time a scenario's shrink ends (Spark and the process pool report completions)."""
    start, said = time.monotonic(), [0]

    def progress(done: int) -> None:
        if done > said[0]:
            said[0] = done
            ui.note(f"shrink: {done}/{total} done in {time.monotonic() - start:.0f} s")

    return progress


def _reproduce(args) -> dict:
    row, attempts = args
    return reproduce(row, attempts)


def _write_outputs(out: str, report: str, rows: list[dict], findings: list[dict], run: dict) -> None:
    os.makedirs(out, exist_ok=True)
    keep = ("signature", "original_signature", "property", "witness", "target", "seed", "profile", "commit")
    summary = [{k: f.get(k) for k in keep} | {k: f[k] for k in ("flaky", "reproduced", "attempts", "corpus_path", "n_steps")} for f in findings]  # fmt: skip
    with open(os.path.join(out, "findings.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    write_report(report, rows, summary, BRANCHES, run=run)


class _SilentUi:
    def start(self, total, unit) -> None:
        pass

    def advance_to(self, n, elapsed_s) -> None:
        pass

    def stage(self, text: str) -> None:
        pass

    def note(self, text: str) -> None:
        pass
