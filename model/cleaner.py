"""One round of the log cleaner (compaction) on a :class:`model.log.Log` (spec §1.3, §1.4, §5.9,
§7.9; Kafka's ``LogCleaner.scala`` — ``Cleaner.doClean`` and what it calls — with
``MemoryRecords.filterTo``, ``MemoryRecordsBuilder``, ``DefaultRecordBatch`` and
``LocalLog.replaceSegments``).

What a round is here (the shared cleaner contract):

* Only a log whose ``cleanup.policy`` contains ``compact`` is cleaned (else ``NotCompacted``).
* The dirty section is the whole inactive log: firstDirtyOffset = the log start offset (no
  cleaner-offset-checkpoint is modelled), firstUncleanableOffset = the active segment's base (the
  high watermark is the log end offset, ``min.compaction.lag.ms`` is 0).
* The offset map holds, for every key in [firstDirty, firstUncleanable), the latest offset.
* The inactive segments are grouped (KAFKA-5413); each group is cleaned into one new segment
  (``.cleaned``) that replaces it (§5.9), its old segments renamed ``.deleted`` and deleted after
  ``file.delete.delay.ms`` like every other deletion of the log.
* ``now`` is the log's clock, read once per round (``Cleaner.clean`` passes ``time.milliseconds()``).

The reads follow the cleaner's own buffers, because they decide where the cleaned segment's
appends — and so its index entries — fall: a read buffer of 262144 bytes
(``log.cleaner.io.buffer.size`` 524288 / 1 thread / 2), one segment append per chunk that kept
something, the buffers doubled by ``growBuffersOrFail`` when not even one batch fits.  The cleaner
never checks a CRC (no ``ensureValid``): a batch whose CRC is wrong is filtered like any other.

Transactions (``CleanedTransactionMetadata``, KIP-98, KIP-534): the round stops below the last
stable offset; the data of aborted transactions (the transaction indexes' entries) is dropped
and maps no key; a marker stays until no data of its transaction is left and the delete horizon
the round that first found it so wrote in its header has passed; an active producer's last batch
is kept, emptied if need be, for the producer state; the cleaned segment's transaction index
holds the aborted transactions whose markers were kept because their data was still there.

The ``log`` every function here takes is a :class:`model.log.Log`, which runs a round through
``Log.clean``; this module imports only the segment layer (:mod:`model.segment`), so the log can
import it without a circle.
"""

from __future__ import annotations

import heapq
import itertools
import struct
from collections.abc import Iterator

import attrs

from model.compression import broker_compress
from model.errors import CORRUPT_RECORD, ILLEGAL_ARGUMENT, ILLEGAL_STATE, IndexFailure, LogError, RecordFormatError
from model.records import (
    CREATE_TIME,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    RECORD_OVERHEAD_V0,
    V2_HEADER_SIZE,
    Batch,
    Header,
    LogicalRecord,
    Record,
    encode_batch_v2,
    encode_record,
)
from model.indexes import AbortedTxn, TransactionIndex
from model.segment import INT32_MAX, Segment, prefix
from model.split import SplitError, split
from model.varint import java_long

IO_BUFFER_SIZE = 524288 // 1 // 2  # log.cleaner.io.buffer.size / log.cleaner.threads / 2 (CleanerThread)
OVERFLOW = "LogSegmentOffsetOverflowException"
RETAIN_EMPTY, DELETE, DELETE_EMPTY = "RETAIN_EMPTY", "DELETE", "DELETE_EMPTY"  # RecordFilter.BatchRetention


class CleaningError(LogError):
    """A failure inside a cleaning round (Kafka: the exception that ends ``Cleaner.clean``, after
    which the cleaner marks the partition uncleanable).  ``kind`` is Kafka's exception class;
    ``path`` and ``position`` name the source file and the byte position in it."""

    def __init__(self, kind: str, path: str, position: int, message: str):
        self.path, self.position = path, position
        super().__init__(kind, f"{path} at byte {position}: {message}")


def _file(log, seg: Segment) -> str:
    return f"{log.name}/{prefix(seg.base_offset)}.log"


# --- the offset map (SkimpyOffsetMap) ------------------------------------------------------------------


