"""The suite must be able to fail: every mutant is caught by each check it names."""

from __future__ import annotations

import collections
import functools

import pytest

from conformance import regressions
from conformance.checks import CHECKS
from conformance.log_checks import CORPUS_CHECKS
from conformance.properties import PropertyViolation
from tests.mutants import ALL_MUTANTS

CASES = [(m, check) for m in ALL_MUTANTS.values() for check in m.caught_by]
# The gate (tox) runs each mutant's first check, its cheapest as ``python -m benchmarks.gate``
# measures it, so every mutant stays caught in the gate; the nightly tier (``tox -e nightly``) runs
# every check, so each keeps proving it can fail (issue #35).
GATE = [
    pytest.param(m, check, id=f"{m.name}-by-{check}", marks=[] if check == m.caught_by[0] else [pytest.mark.slow])
    for m, check in CASES
]

# A mutant is a patched copy of an impl module compiled under the module's own file name: traced,
# it would credit impl's lines with what the copy ran (and cost a third of the gate's time).
pytestmark = pytest.mark.no_cover


@functools.cache
def recorded_catches() -> dict[str, tuple[str, ...]]:
    """Mutant name -> the corpus cases whose recorded verdicts say they catch it (``mutant:`` entries)."""
    catches = collections.defaultdict(tuple)
    for case in regressions.cases():
        for name in case.mutants:
            catches[name] += (case.name,)
    return dict(catches)


def witnesses(name: str) -> tuple[str, ...]:
    return recorded_catches().get(name, ())


@pytest.mark.parametrize("mutant,check", GATE)
def test_mutant_is_caught(mutant, check):
    target = mutant.load()
    options = {"first": witnesses(mutant.name)} if check in CORPUS_CHECKS else {}
    with pytest.raises(PropertyViolation) as info:
        CHECKS[check](target, **options)
    assert info.value.witness, "a violation must carry a one-line witness"


@pytest.mark.parametrize("mutant", ALL_MUTANTS.values(), ids=lambda m: m.name)
def test_mutant_applies_to_current_source(mutant):
    """A mutant whose edited text no longer exists would silently test nothing."""
    source = mutant.source()
    assert all(new in source for _, new in mutant.edits)


def test_every_check_named_by_a_mutant_exists():
    assert {c for _, c in CASES} <= set(CHECKS)


def test_every_mutant_a_corpus_gates_has_a_case_recording_it():
    """The gate's corpus check of a mutant starts at the cases that record catching it; a mutant with
    none would pay for the whole corpus, and its catch would be written down nowhere."""
    gated = [m.name for m in ALL_MUTANTS.values() if m.caught_by[0] in CORPUS_CHECKS]
    assert gated and [name for name in gated if not witnesses(name)] == []
