"""One round of the log cleaner (compaction) on a :class:`impl.log.PartitionLog` — Kafka's
``Cleaner.doClean`` (core/src/main/scala/kafka/log/LogCleaner.scala) with ``MemoryRecords.filterTo``,
on real files through the storage protocol (spec §1.3, §1.4, §5.9, §7.9).

What one round does (the shared contract):

* firstDirtyOffset = the log start offset (no cleaner-offset-checkpoint is kept); firstUncleanableOffset
  = ``max(firstDirty, min(last stable offset, active segment's base))`` (LogCleanerManager.cleanableOffsets
  with no compaction lag, HW = LEO);
* transactions (:mod:`impl.cleaned_transaction_metadata`): aborted data dropped and never mapped,
  markers kept until their transaction's data is gone and their delete horizon (KIP-534) passed,
  an active producer's last batch kept (emptied if need be), the cleaned ``.txnindex`` rebuilt;
* :func:`build_offset_map` — one pass over the dirty segments: key bytes → offset of its last record;
* :func:`group_segments_by_size` — Kafka's grouping, with the KAFKA-5413 relative-offset check;
* per group, :func:`_clean_segments`: a ``.cleaned`` segment at the group's first base, each source
  segment filtered into it chunk by chunk (:func:`_clean_into`, Kafka's read buffer and its growth),
  then ``onBecomeInactiveSegment``, flush, the last source's mtime, and
  :func:`impl.split.replace_segments` (``.cleaned`` → ``.swap``, originals → ``.deleted`` and
  deleted after ``file.delete.delay.ms``, ``.swap`` → final, each step durable before the next);
* a cleaned segment whose append overflows its base (a legacy segment, KAFKA-6264) makes the round
  split the source segment, delete the ``.cleaned`` files and stop.

Costs: the dirty section is read twice, as Kafka reads it (map, then clean); per batch the records
are walked once (decompressed once) per pass and never turned into objects — a batch kept whole is
copied byte for byte, only a batch that lost records (or gets its delete horizon) is re-encoded.
Memory: one read chunk (256 KiB, up to ``max.message.bytes`` or the largest batch) and one batch's
decompressed records at a time, plus the offset map.  The map is a dict with no capacity limit: Kafka's
is a 128 MiB dedupe buffer (``log.cleaner.dedupe.buffer.size``) of MD5 hashes, which in a round this
size never fills — so every dirty segment is mapped, and no two keys collide.

Errors: every refusal is declared — :class:`impl.errors.LogFormatError` with Kafka's exception class
as ``kind``, the file and the byte position, or :class:`impl.errors.LogError` (``NotCompacted``).
"""

from __future__ import annotations

import struct

from impl.cleaned_transaction_metadata import (
    CleanedTransactionMetadata,
    UnreadableMarker,
    collect_aborted_transactions,
    marker_type,
)
from impl.errors import IndexFailure, LogError, LogFormatError
from impl.file_records import BatchHeader
from impl.record_walk import _varint, record_fields, v2_headers, v2_key, v2_value
from impl.record_writer import attributes_of, encode_batch, encode_empty_batch, encode_record, to_long
from impl.segment import CLEANED_SUFFIX, INT32_MAX, LogSegment, LogSegmentOffsetOverflow, filename_prefix
from impl.split import SplitError, split_overflowed_segment

READ_BUFFER = 524288 // 1 // 2  # log.cleaner.io.buffer.size / log.cleaner.threads / 2 (read and write buffers)
MAX_IO_BUFFER = 1048588  # CleanerConfig.maxMessageSize = the broker's message.max.bytes default
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")

CORRUPT = "CorruptRecordException"
ILLEGAL_STATE = "IllegalStateException"
ILLEGAL_ARGUMENT = "IllegalArgumentException"

_int32 = struct.Struct(">i").unpack_from
_int8 = struct.Struct(">b").unpack_from
_v2_header = struct.Struct(">qiibIhiqqqhii").unpack_from
_legacy_header = struct.Struct(">qxxxxIbb").unpack_from
_int64 = struct.Struct(">q").unpack_from


class _Aborted(Exception):
    """LogCleaningAbortedException after the split of an overflowed source segment."""

    def __init__(self, base: int):
        self.base = base


