"""Record-format conformance: the model and the implementation read the same bytes the same way.

Both sides are reduced to a :class:`ScanOutcome` — the shallow header of every valid batch, why the
scan stopped, the valid byte count and the error (kind, reason, position) — and compared field by
field.  ``impl_module`` is any module with impl's ``BatchScan`` interface, so the same checks run
against the mutants in ``tests/mutants/``.
"""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

import impl.file_records
from conformance.properties import BAD_INPUT, CONFORMS, PropertyViolation
from conformance.strategies import damaged_segments, segments
from model import compression as C
from model import records as R
from model.errors import RecordFormatError
from model.file_records import iterate_file

HEADER_FIELDS = (
    "position", "size", "offset", "last_offset", "magic", "crc", "attributes", "partition_leader_epoch",
    "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
    "base_sequence", "records_count",
)  # fmt: skip


@attrs.frozen
class ScanOutcome:
    headers: tuple[tuple, ...]  # one tuple of HEADER_FIELDS per valid batch
    stop: str
    valid_bytes: int
    error: tuple[str, str, int] | None  # (kind, reason, position)
    summary: tuple  # (stop, valid_bytes, batch count, error) of a scan that builds no headers


def model_outcome(data: bytes, start: int = 0, end: int | None = None) -> ScanOutcome:
    it = iterate_file(data, start, end)
    headers = tuple(tuple(getattr(b.header(), f) for f in HEADER_FIELDS) for b in it.batches)
    err = None if it.error is None else (it.error.kind, it.error.reason, it.error.position)
    return ScanOutcome(headers, it.stop, it.valid_bytes, err, (it.stop, it.valid_bytes, len(headers), err))


def impl_outcome(data, start: int = 0, end: int | None = None, impl_module=impl.file_records) -> ScanOutcome:
    def error_of(s):
        return None if s.error is None else (s.error.kind, s.error.reason, s.error.position)

    scan = impl_module.BatchScan(data, start, end)
    headers = tuple(tuple(getattr(h, f) for f in HEADER_FIELDS) for h in scan)
    fast = impl_module.BatchScan(data, start, end).run()  # the header-free recovery path
    summary = (fast.stop, fast.valid_bytes, fast.batches, error_of(fast))
    return ScanOutcome(headers, scan.stop, scan.valid_bytes, error_of(scan), summary)


def check_scan_conforms(data, start: int = 0, end: int | None = None, impl_module=impl.file_records) -> ScanOutcome:
    """Property ``conforms`` for a scan: raise PropertyViolation with a one-line witness."""
    expected = model_outcome(bytes(data), start, end)
    try:
        actual = impl_outcome(data, start, end, impl_module)
    except Exception as e:  # noqa: BLE001 - any escape is itself the finding
        raise PropertyViolation(BAD_INPUT, f"impl scan raised {type(e).__name__}: {e} on {len(data)} bytes") from e
    if actual == expected:
        return expected
    raise PropertyViolation(CONFORMS, _first_difference(expected, actual))


def _first_difference(expected: ScanOutcome, actual: ScanOutcome) -> str:
    for i, (e, a) in enumerate(zip(expected.headers, actual.headers, strict=False)):
        if e != a:
            for name, ev, av in zip(HEADER_FIELDS, e, a, strict=True):
                if ev != av:
                    return f"batch {i} at byte position {e[0]}: {name} is {av} in impl, {ev} in model"
    if len(expected.headers) != len(actual.headers):
        return (
            f"impl returns {len(actual.headers)} valid batches, model {len(expected.headers)} "
            f"(impl stops at {actual.valid_bytes} with {actual.stop}, model at {expected.valid_bytes} with {expected.stop})"
        )
    if expected.summary != actual.summary and (expected.stop, expected.valid_bytes) == (
        actual.stop,
        actual.valid_bytes,
    ):
        return f"impl's header-free scan ends as {actual.summary}, model as {expected.summary}"
    return (
        f"scan end differs: impl stops at byte {actual.valid_bytes} ({actual.stop}, {actual.error}), "
        f"model at byte {expected.valid_bytes} ({expected.stop}, {expected.error})"
    )


def check_deep_decode_declared(data: bytes) -> None:
    """Property ``bad-input`` for deep iteration: every valid batch decodes to records or raises
    the declared RecordFormatError — never another exception."""
    for batch in iterate_file(data).batches:
        try:
            batch.records(max_output=1 << 20)
        except RecordFormatError:
            pass
        except Exception as e:  # noqa: BLE001
            raise PropertyViolation(
                BAD_INPUT,
                f"deep iteration of the batch at byte position {batch.position} raised {type(e).__name__}: {e}",
            ) from e


