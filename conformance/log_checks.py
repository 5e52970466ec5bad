"""Log checks runnable against the real ``impl`` or a mutant of one of its log modules.

A mutant is a stand-alone module object (tests/mutants).  :func:`impl_stack` installs it in place of
the module it mutates and re-executes, from their own source, the impl modules that depend on it, so
the whole log stack — segment, log, loader, log manager — runs with the mutation; everything is put
back afterwards.  The checks:

* ``log-scenarios`` — every scenario under ``corpora/log/`` replayed through the runner (the
  deterministic catch: each mutant of the log issue has its case there);
* ``log-machine`` — the log state machine within a fixed, derandomized budget;
* ``crash-scenarios``, ``crash-machine``, ``crash-exhaustive`` — the crash corpus, the crash state
  machine and the bounded exhaustive sweep;
* ``swap-states`` — interrupted segment replacements as the loader finds them (§5.9);
* ``regression-corpus`` — every named corpus case, the historical bugs' included;
* ``segments-range`` — ``LogSegments.values(from, to)`` against §4.13's rule, reversed ranges included.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Callable, Collection

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from conformance import regressions, swap_states
from conformance.crash_machine import make_crash_machine
from conformance.exhaustive import SIZES, explore, split_scenario, sweep, workloads
from conformance.impl_stack import impl_stack
from conformance.log_machine import make_log_machine
from conformance.profiles import fresh_cases
from conformance.properties import CONFORMS, IDEMPOTENT_RECOVERY, READ_COMMITTED, PropertyViolation
from conformance.runner import run
from conformance.scenario import Scenario

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpora", "log")


def corpus_scenarios(folder: str = CORPUS, first: Collection[str] = ()) -> list[tuple[str, Scenario]]:
    """The cases of ``folder`` by name, those named in ``first`` (relative to ``corpora/``) first."""
    paths = sorted(glob.glob(os.path.join(folder, "*.json")))
    return [(p, Scenario.load(p)) for p in named_first(paths, first, lambda p: os.path.relpath(p, CORPORA))]


def named_first(items: list, first: Collection[str], name: Callable) -> list:
    """``items`` with those whose ``name`` is in ``first`` moved to the front, each group in its
    order.  A mutant's check runs the cases that record catching it (their ``mutant:`` verdicts)
    before the rest, so it stops at its witness and still runs every case if that one passes."""
    return sorted(items, key=lambda item: name(item) not in first) if first else items


CORPORA = os.path.dirname(CORPUS)
CRASH_CORPUS = os.path.join(CORPORA, "crash")


def check_log_scenarios(
    module=None, folder: str = CORPUS, first: Collection[str] = (), backends: tuple[str, ...] = ("sim", "os")
) -> None:
    with impl_stack(module):
        for path, scenario in corpus_scenarios(folder, first):
            for backend in backends:
                verdict = run(scenario, backend=backend)
                if verdict.violations:
                    v = verdict.violations[0]
                    raise PropertyViolation(v.prop, f"{os.path.basename(path)} ({backend}): {v}")


def _fixed_budget(max_examples: int, steps: int) -> settings:
    """Derandomized, no shrinking: a mutant check only needs to know that something failed."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        stateful_step_count=steps,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def check_log_machine(module=None, max_examples: int = 600) -> None:
    """The log machine, derandomized, stopping at the first violation.  Hypothesis draws from the
    constants of the loaded source, so which cases a fixed budget holds moves with the code; 600
    keeps every log-machine mutant caught (the slowest, fetch-reads-the-live-log-end, in 6 s)."""
    with impl_stack(module), fresh_cases():
        run_state_machine_as_test(make_log_machine("sim"), settings=_fixed_budget(max_examples, 30))


def check_crash_scenarios(module=None, first: Collection[str] = ()) -> None:
    """Every crash case under ``corpora/crash/`` on both backends (the real one loads the
    materialised crash images)."""
    check_log_scenarios(module, CRASH_CORPUS, first)


def check_crash_machine(module=None, max_examples: int = 300) -> None:
    with impl_stack(module), fresh_cases():
        run_state_machine_as_test(make_crash_machine("sim"), settings=_fixed_budget(max_examples, 40))


def check_crash_exhaustive(module=None) -> None:
    """The ACE-style sweep (conformance/exhaustive.py) at its ``deep`` size, stopping at the first
    failing workload."""
    size = SIZES["deep"]
    with impl_stack(module):
        for prelude, ops in workloads(size):
            verdict = explore(prelude, ops, size.every_parameter)
            if verdict is not None:
                v = verdict.violations[0]
                raise PropertyViolation(v.prop, f"workload {prelude} + {', '.join(ops)}: {v}")


