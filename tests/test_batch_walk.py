"""The compiled batch walk (impl/_batch_walk.c) against the pure-Python loop it replaces, its oracle.

``LogSegment.recover`` with ``impl._batch_walk`` and with the Python loop alone (the fallback where
the extension is absent) must leave exactly the same outcome on any segment bytes: the bytes
truncated or the exception, both index files' bytes, the max timestamp, the producers' headers,
the map end, the leader epochs and the bytes counted.  Segments are drawn by Hypothesis from real
batches (v2 with and without producer ids, control batches, epochs that rise, timestamps that fall,
legacy messages, offsets past the base's int32 range) and then torn, cut, bit-flipped or followed
by junk, under small and default index intervals and index sizes."""

from __future__ import annotations

import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import impl.segment
from impl.config import LogConfig
from model.records import build_batch_v2, build_control_batch, encode_legacy_message
from tests.test_recovery_rebuild import T, _outcome


def _recover(seg, cache):
    try:
        return seg.recover(cache)
    except Exception as e:  # any refusal, the same on both paths
        return ("raised", type(e).__name__, str(e))

def test_the_extension_is_built():
    """setup.py builds it on ``pip install -e .``; without it the oracle below compares the Python
    loop with itself, so its absence is a failure here, not a skip."""
    assert impl.segment.COMPILED_WALK, "impl._batch_walk is not built: run pip install -e . with a C compiler"


@st.composite
def _batch(draw, base: int) -> tuple[bytes, int]:
    """One batch at ``base`` and the next offset."""
    kind = draw(st.sampled_from(["v2", "v2", "v2", "producer", "control", "legacy"]))
    ts = T + draw(st.integers(-50, 50))
    epoch = draw(st.sampled_from([-1, 0, 0, 1, 2, 5]))
    if kind == "legacy":
        magic = draw(st.sampled_from([0, 1]))
        return encode_legacy_message(magic, base, b"k", b"v" * draw(st.integers(0, 300)), ts), base + 1
    if kind == "control":
        return build_control_batch(base, draw(st.sampled_from([0, 1])), ts, producer_id=7, producer_epoch=0,
                                   partition_leader_epoch=epoch), base + 1  # fmt: skip
    n = draw(st.integers(1, 5))
    records = [(ts + draw(st.integers(-3, 3)), b"k", b"v" * draw(st.integers(0, 400))) for _ in range(n)]
    fields = {}
    if kind == "producer":
        fields = {"producer_id": draw(st.sampled_from([0, 7, 2**40])), "producer_epoch": 0, "base_sequence": base % 2**31}
    return build_batch_v2(base, records, partition_leader_epoch=epoch, **fields), base + n


@st.composite
def _segment(draw) -> tuple[bytes, int]:
    """(segment bytes, base offset): batches, then at most one damage."""
    base = draw(st.sampled_from([0, 0, 100]))
    offset, out = base, bytearray()
    for _ in range(draw(st.integers(0, 25))):
        if draw(st.integers(0, 20)) == 0:
            offset += draw(st.sampled_from([-10, 2**31, 2**63 - 2 - offset]))  # overlap, overflow, int64's end
        batch, offset = draw(_batch(max(offset, -(2**63)) if offset < 2**63 else 0))
        out += batch
    damage = draw(st.sampled_from(["none", "cut", "flip", "flip", "junk", "zeros"]))
    if out and damage == "cut":
        del out[draw(st.integers(0, len(out) - 1)) :]
    elif out and damage == "flip":
        i = draw(st.integers(0, len(out) - 1))
        out[i] ^= 1 << draw(st.integers(0, 7))
    elif damage == "junk":
        out += draw(st.binary(min_size=1, max_size=120))
    elif damage == "zeros":
        out += bytes(draw(st.integers(1, 100)))
    return bytes(out), base


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_segment(), st.sampled_from([0, 100, 4096]), st.sampled_from([10 * 1024 * 1024, 64, 120]))
def test_compiled_walk_gives_the_python_loops_outcome(segment, interval, index_bytes):
    log, base = segment
    config = LogConfig(index_interval_bytes=interval, segment_index_bytes=index_bytes)
    compiled, python = _both(log, config, base)
    assert compiled == python


def _both(log: bytes, config: LogConfig, base: int = 0) -> tuple[dict, dict]:
    compiled = _outcome(log, _recover, config, base)
    saved, impl.segment._compiled_walk = impl.segment._compiled_walk, None
    try:
        return compiled, _outcome(log, _recover, config, base)
    finally:
        impl.segment._compiled_walk = saved


def test_a_flipped_bit_midway_stops_both_at_its_batch():
    """The walk's own CRC check decides: a bit flipped in the 11th of 20 plain batches."""
    batches = [build_batch_v2(3 * i, [(T + i, b"k", b"v" * 200)] * 3, partition_leader_epoch=0) for i in range(20)]
    log = bytearray(b"".join(batches))
    at = sum(map(len, batches[:10]))
    log[at + 100] ^= 4
    compiled, python = _both(bytes(log), LogConfig(index_interval_bytes=500))
    assert compiled == python
    assert compiled["result"] == len(log) - at and compiled["size"] == at


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=40_000), st.integers(0, 7))
def test_compiled_crc32c_is_crc32c(data, skip):
    from impl._batch_walk import crc32c as compiled_crc32c

    assert compiled_crc32c(memoryview(data)[skip:]) == crc32c.crc32c(data[skip:])


def _rebuild_scan(start: int, last: int | None):
    """The producer-state rebuild's read of a segment (``scan_batches``): the bytes read and the
    producer batches' headers handed on, or the refusal."""

    def scan(seg, cache):
        seen = []
        try:
            return seg.scan_batches(start, last, seen.append), seen
        except Exception as e:  # any refusal, the same on both paths
            return ("raised", type(e).__name__, str(e)), seen

    return scan


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_segment(), st.integers(0, 60), st.sampled_from([None, 0, 5, 30, 200]))
def test_compiled_framing_gives_the_python_loops_rebuild_scan(segment, start, last):
    """``impl._batch_walk.frame``, the rebuild's framing loop, against BatchScan's alone."""
    log, base = segment
    scan = _rebuild_scan(base + start, None if last is None else base + last)
    compiled = _outcome(log, scan, LogConfig(), base)
    saved, impl.segment._compiled_frame = impl.segment._compiled_frame, None
    try:
        python = _outcome(log, scan, LogConfig(), base)
    finally:
        impl.segment._compiled_frame = saved
    assert compiled == python


def test_the_framing_hands_over_producer_batches_in_runs(monkeypatch):
    """More producer batches than one compiled call holds: every one handed on, in log order."""
    monkeypatch.setattr(impl.segment, "_FRAMED_RUN", 3)
    batches = [build_batch_v2(i, [(T, b"k", b"v")], producer_id=7 if i % 3 else -1, producer_epoch=0,
                              base_sequence=i if i % 3 else -1) for i in range(20)]  # fmt: skip
    outcome = _outcome(b"".join(batches), _rebuild_scan(0, None), LogConfig())
    read, seen = outcome["result"]
    assert read == sum(map(len, batches))
    assert [h.offset for h in seen] == [i for i in range(20) if i % 3]
