"""Test-wide setup: the Hypothesis profile and the shared data folder."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import coverage
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


# Known long runs (the gate's slowest, ``python -m benchmarks.gate``: the state machines, the
# exhaustive crash sweeps of a split and a cleaning, the mutant checks that sweep or search, the
# campaign, klc check over every corpus), started first: with xdist's worksteal the short tests
# then fill the other worker instead of everyone waiting on a long one at the end.
LONG_RUNS = (
    "test_log_machine.py::",
    "test_crash_machine.py::",
    "test_crash_exhaustive.py::test_every_crash_point_of_a_",
    "-by-split-sweep]",
    "-by-index-machine]",
    "-by-crash-exhaustive]",
    "test_index_machine.py::",
    "test_file_records_machine.py::",
    "test_campaign.py::",
    "test_scenarios_and_cli.py::test_klc_check",
    "test_dump_index.py::test_live_broker_indexes",
    "test_load_real_data.py::",
    "test_kafka_findings_junit.py::test_the_findings_fail",
    "test_kafka_io_releases.py::",
)


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not any(long in item.nodeid for long in LONG_RUNS))


@pytest.fixture
def frozen_heap():
    """The heap the worker built before this test frozen out of the garbage collector for its
    length: the benchmarks collect before every timed run, and late in a gate session each full
    collection walked the whole worker's heap (a 1.4 s benchmark test took 10 s)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# ``KLC_TEST_TIMES=FILE``: every test phase's duration appended to FILE as a JSON line, by the
# controlling process only (xdist workers' reports reach it), for ``python -m benchmarks.gate``.
def pytest_runtest_logreport(report):
    path = os.environ.get("KLC_TEST_TIMES")
    if not path or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    line = {"test": report.nodeid, "when": report.when, "seconds": report.duration, "outcome": report.outcome}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


# ``no_cover`` tests run untraced (tox.ini says which and why).  pytest-cov (7.1) pauses its
# controller's Coverage around such a test, but an xdist worker parses ``-n`` from its own arguments
# early and starts a second Coverage beneath the worker's, which the pause hands tracing back to:
# the test ran traced, three times slower.  Innermost (trylast), this stops whatever still traces
# and restarts it afterwards; tests/test_gate_tiers.py checks that the test runs untraced.
@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item):
    stopped = []
    if item.get_closest_marker("no_cover"):
        while (cov := coverage.Coverage.current()) is not None and len(stopped) < 8:
            cov.stop()
            stopped.append(cov)
    try:
        yield
    finally:
        for cov in reversed(stopped):
            cov.start()
