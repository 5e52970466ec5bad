"""Campaign tasks: stateless, seed-addressed runs of the crash state machine (TigerBeetle's CFO,
FoundationDB's Joshua).

A :class:`Task` is (commit, seed, fault profile, target).  It draws its own fault rates from its seed
(:meth:`Task.rates`: which fault kinds its cases may enable, at most how many power losses), then runs
the crash state machine — the same class, rules, runner and properties as
``tests/test_crash_machine.py`` — for ``examples`` Hypothesis examples with that seed, without
shrinking.  The same task always runs the same cases, on any machine, so a result is reproduced from
its row alone.  :func:`run_task` returns one row of the results table (:data:`COLUMNS`); it never
raises: a harness error is a row with status ``error``.

:func:`reproduce` and :func:`shrink` are the later stages for one failing row: replay its scenario
through the runner N times (flakiness), and rerun its seed with Hypothesis's shrinker on.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sys
import time
import traceback

import attrs
from hypothesis import HealthCheck, Phase, reject, seed, settings
from hypothesis.internal.conjecture import engine
from hypothesis.control import current_build_context
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.errors import StopTest, UnsatisfiedAssumption
from hypothesis.stateful import run_state_machine_as_test

from conformance import faults
from conformance import scenario as sc
from conformance.crash_images import FAMILIES
from conformance.crash_machine import FAULT_KINDS, MAX_CRASHES, CrashMachine
from conformance.mutants import mutant_stack, parse_target
from conformance.properties import PropertyViolation
from conformance.regressions import NotJudged, replay_scenario
from conformance.targets import HarnessError
from conformance.verdicts import own_frames

# fault profile → the fault kinds a task under it may enable
FAULT_PROFILES: dict[str, tuple[str, ...]] = {
    "all": FAULT_KINDS,
    "power-loss": FAMILIES,
    "torn-writes": ("torn", "size_ahead", "prefix"),
    "metadata": ("metadata", "reorder", "process"),
    "io-errors": ("fail_io", "process"),
    "corruption": ("corrupt", "process"),
}


# the results table, in order (docs/campaign.md)
COLUMNS = (
    "run_id", "commit", "seed", "profile", "target", "examples", "max_steps", "fault_kinds", "max_crashes", "status", "property",
    "signature", "witness", "steps", "n_steps", "scenarios", "duration_s", "started_at", "finished_at",
    "branches", "fault_families", "db_key", "choices", "error", "kafka_build",
)  # fmt: skip


class TaskError(ValueError):
    """A task that cannot be built: unknown profile or target."""


@attrs.frozen
class Rates:
    """What one task allows: the fault kinds its cases may enable, and power losses per case."""

    kinds: tuple[str, ...]
    max_crashes: int


@attrs.frozen
class Task:
    commit: str
    seed: int
    profile: str = "all"
    target: str = "impl"
    examples: int = 20  # Hypothesis examples (= scenarios) per task
    steps: int = 40  # stateful steps per example at most
    run_id: str = ""
    kafka_build: str = ""  # a kafka target's jars, by digest (kafka_build.KafkaBuild): part of the key
    kafka_classpath: str = ""  # the user's build (KLC_KAFKA_CLASSPATH) a worker judges; "": the release's

    def __attrs_post_init__(self):
        if self.profile not in FAULT_PROFILES:
            raise TaskError(f"unknown fault profile {self.profile!r}; choose one of {', '.join(FAULT_PROFILES)}")
        parse_target(self.target)

    @property
    def key(self) -> tuple:
        """What makes a task the same task (resuming skips keys already in the table): on a kafka
        target the build's digest too, so a rerun on another build runs every seed again."""
        return (self.commit, self.seed, self.profile, self.target, self.kafka_build or None)

    def rates(self) -> Rates:
        """This task's own fault rates, drawn from its seed (so the same task draws the same)."""
        rng = random.Random(f"{self.profile}/{self.seed}")
        pool = FAULT_PROFILES[self.profile]
        kinds = tuple(sorted(rng.sample(pool, rng.randint(1, len(pool)))))
        return Rates(kinds, rng.randint(1, MAX_CRASHES))