@attrs.define
class OffsetMap:
    """``SkimpyOffsetMap``: key → the offset last put for it, and ``latest_offset`` — whatever was
    put or set last (``put`` and ``updateLatestOffset`` both overwrite it; −1 when empty).

    Kafka stores an MD5 hash of the key in a 128 MiB dedupe buffer (``log.cleaner.dedupe.buffer.size``)
    and stops filling it at 90 % (``dupBufferLoadFactor``), leaving the rest of the dirty section for
    the next round.  Here the key bytes themselves are stored and the capacity is unbounded: no hash
    collision, and the map never fills (a 128 MiB map holds ~5.6 M keys, far beyond any log here)."""

    offsets: dict[bytes, int] = attrs.Factory(dict)
    latest_offset: int = -1

    def put(self, key: bytes, offset: int) -> None:
        self.offsets[key] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        return self.offsets.get(key, -1)


# --- reading a segment the way the cleaner does ---------------------------------------------------------


def _chunk_batches(data: bytes, position: int, capacity: int) -> Iterator[Batch]:
    """The batches of one read: ``FileRecords.readInto`` fills a buffer of ``capacity`` bytes from
    ``position`` and ``MemoryRecords.batches`` walks it with ``ByteBufferLogInputStream``: stop when
    fewer than 12 bytes (or 17, once the size is known) remain or the next batch does not fit the
    buffer; a size field below 14 or a magic outside 0…2 raises ``CorruptRecordException``.

    Lazy, so an error surfaces where Kafka's iterator meets it — after the batches before it were
    handled.  A v2 batch shorter than its 61-byte header is declared ``CorruptRecordException`` as the
    rest of the model declares it (:func:`model.file_records.framed_batches`); Kafka reads its header
    fields out of a short buffer slice (IndexOutOfBounds / IllegalArgument, depending on the field)."""
    end = min(len(data), position + capacity)
    p = position
    while True:
        remaining = end - p
        if remaining < LOG_OVERHEAD:
            return
        size = struct.unpack_from(">i", data, p + 8)[0]
        if size < RECORD_OVERHEAD_V0:
            raise RecordFormatError(
                CORRUPT_RECORD, "size-below-minimum", p,
                f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
            )  # fmt: skip
        if remaining < HEADER_SIZE_UP_TO_MAGIC:
            return
        magic = struct.unpack_from(">b", data, p + MAGIC_OFFSET)[0]
        if not 0 <= magic <= 2:
            raise RecordFormatError(CORRUPT_RECORD, "invalid-magic", p, f"Invalid magic found in record: {magic}")
        if remaining < size + LOG_OVERHEAD:
            return
        batch = Batch(p, bytes(data[p : p + size + LOG_OVERHEAD]))
        if magic == 2 and batch.size < V2_HEADER_SIZE:
            raise RecordFormatError(
                CORRUPT_RECORD, "batch-too-small", p, f"a v2 batch of {batch.size} bytes has no full header"
            )
        yield batch
        p += batch.size


def _grow_buffers_or_fail(data: bytes, position: int, capacity: int, max_message_bytes: int) -> int:
    """``Cleaner.growBuffersOrFail`` + ``growBuffers``: a read at ``position`` held no whole batch;
    the new buffer capacity, or the exception Kafka throws.  Below ``max.message.bytes`` the buffer
    simply doubles (capped there); from there on only a batch known to be larger, and present in
    full in the file, makes it grow — to exactly that batch's size.  (Kafka caps the doubling at the
    larger of the topic's ``max.message.bytes`` and the broker's ``message.max.bytes``; the broker
    setting is not modelled, both are ``max.message.bytes``.)"""
    if capacity >= max_message_bytes:
        next_size = _first_batch_size(data, position, min(len(data), position + capacity))
        if next_size is None:
            raise RecordFormatError(ILLEGAL_STATE, "no-batch-size", position, "Could not determine next batch size")
        if next_size <= capacity:
            raise RecordFormatError(
                ILLEGAL_STATE, "batch-not-processed", position,
                f"Batch size {next_size} < buffer size {capacity}, but not processed",
            )  # fmt: skip
        if next_size > len(data) - position:
            raise RecordFormatError(
                CORRUPT_RECORD, "batch-past-segment-end", position,
                f"Log segment may be corrupt, batch size {next_size} > {len(data) - position} bytes left in segment",
            )  # fmt: skip
        wanted = next_size
    else:
        wanted = max_message_bytes
    limit = max(wanted, max_message_bytes)
    if capacity >= limit:
        raise RecordFormatError(
            ILLEGAL_STATE, "message-too-large", position,
            f"This log contains a message larger than maximum allowable size of {limit}.",
        )  # fmt: skip
    return min(capacity * 2, limit)


