"""``klc dump`` records streamed one at a time, and the kafka-dump-log options: --max-bytes,
--skip-record-metadata, printable output, key/value decoders, the internal-topic decoders."""

from __future__ import annotations

import json
import struct

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from operator_tools import dump
from conformance.cli import main
from operator_tools.dump_topics import TOPIC_DECODERS
from model import compression
from model import records as R
from model.errors import RecordFormatError


def run(*args):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def entries(n: int, start: int = 0):
    return [(1000 + i, b"k%d" % i, b"value-%d" % i) for i in range(start, start + n)]


CODEC_BATCHES = {
    **{f"v2-{name}": (lambda c=c: R.build_batch_v2(0, entries(300), codec=c)) for name, c in
       (("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4))},
    **{f"v{m}-{name}": (lambda m=m, c=c: R.build_legacy_wrapper(m, c, 299, entries(300))) for m in (0, 1)
       for name, c in (("gzip", 1), ("snappy", 2), ("lz4", 3))},
}  # fmt: skip


# --- a) records streamed -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CODEC_BATCHES))
def test_streamed_records_equal_the_whole_batch_decode(name):
    batch = R.Batch(0, CODEC_BATCHES[name]())
    streamed = batch.iter_records()
    assert not isinstance(streamed, list)
    assert list(streamed) == batch.records()
    assert [r.offset for r in batch.records()] == list(range(300))


@pytest.mark.parametrize("name", ["v2-zstd", "v1-gzip"])
def test_dump_prints_the_records_of_every_codec(tmp_path, name):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(CODEC_BATCHES[name]())
    lines = run("dump", "--print-data-log", str(path)).output.splitlines()
    records = [line for line in lines if line.startswith("|")]
    assert len(records) == 300
    assert records[7].startswith("| offset: 7 CreateTime: 1007 keySize: 2 valueSize: 7")
    assert records[7].endswith("key: k7 payload: value-7")


def test_the_first_record_prints_before_the_batch_is_decompressed(monkeypatch):
    """20 000 records of a zstd batch expand to several chunks; the first record line comes
    after one chunk (a zstd block, 128 KiB here) has been decompressed."""
    raw = R.build_batch_v2(0, [(0, None, b"v" * 20)] * 20_000, codec=compression.ZSTD)
    pulled = []
    real = compression.decompress_chunks

    def counting(*args, **kwargs):
        for chunk in real(*args, **kwargs):
            pulled.append(len(chunk))
            yield chunk

    monkeypatch.setattr(compression, "decompress_chunks", counting)
    lines = dump._dump_lines("x.log", raw, dump.DumpOptions(deep_iteration=True))
    assert next(lines).startswith("Dumping")
    assert next(lines).startswith("baseOffset: 0 lastOffset: 19999")
    assert next(lines).startswith("| offset: 0 ")
    assert len(pulled) == 1
    assert sum(1 for _ in lines) == 19_999
    assert len(pulled) > 3


def test_json_batch_is_streamed_and_still_one_object(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(CODEC_BATCHES["v2-lz4"]())
    lines = run("dump", "--json", "--deep-iteration", str(path)).output.splitlines()
    batch = json.loads(lines[0])
    assert batch["type"] == "batch" and [r["offset"] for r in batch["records"]] == list(range(300))
    assert json.loads(lines[1])["type"] == "end"


def test_a_bad_record_mid_batch_prints_the_records_before_it(tmp_path):
    """A compressed batch claiming one record more than it holds: 300 records, then the error line
    (JSON: the batch with its 300 records, then an error object)."""
    payload = compression.compress(
        compression.GZIP, b"".join(R.encode_record(R.Record(offset_delta=i, value=b"x")) for i in range(300))
    )
    raw = R.encode_batch_v2(codec=compression.GZIP, payload=payload, records_count=301, last_offset_delta=300)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw)
    lines = run("dump", "--deep-iteration", str(path)).output.splitlines()
    assert sum(line.startswith("|") for line in lines) == 300
    assert lines[-1] == (
        f"Found invalid records in {path} at byte position 0: InvalidRecordException (premature-eof): "
        "Incorrect declared batch size, premature EOF reached"
    )
    objs = [json.loads(line) for line in run("dump", "--json", "--deep-iteration", str(path)).output.splitlines()]
    assert len(objs[0]["records"]) == 300
    assert objs[1] | {"file": None} == {
        "type": "error", "scope": "records", "file": None, "position": 0, "kind": "InvalidRecordException",
        "reason": "premature-eof", "detail": "Incorrect declared batch size, premature EOF reached",
    }  # fmt: skip


def test_corrupt_compressed_stream_mid_batch(tmp_path):
    good = R.build_batch_v2(0, [(0, None, b"%06d" % i) for i in range(30_000)], codec=compression.LZ4)
    payload = bytearray(good[R.V2_HEADER_SIZE :])
    del payload[len(payload) // 2 :]  # the frame ends inside a block
    raw = R.encode_batch_v2(
        codec=compression.LZ4, payload=bytes(payload), records_count=30_000, last_offset_delta=29_999
    )
    batch = R.Batch(0, raw)
    seen = []
    with pytest.raises(RecordFormatError) as e:
        for r in batch.iter_records():
            seen.append(r.offset)
    assert e.value.reason == "corrupt-compressed-stream" and "lz4: truncated frame" in e.value.detail
    assert seen == list(range(len(seen))) and len(seen) > 1000  # the records before the cut


# --- b) --max-bytes, --skip-record-metadata, printable output ----------------------------------


@pytest.fixture
def three_batches(tmp_path):
    batches = [R.build_batch_v2(i * 2, entries(2, i * 2)) for i in range(3)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    return path, [len(b) for b in batches]


def test_max_bytes_reads_only_whole_batches_within_the_bound(three_batches):
    path, sizes = three_batches
    bound = sizes[0] + sizes[1] + 10  # inside the third batch
    lines = run("dump", "--max-bytes", str(bound), str(path)).output.splitlines()
    assert [line.split()[1] for line in lines if line.startswith("baseOffset")] == ["0", "2"]
    assert lines[-1] == (
        f"Stopped at --max-bytes {bound} in {path} at byte position {sizes[0] + sizes[1]}: "
        f"the next {sizes[2]} bytes (file size {sum(sizes)}) not read"
    )
    end = json.loads(run("dump", "--json", "--max-bytes", str(bound), str(path)).output.splitlines()[-1])
    assert (end["stop"], end["batches"], end["valid_bytes"], end["file_size"]) == (
        "max-bytes",
        2,
        sizes[0] + sizes[1],
        sum(sizes),
    )
    whole = run("dump", "--max-bytes", str(sum(sizes)), str(path)).output.splitlines()
    assert whole == run("dump", str(path)).output.splitlines()  # a bound at the end changes nothing


def test_max_bytes_still_reports_a_corrupt_batch_within_the_bound(three_batches):
    path, sizes = three_batches
    data = bytearray(path.read_bytes())
    data[sizes[0] + 30] ^= 1  # the second batch's CRC no longer matches
    path.write_bytes(bytes(data))
    lines = run("dump", "--max-bytes", str(sizes[0] + sizes[1] + 5), str(path)).output.splitlines()
    assert lines[-1].startswith(f"Found invalid batch in {path} at byte position {sizes[0]}: CorruptRecordException")


def test_skip_record_metadata_prints_only_the_data(three_batches):
    path, _ = three_batches
    lines = run("dump", "--print-data-log", "--skip-record-metadata", str(path)).output.splitlines()
    assert [line for line in lines if line.startswith("|")][:2] == [
        "| key: k0 payload: value-0",
        "| key: k1 payload: value-1",
    ]


def test_printable_output_escapes_control_and_invalid_bytes(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(R.build_batch_v2(0, [(1, "ключ".encode(), b"a\tb\x1b[31m\xff\\"), (2, None, b"plain")]))
    out = run("dump", "--print-data-log", str(path)).output
    assert "\x1b" not in out and "\t" not in out
    records = [line for line in out.splitlines() if line.startswith("|")]
    assert records[0].endswith("key: ключ payload: a\\tb\\u001b[31m\\xff\\\\")
    assert records[1].endswith("payload: plain")


# --- c) --key-decoder / --value-decoder ----------------------------------------------------------


def test_key_and_value_decoders(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(R.build_batch_v2(0, [(1, (7).to_bytes(8, "big"), (-2).to_bytes(4, "big", signed=True)),
                                          (2, b"abc", b"\x00\xff")]))  # fmt: skip
    lines = run("dump", "--key-decoder", "long", "--value-decoder", "int", str(path)).output.splitlines()
    records = [line for line in lines if line.startswith("|")]
    assert records[0].endswith("key: 7 payload: -2")  # a decoder implies --print-data-log
    assert records[1].endswith(
        "key: <not decoded at offset 1: 3 bytes, a long takes 8> payload: <not decoded at offset 1: 2 bytes, an int takes 4>"
    )
    hexed = run("dump", "--value-decoder", "hex", str(path)).output
    assert "payload: 00ff" in hexed and "key: abc" in hexed
    objs = json.loads(run("dump", "--json", "--key-decoder", "long", str(path)).output.splitlines()[0])["records"]
    assert objs[0]["key_decoded"] == 7
    assert objs[1]["key_decoded"] == {"not_decoded": "3 bytes, a long takes 8"}


@pytest.mark.parametrize(
    "args,message",
    [
        (["--skip-record-metadata"], "--skip-record-metadata goes with --print-data-log"),
        (["--print-data-log", "--skip-record-metadata", "--json"], "is for the text output"),
        (["--offsets-decoder", "--cluster-metadata-decoder"], "exclude each other"),
        (["--offsets-decoder", "--key-decoder", "hex"], "excludes --key-decoder"),
        (["--key-decoder", "float"], "Invalid value for '--key-decoder'"),
        (["--max-bytes", "-1"], "Invalid value for '--max-bytes'"),
    ],
)
def test_wrong_option_combinations_are_usage_errors(three_batches, args, message):
    path, _ = three_batches
    r = run("dump", *args, str(path))
    assert r.exit_code == 2 and message in r.output


# --- d) internal-topic decoders ------------------------------------------------------------------


def _s(text: str) -> bytes:  # a non-flexible string: int16 length + UTF-8
    return struct.pack(">h", len(text)) + text.encode()


def _internal_topic_log(tmp_path, records):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(R.build_batch_v2(0, [(1, k, v) for k, v in records]))
    return path


def _payloads(path, flag):
    lines = run("dump", flag, "--skip-record-metadata", str(path)).output.splitlines()
    return [line for line in lines if line.startswith("|")]


def test_offsets_decoder(tmp_path):
    commit_key = struct.pack(">h", 1) + _s("g1") + _s("t") + struct.pack(">i", 3)
    commit_v3 = struct.pack(">hqi", 3, 42, 5) + _s("meta") + struct.pack(">q", 1700)
    group_key = struct.pack(">h", 2) + _s("g1")
    member = (
        _s("m1")
        + _s("client")
        + _s("/10.0.0.1")
        + struct.pack(">ii", 300, 100)
        + struct.pack(">i", 2)
        + b"\x00\x01"
        + struct.pack(">i", 0)
    )
    group_v1 = (
        struct.pack(">h", 1)
        + _s("consumer")
        + struct.pack(">i", 7)
        + _s("range")
        + _s("m1")
        + struct.pack(">i", 1)
        + member
    )
    path = _internal_topic_log(tmp_path, [
        (commit_key, commit_v3), (group_key, group_v1), (commit_key, None),  # a tombstone
        (commit_key, commit_v3[:-3]), (struct.pack(">h", 9) + b"zz", b"v"), (b"\x00", b"v"),
    ])  # fmt: skip
    lines = _payloads(path, "--offsets-decoder")
    assert lines[0] == (
        '| key: {"type":1,"data":{"group":"g1","topic":"t","partition":3}} payload: '
        '{"version":3,"data":{"offset":42,"leaderEpoch":5,"metadata":"meta","commitTimestamp":1700}}'
    )
    assert lines[1].endswith(
        '{"version":1,"data":{"protocolType":"consumer","generation":7,"protocol":"range","leader":"m1",'
        '"members":[{"memberId":"m1","clientId":"client","clientHost":"/10.0.0.1","rebalanceTimeout":300,'
        '"sessionTimeout":100,"subscription":"0001","assignment":""}]}}'
    )
    assert lines[2].endswith("payload: <DELETE>")
    assert lines[3].endswith("payload: <not decoded at offset 3: 8 bytes wanted at byte 20, 5 left>")
    assert lines[4] == (
        "| key: <not decoded at offset 4: record type 9 is not an offset commit (0, 1) or group metadata (2) key> "
        "payload: <not decoded at offset 4: the key does not say what the value is>"
    )
    assert lines[5].startswith("| key: <not decoded at offset 5: 2 bytes wanted at byte 0, 1 left>")


def test_transaction_log_decoder(tmp_path):
    key = struct.pack(">h", 0) + _s("txn-1")
    value = (
        struct.pack(">hqhib", 0, 5000, 2, 60000, 1) + struct.pack(">i", 1) + _s("t") + struct.pack(">iii", 2, 0, 4)
        + struct.pack(">qq", 1700, 1600)
    )  # fmt: skip
    path = _internal_topic_log(tmp_path, [(key, value), (key, struct.pack(">h", 7)), (key, None)])
    lines = _payloads(path, "--transaction-log-decoder")
    assert lines[0] == (
        '| key: {"type":0,"data":{"transactionalId":"txn-1"}} payload: {"version":0,"data":{"producerId":5000,'
        '"producerEpoch":2,"transactionTimeoutMs":60000,"state":"Ongoing","transactionPartitions":[{"topic":"t",'
        '"partitionIds":[0,4]}],"transactionLastUpdateTimestampMs":1700,"transactionStartTimestampMs":1600}}'
    )
    assert lines[1].endswith("payload: <not decoded at offset 1: TransactionLogValue version 7 is not one of 0..1>")
    assert lines[2].endswith("payload: <DELETE>")


def test_cluster_metadata_decoder(tmp_path):
    fields = b"\x04abc" + bytes(16) + b"\x00"  # TopicRecord v0: name, topic id, no tagged fields
    topic_record = bytes([1, 2, 0]) + fields  # frame version 1, api key 2, version 0
    path = _internal_topic_log(tmp_path, [(None, topic_record), (None, bytes([0, 2, 0])), (None, b"\xff")])
    lines = _payloads(path, "--cluster-metadata-decoder")
    assert lines[0] == (
        '| payload: {"frameVersion":1,"apiKey":2,"type":"TopicRecord","version":0,'
        '"data":{"name":"abc","topicId":"AAAAAAAAAAAAAAAAAAAAAA"}}'
    )  # every field by name, by the release's own TopicRecord definition (tests/test_dump_metadata.py)
    assert lines[1] == "| payload: <not decoded at offset 1: frame version 0; only 1 is in use>"
    assert lines[2] == "| payload: <not decoded at offset 2: 1 bytes wanted at byte 1, 0 left>"


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=120)))
def test_topic_decoders_take_any_bytes(key, value):
    """Every outcome is a value or a NotDecoded returned, never raised, and prints as one line."""
    for decode in TOPIC_DECODERS.values():
        for side in decode(key, value):
            text = dump._shown(side, 0)
            assert "\n" not in text and text.isprintable()
