"""Memory bounded whatever the input (docs/dump.md, "Bounded memory"): the figures are measured by
``python -m benchmarks.bounded_memory``; these check the bound holds, as a margin over the floor of
the same run, not a figure."""

from __future__ import annotations

import os
import subprocess

import pytest

from benchmarks import bounded_memory as bm

MARGIN_MIB = 48  # over the floor: a read of READ_RECORDS records or a PIECE of text is ~1 MiB


def _floor(tmp_path) -> float:
    path = tmp_path / f"{1:020d}.txnindex"
    path.write_bytes(bytes(34))
    return bm._peak(["dump", str(path)])[0]


def _txn_cases(tmp_path, gib: float) -> list[tuple[str, float, int]]:
    txn = bm.build_txn_dir(str(tmp_path), gib)
    return [
        (" ".join(cmd[:2]), *bm._peak(cmd)[::2])
        for cmd in (["dump", "--index-sanity-check", txn], ["load", os.path.join(str(tmp_path), "data")])
    ]


def test_a_large_sparse_txnindex_is_checked_and_loaded_in_bounded_memory(tmp_path):
    """128 MiB of all-zero records (4 M): a list of them took over 400 MB."""
    floor = _floor(tmp_path)
    for what, rss, status in _txn_cases(tmp_path, 0.125):
        assert status == 0, what
        assert rss < floor + MARGIN_MIB, (what, rss, floor)


def test_a_txnindex_dump_prints_its_first_entry_before_reading_the_rest(tmp_path):
    """32 MiB of records and a bad one at the end: the records print as they are read, the error
    last (read whole first, as Kafka's tool does, nothing but the error printed)."""
    txn = bm.build_txn_dir(str(tmp_path), 1 / 32)
    with open(txn, "ab") as f:
        f.write(b"\x01" + bytes(33))  # version 1: Kafka's reader refuses it
    child = subprocess.Popen([bm.KLC, "dump", txn], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout.readline().startswith(b"Dumping")
    assert child.stdout.readline().startswith(b"version: 0 producerId: 0")
    rest = child.stdout.read().splitlines()
    child.wait()
    # the entries after the first, then the error line in place of the bad record
    assert len(rest) == os.path.getsize(txn) // 34 - 1 and rest[-1].startswith(b"Found invalid entry")
    assert b"Unexpected aborted transaction version 1" in rest[-1]


@pytest.mark.slow
def test_a_2_gib_sparse_txnindex_and_a_250_mib_record(tmp_path):
    """The issue's own inputs (minutes): a 2 GiB sparse .txnindex, one 250 MiB record in a zstd batch."""
    floor = _floor(tmp_path)
    for what, rss, status in _txn_cases(tmp_path, 2):
        assert status == 0 and rss < floor + MARGIN_MIB, (what, rss, floor)
    log = str(tmp_path / f"{0:020d}.log")
    bm.build_big_record(log, 250)
    for flags in (["--print-data-log"], ["--json", "--print-data-log"]):
        rss, _, status = bm._peak(["dump", *flags, log])
        assert status == 0 and rss < floor + 2.5 * 250, (flags, rss)
