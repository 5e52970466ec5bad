"""The Kafka findings as JUnit tests on a release's published jars (corpora/kafka-findings/README.md,
``mvn -f corpora/kafka-findings/pom.xml test -Dkafka.version=V``): each finding's test fails on the
releases that have the bug and each control — the same steps without the trigger — passes.

One Maven run in the gate (the pinned release), Surefire's XML report read for each test's outcome;
the other releases the tests were shown on run in the nightly tier."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.targets.kafka_jvm import PINNED

PROJECT = Path(__file__).resolve().parent.parent / "corpora" / "kafka-findings"
SOURCES = PROJECT / "src" / "test" / "java" / "klc" / "findings"
MAVEN_TIMEOUT_S = 900

FAIL, PASS = "failure", "pass"

# Each JUnit class, its finding's folder, and each test's outcome on a release with the bug: a
# finding's test fails by its assertion (never an error: an exception would hide which check broke);
# a control, tagged "control" in the source, passes.
EXPECTED = {
    "FlushBelowTheRecoveryPointTest": (
        "flush-below-the-recovery-point-skips-the-directory",
        {
            "testFlushAboveARaisedRecoveryPointFsyncsTheDirectoryOfANewSegmentFile": FAIL,
            "testFlushFromTheSegmentBaseFsyncsTheDirectory": PASS,
        },
    ),
    "FullIndexMidAppendTest": (
        "full-index-mid-append",
        {
            "testFollowerFetchIntoATimeIndexWithFewerFreeSlotsThanBatches": FAIL,
            "testRefusedFollowerFetchLeavesNothingBehind": FAIL,
            "testRefusedFollowerFetchIsNotTheLogAfterARestart": FAIL,
            "testRetriedFollowerFetchLeavesNoSecondCopyBehind": FAIL,
            "testFollowerFetchIntoATimeIndexWithFewerFreeSlotsThanBatchesAtBrokerScale": FAIL,
            "testFollowerFetchWithAsManyFreeSlotsAsBatchesIsAppended": PASS,
            "testFollowerFetchIntoAFullTimeIndexRollsFirst": PASS,
        },
    ),
    "Kafka15572Test": (
        "../../docs/kafka-15572.md",  # a known Kafka bug no scenario can express (not one this suite found)
        {
            "testRollFlushRacingAPromotionFsyncsTheDirectoryHoldingTheSegment": FAIL,
            "testRollFlushWithoutARenameFsyncsTheDirectory": PASS,
            "testRollFlushAfterAPromotionFsyncsTheRenamedDirectory": PASS,
        },
    ),
    "LookupByALostMaxTimestampTest": (
        "lookup-by-a-lost-max-timestamp",
        {
            "testReloadedSegmentKeepsTheMaxTimestampOfWhatATruncationKeeps": FAIL,
            "testOffsetForTimestampAfterARestartAndATruncationBelowTheLastTimeIndexEntry": FAIL,
            "testReloadedSegmentWhoseMaxWasLoadedBeforeTheTruncation": PASS,
            "testOffsetForTimestampWhenTheMaxWasLoadedBeforeTheTruncation": PASS,
        },
    ),
    "MsyncErrorEscapesTest": (
        "msync-error-escapes-as-an-unchecked-exception",
        {
            "testIndexMsyncErrorTakesTheLogDirOffline": FAIL,
            "testSegmentFsyncErrorTakesTheLogDirOffline": PASS,
        },
    ),
    "RebuildReadsATornSegmentTest": (
        "rebuild-reads-a-torn-segment",
        {
            "testUncleanLoadWithATornSegmentBelowASegmentWithoutIndex": FAIL,
            "testUncleanLoadWithATornSegmentBelowASegmentWithItsIndex": PASS,
        },
    ),
    "TruncateFullyInterruptedTest": (
        "truncate-fully-interrupted-keeps-the-old-active-segment",
        {
            "testLoadAfterAnInterruptedTruncateFullyAndStartAt": FAIL,
            "testLoadAfterACompletedTruncateFullyAndStartAt": PASS,
        },
    ),
    "TruncateInterruptedLeavesAHoleTest": (
        "truncate-interrupted-leaves-a-hole",
        {
            "testLoadAfterAnInterruptedTruncateTo": FAIL,
            "testLoadAfterACompletedTruncateTo": PASS,
        },
    ),
    "TornTransactionIndexTest": (
        "torn-transaction-index-hides-an-aborted-transaction",
        {
            "testReadCommittedAfterATxnIndexCutInsideARecord": FAIL,
            "testReadCommittedWithAnIntactTxnIndex": PASS,
        },
    ),
}

# Run only with -Dfindings.broker.scale=true (nightly): the same trigger at a broker's sizes, some
# 360 MB written; skipped otherwise.
BROKER_SCALE = {("FullIndexMidAppendTest", "testFollowerFetchIntoATimeIndexWithFewerFreeSlotsThanBatchesAtBrokerScale")}

# The releases the findings were shown on: the pinned one in the gate, the others nightly, each with
# the Maven properties it needs (4.1 and 4.2 keep the record classes in org.apache.kafka.common.record:
# the pom's before-4.3 profile compiles a copy of the sources with that package).
OTHER_RELEASES = {"4.3.1": (), "4.2.0": ("-Drecord.classes=before-4.3",), "4.1.1": ("-Drecord.classes=before-4.3",)}


class MavenError(Exception):
    """The Maven run did not produce a report: a harness error, never a finding's verdict."""


