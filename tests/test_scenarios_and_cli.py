"""Scenario files, the runner's verdicts, ``klc replay`` and ``klc check``; the corpora replay clean
on impl with both backends."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from conformance import regressions
from conformance import faults
from conformance import scenario as sc
from conformance.cli import main
from conformance.crash_images import Fault
from conformance.log_checks import CORPUS, CRASH_CORPUS, corpus_scenarios
from conformance.regressions import CORPORA
from conformance.runner import run

T0 = 1_700_000_000_000


def _scenario(*steps, **kw) -> sc.Scenario:
    return sc.Scenario(tuple(steps), **kw)


def _append(n=2, ts=T0):
    return sc.Append("t", 0, (sc.BatchSpec(tuple(sc.Rec(ts + i, "k", "v") for i in range(n))),), True, 0)


def test_scenario_json_round_trip():
    s = _scenario(sc.Create("t", 0), _append(), sc.Read("t", 0, 1, 10, None, False), sc.Tick(5), sc.Shutdown(), sc.Open(),
                  config={"segment.bytes": 500}, data_dirs=2, note="n")  # fmt: skip
    again = sc.Scenario.from_json(json.loads(s.dumps()))
    assert again == s


@pytest.mark.parametrize(
    "doc, message",
    [
        ([], "a scenario is a JSON object"),
        ({"format": "x"}, "expected \"format\""),
        ({"format": "klc-scenario", "version": 1, "steps": {}}, "'steps' must be a list"),
        ({"format": "klc-scenario", "version": 1, "steps": [{"op": "fly"}]}, "steps[0]: unknown op 'fly'"),
        ({"format": "klc-scenario", "version": 1, "steps": [{"op": "read", "offset": "1"}]}, "'offset' must be an integer"),
        ({"format": "klc-scenario", "version": 1, "steps": [{"op": "append"}]}, "'batches' must be a list"),
        ({"format": "klc-scenario", "version": 1, "steps": [{"op": "append", "batches": [{"records": [{"timestamp": -5}]}]}]},
         "'timestamp' = -5 is outside"),
        ({"format": "klc-scenario", "version": 1, "steps": [{"op": "append", "batches": [{"records": [{"timestamp": 1}], "codec": "brotli"}]}]},
         "codec 'brotli'"),
        ({"format": "klc-scenario", "version": 1, "steps": [{"op": "tick", "ms": 1, "x": 2}]}, "unknown field(s) x"),
        ({"format": "klc-scenario", "version": 1, "data_dirs": 0, "steps": []}, "'data_dirs' = 0"),
        ({"format": "klc-scenario", "version": 1, "steps": [{"op": "rename_dir", "kind": "delete"}]},
         "'kind' must be one of future, stray"),
        ({"format": "klc-scenario", "version": 1, "steps": [{"op": "rename_dir", "to_dir": 99}]}, "'to_dir' = 99 is outside"),
    ],
)  # fmt: skip
def test_bad_scenarios_are_named_errors(doc, message):
    with pytest.raises(sc.ScenarioError) as info:
        sc.Scenario.from_json(doc, "case.json")
    assert message in str(info.value) and str(info.value).startswith("case.json")


def test_refusals_are_results_not_failures():
    s = _scenario(sc.Create("t", 0), _append(), sc.Read("t", 0, 99, 10), sc.Truncate("t", 0, -1), sc.DeleteRecords("t", 0, 9),
                  sc.Flush("t", 0, 7), sc.Roll("orders", 3), sc.Shutdown(), sc.Append("t", 0, _append().batches), sc.Open())  # fmt: skip
    verdict = run(s)
    assert verdict.ok, verdict.violations
    errors = [r["model"].get("error") for r in verdict.results]
    assert errors[2:9] == [
        "OffsetOutOfRangeException", "IllegalArgumentException", "OffsetOutOfRangeException", "OffsetOutOfRangeException",
        "UnknownTopicOrPartitionException", None, "NotRunning",
    ]  # fmt: skip


def test_a_single_target_run_checks_what_it_can():
    s = _scenario(sc.Create("t", 0), _append(), sc.Shutdown(), sc.Open())
    for target in ("model", "impl"):
        verdict = run(s, (target,))
        assert verdict.ok and "conforms" not in verdict.checked and verdict.checked["clean-restart"] >= 2


def test_klc_replay(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(_scenario(sc.Create("t", 0), _append(), sc.Shutdown(), sc.Open()).dumps())
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "klc-scenario", "version": 1, "steps": [{"op": "nope"}]}')
    runner = CliRunner()
    ok = runner.invoke(main, ["replay", str(good), "--backend", "os"])
    assert ok.exit_code == 0 and ok.output.startswith("PASS") and "model vs impl/os" in ok.output
    as_json = runner.invoke(main, ["replay", "--json", "--target", "impl", str(good)])
    assert as_json.exit_code == 0 and json.loads(as_json.output)["ok"] is True
    broken = runner.invoke(main, ["replay", str(good), str(bad), str(tmp_path / "missing.json")])
    assert broken.exit_code == 2 and "unknown op 'nope'" in broken.output and "missing.json" in broken.output
    (tmp_path / "junk.json").write_bytes(b"\xff\xfe{")
    junk = runner.invoke(main, ["replay", str(tmp_path / "junk.json")])
    assert junk.exit_code == 2 and "junk.json" in junk.output


def _known_on_impl(case) -> bool:
    """Kafka's bugs the model follows are reached on model and impl too; a departure passes there; a
    step impl cannot run (a crash cut from Kafka's own journal) is listed as recorded, not passed."""
    impl = case.verdicts.get("impl", "")
    return case.status == "open" or impl.startswith("known") or impl == "unsupported"


def _check_corpora(cases) -> None:
    result = CliRunner().invoke(main, ["check", "--budget-seconds", "0", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["ok"] and summary["corpus_cases"] == 2 * len(cases)
    open_bugs = [c for c in cases if _known_on_impl(c)]
    assert open_bugs and len(summary["known"]) == 2 * len(open_bugs)
    assert {"conforms", "index-agrees", "clean-restart", "durable"} <= set(summary["checked"])


# untraced (tox.ini): the corpora it replays are traced in tests/test_regressions.py and above
@pytest.mark.no_cover
@pytest.mark.slow  # the gate: the one below (every case also replays on both backends in test_regressions)
def test_klc_check_runs_the_corpora_and_reports_per_property():
    cases = regressions.cases()
    assert len(cases) > len(corpus_scenarios() + corpus_scenarios(CRASH_CORPUS))
    _check_corpora(cases)


@pytest.mark.no_cover
def test_klc_check_runs_every_group_and_reports_per_property(monkeypatch):
    """The same command on the first case of every corpus group and three known ones."""
    everything = regressions.cases()
    groups = {c.group for c in everything}
    cases = [next(c for c in everything if c.group == g) for g in sorted(groups)]
    cases += [c for c in everything if _known_on_impl(c) and c not in cases][:3]
    monkeypatch.setattr(regressions, "cases", lambda *a, **k: cases)
    _check_corpora(cases)


def test_corpus_folders_are_documented():
    with open(CORPUS.rsplit("/", 1)[0] + "/README.md", encoding="utf-8") as f:
        text = f.read()
    cases = corpus_scenarios() + corpus_scenarios(CRASH_CORPUS)
    assert [path for path, _ in cases if path.rsplit("/", 1)[-1] not in text] == []


@pytest.mark.parametrize(
    "config, reason",
    [
        ({"segment.bytes": 13}, "at least 14"),
        ({"segment.bytes": "1"}, "expected an integer"),
        ({"preallocate": 1}, "true or false"),
        ({"cleanup.policy": "shred"}, "delete, compact"),
        ({"no.such.key": 1}, "unknown configuration"),
        ({"retention.ms": 2**63}, "range of a long"),
        ({"segment.bytes": 2**31}, "Not a number of type INT"),  # LogConfig's INT settings
        ({"max.message.bytes": -(2**31) - 1}, "Not a number of type INT"),
        ({"num.recovery.threads.per.data.dir": 0}, "at least 1"),
        ({"num.recovery.threads.per.data.dir": True}, "expected an integer"),
    ],
)
def test_configs_are_validated_alike(config, reason):
    from impl.config import ConfigError as ImplConfigError
    from impl.config import LogConfig
    from model.config import Config, ConfigError

    with pytest.raises(ConfigError, match=reason):
        Config.of(config)
    with pytest.raises(ImplConfigError, match=reason):
        LogConfig.from_dict(config)
    with pytest.raises(sc.ScenarioError, match=reason):
        sc.Scenario.from_json({"format": "klc-scenario", "version": 1, "config": config, "steps": []}, "c.json")


def test_valid_configs_reach_both_sides():
    from impl.config import LogConfig
    from model.config import Config

    values = {
        "segment.bytes": 100,
        "preallocate": True,
        "cleanup.policy": "compact,delete",
        "segment.jitter.ms": 50,
        "segment.ms": 20,
        "num.recovery.threads.per.data.dir": 4,
    }
    m, i = Config.of(values), LogConfig.from_dict(values)
    assert m.num_recovery_threads_per_data_dir == i.num_recovery_threads_per_data_dir == 4
    assert (
        (m.segment_bytes, m.preallocate, m.jitter_bound())
        == (i.segment_bytes, i.preallocate, i.jitter_bound())
        == (100, True, 20)
    )
    assert i.delete_enabled and "delete" in m.cleanup_policy


def test_a_refused_shutdown_does_not_make_the_next_open_a_clean_restart():
    """A shutdown while the broker is down (after a crash) is refused and shuts nothing down: the
    next open recovers, and clean-restart must not call that a recovery after a graceful shutdown
    (it did, found while shrinking a crash-machine case)."""
    s = sc.Scenario(
        (sc.Create("t", 0), faults.Crash(Fault("process")), sc.Shutdown(), sc.Open()), clock_start_ms=1_700_000_000_000
    )
    verdict = run(s)
    assert verdict.results[2]["model"] == {"error": "NotRunning"}
    assert verdict.results[3]["model"]["loaded"][0]["recovered"]  # the crash made the load recover
    assert verdict.violations == []


def test_an_epoch_checkpoint_ahead_of_the_checkpointed_log_start_is_named():
    """idempotent-recovery leaves these epoch caches out (conformance/runner.py): only a first entry
    above the partition's checkpointed log start (0 when not checkpointed) counts."""
    from conformance.properties.crash_recovery import epochs_ahead_of_log_start

    image = {
        "d0/t-0/leader-epoch-checkpoint": b"0\n1\n1 2\n",
        "d0/t-1/leader-epoch-checkpoint": b"0\n1\n1 2\n",
        "d0/u-0/leader-epoch-checkpoint": b"0\n2\n0 0\n1 5\n",
        "d0/v-0/leader-epoch-checkpoint": b"junk",
        "d0/log-start-offset-checkpoint": b"0\n1\nt 1 2\n",
    }
    assert epochs_ahead_of_log_start(image) == {"d0/t-0"}


def test_a_cut_keeps_the_first_offset_bytes_and_both_targets_read_what_is_left():
    """``corrupt`` kind ``cut``: a lost tail.  17 bytes past the last whole batch is a tail §1.10
    never examines; 61 bytes is a torn batch; both are read alike by model and impl."""
    from conformance.crash_images import corrupt

    assert corrupt({"a": b"0123456789"}, "a", 4, 1, "cut") == {"a": b"0123"}
    first = len(sc.append_bytes(_append()))
    for tail in (17, 61):
        steps = (sc.Create("t", 0), _append(), _append(2, T0 + 5), sc.Shutdown())
        steps += (faults.Corrupt("d0/t-0/00000000000000000000.log", first + tail, 1, "cut"), sc.Open())
        verdict = run(_scenario(*steps, sc.Read("t", 0, 0, 1 << 20, None, True), sc.Append("t", 0, _append().batches)))
        assert verdict.ok, (tail, verdict.violations)
        assert verdict.results[-1]["model"] == {"first": 2, "last": 3}  # the cut batch is gone from the log end


def test_index_agrees_forgives_only_what_kafka_itself_keeps():
    """index_problem (conformance/runner.py): after a truncation that emptied the time index before
    the max timestamp was loaded, Kafka's first entry may lie below a batch before it (§4.7 step 7,
    corpora/crash/time-entry-below-a-batch-a-truncation-forgot.json); every later entry must still
    lie above the batches from the first entry's on.  An entry below the segment's base (a legacy
    index's overflowed relative offset, kept through truncations) is left out."""
    from conformance.properties.index_agrees import index_problem
    from model.records import build_batch_v2

    log = b"".join(build_batch_v2(o, [(ts, b"k", b"v")]) for o, ts in enumerate([900, 100, 500, 200, 700]))
    assert index_problem([], [(100, 1)], log, True) is None  # batch 0 (900) forgotten: Kafka's index
    assert index_problem([], [(100, 1), (700, 4)], log, True) is None
    assert "an earlier batch already reached 500" in index_problem([], [(100, 1), (200, 3)], log, True)
    assert "past the end of the log" in index_problem([], [(100, 5)], log, True)
    # an entry below the segment's base (a legacy index's overflowed relative offset) is not checked
    assert index_problem([], [(100, -7)], b"", False, base=2) is None
    assert "past the end of the log" in index_problem([], [(100, -7)], b"", False)
    # past the last batch but below the segment's end offset: what a truncation into a cleaned batch
    # leaves (an entry naming the largest offset the cleaner kept; corpora/found/index-agrees-0ed501a4f1)
    last = len(log) - len(build_batch_v2(4, [(700, b"k", b"v")]))
    assert index_problem([(6, last)], [(800, 6)], log, True, end=7) is None
    assert "names an offset its batch does not hold" in index_problem([(6, last)], [], log, True, end=6)
    assert "names an offset its batch does not hold" in index_problem([(6, last)], [], log, True)
    assert "past the end of the log" in index_problem([], [(800, 7)], log, True, end=7)
    # ... whose position is the cut itself, now the log end (corpora/found/index-agrees-1673607469)
    assert index_problem([(6, len(log))], [], log, True, end=7) is None
    assert "does not point at a batch start" in index_problem([(6, len(log))], [], log, True)
    assert "does not point at a batch start" in index_problem([(4, len(log))], [], log, True, end=7)
    assert "past the end of the log" in index_problem([], [(800, 5)], log, True)


@pytest.mark.parametrize(
    "batch, reason",
    [
        ({"producer_id": 1, "producer_epoch": 0}, "together"),
        ({"producer_id": -1, "producer_epoch": 0, "base_sequence": 0}, "producer_id"),
        ({"producer_id": 1, "producer_epoch": 2**15, "base_sequence": 0}, "producer_epoch"),
        ({"producer_id": 1, "producer_epoch": 0, "base_sequence": 2**31}, "base_sequence"),
        ({"producer_id": 1, "producer_epoch": 0, "base_sequence": "0"}, "base_sequence"),
    ],
)
def test_an_idempotent_batch_gives_its_three_fields_in_range(batch, reason):
    step = {"op": "append", "batches": [{"records": [{"timestamp": 1}], **batch}]}
    with pytest.raises(sc.ScenarioError, match=reason):
        sc.Scenario.from_json({"format": "klc-scenario", "version": 1, "steps": [step]}, "c.json")


def test_idempotent_batches_survive_the_round_trip():
    path = os.path.join(CORPORA, "log", "idempotent-producers-duplicates-sequences-and-epochs.json")
    scenario = sc.Scenario.load(path)
    assert scenario.steps[1].batches[0].producer == (7, 0, 0)
    assert sc.Scenario.from_json(json.loads(scenario.dumps()), "again") == scenario


def test_log_segments_range_follows_kafkas_rule():
    """``LogSegments.values(from, to)`` as §4.13 states it, a reversed range refused."""
    from conformance.log_checks import check_segments_range

    check_segments_range()


def test_rename_dir_refusals_and_a_promotion_in_one_dir_is_unsupported():
    """rename_dir (docs/scenario-format.md, "Future and stray directories") changes the disk only
    while the broker is down and refuses a partition or data dir that is not there, alike on every
    target; a future copy in its current log's own data dir loads, but its promotion, whose rename
    over the current dir Kafka cannot make, is unsupported — never judged."""
    rename = faults.RenameDir
    s = _scenario(
        sc.Create("t", 0), _append(), rename("t", 0, "stray"), sc.Shutdown(), rename("t", 1, "stray"),
        rename("t", 0, "future", 0, 3), rename("t", 0, "future", 0, None, True), sc.Open(),
        sc.ReplaceCurrentWithFuture("t", 0),
    )  # fmt: skip
    verdict = run(s)
    assert not verdict.violations, verdict.violations
    answers = [r["model"] for r in verdict.results]
    assert answers[2:7] == [
        {"error": "Running"}, {"shutdown": {"d0": True}}, {"error": "NoSuchPartitionDir"}, {"error": "NoSuchDataDir"},
        {"renamed": "d0/t-0.cdabbd35e47c6abfcc3854f8ed89fc63-future"},
    ]  # fmt: skip
    assert [x.get("kind", "") for x in answers[7]["loaded"]] == ["", "future"]
    assert verdict.unsupported and "current log's data dir" in verdict.unsupported
