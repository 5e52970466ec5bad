"""benchmarks.vs_kafka: its arguments refused in one line, its one definition of "log bytes read"
counted on impl, and (nightly) a small run against Kafka's own classes.  Nothing here is timed:
the figures are ratios the benchmark reports, never asserted."""

from __future__ import annotations

import json

import pytest

from benchmarks import unclean, vs_kafka


@pytest.mark.parametrize(
    "argv,says",
    [
        (["--repeat", "0"], "must be at least 1"),
        (["--load-segments", "1"], "must be at least 2"),
        (["--segment-mib", "-1"], "must be positive"),
        (["--only", "everything"], "invalid choice"),
        (["--shapes", "2k"], "invalid choice"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(argv, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        vs_kafka.main(argv)
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_impl_reads_each_segment_from_the_recovery_points_once(tmp_path):
    """The definition both sides are counted by (the sum of the .log sizes at each recover call):
    impl recovers every segment from the recovery point's on exactly once."""
    layout = unclean.build(partitions=3, segments=3, segment_bytes=64 * 1024)
    assert vs_kafka._impl_bytes(layout, str(tmp_path)) == layout.from_rp_segment_bytes


@pytest.mark.slow
def test_a_small_run_against_kafka(capsys):
    """Every figure of a small run, with what the releases are known to read (Kafka's second
    recovery of an active segment without its .index: 2.3.1 and 4.4.0; every active segment twice:
    2.2.2)."""
    result = vs_kafka.main([
        "--shapes", "1k", "--repeat", "1", "--warmup", "1", "--segment-mib", "0.25", "--load-partitions", "4",
        "--load-segment-mib", "0.1", "--load-repeat", "1", "--bytes-partitions", "6", "--releases", "2.2.2", "4.4.0",
        "--json",
    ])  # fmt: skip
    assert json.loads(capsys.readouterr().out)["kafka"]["version"] == "4.4.0"
    assert set(result["recover"]) == {"1k", "1k+pid"}
    assert all(f["kafka_over_impl_min"] > 0 for f in result["recover"].values())
    assert set(result["load"]) >= {"crashed", "clean", "jvm_start_s"}
    read = result["bytes"]["read"]
    assert read["impl"] == result["bytes"]["from_rp_segment_bytes"]
    assert read["impl"] < read["4.4.0"] < read["2.2.2"]
