"""The CLI fuzzer (benchmarks/cli_fuzz.py): a short run finds nothing in klc as it is, and the same
run finds what it claims to find in a klc broken on purpose — a traceback, a descriptor left open,
an input changed."""

from __future__ import annotations

import os

import pytest

from benchmarks import cli_fuzz

pytestmark = pytest.mark.no_cover  # its workers are forked processes: nothing of theirs is traced


@pytest.fixture(autouse=True)
def _real_data(shared_dir):
    """The fuzzer starts from the shared real broker data."""


def test_a_short_run_finds_nothing_and_covers_both_commands():
    report = cli_fuzz.fuzz(120, seed=7, workers=1)
    assert report["inputs"] == 120 and report["findings"] == {}
    assert set(report["by_command"]) == {"dump", "load"}
    # valid data reported (0), a file klc cannot read or name (1), usage errors (2): all reached
    assert {"0", "1", "2"} <= set(report["by_command"]["dump"]["statuses"])


def _broken_dump(monkeypatch, how):
    from operator_tools import dump_state

    original = dump_state.dump_state_file

    def broken(path, options, emit, name=None):
        if how == "raise":
            raise KeyError("a traceback escaping klc dump")
        if how == "leak":
            broken.kept.append(open(path, "rb"))  # noqa: SIM115  the leak under test
        if how == "modify":
            with open(path, "ab") as f:
                f.write(b"x")
        return original(path, options, emit, name)

    broken.kept = []
    monkeypatch.setattr(dump_state, "dump_state_file", broken)
    from conformance import cli

    monkeypatch.setattr(cli, "dump_state_file", broken, raising=False)


@pytest.mark.parametrize("how, finding", [("raise", "exception"), ("leak", "descriptors"), ("modify", "modified")])
def test_a_broken_klc_is_caught(monkeypatch, how, finding):
    """The workers fork from this process, so they run the broken dump of state files."""
    _broken_dump(monkeypatch, how)
    report = cli_fuzz.fuzz(60, seed=7, workers=1)
    assert finding in report["findings"], report["findings"]
    first = report["findings"][finding]["first"][0]
    assert first["args"][0] == "dump" and isinstance(first["index"], int)


def test_an_input_replays_from_its_seed_and_index(tmp_path):
    files, partitions = cli_fuzz.real_files(), cli_fuzz.real_partitions()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    args_a = cli_fuzz.make_input(7, 11, str(a), files, partitions)
    args_b = cli_fuzz.make_input(7, 11, str(b), files, partitions)
    assert [x.replace(str(a), "") for x in args_a] == [x.replace(str(b), "") for x in args_b]
    assert sorted(os.listdir(a)) == sorted(os.listdir(b))


def test_a_load_that_splits_at_load_closes_what_it_opened(tmp_path):
    """Input 50043 of seed 1 (found by the 100,000-input run): a damaged base offset makes a
    segment overflow, loadSegmentFiles splits it and starts over; the split's segments were left
    open (6 descriptors on the deleted private copy) until the retry closed them as Kafka's does."""
    where, tmpdir = tmp_path / "in", tmp_path / "tmp"
    where.mkdir(), tmpdir.mkdir()
    args = cli_fuzz.make_input(1, 50043, str(where), cli_fuzz.real_files(), cli_fuzz.real_partitions())
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(tmpdir)
    import tempfile

    tempfile.tempdir = None
    try:
        record = cli_fuzz.judge(50043, args, str(where), str(tmpdir))
    finally:
        os.environ.pop("TMPDIR") if old is None else os.environ.__setitem__("TMPDIR", old)
        tempfile.tempdir = None
    assert args[0] == "load" and record["status"] == 4 and record["findings"] == []