def check_split_sweep(module=None) -> None:
    """A crash at every storage operation of a load that splits an overflowed legacy segment, in
    loadSegmentFiles and in recoverLog, under every fault family (conformance/exhaustive.py
    ``split_scenario``, spec §5.5, §5.9)."""
    with impl_stack(module):
        for recover_log in (False, True):
            build = functools.partial(split_scenario, recover_log=recover_log)
            verdict = sweep(build, 2, SIZES["ci"].every_parameter)
            if verdict is not None:
                v = verdict.violations[0]
                raise PropertyViolation(v.prop, f"split sweep: {v}")


def check_swap_states(module=None) -> None:
    """The §5.9 crash-point table and its caveats as loader cases (conformance/swap_states.py)."""
    swap_states.check_swap_states(module)


def check_read_committed_alone(module=None, folder: str = CORPUS, first: Collection[str] = ()) -> None:
    """The log cases judged to their end, raising on ``read-committed`` only: the property must
    catch by itself what breaks it, whatever ``conforms`` says first."""
    with impl_stack(module):
        for path, scenario in corpus_scenarios(folder, first):
            verdict = run(scenario, stop_at_first=False)
            for v in verdict.violations:
                if v.prop == READ_COMMITTED:
                    raise PropertyViolation(v.prop, f"{os.path.basename(path)}: {v}")


def check_idempotent_recovery_alone(module=None, folder: str = CRASH_CORPUS, first: Collection[str] = ()) -> None:
    """The crash cases on the model alone, raising on ``idempotent-recovery`` only: impl (or the
    mutant) makes the crash images, so what its interrupted load wrote is what the model's next
    load finds — the property must catch a load that leaves the next one a different log or
    producer state, with no ``conforms`` to catch it first."""
    with impl_stack(module):
        for path, scenario in corpus_scenarios(folder, first):
            verdict = run(scenario, ("model",), stop_at_first=False)
            for v in verdict.violations:
                if v.prop == IDEMPOTENT_RECOVERY:
                    raise PropertyViolation(v.prop, f"{os.path.basename(path)}: {v}")


def check_regression_corpus(module=None, first: Collection[str] = ()) -> None:
    """Every named corpus case (conformance/regressions.py: log/, crash/, the historical-bug
    folders) on the simulated backend, stopping at the first violation."""
    with impl_stack(module):
        for case in named_first(regressions.cases(), first, lambda case: case.name):
            if case.group == regressions.FOUND:
                continue
            verdict = run(case.scenario, ("model", "impl"), "sim")
            if verdict.violations:
                v = verdict.violations[0]
                raise PropertyViolation(v.prop, f"corpora/{case.name}: {v}")


def check_segments_range(module=None) -> None:
    """``LogSegments.values(from, to)`` (spec §4.13 rule 1) on a log of four segments, every pair of
    offsets around them: equal bounds give none, a reversed range is IllegalArgumentException, else
    the segment containing ``from`` (or the first, when none does) through the last base below ``to``."""
    steps = [{"op": "create"}]
    for _ in range(3):
        steps += [{"op": "append", "batches": [{"records": [{"timestamp": 1700000000000, "value": "v"}] * 3}]}]
        steps += [{"op": "roll"}]
    scenario = Scenario.from_json({"format": "klc-scenario", "version": 1, "config": {}, "steps": steps})
    with impl_stack(module):
        from conformance.targets.impl_target import ImplTarget

        target = ImplTarget(scenario)
        target.open()
        for step in scenario.steps:
            target.apply(step)
        log = target.manager.log("t", 0)
        bases = [s.base_offset for s in log.segments]
        for start in range(-1, 14):
            for end in range(-1, 14):
                try:
                    got = [s.base_offset for s in log.segments_in_range(start, end)]
                except target.refusals() as e:
                    got = getattr(e, "kind", type(e).__name__)
                floor = max((b for b in bases if b <= start), default=min(bases))
                want = [] if start == end else "IllegalArgumentException" if end < start else [
                    b for b in bases if floor <= b < end
                ]  # fmt: skip
                if got != want:
                    raise PropertyViolation(
                        CONFORMS, f"segments {bases}: values({start}, {end}) gave {got}, Kafka's {want}"
                    )


LOG_CHECKS = {
    "regression-corpus": check_regression_corpus,
    "log-scenarios": check_log_scenarios,
    "read-committed-alone": check_read_committed_alone,
    "idempotent-recovery-alone": check_idempotent_recovery_alone,
    "log-machine": check_log_machine,
    "crash-scenarios": check_crash_scenarios,
    "crash-machine": check_crash_machine,
    "crash-exhaustive": check_crash_exhaustive,
    "swap-states": check_swap_states,
    "split-sweep": check_split_sweep,
    "segments-range": check_segments_range,
}

# the checks that walk a corpus and take ``first``: the case names to run before the rest
CORPUS_CHECKS = frozenset(
    {"regression-corpus", "log-scenarios", "read-committed-alone", "idempotent-recovery-alone", "crash-scenarios"}
)
