"""Test-wide setup: the Hypothesis profile and the shared data folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.profiles import load_profile

PROFILE = load_profile()
REPO = Path(__file__).resolve().parent.parent


def _shared() -> Path:
    return Path(os.environ.get("KLC_SHARED", REPO.parent / "shared")).resolve()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only ``shared`` folder beside the checkout (DESIGN.md, spec, real-data).

    Missing locally: the test is skipped.  Missing in CI: that is a broken gate, so it fails.
    """
    path = _shared()
    if not (path / "real-data").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"shared data folder not found at {path} (set KLC_SHARED)")
        pytest.skip(f"shared data folder not found at {path} (set KLC_SHARED)")
    return path


def pytest_report_header(config):
    return [f"hypothesis profile: {PROFILE}", f"shared data: {_shared()}"]
