"""A log segment, executable: the ``.log`` bytes and the offset and time indexes of one segment,
with the roll and index bookkeeping (spec §4.1–§4.9; Kafka's ``LogSegment``).

Everything is in memory.  Reads and lookups answer from a scan of the batches, never from an index,
so they say what the log's content says (DESIGN.md "The model"); the indexes carry Kafka's
append-time entries, needed because a full index rolls the segment.  The partition log that owns
the segments is :mod:`model.log`.
"""

from __future__ import annotations

import attrs

from model.config import Config
from model.errors import CORRUPT_RECORD, KAFKA, IndexFailure, LogError, RecordFormatError
from model.file_records import framed, framed_batches, iterate_file, search_for_offset
from model.indexes import OffsetIndex, TimeIndex, TransactionIndex, rebuild_from_log
from model.names import filename_prefix
from model.producer_state import ProducerStateManager, read_producer
from model.records import V2_HEADER_SIZE, Batch

INT32_MAX = 2**31 - 1

# LogFileUtils.filenamePrefixFromOffset (§2.1): a base offset is negative only when damage made a
# batch's offset so, and a split at load names a segment after it
prefix = filename_prefix


class SegmentOffsetOverflow(Exception):
    """LogSegmentOffsetOverflowException out of :meth:`Segment.recover` (§4.6 step 3b): a batch's
    offset does not fit the segment's base, and the loader splits ``segment`` (§5.5, KAFKA-6264).
    ``written``: the offset and time indexes the recovery had rebuilt before that batch."""

    def __init__(self, segment: Segment, written: tuple[OffsetIndex, TimeIndex]):
        self.segment, self.written = segment, written
        super().__init__(f"offset overflow in segment {segment.base_offset}")


LOG_OVERHEAD = 12  # offset and size: what frames a batch of any magic
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_OVERHEAD_V0 = 14  # the smallest batch a size field may declare
LEGACY_TIMESTAMP_AT = 18  # a v1 message's timestamp, after its crc, magic and attributes
V2_MAX_TIMESTAMP_AT = 35


def first_batch_max_timestamp(log) -> int | None:
    """LogSegment.loadFirstBatchTimestamp (§4.3), what a roll check reads when the segment was not
    appended to since it was loaded: FileLogInputStream.nextBatch at position 0, then that batch's
    max timestamp, read by framing alone (no CRC, no magic check).  None when nextBatch finds no
    batch: fewer than 18 bytes in the file, or a batch longer than the file.  A size field below 14
    throws CorruptRecordException, so every append to the segment is refused (checked on Kafka
    4.4.0: ``corpora/log/append-refused-by-an-unreadable-first-batch.json``).  A magic below 2 (as a
    signed byte) is a legacy message: magic 0 has no timestamp, any other its int64 at 18.  Else the
    v2 header's 61 bytes are read whatever the batch's size says: a file shorter than that throws
    KafkaException (an EOF loading the header)."""
    end = len(log)
    if end - HEADER_SIZE_UP_TO_MAGIC <= 0:
        return None
    size = int.from_bytes(log[8:12], "big", signed=True)
    if size < RECORD_OVERHEAD_V0:
        raise RecordFormatError(
            CORRUPT_RECORD, "record-size-too-small", 0,
            f"Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
        )  # fmt: skip
    if end - LOG_OVERHEAD - size < 0:
        return None
    magic = int.from_bytes(log[16:17], "big", signed=True)
    if magic < 2:
        at = LEGACY_TIMESTAMP_AT
        return -1 if magic == 0 else int.from_bytes(log[at : at + 8], "big", signed=True)
    if end < V2_HEADER_SIZE:
        raise LogError(KAFKA, "Failed to load record batch at position 0: the record batch header is cut short")
    return int.from_bytes(log[V2_MAX_TIMESTAMP_AT : V2_MAX_TIMESTAMP_AT + 8], "big", signed=True)


