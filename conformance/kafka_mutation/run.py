"""``klc mutate-kafka``: PIT with Kafka's tests per class, the stock baseline, then this suite on
every mutant as batches on the campaign's executors (Spark, or local processes), each wave's rows
appended to the results table, then the report.  Everything is kept under OUT and reused: a
class PIT already ran, the baseline of the same jars and cases, the mutants already judged."""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import time
from pathlib import Path

import attrs

from conformance.kafka_mutation import pit, report, results, suite
from conformance.kafka_mutation.pit import Mutant, MutationError
from conformance.targets.kafka import CAPTURE_VARIABLE


@attrs.frozen
class Config:
    release: str = pit.PINNED
    classes: tuple[str, ...] = pit.INDEXES
    out: str = "mutate-kafka-out"
    executor: str = "processes"  # or "spark"
    master: str | None = None
    workers: int = 1
    batch: int = 4  # mutants per task
    max_cases: int | None = None  # covering cases run per mutant at most (None: all)
    machine_examples: int = suite.MACHINE_EXAMPLES
    hot_swap: bool = False
    cases: tuple[str, ...] = ()  # corpus case name prefixes (log/, crash/): all when empty
    again: bool = False  # judge again the survivors whose covering cases were not all run
    # Kafka's own I/O captured on the suite's side (conformance.kafka_io): the durability promises
    # and crashes cut from Kafka's journal judge it; a JVM per mutant (the tracer follows one JVM)
    kafka_io: bool = False
    kafka_tests: str = "all"  # a key of pit.TEST_SETS, or KEPT
    # with ``again``: only the mutants Kafka's tests leave alive too, the survivors the side by side
    # must triage (a Kafka-only kill needs no triage, and judging it again costs the most cases)
    kafka_survivors_only: bool = False
    # only these mutants (their ids in the report, ``ShortClass/N``) are judged; all when empty
    only: tuple[str, ...] = ()

    @property
    def tests(self) -> tuple[str, ...] | None:
        """Kafka's test classes PIT runs; None: those of the PIT report kept in OUT, whatever they were."""
        return None if self.kafka_tests == KEPT else pit.TEST_SETS[self.kafka_tests]


# ``--kafka-tests kept``: Kafka's verdicts as PIT's report in OUT holds them, PIT not run again (a
# rerun of the suite's side alone must not cost PIT's hour when the test sets grew since)
KEPT = "kept"


def resolve_classes(names: tuple[str, ...], jars: tuple[str, ...], release: str) -> list[str]:
    """Dotted class names for ``names`` (short names of :data:`pit.CLASSES` or dotted names); a
    class none of the release's Kafka jars holds is a :class:`MutationError`."""
    out = []
    for name in names:
        dotted = pit.CLASSES.get(name, name)
        if not any(dotted in pit.classes_of(j) for j in jars):
            raise MutationError(f"--classes {name}: no class {dotted} in any of Kafka {release}'s jars ({_names(jars, release)})")
        out.append(dotted)
    return list(dict.fromkeys(out))


def _names(jars: tuple[str, ...], release: str) -> str:
    return ", ".join(sorted(os.path.basename(j).removesuffix(f"-{release}.jar") for j in jars))


def pit_for(clazz: str, out: Path, release: str, progress, tests: tuple[str, ...] | None = pit.KAFKA_TESTS) -> list[Mutant]:
    """PIT's mutants of one class (and its nested classes) judged by Kafka's ``tests``, run once per
    OUT and kept (run again when the tests differ; ``tests`` None: kept as they are)."""
    folder = out / "pit" / clazz
    stamp = folder / "done.json"
    if tests is None:
        if kept_tests(out, clazz, release) is None:
            raise MutationError(f"--kafka-tests kept: {folder} holds no finished PIT report of Kafka {release}'s tests")
        return pit.mutants(folder)
    args = {"release": release, "class": clazz, "tests": list(tests), "mutators": pit.MUTATORS}
    if not (stamp.exists() and json.loads(stamp.read_text()) == args):
        progress(f"PIT: {clazz} with Kafka's tests ({len(tests)} test classes), one thread")
        began = time.monotonic()
        pit.run_pit([clazz, f"{clazz}$*"], folder, release, tests)
        stamp.write_text(json.dumps(args))
        progress(f"PIT: {clazz} done in {time.monotonic() - began:.0f} s")
    return pit.mutants(folder)


def kept_tests(out: Path, clazz: str, release: str) -> list[str] | None:
    """Kafka's test classes of the finished PIT report of ``clazz`` kept in ``out``, or None."""
    stamp = out / "pit" / clazz / "done.json"
    try:
        args = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(args, dict) or args.get("release") != release or args.get("mutators") != pit.MUTATORS:
        return None
    return args.get("tests") if isinstance(args.get("tests"), list) else None


