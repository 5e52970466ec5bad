"""Indexes checked against their segment's log (spec §3.5, §4.5, §4.6, §7.3, §7.8).

Since KIP-263 Kafka never checks the indexes of segments it does not recover: a stale, padded or
corrupt index below the recovery point (or after a wrongly clean shutdown) is trusted, and a lookup
can return a position past the batch that holds the offset.  :mod:`impl.segment` keeps the
laziness (nothing is read until the first lookup) and adds one check on first use: a single scan of
the log (:func:`soundness_problem`) proves every entry sound — or lookups go through entries
rebuilt in memory as recovery would append them (:class:`ShadowIndexes`, §4.6), the files staying
Kafka's.  So a lookup never returns a wrong position.

Also here: Kafka's own ``--verify-index-only`` comparisons, for ``klc dump``.
"""

from __future__ import annotations

import bisect
from typing import NamedTuple

from impl.file_records import BatchScan


class IndexMismatch(NamedTuple):
    entry: int  # slot number
    key: int  # the entry's offset (offset index) or timestamp (time index)
    value: int  # its position (offset index) or offset (time index)
    found: int | None  # what the log holds there, None if nothing
    problem: str


def _first_batch_at(log, position: int):
    if position < 0 or position >= len(log):
        return None
    for header in BatchScan(log, position):
        return header
    return None


def verify_offset_index(index, log) -> list[IndexMismatch]:
    """Kafka's ``--verify-index-only`` rule: each entry's offset must be the last offset of the batch
    at its position; the walk stops at the first zero entry (offset == base after slot 0)."""
    out = []
    for i in range(index.entries):
        offset, position = index.entry(i)
        if offset == index.base_offset and i > 0:
            break
        batch = _first_batch_at(log, position)
        found = None if batch is None else batch.last_offset
        if found != offset:
            out.append(
                IndexMismatch(
                    i, offset, position, found, "no batch at this position" if batch is None else "offset mismatch"
                )
            )
    return out


def verify_time_index(time_index, offset_index, log) -> list[IndexMismatch]:
    """Kafka's ``--verify-index-only`` rule for ``.timeindex``: the batch found for each entry's
    offset must end at that offset and have that max timestamp; timestamps must increase."""
    out = []
    previous = -1
    for i in range(time_index.entries):
        timestamp, offset = time_index.entry(i)
        if offset == time_index.base_offset and i > 0:
            break
        position = offset_index.lookup(offset)[1]
        found = None
        for header in BatchScan(log, max(0, min(position, len(log)))):
            if header.last_offset >= offset:
                found = header
                break
        if found is None or found.last_offset != offset:
            out.append(
                IndexMismatch(i, timestamp, offset, None if found is None else found.last_offset, "offset not found")
            )
        elif found.max_timestamp != timestamp:
            out.append(IndexMismatch(i, timestamp, offset, found.max_timestamp, "timestamp mismatch"))
        if previous >= timestamp:
            out.append(IndexMismatch(i, timestamp, offset, previous, "timestamp out of order"))
        previous = timestamp
    return out


def soundness_problem(offset_index, time_index, log, inactive: bool) -> str | None:
    """One scan of the log; None if every lookup through these indexes is right.

    Offset entry (K, P): P is a batch boundary and that batch starts at or before K, and K lies in
    the log — then every batch before P ends before K, so a scan from P finds any target ≥ K.  Time
    entry (T, O): O lies in the log and every batch before the one holding O has a max timestamp
    below T — so a search for a timestamp ≥ T may start there.  For an inactive segment the last
    time entry must also carry the segment's max timestamp (§9.1.4), which retention reads."""
    starts: dict[int, int] = {}  # position → base offset of the batch there
    batches = []  # (first offset, last offset, max timestamp)
    for h in BatchScan(log, check_crc=False):
        first = h.offset if h.magic >= 2 else h.last_offset
        starts[h.position] = first
        batches.append((first, h.last_offset, h.max_timestamp))
    last_offset = batches[-1][1] if batches else None
    for i, (key, position) in enumerate(offset_index.logical_entries()):
        if position not in starts:
            return f"offset index entry {i} ({key}, {position}) does not point at a batch"
        if starts[position] > key or last_offset is None or key > last_offset:
            return f"offset index entry {i} ({key}, {position}) names an offset its batch does not reach"
    running_max, b = -1, 0
    for i, (timestamp, offset) in enumerate(time_index.logical_entries()):
        if last_offset is None or offset > last_offset:
            return f"time index entry {i} ({timestamp}, {offset}) is past the end of the log"
        while b < len(batches) and batches[b][1] < offset:
            running_max = max(running_max, batches[b][2])
            b += 1
        if running_max >= timestamp:
            return f"time index entry {i} ({timestamp}, {offset}): an earlier batch already reached {running_max}"
    if inactive and time_index.entries:
        # an empty time index is Kafka's own state after a truncation that removed the entry holding
        # the max timestamp (§4.7 step 7 reads it back as unknown): retention then uses the mtime.
        # An entry in a segment with no timestamp (all −1) is one Kafka never writes: a zeroed slot.
        segment_max = max((m for _, _, m in batches), default=-1)
        last = time_index.last_entry[0]
        if last != segment_max:
            return f"time index ends at {time_index.last_entry[0]}, the segment's max timestamp is {segment_max}"
    return None


