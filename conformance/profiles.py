"""Hypothesis settings profiles, registered in one place.

* ``dev`` — quick local runs (the default outside CI);
* ``ci`` — the CI conformance gate: derandomized so a green run stays green, no deadline (shared
  CI machines stall), database off (a fresh checkout has none); 100 examples, what keeps the gate
  within its 10 minutes on a 2-core machine (the nightly searches 50 times as far); no target
  phase: below 1,000 examples Hypothesis runs its hill-climbing of ``target()`` scores without a
  bound, and under coverage a crash machine's climb ran past 20 minutes (the nightly keeps it);
* ``nightly`` — a much larger search budget.

Select one with ``HYPOTHESIS_PROFILE``; with ``CI`` set the default is ``ci``.

:func:`fresh_cases` is how the log-stack state machines (log and crash machine) run in CI, in the
mutant checks and in the benchmarks (see there); :class:`FreshCases` applies it to a machine's
``TestCase``.
"""

from __future__ import annotations

import contextlib
import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.internal.conjecture import engine

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile("dev", max_examples=100, deadline=None, suppress_health_check=_SUPPRESS)
settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, database=None, print_blob=True,
    suppress_health_check=_SUPPRESS, phases=[Phase.explicit, Phase.generate, Phase.shrink],
)  # fmt: skip
settings.register_profile("nightly", max_examples=5000, deadline=None, suppress_health_check=_SUPPRESS)

PROFILES = ("dev", "ci", "nightly")


def load_profile(name: str | None = None) -> str:
    """Load ``name``, or ``$HYPOTHESIS_PROFILE``, or ``ci`` when ``$CI`` is set, else ``dev``."""
    name = name or os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
    if name not in PROFILES:
        raise ValueError(f"unknown Hypothesis profile {name!r}; choose one of {', '.join(PROFILES)}")
    settings.load_profile(name)
    return name


@contextlib.contextmanager
def fresh_cases():
    """Hypothesis's generate phase without its span mutator: every case drawn afresh.

    After each new case, Hypothesis runs up to five copies of it in which one span is replaced by
    another of the same label (``ConjectureRunner.generate_mutations_from``: "the same value at
    multiple different points").  In the crash machine a case is a configuration, a history and a
    chain of faults; the copies keep the prefix and mostly repeat the same damage and crashes, and
    they take most of its time, so a fixed budget draws far fewer distinct cases with them (the
    measurements: corpora/README.md, "Time to catch").

    One policy for the log-stack machines — their tests, the ``log-machine`` and ``crash-machine``
    mutant checks, ``benchmarks/time_to_catch.py`` and ``benchmarks/stateful.py`` — so the tables
    measure what CI runs (the log machine runs ~15 % more steps a second with it, benchmarks/stateful.py); not
    campaigns, whose recorded findings replay the draws of Hypothesis's own generation
    (tests/test_campaign.py).

    The mutator is private API: if a Hypothesis release renames it, this does nothing (and the
    time-to-catch table shows it)."""
    original = getattr(engine.ConjectureRunner, "generate_mutations_from", None)
    if original is None:
        yield
        return
    engine.ConjectureRunner.generate_mutations_from = lambda self, data: None
    try:
        yield
    finally:
        engine.ConjectureRunner.generate_mutations_from = original


class FreshCases:
    """Mixin for a machine's ``TestCase``: its run under :func:`fresh_cases`."""

    def runTest(self):
        with fresh_cases():
            super().runTest()