def machine_for(task: Task) -> type:
    """The crash machine with this task's rates.  Its name encodes them, so Hypothesis's database key
    for it (derived from the class name) is the same wherever the task's class is rebuilt."""
    rates = task.rates()
    targets, _ = parse_target(task.target)
    # on a kafka target Kafka's own I/O is captured, so that a power loss may be cut from its journal
    capture = any(str(t).startswith("kafka") for t in targets)
    name = "Campaign_{}_{}_c{}{}".format(
        task.target.replace(":", "_").replace("-", "_"), "_".join(rates.kinds), rates.max_crashes, "_io" * capture
    )
    return type(
        name,
        (_CampaignMachine,),
        {"backend": "sim", "targets": targets, "swarm_kinds": frozenset(rates.kinds), "max_crashes": rates.max_crashes,
         "capture_kafka_io": capture},
    )  # fmt: skip


class _CampaignMachine(CrashMachine):
    """The crash machine, noting for the task what it reached and the scenario that failed."""

    observed: dict = {}  # replaced per task by run_task

    def _do(self, step: sc.Step) -> dict:
        try:
            result = super()._do(step)
        except PropertyViolation as e:
            want = self.observed.get("want")
            got = violation_signature(e.violation)
            if want is not None and got != want:
                # shrinking one failure must not slip into another (Hypothesis would take any
                # PropertyViolation raised here as the same bug): this example is not the one
                reject()
            self.observed["failure"] = e
            raise
        return result

    def teardown(self):
        raised = sys.exc_info()[1]
        if isinstance(raised, HarnessError):  # the first one is the cause: Hypothesis's replay may pass
            self.observed.setdefault("harness", raised)
        if counts_as_scenario(raised, current_build_context().is_final):
            self.observed["scenarios"] = self.observed.get("scenarios", 0) + 1
        self.observed.setdefault("branches", set()).update(self.branches_reached)
        super().teardown()


def counts_as_scenario(raised: BaseException | None, final_replay: bool) -> bool:
    """Whether an example whose teardown runs is one of the task's scenarios: the examples
    Hypothesis counts toward ``max_examples`` (passed, or failed), so a passing task runs exactly
    ``examples`` scenarios.  Hypothesis tears down every example it starts, also those it discards
    and does not count (it drew more data than its buffer holds: ``StopTest``; a draw was rejected:
    ``UnsatisfiedAssumption``), and replays a failing example once more to raise its error.
    Hypothesis calls teardown from a ``finally``, where ``sys.exc_info()`` is the exception on its way
    out (None when the example ended normally)."""
    return not final_replay and not isinstance(raised, (StopTest, UnsatisfiedAssumption))


def _judge_the_tasks_build(task: Task) -> None:
    """A worker judges the build its task names: the user's classpath is set for its kafka targets,
    and jars of another digest there (another machine, a rebuilt dir) are a harness error."""
    if not task.target.startswith("kafka"):
        return
    from conformance.targets import kafka_jvm

    if task.kafka_classpath:
        os.environ[kafka_jvm.BUILD_VARIABLE] = task.kafka_classpath
    if task.kafka_build:
        here = kafka_jvm.judged_build(task.target.partition(":")[2] or None)
        if here.digest != task.kafka_build:
            raise kafka_jvm.KafkaTargetError(
                f"kafka target: this worker's jars are {here.describe()}, not the campaign's build "
                f"sha256:{task.kafka_build[:16]}"
            )


