"""Splitting a segment whose offsets overflow its base offset (spec §5.5 ``splitOverflowedSegment``,
§4.11 ``appendFromFile``; KAFKA-6264, §7.9).

Before 0.10.2.2/0.11.0 a roll (KAFKA-4451) or the log cleaner (KAFKA-5413) could write a segment
holding offsets above base + 2^31−1, which its indexes cannot store as relative offsets.  Since 2.0
a recovery of such a segment raises LogSegmentOffsetOverflowException and the loader splits it: the
batches are copied, in order and byte for byte, into new segments, each starting at a batch's base
offset and holding the longest run of batches whose last offsets fit relative to it.  The new
segments are written with the ``.cleaned`` suffix, made inactive (final time-index entry, trimmed
files), flushed, given the original's mtime and installed by ``replaceSegments`` (§5.9) — that part,
which touches the directory, is the loader's (:meth:`model.loader.LogLoader.retry_on_offset_overflow`).

Pure: :func:`split` returns the new segments and never changes the original.
"""

from __future__ import annotations

from collections.abc import Callable

from model.errors import RecordFormatError
from model.file_records import framed_batches
from model.records import Batch
from model.segment import Segment

READ_BUFFER = 1024 * 1024  # appendChunkFromFile's initial read buffer (§4.11)


class SplitError(Exception):
    """The split cannot run (Kafka: IllegalArgumentException / IllegalStateException /
    NoSuchElementException, which fail the load); ``position`` is a byte position in the segment's log."""

    def __init__(self, kind: str, position: int, message: str):
        self.kind, self.position = kind, position
        self.made: list[Segment] = []  # new segments whose files a failure leaves (see :func:`split`)
        super().__init__(f"{kind} at byte {position}: {message}")


def _framed(data: bytes) -> tuple[list[Batch], int]:
    """The batches of ``data`` by framing alone (:func:`model.file_records.framed_batches`) and
    where they end; the framing errors it raises become the split's."""
    try:
        batches = list(framed_batches(data))
    except RecordFormatError as e:
        raise SplitError(e.kind, e.position, str(e)) from None
    return batches, (batches[-1].position + batches[-1].size if batches else 0)


def has_overflow(seg: Segment, batches: list[Batch]) -> bool:
    """§4.5 rule 4, as the loader asks it right after a recovery reset the offset index: the next
    offset from a scan of the whole file (framing only, no CRC check) is above the base offset and,
    minus one, does not fit.  A last batch below the base (its base offset damaged) is no overflow:
    the split refuses and the load fails (pinned by corpora/found/conforms-3e0ae28da8)."""
    if not batches:
        return False
    last = batches[-1].header().last_offset
    return last + 1 > seg.base_offset and not seg.fits(last)


def split(seg: Segment, new_segment: Callable[[int], Segment], now_ms: int) -> list[Segment]:
    """The new segments that replace ``seg`` (§5.5 steps 1–3), not yet installed.

    ``new_segment(base)`` makes an empty segment at ``base`` (the ``.cleaned`` one).  Raises
    :class:`SplitError` where Kafka's split throws."""
    data = bytes(seg.log)
    batches, end = _framed(data)
    if not has_overflow(seg, batches):
        raise SplitError("IllegalArgumentException", 0, "split is only permitted for segments with overflow")
    out: list[Segment] = []
    i = 0
    while i < len(batches):
        try:
            new = new_segment(batches[i].base_offset())
        except RecordFormatError as e:
            error = SplitError(e.kind, batches[i].position, f"the base offset of the batch is unreadable: {e}")
            error.made = out  # the new segments so far: an Error skips the cleanup that deletes them
            raise error from None
        out.append(new)
        appended = _append_from_file(new, batches, i, now_ms)
        if appended == 0:
            raise SplitError("IllegalStateException", batches[i].position, "failed to append records")
        i += appended
    if end != len(data):
        # batchesFrom(position).iterator().next() finds no batch where bytes remain
        raise SplitError("NoSuchElementException", end, "no complete batch where the log continues")
    for new in out:
        new.on_become_inactive()
        new.mtime_ms = seg.mtime_ms
    return out


def _append_from_file(seg: Segment, batches: list[Batch], start: int, now_ms: int) -> int:
    """§4.11: append chunks of consecutive batches from ``batches[start]`` while their last offsets
    fit ``seg``'s base; returns how many batches were appended.  A chunk fits the read buffer (the
    first batch always goes, and the buffer grows to hold it — for the rest of this call)."""
    i, capacity = start, READ_BUFFER
    while i < len(batches):
        chunk: list[Batch] = []
        size = 0
        while i + len(chunk) < len(batches):
            b = batches[i + len(chunk)]
            if not seg.fits(b.header().last_offset) or (size and size + b.size >= capacity):
                break
            chunk.append(b)
            size += b.size
        if not chunk:
            break
        capacity = max(capacity, size)
        seg.append(chunk[-1].header().last_offset, b"".join(b.raw for b in chunk), now_ms)
        i += len(chunk)
    return i - start
