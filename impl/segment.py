"""LogSegment: one ``.log`` file with its lazy offset and time indexes and its txn index (spec §4).

Kafka's rules, step by step as §4.2–§4.12 give them, through the storage protocol.  Two things are
better than Kafka, and neither changes what a reader sees:

* the indexes of a segment that was loaded without recovery (trusted below the recovery point, or
  after a clean shutdown, KIP-263) are *proven on first use* (the producer-state rebuild's reads,
  which start where the index says 0, leave it to the next lookup) against one scan of the log; if unsound,
  lookups go through entries rebuilt in memory (:class:`impl.index_verify.ShadowIndexes`), so a
  lookup never follows a wrong entry.  The index files, and what Kafka decides from them (a roll on
  a full index, the entries appends and truncations write, the max timestamp loaded from the last
  time entry), stay Kafka's: a closer look changes no state;
* index truncation zeroes the dropped slots (:mod:`impl.index`).
"""

from __future__ import annotations

import collections
import contextlib
import struct

from crc32c import crc32c

from impl.config import LogConfig
from impl.errors import IndexFailure, LogError, LogFormatError
from impl.file_records import BatchScan, has_producer, v2_header_at
from impl.index import CORRUPT, ZERO_PADDED, LazyIndex, OffsetIndex, TimeIndex
from impl.index_verify import ShadowIndexes, soundness_problem
from impl.producer_runs import KEPT_BATCHES, collapse
from impl.record_walk import base_offset, end_marker, offset_of_max_timestamp, search_for_timestamp
from impl.storage import Storage
from impl.txn_index import TransactionIndex

try:  # recovery's plain-batch loop, compiled by the install (setup.py); absent: the Python loop below
    from impl._batch_walk import collapse as _compiled_collapse
    from impl._batch_walk import frame as _compiled_frame
    from impl._batch_walk import walk as _compiled_walk
except ImportError:  # pragma: no cover - built wherever a C compiler is
    _compiled_walk = _compiled_collapse = _compiled_frame = None
COMPILED_WALK = _compiled_walk is not None

INT32_MAX = 2**31 - 1
# FileLogInputStream's framing: the bytes up to a batch's magic, the smallest size a batch may
# declare (a v0 message's overhead), and the v2 header a batch's max timestamp is read from
_UP_TO_MAGIC, _RECORD_OVERHEAD_V0, _V2_HEADER = 17, 14, 61
# what recovery reads of a v2 batch (§1.2): base offset, length, partition leader epoch, magic, crc,
# attributes, last offset delta, (base timestamp skipped) max timestamp, producer id
_V2_FIELDS = struct.Struct(">qiibIhi8xqq")
_v2_fields = _V2_FIELDS.unpack_from
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


class LogSegmentOffsetOverflow(Exception):
    """LogSegmentOffsetOverflowException: an offset not representable relative to the base (§4.2, §4.6)."""

    def __init__(self, segment: LogSegment, offset: int):
        self.segment = segment
        self.offset = offset
        super().__init__(
            f"{segment.log_path}: offset {offset} cannot be stored relative to base offset {segment.base_offset}"
        )


def filename_prefix(offset: int) -> str:
    """§2.1: the base offset in decimal, zero-padded to 20 digits."""
    return f"{offset:020d}" if offset >= 0 else "-" + f"{-offset:020d}"


def _unclean(index) -> str | None:
    """Why lookups cannot go by an index as Kafka holds it, before any proof: it is corrupt, or Kafka
    counts its zero tail as entries (impl.index), which breaks their order.  A time index whose sole
    slot is (0, base) may hold a real entry (a segment whose newest timestamp is 0): the proof
    judges it against the log."""
    if index.recognition == CORRUPT:
        return f"{index.path}: {index.recognition_detail}"
    if index.recognition == ZERO_PADDED and not (isinstance(index, TimeIndex) and index.entries == 1):
        return f"{index.path}: slots {index.recognised}.. are zero padding, which Kafka counts as entries"
    return None


