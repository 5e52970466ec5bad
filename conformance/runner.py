"""The one scenario runner (DESIGN.md: one runner, one vocabulary, one set of properties).

:func:`run` executes a :class:`~conformance.scenario.Scenario` step by step against the targets
(model, impl on the simulated or the real storage backend, Kafka's own jars) and, after every step,
lets the property families of :mod:`conformance.properties` judge what it left: ``conforms``,
``index-agrees``, ``clean-restart``, and after a fault step at the next ``open`` the crash
properties (``durable``, ``prefix``, ``idempotent-recovery``, ``isolated``).  Where Kafka itself
relaxes a property is one table, :mod:`conformance.kafkas_own`.

Fault steps share one image: the first impl target on the simulated backend is the image source
(one is added when no target is); the fault strikes it (:mod:`conformance.faults`), and the image
its storage leaves is given to every target (the real backend gets it materialised, DESIGN.md
"Storage faults").  The session asks a step only what the step declares (docs/harness.md).

Every Hypothesis state machine, corpus case, campaign task and ``klc replay`` goes through here.
"""

from __future__ import annotations

import contextlib
import contextvars
import traceback

import attrs

from conformance import kafka_findings
from conformance import scenario as sc
from conformance.crash_images import Fault
from conformance.faults import FaultContext, FaultOutcome
from conformance.properties import (
    BAD_INPUT,
    CONFORMS,
    DURABLE,
    Observation,
    clean_restart,
    conforms,
    crash_recovery,
    index_agrees,
    read_committed,
    storage_protocol,
)
from conformance.properties.crash_recovery import RecoveryTracker
from conformance.targets import HarnessError, Target
from conformance.targets.impl_target import ImplTarget, forked
from conformance.targets.kafka import KafkaTarget, Unsupported
from conformance.targets.model_target import ModelTarget
from conformance.verdicts import Verdict, Violation, describe, own_frames, where
from model import durability

# judged after every step, in this order, until the first violation
STEP_FAMILIES = (read_committed.judge, conforms.judge, index_agrees.judge, clean_restart.judge)

# violations a search has seen already and looks past, as it does a known Kafka finding: a predicate
# on the first violation of a step (benchmarks/time_to_catch.py: the differences of a buggy release
# that the release fixing its bug shares, which are not that bug)
_LOOK_PAST: contextvars.ContextVar = contextvars.ContextVar("look_past", default=None)


@contextlib.contextmanager
def looking_past(predicate, judge_on: bool = False):
    """Within the block, a step whose first violation satisfies ``predicate`` ends its scenario
    as known (``Verdict.known``), not as a failure; with ``judge_on`` the scenario goes on and is
    judged further (a search for one witness that the targets' other differences must not stop)."""
    token = _LOOK_PAST.set((predicate, judge_on))
    try:
        yield
    finally:
        _LOOK_PAST.reset(token)


def make_target(kind: str, scenario: sc.Scenario, backend: str = "sim", capture: bool = False) -> Target:
    """A target by name: ``model``, ``impl`` (on ``backend``), ``kafka`` (Kafka's own jars, the
    pinned release) or ``kafka:VERSION`` (that release, by its generation's adapter); ``capture``:
    Kafka's own I/O captured, for crashes cut from its journal."""
    if kind == "model":
        return ModelTarget(scenario)
    if kind == "impl":
        return ImplTarget(scenario, backend)
    if kind == "kafka" or kind.startswith("kafka:"):
        return KafkaTarget(scenario, release=kind.partition(":")[2] or None, **({"capture": True} if capture else {}))
    raise ValueError(f"unknown target {kind!r} (model, impl, kafka or kafka:VERSION)")


