"""``klc campaign``: fuzzing campaigns of crash scenarios on Spark (local mode by default).

Stages, as in ClusterFuzz:

1. **fuzz** — waves of :class:`~conformance.campaign.tasks.Task` (seed-addressed, stateless) run on
   the executors; each wave's rows are appended to the results table (:mod:`.table`) at once, and seeds
   already in the table for this commit, profile and target are skipped (resumable);
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
from conformance.campaign.report import write_report
from conformance.campaign.tasks import Task, TaskError, reproduce, run_task, shrink
from model.log_manager import BRANCHES


class CampaignError(Exception):
    """A campaign that cannot start: bad arguments, no Java runtime, an unreachable master."""


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
    executor: str = "spark"  # or "processes"
    workers: int | None = None  # processes executor: how many (default: every core)
    commit: str | None = None  # None: the checkout's


@attrs.define
class CampaignResult:
    run_id: str
    rows: list[dict]
    skipped: int
    findings: list[dict]
    seconds: float
    parallelism: int
    report: str

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
    if config.executor not in ("spark", "processes"):
        raise CampaignError(f"unknown executor {config.executor!r} (spark or processes)")
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


def master_problem(master: str) -> str | None:
    """A standalone master that does not accept connections (Spark itself would retry for a minute)."""
    if not master.startswith("spark://"):
        return None
    hosts = master[len("spark://") :].split(",")
    for hp in hosts:
        host, _, port = hp.rpartition(":")
        try:
            with socket.create_connection((host or hp, int(port or 7077)), timeout=5):
                return None
        except (OSError, ValueError):
            continue
    return f"Spark master {master} is unreachable (no connection to {', '.join(hosts)} within 5 s)"


# --- executors --------------------------------------------------------------------------------------


def _task_row(d: dict) -> dict:
    return run_task(Task(**d))


class _Processes:
    """The baseline: a local process pool running the same functions."""

    def __init__(self, workers: int | None):
        self.parallelism = workers or os.cpu_count() or 1
        self.pool = concurrent.futures.ProcessPoolExecutor(
            self.parallelism, mp_context=multiprocessing.get_context("fork")
        )

    def map(self, fn: Callable, items: list, progress: Callable[[int], None]) -> list:
        futures = [self.pool.submit(fn, x) for x in items]
        done = 0
        for f in futures:
            f.result()
            done += 1
            progress(done)
        return [f.result() for f in futures]

    def stop(self) -> None:
        self.pool.shutdown()


class _Spark:
    """Spark (local mode unless a master is given): one Spark task per campaign task."""

    def __init__(self, master: str | None):
        problem = java_problem() or (master_problem(master) if master else None)
        if problem:
            raise CampaignError(problem)
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
            SparkSession.builder.master(master or "local[*]")
            .appName("klc campaign")
            .config("spark.ui.enabled", "false")
            .config("spark.python.worker.reuse", "true")
            .config("spark.task.maxFailures", "1")
            .config("spark.ui.showConsoleProgress", "false")  # the driver draws its own bar
            .config("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        )
        try:
            self.spark = builder.getOrCreate()
        except Exception as e:  # noqa: BLE001 — Py4J/JVM failures: one clear line
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise CampaignError(f"could not start Spark on {master or 'local[*]'}: {first}") from None
        self.sc = self.spark.sparkContext
        self.sc.setLogLevel("ERROR")
        self.parallelism = self.sc.defaultParallelism
        if master and not master.startswith("local"):
            self.sc.addPyFile(_ship_code())

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
            done = 0
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                for stage in info.stageIds if info else ():
                    s = tracker.getStageInfo(stage)
                    done += s.numCompletedTasks if s else 0
            progress(min(done, len(items)))
        if "error" in result:
            first = str(result["error"]).strip().splitlines()[0] if str(result["error"]).strip() else ""
            raise CampaignError(f"a Spark job failed: {type(result['error']).__name__}: {first}")
        progress(len(items))
        return result["rows"]

    def stop(self) -> None:
        self.spark.stop()


def _ship_code() -> str:
    """A zip of model/, impl/, conformance/ and tests/mutants for executors on other machines (their
    Python needs the project's dependencies installed; the code itself comes from this commit)."""
    path = os.path.join(tempfile.mkdtemp(prefix="klc-"), "klc-code.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for top in ("model", "impl", "conformance", "tests/mutants"):
            for base, _dirs, files in os.walk(os.path.join(corpus.CHECKOUT, top)):
                for name in files:
                    if name.endswith((".py", ".properties")):
                        full = os.path.join(base, name)
                        z.write(full, os.path.relpath(full, corpus.CHECKOUT))
        z.writestr("tests/__init__.py", "")
    return path


# --- the campaign -----------------------------------------------------------------------------------


def _seeds(done: set[int]):
    seed = 0
    while True:
        if seed not in done:
            yield seed
        seed += 1


def run_campaign(config: CampaignConfig, ui=None) -> CampaignResult:
    """Run a campaign; ``ui`` (optional) gets ``start(total, unit)``, ``advance(n)``, ``stage(text)``."""
    check_config(config)
    ui = ui or _SilentUi()
    start = time.monotonic()
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    commit = config.commit or current_commit()
    results = table.results_dir(config.out)
    try:
        previous = table.read(results)
    except table.TableError as e:
        raise CampaignError(str(e)) from None
    done = {
        r["seed"]
        for r in previous
        if (r["commit"], r["profile"], r["target"]) == (commit, config.profile, config.target)
    }
    corpus_dir = config.corpus_dir or (corpus.DEFAULT_CORPUS if os.path.isdir(os.path.dirname(corpus.DEFAULT_CORPUS)) else os.path.join(config.out, "found"))  # fmt: skip
    scenarios_goal = config.scenarios
    budget = None if scenarios_goal is not None else 60.0 * (config.budget_minutes or 1.0)
    tasks_goal = -(-scenarios_goal // config.examples_per_task) if scenarios_goal is not None else None
    executor = _Spark(config.master) if config.executor == "spark" else _Processes(config.workers)
    rows: list[dict] = []
    try:
        wave_size = max(2 * executor.parallelism, 2)
        seeds = _seeds(done)
        ui.start(tasks_goal if tasks_goal is not None else budget, "tasks" if tasks_goal is not None else "s")
        wave = 0
        while True:
            if tasks_goal is not None:
                n = min(wave_size, tasks_goal - len(rows))
            else:
                n = wave_size if time.monotonic() - start < budget else 0
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
                    )
                )
                for _ in range(n)
            ]
            base = len(rows)
            elapsed0 = time.monotonic() - start
            if tasks_goal is not None:
                new = executor.map(_task_row, batch, lambda k, base=base: ui.advance_to(base + k))
            else:
                new = executor.map(_task_row, batch, lambda _k: ui.advance_to(min(time.monotonic() - start, budget)))
            table.append(results, new, f"{run_id}-{wave:05d}")
            rows.extend(new)
            wave += 1
            ui.note(
                f"wave {wave}: {len(new)} tasks, {sum(r['status'] != 'pass' for r in new)} failed, {time.monotonic() - start - elapsed0:.1f} s"
            )
        findings = _triage(executor, rows, corpus_dir, config.reproduce_attempts, ui)
    finally:
        executor.stop()
    report = os.path.join(config.out, "report.html")
    _write_outputs(config.out, report, rows, findings)
    return CampaignResult(
        run_id, rows, len(done), findings, round(time.monotonic() - start, 2), executor.parallelism, report
    )


def _triage(executor, rows: list[dict], corpus_dir: str, attempts: int, ui) -> list[dict]:
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
    ui.stage(f"shrink: {len(reps)} scenario(s)")
    shrunk = executor.map(shrink, reps, lambda _k: None)
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


def _reproduce(args) -> dict:
    row, attempts = args
    return reproduce(row, attempts)


def _write_outputs(out: str, report: str, rows: list[dict], findings: list[dict]) -> None:
    os.makedirs(out, exist_ok=True)
    keep = ("signature", "original_signature", "property", "witness", "target", "seed", "profile", "commit")
    summary = [{k: f.get(k) for k in keep} | {k: f[k] for k in ("flaky", "reproduced", "attempts", "corpus_path", "n_steps")} for f in findings]  # fmt: skip
    with open(os.path.join(out, "findings.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    write_report(report, rows, summary, BRANCHES)


class _SilentUi:
    def start(self, total, unit) -> None:
        pass

    def advance_to(self, n) -> None:
        pass

    def stage(self, text: str) -> None:
        pass

    def note(self, text: str) -> None:
        pass
