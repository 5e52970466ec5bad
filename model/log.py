"""The partition log, executable: segments, append, roll, read, lookups, truncation, retention,
flush and the recovery point (spec §4, §2.4, §4.14; UnifiedLog / LocalLog / LogSegment).

Everything is in memory: a segment is its ``.log`` bytes plus the offset and time indexes of
:mod:`model.indexes` (which carry Kafka's append-time entries, needed because a full index rolls the
segment).  Reads and lookups answer from a scan of the batches, never from an index, so they say
what the log's content says (DESIGN.md "The model").  Files are only a rendering of this state
(:meth:`Log.files`).

Determinism, shared by contract with ``impl``: time comes from ``clock()``, the roll jitter from
``jitter(partition, base)``; the post-roll flush (a scheduler task with no delay) runs before
``roll`` returns; segment files renamed ``.deleted`` wait for ``file.delete.delay.ms`` and are removed
when the clock passes it (``run_due_deletions``); one replica, so the high watermark is the log
end offset.  Producer state is not modelled yet.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import attrs

from model.config import Config
from model.file_records import CORRUPT, framed_batches, iterate_file
from model.indexes import OffsetIndex, TimeIndex
from model.names import filename_prefix
from model.records import V2_HEADER_SIZE, Batch

INT32_MAX = 2**31 - 1
EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP = -2, -1, -3


class LogError(Exception):
    """An operation Kafka refuses; ``kind`` is Kafka's exception class."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(f"{kind}: {message}")


def assigned_epochs(epochs: list[tuple[int, int]], epoch: int, start: int) -> list[tuple[int, int]] | None:
    """LeaderEpochFileCache.assign: the cache with (epoch, start) added and every entry whose epoch
    or start offset is not below it dropped; None if no update is needed (the same epoch, not
    starting earlier)."""
    if epochs and epochs[-1][0] == epoch and start >= epochs[-1][1]:
        return None
    return [e for e in epochs if e[0] < epoch and e[1] < start] + [(epoch, start)]


# LogFileUtils.filenamePrefixFromOffset (§2.1): a base offset is negative only when damage made a
# batch's offset so, and a split at load names a segment after it
prefix = filename_prefix