class ShadowIndexes:
    """Sound lookup entries for a segment whose index files proved unsound: rebuilt in memory from
    one scan of the log, as recovery would append them (every ``index.interval.bytes``, §4.6), and
    used for lookups only.  The files, and every decision Kafka takes from them — when the segment
    rolls because an index is full (§4.3), which entries an append or a truncation writes, the max
    timestamp loaded from the last time entry (§4.1) — stay Kafka's, so the broker's state does not
    change because impl looked closer.

    Entries stay sound as the segment changes: an append adds batches after every entry, and
    :meth:`truncate_to` drops the entries at or past the cut.  ``content_max`` is the largest batch
    max timestamp in the log and the offset holding it (what lookups and retention go by)."""

    def __init__(self, log, base_offset: int, index_interval_bytes: int):
        self.base_offset = base_offset
        self._offsets: list[tuple[int, int]] = []  # (last offset of a batch, its position)
        self._times: list[tuple[int, int]] = []  # (max timestamp so far, offset holding it)
        self.content_max = (-1, base_offset)
        valid = last_entry = 0
        for h in BatchScan(log, check_crc=False):
            if h.max_timestamp > self.content_max[0]:
                self.content_max = (h.max_timestamp, h.last_offset)
            # lookups bisect the entries: a batch whose (damaged) offset lies below the segment's
            # base or not above the last entry gets none — Kafka's index append refuses both
            # (§3.2; pinned by corpora/found/conforms-53e7004eac)
            ordered = h.last_offset >= base_offset and (not self._offsets or h.last_offset > self._offsets[-1][0])
            if valid - last_entry > index_interval_bytes and ordered:
                self._offsets.append((h.last_offset, valid))
                self._maybe_append_time()
                last_entry = valid
            valid += h.size
        self._maybe_append_time()  # the final entry a close would write (§4.4)

    def _maybe_append_time(self) -> None:
        """TimeIndex.maybeAppend: the content's max, only above the last entry's timestamp, an empty
        index's being -1 — no entry for batches without timestamps (magic 0; §3.3; pinned by
        corpora/found/index-agrees-e79eba340e)."""
        if self.content_max[0] > (self._times[-1][0] if self._times else -1):
            self._times.append(self.content_max)

    @property
    def entries(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """(offset entries, time entries): what lookups go by."""
        return list(self._offsets), list(self._times)

    def offset_lookup(self, target: int) -> tuple[int, int]:
        """OffsetIndex.lookup: the last entry whose offset is ≤ target, else (base, 0)."""
        i = bisect.bisect_right(self._offsets, (target, 2**63)) - 1
        return self._offsets[i] if i >= 0 else (self.base_offset, 0)

    def time_lookup(self, target: int) -> tuple[int, int]:
        """TimeIndex.lookup: the last entry whose timestamp is ≤ target, else (−1, base)."""
        i = bisect.bisect_right(self._times, (target, 2**63)) - 1
        return self._times[i] if i >= 0 else (-1, self.base_offset)

    def appended(self, max_timestamp: int, offset: int) -> None:
        if max_timestamp > self.content_max[0]:
            self.content_max = (max_timestamp, offset)

    def truncate_to(self, offset: int, log) -> None:
        """Drop the entries of offsets ≥ ``offset`` (the log is already cut) and recompute the
        content max from what is left."""
        self._offsets = [e for e in self._offsets if e[0] < offset]
        self._times = [e for e in self._times if e[1] < offset]
        self.content_max = (-1, self.base_offset)
        for h in BatchScan(log, check_crc=False):
            if h.max_timestamp > self.content_max[0]:
                self.content_max = (h.max_timestamp, h.last_offset)