def _first_batch_size(data: bytes, position: int, end: int) -> int | None:
    """``MemoryRecords.firstBatchSize``: None under 17 bytes, else ``nextBatchSize``'s checks (a size
    field below 14 or a bad magic raise) and the size with its log overhead."""
    if end - position < HEADER_SIZE_UP_TO_MAGIC:
        return None
    size = struct.unpack_from(">i", data, position + 8)[0]
    if size < RECORD_OVERHEAD_V0:
        raise RecordFormatError(CORRUPT_RECORD, "size-below-minimum", position, f"Record size {size} is below 14")
    magic = struct.unpack_from(">b", data, position + MAGIC_OFFSET)[0]
    if not 0 <= magic <= 2:
        raise RecordFormatError(CORRUPT_RECORD, "invalid-magic", position, f"Invalid magic found in record: {magic}")
    return size + LOG_OVERHEAD


# --- transactions (CleanedTransactionMetadata) ----------------------------------------------------------


def _marker_type(batch: Batch) -> str | None:
    """``ControlRecordType.parse`` of a control batch's first record's key: None for an empty
    batch (one an earlier round emptied), else ABORT, COMMIT or another type (kept as it is).  A
    control batch only damage makes — a record that does not decode, a key missing, under 4 bytes
    or of a negative version (Kafka: InvalidRecordException, or NullPointerException keyless), an
    ABORT/COMMIT value under 6 bytes (which Kafka's cleaner never reads) — is refused
    (``UnsupportedControlBatch``): what Kafka's cleaner does with one is not modelled."""
    try:
        records = batch.records()
    except RecordFormatError as e:
        raise RecordFormatError(
            "UnsupportedControlBatch", "control-batch", batch.position, f"a control batch Kafka's cleaner reads: {e}"
        ) from None
    if not records:
        return None
    if any(struct.unpack_from(">h", r.key, 0)[0] < 0 for r in records):  # keys under 4 bytes raised above
        raise RecordFormatError(
            "UnsupportedControlBatch", "control-batch", batch.position, "a control record key Kafka cannot parse"
        )
    return {"ABORT": "ABORT", "COMMIT": "COMMIT"}.get(records[0].control_type, "OTHER")


@attrs.define
class _Aborted:
    """An aborted transaction the round has reached (``AbortedTransactionMetadata``): its index
    entry, and whether a batch of it was read (and so dropped) in this round."""

    txn: AbortedTxn
    batch_seen: bool = False


@attrs.define
class _Transactions:
    """``CleanedTransactionMetadata``: which transactional batches and markers a round may drop.

    The aborted transactions of the transaction indexes (``pending``, by first offset) become
    ongoing as the round reaches their first offset; a transactional batch of a producer with an
    ongoing aborted transaction is aborted data (dropped, never mapped); any other transactional
    batch marks its producer's transaction as committed data seen.  A marker is discardable when
    nothing of its transaction was read this round: an ABORT whose data was read is kept and its
    entry written to the cleaned segment's transaction index (``cleaned_index``); a COMMIT is kept
    while its producer's committed data was read; an empty control batch is discardable; a marker
    of another type is kept."""

    pending: list[tuple[int, int, AbortedTxn]] = attrs.Factory(list)
    ongoing_aborted: dict[int, _Aborted] = attrs.Factory(dict)
    committed: set[int] = attrs.Factory(set)
    cleaned_index: TransactionIndex | None = None
    order: Iterator[int] = attrs.Factory(itertools.count)  # ties of first offset: as collected

    def add_aborted(self, txns: list[AbortedTxn]) -> None:
        for t in txns:
            heapq.heappush(self.pending, (t.first_offset, next(self.order), t))

    def _reach(self, offset: int) -> None:
        """``consumeAbortedTxnsUpTo``: every pending transaction starting at or before ``offset``
        becomes ongoing for its producer, unless one is already."""
        while self.pending and self.pending[0][0] <= offset:
            txn = heapq.heappop(self.pending)[2]
            self.ongoing_aborted.setdefault(txn.producer_id, _Aborted(txn))

    def on_control_batch_read(self, batch: Batch, h: Header) -> bool:
        self._reach(h.last_offset)
        kind = _marker_type(batch)
        if kind is None:
            return True
        if kind == "ABORT":
            aborted = self.ongoing_aborted.pop(h.producer_id, None)
            if aborted is not None and aborted.batch_seen:  # kept until its data is gone
                if self.cleaned_index is not None:
                    try:
                        self.cleaned_index.append(aborted.txn)
                    except IndexFailure as e:  # TransactionIndex.append: last offsets must increase
                        raise RecordFormatError(e.kind, e.reason, batch.position, str(e)) from None
                return False
            return True
        if kind == "COMMIT":
            seen = h.producer_id in self.committed
            self.committed.discard(h.producer_id)
            return not seen
        return False

    def on_batch_read(self, batch: Batch, h: Header) -> bool:
        """A data batch: True when it is aborted data."""
        self._reach(h.last_offset)
        if not batch.is_transactional:
            return False
        aborted = self.ongoing_aborted.get(h.producer_id)
        if aborted is not None:
            aborted.batch_seen = True
            return True
        self.committed.add(h.producer_id)
        return False

    def on_read(self, batch: Batch, h: Header) -> bool:
        """``shouldDiscardBatch``."""
        return self.on_control_batch_read(batch, h) if batch.is_control else self.on_batch_read(batch, h)


