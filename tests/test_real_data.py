"""Real broker data: every ``.log`` and ``.records`` file under ``../shared/real-data`` (its README.md
says what each dataset is).

(a) ``klc dump`` handles every file; (b) model and impl scan every file identically; (c) kafka-python,
an independent reader, agrees with the model on every batch it can decode; (d) the facts the README
states about the data hold.  Expectations come from the README, from the spec or from kafka-python —
never from our own output.
"""

from __future__ import annotations

import base64
import collections
import itertools
import json
import os
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.cli import main
from conformance.formats import check_scan_conforms
from impl.file_records import BatchScan
from model.file_records import iterate_file
from tests.kafka_python_view import (
    kp_batch_facts,
    kp_batches,
    kp_header,
    kp_records,
    model_batch_facts,
    model_records,
    our_header,
)

pytestmark = pytest.mark.realdata

SUFFIXES = (".log", ".records")
ITU = "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions"
MSC = "mscaldas2012__kafka-connect-spooldir/kafka-data"
SEGMENTIO = "segmentio__kafka-go/fetch-recordsets"
TULIOS = "tulios__kafkajs/fetch-recordsets"
DATASETS = (
    f"{ITU}/clean-2f57540f/kafka-data",
    f"{ITU}/live-aec5bda1/kafka-data",
    MSC,
    SEGMENTIO,
    TULIOS,
)  # README table
PARTIAL_SETS = "v2_response_partial_messages_many_partitions__"  # README: four sets that end inside a batch
SHORT_TAIL_SET = "v2_response_index_out_of_range"  # README: ends in a 9-byte partial header

# Spec vocabulary (§1.3, §1.6), written out here rather than imported from the model under test.
NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _list_files(real_data: Path) -> list[str]:
    if not real_data.is_dir():
        return []
    return sorted(
        p.relative_to(real_data).as_posix() for p in real_data.rglob("*") if p.is_file() and p.suffix in SUFFIXES
    )


def _collection_real_data() -> Path:
    """Parametrization needs the file list before fixtures exist: look where ``shared_dir`` looks
    (README "Tests": ``KLC_SHARED``, default ``../shared`` beside the checkout).
    ``test_parametrization_covers_every_file`` checks that the two agree."""
    default = Path(__file__).resolve().parent.parent.parent / "shared"
    return Path(os.environ.get("KLC_SHARED", default)).resolve() / "real-data"


FILES = _list_files(_collection_real_data())
NON_EMPTY = [f for f in FILES if (_collection_real_data() / f).stat().st_size > 0]


@pytest.fixture(scope="session")
def real_data(shared_dir) -> Path:
    return shared_dir / "real-data"


def _read(real_data: Path, rel: str) -> bytes:
    return (real_data / rel).read_bytes()


def test_parametrization_covers_every_file(real_data):
    assert _list_files(real_data) == FILES
    for dataset in DATASETS:
        assert any(f.startswith(dataset + "/") for f in FILES), f"no .log/.records file in {dataset}"


# --- (a) klc dump ----------------------------------------------------------------------------------


