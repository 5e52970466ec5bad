"""``klc bisect`` (conformance/bisect.py): the search on judges whose answers are known, the list of
releases from Maven's metadata and its cache, bad ends; the nightly dates a bug on real releases."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conformance import bisect as bs
from conformance.cli import main
from conformance.targets.kafka_jvm import KafkaTargetError

RELEASES = [f"2.{minor}.{patch}" for minor in range(0, 9) for patch in range(3)]


def judge_changing_at(first_bad: str, third: dict | None = None, broken: tuple = ()):
    asked = []

    def judge(release):
        asked.append(release)
        if release in broken:
            raise KafkaTargetError(f"kafka target: the adapter of {release} did not build")
        if third and release in third:
            return third[release], "w"
        fixed = bs.version_key(release) >= bs.version_key(first_bad)
        return ("pass", None) if fixed else ("fail: durable", "durable violated at step 3: lost")

    return judge, asked


@pytest.mark.parametrize("first_bad", ["2.0.1", "2.4.0", "2.4.1", "2.8.2"])
def test_the_first_release_with_the_other_verdict_is_found_in_log_n_replays(first_bad):
    judge, asked = judge_changing_at(first_bad)
    result = bs.bisect("case", RELEASES, judge)
    i = RELEASES.index(first_bad)
    assert (result.last_same, result.first_changed) == (RELEASES[i - 1], first_bad)
    assert len(asked) <= 2 + 5 and len(asked) == len(set(asked))  # 27 releases: the ends and log2(25)
    assert result.verdicts[first_bad] == "pass" and result.witnesses[RELEASES[i - 1]].startswith("durable")


def test_the_same_verdict_at_both_ends_finds_nothing():
    judge, asked = judge_changing_at("9.9.9")
    result = bs.bisect("case", RELEASES, judge)
    assert result.first_changed is None and asked == [RELEASES[0], RELEASES[-1]]
    assert "fail: durable on every release" in bs.lines(result)[-1]


def test_a_release_that_cannot_run_is_skipped_and_named():
    judge, _ = judge_changing_at("2.4.1", broken=("2.4.0", "2.4.1", "2.3.2"))
    result = bs.bisect("case", RELEASES, judge)
    # the change lies after 2.3.1 and no later than 2.4.2; the skipped ones between are said
    assert (result.last_same, result.first_changed) == ("2.3.1", "2.4.2")
    assert set(result.skipped) >= {"2.3.2", "2.4.0", "2.4.1"}
    assert "skipped: 2.3.2, 2.4.0, 2.4.1" in bs.lines(result)[-1]


def test_an_end_that_cannot_run_is_an_error():
    judge, _ = judge_changing_at("2.4.1", broken=(RELEASES[0],))
    with pytest.raises(bs.BisectError, match="the ends could not be judged"):
        bs.bisect("case", RELEASES, judge)


def test_a_third_verdict_between_the_ends_is_said():
    judge, _ = judge_changing_at("2.6.0", third={"2.5.0": "fail: conforms", "2.4.1": "fail: conforms"})
    result = bs.bisect("case", RELEASES, judge)
    assert result.third and "more than one change" in bs.lines(result)[-1]


def test_releases_come_from_maven_metadata_and_are_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(bs, "CACHE", tmp_path / "releases.json")
    pages = {
        bs.METADATA[0]: b"<versions><version>2.4.0</version><version>4.4.0</version><version>4.0.0-rc1</version></versions>",
        bs.METADATA[1]: b"<version>1.1.1</version><version>2.4.0</version><version>0.10.2.2</version>",
    }
    assert bs.published(pages.__getitem__) == ["0.10.2.2", "1.1.1", "2.4.0", "4.4.0"]
    # four-part releases are listed; the adapters run 0.11 and later
    assert not bs.has_adapter("0.10.2.2") and bs.has_adapter("0.11.0.3") and bs.has_adapter("1.0.2")

    def offline(url):
        raise OSError("network unreachable")

    assert bs.published(offline) == ["0.10.2.2", "1.1.1", "2.4.0", "4.4.0"]  # from the cache
    (tmp_path / "releases.json").unlink()
    with pytest.raises(bs.BisectError, match="could not be reached .* no list of releases is cached"):
        bs.published(offline)


@pytest.mark.parametrize(
    "first, last, message",
    [
        ("2.8", "4.4.0", "not a Kafka release"),
        ("2.8.9", "4.4.0", "not a release on Maven Central"),
        ("4.4.0", "2.8.2", "must be an older release"),
        ("0.10.2.2", "2.8.2", "no adapter runs it"),
    ],
)
def test_bad_ends_are_refused(first, last, message):
    releases = ["0.10.2.2", "1.0.2", "1.1.1", "2.8.2", "3.0.0", "4.4.0"]
    with pytest.raises(bs.BisectError, match=message):
        bs.between(releases, first, last)


def test_the_command_refuses_bad_arguments_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(bs, "published", lambda: ["2.7.2", "2.8.2", "4.4.0"])
    result = CliRunner().invoke(main, ["bisect", "corpora/KAFKA-10471/marker-deleted-before-loading.json", "--from", "2.8"])
    assert result.exit_code == 2 and result.output.strip().count("\n") == 0 and "not a Kafka release" in result.output
    result = CliRunner().invoke(main, ["bisect", str(tmp_path / "x.json")])
    assert result.exit_code == 2 and "not a case of the corpus" in result.output


@pytest.mark.slow
@pytest.mark.no_cover
def test_kafka_10471_is_dated_on_the_releases():
    """The marker kept over a crash inside Kafka's own load: red on 2.7.2, green on 2.8.2; between
    them, the fix."""
    case = "corpora/KAFKA-10471/marker-kept-over-a-crash-inside-kafkas-own-load.json"
    result = CliRunner().invoke(main, ["bisect", case, "--from", "2.7.2", "--to", "2.8.2", "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output.splitlines()[-1])
    assert answer["verdicts"]["2.7.2"].startswith("fail") and answer["verdicts"]["2.8.2"] == "pass"
    assert answer["first_changed"] in ("2.8.0", "2.8.1", "2.8.2")


def test_a_case_is_named_by_its_file_or_by_its_folder():
    by_folder = bs.case_named("corpora/kafka-findings/full-index-mid-append")
    assert by_folder.name == "kafka-findings/full-index-mid-append"
    assert bs.case_named("corpora/kafka-findings/full-index-mid-append/scenario.json") == by_folder
