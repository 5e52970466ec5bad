"""``klc dump`` on the files of a log dir that hold no record batches, and on names it does not know:
each kind decoded by its format, bad content reported as Kafka's reader would refuse it."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from conformance.cli import main
from conformance.formats import mixed_reference_segment
from model.producer_state import render

ENTRY = (7, 0, 3, 4, 1, 1700000000000, -1, 12)


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_a_snapshot_lists_its_producers(tmp_path):
    path = tmp_path / "00000000000000000005.snapshot"
    path.write_bytes(render([ENTRY]))
    lines = run("dump", path).output.splitlines()
    assert lines[1:] == [
        "Producer state snapshot at offset 5",
        "producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: 12 lastTimestamp: 1700000000000 "
        "lastSequence: 3 lastOffset: 4 offsetDelta: 1",
        "1 producer",
    ]
    objs = [json.loads(x) for x in run("dump", "--json", path).output.splitlines()]
    assert [o["producerId"] for o in objs if o["type"] == "producer"] == [7]


def test_a_snapshot_kafka_refuses_gets_kafkas_verdict(tmp_path):
    data = bytearray(render([ENTRY]))
    data[-1] ^= 1
    (tmp_path / "00000000000000000009.snapshot").write_bytes(bytes(data))
    (tmp_path / "00000000000000000010.snapshot").write_bytes(b"\x00\x02" + bytes(8))
    (tmp_path / "1x.snapshot").write_bytes(render([]))
    r = run("dump", *sorted(tmp_path.iterdir()))
    assert r.exit_code == 0
    assert "CorruptSnapshotException (crc-mismatch): Snapshot is corrupt (CRC is no longer valid)" in r.output
    assert "CorruptSnapshotException (unknown-version): Snapshot contained an unknown file version 2" in r.output
    assert r.output.count("Kafka's load deletes this snapshot and reads the next older one (rule 35)") == 2
    assert 'NumberFormatException (snapshot-name): For input string: "1x"' in r.output


def test_checkpoints_list_their_entries_or_the_line_kafka_refuses(tmp_path):
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n2\nt 0 5\nu 3 7\n")
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n1\nt 0 x\n")
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n4 10\n")
    r = run("dump", *sorted(tmp_path.iterdir()))
    assert "topic: t partition: 0 offset: 5\ntopic: u partition: 3 offset: 7\n2 partitions" in r.output
    assert "epoch: 0 startOffset: 0\nepoch: 4 startOffset: 10\n2 epochs" in r.output
    assert (
        'cleaner-offset-checkpoint at line 3: NumberFormatException (number-format): For input string: "x"' in r.output
    )
    assert "Kafka's load takes this log dir offline" in r.output


def test_metadata_properties_and_quorum_state(tmp_path):
    good = tmp_path / "a"
    good.mkdir()
    (good / "partition.metadata").write_text("version: 0\ntopic_id: 9mMsWK5fQ1Ctg2o_2eOVnQ\n")
    (good / "meta.properties").write_text("#comment\nversion=1\nnode.id: 3\ncluster.id=abc\n")
    (good / "quorum-state").write_text('{"leaderId": 1, "leaderEpoch": 3, "votedId": -1}')
    r = run("dump", *sorted(good.iterdir()))
    assert r.exit_code == 0
    assert "version: 0 topic_id: 9mMsWK5fQ1Ctg2o_2eOVnQ" in r.output
    assert "key: node.id value: 3 line: 3" in r.output
    assert "key: leaderEpoch value: 3" in r.output
    bad = tmp_path / "b"
    bad.mkdir()
    (bad / "partition.metadata").write_text("version: 0\ntopic_id: not-a-uuid\n")
    (bad / "quorum-state").write_text('{"leaderId": ')
    out = run("dump", *sorted(bad.iterdir())).output
    assert "partition.metadata at line 2: IllegalArgumentException (topic-id)" in out
    assert "quorum-state at byte position 13: IOException (json)" in out


def test_renamed_files_are_dumped_as_their_kind(tmp_path):
    log = tmp_path / "00000000000000000042.log.deleted"
    log.write_bytes(mixed_reference_segment())
    snap = tmp_path / "00000000000000000042.snapshot.deleted"
    snap.write_bytes(render([ENTRY]))
    index = tmp_path / "00000000000000000042.index.swap"
    index.write_bytes(bytes(16))
    out = run("dump", log, snap, index).output
    assert "baseOffset: " in out and "producerId: 7" in out and "Kafka reads 2 entries from 16 bytes" in out


def test_an_unknown_kind_is_refused_by_name_and_the_others_are_dumped(tmp_path):
    odd = tmp_path / "records.bin"
    shutil.copyfile(mixed_reference_segment.__code__.co_filename, odd)  # any bytes
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(mixed_reference_segment())
    r = run("dump", odd, seg)
    assert r.exit_code == 1
    assert f"cannot dump {odd}: not a kind of file klc dump knows" in r.output
    assert f"Dumping {seg}" in r.output
    odd.write_bytes(mixed_reference_segment())
    assert "baseOffset: " in run("dump", "--as-records", odd).output


def test_every_file_of_a_real_broker_dir_is_dumped_by_its_kind(shared_dir):
    """A live broker's dir: each file dumps with exit 0, except its .lock (no kind of file)."""
    root = (
        shared_dir / "real-data" / "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions" / "live-aec5bda1"
    )
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name not in ("SOURCE.json", ".lock"))
    assert {p.name for p in files} >= {"partition.metadata", "meta.properties", "leader-epoch-checkpoint"}
    for p in files:
        r = run("dump", p)
        assert r.exit_code == 0 and "Traceback" not in r.output and "Found" not in r.output, (p, r.output)


def test_quorum_state_with_a_huge_integer_is_an_error_line_with_its_position(tmp_path):
    """An integer of 4,301 digits (past Python's int-conversion limit, and any Java long): one
    error line with the byte position, no traceback."""
    path = tmp_path / "quorum-state"
    path.write_text('{"leaderId": 1, "leaderEpoch": ' + "9" * 4301 + "}")
    r = run("dump", str(path))
    assert r.exit_code == 0 and r.exception is None, r.output
    assert "at byte position 31: IOException (number-out-of-range): an integer of 4301 digits" in r.output
    path.write_text('{"votedId": -9223372036854775809}')  # one below Long.MIN_VALUE
    assert "at byte position 12: IOException (number-out-of-range)" in run("dump", str(path)).output