# --- the format checks, each runnable against any impl-like module ------------------------------
#
# Each check raises PropertyViolation on the first disagreement (Hypothesis shrinks it first, so the
# witness is minimal).  tests/test_formats_conformance.py runs them against ``impl``;
# tests/test_mutants.py runs them against every mutant and requires a violation.


def spec_vector_segment() -> bytes:
    """The three worked byte examples of spec §1.12, back to back (v2, v1, v0 at offset 0)."""
    return bytes.fromhex(
        "0000000000000000" "00000039" "00000000" "02" "ebf1884b" "0000" "00000000" "00000000000003e8"
        "00000000000003e8" "ffffffffffffffff" "ffff" "ffffffff" "00000001" "0e00000001026100"
        "0000000000000000" "00000017" "8a65e96d" "01" "00" "00000000000003e8" "ffffffff" "00000001" "61"
        "0000000000000000" "0000000f" "51df3a32" "00" "00" "ffffffff" "00000001" "61"
    )  # fmt: skip


def mixed_reference_segment() -> bytes:
    """A small fixed segment with every magic, compressed and not, for exhaustive damage sweeps."""
    parts = [
        R.build_batch_v2(0, [(1000, b"k", b"v0"), (1001, None, b"v1")], partition_leader_epoch=3),
        R.encode_legacy_message(1, 2, b"key", b"legacy-v1", 1002),
        R.encode_legacy_message(0, 3, None, b"legacy-v0"),
        R.build_legacy_wrapper(1, C.GZIP, 5, [(1003, None, b"a"), (1004, b"b", b"c")]),
        R.build_batch_v2(6, [(1005, None, b"x" * 40)], codec=C.LZ4, producer_id=9, producer_epoch=1, base_sequence=0),
        R.build_control_batch(7, 1, 1006, producer_id=9, producer_epoch=1),
    ]
    return b"".join(parts)


def check_spec_vectors(impl_module=impl.file_records) -> None:
    """§1.12: the worked examples scan to the documented fields (and model agrees)."""
    data = spec_vector_segment()
    outcome = check_scan_conforms(data, impl_module=impl_module)
    want = [(0, 69, 0, 0, 2, 0xEBF1884B), (69, 35, 0, 0, 1, 0x8A65E96D), (104, 27, 0, 0, 0, 0x51DF3A32)]
    got = [h[:6] for h in outcome.headers]
    if got != want or outcome.stop != "end":
        raise PropertyViolation(CONFORMS, f"spec §1.12 vectors scan as {got} ({outcome.stop}), expected {want}")


def check_cut_everywhere(impl_module=impl.file_records) -> None:
    """A torn write can end the file at any byte: cut the reference segment at every length, and
    also zero-fill or junk-fill the lost part (page cache lost after the size was persisted)."""
    data = mixed_reference_segment()
    for n in range(len(data) + 1):
        check_scan_conforms(data[:n], impl_module=impl_module)
        check_scan_conforms(data[:n] + bytes(len(data) - n), impl_module=impl_module)
        check_scan_conforms(data[:n] + b"\xa5" * (len(data) - n), impl_module=impl_module)


def check_tail_lengths(impl_module=impl.file_records) -> None:
    """§1.10 rule 1 exactly: 1–17 trailing bytes are never examined; 18 are."""
    data = spec_vector_segment()
    for tail in range(0, 40):
        for fill in (b"\x00", b"\xff", b"\x7f"):
            check_scan_conforms(data + fill * tail, impl_module=impl_module)
    # and in a window: a scan bounded by ``end`` stops by the same rule
    for end in range(len(data) + 1):
        check_scan_conforms(data, 0, end, impl_module=impl_module)


def _hypothesis_check(strategy, impl_module) -> None:
    @settings(report_multiple_bugs=False)
    @given(strategy)
    def run(data: bytes) -> None:
        check_scan_conforms(data, impl_module=impl_module)

    run()


def check_generated_segments(impl_module=impl.file_records) -> None:
    """Model-encoded segments (all magics, codecs, edge values) scan identically."""
    _hypothesis_check(segments(), impl_module)


def check_damaged_segments(impl_module=impl.file_records) -> None:
    """Damaged segments give the same valid prefix, stop reason and error kind."""
    _hypothesis_check(damaged_segments(), impl_module)


def check_arbitrary_bytes(impl_module=impl.file_records) -> None:
    """Any bytes at all: same outcome, and only declared errors."""
    _hypothesis_check(st.binary(max_size=512), impl_module)


FORMAT_CHECKS = {
    "spec-vectors": check_spec_vectors,
    "cut-everywhere": check_cut_everywhere,
    "tail-lengths": check_tail_lengths,
    "generated-segments": check_generated_segments,
    "damaged-segments": check_damaged_segments,
    "arbitrary-bytes": check_arbitrary_bytes,
}