@attrs.define(eq=False)
class Segment:
    """LogSegment (§4.1): the log bytes, the two indexes, and the roll/index bookkeeping."""

    base: int
    config: Config
    created_ms: int
    jitter_ms: int
    log: bytearray = attrs.Factory(bytearray)
    offset_index: OffsetIndex = None
    time_index: TimeIndex = None
    bytes_since_last_index_entry: int = 0
    rolling_based_timestamp: int | None = None
    max_ts: tuple[int, int] | None = None  # (timestamp, offset); None = "not loaded yet"
    mtime_ms: int = 0
    deleted: bool = False  # files renamed with the .deleted suffix
    lazy_entry: tuple[int, int] | None = None  # the max timestamp as loaded from the time index

    def __attrs_post_init__(self):
        if self.offset_index is None:
            self.offset_index = OffsetIndex.create(self.base, self.config.segment_index_bytes)
        if self.time_index is None:
            self.time_index = TimeIndex.create(self.base, self.config.segment_index_bytes)

    @property
    def size(self) -> int:
        return len(self.log)

    def batches(self) -> tuple[Batch, ...]:
        return iterate_file(bytes(self.log)).batches

    def fits(self, offset: int) -> bool:
        return 0 <= offset - self.base <= INT32_MAX

    def max_timestamp(self) -> tuple[int, int]:
        """maxTimestampAndOffsetSoFar, loaded lazily from the time index's last entry (§4.1, KIP-263)."""
        if self.max_ts is None:
            self.max_ts = self.lazy_entry = self.time_index.last_entry
        return self.max_ts

    def largest_timestamp(self) -> int:
        """§4.8: the max timestamp if any batch had one ≥ 0, else the ``.log`` file's mtime.

        A max timestamp still as loaded from the time index counts when that final entry is sound:
        it names a batch of this segment and carries its max timestamp, no batch having a larger one.
        An entry that escaped recovery damaged — zeroed, padded, junk (KAFKA-10207, KAFKA-19200) — is
        not what the log says: Kafka trusts it, and retention reads the segment's newest record as 1970
        and deletes it early.  Retention here goes by the log's content, as every logical result does
        (DESIGN.md "The model"); mutant ``unproven-indexes-trusted`` restores Kafka's trust.  (The
        index writes that use the max timestamp — the final entry at a roll — keep Kafka's value.)"""
        entry = self.max_timestamp()
        if entry is self.lazy_entry and self.time_index.entries and not self._sound_final_time_entry(entry):
            entry = (self.content_max_timestamp(), entry[1])
        ts = entry[0]
        return ts if ts >= 0 else self.mtime_ms

    def _sound_final_time_entry(self, entry: tuple[int, int]) -> bool:
        timestamp, offset = entry
        headers = [b.header() for b in self.batches()]
        newest = max((h.max_timestamp for h in headers), default=-1)
        named = any(h.last_offset == offset and h.max_timestamp == timestamp for h in headers)
        return named and timestamp == newest

    def content_max_timestamp(self) -> int:
        """The largest batch max timestamp in the log bytes (−1 if none).  Lookups use this: their
        answers are the scan's whatever an index says (DESIGN.md "The model").  Without faults it
        equals :meth:`max_timestamp`; after a power loss that kept a clean marker but not an index
        trim, Kafka's own lookups go by a bogus (0, base) last time-index entry instead."""
        return max((b.header().max_timestamp for b in self.batches()), default=-1)

    # §4.2
    def append(self, last_offset: int, data: bytes, now_ms: int) -> None:
        """§4.2 as Kafka 4.x runs it (LogSegment.append(largestOffset, records)): the write is one,
        the max timestamp and the index entries advance batch by batch — each batch's max
        timestamp with its last offset, an entry (its last offset, its position) whenever more
        than index.interval.bytes went by since the last one.  The rolling timestamp is the first
        batch's max timestamp (Kafka loads it from the file's first batch when it needs it)."""
        position = self.size
        headers = [b.header() for b in iterate_file(data).batches]
        if position == 0:
            self.rolling_based_timestamp = headers[0].max_timestamp
        if not self.fits(last_offset):
            raise LogError("LogSegmentOffsetOverflowException", f"offset {last_offset} in segment {self.base}")
        self.log += data
        self.mtime_ms = now_ms
        for h in headers:
            if h.max_timestamp > self.max_timestamp()[0]:
                self.max_ts = (h.max_timestamp, h.last_offset)
            if self.bytes_since_last_index_entry > self.config.index_interval_bytes:
                self.offset_index.append(h.last_offset, position)
                self.time_index.maybe_append(*self.max_timestamp())
                self.bytes_since_last_index_entry = 0
            position += h.size
            self.bytes_since_last_index_entry += h.size

    # §4.3
    def should_roll(self, max_ts_in_messages: int, last_offset: int, size: int, now_ms: int) -> bool:
        if self.rolling_based_timestamp is None and self.size:
            # §4.3: the first batch's, read by framing alone (its CRC is not checked); a first
            # batch whose header cannot be read leaves it unknown (Kafka's append would throw)
            first = iterate_file(bytes(self.log), validate=False).batches[:1]
            readable = first and (not first[0].is_v2 or first[0].size >= V2_HEADER_SIZE)
            self.rolling_based_timestamp = first[0].header().max_timestamp if readable else None
        rolling = -1 if self.rolling_based_timestamp is None else self.rolling_based_timestamp
        waited = max_ts_in_messages - rolling if rolling >= 0 else now_ms - self.created_ms
        return (
            self.size > self.config.segment_bytes - size
            or (self.size > 0 and waited > self.config.segment_ms - self.jitter_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.fits(last_offset)
        )

    # §4.4
    def on_become_inactive(self) -> None:
        self.time_index.maybe_append(*self.max_timestamp(), skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    # §4.5, by scanning
    def batch_at_or_after(self, offset: int) -> Batch | None:
        return next((b for b in self.batches() if b.header().last_offset >= offset), None)

    def read(self, start_offset: int, max_size: int, max_position: int | None, min_one: bool) -> bytes | None:
        batch = self.batch_at_or_after(start_offset)
        if batch is None:
            return None
        limit = max(max_size, batch.size) if min_one else max_size
        if limit == 0 or max_position is None:
            return b""
        end = batch.position + max(0, min(max_position - batch.position, limit))
        return bytes(self.log[batch.position : min(end, self.size)])

    def next_offset(self) -> int:
        batches = self.batches()
        return batches[-1].header().last_offset + 1 if batches else self.base

    def read_next_offset(self) -> int:
        """§4.5 rule 3, readNextOffset as the loader runs it: scan from where the offset index puts
        its last entry; unless some batch there reaches that entry's offset (a base offset the CRC
        does not cover may have been damaged) the answer is the segment's base offset.  The scan is
        by framing alone (:func:`framed_batches`): a batch whose CRC fails counts, and a framing
        error raises :class:`RecordFormatError` — the load of a clean shutdown fails on it."""
        start = self.offset_index.last_offset
        # translateOffset scans from max(the entry's position, 0): a damaged entry's negative
        # position scans the whole file (§4.5 rule 1; found by the time-to-catch control, stop 22)
        position = max(self.offset_index.lookup(start)[1], 0)
        headers = [b.header() for b in framed_batches(bytes(self.log), position)]
        if not any(h.last_offset >= start for h in headers):
            return self.base
        return headers[-1].last_offset + 1

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
        for batch in self.batches():
            if batch.header().max_timestamp >= timestamp:
                for record in batch.records():
                    if record.timestamp >= timestamp and record.offset >= starting_offset:
                        return record.timestamp, record.offset
        return None

    # §4.7
    def truncate_to(self, offset: int, now_ms: int) -> int:
        batch = self.batch_at_or_after(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.offset_index.resize(self.config.segment_index_bytes)
        self.time_index.resize(self.config.segment_index_bytes)
        removed = 0
        if batch is not None:
            removed = self.size - batch.position
            del self.log[batch.position :]
            self.mtime_ms = now_ms
        if self.size == 0:
            self.created_ms = now_ms
            self.rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        if self.max_timestamp()[0] >= 0:
            last = self.time_index.last_entry
            position = self.offset_index.lookup(last[1])[1]
            best = last
            for b in self.batches():
                h = b.header()
                if b.position >= position and h.max_timestamp > best[0]:
                    best = (h.max_timestamp, h.last_offset)
            self.max_ts = best
        return removed

    # §4.9 close: the final time-index entry and trimmed indexes
    def close(self) -> None:
        """§4.9 rule 2: the final time-index entry (if the max timestamp was ever loaded), then the
        trims.  A max timestamp whose offset lies below a stale last entry (a clean load trusts the
        index, KAFKA-7283) makes the append throw, and Kafka 4.x lets it: the segment stays
        untrimmed and its dir's shutdown fails (LogManager.shutdown; 3.x swallowed it)."""
        if self.max_ts is not None:
            self.time_index.maybe_append(*self.max_ts, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()


@attrs.define(eq=False)
class Log:
    """UnifiedLog + LocalLog of one partition."""

    topic: str
    partition: int
    config: Config
    clock: Callable[[], int]
    jitter: Callable[[str, int], int]
    segments: list[Segment]
    log_start_offset: int = 0
    recovery_point: int = 0
    log_end_offset: int = 0
    epochs: list[tuple[int, int]] = attrs.Factory(list)
    epoch_writes: int = 0  # times the leader-epoch-checkpoint was rewritten
    deleted: dict[int, Segment] = attrs.Factory(dict)  # base → the segment whose files are <base>.*.deleted
    delete_tasks: list[tuple[int, int]] = attrs.Factory(list)  # (due ms, base): deletes whatever is there then
    # base → a new segment replace_segments left out of the map while its files went on disk (§5.9)
    strays: dict[int, Segment] = attrs.Factory(dict)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    def new_segment(self, base: int) -> Segment:
        bound = self.config.jitter_bound()
        jitter = self.jitter(self.name, base) % bound if bound else 0
        now = self.clock()
        return Segment(base, self.config, now, jitter, mtime_ms=now)

    def floor(self, offset: int) -> Segment | None:
        candidates = [s for s in self.segments if s.base <= offset]
        return candidates[-1] if candidates else None

    def after(self, base: int) -> list[Segment]:
        return [s for s in self.segments if s.base > base]

    def size(self) -> int:
        return sum(s.size for s in self.segments)

    # §2.4
    def schedule_delete(self, segments: list[Segment]) -> None:
        for s in segments:
            s.deleted = True
            self.deleted[s.base] = s  # a rename replaces an older .deleted file of the same name
            self.delete_tasks.append((self.clock() + self.config.file_delete_delay_ms, s.base))

    def remove_and_delete(self, segments: list[Segment]) -> None:
        for s in segments:
            self.segments.remove(s)
        self.schedule_delete(segments)

    # §5.9
    def replace_segments(self, new: list[Segment], old: list[Segment]) -> None:
        """replaceSegments on the segment map (§5.9): the new segments in (replacing any of the same
        base), the old ones still in the map out and renamed ``.deleted``, deleted after
        file.delete.delay.ms (§2.4).  Used by the loader's split (§5.5) and the log cleaner
        (:mod:`model.cleaner`).

        As Kafka, an old segment leaves the map by its base offset unless that is the smallest new
        base (step 3).  A split whose batches go below the segment's base (a damaged base offset)
        makes a lower new segment, and then the new segment with the old one's base leaves the map
        with it — its files are renamed into place all the same and stay on disk, unknown to the
        log, until the next load finds them (:attr:`strays`; found by the time-to-catch control,
        stop 21)."""
        in_map = {s.base: s for s in self.segments}
        old = sorted((s for s in old if s.base in in_map), key=lambda s: s.base)
        for s in new:
            in_map[s.base] = s
            self.strays.pop(s.base, None)  # the rename replaces a stray's files of the same name
        lowest = min((s.base for s in new), default=None)
        for s in old:
            if s.base != lowest:
                gone = in_map.pop(s.base)
                if gone is not s:
                    self.strays[gone.base] = gone
        self.segments = sorted(in_map.values(), key=lambda s: s.base)
        self.schedule_delete(old)

    def run_due_deletions(self, now_ms: int) -> None:
        for _due, base in [t for t in self.delete_tasks if t[0] <= now_ms]:
            self.deleted.pop(base, None)
        self.delete_tasks = [t for t in self.delete_tasks if t[0] > now_ms]

    def set_log_end_offset(self, offset: int) -> None:
        self.log_end_offset = offset
        self.recovery_point = min(self.recovery_point, offset)

    # leader-epoch cache (LeaderEpochFileCache)
    # every change rewrites leader-epoch-checkpoint
    def assign_epoch(self, epoch: int, start: int) -> None:
        if epoch < 0 or start < 0:
            raise LogError("IllegalArgumentException", f"invalid leader epoch entry ({epoch}, {start})")
        assigned = assigned_epochs(self.epochs, epoch, start)
        if assigned is not None:
            self.epochs = assigned
            self.epoch_writes += 1

    def epochs_truncate_from_end(self, end: int) -> None:
        kept = [e for e in self.epochs if e[1] < end]
        if end >= 0 and kept != self.epochs:
            self.epochs = kept
            self.epoch_writes += 1

    def epochs_truncate_from_start(self, start: int) -> None:
        before = [e for e in self.epochs if e[1] <= start]
        if before:
            self.epochs = [(before[-1][0], start)] + [e for e in self.epochs if e[1] > start]
            self.epoch_writes += 1

    def epochs_clear(self) -> None:
        self.epochs = []
        self.epoch_writes += 1

    # §4.14
    def append(self, records: bytes, leader: bool, leader_epoch: int) -> tuple[int, int]:
        scan = iterate_file(bytes(records))
        if scan.stop == CORRUPT:
            raise LogError("CorruptRecordException", str(scan.error))
        if not scan.batches:
            raise LogError("InvalidRecordException", "the append holds no complete batch")
        data = bytearray(records[: scan.valid_bytes])
        headers = [b.header() for b in scan.batches]
        for h in headers:
            if h.magic < 2:
                raise LogError("UnsupportedForMessageFormatException", f"batch at {h.position} has magic {h.magic}")
            if h.size > self.config.max_message_bytes:
                raise LogError("RecordTooLargeException", f"batch of {h.size} bytes at {h.position}")
        if leader:
            self._validate_produce_request(scan.batches)
        if leader:
            offset = self.log_end_offset
            for h in headers:
                last = offset + h.records_count - 1
                struct.pack_into(">q", data, h.position, last - h.last_offset_delta)
                struct.pack_into(">i", data, h.position + 12, leader_epoch)
                offset = last + 1
            headers = [b.header() for b in iterate_file(bytes(data)).batches]
        else:
            lasts = [h.last_offset for h in headers]
            if any(a >= b for a, b in zip(lasts, lasts[1:], strict=False)):
                raise LogError("OffsetsOutOfOrderException", "offsets in the append are not strictly increasing")
            if headers[0].offset < self.log_end_offset:
                raise LogError(
                    "UnexpectedAppendOffsetException", f"first offset {headers[0].offset} < {self.log_end_offset}"
                )
        max_ts = max(-1, *(h.max_timestamp for h in headers))
        first, last = headers[0].offset, headers[-1].last_offset
        for h in headers:
            self.assign_epoch(h.partition_leader_epoch, h.offset)
        if len(data) > self.config.segment_bytes:
            raise LogError("RecordBatchTooLargeException", f"{len(data)} bytes exceed segment.bytes")
        if self.active.should_roll(max_ts, last, len(data), self.clock()):
            self.roll(first)
        self.active.append(last, bytes(data), self.clock())
        self.set_log_end_offset(last + 1)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush(self.log_end_offset)
        return first, last

    def _validate_produce_request(self, batches) -> None:
        """Kafka's LogValidator on a leader append (§4.14): a v2 produce request holds one batch,
        whose base offset is 0; on a compacted topic every record has a key; a CreateTime lies
        within message.timestamp.before.max.ms before and .after.max.ms after the broker's clock.
        Any timestamp error makes the refusal an InvalidTimestampException."""
        if len(batches) > 1:
            raise LogError("InvalidRecordException", f"a produce request holds one v2 batch, this one {len(batches)}")
        batch = batches[0]
        if batch.header().offset != 0:
            raise LogError("InvalidRecordException", f"baseOffset of the batch is {batch.header().offset}, not 0")
        now = self.clock()
        late = early = keyless = False
        for r in batch.records():
            keyless |= r.key is None and "compact" in self.config.cleanup_policy
            early |= now - r.timestamp > self.config.message_timestamp_before_max_ms
            late |= r.timestamp - now > self.config.message_timestamp_after_max_ms
        if early or late:
            raise LogError(
                "InvalidTimestampException",
                f"a record's timestamp is too far {'behind' if early else 'ahead of'} {now}",
            )
        if keyless:
            raise LogError("InvalidRecordException", "a compacted topic takes no record without a key")

    # §4.3 step 3–4
    def roll(self, expected: int | None = None) -> Segment:
        new_offset = max(expected or 0, self.log_end_offset)
        active = self.active
        if any(s.base == new_offset for s in self.segments):
            if not (active.base == new_offset and active.size == 0):
                raise LogError("KafkaException", f"segment {new_offset} already exists")
            # KAFKA-6388: the empty active segment is deleted and created again
            self.segments[-1] = self.new_segment(new_offset)
            self.schedule_delete([active])
        elif new_offset < active.base:
            raise LogError("KafkaException", f"roll to {new_offset} below the active segment {active.base}")
        else:
            active.on_become_inactive()
            self.segments.append(self.new_segment(new_offset))
        self.mark_flushed(new_offset)
        return self.active

    # §4.10
    def flush(self, offset: int | None = None, inclusive: bool = False) -> None:
        offset = self.log_end_offset if offset is None else offset
        if not 0 <= offset <= self.log_end_offset:
            raise LogError(
                "OffsetOutOfRangeException", f"cannot flush to {offset}: the log ends at {self.log_end_offset}"
            )
        self.mark_flushed(offset, inclusive)

    def mark_flushed(self, offset: int, inclusive: bool = False) -> None:
        """The recovery point moves forward only (after a roll with a gap, past the log end)."""
        if offset + (1 if inclusive else 0) > self.recovery_point:
            self.recovery_point = max(self.recovery_point, offset)

    # UnifiedLog.read / LocalLog.read
    def read(self, start: int, max_bytes: int, max_offset: int | None, min_one: bool) -> bytes:
        if not self.log_start_offset <= start <= self.log_end_offset:
            raise LogError("OffsetOutOfRangeException", f"offset {start} outside the log")
        max_offset = self.log_end_offset if max_offset is None else max_offset
        if not self.log_start_offset <= max_offset <= self.log_end_offset:
            raise LogError("OffsetOutOfRangeException", f"max offset {max_offset} outside the log")
        if start >= max_offset:
            return b""
        limit_base, limit_position = self.active.base, self.active.size
        if max_offset != self.log_end_offset:
            for s in [self.floor(max_offset)] + self.after(self.floor(max_offset).base):
                batch = s.batch_at_or_after(max_offset)
                if batch is not None:
                    limit_base, limit_position = s.base, batch.position
                    break
        start_segment = self.floor(start)
        for s in [start_segment] + self.after(start_segment.base):
            limit = s.size if s.base < limit_base else limit_position if s.base == limit_base else None
            data = s.read(start, max_bytes, limit, min_one)
            if data is not None:
                return data
        return b""

    # UnifiedLog.fetchOffsetByTimestamp
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """The answer is the content's (DESIGN.md "The model"), but the lookup loads the lazy max
        timestamp of every segment Kafka consults, as Kafka does (§4.1, §3.6 rule 5): for −3
        ``maxTimestampSoFar`` of every segment (the search for the latest one), for a timestamp
        ``largestTimestamp()`` of each segment up to the one searched.  Once loaded, the max
        timestamp is recomputed by a truncation that keeps entries (§4.7 rule 7) and written as
        the final time-index entry by close (§4.9 rule 2, §6.3) — a lookup then a truncation
        below the last time-index entry leaves Kafka's shut-down time index with one entry, not
        empty (corpora/crash/max-timestamp-loaded-by-a-lookup-survives-truncation.json)."""
        if timestamp == EARLIEST_TIMESTAMP:
            return (-1, self.log_start_offset)
        if timestamp == LATEST_TIMESTAMP:
            return (-1, self.log_end_offset)
        if timestamp == MAX_TIMESTAMP:
            for s in self.segments:
                s.max_timestamp()  # loaded by Kafka's maxBy(_.maxTimestampSoFar) / readMaxTimestampAndOffsetSoFar
            best = self.segments[0]
            for s in self.segments[1:]:
                if s.content_max_timestamp() > best.content_max_timestamp():
                    best = s
            max_ts = best.content_max_timestamp()
            for batch in best.batches():
                if batch.header().max_timestamp == max_ts:
                    offset = offset_of_max_timestamp(batch)
                    return None if offset is None else (max_ts, offset)
            return None
        for s in self.segments:
            s.max_timestamp()  # loaded by Kafka's largestTimestamp()
            ts = s.content_max_timestamp()
            if (ts if ts >= 0 else s.mtime_ms) >= timestamp:
                return s.find_offset_by_timestamp(timestamp, self.log_start_offset)
        return None

    # §4.7 UnifiedLog.truncateTo
    def truncate_to(self, target: int) -> bool:
        if target < 0:
            raise LogError("IllegalArgumentException", f"negative truncation offset {target}")
        if target >= self.log_end_offset:
            self.epochs_truncate_from_end(self.log_end_offset)
            return False
        if self.segments[0].base > target:
            self.truncate_fully_and_start_at(target)
            return True
        self.remove_and_delete(self.after(target))
        self.active.truncate_to(target, self.clock())
        self.set_log_end_offset(target)
        self.epochs_truncate_from_end(target)
        self.log_start_offset = min(target, self.log_start_offset)
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        old = list(self.segments)
        self.segments = [self.new_segment(new_offset)]
        self.schedule_delete(old)
        self.set_log_end_offset(new_offset)
        self.epochs_clear()
        self.log_start_offset = new_offset

    def increment_log_start_offset(self, new_start: int) -> None:
        if new_start > self.log_end_offset:
            raise LogError("OffsetOutOfRangeException", f"log start {new_start} above the high watermark")
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            self.recovery_point = max(self.recovery_point, new_start)
            self.epochs_truncate_from_start(new_start)

    def delete_records(self, offset: int) -> int:
        if offset < 0:
            raise LogError("OffsetOutOfRangeException", f"offset {offset} is negative")
        self.increment_log_start_offset(offset)
        return self.log_start_offset

    # UnifiedLog.deleteOldSegments
    def delete_old_segments(self) -> int:
        n = self.delete_while(lambda s, nxt: nxt is not None and nxt.base <= self.log_start_offset)
        if "delete" in self.config.cleanup_policy:
            if self.config.retention_bytes >= 0 and self.size() >= self.config.retention_bytes:
                excess = [self.size() - self.config.retention_bytes]

                def over_size(s, _nxt):
                    if excess[0] >= s.size:
                        excess[0] -= s.size
                        return True
                    return False

                n += self.delete_while(over_size)
            if self.config.retention_ms >= 0:
                now = self.clock()
                n += self.delete_while(lambda s, _nxt: now - s.largest_timestamp() > self.config.retention_ms)
        return n

    def delete_while(self, predicate) -> int:
        deletable = []
        for i, s in enumerate(self.segments):
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            upper = nxt.base if nxt else self.log_end_offset
            if self.log_end_offset < upper or not predicate(s, nxt) or (nxt is None and s.size == 0):
                break
            deletable.append(s)
        if not deletable:
            return 0
        doomed = deletable
        if len(deletable) == len(self.segments):
            if self.roll().base == deletable[-1].base:
                doomed = deletable[:-1]
        if doomed:
            later = self.after(doomed[-1].base)
            self.increment_log_start_offset(later[0].base)
            self.remove_and_delete(doomed)
        return len(deletable)

    def close(self) -> None:
        for s in self.segments:
            s.close()

    def clean(self) -> dict:
        """One log-cleaner round (:func:`model.cleaner.clean`)."""
        from model.cleaner import clean  # the cleaner builds on this module

        return clean(self)


def offset_of_max_timestamp(batch: Batch) -> int | None:
    """RecordBatch.offsetOfMaxTimestamp: the first record carrying the batch's max timestamp
    (LogAppendTime records all carry it); none for magic 0."""
    h = batch.header()
    if h.magic == 0:
        return None
    return next((r.offset for r in batch.records() if r.timestamp == h.max_timestamp), None)
