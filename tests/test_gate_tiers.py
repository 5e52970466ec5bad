"""The gate's tiers (README "Tests", issue #35): what runs untraced really does."""

from __future__ import annotations

import sys
import threading

import pytest


@pytest.mark.no_cover
def test_a_no_cover_test_runs_untraced():
    """Under ``tox`` (pytest-cov on xdist workers) nothing traces a ``no_cover`` test: a tracer left
    on made the sweeps and mutant checks three times slower (tests/conftest.py)."""
    assert sys.gettrace() is None
    assert threading.gettrace() is None