def judge_batch(task: dict) -> list[dict]:
    """One task: this suite on a batch of mutants (a pure function of its input: Spark may run it
    again elsewhere)."""
    with open(task["baseline"], encoding="utf-8") as f:
        base = json.load(f)
    rows = []
    for fields in task["mutants"]:
        mutant = Mutant(**fields)
        began = time.monotonic()
        try:
            if task.get("kafka_io"):
                os.environ[CAPTURE_VARIABLE] = "1"  # this process's kafka targets capture (Spark runs it elsewhere)
            if task.get("hot_swap"):
                from conformance.kafka_mutation import hot_swap

                outcome = hot_swap.judge(mutant, base, task)
            else:
                outcome = suite.judge(mutant, base, task["kafka_jars"], task["work"], task.get("max_cases"))
        except Exception as e:  # noqa: BLE001 — one mutant's harness failure is its row, not the run's end
            outcome = {"suite_status": suite.HARNESS, "witness_case": None, "witness": f"{type(e).__name__}: {e}"[:400],
                       "cases_run": 0, "covering_cases": 0, "suite_seconds": round(time.monotonic() - began, 2)}  # fmt: skip
        rows.append(row_of(mutant, base, outcome, bool(task.get("hot_swap")), bool(task.get("kafka_io"))))
    return rows


def row_of(mutant: Mutant, base: dict, outcome: dict, hot: bool, kafka_io: bool = False) -> dict:
    return {
        "key": results.key(mutant), "release": base["release"], "kafka_build": base["digest"], "mutant": mutant.id,
        "class": mutant.clazz, "method": mutant.method, "descriptor": mutant.descriptor, "line": mutant.line,
        "mutator": mutant.mutator, "description": mutant.description, "kafka_status": mutant.kafka_status,
        "killing_test": mutant.killing_test, "hot_swap": hot, "kafka_io": kafka_io, **outcome,
    }  # fmt: skip


def latest_rows(rows: list[dict], digest: str) -> dict[str, dict]:
    """Each mutant's latest row for the build (files are read in the order they were written)."""
    return {r["key"]: r for r in rows if r["kafka_build"] == digest}


def with_kafka_verdicts(latest: dict[str, dict], mutants: list[Mutant]) -> list[dict]:
    """The rows of ``mutants``, each with Kafka's verdict of this run's PIT report: a row kept from an
    earlier run (the suite's verdict depends only on the mutant and the build) may carry the verdict
    of another set of Kafka's tests (KAFKA_TESTS grew by core's)."""
    out = []
    for m in mutants:
        row = latest.get(results.key(m))
        if row is not None:
            out.append(row | {"mutant": m.id, "kafka_status": m.kafka_status, "killing_test": m.killing_test})
    return out


def judge_waves(executor, batches: list[list[dict]], task: dict, table: str, workers: int, progress) -> None:
    """The batches judged a wave (``workers`` batches) at a time, each wave's rows appended to the
    results table as it ends.  A worker the system killed (out of memory) ends the run with a
    :class:`MutationError`: the waves before it are kept, and a rerun resumes after them."""
    try:
        wave = max(1, workers)
        for w in range(0, len(batches), wave):
            items = [task | {"mutants": b} for b in batches[w : w + wave]]
            rows = [r for batch_rows in executor.map(judge_batch, items, lambda n: None) for r in batch_rows]
            name = hashlib.sha256("\n".join(r["key"] for r in rows).encode()).hexdigest()[:16]
            results.append(table, rows, f"{int(time.time())}-{name}")
            progress(sum(len(b) for b in batches[: w + wave]))
    except concurrent.futures.process.BrokenProcessPool:
        raise MutationError(
            f"a worker process died while judging mutants (killed by the system: out of memory?); the waves "
            f"judged before it are kept in {table}, and running the same command again resumes"
        ) from None
    except BaseException:  # interrupted (SIGINT, SIGTERM): the batches in flight are dropped, not awaited
        if hasattr(executor, "cancel"):
            executor.cancel()
        raise
    finally:
        executor.stop()


def to_judge(mutants: list[Mutant], latest: dict[str, dict], config: Config, classes: list[str]) -> list[Mutant]:
    """The mutants this run judges: those not judged yet and those ``--again`` judges again, of
    ``config.only`` when it names any (an id no mutant has is a :class:`MutationError`)."""
    unknown = sorted(set(config.only) - {m.id for m in mutants})
    if unknown:
        raise MutationError(f"--mutant {unknown[0]}: no such mutant of {', '.join(classes)} (ids as the report names them)")
    chosen = [m for m in mutants if not config.only or m.id in config.only]
    return [m for m in chosen if results.key(m) not in latest or _judged_again(m, latest[results.key(m)], config)]


