"""``klc dump`` records streamed one at a time, and the kafka-dump-log options: --max-bytes,
--skip-record-metadata, printable output, key/value decoders, the internal-topic decoders."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from conformance import dump
from conformance.cli import main
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