def collect_aborted(log, base: int, upper: int) -> list[AbortedTxn]:
    """``UnifiedLog.collectAbortedTransactions(base, upper)``: from the segment holding ``base``
    on, each transaction index's entries ending at or past the log start offset (Kafka passes the
    log start, not ``base``) and starting below ``upper``, until an index answers complete (an
    entry whose last stable offset reaches ``upper``, §3.7.6)."""
    floor = log.floor(base)
    if floor is None:
        return []
    out: list[AbortedTxn] = []
    for s in [floor, *log.after(floor.base_offset)]:
        txns, complete = s.txn_index.collect_aborted_txns(log.log_start_offset, upper)
        out += txns
        if complete:
            break
    return out


# --- the offset map ----------------------------------------------------------------------------------


def _segments(log, start: int, end: int) -> list[Segment]:
    """``LogSegments.values(from, to)`` for ``from`` < ``to``: from the segment holding ``start`` (or
    the first) to the last one with a base below ``end``."""
    floor = log.floor(start)
    low = floor.base_offset if floor is not None else None
    return [s for s in log.segments if (low is None or s.base_offset >= low) and s.base_offset < end]


def build_offset_map(log, start: int, end: int) -> OffsetMap:
    """``Cleaner.buildOffsetMap`` / ``buildOffsetMapForSegment``: every keyed record at an offset ≥
    ``start`` in the segments holding [start, end), read from where each segment's offset index puts
    ``start``.  ``latest_offset`` follows each batch reaching ``start`` and is set to the next
    segment's base − 1 after each segment (to ``end`` − 1 after the last).  The batches of aborted
    transactions (the transaction indexes' entries over [start, end)) put no key."""
    omap = OffsetMap()
    dirty = _segments(log, start, end)
    txns = _Transactions()
    txns.add_aborted(collect_aborted(log, start, end))
    for seg, next_start in zip(dirty, [s.base_offset for s in dirty[1:]] + [end], strict=True):
        data = bytes(seg.log)
        position = seg.offset_index.lookup(start)[1]
        capacity = IO_BUFFER_SIZE
        try:
            while position < len(data):
                start_position = position
                for batch in _chunk_batches(data, position, capacity):
                    h = batch.header()
                    if not txns.on_read(batch, h) and not batch.is_control:
                        for r in batch.records():
                            if r.key is not None and r.offset >= start:
                                omap.put(r.key, r.offset)
                    if h.last_offset >= start:
                        omap.latest_offset = h.last_offset
                    position += batch.size
                if position == start_position:
                    capacity = _grow_buffers_or_fail(data, position, capacity, log.config.max_message_bytes)
        except RecordFormatError as e:
            raise CleaningError(e.kind, _file(log, seg), e.position, f"building the offset map: {e}") from None
        omap.latest_offset = next_start - 1
    return omap


# --- grouping (KAFKA-5413) -----------------------------------------------------------------------------


