"""Which partitions a ``corrupt`` step's damage reaches (conformance.properties.tainted): the
properties stop requiring what damage may have changed, and no more than that."""

from __future__ import annotations

from conformance.properties import anywhere, tainted
from conformance.properties.crash_recovery import RecoveryTracker


def _after_damage(path: str) -> frozenset:
    tracker = RecoveryTracker()
    tracker.corrupted(path)
    return frozenset(tracker.ever_corrupted)


def test_damage_follows_the_partition_into_another_data_dir():
    """A rename_dir copy made a future replica of the damaged log in d1, then it was promoted."""
    damaged = _after_damage("d0/legacy-1/00000000003221225472.log")
    assert tainted("d0/legacy-1", damaged)
    assert tainted("d1/legacy-1", damaged)
    assert tainted("d1/legacy-1.0123456789abcdef0123456789abcdef-future", damaged)


def test_damage_reaches_no_other_partition():
    damaged = _after_damage("d0/legacy-1/00000000003221225472.log")
    assert not tainted("d0/legacy-0", damaged)
    assert not tainted("d1/t-0", damaged)
    assert not tainted("d0/legacy-10", damaged)


def test_a_data_dir_checkpoint_taints_its_dir_only():
    damaged = _after_damage("d0/recovery-point-offset-checkpoint")
    assert tainted("d0/t-0", damaged) and not tainted("d1/t-0", damaged)


def test_a_topic_with_dots_keeps_its_name():
    assert anywhere("d2/my.topic-3.0123456789abcdef0123456789abcdef-stray") == "*/my.topic-3"
    assert anywhere("d2/my.topic-3") == "*/my.topic-3"
