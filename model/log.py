"""The partition log, executable: segments, append, roll, read, lookups, truncation, retention,
flush and the recovery point (spec §4, §2.4, §4.14; UnifiedLog / LocalLog).

Everything is in memory: the log is its list of :class:`model.segment.Segment` (a segment is its
``.log`` bytes plus the offset and time indexes of :mod:`model.indexes`).  Reads and lookups answer
from a scan of the batches, never from an index, so they say what the log's content says (DESIGN.md
"The model").  Files are only a rendering of this state (:meth:`Log.files`).

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
import crc32c

from model.cleaner import clean
from model.config import Config
from model.errors import LogError, RecordFormatError
from model.file_records import CORRUPT, framed, iterate_file
from model.producer_state import (
    CLIENT,
    COORDINATOR,
    REPLICATION,
    SENTINEL,
    ProducerStateManager,
    RebuildError,
    aborted_txn,
    append_batch,
    rebuild,
)
from model.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, broker_compress
from model.records import LOG_APPEND_TIME, Batch, Record, encode_batch_v2, encode_record
from model.segment import INT32_MAX, Segment
from model.varint import java_long

EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP = -2, -1, -3
HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK


@attrs.frozen
class LogAppendInfo:
    """What an append returns (Kafka's ``LogAppendInfo``): the offsets of its first and last record."""

    first_offset: int
    last_offset: int


def assigned_epochs(epochs: list[tuple[int, int]], epoch: int, start: int) -> list[tuple[int, int]] | None:
    """LeaderEpochFileCache.assign: the cache with (epoch, start) added and every entry whose epoch
    or start offset is not below it dropped; None if no update is needed (the same epoch, not
    starting earlier)."""
    if epochs and epochs[-1][0] == epoch and start >= epochs[-1][1]:
        return None
    return [e for e in epochs if e[0] < epoch and e[1] < start] + [(epoch, start)]


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
    # base → a cleaning round's new segment while its files are <base>.*.cleaned: Cleaner.cleanSegments
    # deletes them on an abort only, any other failure leaves them to the next load (§5.2 step 2f)
    cleaned_left: dict[int, Segment] = attrs.Factory(dict)
    producer_state: ProducerStateManager = attrs.Factory(lambda: ProducerStateManager({}))
    snapshot_delete_tasks: list[tuple[int, str]] = attrs.Factory(list)  # (due ms, <offset>.snapshot.deleted)
    # the last retention's count as Kafka's gives it, if not the same (REFUSED_ROLL: Kafka's roll throws)
    kafkas_deleted: int | str | None = None
    installed_groups: list[list[int]] = attrs.Factory(list)  # the last cleaning round's, see clean()
    # a segment was made since the log was loaded or created: Kafka builds its indexes lazily, and
    # the model does not follow which it built (the files of a log never closed depend on it)
    fresh_segments: bool = False

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
        self.fresh_segments = True
        return Segment(base, self.config, now, jitter, mtime_ms=now)

    def floor(self, offset: int) -> Segment | None:
        candidates = [s for s in self.segments if s.base_offset <= offset]
        return candidates[-1] if candidates else None

    def after(self, base: int) -> list[Segment]:
        return [s for s in self.segments if s.base_offset > base]

    def size(self) -> int:
        return sum(s.size for s in self.segments)

    # §2.4
    def schedule_delete(self, segments: list[Segment]) -> None:
        for s in segments:
            s.deleted = True
            self.deleted[s.base_offset] = s  # a rename replaces an older .deleted file of the same name
            self.delete_tasks.append((self.clock() + self.config.file_delete_delay_ms, s.base_offset))

    def remove_and_delete(self, segments: list[Segment]) -> None:
        for s in segments:
            self.segments.remove(s)
        self.schedule_delete(segments)

    def delete_producer_snapshots(self, segments: list[Segment]) -> None:
        """UnifiedLog.deleteProducerSnapshots, asynchronously: the snapshot at each segment's base
        renamed ``.snapshot.deleted``, deleted after file.delete.delay.ms (rules 22, 23) — at once
        when that is 0 (the scheduler's task is no segment deletion, which waits for a tick:
        docs/scenario-format.md, "Determinism")."""
        due = self.clock() + self.config.file_delete_delay_ms
        for s in segments:
            name = self.producer_state.mark_for_deletion(s.base_offset)
            if name is not None:
                self.snapshot_delete_tasks.append((due, name))
        if self.config.file_delete_delay_ms == 0:
            self.run_due_snapshot_deletions(due)

    def run_due_snapshot_deletions(self, now_ms: int) -> None:
        for _due, name in [t for t in self.snapshot_delete_tasks if t[0] <= now_ms]:
            self.producer_state.disk.pop(name, None)
        self.snapshot_delete_tasks = [t for t in self.snapshot_delete_tasks if t[0] > now_ms]

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
        log, until the next load finds them (:attr:`strays`; pinned by
        corpora/crash/split-below-the-base-leaves-a-stray-segment.json)."""
        in_map = {s.base_offset: s for s in self.segments}
        old = sorted((s for s in old if s.base_offset in in_map), key=lambda s: s.base_offset)
        for s in new:
            in_map[s.base_offset] = s
            self.strays.pop(s.base_offset, None)  # the rename replaces a stray's files of the same name
        lowest = min((s.base_offset for s in new), default=None)
        for s in old:
            if s.base_offset != lowest:
                gone = in_map.pop(s.base_offset)
                if gone is not s:
                    self.strays[gone.base_offset] = gone
        self.segments = sorted(in_map.values(), key=lambda s: s.base_offset)
        self.schedule_delete(old)
        new_bases = {s.base_offset for s in new}
        self.delete_producer_snapshots([s for s in old if s.base_offset not in new_bases])

    def run_due_deletions(self, now_ms: int) -> None:
        for _due, base in [t for t in self.delete_tasks if t[0] <= now_ms]:
            self.deleted.pop(base, None)
        self.delete_tasks = [t for t in self.delete_tasks if t[0] > now_ms]
        self.run_due_snapshot_deletions(now_ms)

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
    def maybe_start_transaction_verification(
        self, pid: int, sequence: int, epoch: int, supports_epoch_bump: bool
    ) -> int:
        """The partition's part of a transactional produce's verification (KIP-890): an epoch below
        the producer's is fenced; a transaction open at this epoch needs no guard (the sentinel);
        else the producer's verification entry, made if it has none, and its guard."""
        self.producer_state.fence_older_epoch(pid, epoch)
        if self.producer_state.has_ongoing_transaction(pid, epoch):
            return SENTINEL
        return self.producer_state.verify(pid, sequence, epoch, supports_epoch_bump, self.clock())

    def append(
        self, records: bytes, leader: bool, leader_epoch: int, transaction_version: int = 0, verification_guard: int = 0
    ) -> LogAppendInfo:
        scan = iterate_file(bytes(records))
        if scan.stop == CORRUPT:
            raise LogError("CorruptRecordException", str(scan.error))
        if not scan.batches:
            # UnifiedLog.append returns at once when no batch is valid (validBytes 0): nothing
            # appended, no roll, first and last offset −1 — checked on Kafka 4.4.0
            return LogAppendInfo(-1, -1)
        data = bytearray(records[: scan.valid_bytes])
        headers = [b.header() for b in scan.batches]
        for h in headers:
            if h.magic < 2 and leader:
                raise LogError("UnsupportedForMessageFormatException", f"batch at {h.position} has magic {h.magic}")
            if leader and h.size > self.config.max_message_bytes:  # appendAsFollower: ignoreRecordSize
                raise LogError("RecordTooLargeException", f"batch of {h.size} bytes at {h.position}")
        if leader:
            self._validate_produce_request(scan.batches)
            rebuilt = recompressed(scan.batches[0], self.config.compression_type)
            if rebuilt is not None:
                if len(rebuilt) > self.config.max_message_bytes:  # messageSizeMaybeChanged: sizes checked again
                    raise LogError("RecordTooLargeException", f"the batch rebuilt is {len(rebuilt)} bytes")
                data = bytearray(rebuilt)
                headers = [b.header() for b in iterate_file(rebuilt).batches]
        if leader:
            offset = self.log_end_offset
            for h in headers:
                last = offset + h.records_count - 1
                struct.pack_into(">q", data, h.position, last - h.last_offset_delta)
                struct.pack_into(">i", data, h.position + 12, leader_epoch)
                if self.config.message_timestamp_type == LOG_APPEND_TIME:
                    _stamp_log_append_time(data, h, self.clock())
                offset = last + 1
            headers = [b.header() for b in iterate_file(bytes(data)).batches]
        else:
            lasts = [h.last_offset for h in headers]
            if any(a >= b for a, b in zip(lasts, lasts[1:], strict=False)):
                raise LogError("OffsetsOutOfOrderException", "offsets in the append are not strictly increasing")
            # firstOrLastOffsetOfFirstBatch: a legacy batch's base offset is not read (§4.14)
            checked = headers[0].offset if headers[0].magic >= 2 else headers[0].last_offset
            if checked < self.log_end_offset:
                raise self._unexpected_append_offset(scan.batches, checked, headers[-1].last_offset)
        max_ts = max(-1, *(h.max_timestamp for h in headers))
        first, last = headers[0].offset if headers[0].magic >= 2 else -1, headers[-1].last_offset
        for h in headers:
            if h.magic >= 2:
                self.assign_epoch(h.partition_leader_epoch, h.offset)
            elif self.epochs:  # an append of a legacy format clears the leader-epoch cache
                self.epochs_clear()
        if len(data) > self.config.segment_bytes:
            raise LogError("RecordBatchTooLargeException", f"{len(data)} bytes exceed segment.bytes")
        if self.active.should_roll(max_ts, last, len(data), self.clock(), self.config):
            # no first offset known (a legacy batch first): KAFKA-6264's guess, the last offset
            # less Int.MAX, raised to the log end offset by the roll
            self.roll(first if first >= 0 else last - INT32_MAX)
        batches = iterate_file(bytes(data)).batches
        # after the roll, before the write: a duplicate or a refusal writes nothing (rule 47)
        duplicate, pending, completed = self._analyse_producers(
            batches, _origin(batches, leader), transaction_version, verification_guard
        )
        if duplicate is not None:
            return LogAppendInfo(*duplicate)
        self.active.append(last, bytes(data), self.clock())
        self.set_log_end_offset(last + 1)
        self.producer_state.adopt(pending)
        for txn in completed:  # UnifiedLog.append: each into the active segment's index (rule 56)
            if txn.aborted:
                self.active.txn_index.append(aborted_txn(txn, self.producer_state.last_stable_offset(txn)))
            self.producer_state.complete(txn)
        self.producer_state.update_map_end(last + 1)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush(self.log_end_offset)
        return LogAppendInfo(first, last)

    def _unexpected_append_offset(self, batches, checked: int, last: int) -> LogError:
        """A follower's append below the log end (§4.14): UnexpectedAppendOffsetException carries
        the first batch's base offset (a legacy wrapper's first inner record's) and the append's
        last offset, and says which offset it checked, as Kafka 4.4.0 words it."""
        v2 = batches[0].is_v2
        first = batches[0].base_offset()
        offsets = [r.offset for b in batches for r in b.records()][:10]
        return LogError(
            "UnexpectedAppendOffsetException",
            f"Unexpected offset in append to {self.name}. "
            f"{'First offset' if v2 else 'Last offset of the first batch'} {checked} is less than the next offset "
            f"{self.log_end_offset}. First 10 offsets in append: {', '.join(map(str, offsets))}, last offset in "
            f"append: {last}. Log start offset = {self.log_start_offset}",
            {"first_offset": first, "last_offset": last},
        )

    def _analyse_producers(self, batches, origin: str, transaction_version: int, guard: int = SENTINEL):
        """analyzeAndValidateProducerState: a client's batch that repeats one of its producer's
        last five gives that batch's offsets (the duplicate); else every batch with a producer id
        is checked against its transaction's verification and applied to a copy of the producer
        state, the request refused on the first failing check: the copy and the transactions the
        request completes."""
        pending, completed = self.producer_state.scratch(), []
        for batch in batches:
            if not batch.is_v2 or batch.header().producer_id < 0:
                continue
            if origin == CLIENT:
                duplicate = self.producer_state.duplicate_of(batch.header())
                if duplicate is not None:
                    return duplicate, None, None
            if origin in (CLIENT, COORDINATOR) and batch.is_transactional:
                self._check_verified(batch, guard)
            txn = append_batch(pending, batch, origin, transaction_version)
            if txn is not None:
                completed.append(txn)
        return None, pending, completed

    def _check_verified(self, batch, guard: int) -> None:
        """A client's or the coordinator's transactional batch outside a transaction open at its
        epoch (KIP-890): an epoch below the producer's is fenced; with verification on, a data
        batch must bring the guard of its producer's verification entry, so nothing transactional
        is written that the coordinator does not know is open (a stale guard: the ABA case)."""
        h, psm = batch.header(), self.producer_state
        if psm.has_ongoing_transaction(h.producer_id, h.producer_epoch):
            return
        psm.fence_older_epoch(h.producer_id, h.producer_epoch)
        verifying = self.config.transaction_partition_verification_enable
        if verifying and not batch.is_control and not psm.verifies(h.producer_id, guard):
            raise LogError("InvalidTxnStateException", "Record was not part of an ongoing transaction")

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
        create_time = self.config.message_timestamp_type != LOG_APPEND_TIME  # a stamped time is not checked
        for r in batch.records():
            keyless |= r.key is None and "compact" in self.config.cleanup_policy
            early |= create_time and now - r.timestamp > self.config.message_timestamp_before_max_ms
            late |= create_time and r.timestamp - now > self.config.message_timestamp_after_max_ms
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
        if any(s.base_offset == new_offset for s in self.segments):
            if not (active.base_offset == new_offset and active.size == 0):
                raise LogError("KafkaException", f"segment {new_offset} already exists")
            # KAFKA-6388: the empty active segment is deleted and created again
            self.segments[-1] = self.new_segment(new_offset)
            self.schedule_delete([active])
        elif new_offset < active.base_offset:
            raise LogError("KafkaException", f"roll to {new_offset} below the active segment {active.base_offset}")
        else:
            active.on_become_inactive()
            self.segments.append(self.new_segment(new_offset))
        self.mark_flushed(new_offset)
        # UnifiedLog.roll: a snapshot at the new segment's base (rule 11)
        self.producer_state.update_map_end(new_offset)
        self.producer_state.take_snapshot()
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
        found = self._read(start, max_bytes, max_offset, min_one)
        return found[2] if isinstance(found, tuple) else b""

    def read_committed(self, start: int, max_bytes: int, min_one: bool) -> tuple[bytes, list | None]:
        """A fetch at read_committed (FetchIsolation.TXN_COMMITTED): up to the last stable offset,
        with the aborted transactions (producer id, first offset) of the index entries the fetch
        overlaps (LocalLog.addAbortedTransactions, rule 60); none at all (None) when no segment
        answered."""
        found = self._read(start, max_bytes, self.last_stable_offset(), min_one)
        if not isinstance(found, tuple):
            return b"", [] if found else None
        seg, position, data = found
        bound = seg.offset_index.fetch_upper_bound_offset(position, len(data))
        later = self.after(seg.base_offset)
        upper = bound[0] if bound else later[0].base_offset if later else self.log_end_offset
        aborted = []
        for s in [seg, *self.after(seg.base_offset)]:
            txns, complete = s.txn_index.collect_aborted_txns(start, upper)
            aborted += [(t.producer_id, t.first_offset) for t in txns]
            if complete:
                break
        return data, aborted

    def last_stable_offset(self) -> int:
        """UnifiedLog.lastStableOffset with one replica (the high watermark is the log end):
        the first unstable offset, raised to the log start, else the log end (rule 58)."""
        first = self.producer_state.first_unstable_offset()
        return self.log_end_offset if first is None else min(max(first, self.log_start_offset), self.log_end_offset)

    def _read(self, start: int, max_bytes: int, max_offset: int | None, min_one: bool):
        """The segment that answered, the position its answer starts at and the bytes; True when
        the fetch was empty before any segment was asked (at or past ``max_offset``); None when
        no segment answered."""
        if not self.log_start_offset <= start <= self.log_end_offset:
            raise LogError("OffsetOutOfRangeException", f"offset {start} outside the log")
        max_offset = self.log_end_offset if max_offset is None else max_offset
        if not self.log_start_offset <= max_offset <= self.log_end_offset:
            raise LogError("OffsetOutOfRangeException", f"max offset {max_offset} outside the log")
        if start >= max_offset:
            return True
        limit_base, limit_position = self._offset_metadata(max_offset)
        start_segment = self.floor(start)
        for s in [start_segment] + self.after(start_segment.base_offset):
            limit = s.size if s.base_offset < limit_base else limit_position if s.base_offset == limit_base else None
            data = s.read(start, max_bytes, limit, min_one)
            if data is not None:
                return s, s.batch_at_or_after(start).position, data
        return None

    def _offset_metadata(self, offset: int) -> tuple[int, int]:
        """The segment and position a fetch bound at ``offset`` stops at (LogOffsetMetadata).  Below
        the log end: where the batch holding it starts, found by base offsets as
        convertToOffsetMetadataOrThrow finds it (a damaged legacy wrapper raises), else the log's
        end.  At the log end: Kafka keeps its metadata (nextOffsetMetadata) and reads nothing, so
        no batch is decoded — it is where the active segment's first batch reaching the log end
        starts, the bytes of an append that failed after writing them (full-index-mid-append),
        else the segment's end."""
        if offset == self.log_end_offset:
            return self.active.base_offset, self._end_position()
        for s in [self.floor(offset)] + self.after(self.floor(offset).base_offset):
            batch = s.batch_at_or_after(offset)
            if batch is not None:
                return s.base_offset, batch.position
        return self.active.base_offset, self.active.size

    def _end_position(self) -> int:
        """Last offsets only: a legacy wrapper's is its own offset, read without decompressing it."""
        try:
            for batch in framed(bytes(self.active.log)):
                if batch.header().last_offset >= self.log_end_offset:
                    return batch.position
        except RecordFormatError:
            pass  # damaged bytes a clean load kept: the log end's metadata is the segment's end
        return self.active.size

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
        return self._offset_for_timestamp(timestamp, Segment.content_max_timestamp)

    def offset_for_timestamp_by_kafkas_max(self, timestamp: int) -> tuple[int, int] | None:
        """Kafka's answer: the segments chosen by their ``maxTimestampSoFar``, which a truncation
        can lose (:meth:`stale_max_timestamp`; corpora/kafka-findings/lookup-by-a-lost-max-timestamp)."""
        return self._offset_for_timestamp(timestamp, lambda s: s.max_timestamp()[0])

    def stale_max_timestamp(self) -> bool:
        """A segment's max timestamp, as Kafka holds it, is below the largest its records carry: a
        truncation loaded it as −1 from the time index it had just emptied and kept it (§4.7
        rule 7), and only later appends raised it — or a close wrote that value as the final
        time-index entry, which the next load reads back."""
        return any(s.max_ts is not None and s.max_ts[0] < s.content_max_timestamp() for s in self.segments)

    def kept_max_timestamp(self) -> bool:
        """A segment's max timestamp, as Kafka holds it, is above the largest its records carry: a
        truncation recomputed it from a time-index entry it kept past the cut — a legacy entry whose
        relative offset overflowed reads back below the base (KAFKA-5413, §3.2) — so it names
        records the truncation removed."""
        return any(s.max_ts is not None and s.max_ts[0] > s.content_max_timestamp() for s in self.segments)

    def _offset_for_timestamp(self, timestamp: int, max_of: Callable[[Segment], int]) -> tuple[int, int] | None:
        if timestamp == EARLIEST_TIMESTAMP:
            return (-1, self.log_start_offset)
        if timestamp == LATEST_TIMESTAMP:
            return (-1, self.log_end_offset)
        if timestamp == MAX_TIMESTAMP:
            for s in self.segments:
                s.max_timestamp()  # loaded by Kafka's maxBy(_.maxTimestampSoFar) / readMaxTimestampAndOffsetSoFar
            best = self.segments[0]
            for s in self.segments[1:]:
                if max_of(s) > max_of(best):
                    best = s
            max_ts = max_of(best)
            for batch in best.lookup_batches():
                if batch.header().max_timestamp == max_ts:
                    offset = offset_of_max_timestamp(batch)
                    return None if offset is None else (max_ts, offset)
            return None
        for s in self.segments:
            s.max_timestamp()  # loaded by Kafka's largestTimestamp()
            ts = max_of(s)
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
        if self.segments[0].base_offset > target:
            self.truncate_fully_and_start_at(target)
            return True
        removed = self.after(target)
        self.remove_and_delete(removed)
        self.delete_producer_snapshots(removed)
        self.active.truncate_to(target, self.clock())
        self.set_log_end_offset(target)
        self.epochs_truncate_from_end(target)
        self.log_start_offset = min(target, self.log_start_offset)
        self.rebuild_producer_state(target)
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        old = list(self.segments)
        self.segments = [self.new_segment(new_offset)]
        self.schedule_delete(old)
        self.set_log_end_offset(new_offset)
        self.epochs_clear()
        self.producer_state.truncate_fully_and_start_at(new_offset)
        self.log_start_offset = new_offset
        self.rebuild_producer_state(new_offset)

    def rebuild_producer_state(self, last_offset: int) -> None:
        """UnifiedLog.rebuildProducerState at run time (rules 18, 19)."""
        try:
            rebuild(self.producer_state, self.segments, self.log_start_offset, last_offset, self.clock(), False)
        except RebuildError as e:
            raise LogError(getattr(e.cause, "kind", "KafkaException"), str(e)) from None

    def increment_log_start_offset(self, new_start: int) -> None:
        if new_start > self.log_end_offset:
            raise LogError("OffsetOutOfRangeException", f"log start {new_start} above the high watermark")
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            self.recovery_point = max(self.recovery_point, new_start)
            self.epochs_truncate_from_start(new_start)
            self.producer_state.on_log_start_offset_incremented(new_start)

    def delete_records(self, offset: int) -> int:
        """Partition.deleteRecordsOnLeader: −1 is the high watermark (the log end offset: one
        replica), any other negative offset is refused; then the log start offset is raised."""
        offset = self.log_end_offset if offset == HIGH_WATERMARK else offset
        if offset < 0:
            raise LogError("OffsetOutOfRangeException", f"The offset {offset} is not valid")
        self.increment_log_start_offset(offset)
        return self.log_start_offset

    # UnifiedLog.deleteOldSegments
    def delete_old_segments(self) -> int:
        """UnifiedLog.deleteOldSegments (§4.8): past the log start, over retention.bytes, then older
        than retention.ms by :meth:`Segment.largest_timestamp`.  Sets :attr:`kafkas_deleted`, the
        count Kafka's trust in a damaged final time-index entry gives instead, or None if the same."""
        self.kafkas_deleted = None
        n = self.delete_while(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset)
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
                now, limit = self.clock(), self.config.retention_ms
                kafkas = len(self._deletable(lambda s, _nxt: now - s.kafkas_largest_timestamp() > limit))
                # deleting every segment rolls first (§4.8): Kafka's roll then throws where the model's,
                # deleting fewer, did not run
                refused = kafkas == len(self.segments) and self._roll_refused()
                timed = self.delete_while(lambda s, _nxt: now - s.largest_timestamp() > limit)
                self.kafkas_deleted = None if kafkas == timed else REFUSED_ROLL if refused else n + kafkas
                n += timed
        return n

    def _roll_refused(self) -> bool:
        """Whether :meth:`roll` to the log end would throw (a non-empty segment there already,
        KAFKA-6388's rule, or the active segment above it), without rolling."""
        at = self.log_end_offset
        if any(s.base_offset == at for s in self.segments):
            return not (self.active.base_offset == at and self.active.size == 0)
        return at < self.active.base_offset

    def _deletable(self, predicate) -> list[Segment]:
        """The segments from the oldest on that ``predicate`` takes, stopping at the first it does
        not, at a segment not wholly below the log end, and at an empty active segment."""
        deletable = []
        for i, s in enumerate(self.segments):
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            upper = nxt.base_offset if nxt else self.log_end_offset
            if self.log_end_offset < upper or not predicate(s, nxt) or (nxt is None and s.size == 0):
                break
            deletable.append(s)
        return deletable

    def delete_while(self, predicate) -> int:
        deletable = self._deletable(predicate)
        if not deletable:
            return 0
        doomed = deletable
        if len(deletable) == len(self.segments):
            if self.roll().base_offset == deletable[-1].base_offset:
                doomed = deletable[:-1]
        if doomed:
            later = self.after(doomed[-1].base_offset)
            self.increment_log_start_offset(later[0].base_offset)
            self.remove_and_delete(doomed)
            self.delete_producer_snapshots(doomed)
        return len(deletable)

    def close(self) -> None:
        """LogManager's close job: prepareActiveSegmentForClose (the final time-index entry, which
        may throw: then nothing else runs), then UnifiedLog.close — a snapshot at the map end
        offset (rule 12), then the segments."""
        self.active.on_become_inactive()
        self.producer_state.take_snapshot()
        for s in self.segments:
            s.close()

    def holds_legacy_batches(self) -> bool:
        """Whether an inactive segment (what a cleaning round reads) holds a magic 0/1 batch."""
        return any(not b.is_v2 for s in self.segments[:-1] for b in s.batches())

    def clean(self) -> dict:
        """One log-cleaner round (:func:`model.cleaner.clean`).  The groups it installed, in order,
        stay in :attr:`installed_groups` when a later group fails the round: those stay cleaned
        (each group is swapped in on its own, §5.9), the rest as they were."""
        return clean(self)


def _origin(batches, leader: bool) -> str:
    """AppendOrigin: a follower's fetch is REPLICATION; a leader's end-transaction marker comes
    from the transaction coordinator (WriteTxnMarkers), any other batch from a client."""
    if not leader:
        return REPLICATION
    return COORDINATOR if batches and batches[0].is_control else CLIENT


REFUSED_ROLL = "KafkaException"  # Kafka's retention answer when the roll before deleting every segment throws

CODECS = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}