def group_segments_by_size(
    segments: list[Segment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[Segment]]:
    """``Cleaner.groupSegmentsBySize``: consecutive segments while the group's log bytes stay within
    ``segment.bytes`` and each index's bytes (entries × entry size — every slot of an index loaded
    from disk, §3.1 rule 4) within ``segment.index.bytes``, and (KAFKA-5413) the candidate's last
    offset — estimated as the next segment's base − 1, or ``first_uncleanable`` − 1 for the last —
    stays within 2^31 − 1 of the group's base.  An empty candidate skips that last check."""
    groups: list[list[Segment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size = segments[i].size
        index_size = segments[i].offset_index.size_in_bytes()
        time_size = segments[i].time_index.size_in_bytes()
        i += 1
        while i < len(segments):
            s = segments[i]
            last = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            if not (
                log_size + s.size <= max_size
                and index_size + s.offset_index.size_in_bytes() <= max_index_size
                and time_size + s.time_index.size_in_bytes() <= max_index_size
                and (s.size == 0 or last - group[0].base_offset <= INT32_MAX)
            ):
                break
            group.append(s)
            log_size += s.size
            index_size += s.offset_index.size_in_bytes()
            time_size += s.time_index.size_in_bytes()
            i += 1
        groups.append(group)
    return groups


# --- filtering (MemoryRecords.filterTo with the cleaner's RecordFilter) ---------------------------------


@attrs.define
class _Round:
    """What every filter decision of the round reads."""

    omap: OffsetMap
    now: int
    delete_retention_ms: int
    upper: int  # upperBoundOffsetOfCleaningRound: the first uncleanable offset
    txns: _Transactions
    # lastRecordsOfActiveProducers: producer id → (last data offset or −1, epoch)
    producers: dict[int, tuple[int, int]] = attrs.Factory(dict)


@attrs.define
class _Chunk:
    """``FilterResult``: the output of one read and what the segment append is told."""

    out: bytearray = attrs.Factory(bytearray)
    bytes_read: int = 0
    max_offset: int = -1
    max_timestamp: int = NO_TIMESTAMP
    shallow_offset: int = -1

    def retained(self, batch: Batch, data: bytes, max_timestamp: int, shallow_offset: int, max_offset: int) -> None:
        """``updateRetainedBatchMetadata`` for what ``batch`` became, with its ``validateBatchMetadata``."""
        if max_timestamp != NO_TIMESTAMP and shallow_offset < 0:
            raise RecordFormatError(ILLEGAL_ARGUMENT, "no-shallow-offset", batch.position, "shallowOffset undefined")
        if max_offset < 0:
            raise RecordFormatError(ILLEGAL_ARGUMENT, "no-max-offset", batch.position, "maxOffset undefined")
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.shallow_offset = max_timestamp, shallow_offset
        self.max_offset = max(self.max_offset, max_offset)
        self.out += data


def _should_retain(rnd: _Round, batch: Batch, h: Header, r: LogicalRecord, retain_legacy_deletes: bool) -> bool:
    """``Cleaner.shouldRetainRecord``: past the map's latest offset, kept; a keyless record, dropped;
    otherwise kept if it is the latest for its key and has a value or its tombstone may not go yet —
    v2: the batch has no delete horizon or ``now`` < horizon; legacy: the segment is newer than the
    legacy delete horizon."""
    if r.offset > rnd.omap.latest_offset:
        return True
    if r.key is None:
        return False
    latest = r.offset >= rnd.omap.get(r.key)
    if batch.is_v2:
        keep_deletes = not batch.has_delete_horizon or rnd.now < h.base_timestamp
    else:
        keep_deletes = retain_legacy_deletes
    return latest and (r.value is not None or keep_deletes)


def _last_of_producer(rnd: _Round, batch: Batch, h: Header) -> bool:
    """Whether the batch holds what an active producer's state rests on: its last data offset (the
    last sequence), or — a producer with no data left — a marker of its current epoch (fencing)."""
    last = rnd.producers.get(h.producer_id)
    if last is None:
        return False
    offset, epoch = last
    if offset >= 0:
        return h.last_offset == offset
    return batch.is_control and h.producer_epoch == epoch


def _batch_retention(rnd: _Round, batch: Batch, h: Header) -> tuple[str, bool, bool]:
    """The cleaner's ``checkBatchRetention``: (retention, discard its records, containsMarkerForEmptyTxn).
    A batch of aborted data goes; a marker goes once nothing of its transaction was read and its
    delete horizon (set by the round that first found it discardable, KIP-534) has passed.  An
    active producer's last batch, and the last batch of the round (so the log keeps its last
    offset), are kept even when emptied."""
    can_discard = rnd.txns.on_read(batch, h)
    if batch.is_control:
        discard_records = can_discard and batch.has_delete_horizon and h.base_timestamp <= rnd.now
    else:
        discard_records = can_discard
    if h.producer_id >= 0 and _last_of_producer(rnd, batch, h):
        retention = RETAIN_EMPTY
    elif h.last_offset + 1 == rnd.upper:
        retention = RETAIN_EMPTY
    elif discard_records:
        retention = DELETE
    else:
        retention = DELETE_EMPTY
    return retention, discard_records, can_discard and batch.is_control


def _filter_chunk(rnd: _Round, data: bytes, position: int, capacity: int, retain_legacy_deletes: bool) -> _Chunk:
    """``MemoryRecords.filterTo`` over one read.  A batch keeping all its records, needing no new
    delete horizon, is copied byte for byte; one keeping some is rebuilt (:func:`_rebuild`); one
    keeping none is dropped, unless RETAIN_EMPTY keeps its header (``writeEmptyHeader``).  When the
    output outgrows the write buffer (as large as the read buffer) the read ends after that batch
    (KAFKA-5316: ``filterTo`` returns early)."""
    chunk = _Chunk()
    for batch in _chunk_batches(data, position, capacity):
        h = batch.header()
        retention, discard_records, marker_for_empty_txn = _batch_retention(rnd, batch, h)
        chunk.bytes_read += batch.size
        if retention == DELETE:
            continue
        kept: list[LogicalRecord] = []
        tombstones, write_original, max_offset = False, True, -1
        for r in batch.records():
            keep = False
            if not discard_records:
                keep = batch.is_control or _should_retain(rnd, batch, h, r, retain_legacy_deletes)
            if not keep:
                write_original = False
                continue
            if r.magic != h.magic:  # KAFKA-4298: a legacy wrapper holding records of another magic
                write_original = False
            max_offset = max(max_offset, r.offset)
            kept.append(r)
            tombstones = tombstones or r.value is None
        if kept:
            set_horizon = batch.is_v2 and (tombstones or marker_for_empty_txn) and not batch.has_delete_horizon
            if write_original and not set_horizon:
                chunk.retained(batch, batch.raw, h.max_timestamp, h.last_offset, h.last_offset)
            else:
                if set_horizon:
                    horizon = java_long(rnd.now + rnd.delete_retention_ms)
                else:
                    horizon = h.base_timestamp if batch.has_delete_horizon else NO_TIMESTAMP
                raw, max_ts, shallow = _rebuild(batch, h, kept, horizon)
                chunk.retained(batch, raw, max_ts, shallow, max_offset)
        elif retention == RETAIN_EMPTY:
            if not batch.is_v2:
                raise RecordFormatError(
                    ILLEGAL_STATE, "empty-legacy-batch", batch.position,
                    "Empty batches are only supported for magic v2 and above",
                )  # fmt: skip
            chunk.retained(batch, _empty_header(batch, h), h.max_timestamp, h.last_offset, h.last_offset)
        if len(chunk.out) > capacity:
            break
    return chunk


def _rebuild(batch: Batch, h: Header, kept: list[LogicalRecord], horizon: int) -> tuple[bytes, int, int]:
    """``buildRetainedRecordsInto`` with ``MemoryRecordsBuilder``: the kept records in a batch with
    the original's base offset, lastOffsetDelta (``overrideLastOffset``: the producer's last
    sequence survives), codec, timestamp type, partition leader epoch and producer fields.

    baseTimestamp is the delete horizon when there is one (≥ 0: the horizon bit set), else the first
    kept record's timestamp; record timestamp deltas are taken from it; maxTimestamp is the largest
    kept timestamp (LogAppendTime: the original's).  Record attributes are written 0, attribute bits
    Kafka does not know are dropped.  Returns the bytes and ``info()``: (maxTimestamp,
    shallowOffsetOfMaxTimestamp = the batch's last offset, or −1 with no timestamp).  Legacy batches
    are never rebuilt here (contract: ``UnsupportedLegacyRebuild``)."""
    if not batch.is_v2:
        raise RecordFormatError(
            "UnsupportedLegacyRebuild", "legacy-rebuild", batch.position,
            f"a magic {h.magic} batch would lose records; rebuilding legacy batches is not modelled",
        )  # fmt: skip
    has_horizon = horizon >= 0
    base_ts = horizon if has_horizon else None
    max_ts, last, records = NO_TIMESTAMP, None, []
    for r in kept:
        if last is not None and r.offset <= last:
            raise RecordFormatError(
                ILLEGAL_ARGUMENT, "offsets-not-increasing", batch.position,
                f"Illegal offset {r.offset} following previous offset {last} (Offsets must increase monotonically).",
            )  # fmt: skip
        if r.timestamp < 0 and r.timestamp != NO_TIMESTAMP:
            raise RecordFormatError(
                ILLEGAL_ARGUMENT, "negative-timestamp", batch.position, f"Invalid negative timestamp {r.timestamp}"
            )
        if base_ts is None:
            base_ts = r.timestamp
        records.append(Record(r.offset - h.offset, java_long(r.timestamp - base_ts), r.key, r.value, r.headers))
        max_ts = max(max_ts, r.timestamp)
        last = r.offset
    lat = batch.timestamp_type == LOG_APPEND_TIME
    if lat:
        max_ts = h.max_timestamp
    payload = b"".join(encode_record(r) for r in records)
    raw = encode_batch_v2(
        base_offset=h.offset,
        records=records,
        payload=broker_compress(batch.codec, payload) if batch.codec else payload,
        codec=batch.codec,
        timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME,
        transactional=batch.is_transactional,
        control=batch.is_control,
        delete_horizon=has_horizon,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        last_offset_delta=h.last_offset_delta,
        producer_id=h.producer_id,
        producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence,
        partition_leader_epoch=h.partition_leader_epoch,
        magic=h.magic,
    )
    shallow = h.last_offset if lat or max_ts != NO_TIMESTAMP else -1
    return raw, max_ts, shallow


def _empty_header(batch: Batch, h: Header) -> bytes:
    """``DefaultRecordBatch.writeEmptyHeader`` (§1.4 rule 2): the header alone, no records,
    uncompressed, baseTimestamp −1, the original maxTimestamp, no delete-horizon bit."""
    return encode_batch_v2(
        base_offset=h.offset,
        timestamp_type=batch.timestamp_type,
        transactional=batch.is_transactional,
        control=batch.is_control,
        base_timestamp=NO_TIMESTAMP,
        max_timestamp=h.max_timestamp,
        last_offset_delta=h.last_offset_delta,
        producer_id=h.producer_id,
        producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence,
        partition_leader_epoch=h.partition_leader_epoch,
        records_count=0,
        magic=h.magic,
    )


# --- cleaning a group ----------------------------------------------------------------------------------


class _Split(Exception):
    """The cleaned segment overflowed while ``source`` was cleaned into it."""

    def __init__(self, source: Segment):
        self.source = source


def clean_into(rnd: _Round, log, source: Segment, dest: Segment, retain_legacy_deletes: bool) -> None:
    """``Cleaner.cleanInto``: read ``source`` chunk by chunk, filter each read, append what it kept
    to ``dest`` as one segment append (``LogSegment.append`` with the read's max offset), whose
    index entries follow the kept batches (§4.2).  A read
    holding no whole batch grows the buffers (:func:`_grow_buffers_or_fail`)."""
    data = bytes(source.log)
    position, capacity = 0, IO_BUFFER_SIZE
    try:
        while position < len(data):
            chunk = _filter_chunk(rnd, data, position, capacity, retain_legacy_deletes)
            if chunk.out:
                try:
                    dest.append(chunk.max_offset, bytes(chunk.out), rnd.now)
                except LogError as e:
                    if e.kind == OVERFLOW:
                        raise _Split(source) from None
                    raise
                except IndexFailure as e:  # an index refusal of the cleaned segment's append
                    raise RecordFormatError(e.kind, e.reason, position, str(e)) from None
            position += chunk.bytes_read
            if chunk.bytes_read == 0:
                capacity = _grow_buffers_or_fail(data, position, capacity, log.config.max_message_bytes)
    except RecordFormatError as e:
        raise CleaningError(e.kind, _file(log, source), e.position, str(e)) from None


def clean_segments(rnd: _Round, log, group: list[Segment], legacy_delete_horizon: int) -> int | None:
    """``Cleaner.cleanSegments``: clean ``group`` into a new segment at its first base, make it
    inactive (final time-index entry, trimmed indexes), give it the last source's mtime and install
    it with replaceSegments (§5.9).  Returns None, or — when the cleaned segment overflowed (a legacy
    segment whose offsets exceed base + 2^31 − 1, §7.9) — the base of the source that was split and
    installed in its place (``splitOverflowedSegment``, §5.5) before the round is aborted.

    The new segment never enters the log before it is installed.  An abort (the split) deletes its
    ``.cleaned`` files; any other failure leaves them in the directory (:attr:`Log.cleaned_left`):
    Kafka's ``cleanSegments`` deletes them on ``LogCleaningAbortedException`` only.  The next load
    deletes them (§5.2 step 2f), and so does a later round's ``createNewCleanedSegment`` of that base.

    The cleaned segment's transaction index holds the entries of the aborted transactions whose
    markers the round kept because their data was read in it (:class:`_Transactions`); each
    source adds the aborted transactions over its offsets, up to the next source's base or, for
    the last, its readNextOffset (§4.5 rule 3)."""
    cleaned = _new_cleaned(log, group[0].base_offset)
    log.cleaned_left[cleaned.base_offset] = cleaned
    rnd.txns.cleaned_index = cleaned.txn_index
    rnd.producers = {p[0]: (p[3], p[1]) for p in log.producer_state.producers.values()}
    for i, source in enumerate(group):
        if i == len(group) - 1:
            try:
                upper = source.read_next_offset()
            except RecordFormatError as e:
                raise CleaningError(e.kind, _file(log, source), e.position, str(e)) from None
        else:
            upper = group[i + 1].base_offset
        rnd.txns.add_aborted(collect_aborted(log, source.base_offset, upper))
        retain_legacy_deletes = source.mtime_ms > legacy_delete_horizon
        try:
            clean_into(rnd, log, source, cleaned, retain_legacy_deletes)
        except _Split:
            try:
                new = split(source, lambda base: _new_cleaned(log, base), rnd.now)
            except SplitError as e:
                raise CleaningError(e.kind, _file(log, source), e.position, f"cannot split: {e}") from None
            except (IndexFailure, LogError) as e:
                raise CleaningError(e.kind, _file(log, source), 0, f"cannot split: {e}") from None
            log.replace_segments(new, [source])
            _forget_cleaned(log, cleaned)  # the abort deletes its files
            return source.base_offset
    try:
        cleaned.on_become_inactive()
    except IndexFailure as e:
        raise CleaningError(e.kind, _file(log, group[-1]), group[-1].size, str(e)) from None
    cleaned.mtime_ms = group[-1].mtime_ms
    _forget_cleaned(log, cleaned)
    log.replace_segments([cleaned], group)
    return None


def _new_cleaned(log, base: int) -> Segment:
    """``LocalLog.createNewCleanedSegment``: the ``.cleaned`` files a failed round left at ``base``
    deleted, a new segment opened."""
    log.cleaned_left.pop(base, None)
    return log.new_segment(base)


def _forget_cleaned(log, cleaned: Segment) -> None:
    """The round's segment no longer has ``.cleaned`` files: installed, or deleted by an abort."""
    if log.cleaned_left.get(cleaned.base_offset) is cleaned:
        del log.cleaned_left[cleaned.base_offset]


# --- one round -----------------------------------------------------------------------------------------


def clean(log) -> dict:
    """One cleaning round (``Cleaner.doClean``); returns ``{"groups": [[source bases], ...]}`` for the
    groups installed, plus ``"split": base`` when an overflow split aborted the round.

    Nothing to clean when the log start offset is at or past the active segment's base: Kafka's
    cleaner manager never picks such a log (its cleanable bytes are 0).  The legacy delete horizon
    (tombstones of v0/v1 records) is the mtime of the last segment below the first dirty offset minus
    ``delete.retention.ms``, 0 without one (Kafka's formula; only legacy tombstones read it)."""
    if "compact" not in log.config.cleanup_policy:
        raise LogError("NotCompacted", f"{log.name} has cleanup.policy={log.config.cleanup_policy}")
    now = log.clock()
    # LogCleanerManager.cleanableOffsets: never at or past the last stable offset (the first
    # offset of an open transaction; the high watermark, the log end here) nor the active segment;
    # min.compaction.lag.ms is 0
    first_dirty = log.log_start_offset
    first_uncleanable = max(first_dirty, min(log.last_stable_offset(), log.active.base_offset))
    log.installed_groups = []
    if first_dirty >= first_uncleanable:
        return {"groups": []}
    below = [s for s in log.segments if s.base_offset < first_dirty]
    legacy_delete_horizon = below[-1].mtime_ms - log.config.delete_retention_ms if below else 0
    omap = build_offset_map(log, first_dirty, first_uncleanable)
    end = omap.latest_offset + 1
    rnd = _Round(omap, now, log.config.delete_retention_ms, first_uncleanable, _Transactions())
    sources = [s for s in log.segments if s.base_offset < end] if end > 0 else []
    groups = group_segments_by_size(
        sources, log.config.segment_bytes, log.config.segment_index_bytes, first_uncleanable
    )
    installed: list[list[int]] = []
    log.installed_groups = installed  # read even when a later group fails the round (see Log)
    for group in groups:
        split_base = clean_segments(rnd, log, group, legacy_delete_horizon)
        if split_base is not None:
            return {"groups": installed, "split": split_base}
        installed.append([s.base_offset for s in group])
    return {"groups": installed}
