"""Splitting an overflowed segment and installing new segments crash-safely (spec §5.5
``splitOverflowedSegment``, §4.11 ``appendFromFile``, §5.9 ``replaceSegments``; KAFKA-6264, §7.9).

A segment an old broker wrote may hold offsets above base + 2^31−1 (KAFKA-4451, KAFKA-5413); its
recovery raises :class:`impl.segment.LogSegmentOffsetOverflow` and the loader splits it: the batches
are copied byte for byte into ``.cleaned`` segments, each starting at a batch's base offset with the
longest run of batches whose last offsets fit relative to it, made inactive, flushed, stamped with
the original's mtime, and installed by :func:`replace_segments` — rename the new segments
``.cleaned`` → ``.swap`` in descending base order, rename the old ones ``.deleted`` (deleted later),
rename ``.swap`` → final in ascending order, fsync the directory.  A crash anywhere in between
leaves files the loader's swap rules (§5.2 steps 1–4) either roll back or complete.

The source is walked by framing alone (no CRC check), as Kafka's ``batchesFrom`` iterator does: a
batch recovery would reject is copied too, and the recovery that follows the split cuts it.
"""

from __future__ import annotations

from collections.abc import Callable

from impl.errors import LogFormatError
from impl.file_records import BatchHeader, BatchScan
from impl.record_walk import base_offset
from impl.segment import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX, LogSegment

READ_BUFFER = 1024 * 1024  # appendChunkFromFile's initial read buffer (§4.11)


class SplitError(Exception):
    """The split cannot run (Kafka: IllegalArgumentException / IllegalStateException /
    NoSuchElementException, failing the load); names the byte position in the segment's log."""

    def __init__(self, kind: str, position: int, message: str):
        self.kind, self.position = kind, position
        super().__init__(f"{kind} at byte {position}: {message}")


def _batches(view) -> tuple[list[BatchHeader], int]:
    """Every batch of ``view`` by §1.10's framing rules alone (no CRC check), and where they end."""
    scan = BatchScan(view, check_crc=False)
    headers = list(scan)
    if scan.error is not None:
        raise SplitError(scan.error.kind, scan.error.position, scan.error.detail)
    return headers, scan.valid_bytes


def _base_offset(view, h: BatchHeader) -> int:
    """RecordBatch.baseOffset(): a legacy compressed wrapper's is its first inner record's (§1.7)."""
    try:
        return base_offset(view, h)
    except LogFormatError as e:
        raise SplitError(e.kind, h.position, f"the base offset of the wrapper is unreadable: {e}") from None


def has_overflow(segment: LogSegment, batches: list[BatchHeader]) -> bool:
    """§4.5 rule 4 right after a recovery reset the offset index: the next offset (the last
    batch's last offset + 1, framing only, from position 0) is above the segment's base and its
    predecessor does not fit the base."""
    if not batches:
        return False
    next_offset = batches[-1].last_offset + 1
    return next_offset > segment.base_offset and not segment.can_convert_to_relative_offset(next_offset - 1)


def split_overflowed_segment(segment: LogSegment, new_cleaned: Callable[[int], LogSegment]) -> list[LogSegment]:
    """§5.5 steps 1–3: the new ``.cleaned`` segments holding ``segment``'s batches, made inactive,
    flushed and stamped with its mtime (not yet installed: :func:`replace_segments`).  On any
    failure the new segments' files are deleted and the error propagates."""
    if not segment.log_path.endswith(".log"):
        raise SplitError("IllegalArgumentException", 0, f"cannot split {segment.log_path}")
    view = segment.view()
    batches, end = _batches(view)
    if not has_overflow(segment, batches):
        raise SplitError("IllegalArgumentException", 0, "split is only permitted for segments with overflow")
    created: list[LogSegment] = []
    try:
        i = 0
        while i < len(batches):
            new = new_cleaned(_base_offset(view, batches[i]))
            created.append(new)
            appended = _append_from_file(new, view, batches, i)
            if appended == 0:
                raise SplitError("IllegalStateException", batches[i].position, "failed to append records")
            i += appended
        if end != segment.size:
            raise SplitError("NoSuchElementException", end, "no complete batch where the log continues")
        mtime = segment.storage.mtime_ms(segment.log_path)
        for new in created:
            new.on_become_inactive()
            new.flush()
            new.storage.set_mtime_ms(new.log_path, mtime)
        return created
    except BaseException as e:
        if isinstance(e, SplitError) and e.kind == "SnappyError":
            # a java.lang.Error: the split's catch (Exception) does not run, its files stay
            for new in created:
                new.close_handlers()
            raise
        for new in created:
            new.delete_if_exists()
        raise