class _Fail(Exception):
    """A refusal inside a pass, before the file is known: kind, reason, position, detail."""


def _fail(kind: str, reason: str, position: int, detail: str) -> _Fail:
    return _Fail(kind, reason, position, detail)


# --- batches in a read chunk (ByteBufferLogInputStream) --------------------------------------------


def _batches_in(view, pos: int, end: int):
    """The complete batches of the chunk ``view[pos:end]`` as Kafka's in-memory iteration finds
    them: a size field below 14 or a magic outside 0–2 is a CorruptRecordException wherever it is
    met; a batch that does not fit the chunk ends the iteration; no CRC is checked (the cleaner
    never calls ensureValid).  Headers of a v2 batch shorter than its 61-byte header are not read."""
    while True:
        remaining = end - pos
        if remaining < 12:
            return
        size = _int32(view, pos + 8)[0]
        if size < 14:
            raise _fail(
                CORRUPT,
                "size-below-minimum",
                pos,
                f"Record size {size} is less than the minimum record overhead (14)",
            )
        if remaining < 17:
            return
        magic = _int8(view, pos + 16)[0]
        if magic < 0 or magic > 2:
            raise _fail(CORRUPT, "invalid-magic", pos, f"Invalid magic found in record: {magic}")
        total = size + 12
        if total > INT32_MAX:  # Java's int addition wraps: a negative slice limit
            raise _fail(ILLEGAL_ARGUMENT, "batch-size-overflow", pos, f"newLimit < 0: ({total - 2**32} < 0)")
        if remaining < total:
            return
        yield _header(view, pos, total, magic)
        pos += total


def _header(view, pos: int, total: int, magic: int) -> BatchHeader:
    if magic < 2:
        offset, crc, magic, attributes = _legacy_header(view, pos)
        ts = _int64(view, pos + 18)[0] if magic == 1 else -1
        return BatchHeader(pos, total, offset, offset, magic, crc, attributes, -1, -1, ts, ts, -1, -1, -1, -1)
    if total < 61:  # only its size and magic are known: the accessors Kafka calls fail (_short_v2)
        attributes = _int8(view, pos + 22)[0] & 0xFF
        return BatchHeader(pos, total, 0, 0, magic, 0, attributes, 0, 0, 0, 0, -1, 0, 0, 0)
    base, _, ple, magic, crc, attributes, lod, bts, mts, pid, pep, bseq, cnt = _v2_header(view, pos)
    return BatchHeader(
        pos, total, base, base + lod, magic, crc, attributes & 0xFF, ple, lod, bts, mts, pid, pep, bseq, cnt
    )


def _short_v2(h: BatchHeader) -> _Fail:
    """A v2 batch under 61 bytes: its header fields cannot be read.  Declared
    CorruptRecordException, as the loader's framing walk declares it (Kafka reads the fields out of
    a short buffer slice and throws IndexOutOfBounds or IllegalArgument by which field comes first)."""
    return _fail(CORRUPT, "batch-too-small", h.position, f"a v2 batch of {h.size} bytes has no full header")


def _control_kind(view, h: BatchHeader) -> int | None:
    """The marker type of control batch ``h`` (None: emptied); a control batch only damage makes
    is refused as not modelled (impl.cleaned_transaction_metadata.marker_type)."""
    try:
        data, recs = record_fields(view, h)
        return marker_type([(v2_key(data, r[2]), _varint(data, r[3])[0]) for r in recs])
    except (UnreadableMarker, LogFormatError, IndexError, ValueError) as e:
        reason = f"a control batch Kafka's cleaner reads: {e}"
        raise _fail("UnsupportedControlBatch", "control-batch", h.position, reason) from None


def _transactions_read(view, h: BatchHeader, txns: CleanedTransactionMetadata) -> bool:
    """Cleaner.shouldDiscardBatch: the batch told to the transaction metadata; True when it may go
    (aborted data, or a marker nothing of whose transaction was read)."""
    if h.magic < 2:  # a legacy batch is never transactional, but the round reaches its offsets
        return txns.on_batch_read(h.last_offset, -1, False)
    if h.attributes & 0x20:
        kind = _control_kind(view, h)
        try:
            return txns.on_control_batch_read(h.last_offset, h.producer_id, kind)
        except IndexFailure as e:  # TransactionIndex.append of the cleaned segment
            raise _fail(e.kind, e.reason, h.position, str(e)) from None
    return txns.on_batch_read(h.last_offset, h.producer_id, bool(h.attributes & 0x10))


