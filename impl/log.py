"""A partition's log: Kafka's UnifiedLog + LocalLog over :class:`impl.segment.LogSegment` (spec §4.3,
§4.5, §4.7, §4.10, §4.13, §4.14, §2.4, §4.8 retention).

Deterministic by construction: time comes from an injected clock, the roll jitter from an injected
source, and Kafka's scheduler tasks are explicit — the post-roll flush (delay 0) runs before
:meth:`PartitionLog.roll` returns; the delayed segment deletions (``file.delete.delay.ms``) wait in a
:class:`Scheduler` until the clock passes their deadline.  One replica: the high watermark follows the
log end offset.  Producer state (idempotence, transactions) is not modelled yet.
"""

from __future__ import annotations

import bisect
import functools
import heapq
from collections.abc import Callable

import attrs

from impl.cleaner import clean
from impl.config import LogConfig
from impl.errors import LogError, LogFormatError
from impl.file_records import CORRUPT, BatchScan
from impl.leader_epoch import LeaderEpochCache
from impl.log_validator import recompressed
from impl.producer_state import (
    CLIENT,
    COORDINATOR,
    REPLICATION,
    SENTINEL,
    ProducerStateManager,
    RebuildError,
    has_producer,
    is_control,
    is_transactional,
    rebuild,
)
from impl.record_walk import base_offset, end_marker, timestamps_and_keys
from impl.record_walk import records as record_offsets
from impl.record_writer import stamp_log_append_time
from impl.segment import DELETED_SUFFIX, INT32_MAX, LogSegment, filename_prefix
from impl.split import replace_segments
from impl.storage import Storage
from impl.sync_points import sync_point

EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP = -2, -1, -3
HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK


STORAGE_ERROR = "KafkaStorageException"