def _judged_again(mutant: pit.Mutant, row: dict, config: Config) -> bool:
    """Whether ``--again`` judges a mutant judged before: cut short, and with
    ``kafka_survivors_only`` one Kafka's tests do not kill (a harness error is judged again always)."""
    if not config.again or not _cut_short(row, config):
        return False
    return not (config.kafka_survivors_only and mutant.kafka_killed and row["suite_status"] != suite.HARNESS)


def _tests_run(config: Config, out: Path, classes: list[str]) -> list[str]:
    if config.tests is not None:
        return list(config.tests)
    return sorted({t for c in classes for t in kept_tests(out, c, config.release) or ()})


def _cut_short(row: dict, config: Config) -> bool:
    """A survivor judged by fewer covering cases than it has, which ``config`` would run more of,
    a survivor judged without Kafka's I/O captured when ``config`` captures it, a kill made by hot
    swap when ``config`` starts a JVM per mutant (the sounder judge: one long-lived JVM has given
    kills a fresh one does not, docs/kafka-mutation.md), or a mutant the harness failed to judge."""
    if row["suite_status"] == suite.HARNESS:
        return True
    if not config.hot_swap and row.get("hot_swap") and row["suite_status"] in (suite.KILLED, suite.TIMED_OUT):
        return True
    if config.kafka_io and row["suite_status"] == suite.SURVIVED and not row.get("kafka_io"):
        return True
    if row["suite_status"] != suite.SURVIVED or row["cases_run"] >= row["covering_cases"]:
        return False
    return config.max_cases is None or config.max_cases > row["cases_run"]


def _executor(config: Config):
    from conformance.campaign import driver

    if config.executor == "spark":
        try:
            return driver._Spark(config.master or f"local[{config.workers}]")
        except driver.CampaignError as e:
            raise MutationError(f"--executor spark: {e}") from None
    if config.executor == "processes":
        return driver._Processes(config.workers)
    raise MutationError(f"--executor {config.executor}: spark or processes")


def run(config: Config, progress=print) -> dict:
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    classpath, _tests, agent = pit.build_module(config.release)
    jars = pit.kafka_jars(classpath, config.release)
    classes = resolve_classes(config.classes, jars, config.release)
    mutants = [m for c in classes for m in pit_for(c, out, config.release, progress, config.tests)]
    base_path = str(out / ("baseline-kafka-io.json" if config.kafka_io else "baseline.json"))
    if config.kafka_io:  # the stock verdicts too: a mutant is told apart from the stock release as judged alike
        os.environ[CAPTURE_VARIABLE] = "1"
    base = suite.baseline(config.release, str(agent), base_path, config.machine_examples, progress, config.cases,
                          suite.prefixes_for(classes))  # fmt: skip
    table = str(out / "results")
    latest = latest_rows(results.read(table), base["digest"])
    todo = to_judge(mutants, latest, config, classes)
    progress(f"mutants: {len(mutants)} of {len(classes)} class(es); {len(mutants) - len(todo)} judged before, {len(todo)} to judge")
    work = str(out / "work")
    os.makedirs(work, exist_ok=True)
    task = {"baseline": base_path, "kafka_jars": list(jars), "work": work, "max_cases": config.max_cases,
            "hot_swap": config.hot_swap and not config.kafka_io, "agent": str(agent), "kafka_io": config.kafka_io}  # fmt: skip
    batches = [todo[i : i + config.batch] for i in range(0, len(todo), config.batch)]
    began = time.monotonic()
    if batches:
        judge_waves(_executor(config), [[attrs.asdict(m) for m in b] for b in batches], task, table, config.workers,
                    lambda judged: progress(f"suite: {judged}/{len(todo)} mutants judged ({time.monotonic() - began:.0f} s)"))  # fmt: skip
    rows = with_kafka_verdicts(latest_rows(results.read(table), base["digest"]), mutants)
    meta = {
        "release": config.release, "classes": classes, "kafka_tests": _tests_run(config, out, classes), "mutators": pit.MUTATORS,
        "machine_examples": config.machine_examples, "max_cases": config.max_cases,
        "hot_swap": config.hot_swap and not config.kafka_io, "kafka_io": config.kafka_io,
        "kafka_build": base["digest"], "baseline_cases": len(base["cases"]), "cases": list(config.cases),
        "baseline_seconds": round(sum(c["seconds"] for c in base["cases"].values()), 1),
        "judged_now": len(todo), "judged_now_seconds": round(time.monotonic() - began, 1),
    }  # fmt: skip
    built = report.build(rows, meta)
    report.write(str(out), built)
    return built