def recompressed(batch: Batch, compression_type: str) -> bytes | None:
    """LogValidator on a leader's v2 batch (§4.14): None when its offsets and stamp are set in place
    — both codecs none; or the topic's codec (``producer``: the batch's own) is the batch's and its
    records' offset deltas run 0, 1, 2, …; or an uncompressed control batch — else the batch rebuilt
    in the topic's codec (buildRecordsAndAssignOffsets, MemoryRecordsBuilder): its records at deltas
    0, 1, 2, … from the first one's timestamp, record attributes 0, the producer fields and the
    transactional bit kept, the control bit not, compressed as the broker compresses.  Base offset,
    leader epoch and a LogAppendTime stamp are set afterwards as in place."""
    source = batch.codec
    target = source if compression_type == "producer" else CODECS[compression_type]
    if source == NONE and (target == NONE or batch.is_control):
        return None
    records = batch.records()
    base = batch.header().offset
    if source == target and all(r.offset - base == i for i, r in enumerate(records)):
        return None
    h = batch.header()
    first_ts = records[0].timestamp if records else -1
    encoded = [
        Record(i, java_long(r.timestamp - first_ts), r.key, r.value, r.headers) for i, r in enumerate(records)
    ]
    payload = b"".join(encode_record(r) for r in encoded)
    return encode_batch_v2(
        records=encoded,
        payload=broker_compress(target, payload) if target else payload,
        codec=target,
        transactional=batch.is_transactional,
        base_timestamp=first_ts,
        max_timestamp=max((r.timestamp for r in records), default=-1),
        last_offset_delta=len(records) - 1 if records else 0,
        producer_id=h.producer_id,
        producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence,
        partition_leader_epoch=h.partition_leader_epoch,
    )


