"""Smoke test of the recovery benchmark on a tiny segment: it recovers the real files, its result
checks run on every call and refuse a broken recovery.  No timing is judged (DESIGN.md,
Performance: figures are ratios, never timed tests)."""

from __future__ import annotations

import json

import pytest

from benchmarks import recovery
from benchmarks.segments import build_segment
from impl.config import LogConfig
from impl.segment import LogSegment

# benchmarks collect garbage before every timed run (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("frozen_heap")


@pytest.mark.parametrize("batch_bytes,records", [(16 * 1024, 16), (1024, 4)])
def test_recovery_figures_on_a_tiny_segment(batch_bytes, records):
    seg = build_segment("t", 200 * 1024, batch_bytes, records)
    r = recovery.run(seg, repeat=1)
    assert r["checked_calls"] == r["rounds"] + 1  # the warm-up and every timed call were checked
    assert r["batches"] == seg.batches and r["offset_index_entries"] > 0 and r["time_index_entries"] > 0
    for key in ("recovery_s", "crc_one_call_s", "crc_floor_s", "recovery_over_crc_one_call", "recovery_over_crc_floor"):
        assert r[key] > 0
    json.dumps(r)


def test_expected_entries_follow_the_index_interval():
    seg = build_segment("t", 64 * 1024, 1024, 4)
    every = recovery.expected_indexes(seg, 0)
    assert every.offset_entries == seg.batches - 1  # an entry at every batch but the first
    assert recovery.expected_indexes(seg, 4096).offset_entries < every.offset_entries


def test_a_broken_recovery_is_refused(monkeypatch):
    seg = build_segment("t", 64 * 1024, 1024, 4)
    real = LogSegment.recover

    def stops_early(self, epoch_cache=None):
        truncated = real(self, epoch_cache)
        self.truncate_to(self.base_offset + 8, 0)  # as if recovery had stopped after two batches
        return truncated

    monkeypatch.setattr(LogSegment, "recover", stops_early)
    with pytest.raises(RuntimeError, match="recovery of the t segment"):
        recovery.run(seg, repeat=1, config=LogConfig())