class LogSegment:
    def __init__(
        self,
        storage: Storage,
        directory: str,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        jitter_ms: int = 0,
        suffix: str = "",
        existing: bool = False,
        preallocate: bool = False,
        listed=None,
    ):
        """``listed``: the names in ``directory`` as the loader has just listed them (§5.3); whether
        the index files exist is then answered from them, not with a stat each."""
        self.storage = storage
        self.dir = directory
        self.base_offset = base_offset
        self.config = config
        name = filename_prefix(base_offset)
        prefix = f"{directory}/{name}"
        self.log_path = prefix + ".log" + suffix
        # FileRecords.open opens with CREATE: a load that lists another name for this base
        # ("0.log") opens the canonical one, made empty if it is not there (checked on Kafka 4.4.0)
        missing = listed is not None and f"{name}.log{suffix}" not in listed
        self._log = storage.open(self.log_path, create=not existing or missing)
        if not existing and preallocate:
            self._log.truncate(config.segment_bytes)  # FileRecords.open: length set, logical end 0
            self._size = 0
        else:
            self._size = self._log.size()
            if self._size > INT32_MAX:  # FileRecords' constructor: a segment is at most Int.MAX bytes
                self._log.close()
                raise LogError(
                    "KafkaException",
                    f"The size of segment {self.log_path} ({self._size}) is larger than the maximum allowed "
                    f"segment size of {INT32_MAX}",
                )
        max_index_size = config.segment_index_bytes
        self.offset_index = LazyIndex(storage, f"{prefix}.index{suffix}", OffsetIndex, base_offset, max_index_size)
        self.time_index = LazyIndex(storage, f"{prefix}.timeindex{suffix}", TimeIndex, base_offset, max_index_size)
        txn_exists = None if listed is None else f"{name}.txnindex{suffix}" in listed
        self.txn_index = TransactionIndex(storage, f"{prefix}.txnindex{suffix}", base_offset, txn_exists)
        if listed is not None:
            self._offset_index_listed = f"{name}.index{suffix}" in listed
        self.roll_jitter_ms = jitter_ms
        self.created_ms = now_ms
        self.recovered_producers: list = []  # set by recover(): (header, marker) the producer state reads
        self.indexes_checked = not existing  # set by the loader for segments it recovered
        # the other attributes start as the class's values (below): a load makes one object per
        # segment, and every assignment here was a good part of what a clean start costs per segment

    # their values until set on the segment (immutable, so shared safely)
    _offset_index_listed: bool | None = None  # the .index was in the loader's listing (None: not listed)
    bytes_since_last_index_entry = 0
    _read_counter = "log_bytes_read"  # the IoStats counter batches() adds to
    recovered_map_end: int | None = None  # set by recover()
    rolling_based_timestamp: int | None = None
    _max_ts: tuple[int, int] | None = None  # (timestamp, shallow offset); None = not loaded
    _max_ts_as_loaded = False  # _max_ts is still the last time entry as loaded (§4.1)
    # the content's max (timestamp, offset) while Kafka's is −1 after a truncation (see truncate_to)
    _content_max: tuple[int, int] | None = None
    rebuilt_because: str | None = None  # why lookups go through a shadow (indexes unsound)
    _shadow: ShadowIndexes | None = None

    # --- files ------------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self._size

    def view(self):
        """The valid bytes of the ``.log`` file (zero-copy where the backend allows)."""
        whole = self._log.view()
        return memoryview(whole)[: self._size] if len(whole) != self._size else whole

    def batches(self, start: int = 0, framing_only: bool = False, lookup: bool = False):
        """Batch headers from ``start``; every batch scanned counts as log bytes read (added when
        the iteration ends or is abandoned: one locked add per scan, not per batch).

        ``framing_only``: as Kafka's ``batchesFrom`` iterator walks them for readers that never
        call ``ensureValid`` (§1.10): a CRC mismatch goes unnoticed, and a framing error (a size
        field below 14, a v2 batch too short for its header) raises a LogFormatError naming the
        file.  ``lookup``: by framing too, as lookups by timestamp walk them, a framing error ending
        the walk (spec §4.8).  Otherwise the scan stops quietly before the first invalid batch."""
        read = 0
        scan = BatchScan(self.view(), start, check_crc=not (framing_only or lookup))
        counter = self._read_counter
        try:
            for header in scan:
                read += header.size
                yield header
        finally:
            self.storage.stats.add(counter, read)
        if framing_only and scan.error is not None:
            _raise_scan_error(scan, self.log_path)

    def _indexes(self):
        """Kafka's offset and time indexes, materialised (what appends, rolls, truncations and
        closes use, as Kafka's own)."""
        return self.offset_index.get(), self.time_index.get()

    def _proven(self) -> ShadowIndexes | None:
        """The proof on first use (module docstring): None if Kafka's indexes are sound for
        lookups, else the shadow entries lookups use instead."""
        if not self.indexes_checked:
            self.indexes_checked = True
            self.storage.stats.add(self._read_counter, self._size)
            problem = self._unsoundness()
            if problem:
                self.rebuilt_because = problem
                self._shadow = ShadowIndexes(self.view(), self.base_offset, self.config.index_interval_bytes)
        return self._shadow

    def _unsoundness(self) -> str | None:
        """Why Kafka's indexes cannot serve this segment's lookups (one scan of the log), or None."""
        offsets, times = self._indexes()
        view = self.view()
        problem = _unclean(offsets) or _unclean(times) or soundness_problem(offsets, times, view, inactive=True)
        if not problem and not times.entries and any(h.max_timestamp > 0 for h in BatchScan(view, check_crc=False)):
            # sound for lookups, but Kafka's max timestamp (−1) is not the content's, which
            # timestamp searches go by: the shadow keeps that
            problem = f"{times.path} is empty, the log has timestamps"
        return problem

    def prospective_lookup_entries(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The entries lookups use, and for a segment no lookup has used yet those its proof on
        first use will give, without proving it (nothing counted, nothing changed): after a fault
        an unused index may hold what no lookup will ever go by (an unsynced resize's zero slot,
        read as an entry, in a segment a resurrected clean-shutdown marker kept from recovery)."""
        if self.indexes_checked or not self._unsoundness():
            return self.lookup_entries()
        return ShadowIndexes(self.view(), self.base_offset, self.config.index_interval_bytes).entries

    def lookup_entries(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The (offset, position) and (timestamp, offset) entries lookups go by: the shadow's if the
        indexes proved unsound, else the index files' (as loaded; not proven here)."""
        if self._shadow is not None:
            return self._shadow.entries
        return self.offset_index.get().logical_entries(), self.time_index.get().logical_entries()

    def _offset_lookup(self, target: int) -> tuple[int, int]:
        shadow = self._proven()
        return shadow.offset_lookup(target) if shadow else self.offset_index.get().lookup(target)

    def _time_lookup(self, target: int) -> tuple[int, int]:
        shadow = self._proven()
        return shadow.time_lookup(target) if shadow else self.time_index.get().lookup(target)

    # --- timestamps (§4.1, §4.8) ---------------------------------------------------------------------

    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """maxTimestampAndOffsetSoFar, Kafka's: loaded lazily from the time index's last entry."""
        if self._max_ts is None:
            self._max_ts = self.time_index.get().last_entry
            self._max_ts_as_loaded = True
        return self._max_ts

    def _set_max_ts(self, value: tuple[int, int] | None) -> None:
        self._max_ts = value
        self._max_ts_as_loaded = False

    def max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset()[0]

    def content_max_timestamp_and_offset(self) -> tuple[int, int]:
        """The largest batch max timestamp in the log and the offset holding it — what lookups go
        by.  Kafka's value unless the indexes proved unsound (then it may be a damaged entry's) or
        a truncation left Kafka's at −1 (see :meth:`truncate_to`)."""
        shadow = self._proven()
        if shadow:
            return shadow.content_max
        return self._content_max or self.max_timestamp_and_offset()

    def content_largest_timestamp(self) -> int:
        """§4.8's rule over the content's max timestamp (what a timestamp search compares)."""
        ts = self.content_max_timestamp_and_offset()[0]
        return ts if ts >= 0 else self.storage.mtime_ms(self.log_path)

    def largest_timestamp(self) -> int:
        """§4.8 (retention): the max timestamp if any batch had one ≥ 0, else the ``.log`` file's
        mtime.  A max timestamp still as loaded from an index that proved unsound is not trusted:
        the content's is used (KAFKA-10207, KAFKA-19200: a zeroed or padded final entry would read
        the segment's newest record as 1970 and retention would delete it early).  Kafka's count of
        entries decides whether there was one to load: a zeroed final entry is one to Kafka (§3.1
        rule 4; pinned by corpora/found/conforms-cddb3b239d and conforms-e7426a4ecb)."""
        ts = self.max_timestamp_so_far()
        if self._max_ts_as_loaded and self.time_index.get().entries and self._proven():
            ts = self._shadow.content_max[0]
        return ts if ts >= 0 else self.storage.mtime_ms(self.log_path)

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    # --- append and roll (§4.2, §4.3) --------------------------------------------------------------

    def append(self, largest_offset: int, data) -> None:
        """§4.2 as Kafka 4.x runs it: one write, then batch by batch the max timestamp (with the
        batch's last offset) and, past index.interval.bytes, an index entry (its last offset, its
        position).  The rolling timestamp is the first batch's max timestamp."""
        if not data:
            return
        position = self._size
        headers = list(BatchScan(data, check_crc=False))
        bad = next((h for h in headers if not 0 <= h.magic <= 2), None)
        if bad is not None:  # MemoryRecords' ByteBufferLogInputStream refuses it (a split copying a damaged batch)
            raise LogFormatError(
                "CorruptRecordException",
                "invalid-magic",
                bad.position,
                f"Invalid magic found in record: {bad.magic}",
                self.log_path,
            )
        if position == 0:
            self.rolling_based_timestamp = headers[0].max_timestamp
        if not self.can_convert_to_relative_offset(largest_offset):
            raise LogSegmentOffsetOverflow(self, largest_offset)
        self._log.write_at(position, data)
        self._size += len(data)
        for h in headers:
            ts, last = h.max_timestamp, h.last_offset
            if self._content_max is not None and ts > self._content_max[0]:
                self._content_max = None  # this batch holds Kafka's max and the content's now
            if ts > self.max_timestamp_so_far():
                self._set_max_ts((ts, last))
            if self._shadow is not None:
                self._shadow.appended(ts, last)
            if self.bytes_since_last_index_entry > self.config.index_interval_bytes:
                offsets, times = self._indexes()
                offsets.append(last, position)
                times.maybe_append(*self.max_timestamp_and_offset())
                self.bytes_since_last_index_entry = 0
            position += h.size
            self.bytes_since_last_index_entry += h.size

    def _load_first_batch_timestamp(self) -> None:
        """§4.3, LogSegment.loadFirstBatchTimestamp: the first batch's max timestamp from its
        header alone (FileLogInputStream.nextBatch at 0, no CRC or magic check), at most 61 bytes
        read whatever the file's size.  No batch (fewer than 18 bytes, or one longer than the file)
        leaves it unknown; a size field below 14 is CorruptRecordException and a v2 header cut
        short KafkaException, so the append that asked is refused (checked on Kafka 4.4.0)."""
        if self.rolling_based_timestamp is not None or self._size <= _UP_TO_MAGIC:
            return
        head = self._log.read(0, min(self._size, _V2_HEADER))
        (size,) = struct.unpack_from(">i", head, 8)
        if size < _RECORD_OVERHEAD_V0:
            raise LogFormatError(
                "CorruptRecordException", "record-size-too-small", 0,
                f"Found record size {size} smaller than minimum record overhead ({_RECORD_OVERHEAD_V0})",
                self.log_path,
            )  # fmt: skip
        if size > self._size - 12:
            return
        magic = struct.unpack_from(">b", head, 16)[0]
        if magic < 2:  # a legacy message: magic 0 has no timestamp, magic 1 (or junk) its field at 18
            self.rolling_based_timestamp = -1 if magic == 0 else struct.unpack_from(">q", head, 18)[0]
        elif len(head) < _V2_HEADER:
            raise LogError("KafkaException", f"Failed to load record batch at position 0 from {self.log_path}")
        else:
            self.rolling_based_timestamp = struct.unpack_from(">q", head, 35)[0]

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        self._load_first_batch_timestamp()
        ts = -1 if self.rolling_based_timestamp is None else self.rolling_based_timestamp
        return message_timestamp - ts if ts >= 0 else now_ms - self.created_ms

    def should_roll(self, max_segment_ms, max_segment_bytes, max_ts_in_messages, max_offset_in_messages, size, now):
        reached_roll_ms = self.time_waited_for_roll(now, max_ts_in_messages) > max_segment_ms - self.roll_jitter_ms
        return (
            self._size > max_segment_bytes - size
            or (self._size > 0 and reached_roll_ms)
            or self.offset_index.get().is_full()
            or self.time_index.get().is_full()
            or not self.can_convert_to_relative_offset(max_offset_in_messages)
        )

    def on_become_inactive(self) -> None:
        """§4.4: the final time-index entry, then trim both indexes and the log."""
        offsets, times = self._indexes()
        times.maybe_append(*self.max_timestamp_and_offset(), skip_full_check=True)
        offsets.trim_to_valid_size()
        times.trim_to_valid_size()
        self._trim_log()
        # Better than Kafka: the post-roll flush starts at the recovery point, so when that is
        # already this segment's end, Kafka never makes the trims and the final time entry durable;
        # a power loss can then leave (0, base) as the last time entry — time retention reads the
        # segment's newest record as 1970 and deletes it.  Syncing here costs two fsyncs per roll.
        offsets.sync()
        times.sync()

    def _trim_log(self) -> None:
        if self._log.size() != self._size:
            self._log.truncate(self._size)

    # --- lookups (§4.5, §4.8) ----------------------------------------------------------------------

    def translate_position(self, offset: int) -> int:
        """Where a scan for ``offset`` may start: the proven offset index's lower bound."""
        return self._offset_lookup(offset)[1]

    def translate_offset(self, offset: int, starting_position: int = 0, prove: bool = True):
        """FileRecords.searchForOffsetFromPosition as Kafka 4.1+ runs it (KAFKA-18989), by framing
        (a batch whose CRC fails is read as any other): from the index's lower bound, the first batch whose base offset is ``offset``; at the first base
        offset above it, the batch before if that one reaches ``offset``, else that one; past the
        last batch, the last if it reaches ``offset``.  A legacy wrapper's base offset is found by
        decompressing it (LogFormatError where that fails)."""
        start = max(self._scan_start(offset, prove), starting_position)
        return _search_for_offset(self.batches(start, framing_only=True), offset, self.view())[0]

    def _scan_start(self, offset: int, prove: bool = True) -> int:
        """Kafka's offset-index lower bound for ``offset`` when its entry (K, P) is sound — P is
        where a batch starts, at or before K, and K lies in the log (proven for every entry, or
        checked here by a scan when the indexes proved unsound) — else 0."""
        key, position = self.offset_index.get().lookup(offset)
        if position <= 0 and not prove:
            return 0  # a scan from the start is right whatever the index holds: the proof can wait
        if self._proven() is None:
            return position
        if position <= 0:
            return 0
        named, last = None, None
        for header in self.batches():
            named = header if header.position == position else named
            last = header.last_offset
        return position if named is not None and named.offset <= key <= last else 0

    def marker(self, h):
        """The end-transaction marker of control batch ``h`` (:func:`impl.record_walk.end_marker`);
        None for any other batch."""
        return end_marker(self.view(), h) if h.magic >= 2 and h.attributes & 0x20 else None

    def scan_batches(self, start_offset: int, last_offset: int | None, each=lambda header: None) -> int:
        """rebuildProducerState's read of this segment: ``read(start_offset, Int.MaxValue,
        maxPosition)``, maxPosition where ``last_offset`` translates (None: the file's end), its
        batches walked by framing, the header of each batch with a producer id given to ``each``
        (no other changes the producer state); the bytes read.  LogFormatError where Kafka's
        iteration throws, ValueError for a slice of negative size."""
        self._read_counter = "producer_state_bytes_read"  # counted apart from the loader's reads
        try:
            limit = self._size
            if last_offset is not None:
                found = self.translate_offset(last_offset, prove=False)
                limit = found.position if found is not None else self._size
            first = self.translate_offset(start_offset, prove=False)
            if first is None:
                return 0
            if limit < first.position:
                raise ValueError(f"Invalid size {limit - first.position} for a slice of {self.log_path}")
            view = self.view()
            position = self._framed(view, first.position, limit, each) if _compiled_frame else first.position
            scan = BatchScan(view, position, limit, check_crc=False)
            read = position - first.position
            for h in scan:
                read += h.size
                if has_producer(h):
                    each(h)
            self.storage.stats.add("producer_state_bytes_read", read)
            if scan.error is not None:
                _raise_scan_error(scan, self.log_path)
            return read
        finally:
            self._read_counter = "log_bytes_read"

    @staticmethod
    def _framed(view, position: int, limit: int, each) -> int:
        """The compiled framing loop (``impl._batch_walk.frame``) over the plain v2 batches from
        ``position``, ``each`` given the producer batches' headers in runs of at most
        ``_FRAMED_RUN`` (the positions' memory bound); where :class:`BatchScan` takes over."""
        while True:
            positions = bytearray()
            reached = _compiled_frame(view, position, limit, positions, _FRAMED_RUN)
            for at in struct.unpack(f"={len(positions) // 8}q", positions):
                each(v2_header_at(view, at, _size_at(view, at + 8)[0] + 12))
            if len(positions) < 8 * _FRAMED_RUN:
                return reached
            position = reached

    def read(self, start_offset: int, max_size: int, max_position: int | None, min_one_message: bool):
        """§4.5 read: None if no batch reaches start_offset; else the bytes (possibly empty)."""
        if max_size < 0:
            raise ValueError(f"Invalid max size {max_size} for log read from segment {self.log_path}")
        mapping = self.translate_offset(start_offset)
        if mapping is None:
            return None
        adjusted = max(max_size, mapping.size) if min_one_message else max_size
        if adjusted == 0 or max_position is None:
            return b""
        fetch = min(max_position - mapping.position, adjusted)
        end = min(mapping.position + max(fetch, 0), self._size)
        return bytes(self.view()[mapping.position : end])

    def read_next_offset(self) -> int:
        """§4.5 readNextOffset: translate the offset index's last entry from its position, trusting
        it as Kafka does (no soundness check here: at load this reads only the tail after the last
        entry), then the last batch after.  By framing alone: a batch whose CRC fails counts, a
        framing error raises, as does a legacy wrapper the search cannot decompress."""
        offsets = self.offset_index.get()
        start = max(offsets.lookup(offsets.last_offset)[1], 0)  # translateOffset's clamp (§4.5 rule 1)
        headers = self.batches(start, framing_only=True)
        found, last = _search_for_offset(headers, offsets.last_offset, self.view())
        if found is None:
            return self.base_offset
        rest = collections.deque(headers, maxlen=1)  # the read's last batch: the rest of the file, by framing
        return (rest[0] if rest else last).last_offset + 1

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int):
        """§4.8 rule 5: (timestamp, offset) of the first record at or after ``timestamp``, or None."""
        entry_offset = self._time_lookup(timestamp)[1]
        position = self._offset_lookup(max(entry_offset, starting_offset))[1]
        return search_for_timestamp(self.view(), timestamp, position, starting_offset)

    def offset_of_max_timestamp(self, header) -> tuple[int, int] | None:
        """RecordBatch.offsetOfMaxTimestamp for the batch ``header``: (its max timestamp, the offset
        of its first record carrying it), None for magic 0 or if no record does."""
        offset = offset_of_max_timestamp(self.view(), header)
        return None if offset is None else (header.max_timestamp, offset)

    # --- recovery and truncation (§4.6, §4.7) ------------------------------------------------------

    def recover(self, epoch_cache=None) -> int:
        """§4.6: rebuild the indexes from the batches, truncate at the first invalid one; returns the
        bytes truncated, and leaves :attr:`recovered_map_end` and :attr:`recovered_producers` (the
        headers of its batches with a producer id that the producer state must read, each with its
        end marker: :mod:`impl.producer_runs`) for the producer state.  Overflow and index refusals
        propagate."""
        offsets, times = self.offset_index.get(rebuild=True), self.time_index.get(rebuild=True)
        self.indexes_checked = True
        self._shadow = self.rebuilt_because = None  # the rebuilt indexes are sound
        offsets.reset()
        times.reset()
        self.txn_index.reset()
        self._set_max_ts(None)
        self._content_max = None
        self.recovered_map_end = None  # the offset after the last v2 batch: the producer state's map end
        self.recovered_producers = []
        try:
            valid = self._rebuild(self.view(), epoch_cache, offsets, times)
        except LogSegmentOffsetOverflow:
            raise  # the loader splits this segment; its reset indexes stay as Kafka leaves them (§5.5)
        except Exception:
            # the indexes were opened for a rebuild (old slots left unread, see impl.index): cut the
            # files to the entries rebuilt so far, so no old slot outlives a failed recovery
            for index in (offsets, times):
                with contextlib.suppress(IndexFailure, OSError):
                    index.trim_to_valid_size()
            raise
        self.storage.stats.add("log_bytes_read", self._size)
        truncated = self._size - valid
        self._truncate_log(valid)
        offsets.trim_to_valid_size()
        times.maybe_append(*self.max_timestamp_and_offset(), skip_full_check=True)
        times.trim_to_valid_size()
        return truncated

    def _rebuild(self, view, epoch_cache, offsets, times) -> int:
        """§4.6 step 3: the valid batches of ``view`` in order, each with Kafka's rules in Kafka's
        order — the offset overflow check, the max timestamp, an index entry once more than
        index.interval.bytes lie since the last, and for a v2 batch the producer state's map end,
        the header of a batch with a producer id, and its leader epoch.  Returns the valid bytes.

        A plain v2 batch (magic 2, long enough, whole, CRC-32C right) is read here with one
        unpack of the fields used, no header object, and its entries are kept in memory, checked as
        ``OffsetIndex.append`` / ``TimeIndex.maybe_append`` check them, and written in one piece.
        Any other batch (legacy, short, torn, failing its CRC) goes to :class:`BatchScan`, whose
        rules (§1.9, §1.10) decide where recovery stops.  The entries are written before anything
        that may touch storage (a marker read, an epoch checkpoint), before an append that will be
        refused (the real one then raises Kafka's error), before an exception leaves and at the
        end: at every storage operation the index files hold what one write per entry would leave."""
        base, interval = self.base_offset, self.config.index_interval_bytes
        off_buf: list[int] = []  # pending (relative offset, position) entries, flattened
        time_buf: list[int] = []  # pending (timestamp, relative offset) entries
        n_off, last_off, max_off = offsets.entries, offsets.last_offset, offsets.max_entries
        n_time, (last_ts, last_ts_off), max_time = times.entries, times.last_entry, times.max_entries - 1
        initial = best_ts, best_off = times.last_entry  # (−1, base): what Kafka loads at the first batch
        epoch_floor = _epoch_floor(epoch_cache)
        map_end, generic, overflowed = None, None, False
        producers, markers = bytearray(), {}  # positions of the batches with a producer id; control ones' markers

        def flush() -> None:
            offsets.write_entries(off_buf)
            times.write_entries(time_buf)

        exported = memoryview(view)
        mv = exported if exported.format == "B" and exported.ndim == 1 else exported.cast("B")
        end = mv.nbytes
        plain_end = end - _V2_FIELDS.size  # where the fields still fit (and then pos < end − 17, §1.10 rule 1)
        pos = last_index_entry = 0
        walk = _compiled_walk
        try:
            while True:
                if walk is not None and pos <= plain_end:
                    # the same loop over the plain batches from pos, compiled (impl/_batch_walk.c); it
                    # stops at the first batch that needs anything below but the plain path
                    state = [base, interval, last_index_entry, best_ts, best_off, n_off, last_off, max_off, n_time,
                             last_ts, last_ts_off, max_time, epoch_floor, 0, 0]  # fmt: skip
                    try:
                        pos = walk(mv, pos, state, off_buf, time_buf, producers)
                    except OverflowError:  # a value beyond int64 (an index entry read from disk): this loop
                        walk = None
                    else:
                        _, _, last_index_entry, best_ts, best_off, n_off, last_off = state[:7]
                        n_time, last_ts, last_ts_off = state[8:11]
                        if state[14]:
                            map_end = state[13]
                plain = False
                if pos <= plain_end:
                    first, length, epoch, magic, crc, attributes, delta, max_ts, producer = _v2_fields(mv, pos)
                    size = length + 12
                    # magic ≥ 2 read signed: BatchScan's v2 branch (§1.10 rule 6); §1.10 rules 4, 5; §1.9
                    plain = magic >= 2 and 61 <= size <= end - pos and crc32c(mv[pos + 21 : pos + size]) == crc
                if plain:
                    last, header = first + delta, None
                else:
                    header, generic = _header_at(view, pos, generic)
                    if header is None:
                        break  # the first invalid batch, or the end: recovery truncates here
                    first, size, last, magic, attributes, max_ts, producer, epoch = _recovery_fields(header)
                if not 0 <= last - base <= INT32_MAX:  # can_convert_to_relative_offset (§4.6, §5.5)
                    overflowed = True
                    raise LogSegmentOffsetOverflow(self, last)
                if max_ts > best_ts:
                    best_ts, best_off = max_ts, last
                if pos - last_index_entry > interval:
                    key = last  # the batch's last offset, never its base (KAFKA-3955, KAFKA-3919)
                    if n_off < max_off and (n_off == 0 or key > last_off):  # what OffsetIndex.append accepts
                        off_buf += (key - base, pos)
                        n_off, last_off = n_off + 1, key
                    else:
                        flush()
                        offsets.append(key, pos)  # refused, with Kafka's error
                        n_off, last_off = offsets.entries, offsets.last_offset
                    if n_time < max_time and (n_time == 0 or (best_off >= last_ts_off and best_ts >= last_ts)):
                        if best_ts > last_ts:  # what TimeIndex.maybe_append accepts, and appends
                            time_buf += (best_ts, best_off - base)
                            n_time, last_ts, last_ts_off = n_time + 1, best_ts, best_off
                    else:
                        flush()
                        times.maybe_append(best_ts, best_off)  # refused, with Kafka's error
                        n_time, (last_ts, last_ts_off) = times.entries, times.last_entry
                    last_index_entry = pos
                if magic >= 2:
                    map_end = last + 1
                    if producer >= 0:
                        if attributes & 0x20:
                            flush()  # a control batch: its marker is read through storage
                            markers[pos] = self.marker(header or v2_header_at(mv, pos, size))
                        producers += _position(pos)
                    if epoch > epoch_floor:
                        flush()
                        epoch_cache.assign(epoch, first)
                        epoch_floor = _epoch_floor(epoch_cache)
                pos += size
        except BaseException:
            with contextlib.suppress(IndexFailure, OSError):
                flush()  # the entries rebuilt so far, as appending each would have left them
            raise
        else:
            flush()
        finally:
            generic = None  # closes BatchScan's iterator: it holds an export of the view
            self.recovered_producers = _producers_read(mv, producers, markers, walk is not None)
            mv.release()
            exported.release()
            self.recovered_map_end = map_end
            if (best_ts, best_off) != initial:
                self._set_max_ts((best_ts, best_off))
            elif not (pos == 0 and overflowed):  # a batch reached the max timestamp step: Kafka loaded it there
                self._max_ts, self._max_ts_as_loaded = initial, True
        return pos

    def _truncate_log(self, size: int) -> None:
        if size < self._size or self._log.size() > size:
            self._log.truncate(size)
        self._size = min(self._size, size)

    def truncate_to(self, offset: int, now_ms: int) -> int:
        mapping = self.translate_offset(offset)
        offsets, times = self._indexes()
        offsets.truncate_to(offset)
        times.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        offsets.resize(self.config.segment_index_bytes)
        times.resize(self.config.segment_index_bytes)
        truncated = 0
        if mapping is not None:
            truncated = self._size - mapping.position
            self._truncate_log(mapping.position)
        if self._shadow is not None:
            self._shadow.truncate_to(offset, self.view())
        if self._size == 0:
            self.created_ms = now_ms
            self.rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        self._content_max = None
        if self.max_timestamp_so_far() >= 0:
            reread = self._read_largest_timestamp()
            self._set_max_ts(reread)
            # still the time index's last entry: as loaded, so retention asks the proof whether to
            # trust it — a zeroed slot Kafka keeps through the truncation reads 0 (§4.7 rule 7;
            # pinned by corpora/found/conforms-64ab729e1f)
            self._max_ts_as_loaded = reread == times.last_entry
        if self._size and self._shadow is None:
            # Kafka loads a max not loaded yet from the time index it has just truncated: an entry
            # cut off leaves (−1, base) though the batches left carry timestamps, and rule 7 is
            # then skipped; an overflowed legacy entry the cut kept (it reads below the base) gives
            # a max of records gone (kafka-findings/lookup-by-a-max-timestamp-a-truncation-kept).
            # Kafka's stays (retention, close); lookups go by the content's.
            headers = ((h.max_timestamp, h.last_offset) for h in self.batches(lookup=True))
            content = max(headers, key=lambda m: m[0], default=(-1, self.base_offset))
            if content[0] != self.max_timestamp_so_far():
                self._content_max = content
        return truncated

    def _read_largest_timestamp(self) -> tuple[int, int]:
        """§4.7 rule 7 readLargestTimestamp: from Kafka's last time entry, the batches from where
        Kafka's offset index puts it.  Behind an unsound index that position may not be a batch
        boundary: the batches at or after it are then found by a scan from the start."""
        offsets, times = self._indexes()
        last = times.last_entry
        best = last
        position = offsets.lookup(last[1])[1]
        unsound = self._shadow is not None
        for header in self.batches(0 if unsound else position):
            if header.max_timestamp > best[0] and header.position >= position:
                best = (header.max_timestamp, header.last_offset)
        return best

    def resize_indexes(self, size: int) -> None:
        """End of load (§5.7): the active segment's indexes back to full size (no soundness check —
        that waits for first use, so a clean load reads no log bytes)."""
        self.offset_index.get().resize(size)
        self.time_index.get().resize(size)

    # --- load-time check (§4.12) --------------------------------------------------------------------

    def sanity_check(self, time_index_newly_created: bool) -> str | None:
        """None if fine, else why Kafka would recover this segment at load (``.index`` missing or a
        corrupt txn index).  A time index that did not exist is materialised empty."""
        exists = self._offset_index_listed
        if not (self.storage.exists(self.offset_index.path) if exists is None else exists):
            return f"{self.offset_index.path} does not exist"
        if time_index_newly_created:
            self.time_index.get().resize(0)
        try:
            self.txn_index.sanity_check()
        except IndexFailure as e:
            return str(e)
        return None

    # --- durability and lifecycle (§4.9) --------------------------------------------------------------

    def flush(self) -> None:
        self._log.fsync()
        offsets, times = self.offset_index.get(), self.time_index.get()
        offsets.flush()
        times.flush()
        self.txn_index.flush()

    def close(self) -> None:
        if self._max_ts is not None:
            # a max timestamp below a stale last entry makes the append throw (IndexFailure), and
            # Kafka 4.x lets it (§4.9): the segment stays untrimmed, the dir's shutdown fails
            try:
                self.time_index.get().maybe_append(*self._max_ts, skip_full_check=True)
            except LogFormatError:
                pass
        # Better than Kafka (KAFKA-10471's mechanism, still open after its fix): the trims are made
        # durable before the caller can write the clean-shutdown marker, so no power loss can leave
        # a marker certifying zero-padded indexes that a clean load would take as full.
        self.offset_index.close(sync=True)
        self.time_index.close(sync=True)
        self._log.fsync()
        self._trim_log()
        self._log.close()
        self.txn_index.close()

    def close_handlers(self) -> None:
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self._log.close()
        self.txn_index.close()

    def change_file_suffixes(self, old: str, new: str) -> None:
        """§4.9 rule 5: rename log, offset index, time index, txn index in that order."""

        def renamed(path: str) -> str:
            if not path.endswith(old):
                raise ValueError(f"{path} does not end with {old!r}")
            return path[: len(path) - len(old)] + new

        new_log = renamed(self.log_path)
        self.storage.rename(self.log_path, new_log)
        self.log_path = new_log
        self._log.path = new_log
        self.offset_index.rename_to(renamed(self.offset_index.path))
        self.time_index.rename_to(renamed(self.time_index.path))
        txn_new = renamed(self.txn_index.path)
        if self.storage.exists(self.txn_index.path):
            self.storage.rename(self.txn_index.path, txn_new)
        self.txn_index.path = txn_new

    def moved_to(self, directory: str) -> None:
        """LogSegments.updateParentDir: the directory was renamed; every file keeps its name there
        (open handles stay valid: a rename moves no file)."""
        moved = lambda path: f"{directory}/{path.rsplit('/', 1)[1]}"  # noqa: E731
        self.dir = directory
        self.log_path = self._log.path = moved(self.log_path)
        self.offset_index.moved_to(moved(self.offset_index.path))
        self.time_index.moved_to(moved(self.time_index.path))
        self.txn_index.path = moved(self.txn_index.path)
        if self.txn_index._file is not None:
            self.txn_index._file.path = self.txn_index.path

    def files(self) -> list[str]:
        return [self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path]

    def delete_if_exists(self) -> None:
        """§4.9 rule 4 (files already closed or never opened are fine)."""
        self.close_handlers()
        for path in self.files():
            if self.storage.exists(path):
                self.storage.unlink(path)

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path}, size={self._size})"


