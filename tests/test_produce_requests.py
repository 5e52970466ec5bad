"""Kafka's LogValidator on a leader append (spec §4.14, docs/scenario-format.md), called directly
on the model's and impl's logs: what no scenario step can send (an ``append`` step of several
batches is several produce requests), and the bounds of the timestamp rule."""

from __future__ import annotations

import pytest

import impl.log
import model.log
from conformance import scenario as sc
from conformance.runner import Session

NOW = 1700000000000


def _logs(**config):
    header = sc.Scenario.from_json({"format": "klc-scenario", "version": 1, "config": config, "steps": []})
    session = Session(header, ("model", "impl"))
    session.step(sc.Create())
    return session, session.targets[0].manager.log("t", 0), session.targets[1].manager.log("t", 0)


def _batch(ts: int, key: str | None = "k") -> bytes:
    return sc.append_bytes(sc.Append(batches=(sc.BatchSpec((sc.Rec(ts, key, "v"),)),)))


@pytest.mark.parametrize(
    "config, data, kind",
    [
        ({}, _batch(NOW) + _batch(NOW), "InvalidRecordException"),  # two batches in one request
        ({"cleanup.policy": "compact"}, _batch(NOW, key=None), "InvalidRecordException"),
        ({}, _batch(NOW + 3_600_001), "InvalidTimestampException"),
        ({"message.timestamp.after.max.ms": 0}, _batch(NOW + 1), "InvalidTimestampException"),
        ({"message.timestamp.before.max.ms": 10}, _batch(NOW - 11), "InvalidTimestampException"),
        (
            {"cleanup.policy": "compact"},
            _batch(NOW + 3_600_001, key=None),
            "InvalidTimestampException",
        ),  # timestamps first
    ],
)
def test_model_and_impl_refuse_the_request_alike(config, data, kind):
    session, model_log, impl_log = _logs(**config)
    with pytest.raises(model.log.LogError) as m:
        model_log.append(data, True, 0)
    with pytest.raises(impl.log.LogError) as i:
        impl_log.append(data, True, 0)
    assert m.value.kind == i.value.kind == kind
    assert model_log.log_end_offset == impl_log.log_end_offset == 0
    session.close()


@pytest.mark.parametrize("ts", [NOW + 3_600_000, NOW - 10 * 365 * 86_400_000])
def test_the_bounds_themselves_are_taken(ts):
    session, model_log, impl_log = _logs()
    assert model_log.append(_batch(ts), True, 0) == model.log.LogAppendInfo(0, 0)
    assert impl_log.append(_batch(ts), True, 0).last_offset == 0
    session.close()


def test_a_follower_append_is_not_validated():
    """Replication takes what the leader wrote: several batches, keyless records on a compacted topic."""
    session, model_log, impl_log = _logs(**{"cleanup.policy": "compact"})
    step = sc.Append(
        batches=(
            sc.BatchSpec((sc.Rec(NOW, None, "v"),), base_offset=0),
            sc.BatchSpec((sc.Rec(NOW + 7_200_000, None, "w"),), base_offset=1),
        ),
        leader=False,
    )
    data = sc.append_bytes(step)
    assert model_log.append(data, False, 0) == model.log.LogAppendInfo(0, 1)
    assert impl_log.append(data, False, 0).last_offset == 1
    session.close()