@attrs.define(eq=False)
class Segment:
    """LogSegment (§4.1): the log bytes, the two indexes, and the roll/index bookkeeping."""

    base_offset: int
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
    txn_index: TransactionIndex = None  # the .txnindex: a file once it exists (§3.7)
    # its lazy indexes were never built, so no index file exists (a -delete log's new segment, §3.6)
    indexes_unmade: bool = False

    def __attrs_post_init__(self):
        if self.txn_index is None:
            self.txn_index = TransactionIndex(self.base_offset)
        if self.offset_index is None:
            self.offset_index = OffsetIndex.create(self.base_offset, self.config.segment_index_bytes)
        if self.time_index is None:
            self.time_index = TimeIndex.create(self.base_offset, self.config.segment_index_bytes)

    @property
    def size(self) -> int:
        return len(self.log)

    def batches(self) -> tuple[Batch, ...]:
        return iterate_file(bytes(self.log)).batches

    def fits(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

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

    def kafkas_largest_timestamp(self) -> int:
        """§4.8 as Kafka runs it: the max timestamp as held, a loaded final time-index entry trusted
        whatever it says (KAFKA-10207, KAFKA-19200; corpora/kafka-findings/retention-by-a-damaged-final-time-entry)."""
        ts = self.max_timestamp()[0]
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
        trim, Kafka's own lookups go by a bogus (0, base) last time-index entry instead.  Read as
        lookups read the log (:meth:`lookup_batches`)."""
        return max((b.header().max_timestamp for b in self.lookup_batches()), default=-1)

    def lookup_batches(self) -> tuple[Batch, ...]:
        """The batches as Kafka's lookups by timestamp walk them (``batchesFrom``, §4.8): by framing,
        a batch whose CRC fails read as any other (only consumers check CRCs, §4.5); a framing
        error ends the walk."""
        return iterate_file(bytes(self.log), validate=False).batches

    # §4.2
    def append(self, last_offset: int, data: bytes, now_ms: int) -> None:
        """§4.2 as Kafka 4.x runs it (LogSegment.append(largestOffset, records)): the write is one,
        the max timestamp and the index entries advance batch by batch — each batch's max
        timestamp with its last offset, an entry (its last offset, its position) whenever more
        than index.interval.bytes went by since the last one.  The rolling timestamp is the first
        batch's max timestamp (Kafka loads it from the file's first batch when it needs it)."""
        position = self.size
        # by framing, as MemoryRecords.batches() iterates: a split copies batches whose CRC may fail
        headers = [b.header() for b in iterate_file(data, validate=False).batches]
        bad = next((h for h in headers if not 0 <= h.magic <= 2), None)
        if bad is not None:  # MemoryRecords' ByteBufferLogInputStream refuses it (a split copying a damaged batch)
            raise RecordFormatError(
                CORRUPT_RECORD, "invalid-magic", bad.position, f"Invalid magic found in record: {bad.magic}"
            )
        if position == 0:
            self.rolling_based_timestamp = headers[0].max_timestamp
        if not self.fits(last_offset):
            raise LogError("LogSegmentOffsetOverflowException", f"offset {last_offset} in segment {self.base_offset}")
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

    # §4.3: segment.bytes and segment.ms are the log's, as they are now (RollParams, since 2.1: an
    # altered topic config rolls the active segment too); the jitter is the segment's own
    def should_roll(self, max_ts_in_messages: int, last_offset: int, size: int, now_ms: int, config=None) -> bool:
        config = self.config if config is None else config
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = first_batch_max_timestamp(self.log)
        rolling = -1 if self.rolling_based_timestamp is None else self.rolling_based_timestamp
        waited = max_ts_in_messages - rolling if rolling >= 0 else now_ms - self.created_ms
        return (
            self.size > config.segment_bytes - size
            or (self.size > 0 and waited > config.segment_ms - self.jitter_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.fits(last_offset)
        )

    # §4.4
    def on_become_inactive(self) -> None:
        self.time_index.maybe_append(*self.max_timestamp(), skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    # §4.5 rule 1, translateOffset
    def batch_at_or_after(self, offset: int) -> Batch | None:
        """The batch :func:`search_for_offset` finds for ``offset`` among this segment's batches by
        framing (a batch whose CRC fails is read as any other: consumers check CRCs, §4.5), from
        where a sound offset-index entry starts the scan (else from the file's start: the answer is
        the content's, DESIGN.md)."""
        return search_for_offset(framed(bytes(self.log), self._scan_start(offset)), offset)

    def _scan_start(self, offset: int) -> int:
        """The offset index's lower bound for ``offset`` when its entry (K, P) is sound — P is where
        a batch starts, at or before K, and K lies in the log: every batch before P then ends
        before K — else 0."""
        entry_offset, position = self.offset_index.lookup(offset)
        batches = self.lookup_batches()
        if position <= 0 or not batches or entry_offset > batches[-1].header().last_offset:
            return 0
        named = next((b for b in batches if b.position == position), None)
        return position if named is not None and named.header().offset <= entry_offset else 0

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
        return batches[-1].header().last_offset + 1 if batches else self.base_offset

    def read_next_offset(self) -> int:
        """§4.5 rule 3, readNextOffset as the loader runs it: scan from where the offset index puts
        its last entry; unless :func:`search_for_offset` finds a batch for that entry's offset (a
        base offset the CRC does not cover may have been damaged) the answer is the segment's base
        offset.  The scan is by framing alone (:func:`framed_batches`): a batch whose CRC fails
        counts, and a framing error raises :class:`RecordFormatError` — the load of a clean
        shutdown fails on it, as on a legacy wrapper the search cannot decompress."""
        start = self.offset_index.last_offset
        # translateOffset scans from max(the entry's position, 0): a damaged entry's negative
        # position scans the whole file (§4.5 rule 1; pinned by
        # corpora/crash/clean-load-clamps-a-negative-index-position.json)
        position = max(self.offset_index.lookup(start)[1], 0)
        batches = framed_batches(bytes(self.log), position)
        if search_for_offset(batches, start) is None:
            return self.base_offset
        return batches[-1].header().last_offset + 1

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
        """FileRecords.searchForTimestamp: the first record at or after ``timestamp`` and
        ``starting_offset``, in the batches whose max timestamp reaches it; decoding a damaged
        batch's records fails as Kafka's does."""
        for batch in self.lookup_batches():
            if batch.header().max_timestamp >= timestamp:
                for offset, ts in batch.offsets_and_timestamps():
                    if ts >= timestamp and offset >= starting_offset:
                        return ts, offset
        return None

    # §4.7
    def truncate_to(self, offset: int, now_ms: int) -> int:
        batch = self.batch_at_or_after(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
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

    # §4.6
    def recover(self, log) -> int:
        """LogSegment.recover (§4.6) on the model: the indexes rebuilt from the batches, the log cut
        after the last valid one, the new leader epochs found in v2 batches assigned to ``log``'s
        epoch cache (``log``: the :class:`model.log.Log` being loaded; its clock stamps a cut).
        Returns the bytes cut.  Raises :class:`SegmentOffsetOverflow` at a batch whose offset does
        not fit, and :class:`IndexFailure` when an index refuses an entry (a full one, §3.1) — the
        entries rebuilt before the refusal stay as the segment's indexes and the log is not cut.
        The producers of the batches kept are :meth:`recover_producer_state`'s."""
        self.txn_index.reset()  # rebuilt from the markers by the producer updates (rule 57)
        max_ts = (-1, self.base_offset)  # recover leaves maxTimestampAndOffsetSoFar known, not lazy (§4.6)
        overflow = None
        for batch in iterate_file(bytes(self.log)).batches:
            h = batch.header()
            if h.max_timestamp > max_ts[0]:
                max_ts = (h.max_timestamp, h.last_offset)
            if not self.fits(h.last_offset):
                overflow = batch.position
                break
        try:
            offsets, times, valid = self._rebuilt_indexes(overflow)
        except IndexFailure as e:
            self._assign_epochs(log, e.position)
            raise
        self._assign_epochs(log, overflow)
        if overflow is not None:
            # the batches before it were indexed first, and an index refusal among them comes first
            raise SegmentOffsetOverflow(self, (offsets, times))
        removed = self.size - valid
        del self.log[valid:]
        if removed:
            self.mtime_ms = log.clock()
        self.offset_index, self.time_index = offsets, times
        self.max_ts = max_ts
        return removed

    def _assign_epochs(self, log, stop_at: int | None) -> None:
        """§4.6 step 3f(i): each v2 batch before ``stop_at`` (where the recovery stopped: an index's
        refusal or an offset overflow, both raised before the batch's epoch is read) assigns a
        leader epoch newer than the cache's latest."""
        for batch in iterate_file(bytes(self.log)).batches:
            if stop_at is not None and batch.position >= stop_at:
                return
            h = batch.header()
            if h.magic >= 2 and h.partition_leader_epoch >= 0:
                if not log.epochs or h.partition_leader_epoch > log.epochs[-1][0]:
                    log.assign_epoch(h.partition_leader_epoch, h.offset)

    def _rebuilt_indexes(self, stop_at: int | None = None) -> tuple[OffsetIndex, TimeIndex, int]:
        """:func:`rebuild_from_log` on this segment; a refusal leaves the entries rebuilt before it
        as the segment's indexes (docs/crash-recovery.md, "a failed load")."""
        config = self.config
        try:
            return rebuild_from_log(
                bytes(self.log), self.base_offset, config.index_interval_bytes, config.segment_index_bytes, stop_at
            )
        except IndexFailure as e:
            if hasattr(e, "partial"):
                self.offset_index, self.time_index = e.partial
            raise

    def recover_producer_state(self, psm: ProducerStateManager) -> None:
        """The producer updates of LogSegment.recover (docs/producer-state.md rules 17, 57): each
        v2 batch the recovery kept updates its producer in ``psm`` (an aborted transaction it
        completes goes to this segment's transaction index), and the map end moves past the last."""
        v2 = [b for b in iterate_file(bytes(self.log)).batches if b.is_v2]
        for batch in v2:
            read_producer(psm, batch, self.txn_index)
        if v2:
            psm.update_map_end(v2[-1].header().last_offset + 1)

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