def _raise_scan_error(scan: BatchScan, path: str) -> None:
    """Raise the error that ended ``scan``, naming ``path``.  The error's traceback keeps the frames
    it passes; none of them may keep the error itself or the scan (a cycle only the collector would
    free, holding the file's mapping — a descriptor — until it runs)."""
    error = scan.error
    error.file = path
    scan.error = None
    try:
        raise error
    finally:
        error = None


_position = struct.Struct("=q").pack  # as impl._batch_walk appends a producer batch's position
_size_at = struct.Struct(">i").unpack_from
_FRAMED_RUN = 4096  # producer batches framed per compiled call: 32 KiB of positions at most


def _producers_read(mv, positions: bytearray, markers: dict, compiled: bool) -> list:
    """(header, marker) of the producer batches at ``positions`` the producer state must read, in
    log order (:mod:`impl.producer_runs`: the others change nothing those set again)."""
    at = list(struct.unpack(f"={len(positions) // 8}q", positions))
    kept = _compiled_collapse(mv, positions, KEPT_BATCHES) if compiled else collapse(mv, at)
    return [(v2_header_at(mv, p, _size_at(mv, p + 8)[0] + 12), markers.get(p)) for p in kept]


def _epoch_floor(epoch_cache) -> int:
    """Recovery assigns a v2 batch's leader epoch when it is ≥ 0 and above the cache's latest
    (§4.6, §4.14): the epochs above this are those (no cache: none)."""
    if epoch_cache is None:
        return INT32_MAX  # a partition leader epoch is an int32
    latest = epoch_cache.latest_epoch()
    return -1 if latest is None else max(latest, -1)


def _recovery_fields(h) -> tuple[int, ...]:
    """What :meth:`LogSegment._rebuild` reads of a batch, from its header."""
    offsets = h.offset, h.size, h.last_offset
    return *offsets, h.magic, h.attributes, h.max_timestamp, h.producer_id, h.partition_leader_epoch


def _header_at(view, pos: int, generic):
    """The header :class:`BatchScan` reads at ``pos`` (None where it stops), and the scan to go on
    with: ``generic`` is (the iterator of a scan, where it reads next), reused when it is at ``pos``."""
    if generic is None or generic[1] != pos:
        generic = (iter(BatchScan(view, pos)), pos)
    header = next(generic[0], None)
    return header, None if header is None else (generic[0], pos + header.size)


def _search_for_offset(headers, target: int, view):
    """:meth:`LogSegment.translate_offset`'s search over ``headers``: (the batch found or None, the
    last header taken from the iterator)."""
    previous = None
    for header in headers:
        base = base_offset(view, header)
        if base == target:
            return header, header
        if base > target:
            return (previous if previous is not None and previous.last_offset >= target else header), header
        previous = header
    return (previous if previous is not None and previous.last_offset >= target else None), previous