def storage_errors(method):
    """An I/O error inside a log operation reaches the caller as Kafka's KafkaStorageException,
    naming the file (§6.6: the log dir then goes offline — :class:`impl.log_manager.LogManager`)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except OSError as e:
            where = e.filename or getattr(self, "dir", "?")
            raise LogError(STORAGE_ERROR, f"{where}: {e.strerror or e} during {method.__name__}") from None

    return wrapper


def _origin(headers, leader: bool) -> str:
    """AppendOrigin: a follower's fetch is REPLICATION, a leader's end marker the transaction
    coordinator's (WriteTxnMarkers), any other leader append a client's produce request."""
    if not leader:
        return REPLICATION
    return COORDINATOR if headers and is_control(headers[0]) else CLIENT


@attrs.frozen
class LogAppendInfo:
    """What an append returns (Kafka's ``LogAppendInfo``): the offsets of its first and last record."""

    first_offset: int
    last_offset: int


class Scheduler:
    """Kafka's scheduler for the one kind of delayed task the log layer has: deleting files."""

    def __init__(self):
        self._tasks: list[tuple[int, int, str, Callable[[], None]]] = []
        self._seq = 0

    def schedule(self, due_ms: int, name: str, task: Callable[[], None]) -> None:
        heapq.heappush(self._tasks, (due_ms, self._seq, name, task))
        self._seq += 1

    def adopt(self, other: Scheduler) -> None:
        """Take over ``other``'s tasks, in the order they were scheduled there (after this one's)."""
        for due_ms, _seq, name, task in sorted(other._tasks, key=lambda t: t[1]):
            self.schedule(due_ms, name, task)
        other._tasks.clear()

    def run_due(self, now_ms: int) -> int:
        ran = 0
        while self._tasks and self._tasks[0][0] <= now_ms:
            heapq.heappop(self._tasks)[3]()
            ran += 1
        return ran

    def pending(self) -> list[str]:
        return [name for _, _, name, _ in sorted(self._tasks)]

    def drop_all(self) -> None:
        """Shutdown: delayed tasks are discarded, their ``.deleted`` files stay for the next load."""
        self._tasks.clear()


class PartitionLog:
    def __init__(
        self,
        storage: Storage,
        directory: str,
        topic: str,
        partition: int,
        config: LogConfig,
        clock: Callable[[], int],
        jitter: Callable[[str, int], int],
        scheduler: Scheduler,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
        log_end_offset: int,
        epoch_cache: LeaderEpochCache,
        producer_state: ProducerStateManager | None = None,
    ):
        self.storage = storage
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock = clock
        self._jitter = jitter
        self.scheduler = scheduler
        self._bases = [s.base_offset for s in segments]
        self._segments = {s.base_offset: s for s in segments}
        self.log_end_offset = log_end_offset
        self._end_metadata = self._capture_end(log_end_offset)
        self.log_start_offset = log_start_offset
        self.recovery_point = max(recovery_point, log_start_offset)
        self.epoch_cache = epoch_cache
        self.producer_state = producer_state or ProducerStateManager(storage, directory)

    # --- the segment map (§4.13) -------------------------------------------------------------------

    @property
    def segments(self) -> list[LogSegment]:
        return [self._segments[b] for b in self._bases]

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[self._bases[-1]]

    def _add(self, segment: LogSegment) -> None:
        if segment.base_offset not in self._segments:
            bisect.insort(self._bases, segment.base_offset)
        self._segments[segment.base_offset] = segment

    def _remove(self, base: int) -> None:
        del self._segments[base]
        self._bases.remove(base)

    def floor_segment(self, offset: int) -> LogSegment | None:
        i = bisect.bisect_right(self._bases, offset)
        return self._segments[self._bases[i - 1]] if i else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        i = bisect.bisect_right(self._bases, offset)
        return self._segments[self._bases[i]] if i < len(self._bases) else None

    def segments_in_range(self, start: int, end: int) -> list[LogSegment]:
        """``LogSegments.values(from, to)`` (§4.13 rule 1): the segment containing ``start`` through
        bases < ``end``; none when they are equal; a reversed range is refused (IllegalArgumentException),
        never answered as if it were empty or forward."""
        if start == end:
            return []
        if end < start:
            raise LogError(
                "IllegalArgumentException",
                f"Invalid log segment range: requested segments in {self.topic}-{self.partition} from offset "
                f"{start} which is greater than limit offset {end}",
            )
        floor = self.floor_segment(start)
        lo = floor.base_offset if floor else -(2**63)
        i, j = bisect.bisect_left(self._bases, lo), bisect.bisect_left(self._bases, end)
        return [self._segments[b] for b in self._bases[i:j]]

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments.values())

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    def new_segment(self, base: int, suffix: str = "") -> LogSegment:
        bound = self.config.jitter_bound()
        jitter = self._jitter(f"{self.topic}-{self.partition}", base) % bound if bound else 0
        return LogSegment(
            self.storage,
            self.dir,
            base,
            self.config,
            self.clock(),
            jitter,
            suffix=suffix,
            preallocate=self.config.preallocate,
        )

    # --- deletion (§2.4) ---------------------------------------------------------------------------

    def _delete_segment_files(self, segments: list[LogSegment]) -> None:
        for segment in segments:
            if not segment.log_path.endswith(DELETED_SUFFIX):
                segment.change_file_suffixes("", DELETED_SUFFIX)
                # Better than Kafka, which never fsyncs the dir after these renames: journaled
                # metadata aside, a power loss may keep a later rename and lose an earlier one, and
                # the segment that comes back sits before a hole (a retention pass lowest first, a
                # truncation highest first: see truncate_to).  Each rename is durable before the next.
                self.storage.fsync_dir(self.dir)
        due = self.clock() + self.config.file_delete_delay_ms
        for segment in segments:
            self.scheduler.schedule(due, f"delete {segment.log_path}", segment.delete_if_exists)

    def _delete_later(self, segment: LogSegment) -> None:
        """Schedule the deletion of a segment already renamed ``.deleted`` (asyncDeleteSegment)."""
        due = self.clock() + self.config.file_delete_delay_ms
        self.scheduler.schedule(due, f"delete {segment.log_path}", segment.delete_if_exists)

    def _replace_segments(self, new: list[LogSegment], old: list[LogSegment]) -> None:
        """§5.9 replaceSegments on the live log (the cleaner's swap, a split): see :mod:`impl.split`;
        then the snapshots of the old segments no new one replaces go (rule 29)."""
        gone = replace_segments(self._segments, new, old, self._delete_later)
        self._bases = sorted(self._segments)
        self._delete_producer_snapshots(gone)

    def _remove_and_delete(self, segments: list[LogSegment]) -> None:
        for segment in segments:
            self._remove(segment.base_offset)
        self._delete_segment_files(segments)

    def _delete_producer_snapshots(self, segments: list[LogSegment]) -> None:
        delay = self.config.file_delete_delay_ms
        self.producer_state.delete_for(segments, delay, self.clock() + delay, self.scheduler)

    def _rebuild_producer_state(self, last_offset: int) -> None:
        try:
            rebuild(self.producer_state, self.segments, self.log_start_offset, last_offset, self.clock(), False)
        except RebuildError as e:
            raise LogError(getattr(e.cause, "kind", "KafkaException"), str(e)) from None

    def _create_and_delete(self, new_offset: int, old: LogSegment) -> LogSegment:
        if new_offset == old.base_offset:
            old.change_file_suffixes("", DELETED_SUFFIX)
        segment = self.new_segment(new_offset)
        self._add(segment)
        if new_offset != old.base_offset:
            self._remove(old.base_offset)
        self._delete_segment_files([old])
        return segment

    def _capture_end(self, offset: int) -> tuple[int, int, int]:
        active = self._segments[self._bases[-1]]
        return offset, active.base_offset, active.size

    def _update_log_end_offset(self, offset: int) -> None:
        """updateLogEndOffset: the offset with its position, captured together (LogOffsetMetadata),
        so a fetch running beside an append never reads past the log end offset it saw (the bytes
        of a batch written but not yet published)."""
        self._end_metadata = self._capture_end(offset)
        self.log_end_offset = offset
        if self.recovery_point > offset:
            self.recovery_point = offset

    # --- append (§4.14) ------------------------------------------------------------------------------

    def _unexpected_append_offset(self, data, headers, checked: int) -> LogError:
        """§4.14, a follower's append below the log end: UnexpectedAppendOffsetException carries
        the first batch's base offset (decompressing a legacy wrapper for it) and the append's
        last offset, in Kafka 4.4.0's words (the first ten record offsets among them)."""
        offsets = []
        for h in headers:
            offsets += [offset for offset, _ in record_offsets(data, h)][: 10 - len(offsets)]
            if len(offsets) == 10:
                break
        checked_is = "First offset" if headers[0].magic >= 2 else "Last offset of the first batch"
        last = headers[-1].last_offset
        return LogError(
            "UnexpectedAppendOffsetException",
            f"Unexpected offset in append to {self.topic}-{self.partition}. {checked_is} {checked} is less than "
            f"the next offset {self.log_end_offset}. First 10 offsets in append: {', '.join(map(str, offsets))}, "
            f"last offset in append: {last}. Log start offset = {self.log_start_offset}",
            {"first_offset": base_offset(data, headers[0]), "last_offset": last},
        )

    def maybe_start_transaction_verification(
        self, pid: int, sequence: int, epoch: int, supports_epoch_bump: bool
    ) -> int:
        """A transactional produce's verification (KIP-890): fenced below the producer's epoch; the
        sentinel while a transaction is open at ``epoch``; else the producer's guard."""
        self.producer_state.fence_older_epoch(pid, epoch)
        if self.producer_state.ongoing_at(pid, epoch):
            return SENTINEL
        return self.producer_state.start_verification(pid, sequence, epoch, supports_epoch_bump, self.clock())

    @storage_errors
    def append(
        self,
        records: bytes,
        leader: bool = True,
        leader_epoch: int = 0,
        transaction_version: int = 0,
        verification_guard: int = SENTINEL,
    ) -> LogAppendInfo:
        """Append v2 batches: as leader, offsets are assigned from the log end offset and the batches'
        partition leader epoch set; as follower, offsets are kept and validated.  A leader's marker
        is checked at ``transaction_version`` (its coordinator's); a client's transactional batch
        needs ``verification_guard`` when verification is on (KIP-890)."""
        data = bytearray(records)
        scan = BatchScan(data)
        headers = list(scan)
        if scan.stop == CORRUPT:
            raise LogError("CorruptRecordException", str(scan.error))
        if not headers:
            # UnifiedLog.append returns at once when no batch is valid (validBytes 0): nothing
            # appended, no roll, first and last offset −1 — checked on Kafka 4.4.0
            return LogAppendInfo(-1, -1)
        data = data[: scan.valid_bytes]  # trimInvalidBytes: a trailing partial batch is dropped
        last, monotonic = -1, True
        for h in headers:
            if h.magic < 2 and leader:
                raise LogError("UnsupportedForMessageFormatException", f"batch at {h.position} has magic {h.magic}")
            if leader and h.size > self.config.max_message_bytes:  # appendAsFollower: ignoreRecordSize
                raise LogError("RecordTooLargeException", f"batch of {h.size} bytes at {h.position}")
            if last >= h.last_offset:
                monotonic = False
            last = h.last_offset
        if leader:
            self._validate_produce_request(data, headers)
            rebuilt = recompressed(data, headers[0], self.config.compression_type)
            if rebuilt is not None:
                if len(rebuilt) > self.config.max_message_bytes:  # messageSizeMaybeChanged: checked again
                    raise LogError("RecordTooLargeException", f"the batch rebuilt is {len(rebuilt)} bytes")
                data = bytearray(rebuilt)
                headers = list(BatchScan(data))
        if leader:
            next_offset = self.log_end_offset
            for h in headers:
                last_offset = next_offset + h.records_count - 1
                base = last_offset - h.last_offset_delta
                data[h.position : h.position + 8] = base.to_bytes(8, "big", signed=True)
                data[h.position + 12 : h.position + 16] = leader_epoch.to_bytes(4, "big", signed=True)
                if self.config.message_timestamp_type == "LogAppendTime":
                    stamp_log_append_time(data, h.position, h.size, self.clock())
                next_offset = last_offset + 1
            headers = list(BatchScan(data))
        else:
            if not monotonic:
                raise LogError("OffsetsOutOfOrderException", "offsets in the append are not strictly increasing")
            # a legacy first batch is checked by its last offset (its base needs decompressing)
            checked = headers[0].offset if headers[0].magic >= 2 else headers[0].last_offset
            if checked < self.log_end_offset:
                raise self._unexpected_append_offset(data, headers, checked)
        max_ts = max(-1, *(h.max_timestamp for h in headers))
        first, last = headers[0].offset if headers[0].magic >= 2 else -1, headers[-1].last_offset
        for h in headers:
            if h.magic >= 2:
                self.epoch_cache.assign(h.partition_leader_epoch, h.offset)
            elif self.epoch_cache.entries:  # a legacy append clears the cache and its checkpoint
                self.epoch_cache.clear_and_flush()
        if len(data) > self.config.segment_bytes:
            raise LogError("RecordBatchTooLargeException", f"{len(data)} bytes exceed segment.bytes")
        # no first offset (a legacy first batch): a roll goes to the last offset less Int.MAX,
        # raised to the log end offset (KAFKA-6264's guess)
        segment = self._maybe_roll(len(data), first if first >= 0 else last - INT32_MAX, last, max_ts)
        # after the roll, before the write: a retry or a refusal writes nothing
        duplicate, pending, completed = self._analyse_producers(
            data, headers, _origin(headers, leader), transaction_version, verification_guard
        )
        if duplicate is not None:
            return LogAppendInfo(*duplicate)
        segment.append(last, data)
        # the batch is in the segment, the log end offset not yet moved: a fetch running now must not
        # see it (LogOffsetMetadata; the race step stops an append here)
        sync_point("UnifiedLog.append:written")
        self._update_log_end_offset(last + 1)
        self.producer_state.adopt(pending)
        for txn in completed:  # each into the index of the segment written to
            if txn.aborted:
                segment.txn_index.append(self.producer_state.aborted(txn))
            self.producer_state.complete(txn)
        self.producer_state.update_map_end(last + 1)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush(self.log_end_offset)
        return LogAppendInfo(first, last)

    def _analyse_producers(self, data, headers, origin: str, transaction_version: int, guard: int = SENTINEL):
        """analyzeAndValidateProducerState: (the offsets of the batch a client's repeats, None,
        None), or (None, the producer state with the request applied to a copy, the transactions
        it completes); a refused check raises and changes nothing but a verification it used."""
        pending, completed = self.producer_state.scratch(), []
        for h in headers:
            if not has_producer(h):
                continue
            if origin == CLIENT:
                duplicate = self.producer_state.duplicate_of(h)
                if duplicate is not None:
                    return duplicate, None, None
            if origin != REPLICATION and is_transactional(h):
                self._check_verified(h, guard)
            marker = end_marker(data, h) if is_control(h) else None
            txn = pending.append(h, marker, origin, transaction_version)
            if txn is not None:
                completed.append(txn)
        return None, pending, completed

    def _check_verified(self, h, guard: int) -> None:
        """A client's or coordinator's transactional batch outside a transaction open at its epoch:
        fenced below the producer's epoch; with verification on, a data batch needs its producer's
        guard, so nothing transactional lands that the coordinator does not know is open."""
        psm = self.producer_state
        if psm.ongoing_at(h.producer_id, h.producer_epoch):
            return
        psm.fence_older_epoch(h.producer_id, h.producer_epoch)
        needed = self.config.transaction_partition_verification_enable and not is_control(h)
        if needed and not psm.verified(h.producer_id, guard):
            raise LogError("InvalidTxnStateException", "Record was not part of an ongoing transaction")

    def _validate_produce_request(self, data, headers) -> None:
        """LogValidator (§4.14): one v2 batch per produce request, base offset 0; on a compacted
        topic no keyless record; every CreateTime within the configured distance of the clock,
        a timestamp error taking precedence."""
        if len(headers) > 1:
            raise LogError("InvalidRecordException", f"a produce request holds one v2 batch, not {len(headers)}")
        h = headers[0]
        if h.offset != 0:
            raise LogError("InvalidRecordException", f"baseOffset of the batch is {h.offset}, not 0")
        try:
            records = timestamps_and_keys(data, h)
        except LogFormatError as e:
            raise LogError("CorruptRecordException", str(e)) from None
        now, cfg = self.clock(), self.config
        if cfg.message_timestamp_type == "CreateTime" and any(  # the leader's own stamp is not checked
            now - ts > cfg.message_timestamp_before_max_ms or ts - now > cfg.message_timestamp_after_max_ms
            for ts, _ in records
        ):
            raise LogError("InvalidTimestampException", f"a record's timestamp is too far from {now}")
        if cfg.compact_enabled and not all(has_key for _, has_key in records):
            raise LogError("InvalidRecordException", "a compacted topic takes no record without a key")

    def _maybe_roll(self, size: int, first: int, last: int, max_ts: int) -> LogSegment:
        segment = self.active_segment
        if segment.should_roll(self.config.segment_ms, self.config.segment_bytes, max_ts, last, size, self.clock()):
            return self.roll(first)
        return segment

    @storage_errors
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """§4.3 step 3–4; the post-roll flush runs before returning (see the module docstring)."""
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        active = self.active_segment
        if new_offset in self._segments:
            if active.base_offset == new_offset and active.size == 0:  # KAFKA-6388
                segment = self._create_and_delete(new_offset, active)
            else:
                raise LogError(
                    "KafkaException",
                    f"Trying to roll a new log segment with start offset {new_offset} while it already exists",
                )
        elif new_offset < active.base_offset:
            raise LogError(
                "KafkaException",
                f"Trying to roll a new log segment with start offset {new_offset} lower than the active segment's {active.base_offset}",
            )
        else:
            prefix = f"{self.dir}/{filename_prefix(new_offset)}"
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                if self.storage.exists(prefix + suffix):
                    self.storage.unlink(prefix + suffix)
            active.on_become_inactive()
            segment = self.new_segment(new_offset)
            self._add(segment)
        self._update_log_end_offset(self.log_end_offset)
        # a snapshot at the new base, written unsynced; the post-roll task syncs it, then flushes
        self.producer_state.update_map_end(segment.base_offset)
        snapshot = self.producer_state.take_snapshot(sync=False)
        if snapshot is not None:
            self.producer_state.flush(snapshot)
        self._flush(segment.base_offset)
        return segment

    # --- flush (§4.10) ---------------------------------------------------------------------------------

    @storage_errors
    def flush(self, offset: int | None = None, inclusive: bool = False) -> None:
        """Flush through ``offset`` (default: the log end offset, the periodic flusher's call)."""
        offset = self.log_end_offset if offset is None else offset
        if not 0 <= offset <= self.log_end_offset:
            raise LogError(
                "OffsetOutOfRangeException", f"cannot flush to {offset}: the log ends at {self.log_end_offset}"
            )
        self._flush(offset, inclusive)

    def _flush(self, offset: int, inclusive: bool = False) -> None:
        """UnifiedLog.flush(offset, includingOffset); after a roll with a gap the new base (and so
        the recovery point) may lie past the log end offset, as in Kafka."""
        flush_offset = offset + 1 if inclusive else offset
        if flush_offset > self.recovery_point:
            current = self.recovery_point
            to_flush = self.segments_in_range(current, flush_offset)
            for segment in to_flush:
                segment.flush()
            if any(s.base_offset >= current for s in to_flush):
                self.storage.fsync_dir(self.dir)
            if offset > self.recovery_point:
                self.recovery_point = offset

    # --- reads (§4.5, §4.8) ----------------------------------------------------------------------------

    def _offset_metadata(self, offset: int) -> tuple[int, int]:
        """convertToOffsetMetadataOrThrow: (segment base, position) of the batch holding ``offset``."""
        end, base, position = self._end_metadata
        if offset == end:
            return base, position
        segment = self.floor_segment(offset)
        while segment is not None:
            mapping = segment.translate_offset(offset)
            if mapping is not None:
                return segment.base_offset, mapping.position
            segment = self.higher_segment(segment.base_offset)
        return self.active_segment.base_offset, self.active_segment.size

    @storage_errors
    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_message: bool = True
    ) -> bytes:
        """UnifiedLog.read with the log end offset (or ``max_offset``) as the upper bound."""
        found = self._read(start_offset, max_bytes, max_offset, min_one_message)
        return found[1] if isinstance(found, tuple) else b""

    @storage_errors
    def read_committed(self, start_offset: int, max_bytes: int, min_one_message: bool = True):
        """A fetch at read_committed: up to the last stable offset, with the (producer id, first
        offset) of each aborted transaction the fetched range overlaps (LocalLog.addAbortedTransactions):
        the range ends at the offset-index entry at or past the fetch's end, else the next
        segment's base, else the log end; the indexes are read from the fetch's segment on until
        one's entries reach past it.  None for the transactions when no segment answered."""
        found = self._read(start_offset, max_bytes, self.last_stable_offset(), min_one_message)
        if not isinstance(found, tuple):
            return b"", [] if found else None
        segment, data = found
        position = segment.translate_offset(start_offset).position
        bound = segment.offset_index.get().fetch_upper_bound_offset(position, len(data))
        higher = self.higher_segment(segment.base_offset)
        upper = bound[0] if bound else higher.base_offset if higher else self.log_end_offset
        aborted = []
        while segment is not None:
            txns, complete = segment.txn_index.collect_aborted_txns(start_offset, upper)
            aborted += [(t.producer_id, t.first_offset) for t in txns]
            if complete:
                break
            segment = self.higher_segment(segment.base_offset)
        return data, aborted

    def last_stable_offset(self) -> int:
        """The first unstable offset (not below the log start), else the log end offset, which is
        the high watermark with one replica."""
        first = self.producer_state.first_unstable_offset()
        return self.log_end_offset if first is None else min(max(first, self.log_start_offset), self.log_end_offset)

    def _read(self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_message: bool):
        """(the segment that answered, its bytes); True if the range was empty before any
        segment was read; None if no segment answered."""
        if start_offset < self.log_start_offset or start_offset > self.log_end_offset:
            raise LogError(
                "OffsetOutOfRangeException",
                f"offset {start_offset} is outside [{self.log_start_offset}, {self.log_end_offset}]",
            )
        max_offset = self.log_end_offset if max_offset is None else max_offset
        if max_offset < self.log_start_offset or max_offset > self.log_end_offset:
            raise LogError("OffsetOutOfRangeException", f"max offset {max_offset} is outside the log")
        if start_offset >= max_offset:
            return True
        max_base, max_position = self._offset_metadata(max_offset)
        segment = self.floor_segment(start_offset)
        while segment is not None:
            if segment.base_offset < max_base:
                limit = segment.size
            elif segment.base_offset == max_base:
                limit = max_position
            else:
                limit = None
            data = segment.read(start_offset, max_bytes, limit, min_one_message)
            if data is not None:
                return segment, data
            segment = self.higher_segment(segment.base_offset)
        return None

    @storage_errors
    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """fetchOffsetByTimestamp: (timestamp, offset), None if no record qualifies."""
        if timestamp == EARLIEST_TIMESTAMP:
            return (-1, self.log_start_offset)
        if timestamp == LATEST_TIMESTAMP:
            return (-1, self.log_end_offset)
        segments = self.segments
        if timestamp == MAX_TIMESTAMP:
            for segment in segments:
                segment.max_timestamp_so_far()  # Kafka loads each one's (maxBy(_.maxTimestampSoFar))
            # the answer by the content's max timestamps (equal to Kafka's unless an index is unsound)
            best = max(segments, key=lambda s: s.content_max_timestamp_and_offset()[0])  # first of equals
            max_ts, offset = best.content_max_timestamp_and_offset()
            for header in best.batches(best.translate_position(offset), lookup=True):
                if header.max_timestamp == max_ts:
                    return best.offset_of_max_timestamp(header)
            return None
        for segment in segments:
            segment.max_timestamp_so_far()  # loaded by Kafka's largestTimestamp()
            if segment.content_largest_timestamp() >= timestamp:
                return segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
        return None

    # --- truncation and the log start offset (§4.7) -------------------------------------------------

    @storage_errors
    def truncate_to(self, target: int) -> bool:
        if target < 0:
            raise LogError("IllegalArgumentException", f"Cannot truncate to a negative offset ({target})")
        if target >= self.log_end_offset:
            self.epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if self._bases[0] > target:
            self.truncate_fully_and_start_at(target)
            return True
        # Better than Kafka, which renames the segments above the target to .deleted lowest first
        # and never fsyncs the dir: a power loss in between, or one that keeps the cut of the new
        # active segment but loses a rename, brings segments back after a hole in the offsets
        # (§4.7, §2.4; pinned by corpora/crash/truncate-removes-the-highest-segment-first.json and
        # truncate-renames-durable-before-the-cut.json).  Highest first,
        # each rename durable before the next and before the cut: a crash leaves a prefix of the log.
        removed = sorted((s for s in self.segments if s.base_offset > target), key=lambda s: -s.base_offset)
        self._remove_and_delete(removed)
        self._delete_producer_snapshots(sorted(removed, key=lambda s: s.base_offset))
        if self.active_segment.truncate_to(target, self.clock()):
            # Better than Kafka: the recovery point drops to the target and is checkpointed, which
            # says everything below it is durable — but the cut itself was never fsynced (a roll at
            # the target flushes nothing: the recovery point is already there).  A power loss then
            # brings the removed batches back under the recovery point, overlapping what is appended
            # next (corpora/crash/truncate-cut-durable-before-the-recovery-point.json).
            self.active_segment.flush()
        self._update_log_end_offset(target)
        self.epoch_cache.truncate_from_end(target)
        self.log_start_offset = min(target, self.log_start_offset)
        self._rebuild_producer_state(target)
        return True

    @storage_errors
    def truncate_fully_and_start_at(self, new_offset: int, log_start_offset: int | None = None) -> None:
        segments = self.segments
        self._remove_and_delete(segments[:-1])
        self._create_and_delete(new_offset, segments[-1])
        self._update_log_end_offset(new_offset)
        self.epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully_and_start_at(new_offset)
        self.log_start_offset = new_offset if log_start_offset is None else log_start_offset
        self._rebuild_producer_state(new_offset)

    def maybe_increment_log_start_offset(self, new_start: int) -> bool:
        if new_start > self.high_watermark:
            raise LogError(
                "OffsetOutOfRangeException",
                f"Cannot increment the log start offset to {new_start} since it is larger than the high watermark {self.high_watermark}",
            )
        if new_start <= self.log_start_offset:
            return False
        self.log_start_offset = new_start
        if self.recovery_point < new_start:
            self.recovery_point = new_start
        self.epoch_cache.truncate_from_start(new_start)
        self.producer_state.on_log_start_offset_incremented(new_start)
        return True

    @storage_errors
    def delete_records(self, offset: int) -> int:
        """Partition.deleteRecordsOnLeader: −1 stands for the high watermark (the log end offset,
        one replica), another negative offset is refused; then the log start offset is raised
        (segments go at the next retention pass)."""
        offset = self.log_end_offset if offset == HIGH_WATERMARK else offset
        if offset < 0:
            raise LogError("OffsetOutOfRangeException", f"The offset {offset} is not valid")
        self.maybe_increment_log_start_offset(offset)
        return self.log_start_offset

    # --- retention (UnifiedLog.deleteOldSegments) ----------------------------------------------------

    @storage_errors
    def delete_old_segments(self) -> int:
        n = self._delete_old(lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset)
        if self.config.delete_enabled:
            n += self._retention_size()
            n += self._retention_ms()
        return n

    def _retention_size(self) -> int:
        limit = self.config.retention_bytes
        if limit < 0 or self.size_in_bytes() < limit:
            return 0
        diff = self.size_in_bytes() - limit

        def should_delete(segment, _next):
            nonlocal diff
            if diff - segment.size >= 0:
                diff -= segment.size
                return True
            return False

        return self._delete_old(should_delete)

    def _retention_ms(self) -> int:
        if self.config.retention_ms < 0:
            return 0
        start = self.clock()
        return self._delete_old(lambda seg, _n: start - seg.largest_timestamp() > self.config.retention_ms)

    def _delete_old(self, predicate) -> int:
        segments = self.segments
        deletable = []
        for i, segment in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            upper = nxt.base_offset if nxt else self.log_end_offset
            if not (self.high_watermark >= upper and predicate(segment, nxt)) or (nxt is None and segment.size == 0):
                break
            deletable.append(segment)
        if not deletable:
            return 0
        to_delete = deletable
        if len(segments) == len(deletable):
            new = self.roll()
            if deletable[-1].base_offset == new.base_offset:
                to_delete = deletable[:-1]
        if to_delete:
            self.maybe_increment_log_start_offset(self.higher_segment(to_delete[-1].base_offset).base_offset)
            self._remove_and_delete(to_delete)
            self._delete_producer_snapshots(to_delete)
        return len(deletable)

    # --- compaction (LogCleaner) -------------------------------------------------------------------

    @storage_errors
    def holds_legacy_batches(self) -> bool:
        """Whether an inactive segment (what a cleaning round reads) holds a magic 0/1 batch."""
        return any(h.magic < 2 for s in self.segments[:-1] for h in BatchScan(s.view()))

    @storage_errors
    def clean(self) -> dict:
        """One round of the log cleaner over the inactive segments (:func:`impl.cleaner.clean`):
        ``{"groups": [[source bases], ...]}``, plus ``"split"`` if an overflowed segment was split."""
        return clean(self)

    # --- lifecycle -----------------------------------------------------------------------------------

    def close(self) -> None:
        """LogManager's close job: prepareActiveSegmentForClose (its final time-index entry may throw,
        and then nothing else runs), a synced snapshot at the map end offset, the segments."""
        self.active_segment.on_become_inactive()
        self.producer_state.take_snapshot()
        for segment in self.segments:
            segment.close()

    def moved_to(self, directory: str) -> None:
        """UnifiedLog.renameDir after the storage renamed the directory: LocalLog's dir and its
        segments' (updateParentDir), the producer state's snapshots and the leader-epoch checkpoint
        now live in ``directory``.  Segments a pending deletion holds keep their old paths (Kafka's
        removed segments are no longer in the map it updates): they delete nothing."""
        self.dir = directory
        for segment in self.segments:
            segment.moved_to(directory)
        state = self.producer_state
        state.dir = directory
        state.snapshots = {o: f"{directory}/{p.rsplit('/', 1)[1]}" for o, p in state.snapshots.items()}
        self.epoch_cache.path = f"{directory}/{self.epoch_cache.path.rsplit('/', 1)[1]}"

    def close_handlers(self) -> None:
        for segment in self.segments:
            segment.close_handlers()
