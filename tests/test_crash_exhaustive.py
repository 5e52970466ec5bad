"""The ACE-style bounded exhaustive crash test (conformance/exhaustive.py): every workload of one
operation (``nightly``: up to three) after a settled prelude × a crash at every storage operation of
its last operation and right after it × every fault family.  One test per workload, so xdist spreads
them; the size follows the Hypothesis profile (``nightly``: the full alphabet, both preludes, every
parameter).  Not traced by coverage: every image is an ordinary scenario, and tracing tripled the
sweep's time (issue #35)."""

from __future__ import annotations

import functools
import json

import pytest

from conformance.crash_images import FAMILIES
from conformance.exhaustive import (
    CLEAN_CRASH_INDEX,
    SIZES,
    Tally,
    clean_scenario,
    explore,
    faults_for,
    scenario,
    split_scenario,
    sweep,
    workloads,
)
from conformance.scenario import Scenario
from tests.conftest import PROFILE

SIZE = SIZES[PROFILE]
WORKLOADS = list(workloads(SIZE))

pytestmark = pytest.mark.no_cover


@pytest.mark.parametrize("prelude, ops", WORKLOADS, ids=[f"{p}:{'-'.join(o)}" for p, o in WORKLOADS])
def test_every_crash_point_of_the_workload_recovers(prelude, ops):
    tally = Tally()
    verdict = explore(prelude, ops, SIZE.every_parameter, tally)
    assert verdict is None, f"{verdict.violations[0]}\nscenario: {verdict.scenario.dumps()}"
    assert tally.crash_points >= 1 and tally.images >= tally.crash_points


@pytest.mark.slow  # the gate: corpora/crash/split-crashed-*.json, the crash points two mutants need
@pytest.mark.parametrize("recover_log", [False, True], ids=["loadSegmentFiles", "recoverLog"])
def test_every_crash_point_of_a_split_recovers(recover_log):
    """#6: a crash at every storage operation of a load that splits an overflowed legacy segment
    (§5.5: .cleaned files written and flushed, renamed .swap in descending order, then to their
    final names, §5.9), under every fault family: every message survives (durable), the next load
    rolls the split back or completes it (prefix, conforms), and equals an uninterrupted load
    (idempotent-recovery)."""
    tally = Tally()
    verdict = sweep(functools.partial(split_scenario, recover_log=recover_log), 2, SIZE.every_parameter, tally)
    assert verdict is None, f"{verdict.violations[0]}\nscenario: {verdict.scenario.dumps()}"
    # the load's own operations: the split's files, renames and fsyncs are among them
    assert tally.crash_points >= 20 and "5.5 overflowed segment split" in tally.branches


def test_every_crash_point_of_a_cleaning_recovers():
    """#6: a crash at every storage operation of a log-cleaning round that installs two groups
    (§5.9: each .cleaned segment written and flushed, renamed .swap, the originals .deleted, the
    .swap renamed final, the directory fsynced), under every fault family: nothing flushed is lost
    beyond what the round removes (durable), the log is the uncleaned or the cleaned version of
    each group (prefix), and model and impl agree on the load that completes or rolls back the
    swap (conforms)."""
    tally = Tally()
    verdict = sweep(clean_scenario, CLEAN_CRASH_INDEX, SIZE.every_parameter, tally)
    assert verdict is None, f"{verdict.violations[0]}\nscenario: {verdict.scenario.dumps()}"
    # two groups, each: .cleaned files written and fsynced, four renames each way, dir fsyncs
    assert tally.crash_points >= 30


def test_the_sweep_covers_what_it_claims():
    """Sizes stay what the docs say; every family is tried at every crash point with pending
    operations; workloads obey the open-only-after-shutdown rule; cases replay as scenarios."""
    ci, deep = SIZES["ci"], SIZES["deep"]
    assert ci.length == 1 and len(WORKLOADS if SIZE is ci else list(workloads(ci))) == 6
    assert deep.length == 3 and deep.alphabet == ci.alphabet and len(list(workloads(deep))) == 198
    assert {f.family for f in faults_for(7, False)} == set(FAMILIES)
    assert len(faults_for(7, True)) > len(faults_for(7, False)) > len(faults_for(1, False))
    assert faults_for(0, False) == faults_for(0, True) and len(faults_for(0, False)) == 1
    for _, ops in workloads(SIZES["nightly"]):
        assert all((op == "open") == (i > 0 and ops[i - 1] == "shutdown") for i, op in enumerate(ops)), ops
    case = scenario("settled", ("append", "truncate"), 2, faults_for(9, False)[3])
    assert Scenario.from_json(json.loads(case.dumps())) == case
