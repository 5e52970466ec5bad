"""The regression corpora (conformance/regressions.py, corpora/README.md): every named case gets, on
every target it records, the verdict it expects — it passes on impl and on the model, and fails on
each mutant it names with the expected property and the same one-line witness.  (``found/`` entries
are checked by tests/test_campaign_finds.py.)"""

from __future__ import annotations

import re

import pytest

from conformance import regressions

NAMED = [c for c in regressions.cases() if c.group != regressions.FOUND]


# the crash cases replayed on an older release in the gate: one for the dir steps on the Scala
# LogManager (4.1-4.3), one for the Scala cleaner (3.1-4.0); the rest of their releases nightly
OLDER_RELEASES_IN_THE_GATE = {
    ("crash/delete-dir-loaded-without-recovery.json", "kafka:4.3.1"),
    ("crash/abandoned-cleaning-completed-after-a-crash.json", "kafka:3.9.1"),
}


def _tier(case, target: str) -> list:
    """The log operations' and crash cases on releases other than the pinned one run nightly
    (corpora/README.md, "What the gate leaves to the nightly"), but two crash cases: the gate replays
    them on the pinned release. A historical case runs in the gate on the pinned release and on
    every release it records red (the bug where it shipped); its green releases run nightly (which
    release fixed it is a `klc matrix` fact; the pinned release's green verdict shows the fix)."""
    if case.group in ("log", "crash"):
        nightly = target.startswith("kafka:") and (case.name, target) not in OLDER_RELEASES_IN_THE_GATE
    else:
        nightly = target.startswith("kafka:") and case.verdicts[target] == "pass"
    return [pytest.mark.slow] if nightly else []


# Traced by coverage: the model and impl runs only.  A mutant is a patched copy of an impl module
# compiled under the module's file name, so coverage would credit impl's lines with what the copy
# ran; a Kafka release's run replays the same case on the model the model run covers already, and
# tracing it doubled the releases' time in the gate (issue #35).
RUNS = [
    pytest.param(c, t, id=f"{c.name}@{t}", marks=[] if t in ("model", "impl") else [pytest.mark.no_cover, *_tier(c, t)])
    for c in NAMED
    for t in c.verdicts
]


@pytest.mark.parametrize("case, target", RUNS)
def test_case_gets_its_recorded_verdict(case, target):
    violation = regressions.replay(case, target)
    assert regressions.verdict_of(violation) == case.verdicts[target], str(violation)
    if violation is not None:
        assert without_line_numbers(str(violation)) == without_line_numbers(case.witnesses[target])
        assert "\n" not in str(violation)


def without_line_numbers(witness: str) -> str:
    """A witness naming where an exception was raised (``at segment.py:271``) compared by the file
    alone: the line moves with every edit above it, the behaviour does not."""
    return re.sub(r"(\.py):\d+", r"\1", witness)


# a crash cut from Kafka's own journal runs only where Kafka runs (impl: unsupported)
CRASH_CASES = [c for c in NAMED if c.group == "crash" and not any(s.on_kafka_journal for s in c.scenario.steps)]


# on real files in the gate: the case only the os backend ever failed, and every fourth case for
# breadth; every crash and log case in the nightly (the os backend's machines stay in the gate)
OS_IN_THE_GATE = {"crash/tick-interrupted-by-a-crash-moves-every-clock.json"}


def _os_replay(i: int, case):
    gate = case.name in OS_IN_THE_GATE or i % 4 == 0
    return pytest.param(case, id=case.name, marks=() if gate else pytest.mark.slow)


@pytest.mark.parametrize("case", [_os_replay(i, c) for i, c in enumerate(CRASH_CASES)])
def test_crash_case_passes_on_the_os_backend(case):
    """The crash cases on real files too: the os backend's impl against the model and the simulated
    impl that makes the crash images (tick-interrupted-by-a-crash-moves-every-clock fails only here)."""
    assert regressions.replay(case, "impl", backend="os") is None


LOG_CASES = [c for c in NAMED if c.group == "log"]


