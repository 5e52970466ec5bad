"""Zero-copy scanning of record batches in any buffer (spec §1.9, §1.10, §4.6 step 3a).

:class:`BatchScan` walks a ``bytes``/``memoryview``/``mmap`` without copying batch bytes: it reads
each header with ``struct.unpack_from`` at the batch position and checks the CRC with ``crc32c``
(CRC-32C, v2) or ``zlib.crc32`` (CRC-32, v0/v1) over a memoryview slice of exactly the batch — the
only per-batch allocation is the :class:`BatchHeader` tuple it yields.  It stops exactly where
Kafka's file iteration plus ``ensureValid`` stops, and says why:

* ``end`` — the scan reached ``end``;
* ``short-tail`` — 1…17 bytes remain, never examined (§1.10 rule 1);
* ``torn`` — a header declares a batch running past ``end`` (rule 5);
* ``corrupt`` — size field < 14 (rule 4), a v2 batch under 61 bytes, or a CRC mismatch (§1.9);
  ``error`` is a :class:`LogFormatError` with the Kafka exception kind and the position.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple

from crc32c import crc32c

from impl.errors import LogFormatError

CORRUPT_RECORD = "CorruptRecordException"
END, SHORT_TAIL, TORN, CORRUPT = "end", "short-tail", "torn", "corrupt"

_V2_HEADER_SIZE = 61
_MIN_SIZE_FIELD = 14  # RECORD_OVERHEAD_V0

_size_at = struct.Struct(">i").unpack_from
_v2_header = struct.Struct(">qiibIhiqqqhii").unpack_from  # the whole 61-byte v2 header, §1.2
_legacy_header = struct.Struct(">qxxxxIbb").unpack_from  # offset, crc, magic, attributes
_int64_at = struct.Struct(">q").unpack_from
_u32_at = struct.Struct(">I").unpack_from


class BatchHeader(NamedTuple):
    """Shallow view of one batch; legacy batches carry Kafka's sentinels in the v2-only fields
    (−1, with records_count −1 meaning "unknown" and timestamps from the v1 message, §1.7)."""

    position: int
    size: int
    offset: int
    last_offset: int
    magic: int
    crc: int
    attributes: int
    partition_leader_epoch: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


_new_header = tuple.__new__


class BatchScan:
    """Iterate the valid batches of ``buf[start:end]``; afterwards ``stop``, ``valid_bytes`` and
    ``error`` tell how the scan ended.  One pass, no copies, bounded memory whatever the sizes
    claimed by the data."""

    __slots__ = ("_buf", "start", "end", "stop", "valid_bytes", "error", "batches", "bytes_checked", "check_crc")

    def __init__(self, buf, start: int = 0, end: int | None = None, check_crc: bool = True):
        with memoryview(buf) as m:
            n = m.nbytes  # bytes, whatever the item size of the buffer
        self._buf = buf
        self.start = start
        self.end = n if end is None else min(end, n)
        self.stop: str | None = None
        self.valid_bytes = start
        self.error: LogFormatError | None = None
        self.batches = 0
        self.bytes_checked = 0
        self.check_crc = check_crc  # False: framing only, as Kafka's batchesFrom iterator (§1.10)

    def __iter__(self) -> Iterator[BatchHeader]:
        return self._scan(True)

    def run(self) -> BatchScan:
        """Scan to the end without building headers (the recovery path) and return self."""
        for _ in self._scan(False):
            pass  # pragma: no cover - yields nothing without headers
        return self

    def _scan(self, want_headers: bool) -> Iterator[BatchHeader]:
        """The one scanning loop (§1.10 rules 1, 4, 5, 6 and §1.9), yielding headers if wanted."""
        end = self.end
        pos = self.start
        last_header_start = end - 17  # §1.10 rule 1: a tail of 17 bytes or fewer is not examined
        count = 0
        check_crc = self.check_crc
        exported = memoryview(self._buf)
        mv = exported if exported.format == "B" and exported.ndim == 1 else exported.cast("B")
        try:
            while pos < last_header_start:
                size = _size_at(mv, pos + 8)[0]
                if size < _MIN_SIZE_FIELD:  # rule 4
                    self._fail(
                        pos, "size-below-minimum", f"Found record size {size} smaller than minimum record overhead (14)"
                    )
                    return
                total = size + 12
                if pos > end - total:  # rule 5: torn write, end of data
                    self.stop = TORN
                    return
                magic = mv[pos + 16]
                if magic < 2 or magic > 127:  # legacy: magic 0, 1 or negative (§1.10 rule 6)
                    crc = _u32_at(mv, pos + 12)[0]
                    computed = zlib.crc32(mv[pos + 16 : pos + total]) if check_crc else crc
                    if computed != crc:
                        self._crc_fail(pos, crc, computed)
                        return
                    if want_headers:
                        offset, crc, magic, attributes = _legacy_header(mv, pos)
                        ts = _int64_at(mv, pos + 18)[0] if magic == 1 else -1
                        header = _new_header(
                            BatchHeader,
                            (pos, total, offset, offset, magic, crc, attributes, -1, -1, ts, ts, -1, -1, -1, -1),
                        )
                else:
                    if total < _V2_HEADER_SIZE:
                        self._fail(
                            pos,
                            "batch-too-small",
                            f"record batch size {total} is smaller than the minimum allowed overhead 61",
                        )
                        return
                    crc = _u32_at(mv, pos + 17)[0]
                    computed = crc32c(mv[pos + 21 : pos + total]) if check_crc else crc
                    if computed != crc:
                        self._crc_fail(pos, crc, computed)
                        return
                    if want_headers:
                        base, _, ple, magic, crc, attributes, lod, bts, mts, pid, pep, bseq, cnt = _v2_header(mv, pos)
                        header = _new_header(
                            BatchHeader,
                            (
                                pos,
                                total,
                                base,
                                base + lod,
                                magic,
                                crc,
                                attributes,
                                ple,
                                lod,
                                bts,
                                mts,
                                pid,
                                pep,
                                bseq,
                                cnt,
                            ),
                        )
                pos += total
                count += 1
                if want_headers:
                    self.valid_bytes = pos
                    yield header
            self.stop = END if pos >= end else SHORT_TAIL
        finally:
            self.valid_bytes = pos
            self.batches = count
            self.bytes_checked = pos - self.start
            mv.release()
            exported.release()  # so that an mmap can be closed as soon as the scan ends

    def _crc_fail(self, pos: int, stored: int, computed: int) -> None:
        self._fail(pos, "crc-mismatch", f"stored crc {stored} does not match computed crc {computed}")

    def _fail(self, pos: int, reason: str, detail: str) -> None:
        self.stop = CORRUPT
        self.error = LogFormatError(CORRUPT_RECORD, reason, pos, detail)


def has_producer(h) -> bool:
    """RecordBatch.hasProducerId: a v2 batch with a producer id."""
    return h.magic >= 2 and h.producer_id >= 0


def v2_header_at(buf, pos: int, total: int) -> BatchHeader:
    """The header :class:`BatchScan` yields for the valid v2 batch of ``total`` bytes at ``pos``
    (for a caller that walked the batch itself: recovery, impl.segment)."""
    base, _, ple, magic, crc, attributes, lod, bts, mts, pid, pep, bseq, cnt = _v2_header(buf, pos)
    fields = (pos, total, base, base + lod, magic, crc, attributes, ple, lod, bts, mts, pid, pep, bseq, cnt)
    return _new_header(BatchHeader, fields)


def scan(buf, start: int = 0, end: int | None = None) -> tuple[list[BatchHeader], BatchScan]:
    """Convenience: every header plus the finished scan."""
    s = BatchScan(buf, start, end)
    return list(s), s
