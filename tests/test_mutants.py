"""The suite must be able to fail: every mutant is caught by each check it names."""

from __future__ import annotations

import pytest

from conformance.formats import FORMAT_CHECKS
from conformance.properties import PropertyViolation
from tests.mutants import FORMAT_MUTANTS

CASES = [(m, check) for m in FORMAT_MUTANTS for check in m.caught_by]


@pytest.mark.parametrize("mutant,check", CASES, ids=[f"{m.name}-by-{c}" for m, c in CASES])
def test_mutant_is_caught(mutant, check):
    target = mutant.load()
    with pytest.raises(PropertyViolation) as info:
        FORMAT_CHECKS[check](impl_module=target)
    assert info.value.witness, "a violation must carry a one-line witness"


@pytest.mark.parametrize("mutant", FORMAT_MUTANTS, ids=lambda m: m.name)
def test_mutant_applies_to_current_source(mutant):
    """A mutant whose edited text no longer exists would silently test nothing."""
    assert mutant.new in mutant.source()


def test_unmutated_impl_passes_every_check():
    for check in FORMAT_CHECKS.values():
        check()