def _invoke(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None, f"klc dump raised {result.exception!r}"
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output.splitlines()


@pytest.mark.parametrize("rel", FILES)
def test_dump_deep_iteration(real_data, rel):
    path = real_data / rel
    lines = _invoke("dump", "--deep-iteration", str(path))
    assert lines[0] == f"Dumping {path}"
    it = iterate_file(path.read_bytes())
    batch_lines = [ln for ln in lines if ln.startswith(("baseOffset: ", "offset: "))]
    record_lines = [ln for ln in lines if ln.startswith("| offset: ")]
    assert len(batch_lines) == len(it.batches)
    assert len(record_lines) == sum(len(b.records()) for b in it.batches)
    assert not [ln for ln in lines if ln.startswith("Found invalid")]


@pytest.mark.parametrize("rel", FILES)
def test_dump_json_print_data_log(real_data, rel):
    path = real_data / rel
    data = path.read_bytes()
    objs = [json.loads(line) for line in _invoke("dump", "--json", "--print-data-log", str(path))]
    it = iterate_file(data)
    batches = [o for o in objs if o["type"] == "batch"]
    assert [o for o in objs if o["type"] == "error"] == []
    assert objs[-1] == {
        "type": "end", "file": str(path), "stop": it.stop, "valid_bytes": it.valid_bytes, "file_size": len(data),
        "batches": len(it.batches),
    }  # fmt: skip
    assert len(batches) == len(it.batches)
    for got, batch in zip(batches, it.batches, strict=True):
        h = batch.header()
        assert (got["position"], got["offset"], got["last_offset"], got["crc"]) == (
            h.position, h.offset, h.last_offset, h.crc,
        )  # fmt: skip
        # the raw bytes, not our reading of them: magic at 16, size field at 8 (§1.1)
        assert got["magic"] == struct.unpack_from(">b", data, h.position + 16)[0]
        assert got["size"] == 12 + struct.unpack_from(">i", data, h.position + 8)[0]
        assert [_dumped_record(r) for r in got["records"]] == [
            (r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records()
        ]


def _b64(j: dict | None) -> bytes | None:
    return None if j is None else base64.b64decode(j["base64"])


def _dumped_record(r: dict) -> tuple:
    headers = tuple((h["key"].encode("utf-8"), _b64(h["value"])) for h in r["headers"])
    return r["offset"], r["timestamp"], _b64(r["key"]), _b64(r["value"]), headers


# --- (b) model and impl agree ----------------------------------------------------------------------


@pytest.mark.parametrize("rel", FILES)
def test_model_and_impl_agree(real_data, rel):
    data = _read(real_data, rel)
    outcome = check_scan_conforms(data)
    assert check_scan_conforms(memoryview(bytearray(data))) == outcome
    positions = [h[0] for h in outcome.headers]
    # windows, as a reader of a slice sees them: from a later batch, and cut inside the last batch
    for start in sorted({positions[len(positions) // 2], positions[-1]} if positions else set()):
        check_scan_conforms(data, start)
    if outcome.valid_bytes > 0:
        check_scan_conforms(data, 0, outcome.valid_bytes - 1)


# --- (c) kafka-python agrees with the model ---------------------------------------------------------


@pytest.fixture(scope="session")
def kafka_python():
    pytest.importorskip("kafka.record")
    import kafka.codec
    from kafka.record.memory_records import MemoryRecords

    return MemoryRecords, kafka.codec


def _missing_codec(codec_module, magic: int, codec: int) -> str | None:
    """Why kafka-python cannot decode this batch here (a library it lacks), or None."""
    if codec == SNAPPY and not codec_module.has_snappy():
        return "snappy: python-snappy not installed"
    if codec == LZ4 and not codec_module.has_lz4():
        return "lz4: lz4 not installed"
    if codec == LZ4 and magic == 0 and codec_module.xxhash is None:
        return "lz4 magic 0: xxhash not installed"
    if codec == ZSTD and not codec_module.has_zstd():
        return "zstd: zstandard not installed"
    return None


def compare_with_kafka_python(kafka_python, data: bytes) -> collections.Counter:
    """Compare every valid batch (model) with kafka-python; count "compared" and each skip reason."""
    memory_records_cls, codec_module = kafka_python
    it = iterate_file(data)
    kbs, kp_valid_bytes = kp_batches(memory_records_cls, data)
    tail = len(data) - it.valid_bytes
    if it.stop in ("end", "torn") or (it.stop == "short-tail" and tail < 12):
        # kafka-python stops at the same place (it never examines fewer than 12 bytes, §1.10 rule 1
        # covers up to 17)
        assert len(kbs) == len(it.batches)
        assert kp_valid_bytes == it.valid_bytes
    assert len(kbs) >= len(it.batches)
    counts = collections.Counter()
    for batch, (pos, kb) in zip(it.batches, kbs, strict=False):  # kafka-python may read past a corrupt batch
        assert pos == batch.position
        reason = _missing_codec(codec_module, kb.magic, kb.compression_type)
        assert kb.validate_crc(), f"kafka-python rejects the CRC of the batch at {pos}"
        assert our_header(batch.header()) | model_batch_facts(batch) == kp_header(pos, kb) | kp_batch_facts(kb), (
            f"batch at {pos}"
        )
        if reason is not None:
            counts[reason] += 1
            continue
        assert model_records(batch) == kp_records(kb), f"records of the batch at {pos}"
        counts["compared"] += 1
    return counts


@pytest.mark.parametrize("rel", NON_EMPTY)
def test_kafka_python_agrees_with_model(real_data, kafka_python, rel):
    data = _read(real_data, rel)
    counts = compare_with_kafka_python(kafka_python, data)
    valid = len(iterate_file(data).batches)
    assert sum(counts.values()) == valid
    skipped = valid - counts["compared"]
    assert skipped <= valid // 10 + 1, f"kafka-python could not decode {skipped} of {valid} batches: {counts}"


def test_kafka_python_skips_are_few_and_explained(real_data, kafka_python):
    totals = collections.Counter()
    for rel in NON_EMPTY:
        totals += compare_with_kafka_python(kafka_python, _read(real_data, rel))
    skipped = sum(totals.values()) - totals["compared"]
    # every skip is a codec library kafka-python lacks here (by construction), and they are few
    assert skipped <= sum(totals.values()) // 20, totals
    # README: the tulios mixed-formats set alone has 1,614 batches
    assert totals["compared"] > 1614, totals


# --- (d) facts stated by the README ----------------------------------------------------------------


def _matching(fragment: str) -> list[str]:
    return [f for f in FILES if fragment in f]


def test_partial_message_sets_are_torn(real_data):
    sets = _matching(PARTIAL_SETS)
    assert len(sets) == 4
    for rel in sets:
        data = _read(real_data, rel)
        it, scan = iterate_file(data), BatchScan(data).run()
        assert it.stop == scan.stop == "torn", rel
        assert it.valid_bytes == scan.valid_bytes < len(data)
        # from the bytes (§1.10 rule 5): the batch header at the stop declares more than is left
        declared = 12 + struct.unpack_from(">i", data, it.valid_bytes + 8)[0]
        assert declared > len(data) - it.valid_bytes


def test_index_out_of_range_set_ends_in_a_9_byte_tail(real_data):
    (rel,) = _matching(SHORT_TAIL_SET)
    data = _read(real_data, rel)
    it, scan = iterate_file(data), BatchScan(data).run()
    assert it.stop == scan.stop == "short-tail"
    assert len(data) - it.valid_bytes == len(data) - scan.valid_bytes == 9
    assert it.batches


def test_no_other_file_has_a_torn_tail_or_corruption(real_data):
    """The README documents five sets with torn tails; every other file is whole."""
    documented = set(_matching(PARTIAL_SETS) + _matching(SHORT_TAIL_SET))
    assert len(documented) == 5
    for rel in FILES:
        it = iterate_file(_read(real_data, rel))
        assert (it.stop != "end") == (rel in documented), (rel, it.stop)
        assert it.error is None


@pytest.mark.parametrize("rel", NON_EMPTY)
def test_offsets_strictly_increase(real_data, rel):
    """A partition's offsets only grow: also the check that v1 wrappers (offset = last inner offset,
    README: segmentio's gzip v1 wrappers) and v0/v2 batches are read with the right offset rules."""
    offsets = [r.offset for b in iterate_file(_read(real_data, rel)).batches for r in b.records()]
    assert all(a < b for a, b in itertools.pairwise(offsets)), offsets


def test_ksql_command_topic_has_a_committed_transaction(real_data, kafka_python):
    rel = f"{ITU}/clean-2f57540f/kafka-data/_confluent-ksql-default__command_topic-0/00000000000000000000.log"
    batches = iterate_file(_read(real_data, rel)).batches
    data_batches = [b for b in batches if b.is_transactional and not b.is_control]
    commits = [b for b in batches if b.is_control and any(r.control_type == "COMMIT" for r in b.records())]
    assert data_batches and commits
    assert all(c.is_transactional for c in commits)
    # the marker ends the transaction of the same producer, after its data
    assert {b.header().producer_id for b in data_batches} & {c.header().producer_id for c in commits}
    assert min(b.header().offset for b in data_batches) < commits[-1].header().offset
    # kafka-python sees the same COMMIT marker
    kbs, _ = kp_batches(kafka_python[0], _read(real_data, rel))
    assert any(kb.is_control_batch and any(r.commit for r in kb) for _, kb in kbs)


def test_mscaldas_has_lz4_v2_batches_that_decode(real_data, kafka_python):
    lz4 = []
    for rel in [f for f in NON_EMPTY if f.startswith(MSC + "/")]:
        data = _read(real_data, rel)
        lz4 += [(rel, b) for b in iterate_file(data).batches if b.magic == 2 and b.codec == LZ4]
    assert lz4
    for _, b in lz4:
        assert b.records()
    if _missing_codec(kafka_python[1], 2, LZ4) is None:
        for rel, b in lz4:
            kbs, _ = kp_batches(kafka_python[0], b.raw)
            ((_, kb),) = kbs
            assert kb.compression_type == LZ4
            assert model_records(b) == kp_records(kb), rel


def _compressed_payload(b) -> bytes:
    """The compressed stream: after the 61-byte v2 header (§1.2), or a legacy wrapper's value (§1.7)."""
    if b.is_v2:
        return b.raw[61:]
    p = 18 if b.magic == 0 else 26
    key_length = struct.unpack_from(">i", b.raw, p)[0]
    return b.raw[p + 4 + max(key_length, 0) + 4 :]


def test_tulios_snappy_set_is_raw_snappy(real_data, kafka_python):
    (rel,) = _matching(f"{TULIOS}/v4_response_snappy")
    batches = [b for b in iterate_file(_read(real_data, rel)).batches if b.codec == SNAPPY]
    assert batches
    for b in batches:
        assert not _compressed_payload(b).startswith(XERIAL_MAGIC)  # README: raw snappy, not snappy-java's framing
        assert b.records()
    if _missing_codec(kafka_python[1], 2, SNAPPY) is None:
        assert compare_with_kafka_python(kafka_python, _read(real_data, rel))["compared"] >= len(batches)


def test_tulios_has_every_magic_and_gzip(real_data):
    batches = [b for rel in _matching(TULIOS + "/") for b in iterate_file(_read(real_data, rel)).batches]
    assert {b.magic for b in batches} >= {0, 1, 2}
    assert any(b.codec == GZIP for b in batches)


def test_tulios_mixed_formats_set(real_data):
    (rel,) = _matching(f"{TULIOS}/v4_response_mixed_formats")
    batches = iterate_file(_read(real_data, rel)).batches
    assert len(batches) == 1614  # README: 1,614 batches of interleaved v1/v2
    assert {b.magic for b in batches} == {1, 2}


def test_segmentio_mixes_v1_and_v2_and_has_gzip_v1_wrappers(real_data):
    per_file = [iterate_file(_read(real_data, rel)).batches for rel in _matching(SEGMENTIO + "/")]
    assert any({b.magic for b in batches} == {1, 2} for batches in per_file)
    wrappers = [b for batches in per_file for b in batches if b.magic == 1 and b.codec == GZIP]
    assert wrappers
    for w in wrappers:  # README: the wrapper's offset is the last inner offset
        assert w.records()[-1].offset == w.header().offset


def test_log_end_offsets_stated_in_the_readme(real_data):
    def log_end(rel: str) -> int:
        return iterate_file(_read(real_data, rel)).batches[-1].header().last_offset + 1

    # "_schemas-0 has a high watermark (42) beyond its log end (41)" (live snapshot)
    assert log_end(f"{ITU}/live-aec5bda1/kafka-data/_schemas-0/00000000000000000000.log") == 41
    # "recovery point < log end on 7 partitions (test10-0: 0 vs 8)"
    assert log_end(f"{MSC}/test10-0/00000000000000000000.log") == 8


def test_empty_active_segment_at_base_14(real_data):
    rel = f"{MSC}/_confluent-monitoring-0/00000000000000000014.log"
    path = real_data / rel
    assert path.stat().st_size == 0
    assert _invoke("dump", str(path)) == [f"Dumping {path}", "Log starting offset: 14"]
