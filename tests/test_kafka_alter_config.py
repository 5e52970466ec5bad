"""The JVM side of ``alter_config`` on the kafka target (kafka-target/src/shared/.../Generation.java):
the wire form ``{"op": "alter_config", "topic": t, "config": {...}}`` makes the scenario header's
config overlaid with those keys the config of every log of the topic, as a broker applies an
AlterConfigs (``updateConfig`` on each log), on every adapter generation."""

from __future__ import annotations

import pytest

from conformance import scenario as sc
from conformance.targets.kafka import KafkaTarget
from conformance.targets.kafka_jvm import KafkaTargetError

pytestmark = pytest.mark.no_cover  # the JVM's time, not Python's lines

BIG = 1024 * 1024  # the header's segment.bytes: three small batches fit in one segment
SMALL = 300  # one batch of a 200-byte value (271 bytes) fills a segment


def _steps(*steps) -> list:
    return sc.Scenario.from_json({"format": "klc-scenario", "version": 1, "config": {}, "steps": list(steps)}).steps


def _append(value: str) -> dict:
    return {"op": "append", "batches": [{"records": [{"timestamp": 1700000000000, "key": "k", "value": value * 200}]}]}


def _target(release: str | None) -> KafkaTarget:
    scenario = sc.Scenario.from_json(
        {"format": "klc-scenario", "version": 1, "config": {"segment.bytes": BIG}, "steps": [{"op": "open"}]}
    )
    target = KafkaTarget(scenario, release=release)
    for step in _steps({"op": "open"}, {"op": "create"}, {"op": "create", "topic": "u"}, _append("a")):
        target.apply(step)
    return target


def _alter(target: KafkaTarget, topic: str, config) -> dict:
    return target.jvm.request({"op": "alter_config", "topic": topic, "config": config})


def _bases(target: KafkaTarget, key: str) -> list[int]:
    return [s[0] for s in target.state()["partitions"][key]["segments"]]


def _segments_after(release: str | None, alter: dict | None, roll_first: bool = False) -> list[int]:
    target = _target(release)
    try:
        if alter is not None:
            assert _alter(target, "t", alter) == {"ok": {}}
        if roll_first:
            target.apply(_steps({"op": "roll"})[0])
        for value in "bc":
            target.apply(_steps(_append(value))[0])
        return _bases(target, "d0/t-0")
    finally:
        target.close()


def test_an_altered_segment_bytes_rolls_the_topics_log_on_the_pinned_release():
    assert _segments_after(None, None) == [0]
    assert _segments_after(None, {"segment.bytes": SMALL}) == [0, 1, 2]


def test_alter_config_leaves_the_other_topics_logs_and_refuses_what_the_header_would():
    target = _target(None)
    try:
        assert _alter(target, "u", {"segment.bytes": SMALL}) == {"ok": {}}
        for value in "bc":
            target.apply(_steps(_append(value))[0])
        assert _bases(target, "d0/t-0") == [0]  # topic t keeps the header's config
        unknown = _alter(target, "t", {"no.such.config": 1})
        assert "no such config" in unknown["unsupported"]
        with pytest.raises(KafkaTargetError, match="must be an object"):
            target.jvm.request({"op": "alter_config", "topic": "t", "config": [1]})
        with pytest.raises(KafkaTargetError, match="broker's config"):
            target.jvm.request({"op": "alter_config", "topic": "t", "config": {"num.recovery.threads.per.data.dir": 2}})
    finally:
        target.close()


@pytest.mark.slow
@pytest.mark.parametrize("release", ["2.4.1", "2.8.2", "3.1.2", "3.9.1", "4.3.1"])
def test_every_generation_applies_the_altered_config(release):
    assert _segments_after(release, {"segment.bytes": SMALL}) == [0, 1, 2]


@pytest.mark.slow
def test_kafka_1_1_applies_segment_bytes_from_the_next_segment_on():
    """Up to 2.0 a LogSegment keeps the segment.bytes and segment.ms it was created with (its own
    maxSegmentBytes, maxSegmentMs; 2.1's RollParams read the log's config): the altered config rolls
    only a segment created after the step."""
    assert _segments_after("1.1.1", {"segment.bytes": SMALL}) == [0]
    assert _segments_after("1.1.1", {"segment.bytes": SMALL}, roll_first=True) == [0, 1, 2]