# --- the read buffer (Cleaner.growBuffersOrFail / growBuffers) -------------------------------------


def _grow(capacity: int, max_message: int, view, pos: int, chunk_end: int, file_size: int, path: str) -> int:
    """The next read-buffer capacity after a chunk in which not one batch was complete."""
    if capacity >= max_message:
        where = f"log segment {path} at position {pos}"
        if chunk_end - pos < 17:
            raise _fail(ILLEGAL_STATE, "no-batch-size", pos, f"Could not determine next batch size for {where}")
        next_size = _int32(view, pos + 8)[0] + 12
        if next_size > INT32_MAX:
            next_size -= 2**32
        if next_size <= 0:
            raise _fail(ILLEGAL_STATE, "invalid-batch-size", pos, f"Invalid batch size {next_size} for {where}")
        if next_size <= capacity:
            raise _fail(
                ILLEGAL_STATE,
                "batch-not-processed",
                pos,
                f"Batch size {next_size} < buffer size {capacity}, but not processed for {where}",
            )
        left = file_size - pos
        if next_size > left:
            raise _fail(
                CORRUPT,
                "batch-past-end",
                pos,
                f"Log segment may be corrupt, batch size {next_size} > {left} bytes left in segment for {where}",
            )
        max_size = next_size
    else:
        max_size = max_message
    limit = max(max_size, MAX_IO_BUFFER)
    if capacity >= limit:
        raise _fail(
            ILLEGAL_STATE,
            "message-too-large",
            pos,
            f"This log contains a message larger than maximum allowable size of {limit}.",
        )
    return min(capacity * 2, limit)


# --- record fields ---------------------------------------------------------------------------------


def _legacy_key(data, key_at: int, key_len: int):
    return bytes(data[key_at : key_at + key_len]) if key_len >= 0 else None


# --- the offset map (Cleaner.buildOffsetMap / buildOffsetMapForSegment) ------------------------------


def build_offset_map(log, start: int, end: int) -> tuple[dict[bytes, int], int]:
    """Key → offset of the last record with that key among the records at or above ``start`` of
    the segments ``log.logSegments(start, end)``, and the map's latest offset (``end`` − 1 once a
    segment was mapped, else −1).  Each dirty segment is read once, from the offset index's entry
    for ``start``; a batch's records are walked once.  Unbounded: see the module docstring."""
    offsets: dict[bytes, int] = {}
    dirty = log.segments_in_range(start, end)
    txns = CleanedTransactionMetadata()
    txns.add_aborted_transactions(collect_aborted_transactions(log, start, end))
    for segment in dirty:
        try:
            _map_segment(segment, offsets, start, log.config.max_message_bytes, txns)
        except _Fail as e:
            raise _declared(e, segment.log_path) from None
        except LogFormatError as e:
            e.file = segment.log_path
            raise
    return offsets, (end - 1 if dirty else -1)


def _map_segment(segment: LogSegment, offsets: dict, start: int, max_message: int, txns) -> None:
    # buildOffsetMapForSegment reads from the offset index's entry for ``start`` as the index holds
    # it, in every dirty segment: a damaged entry is where the read starts (no proof, no shadow)
    position = segment.offset_index.get().lookup(start)[1]
    size = segment.size
    view = segment.view()
    capacity = READ_BUFFER
    read = 0
    try:
        while position < size:
            chunk_end = min(position + capacity, size)
            valid = 0
            for h in _batches_in(view, position, chunk_end):
                if h.magic >= 2 and h.size < 61:
                    raise _short_v2(h)
                if _transactions_read(view, h, txns) or (h.magic >= 2 and h.attributes & 0x20):
                    valid += h.size  # aborted data maps no key; a marker's record is no key
                    continue
                data, recs = record_fields(view, h)
                if h.magic >= 2:
                    for offset, _ts, key_at, _v, _h, _e in recs:
                        if offset >= start:
                            key = v2_key(data, key_at)
                            if key is not None:
                                offsets[key] = offset
                else:
                    for offset, _ts, key_at, key_len, _vp, _vl, _m in recs:
                        if key_len >= 0 and offset >= start:
                            offsets[bytes(data[key_at : key_at + key_len])] = offset
                valid += h.size
            read += valid
            if valid == 0:
                capacity = _grow(capacity, max_message, view, position, chunk_end, size, segment.log_path)
            position += valid
    finally:
        segment.storage.stats.add("log_bytes_read", read)
        if isinstance(view, memoryview):
            view.release()