class Session:
    """Targets started on a scenario's header; :meth:`step` runs one step and returns the new
    violations.  ``steps`` is the scenario so far (what a failing state machine prints)."""

    def __init__(
        self, scenario: sc.Scenario, targets=("model", "impl"), backend: str = "sim", faults=None, capture=None
    ):
        self.header = attrs.evolve(scenario, steps=())
        self.targets = []
        self.verdict = Verdict(scenario, list(targets))
        self.broken = False
        if capture is None:  # Kafka's own I/O captured where a crash is cut from its journal
            capture = any(s.on_kafka_journal for s in scenario.steps)
        try:
            for t in targets:
                self.targets.append(make_target(t, scenario, backend, capture))
        except Unsupported as e:
            self.verdict.unsupported = f"before any step: {e}"
            self.broken = True
        if faults is None:
            faults = any(s.runs_as in ("fault", "disk") for s in scenario.steps)
        self.source = next((t for t in self.targets if isinstance(t, ImplTarget) and t.backend == "sim"), None)
        if faults and self.source is None:
            self.source = ImplTarget(scenario, "sim")
            self.targets.append(self.source)
        self.model = next((t for t in self.targets if isinstance(t, ModelTarget)), None)
        self.verdict.targets = [t.name for t in self.targets]
        self.steps: list[sc.Step] = []
        self._shutdown_at = None
        self.tracker = RecoveryTracker()
        self.last_fault: FaultOutcome | None = None  # what the last fault step did
        self.unloadable: set[str] = set()  # partitions the last open left out (isolate policy): files not compared
        self.shutdown_dirs: dict[str, bool] = {}  # data dir → whether the last shutdown wrote its marker
        self.report_damage = False  # whether a crash says what its image did to producer-state files
        self.kafkas_image = False  # whether the last crash image was cut from Kafka's own journal
        if scenario.image is not None and not self.broken:
            self._restore(scenario.image, scenario.clock_start_ms)
        self._apply(sc.Open(), -1)

    def _restore(self, image: sc.DiskImage, now_ms: int) -> None:
        """Every target starts from the scenario's disk image (files stamped with the clock's start).
        An image of unknown history is judged as a disk after a fault (Kafka's own rows for faults
        apply); the crash properties have no history to judge its first load by."""
        mtimes = {p: image.mtimes.get(p, now_ms) for p in image.files}
        dirs = sorted({f"d{i}" for i in range(self.header.data_dirs)} | set(image.directories()))
        for t in self.targets:
            t.restore(image.files, dirs, mtimes)
        self.tracker.ever_faulted = True
        self.tracker.ever_corrupted.update(image.damaged)

    @property
    def scenario(self) -> sc.Scenario:
        return attrs.evolve(self.header, steps=tuple(self.steps))

    def step(self, step: sc.Step) -> list[Violation]:
        self.steps.append(step)
        return self._apply(step, len(self.steps) - 1)

    def close(self) -> None:
        for t in self.targets:
            t.close()

    def _apply(self, step: sc.Step, index: int) -> list[Violation]:
        before = len(self.verdict.violations)
        self.last_fault = None
        if self.broken:
            return []
        if step.runs_as in ("fault", "disk"):
            self._fault(step, index)
        else:
            self._operate(step, index)
        if len(self.verdict.violations) > before:
            self._look_past(index, before)
        return self.verdict.violations[before:]

    def _look_past(self, index: int, before: int) -> None:
        """The step's violations, when a search looks past the first (:func:`looking_past`), are
        dropped: the scenario ends as known, or goes on where it can (a target that raised cannot)."""
        look_past, judge_on = _LOOK_PAST.get() or (None, False)
        first = self.verdict.violations[before]
        if look_past is None or not look_past(first):
            return
        del self.verdict.violations[before:]
        if not (judge_on and not self.broken):
            self.verdict.known = f"looked past at step {index}: {first.witness}"
            self.broken = True

    def _violation(self, prop: str, index: int, witness: str, frames: tuple[str, ...], stop: bool = False) -> None:
        """Record a violation; ``frames``: where it was found (an exception's own frames, or the
        judging function), the place part of a campaign signature."""
        self.verdict.violations.append(Violation(prop, index, witness, frames))
        self.broken = self.broken or stop

    def _operate(self, step: sc.Step, index: int) -> None:
        """A step every target runs: apply it, then judge it."""
        flushed, promises = self._recovery_points(step), None
        if step.shuts_down and self.model is not None and self.model.running:
            self.tracker.observe(self.model, step)  # a completed shutdown flushes everything
            promises = self._promises(flushed, shut_down=True)
        before = len(self.verdict.violations)
        results = self._run_on_targets(step, index)
        if results is None:
            return
        if index >= 0:
            self.verdict.results.append(results)
        if step.sets_partition_aside and "error" not in next(iter(results.values()), {}):
            self.tracker.unassigned(step.topic, step.partition)
        if step.loads and self.header.failure_policy == "isolate":
            # under Kafka's policy a failed load's files are compared: the startup fails with them
            self.unloadable = {
                x["partition"] for t in self.targets for x in results[t.name].get("loaded", ()) if x["error"]
            }
        if len(self.verdict.violations) == before:
            self._judge(step, index, results)
            if self.broken:
                return
        if step.loads and all(r.get("started") is False for r in results.values()):
            self._startup_failed()
            return
        if (
            self.model is not None
            and self.model.running
            and step.runs_as != "read"
            and not step.shuts_down
        ):
            self.tracker.observe(self.model, step, result=results.get(self.model.name, {}))
            promises = self._promises(flushed)
        if promises and not self.broken and len(self.verdict.violations) == before:
            self._judge_promises(step, index, results, promises)
        if step.shuts_down and "error" not in next(iter(results.values()), {}):
            self._shutdown_at = index
            self.shutdown_dirs = next(iter(results.values()), {}).get("shutdown", {})
        elif not step.passes_time:  # a refused shutdown (not running) shut nothing down
            self._shutdown_at = None

    def _recovery_points(self, step: sc.Step) -> dict[str, int] | None:
        """The model's recovery points as ``step`` begins, if a target keeps a journal to hold to
        what the step will make durable (None: nothing to judge)."""
        if (
            self.model is None
            or not self.model.running
            or self.model.manager is None
            or step.loads
            or not any(t.durable_view() is not None for t in self.targets)
        ):
            return None
        return durability.recovery_points(self.model.manager)

    def _promises(self, flushed: dict[str, int] | None, shut_down: bool = False):
        """What the step made durable, as the model states it (model.durability)."""
        if flushed is None or self.model.manager is None:
            return None
        return durability.promised(self.model.manager, self.tracker.anchored, flushed, shut_down)

    def _judge_promises(self, step: sc.Step, index: int, results: dict, promises) -> None:
        """durable, without a crash: each target's journal keeps what the model promises."""
        for t in self.targets:
            view = t.durable_view()
            if view is None:
                continue
            self.verdict.count(DURABLE)
            problem = storage_protocol.promise_problem(promises, *view)
            if problem:
                witness = f"{t.name}: {problem} (judged on {t.name}'s own journal, nothing crashed)"
                self._violation(DURABLE, index, witness, (durability.__name__ + ".promised",))
                self._known(step, index, results)
                return

    def _run_on_targets(self, step: sc.Step, index: int) -> dict | None:
        """Each target's result, the storage protocol judged on its operations; None if the
        session broke (a target could not express the step, or raised)."""
        results = {}
        for t in self.targets:
            mark = len(t.trace) if t.trace is not None else 0
            try:
                results[t.name] = t.apply(step)
            except Unsupported as e:  # not judged: reported, never passed (DESIGN.md "Targets")
                self.verdict.unsupported = f"step {index} ({describe(step)}): {e}"
                self.broken = True
                return None
            except HarnessError:  # the target could not run (a dead JVM): no verdict, the caller says so
                raise
            except Exception as e:  # an operation no target should refuse blew up
                prop = BAD_INPUT if step.loads and self.tracker.faulted else CONFORMS
                frames = own_frames(traceback.extract_tb(e.__traceback__))
                self._violation(prop, index, f"{t.name} raised {where(e)} during {describe(step)}", frames, stop=True)
                return None
            problem = step.problem(t)
            if problem:
                self._violation(CONFORMS, index, problem, (f"{type(step).__module__}.{step.op}",), stop=True)
                return None
            if t.trace is not None:
                problem = storage_protocol.problem(step, t.trace[mark:])
                self.verdict.count(DURABLE)
                if problem:
                    self._violation(
                        problem[0], index, f"{t.name}: {problem[1]}", (storage_protocol.__name__ + ".problem",)
                    )
        return results

    def _judge(self, step: sc.Step, index: int, results: dict) -> None:
        obs = Observation(
            step, index, tuple(self.targets), results, self._shutdown_at, self.tracker.ever_faulted,
            frozenset(self.unloadable), frozenset(self.tracker.ever_corrupted), self.shutdown_dirs,
            self.verdict.load_stats, self.tracker,
        )  # fmt: skip
        if self._first_violation(index, *(family(obs) for family in STEP_FAMILIES)) or self._first_violation(
            index, self._crash_judgement(obs)
        ):
            self._known(step, index, results)

    def _known(self, step: sc.Step, index: int, results: dict) -> None:
        """The step's violation, if it is a Kafka bug already pinned, reported as such: the rest is
        not judged (conformance.kafka_findings)."""
        first = self.verdict.violations[-1]
        finding = kafka_findings.known(step, results, first, self.model, self.kafkas_image)
        if finding:
            self.verdict.known = f"{finding.name} at step {index}: {first.witness}"
            self.verdict.violations.pop()
            self.broken = True

    def _crash_judgement(self, obs: Observation):
        """The crash properties, which compare a recovered log with the model's history: without
        the model among the targets they cannot be judged, and the verdict says so."""
        if self.model is None and obs.step.loads and self.tracker.faulted:
            self.tracker.faulted = False
            self.verdict.unsupported = self.verdict.unsupported or (
                f"step {obs.index} ({describe(obs.step)}): the crash properties compare with the "
                "model's history; run the model beside this target"
            )
        return crash_recovery.judge(obs)

    def _first_violation(self, index: int, *judgements) -> bool:
        """Count every check the judgements make, in order; record the first witness and stop."""
        for judgement in judgements:
            try:
                for prop, witness in judgement:
                    self.verdict.count(prop)
                    if witness:
                        self._violation(prop, index, witness, _family(judgement))
                        return True
            finally:
                judgement.close()
        return False

    def _startup_failed(self) -> None:
        """Every target's startup failed (Kafka's failure policy, §6.2 step 7): the process is
        gone, the files as the loads left them — each target gets the image source's, as after a
        process crash, so the next open of every target loads the same bytes."""
        if self.source is not None:
            files, dirs, mtimes = self.source.image(Fault("process"))
            for t in self.targets:
                t.restore(files, dirs, mtimes)
        self.tracker.crashed(None, during_open=False)
        self._shutdown_at = None

    # --- fault steps ------------------------------------------------------------------------------

    def _fault(self, step, index: int) -> None:
        """A fault step strikes the image source (:mod:`conformance.faults`); every target restarts
        from the image it left, and the crash properties learn what it did."""
        if self.source is None:
            raise sc.ScenarioError(f"step {index}: {step.op} needs an impl target on the simulated backend")
        context = FaultContext(
            self.source, self.model, tuple(self.targets), self.header.data_dirs, self.report_damage
        )
        try:
            outcome = self.last_fault = step.strike(context)
        except Unsupported as e:  # not judged: reported, never passed (DESIGN.md "Targets")
            self.verdict.unsupported = f"step {index} ({describe(step)}): {e}"
            self.broken = True
            return
        for prop in outcome.checked:
            self.verdict.count(prop)
        for prop, witness, frames, stop in outcome.violations:
            self._violation(prop, index, witness, frames, stop)
        if outcome.violations:  # judged on the journal the fault struck
            self.kafkas_image = step.on_kafka_journal
            self._known(step, index, outcome.results)
        if outcome.stopped:
            return
        self.tracker.struck(outcome, self.model)
        if outcome.image is not None:
            if step.runs_as == "fault":  # a crash: whose write order made the image (a disk step edits it)
                self.kafkas_image = step.on_kafka_journal
            for t in self.targets:
                if outcome.stops_broker:
                    t.halt()
                t.restore(*outcome.image)
                if outcome.clock_ms is not None:
                    t.clock.now = outcome.clock_ms
        if outcome.forgets_shutdown:
            self._shutdown_at = None
        self.verdict.results.append(outcome.results)

    def fork_source(self):
        """A copy of the image source as it is now, to run a step on without touching the session
        (the operations a step would make, for a state machine drawing where to interrupt it)."""
        return forked(self.source)


def _family(judgement) -> tuple[str, ...]:
    """Where a violation was found, for its campaign signature: the family's judging function."""
    frame = judgement.gi_frame
    return (f"{frame.f_globals['__name__']}.{judgement.gi_code.co_name}",) if frame else ()


def run(scenario: sc.Scenario, targets=("model", "impl"), backend: str = "sim", stop_at_first: bool = True) -> Verdict:
    session = Session(scenario, targets, backend)
    try:
        for step in scenario.steps:
            if session.step(step) and stop_at_first:
                break
            if session.broken:
                break
    finally:
        session.close()
    verdict = session.verdict
    verdict.scenario = scenario
    return verdict