def _append_from_file(seg: LogSegment, view, batches: list[BatchHeader], start: int) -> int:
    """§4.11: chunks of consecutive batches whose last offsets fit ``seg``, each at most the read
    buffer (the first always goes; the buffer grows to hold it for the rest of the call)."""
    i, capacity = start, READ_BUFFER
    while i < len(batches):
        j, size = i, 0
        while j < len(batches):
            b = batches[j]
            if not seg.can_convert_to_relative_offset(b.last_offset) or (size and size + b.size >= capacity):
                break
            size += b.size
            j += 1
        if j == i:
            break
        capacity = max(capacity, size)
        first = batches[i].position
        seg.append(batches[j - 1].last_offset, bytes(view[first : first + size]))
        i = j
    return i - start


def replace_segments(
    segments: dict[int, LogSegment],
    new: list[LogSegment],
    old: list[LogSegment],
    delete_later: Callable[[LogSegment], None],
) -> list[LogSegment]:
    """§5.9 replaceSegments for new segments still ``.cleaned``: the map ``segments`` (base →
    segment) gets the new ones and loses the old ones; the old ones found in it are renamed
    ``.deleted`` and handed to ``delete_later``, which schedules their deletion.  The order of the renames is what makes a crash
    safe (module docstring).  Returns the old segments no new one replaces (Kafka's
    ``deletedNotReplaced``: their producer snapshots go too, docs/producer-state.md rule 29)."""
    new = sorted(new, key=lambda s: s.base_offset)
    old = sorted((s for s in old if segments.get(s.base_offset) is s), key=lambda s: s.base_offset)
    if new:
        # Better than Kafka: the new files' directory entries durable before any rename.  Their
        # data was flushed, but a created name is only durable once its directory is; a file
        # system that persists a later rename and loses an earlier creation can otherwise keep a
        # segment's .index.swap without its .log.cleaned or .log.swap — no .cleaned left to make
        # it invalid, no .log.swap to bound a range — and the load renames the cleaned segment's
        # index over the original's (pinned by the cleaning sweep of tests/test_crash_exhaustive.py).
        new[0].storage.fsync_dir(new[0].dir)
    for segment in reversed(new):
        segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
        # Better than Kafka: each rename made durable before the next.  The loader's rule (a .swap
        # at or above the smallest .cleaned is invalid) holds only if the renames reach the disk in
        # order; Kafka relies on ordered metadata journaling.  A file system that persists a later
        # rename but not an earlier one (the crash images' reorder family) otherwise leaves a low
        # .swap valid next to a higher .cleaned: the load completes the swap, deletes the original
        # and the higher segments' data is lost (pinned by the split sweep of tests/test_crash_exhaustive.py).
        segment.storage.fsync_dir(segment.dir)
        segments[segment.base_offset] = segment
    for segment in old:
        if segment.base_offset != new[0].base_offset:
            segments.pop(segment.base_offset, None)  # by key, as Kafka's LogSegments.remove
        segment.change_file_suffixes("", DELETED_SUFFIX)
        delete_later(segment)
    if old:
        # Better than Kafka, as above: once a .swap is renamed final no .log.swap bounds the range
        # of originals the loader deletes, so an original whose .deleted rename was lost would
        # come back next to (overlapping) the new segment (pinned by the cleaning sweep)
        old[0].storage.fsync_dir(old[0].dir)
    for segment in new:
        segment.change_file_suffixes(SWAP_SUFFIX, "")
        # Better than Kafka, as above: the loader computes the range of originals to delete from
        # the .log.swap files left; a higher segment renamed final while a lower one's rename was
        # lost would fall inside that range and be deleted.
        segment.storage.fsync_dir(segment.dir)
    if new:
        new[0].storage.fsync_dir(new[0].dir)
    bases = {s.base_offset for s in new}
    return [s for s in old if s.base_offset not in bases]