def offset_of_max_timestamp(batch: Batch) -> int | None:
    """RecordBatch.offsetOfMaxTimestamp: the first record carrying the batch's max timestamp
    (LogAppendTime records all carry it); none for magic 0."""
    h = batch.header()
    if h.magic == 0:
        return None
    return next((offset for offset, ts in batch.offsets_and_timestamps() if ts == h.max_timestamp), None)


# DefaultRecordBatch's attribute bits that setMaxTimestamp keeps (computeAttributes: the codec,
# transactional, control, delete horizon); the timestamp type is bit 3
KEPT_ATTRIBUTES = 0x07 | 0x10 | 0x20 | 0x40
LOG_APPEND_TIME_BIT = 0x08


def _stamp_log_append_time(data: bytearray, h, now: int) -> None:
    """LogValidator under ``message.timestamp.type=LogAppendTime`` (§4.14): the leader's
    setMaxTimestamp(LOG_APPEND_TIME, now) — the attributes rewritten with the timestamp type, the
    max timestamp made the broker's clock, the CRC computed again.  Records keep their own deltas
    and the base timestamp; a reader takes every record's timestamp from the max (§1.4)."""
    attributes = struct.unpack_from(">h", data, h.position + 21)[0] & KEPT_ATTRIBUTES | LOG_APPEND_TIME_BIT
    struct.pack_into(">h", data, h.position + 21, attributes)
    struct.pack_into(">q", data, h.position + 35, now)
    struct.pack_into(">I", data, h.position + 17, crc32c.crc32c(bytes(data[h.position + 21 : h.position + h.size])))
