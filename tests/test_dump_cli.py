"""``klc dump`` end to end: text and JSON output, invalid data, bad arguments and I/O errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.cli import main
from operator_tools.dump import base_offset_from_name
from conformance.formats import mixed_reference_segment, spec_vector_segment
from conformance.strategies import damaged_segments, hostile_batches
from model import records as R


def run(*args):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.fixture
def segment(tmp_path):
    path = tmp_path / "00000000000000000042.log"
    path.write_bytes(mixed_reference_segment())
    return path


def test_text_output_modelled_on_kafka_dump_log(segment):
    r = run("dump", "--print-data-log", str(segment))
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[0] == f"Dumping {segment}"
    assert lines[1] == "Log starting offset: 42"
    assert lines[2].startswith("baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1")
    assert (
        "partitionLeaderEpoch: 3 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1001"
        in lines[2]
    )
    assert (
        lines[3]
        == "| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 2 sequence: -1 headerKeys: [] key: k payload: v0"
    )
    assert any(line.startswith("offset: 2 position: ") and "magic: 1 compresscodec: none" in line for line in lines)
    assert any("NoTimestampType: -1" in line for line in lines)  # the v0 message
    assert any("compresscodec: gzip" in line for line in lines)
    assert any("compresscodec: lz4" in line and "producerId: 9" in line for line in lines)
    assert lines[-1].endswith("endTxnMarker: COMMIT coordinatorEpoch: 0")
    assert not any(line.startswith("Found") for line in lines)


def test_shallow_output_has_no_records(segment):
    lines = run("dump", str(segment)).output.splitlines()
    assert not any(line.startswith("|") for line in lines) and len(lines) == 2 + 6


def test_json_has_every_header_field_and_records(segment):
    r = run("dump", "--json", "--print-data-log", str(segment))
    objs = [json.loads(line) for line in r.output.splitlines()]
    batches = [o for o in objs if o["type"] == "batch"]
    assert len(batches) == 6 and objs[-1] == {
        "type": "end", "file": str(segment), "stop": "end", "valid_bytes": segment.stat().st_size,
        "file_size": segment.stat().st_size, "batches": 6,
    }  # fmt: skip
    first = batches[0]
    for field in ("position", "size", "offset", "last_offset", "magic", "crc", "attributes", "partition_leader_epoch",
                  "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                  "base_sequence", "records_count", "codec", "timestamp_type", "is_transactional", "is_control",
                  "delete_horizon_ms", "last_sequence", "is_valid"):  # fmt: skip
        assert field in first, field
    assert first["records"][0]["key"] == {"base64": "aw==", "utf8": "k"}
    assert first["records"][1]["key"] is None
    assert batches[-1]["records"][0]["control_type"] == "COMMIT"
    assert batches[1]["records"][0]["is_valid"] is True  # legacy per-record crc


def test_deep_iteration_without_data_has_no_payload(segment):
    objs = [json.loads(line) for line in run("dump", "--json", "--deep-iteration", str(segment)).output.splitlines()]
    rec = objs[0]["records"][0]
    assert "value" not in rec and rec["value_size"] == 2


def test_invalid_batch_prints_prefix_then_one_line(tmp_path):
    data = bytearray(spec_vector_segment())
    data[69 + 20] ^= 0x10  # corrupt the v1 message: crc mismatch at position 69
    path = tmp_path / "bad.log"
    path.write_bytes(bytes(data))
    r = run("dump", str(path))
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[1].startswith("baseOffset: 0")
    assert lines[-1].startswith(
        f"Found invalid batch in {path} at byte position 69: CorruptRecordException (crc-mismatch)"
    )
    assert len(lines) == 3  # no "Log starting offset" for a name that is not an offset
    objs = [json.loads(line) for line in run("dump", "--json", str(path)).output.splitlines()]
    assert objs[-2]["type"] == "error" and objs[-2]["position"] == 69 and objs[-2]["reason"] == "crc-mismatch"


def test_torn_and_short_tails_are_reported_not_errors(tmp_path):
    seg = spec_vector_segment()
    torn, short = tmp_path / "torn.log", tmp_path / "short.log"
    torn.write_bytes(seg + seg[:30])
    short.write_bytes(seg + bytes(9))
    r = run("dump", str(torn), str(short))
    assert r.exit_code == 0
    assert f"Found a partial batch at the end of {torn} at byte position 131: 30 bytes present" in r.output
    assert f"Found 9 trailing bytes at the end of {short} at byte position 131" in r.output


def test_deep_error_line_and_continue(tmp_path):
    bad = R.encode_batch_v2(records_count=1, payload=b"\x7e\x00")
    path = tmp_path / "deep.log"
    path.write_bytes(bad + spec_vector_segment())
    lines = run("dump", "--deep-iteration", str(path)).output.splitlines()
    assert (
        lines[2]
        == f"Found invalid records in {path} at byte position 0: InvalidRecordException (invalid-record-size): record length 63 exceeds the bytes remaining"
    )
    assert sum(line.startswith("|") for line in lines) == 3  # the later batches still print
    objs = [json.loads(x) for x in run("dump", "--json", "--deep-iteration", str(path)).output.splitlines()]
    assert objs[1]["type"] == "error" and objs[1]["scope"] == "records"


def test_io_and_usage_errors(tmp_path, segment):
    empty = tmp_path / "00000000000000000000.log"
    empty.write_bytes(b"")
    r = run("dump", str(tmp_path / "missing.log"), str(empty), str(segment))
    assert r.exit_code == 1
    assert "cannot read" in r.output and "missing.log" in r.output
    assert f"Dumping {empty}" in r.output and f"Dumping {segment}" in r.output  # the others still dump
    assert run("dump").exit_code == 2
    assert run("dump", "--bogus", str(segment)).exit_code == 2
    r = run("dump", str(tmp_path / "00000000000000000000.index"))
    assert r.exit_code == 1 and "No such file" in r.output
    r = run("dump", str(tmp_path), str(segment))  # a directory stands for the files under it
    assert r.exit_code == 0 and r.output.count(f"Dumping {segment}") == 2 and f"Dumping {empty}" in r.output


def test_a_fifo_is_refused_not_waited_on(tmp_path, segment):
    for name in ("00000000000000000000.log", "00000000000000000000.txnindex", "00000000000000000000.index"):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        r = run("dump", str(fifo), str(segment))
        assert r.exit_code == 1 and f"cannot read {fifo}: not a regular file (a FIFO)" in r.output
        assert f"Dumping {segment}" in r.output
        fifo.unlink()


def test_a_large_transaction_index_is_streamed(tmp_path):
    """Records are read a bounded chunk at a time and printed as they are read."""
    from impl.storage import OsStorage
    from impl.txn_index import SIZE, TransactionIndex

    path = tmp_path / "00000000000000000000.txnindex"
    with open(path, "wb") as f:
        f.truncate(SIZE * 100_003 + 5)  # all-zero records, and a partial one Kafka does not read
    txn = TransactionIndex(OsStorage(read_only=True), str(path), 0)
    assert sum(1 for _ in txn.iter_entries(records_per_read=1000)) == 100_003
    txn.close()
    lines = run("dump", str(path)).output.splitlines()
    assert len(lines) == 1 + 100_003 and lines[1].startswith("version: 0 producerId: 0")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_file(segment):
    segment.chmod(0)
    assert run("dump", str(segment)).exit_code == 1


@pytest.mark.parametrize(
    "name,expected",
    [("00000000000000000042.log", 42), ("00000000000000368769.log.deleted", 368769), ("foo.log", None),
     ("-0000000000000000001.log", -1), ("99999999999999999999.log", None), ("+1.log", 1), ("", None)],
)  # fmt: skip
def test_base_offset_from_name(name, expected):
    assert base_offset_from_name(name) == expected


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], max_examples=50)
@given(st.one_of(damaged_segments(), st.lists(hostile_batches(), max_size=3).map(b"".join), st.binary(max_size=300)))
def test_any_bytes_dump_without_traceback(tmp_path, data):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    for flags in (["--print-data-log"], ["--json", "--print-data-log"]):
        r = CliRunner().invoke(main, ["dump", *flags, str(path)])
        assert r.exit_code == 0 and r.exception is None, (r.output, r.exception)


def test_console_script_and_broken_pipe(segment):
    """The installed entry point runs, and a closed pipe is not an error."""
    cmd = [sys.executable, "-c", "from conformance.cli import main; main()", "dump", "--print-data-log", str(segment)]
    big = segment.parent / "big.log"
    big.write_bytes(mixed_reference_segment() * 3000)
    cmd[-1] = str(big)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    assert p.wait(timeout=60) == 0
    assert b"Traceback" not in p.stderr.read()
