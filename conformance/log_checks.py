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
* ``regression-corpus`` — every named corpus case, the historical bugs' included.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import importlib
import os
import sys
import types

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

import impl
from conformance.properties import PropertyViolation
from conformance.scenario import Scenario

# impl's modules in dependency order (each may import the ones before it, never one after it at
# import time): a mutant of any of them runs under the whole stack, so format and index mutants are
# targets for scenarios and machines too.  Every impl module that imports one of these is one of
# these (tests/test_mutants.py checks both rules): a module left out keeps the real classes, so a
# cleaning round under a segment mutant used to raise the mutant's LogSegmentOffsetOverflow past a
# cleaner that caught only the real one — a catch that was no catch.
LOG_STACK = (
    "impl.codecs",
    "impl.file_records",
    "impl.record_walk",
    "impl.record_writer",
    "impl.index",
    "impl.index_verify",
    "impl.txn_index",
    "impl.checkpoints",
    "impl.leader_epoch",
    "impl.segment",
    "impl.split",
    "impl.cleaner",
    "impl.log",
    "impl.loader",
    "impl.log_manager",
)
CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpora", "log")


@contextlib.contextmanager
def impl_stack(module: types.ModuleType | None = None):
    """Run the enclosed code with ``module`` (a mutant) standing in for the impl module it mutates."""
    real = getattr(module, "MUTANT_OF", None)
    if real is None:
        yield
        return
    # every real module imported first, so that none is imported under the mutant and left behind
    saved = {name: importlib.import_module(name) for name in LOG_STACK}
    attrs_saved = {name: getattr(impl, name.split(".")[1]) for name in saved}
    try:
        sys.modules[real] = module
        setattr(impl, real.split(".")[1], module)
        after = False
        for name in LOG_STACK:
            if name == real:
                after = True
                continue
            if not after:
                continue
            original = saved[name]
            fresh = types.ModuleType(name)
            fresh.__file__ = original.__file__
            with open(original.__file__, encoding="utf-8") as f:
                code = compile(f.read(), original.__file__, "exec")
            sys.modules[name] = fresh
            exec(code, fresh.__dict__)
            setattr(impl, name.split(".")[1], fresh)
        yield
    finally:
        for name, mod in saved.items():
            sys.modules[name] = mod
            setattr(impl, name.split(".")[1], attrs_saved[name])


def corpus_scenarios(folder: str = CORPUS) -> list[tuple[str, Scenario]]:
    return [(p, Scenario.load(p)) for p in sorted(glob.glob(os.path.join(folder, "*.json")))]


CRASH_CORPUS = os.path.join(os.path.dirname(CORPUS), "crash")


def check_log_scenarios(module=None, folder: str = CORPUS) -> None:
    from conformance.runner import run

    with impl_stack(module):
        for path, scenario in corpus_scenarios(folder):
            for backend in ("sim", "os"):
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


def check_log_machine(module=None, max_examples: int = 300) -> None:
    from conformance.log_machine import make_log_machine

    with impl_stack(module):
        run_state_machine_as_test(make_log_machine("sim"), settings=_fixed_budget(max_examples, 30))


def check_crash_scenarios(module=None) -> None:
    """Every crash case under ``corpora/crash/`` on both backends (the real one loads the
    materialised crash images)."""
    check_log_scenarios(module, CRASH_CORPUS)


def check_crash_machine(module=None, max_examples: int = 300) -> None:
    from conformance.crash_machine import make_crash_machine

    with impl_stack(module):
        run_state_machine_as_test(make_crash_machine("sim"), settings=_fixed_budget(max_examples, 40))


def check_crash_exhaustive(module=None) -> None:
    """The ACE-style sweep (conformance/exhaustive.py) at its CI size, stopping at the first
    failing workload."""
    from conformance.exhaustive import SIZES, explore, workloads

    size = SIZES["ci"]
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
    from conformance.exhaustive import SIZES, split_scenario, sweep

    with impl_stack(module):
        for recover_log in (False, True):
            build = functools.partial(split_scenario, recover_log=recover_log)
            verdict = sweep(build, 2, SIZES["ci"].every_parameter)
            if verdict is not None:
                v = verdict.violations[0]
                raise PropertyViolation(v.prop, f"split sweep: {v}")


def check_swap_states(module=None) -> None:
    """The §5.9 crash-point table and its caveats as loader cases (conformance/swap_states.py)."""
    from conformance.swap_states import check_swap_states as check

    check(module)


def check_regression_corpus(module=None) -> None:
    """Every named corpus case (conformance/regressions.py: log/, crash/, the historical-bug
    folders) on the simulated backend, stopping at the first violation."""
    from conformance import regressions
    from conformance.runner import run

    with impl_stack(module):
        for case in regressions.cases():
            if case.group == regressions.FOUND:
                continue
            verdict = run(case.scenario, ("model", "impl"), "sim")
            if verdict.violations:
                v = verdict.violations[0]
                raise PropertyViolation(v.prop, f"corpora/{case.name}: {v}")


LOG_CHECKS = {
    "regression-corpus": check_regression_corpus,
    "log-scenarios": check_log_scenarios,
    "log-machine": check_log_machine,
    "crash-scenarios": check_crash_scenarios,
    "crash-machine": check_crash_machine,
    "crash-exhaustive": check_crash_exhaustive,
    "swap-states": check_swap_states,
    "split-sweep": check_split_sweep,
}
