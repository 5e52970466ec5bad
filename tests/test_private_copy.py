"""klc load's private copy (operator_tools/private_copy.py): it costs what the data costs, keeps every
modification time, follows links as Kafka does, and reports what it cannot copy."""

from __future__ import annotations

import os

import pytest

from operator_tools.private_copy import copy_file, private_copy

MIB = 1 << 20
T = 1_600_000_000


def _allocated(path: str) -> int:
    return os.stat(path).st_blocks * 512


def _sparse(path: str, size: int, data: dict[int, bytes] = {}) -> None:  # noqa: B006 - read only
    with open(path, "wb") as f:
        f.truncate(size)
        for at, chunk in data.items():
            f.seek(at)
            f.write(chunk)
    os.utime(path, (T, T))


def test_an_all_zero_preallocated_index_costs_nothing_and_keeps_its_mtime(tmp_path):
    src, dst = tmp_path / "a.index", tmp_path / "b.index"
    _sparse(str(src), 10 * MIB)
    assert copy_file(str(src), str(dst)) == 0
    assert os.path.getsize(dst) == 10 * MIB and _allocated(str(dst)) <= 64 * 1024
    assert os.stat(dst).st_mtime == T
    with open(dst, "rb") as f:
        assert not any(f.read())


def test_only_the_data_extents_are_copied(tmp_path):
    src, dst = tmp_path / "a.index", tmp_path / "b.index"
    _sparse(str(src), 10 * MIB, {0: b"\x01" * 4096, 5 * MIB: b"\x02" * 8})
    copied = copy_file(str(src), str(dst))
    assert copied < 64 * 1024 and _allocated(str(dst)) <= 64 * 1024
    assert src.read_bytes() == dst.read_bytes()


def test_a_tree_is_copied_with_its_times_and_links_followed(tmp_path):
    src, dst, elsewhere = tmp_path / "d0", tmp_path / "copy", tmp_path / "elsewhere"
    (src / "t-0").mkdir(parents=True)
    (elsewhere / "t-1").mkdir(parents=True)
    (src / "t-0" / "00000000000000000000.log").write_bytes(b"log")
    (elsewhere / "t-1" / "00000000000000000000.log").write_bytes(b"moved")
    (elsewhere / "seg.log").write_bytes(b"linked segment")
    os.symlink(elsewhere / "t-1", src / "t-1")  # a partition dir on another disk
    os.symlink(elsewhere / "seg.log", src / "t-0" / "00000000000000000005.log")
    for p in (src / "t-0" / "00000000000000000000.log", src / "t-0"):
        os.utime(p, (T, T))
    assert private_copy(str(src), str(dst)) == []
    assert (dst / "t-1" / "00000000000000000000.log").read_bytes() == b"moved"
    assert (dst / "t-0" / "00000000000000000005.log").read_bytes() == b"linked segment"
    assert not os.path.islink(dst / "t-1")
    assert os.stat(dst / "t-0" / "00000000000000000000.log").st_mtime == T
    assert os.stat(dst / "t-0").st_mtime == T


def test_what_cannot_be_copied_is_reported_by_name(tmp_path):
    src, dst = tmp_path / "d0", tmp_path / "copy"
    (src / "t-0").mkdir(parents=True)
    os.mkfifo(src / "t-0" / "00000000000000000000.log")
    os.symlink(tmp_path / "nowhere", src / "t-0" / "00000000000000000007.log")
    os.symlink(src, src / "t-0" / "loop")
    problems = private_copy(str(src), str(dst))
    assert any("00000000000000000000.log: not a regular file (a FIFO)" in p for p in problems), problems
    assert any("00000000000000000007.log" in p and "dangling" in p for p in problems), problems
    assert any("symbolic link loop" in p for p in problems), problems


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_an_unreadable_file_is_reported(tmp_path):
    src, dst = tmp_path / "d0", tmp_path / "copy"
    src.mkdir()
    secret = src / "recovery-point-offset-checkpoint"
    secret.write_bytes(b"0\n0\n")
    secret.chmod(0)
    problems = private_copy(str(src), str(dst))
    assert problems and "recovery-point-offset-checkpoint" in problems[0]


def test_klc_load_marks_a_partition_whose_segment_was_not_copied(tmp_path):
    """The log shown lacks the segment (here a FIFO named like one): the partition says so, and the
    exit status is 1."""
    from click.testing import CliRunner

    from conformance.cli import main

    d = tmp_path / "d0" / "t-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(b"")
    os.mkfifo(d / "00000000000000000005.log")
    result = CliRunner().invoke(main, ["load", str(tmp_path / "d0")])
    assert result.exit_code == 1  # incomplete: no verdict on what was not copied
    assert "INCOMPLETE: not copied, so the log above lacks them: 00000000000000000005.log" in result.output