# --- grouping (Cleaner.groupSegmentsBySize, KAFKA-5413) ---------------------------------------------


def _index_bytes(lazy) -> int:
    """Kafka's ``sizeInBytes`` of an inactive segment's index: entries × entry size, where an index
    opened from a file counts every slot of it (§3.1 rule 4) — the file's length, since inactive
    indexes are trimmed (impl's proof never rewrites the file, impl.index_verify.ShadowIndexes)."""
    index = lazy.get()
    return index.length // index.ENTRY_SIZE * index.ENTRY_SIZE


def group_segments_by_size(
    segments: list[LogSegment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[LogSegment]]:
    """Consecutive segments whose log sizes and index sizes each total at most the limits and
    whose offsets fit relative to the group's first base — estimated by the next segment's base
    (or ``first_uncleanable``) − 1; an empty segment skips that check."""
    groups = []
    i = 0
    while i < len(segments):
        first = segments[i]
        group = [first]
        log_size = first.size
        index_size = _index_bytes(first.offset_index)
        time_size = _index_bytes(first.time_index)
        i += 1
        while i < len(segments):
            s = segments[i]
            last = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            if not (log_size + s.size <= max_size):
                break
            s_index = _index_bytes(s.offset_index)
            if not (index_size + s_index <= max_index_size):
                break
            s_time = _index_bytes(s.time_index)
            if not (time_size + s_time <= max_index_size):
                break
            if not (s.size == 0 or last - first.base_offset <= INT32_MAX):
                break
            group.append(s)
            log_size += s.size
            index_size += s_index
            time_size += s_time
            i += 1
        groups.append(group)
    return groups


# --- filtering one chunk (MemoryRecords.filterTo with the cleaner's RecordFilter) --------------------


class _Filter:
    """The round's constants: the map, its latest offset, now, delete.retention.ms, the round's
    upper bound (a batch ending there is kept even if emptied), legacy tombstone retention."""

    def __init__(self, offsets: dict, latest: int, now: int, retention_ms: int, upper_bound: int):
        self.offsets = offsets
        self.latest = latest
        self.now = now
        self.retention_ms = retention_ms
        self.upper_bound = upper_bound
        self.retain_legacy_deletes = True  # per source segment
        self.txns = CleanedTransactionMetadata()  # one for the round, carried across its groups
        self.producers: dict[int, tuple[int, int]] = {}  # active producer → (last data offset, epoch)


class _Chunk:
    """FilterResult: the bytes retained and what the segment append needs."""

    __slots__ = ("out", "bytes_read", "max_offset", "max_timestamp", "shallow")

    def __init__(self):
        self.out = bytearray()
        self.bytes_read = 0
        self.max_offset = -1
        self.max_timestamp = -1
        self.shallow = -1

    def retained(self, max_timestamp: int, shallow: int, max_offset: int, at: int) -> None:
        if max_timestamp != -1 and shallow < 0:
            raise _fail(
                ILLEGAL_ARGUMENT,
                "shallow-offset-undefined",
                at,
                f"shallowOffset undefined for maximum timestamp {max_timestamp}",
            )
        if max_offset < 0:
            raise _fail(ILLEGAL_ARGUMENT, "max-offset-undefined", at, "maxOffset undefined")
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.shallow = max_timestamp, shallow
        self.max_offset = max(self.max_offset, max_offset)


def _filter_chunk(view, pos: int, end: int, capacity: int, f: _Filter) -> _Chunk:
    chunk = _Chunk()
    for h in _batches_in(view, pos, end):
        if h.magic >= 2 and h.size < 61:
            raise _short_v2(h)
        chunk.bytes_read += h.size
        retain_empty, drop_records, empty_txn_marker = _retention(view, h, f)
        if drop_records and not retain_empty:
            continue  # BatchRetention.DELETE
        _filter_batch(view, h, f, chunk, retain_empty, drop_records, empty_txn_marker)
        if len(chunk.out) > capacity:
            break  # the write buffer had to grow (KAFKA-5316): filterTo returns after this batch
    return chunk


def _retention(view, h: BatchHeader, f: _Filter) -> tuple[bool, bool, bool]:
    """checkBatchRetention: (kept even if emptied, its records all dropped, a marker whose
    transaction left nothing — containsMarkerForEmptyTxn).  A marker's records go only once its
    delete horizon has passed (KIP-534); an active producer's last batch (its last sequence, or
    with no data left a marker of its epoch) and the round's last batch are kept emptied."""
    can_discard = _transactions_read(view, h, f.txns)
    if h.magic < 2:
        return h.last_offset + 1 == f.upper_bound, False, False
    control = bool(h.attributes & 0x20)
    horizon_passed = bool(h.attributes & 0x40) and h.base_timestamp <= f.now
    drop = can_discard and (horizon_passed or not control)
    last = f.producers.get(h.producer_id) if h.producer_id >= 0 else None
    producers_last = last is not None and (
        h.last_offset == last[0] if last[0] >= 0 else control and h.producer_epoch == last[1]
    )
    return producers_last or h.last_offset + 1 == f.upper_bound, drop, can_discard and control


def _filter_batch(
    view, h: BatchHeader, f: _Filter, chunk: _Chunk, retain_empty: bool, drop_records: bool, empty_txn_marker: bool
) -> None:
    data, recs = record_fields(view, h)
    v2 = h.magic >= 2
    control = v2 and bool(h.attributes & 0x20)
    horizon = h.base_timestamp if v2 and h.attributes & 0x40 else None
    retain_deletes = (horizon is None or f.now < horizon) if v2 else f.retain_legacy_deletes
    retained = []
    write_original = True
    tombstones = False
    max_offset = -1
    offsets, latest = f.offsets, f.latest
    for r in recs:
        offset = r[0]
        if drop_records or control:
            has_value = _varint(data, r[3])[0] >= 0
            keep = not drop_records
        elif v2:
            has_value = _varint(data, r[3])[0] >= 0
            if offset > latest:
                keep = True
            else:
                key = v2_key(data, r[2])
                keep = key is not None and offset >= offsets.get(key, -1) and (has_value or retain_deletes)
        else:
            has_value = r[5] >= 0
            if offset > latest:
                keep = True
            else:
                key = _legacy_key(data, r[2], r[3])
                keep = key is not None and offset >= offsets.get(key, -1) and (has_value or retain_deletes)
        if keep:
            if not v2 and r[6] != h.magic:  # KAFKA-4298: inner magic differs from the wrapper's
                write_original = False
            max_offset = max(max_offset, offset)
            retained.append(r)
            if not has_value:
                tombstones = True
        else:
            write_original = False
    if retained:
        set_horizon = v2 and (tombstones or empty_txn_marker) and horizon is None
        if write_original and not set_horizon:
            chunk.out += view[h.position : h.position + h.size]
            chunk.retained(h.max_timestamp, h.last_offset, h.last_offset, h.position)
            return
        if not v2:
            raise _fail(
                "UnsupportedLegacyRebuild",
                "legacy-rebuild",
                h.position,
                f"a v{h.magic} batch that lost records (or whose records' magic differs) would be re-encoded",
            )
        new_horizon = to_long(f.now + f.retention_ms) if set_horizon else (-1 if horizon is None else horizon)
        batch, max_ts, shallow = _rebuild(h, data, retained, new_horizon)
        chunk.out += batch
        chunk.retained(max_ts, shallow, max_offset, h.position)
    elif retain_empty:
        if not v2:
            raise _fail(
                ILLEGAL_STATE,
                "legacy-empty-batch",
                h.position,
                "Empty batches are only supported for magic v2 and above",
            )
        chunk.out += encode_empty_batch(
            h.offset,
            h.last_offset_delta,
            h.partition_leader_epoch,
            bool(h.attributes & 0x08),
            bool(h.attributes & 0x10),
            bool(h.attributes & 0x20),
            h.max_timestamp,
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
        )
        chunk.retained(h.max_timestamp, h.last_offset, h.last_offset, h.position)


def _rebuild(h: BatchHeader, data, retained: list, horizon: int) -> tuple[bytes, int, int]:
    """MemoryRecordsBuilder over the retained records (buildRetainedRecordsInto): same base offset,
    lastOffsetDelta, codec, timestamp type, leader epoch and producer fields; baseTimestamp = the
    delete horizon when there is one (≥ 0), else the first record's timestamp.  Returns the batch,
    its max timestamp and shallow offset of it (RecordsInfo)."""
    log_append_time = bool(h.attributes & 0x08)
    has_horizon = horizon >= 0
    base_ts = horizon if has_horizon else None
    body = bytearray()
    last = None
    max_ts = -1
    for offset, ts, key_at, value_at, headers_at, _end in retained:
        ts = to_long(ts)
        if last is not None and offset <= last:
            raise _fail(
                ILLEGAL_ARGUMENT,
                "non-monotonic-offsets",
                h.position,
                f"Illegal offset {offset} following previous offset {last} (Offsets must increase monotonically).",
            )
        if ts < 0 and ts != -1:
            raise _fail(ILLEGAL_ARGUMENT, "negative-timestamp", h.position, f"Invalid negative timestamp {ts}")
        if base_ts is None:
            base_ts = ts
        body += encode_record(
            offset - h.offset,
            to_long(ts - base_ts),
            v2_key(data, key_at),
            v2_value(data, value_at),
            v2_headers(data, headers_at),
        )
        last = offset
        if ts > max_ts:
            max_ts = ts
    attributes = attributes_of(
        h.attributes & 0x07, log_append_time, bool(h.attributes & 0x10), bool(h.attributes & 0x20), has_horizon
    )
    header_max = h.max_timestamp if log_append_time else max_ts
    batch = encode_batch(
        h.offset,
        h.last_offset_delta,
        h.partition_leader_epoch,
        attributes,
        base_ts,
        header_max,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        len(retained),
        body,
    )
    if log_append_time:
        return batch, h.max_timestamp, h.last_offset
    if max_ts == -1:
        return batch, -1, -1
    return batch, max_ts, h.last_offset


def _clean_into(source: LogSegment, dest: LogSegment, f: _Filter, max_message: int) -> None:
    """Cleaner.cleanInto: ``source`` filtered into ``dest`` one read chunk at a time, one segment
    append per chunk that kept anything (so ``dest``'s index entries follow the chunks)."""
    view = source.view()
    size = source.size
    position = 0
    capacity = READ_BUFFER
    read = 0
    try:
        while position < size:
            chunk_end = min(position + capacity, size)
            try:
                chunk = _filter_chunk(view, position, chunk_end, capacity, f)
            except LogFormatError as e:
                e.file = source.log_path
                raise
            except _Fail as e:
                raise _declared(e, source.log_path) from None
            read += chunk.bytes_read
            position += chunk.bytes_read
            if chunk.out:
                dest.append(chunk.max_offset, bytes(chunk.out))
            if chunk.bytes_read == 0:
                try:
                    capacity = _grow(capacity, max_message, view, position, chunk_end, size, source.log_path)
                except _Fail as e:
                    raise _declared(e, source.log_path) from None
    finally:
        source.storage.stats.add("log_bytes_read", read)
        if isinstance(view, memoryview):
            view.release()


def _declared(e: _Fail, path: str) -> LogFormatError:
    kind, reason, position, detail = e.args
    return LogFormatError(kind, reason, position, detail, file=path)


# --- one group, one round ------------------------------------------------------------------------


def _new_cleaned(log, base: int) -> LogSegment:
    """LocalLog.createNewCleanedSegment: any ``.cleaned`` files of ``base`` deleted, a new one opened."""
    prefix = f"{log.dir}/{filename_prefix(base)}"
    for suffix in (*INDEX_SUFFIXES, ".log"):
        path = prefix + suffix + CLEANED_SUFFIX
        if log.storage.exists(path):
            log.storage.unlink(path)
    return log.new_segment(base, CLEANED_SUFFIX)


def _set_last_modified(segment: LogSegment, ms: int) -> None:
    """LogSegment.setLastModified: the log, offset index and time index files."""
    storage = segment.storage
    storage.set_mtime_ms(segment.log_path, ms)
    for path in (segment.offset_index.path, segment.time_index.path):
        if storage.exists(path):
            storage.set_mtime_ms(path, ms)


def _clean_segments(log, group: list[LogSegment], f: _Filter, legacy_horizon: int) -> None:
    cleaned = _new_cleaned(log, group[0].base_offset)
    f.txns.cleaned_index = cleaned.txn_index
    f.producers = {e[0]: (e[3], e[1]) for e in log.producer_state.producers.values()}
    installing = False
    try:
        for i, source in enumerate(group):
            # the aborted transactions over the source's offsets: to the next source's base, the
            # last one's to its readNextOffset (§4.5 rule 3), so the cleaned index is rebuilt whole
            upper = group[i + 1].base_offset if i + 1 < len(group) else _read_next_offset(source)
            f.txns.add_aborted_transactions(collect_aborted_transactions(log, source.base_offset, upper))
            f.retain_legacy_deletes = log.storage.mtime_ms(source.log_path) > legacy_horizon
            try:
                _clean_into(source, cleaned, f, log.config.max_message_bytes)
            except LogSegmentOffsetOverflow:
                _split(log, source)
                raise _Aborted(source.base_offset) from None
        cleaned.on_become_inactive()
        cleaned.flush()
        _set_last_modified(cleaned, log.storage.mtime_ms(group[-1].log_path))
        installing = True
        log._replace_segments([cleaned], group)
    except _Aborted:
        # Cleaner.cleanSegments deletes the .cleaned files on LogCleaningAbortedException only;
        # any other failure leaves them for the next load to delete (§5.2 step 2f)
        if not installing:
            _discard(cleaned)
        raise


def _read_next_offset(source: LogSegment) -> int:
    try:
        return source.read_next_offset()
    except LogFormatError as e:
        e.file = source.log_path
        raise


def _discard(cleaned: LogSegment) -> None:
    try:
        cleaned.delete_if_exists()
    except OSError:
        pass  # Kafka: addSuppressed; the original failure is what the caller sees


def _split(log, source: LogSegment) -> None:
    """UnifiedLog.splitOverflowedSegment (§5.5) on the live log."""
    try:
        new = split_overflowed_segment(source, lambda base: _new_cleaned(log, base))
    except SplitError as e:
        raise LogFormatError(e.kind, "split-failed", e.position, str(e), file=source.log_path) from None
    log._replace_segments(new, [source])


def clean(log) -> dict:
    """One cleaning round (Cleaner.doClean): ``{"groups": [[source bases], ...]}`` for the groups
    installed, plus ``"split": base`` when an overflowed source segment was split and the round
    aborted."""
    if not log.config.compact_enabled:
        raise LogError("NotCompacted", f"{log.dir}: cleanup.policy is {log.config.cleanup_policy!r}")
    now = log.clock()
    first_dirty = log.log_start_offset
    # LogCleanerManager.cleanableOffsets: below the last stable offset (an open transaction's first
    # offset, else the high watermark = the log end) and the active segment; no compaction lag
    first_uncleanable = max(first_dirty, min(log.last_stable_offset(), log.active_segment.base_offset))
    # the horizon for v0/v1 tombstones: the last segment below firstDirty's mtime − delete.retention.ms
    below = log.segments_in_range(0, first_dirty)
    legacy_horizon = log.storage.mtime_ms(below[-1].log_path) - log.config.delete_retention_ms if below else 0
    offsets, latest = build_offset_map(log, first_dirty, first_uncleanable)
    end_offset = latest + 1
    groups = group_segments_by_size(
        log.segments_in_range(0, end_offset),
        log.config.segment_bytes,
        log.config.segment_index_bytes,
        first_uncleanable,
    )
    f = _Filter(offsets, latest, now, log.config.delete_retention_ms, first_uncleanable)
    done: list[list[int]] = []
    for group in groups:
        try:
            _clean_segments(log, group, f, legacy_horizon)
        except _Aborted as e:
            return {"groups": done, "split": e.base}
        done.append([s.base_offset for s in group])
    return {"groups": done}
