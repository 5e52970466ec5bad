"""Smoke test of the unclean-restart benchmark on a tiny dir: the figures are computed and agree with
each other.  No timing is judged (DESIGN.md, Performance: figures are ratios, never timed tests)."""

from __future__ import annotations

import json

import pytest

from benchmarks import __main__ as bench_main
from benchmarks import unclean

# benchmarks collect garbage before every timed run (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("frozen_heap")


def test_unclean_restart_figures_are_consistent():
    r = unclean.run(partitions=3, segments=3, segment_bytes=64 * 1024, repeat=1, threads=2)
    assert r["bytes_from_rp_segment"] >= r["bytes_at_or_after_rp"] > 0
    assert r["log_bytes_in_dir"] > r["bytes_from_rp_segment"]  # the segments below the recovery point stay unread
    # impl reads the recovery point's whole segment and everything after it, plus the active tail once more
    assert r["impl_log_bytes_read"] >= r["bytes_from_rp_segment"]
    assert r["impl_over_after_rp"] >= r["impl_over_from_rp_segment"] >= 1
    # t-2's active segment has no .index: Kafka recovers it twice, impl scans it once
    assert r["segments_recovered_kafka"] == r["segments_scanned_impl"] + 1
    assert r["kafka_log_bytes_read"] > r["impl_log_bytes_read"]
    assert r["bytes_to_validate"] <= r["bytes_from_rp_segment"]
    for key in ("load_s", "crc_floor_s", "load_t2_s", "load_over_crc_floor", "threads_speedup"):
        assert r[key] > 0
    assert len(unclean.render(r)) == 10
    json.dumps(r)


def test_unclean_restart_is_part_of_the_main_run(capsys):
    argv = [
        "--size-mib",
        "0.1",
        "--model-size-mib",
        "0.05",
        "--repeat",
        "1",
        "--no-pin-malloc",
        "--unclean-partitions",
        "2",
        # the main run's other figures at their smallest: what this test checks is the wiring
        "--clean-partitions",
        "2",
        "--clean-segments",
        "100",
        "--stateful-examples",
        "2",
    ]
    assert bench_main.main([*argv, "--unclean-segments", "2", "--unclean-segment-mib", "0.05", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["unclean_restart"]["partitions"] == 2 and out["parameters"]["threads"] == 4
