"""The ``race`` step (KAFKA-9156, spec §7.4; docs/scenario-format.md): concurrent steps under a
replayable schedule — parsed strictly, refused alike when the answer would depend on the schedule,
and the same answer as the model's one-after-another under every schedule."""

from __future__ import annotations

import itertools
import json

import pytest

from conformance import scenario as sc
from conformance.mutants import mutant_stack
from conformance.regressions import replay_scenario
from conformance.runner import run

T0 = 1_700_000_000_000
CASE = "corpora/KAFKA-9156/fetch-and-append-open-a-rolled-segments-index.json"


def _append(ts=T0, topic="t"):
    return sc.Append(topic, 0, (sc.BatchSpec((sc.Rec(ts, "k", "v"),)),), True, 0)


def _rolled(*after) -> sc.Scenario:
    """segment.bytes 100 holds one batch: the second append rolls, so the race that follows is the
    first to open segment 1's lazy indexes."""
    steps = (sc.Create("t", 0), _append(), _append(T0 + 1), *after)
    return sc.Scenario(steps, config={"segment.bytes": 100})


FETCH = sc.Read("t", 0, 1, 1 << 20, 2, True)  # offset 1, in the just-rolled segment


def _race(schedule, read=FETCH):
    return sc.Race((_append(T0 + 2), read), tuple(schedule))


def test_a_race_round_trips_through_json():
    s = _rolled(_race([1, 0, 1]), sc.Shutdown())
    assert sc.Scenario.from_json(json.loads(s.dumps())) == s


def _doc(race: dict) -> dict:
    return {"format": "klc-scenario", "version": 1, "steps": [{"op": "create"}, race]}


APPEND = {"op": "append", "batches": [{"records": [{"timestamp": 1}]}]}
READ = {"op": "read", "offset": 0, "max_offset": 0}


@pytest.mark.parametrize(
    "race, message",
    [
        ({"op": "race", "steps": [APPEND]}, "steps[1]: 'steps' must be a list of 2 to 4 steps"),
        ({"op": "race", "steps": [APPEND, {"op": "truncate"}]}, "steps[1].steps[1]: op 'truncate' cannot race"),
        ({"op": "race", "steps": [APPEND, APPEND]}, "a second append/roll on t-0 in one race"),
        ({"op": "race", "steps": [APPEND, {"op": "roll"}]}, "a second append/roll on t-0 in one race"),
        ({"op": "race", "steps": [APPEND, {"op": "read"}]}, "only a read with 'max_offset' can race"),
        ({"op": "race", "steps": [APPEND, {"op": "offset_for_timestamp"}]}, "only a read with 'max_offset' can race"),
        ({"op": "race", "steps": [APPEND, READ], "schedule": [0, 2]}, "schedule[1]: 2 is not a thread number"),
        ({"op": "race", "steps": [APPEND, READ], "schedule": "01"}, "'schedule' must be a list"),
        ({"op": "race", "steps": [APPEND, {"op": "bogus"}]}, "steps[1].steps[1]: unknown op 'bogus'"),
        ({"op": "crash", "during": {"op": "race", "steps": [READ, READ]}}, "a fault cannot interrupt a race"),
    ],
)  # fmt: skip
def test_bad_races_are_named_errors(race, message):
    with pytest.raises(sc.ScenarioError) as info:
        sc.Scenario.from_json(_doc(race), "case.json")
    assert message in str(info.value) and str(info.value).startswith("case.json")


def test_steps_on_different_partitions_or_without_a_writer_may_race():
    other = dict(APPEND, topic="orders")
    ro = [{"op": "read", "topic": "x"}, {"op": "offset_for_timestamp", "topic": "x"}]
    s = sc.Scenario.from_json(_doc({"op": "race", "steps": [APPEND, other, *ro]}))
    assert [type(x) for x in s.steps[1].steps] == [sc.Append, sc.Append, sc.Read, sc.OffsetForTimestamp]


def test_a_read_past_the_log_end_beside_an_append_refuses_the_race_on_both_targets():
    s = _rolled(_race([], sc.Read("t", 0, 0, 1 << 20, 3, True)), sc.OffsetForTimestamp("t", 0, -1))
    verdict = run(s)
    assert verdict.ok, verdict.violations
    assert verdict.results[3] == {
        "model": {"error": "RaceDependsOnSchedule"},
        "impl/sim": {"error": "RaceDependsOnSchedule"},
    }
    assert verdict.results[4]["model"] == {"found": [-1, 2]}  # the log end offset: the append did not run


def test_refusals_inside_a_race_are_per_thread():
    s = sc.Scenario((sc.Create("t", 0), sc.Race((sc.Read("t", 0, 5), sc.Roll("nope", 0)), (1, 0))))
    verdict = run(s)
    assert verdict.ok, verdict.violations
    assert verdict.results[1]["impl/sim"] == {
        "race": [{"error": "OffsetOutOfRangeException"}, {"error": "UnknownTopicOrPartitionException"}]
    }


@pytest.mark.parametrize("backend", ["sim", "os"])
def test_every_schedule_of_four_decisions_gives_the_models_answer(backend):
    """After a rolling append, a fetch and an append both open segment 1's offset index first:
    whoever goes first, impl builds it once and answers as the model does."""
    for schedule in itertools.chain.from_iterable(itertools.product((0, 1), repeat=n) for n in range(5)):
        s = _rolled(_race(schedule), _append(T0 + 3), sc.Shutdown(), sc.Open(), sc.Read("t", 0, 0, 1 << 20, None, True))
        verdict = run(s, backend=backend)
        assert verdict.ok, (schedule, verdict.violations)
        race = verdict.results[3]
        assert race["model"] == race[f"impl/{backend}"]
        assert race["model"]["race"][0] == {"first": 2, "last": 2}


def test_the_schedule_decides_whether_the_unlocked_getter_builds_twice():
    """The KAFKA-9156 mutant: one schedule interleaves the two first uses (caught), another lets one
    thread finish its construction first (nothing to see) — the race is in the schedule, not luck."""
    case = sc.Scenario.load(CASE)
    assert [s.op for s in case.steps].count("race") == 1
    with mutant_stack("lazy-index-without-lock"):
        caught = replay_scenario(case, "impl")
        serial = replay_scenario(_rolled(_race([0, 0, 0, 0, 0, 0, 0])), "impl")
    assert caught is not None and "two index objects for one file" in caught.witness
    assert serial is None


def test_a_fetch_run_while_an_append_is_between_write_and_publish_stops_at_the_published_end():
    """The append thread (0) stops at ``UnifiedLog.append:written`` — its batch in the segment, the
    log end offset not yet moved — and the fetch (1), bounded by the log end offset, runs to its end
    there.  impl answers as the model does; the mutant that reads the active segment's live size
    (``fetch-reads-the-live-log-end``) returns the unpublished batch under that schedule only."""

    def case(schedule):
        race = sc.Race((_append(T0 + 1), sc.Read("t", 0, 0, 1 << 20, 1, True)), schedule)
        return sc.Scenario((sc.Create("t", 0), _append(), race))

    write_then_fetch = case((0, 1))
    verdict = run(write_then_fetch)
    assert verdict.ok, verdict.violations
    model, impl = verdict.results[2]["model"]["race"][1], verdict.results[2]["impl/sim"]["race"][1]
    assert model == impl and model["bytes"]
    with mutant_stack("fetch-reads-the-live-log-end"):
        caught = replay_scenario(write_then_fetch, "impl")
        fetch_first = replay_scenario(case((1, 1, 1)), "impl")
    assert caught is not None and caught.prop == "conforms" and "race" in caught.witness
    assert fetch_first is None