def _settings(task: Task, shrinking: bool, database) -> settings:
    return settings(
        max_examples=task.examples,
        stateful_step_count=task.steps,
        derandomize=False,
        database=database,
        deadline=None,
        report_multiple_bugs=False,
        phases=[Phase.generate, Phase.shrink] if shrinking else [Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def _run(
    task: Task, shrinking: bool, want: str | None = None
) -> tuple[dict, BaseException | None, InMemoryExampleDatabase]:
    machine = machine_for(task)
    machine.observed = observed = {"want": want}
    database = InMemoryExampleDatabase()
    _, mutant = parse_target(task.target)
    error = None
    try:
        _judge_the_tasks_build(task)
        with mutant_stack(mutant):
            run_state_machine_as_test(seed(task.seed)(machine), settings=_settings(task, shrinking, database))
    except Exception as e:  # noqa: BLE001 — every failure (a violation, Hypothesis's own errors) is a row
        error = e
    return observed, error, database


def run_task(task: Task) -> dict:
    """Run one task; one row of the results table (:data:`COLUMNS`)."""
    started = time.time()
    t0 = time.perf_counter()
    rates = task.rates()
    observed, error, database = _run(task, shrinking=False)
    row = dict.fromkeys(COLUMNS)
    row |= {
        "run_id": task.run_id, "commit": task.commit, "seed": task.seed, "profile": task.profile,
        "target": task.target, "kafka_build": task.kafka_build or None, "examples": task.examples, "max_steps": task.steps, "fault_kinds": list(rates.kinds), "max_crashes": rates.max_crashes,
        "status": "pass", "n_steps": 0, "scenarios": observed.get("scenarios", 0),
        "branches": sorted(observed.get("branches", ())), "fault_families": [], "choices": [],
    }  # fmt: skip
    if error is not None:
        cause = observed.get("harness") or harness_error(error) or error
        row |= describe_failure(observed.get("failure"), cause)
        for key, values in database.data.items():
            if len(key) == 48 and values:  # the primary key (a sha384 digest; ".secondary" etc. are longer)
                row["db_key"], row["choices"] = key.hex(), sorted(v.hex() for v in values)
    row["duration_s"] = round(time.perf_counter() - t0, 3)
    row["started_at"], row["finished_at"] = started, time.time()
    return row


def harness_error(error: BaseException | None) -> HarnessError | None:
    """The :class:`HarnessError` in ``error``, its causes or, for an exception group (Hypothesis's
    FlakyFailure: an example failed, its replay did not), its members."""
    seen = set()
    todo = [error]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, HarnessError):
            return e
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return None


def describe_failure(failure: PropertyViolation | None, error: BaseException) -> dict:
    """status, property, signature, witness, steps and fault families of a failed task.  A harness
    error (a dead or hung JVM) is status ``error`` whatever else happened: it is never a finding
    against the target, and its witness is its cause (the JVM's end and stderr's tail)."""
    violated = failure is not None and getattr(failure, "violation", None) is not None
    if violated and not isinstance(error, HarnessError):
        v, scenario = failure.violation, failure.scenario
        return {
            "status": "fail",
            "property": v.prop,
            "witness": v.witness,
            "signature": violation_signature(v),
            "steps": json.dumps(scenario.to_json(), sort_keys=True),
            "n_steps": len(scenario.steps),
            "fault_families": fault_families(scenario),
        }
    frames = own_frames(traceback.extract_tb(error.__traceback__))
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    kind = "harness error" if isinstance(error, HarnessError) else type(error).__name__
    return {
        "status": "error",
        "witness": f"{kind}: {first}"[:500],
        "signature": signature("error", type(error).__name__, frames),
        "error": "".join(traceback.format_exception(error))[-4000:],
    }


_NUMBER = re.compile(r"\b\d+\b")
_PATH = re.compile(r"\S*/\S*")
_PARTICULARS = re.compile(r"[-\d\[\]]+")


def _path_kind(match: re.Match) -> str:
    """A path without its particulars, but with the kind of thing it names: ``PATH/segments`` for
    a state path ``/d0/t-0/segments[0][1]``, ``PATH/.log`` for ``d0/t-0/0.log``."""
    return "PATH/" + _PARTICULARS.sub("", match.group(0).rstrip("/").rsplit("/", 1)[-1])


def error_kind(witness: str) -> str:
    """A witness with its particulars taken out — the values after its last ``": "`` (``7 != 0``,
    ``only in first``), numbers and file paths but the kind of thing a path names: what went wrong
    and where (a log's segments, its epoch cache), not with which data: a difference in the segments
    and one in the epoch cache are two bugs (corpora/found/idempotent-recovery-6b9fcf50d5 and
    -0607043e93 keep their own signatures)."""
    first = witness.splitlines()[0] if witness else ""
    first = first.rsplit(": ", 1)[0]
    return _NUMBER.sub("N", _PATH.sub(_path_kind, first))[:200]


def signature(prop: str, witness: str, frames: tuple[str, ...]) -> str:
    """``<property>-<10 hex>``: property + error kind + top own frames (ClusterFuzz's crash state)."""
    text = "\n".join((prop, error_kind(witness), *frames))
    return f"{prop}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def violation_signature(v) -> str:
    """The signature of a :class:`conformance.runner.Violation`."""
    return signature(v.prop, v.witness, v.frames)


def fault_families(scenario: sc.Scenario) -> list[str]:
    out = set()
    for step in scenario.steps:
        if isinstance(step, faults.Crash):
            out.add(step.fault.family if step.fault is not None else "process")
        elif isinstance(step, faults.FailIo):
            out.add("fail_io")
        elif isinstance(step, faults.Corrupt):
            out.add("corrupt")
    return sorted(out)


def replay_signature(scenario: sc.Scenario, target: str) -> tuple[str | None, object]:
    """Run ``scenario`` through the runner against ``target``: (signature or None, first violation);
    no signature where the target did not judge it (a step it cannot run — impl or the model on a
    crash cut from Kafka's own journal — or a known Kafka bug): the :class:`NotJudged` says which."""
    v = replay_scenario(scenario, target)
    return (None, v) if v is None or isinstance(v, NotJudged) else (violation_signature(v), v)


def reproduce(row: dict, attempts: int = 3) -> dict:
    """Replay a failing row's scenario ``attempts`` times: how often the same signature came back."""
    scenario = sc.Scenario.from_json(json.loads(row["steps"]))
    same = 0
    for _ in range(attempts):
        got, _v = replay_signature(scenario, row["target"])
        same += got == row["signature"]
    return {"signature": row["signature"], "reproduced": same, "attempts": attempts, "flaky": same < attempts}


#: The bound on shrinking one failure: Hypothesis's shrinker gets this much, then the whole-step
#: deletion as much again; each stops where the bound finds it and keeps the smallest scenario so far
#: (on a kafka target a replay costs a JVM's load: an unbounded shrink ran for many minutes).
SHRINK_SECONDS = 120


def shrink(row: dict, seconds: float = SHRINK_SECONDS) -> dict:
    """Rerun a failing row's task with the shrinker on: the minimal scenario, its signature, witness
    (within 2 × ``seconds``: the shrinker's half, then the whole-step deletion's)."""
    task = Task(
        row["commit"], row["seed"], row["profile"], row["target"], row["examples"], row["max_steps"],
        kafka_build=row.get("kafka_build") or "", kafka_classpath=os.environ.get("KLC_KAFKA_CLASSPATH", ""),
    )  # fmt: skip
    bound = engine.MAX_SHRINKING_SECONDS  # private API: if a release renames it, the shrinker keeps its own 300 s
    engine.MAX_SHRINKING_SECONDS = seconds
    try:
        observed, error, _db = _run(task, shrinking=True, want=row["signature"])
    finally:
        engine.MAX_SHRINKING_SECONDS = bound
    failure = observed.get("failure")
    if error is not None and failure is not None and getattr(failure, "violation", None) is not None:
        shrunk, how = describe_failure(failure, error), "hypothesis+steps"
    else:  # the rerun did not fail the same way: minimise the row's own scenario
        shrunk, how = {k: row[k] for k in ("status", "property", "witness", "signature", "steps")}, "steps"
    scenario = drop_steps(
        sc.Scenario.from_json(json.loads(shrunk["steps"])), row["target"], shrunk["signature"], seconds
    )
    _sig, v = replay_signature(scenario, row["target"])
    if v is None:
        return {}
    return shrunk | {
        "steps": json.dumps(scenario.to_json(), sort_keys=True), "n_steps": len(scenario.steps), "witness": v.witness,
        "fault_families": fault_families(scenario), "shrunk_by": how,
    }  # fmt: skip


def drop_steps(scenario: sc.Scenario, target: str, want: str, seconds: float = float("inf")) -> sc.Scenario:
    """After Hypothesis's shrinker, which works on the choices that built the steps: delete whole
    steps (one at a time, last first, until none can go, or ``seconds`` are spent) while the replay
    keeps the signature."""
    steps = list(scenario.steps)
    changed, until = True, time.monotonic() + seconds
    while changed and time.monotonic() < until:
        changed = False
        for i in reversed(range(1, len(steps))):  # step 0 creates the partition
            if time.monotonic() >= until:
                break
            trial = attrs.evolve(scenario, steps=tuple(steps[:i] + steps[i + 1 :]))
            try:
                got, _v = replay_signature(trial, target)
            except Exception:  # noqa: BLE001 — a step that no longer makes sense: keep it
                continue
            if got == want:
                steps = list(trial.steps)
                changed = True
    return attrs.evolve(scenario, steps=tuple(steps))