def _tests_in_source(cls: str) -> dict[str, str]:
    """The class's @Test methods, each a control (tagged "control") or a finding's test."""
    text = (SOURCES / f"{cls}.java").read_text(encoding="utf-8")
    found = {}
    for m in re.finditer(r"@Test\s+((?:@\w+(?:\([^)]*\))?\s+)*)void\s+(\w+)\s*\(", text):
        found[m.group(2)] = PASS if '@Tag("control")' in m.group(1) else FAIL
    return found


def _outcomes(reports: Path) -> dict[tuple[str, str], str]:
    out = {}
    for xml in sorted(reports.glob("TEST-*.xml")):
        for case in ET.parse(xml).getroot().iter("testcase"):
            kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
            out[(case.get("classname").rsplit(".", 1)[-1], case.get("name"))] = kinds[0] if kinds else PASS
    return out


def run_findings(version: str, *properties: str) -> dict[tuple[str, str], str]:
    """``mvn test -Dkafka.version=VERSION`` on the findings project: each test's outcome.  Offline
    first (a warm local repository needs no network); Maven's exit status is not the verdict, as the
    findings' tests fail by design — a missing report is."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            raise MavenError(f"{tool!r} is not on PATH (the findings' tests need Java 17+ and Maven)")
    reports = PROJECT / "target" / version / "surefire-reports"
    tail: list[str] = []
    for offline in (True, False):
        shutil.rmtree(reports, ignore_errors=True)
        cmd = ["mvn", "-B", *(["-o"] if offline else []), "-f", str(PROJECT / "pom.xml"), "test"]
        cmd += [f"-Dkafka.version={version}", *properties]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise MavenError(f"the findings' Maven run did not finish in {MAVEN_TIMEOUT_S} s") from None
        if outcomes := _outcomes(reports):
            return outcomes
        tail = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line][:5]
    raise MavenError(f"no Surefire report from {' '.join(cmd)}: {' | '.join(tail)}")


def _expected(broker_scale: bool = False) -> dict[tuple[str, str], str]:
    out = {(cls, name): want for cls, (_, tests) in EXPECTED.items() for name, want in tests.items()}
    return out if broker_scale else {**out, **{key: "skipped" for key in BROKER_SCALE}}


def _check(outcomes: dict[tuple[str, str], str], broker_scale: bool = False) -> None:
    expected = _expected(broker_scale)
    assert set(outcomes) == set(expected), "tests reported and tests expected differ"
    wrong = {key: (outcomes[key], want) for key, want in expected.items() if outcomes[key] != want}
    assert not wrong, f"(got, expected) per test: {wrong}"


@pytest.mark.parametrize("cls", sorted(EXPECTED))
def test_each_findings_test_is_a_finding_or_a_control_as_its_source_tags_it(cls):
    folder, tests = EXPECTED[cls]
    assert _tests_in_source(cls) == tests
    assert FAIL in tests.values() and PASS in tests.values(), "a finding needs its test and its control"
    readme = (PROJECT / folder if folder.endswith(".md") else PROJECT / folder / "README.md").read_text(encoding="utf-8")
    assert cls in readme and "mvn -f corpora/kafka-findings/pom.xml test -Dkafka.version=" in readme


def test_the_findings_project_pins_the_kafka_targets_release():
    pom = (PROJECT / "pom.xml").read_text(encoding="utf-8")
    assert re.search(r"<kafka.version>([^<]+)</kafka.version>", pom).group(1) == PINNED


def test_a_finding_that_passed_or_a_missing_test_is_reported():
    """The check itself can fail: a fixed release (a finding's test passing), an error in place of
    an assertion, a test that did not run."""
    good = _expected()
    _check(good)
    with pytest.raises(AssertionError):  # the broker-scale test expected to run and fail
        _check(good, broker_scale=True)
    fixed = {**good, ("RebuildReadsATornSegmentTest", "testUncleanLoadWithATornSegmentBelowASegmentWithoutIndex"): PASS}
    errored = {**good, ("TornTransactionIndexTest", "testReadCommittedWithAnIntactTxnIndex"): "error"}
    missing = {k: v for k, v in good.items() if k[0] != "TruncateFullyInterruptedTest"}
    for outcomes in (fixed, errored, missing):
        with pytest.raises(AssertionError):
            _check(outcomes)


def test_a_report_is_read_per_test(tmp_path):
    (tmp_path / "TEST-klc.findings.X.xml").write_text(
        '<testsuite><testcase classname="klc.findings.X" name="a"/>'
        '<testcase classname="klc.findings.X" name="b"><failure message="m"/></testcase>'
        '<testcase classname="klc.findings.X" name="c"><error message="e"/></testcase></testsuite>',
        encoding="utf-8",
    )
    assert _outcomes(tmp_path) == {("X", "a"): PASS, ("X", "b"): FAIL, ("X", "c"): "error"}


@pytest.mark.no_cover  # the JVM's time, not Python's lines
def test_the_findings_fail_and_their_controls_pass_on_the_pinned_release():
    _check(run_findings(PINNED))


@pytest.mark.slow
@pytest.mark.no_cover
def test_full_index_mid_append_at_broker_scale_on_the_pinned_release():
    """A 1 MiB time index in a 1 GiB segment (FullIndexMidAppendTest's broker-scale test)."""
    _check(run_findings(PINNED, "-Dfindings.broker.scale=true"), broker_scale=True)


@pytest.mark.slow
@pytest.mark.no_cover
@pytest.mark.parametrize("version", sorted(OTHER_RELEASES))
def test_the_findings_fail_and_their_controls_pass_on_earlier_releases(version):
    _check(run_findings(version, *OTHER_RELEASES[version]))