@pytest.mark.parametrize("case", [_os_replay(i, c) for i, c in enumerate(LOG_CASES)])
def test_log_case_passes_on_the_os_backend(case):
    """The log cases on real files too: the os backend's impl against the model (each case's
    simulated run is its recorded ``impl`` verdict)."""
    assert regressions.replay(case, "impl", backend="os") is None


def test_every_named_case_passes_on_impl_and_model():
    """Kafka's own bugs (corpora/kafka-findings) are reported as their finding on every Kafka
    target; on impl and the model too where the model follows Kafka, and where it departs on
    purpose they pass there and a mutant that does as Kafka does fails."""
    ours = [c for c in NAMED if c.group != regressions.KAFKA_FINDINGS]
    # a case whose crash is cut from Kafka's own journal is judged only where Kafka runs
    on_kafka = {c.name for c in ours if any(s.on_kafka_journal for s in c.scenario.steps)}
    assert all(c.verdicts["impl"] == c.verdicts["model"] == "unsupported" for c in ours if c.name in on_kafka)
    assert [
        c.name for c in ours if c.name not in on_kafka and (c.verdicts.get("impl") != "pass" or c.verdicts.get("model") != "pass")
    ] == []
    findings = [c for c in NAMED if c.group == regressions.KAFKA_FINDINGS]
    assert len(findings) >= 2
    for case in findings:
        known = f"known: {case.name.split('/')[1]}"
        ours = {case.verdicts["impl"], case.verdicts["model"]}
        # a crash cut from Kafka's own journal: its finding shows where Kafka runs
        judged = {"unsupported"} if any(s.on_kafka_journal for s in case.scenario.steps) else {"pass"}
        assert case.verdicts["kafka"] == known and ours in ({known}, judged), case.name
        if ours == {"pass"}:
            assert any(t.startswith("mutant:") and v.startswith("fail") for t, v in case.verdicts.items()), case.name


def test_every_historical_bug_has_a_case_caught_by_its_mutant():
    """Each historical-bug folder holds at least one case, and some case there fails on a mutant."""
    historical = {
        g for g in regressions.groups() if g not in ("log", "crash", regressions.FOUND, regressions.KAFKA_FINDINGS)
    }
    for group in sorted(historical):
        group_cases = [c for c in NAMED if c.group == group]
        assert group_cases, f"corpora/{group} has no scenario file"
        assert any(v.startswith("fail") for c in group_cases for v in c.verdicts.values()), group


def test_a_case_without_verdicts_is_refused(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "c.json").write_text('{"format": "klc-scenario", "version": 1, "steps": []}')
    with pytest.raises(regressions.sc.ScenarioError, match=r"c\.json.*verdicts"):
        regressions.cases(str(tmp_path))


def test_a_witness_quotes_kafkas_load_error_only():
    """When two targets differ in whether a partition's load failed, the witness quotes the Kafka
    target's message (what the operator saw: KAFKA-3955's names the index file); the model's and
    impl's own wording is left out, so their recorded witnesses stay as they are."""
    from types import SimpleNamespace as Target

    from conformance.properties.conforms import _kafkas_load_error

    error = "the broker's startup failed: InvalidOffsetException: … to d0/t-0/00000000000000000000.index."
    model, kafka, impl = Target(name="model"), Target(name="kafka:1.0.2"), Target(name="impl/sim")
    loaded = lambda e: {"loaded": [{"dir": "d0", "partition": "t-0", "error": e}]}  # noqa: E731
    obs = Target(results={"model": loaded(None), "kafka:1.0.2": loaded(error), "impl/sim": loaded("impl's words")})
    where = "/loaded[0]/error: False != True"
    assert _kafkas_load_error(obs, (model, kafka), where) == f" (kafka:1.0.2: {error})"
    assert _kafkas_load_error(obs, (model, impl), where) == ""
    assert _kafkas_load_error(obs, (model, kafka), "/loaded[0]/recovered: [0] != [0, 0]") == ""
