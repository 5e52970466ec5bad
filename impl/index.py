"""Memory-mapped offset and time indexes, lazily materialised (spec §3.1–§3.6, §7.3–§7.8).

Kafka's behaviour, through the storage protocol: files preallocated to ``segment.index.bytes``
rounded down to the entry size and mmapped; the warm-section binary search of §3.4; append, truncate,
resize, trim, flush, close.  :class:`LazyIndex` defers opening until first use and constructs the
index at most once under a lock (the KAFKA-9156 fix), with sync points so tests can force any
interleaving.

Better than Kafka, and only in what impl *knows* about an existing file it opens: Kafka assumes the
file is completely full of valid entries (§3.1 rule 4), so a zero-padded index (what every crash
leaves, §3.5) opens "full" with a bogus final entry.  Here the zero tail is found by a binary search
for the first all-zero slot, the tail is verified to be all zeros (a zero hole followed by data is
corruption), and the entries before it are checked (strictly increasing keys and positions for
``.index``; increasing timestamps ≥ 0 and non-decreasing offsets for ``.timeindex``):
``recognition`` says "clean", "zero-padded" or "corrupt", and ``recognised`` counts the real entries.
What the index *holds* stays Kafka's: ``entries`` is Kafka's count, zero slots included, so every
decision Kafka takes from the file — a full index rolls the segment (§4.3), the final time entry of a
roll is written past a full mapping (KAFKA-12734), a truncation searches Kafka's slots — is taken
here too (pinned by corpora/found/conforms-ed2155df18 and conforms-68dacdda94).  Lookups through an
index that is not clean go through a shadow rebuilt from the log (impl.segment, impl.index_verify),
so what impl knows is used where it changes no state.
"""

from __future__ import annotations

import struct
import threading

from impl.errors import IndexFailure
from impl.storage import Storage
from impl.sync_points import sync_point

INT32_MAX = 2**31 - 1
WARM_SECTION_BYTES = 8192
CLEAN, ZERO_PADDED, CORRUPT, NEW = "clean", "zero-padded", "corrupt", "new"
_CHUNK = 64 * 1024
_ZEROS = bytes(_CHUNK)

INVALID_OFFSET = "InvalidOffsetException"
ILLEGAL_ARGUMENT = "IllegalArgumentException"
ILLEGAL_STATE = "IllegalStateException"
INDEX_OFFSET_OVERFLOW = "IndexOffsetOverflowException"
CORRUPT_INDEX = "CorruptIndexException"
BUFFER_OVERFLOW = "BufferOverflowException"


class _MmapIndex:
    ENTRY_SIZE: int
    _entry: struct.Struct
    _zero: bytes

    def __init__(self, storage: Storage, path: str, base_offset: int, max_index_size: int, rebuild: bool = False):
        """Open (or create) the index at ``path``.

        ``rebuild``: the caller is about to rebuild the index from the log (recovery, §4.6), so an
        existing file is neither read nor recognised: it opens with no entries, the new entries
        overwrite the old slots in place, and the caller trims the file to them when done (as recovery
        does).  Until then the slots after the entries may still hold old data — only a crash in
        between leaves it on disk, and an index that opens later is proven against its log before
        use (:mod:`impl.segment`).  Neither zeroing the old entries nor truncating the file first:
        both cost a write fault per page (on ext4, a first write into a hole of a file that had
        blocks costs milliseconds), which made recovery's index rebuilds dearer than its scan."""
        self._lock = threading.Lock()
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._stats = storage.stats
        self.newly_created = not storage.exists(path)
        if self.newly_created and max_index_size < self.ENTRY_SIZE:
            raise IndexFailure(
                ILLEGAL_ARGUMENT, "invalid-max-index-size", f"Invalid max index size: {max_index_size}", path
            )
        self._file = storage.open(path, create=True)
        self._unread = rebuild and not self.newly_created
        try:  # a file that cannot be sized or mapped (no address space for it) is closed, not leaked
            if self.newly_created:
                self._file.truncate(self.ENTRY_SIZE * (max_index_size // self.ENTRY_SIZE))
            self._length = self._file.size()
            self._mm = self._file.map()
        except BaseException:
            self._file.close()
            raise
        # Kafka's count (§3.1 rule 4): every slot of an existing file, none of one about to be rebuilt
        self._entries = 0 if self.newly_created or rebuild else self._length // self.ENTRY_SIZE
        self.recognition, self.recognition_detail, self.recognised = self._recognise()
        self._reload_last()

    # --- opening ------------------------------------------------------------------------------

    def _raw(self, slot: int) -> tuple[int, int]:
        self._stats.add("index_bytes_read", self.ENTRY_SIZE)
        return self._entry.unpack_from(self._mm, slot * self.ENTRY_SIZE)

    def _slots(self, n: int):
        """The first ``n`` slots' pairs, read in one pass over a copy of their bytes (at most the
        index file's size) and counted once."""
        self._stats.add("index_bytes_read", n * self.ENTRY_SIZE)
        return self._entry.iter_unpack(self._mm[: n * self.ENTRY_SIZE])

    def _is_zero(self, slot: int) -> bool:
        return self._raw(slot) == (0, 0)

    def _recognise(self) -> tuple[str, str, int]:
        """(recognition, why it is corrupt, how many real entries the file holds)."""
        if self.newly_created or self._unread:
            return NEW, "", 0
        slots = self._length // self.ENTRY_SIZE
        if self._length % self.ENTRY_SIZE:
            return CORRUPT, f"file length {self._length} is not a multiple of {self.ENTRY_SIZE}", 0
        if slots == 0 or not self._is_zero(slots - 1):
            n, verdict = slots, CLEAN
        else:
            lo, hi = 0, slots - 1  # the first zero slot of the trailing run lies in [lo, hi]
            while lo < hi:
                mid = (lo + hi) // 2
                if self._is_zero(mid):
                    hi = mid
                else:
                    lo = mid + 1
            n, verdict = lo, ZERO_PADDED
            hole = self._non_zero_after(n)
            if hole >= 0:
                return CORRUPT, f"slot {hole} holds data after the zero slot {n}", 0
        problem = self._check_prefix(n)
        if problem:
            return CORRUPT, problem, 0
        return verdict, "", n

    def _non_zero_after(self, n: int) -> int:
        """The first slot ≥ n that is not all zeros, or −1.  Reads the whole tail (in 64 KiB
        chunks): a zero hole followed by data is corruption, never padding.  A preallocated tail is
        sparse, so this costs page faults on the zero page, not disk reads."""
        start, end = n * self.ENTRY_SIZE, self._length
        for a in range(start, end, _CHUNK):
            b = min(a + _CHUNK, end)
            self._stats.add("index_bytes_read", b - a)
            chunk = self._mm[a:b]
            if chunk != _ZEROS[: b - a]:
                first = next(i for i, byte in enumerate(chunk) if byte)
                return (a + first) // self.ENTRY_SIZE
        return -1

    def _check_prefix(self, n: int) -> str:
        raise NotImplementedError

    def _reload_last(self) -> None:
        raise NotImplementedError

    # --- state --------------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._length // self.ENTRY_SIZE

    @property
    def length(self) -> int:
        return self._length

    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    def size_in_bytes(self) -> int:
        return self.ENTRY_SIZE * self._entries

    def relative_offset(self, offset: int) -> int:
        r = offset - self.base_offset
        if r < 0 or r > INT32_MAX:
            raise IndexFailure(
                INDEX_OFFSET_OVERFLOW, "relative-offset-overflow", f"Integer overflow for offset: {offset}", self.path
            )
        return r

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def _write(self, a: int, b: int) -> None:
        if self._entries >= self.max_entries:
            raise IndexFailure(
                BUFFER_OVERFLOW, "write-past-mapping", f"slot {self._entries} of {self.max_entries}", self.path
            )
        self._entry.pack_into(self._mm, self._entries * self.ENTRY_SIZE, a, b)
        self._entries += 1

    def write_entries(self, flat: list[int]) -> None:
        """Write entries (key, value pairs as stored, flattened; the list is emptied) in one slice
        of the mapping: the bytes, count and last entry appending them one by one would leave.  The
        caller has checked each as :meth:`OffsetIndex.append` / :meth:`TimeIndex.maybe_append`
        would (recovery does, impl.segment): one pack and one copy instead of an entry-sized write
        per batch, which made index rebuilds a third of recovery (benchmarks/recovery.py)."""
        n = len(flat) // 2
        if not n:
            return
        with self._lock:
            if self._entries + n > self.max_entries:
                raise IndexFailure(
                    BUFFER_OVERFLOW, "write-past-mapping", f"slot {self.max_entries} of {self.max_entries}", self.path
                )
            start = self._entries * self.ENTRY_SIZE
            packed = struct.pack(">" + self._entry.format[1:] * n, *flat)
            self._mm[start : start + len(packed)] = packed
            self._entries += n
            self._set_last(flat[-2], flat[-1])
        flat.clear()

    def _set_last(self, key: int, value: int) -> None:
        """The last entry's attribute, from the entry just written as stored (no slot read)."""
        raise NotImplementedError

    # --- search (§3.4) -------------------------------------------------------------------------

    def _key(self, slot: int, field: int) -> int:
        raise NotImplementedError

    def _largest_lower_bound(self, target: int, field: int) -> int:
        return self._search(target, field, True)

    def _search(self, target: int, field: int, lower: bool) -> int:
        """The slot whose key is the largest at or below ``target`` (``lower``), or the smallest at or
        above; the slots read are counted once per search, not once per slot (a locked add)."""
        n = self._entries
        if n == 0:
            return -1
        key, reads = self._key, 1
        first_hot = max(0, n - 1 - WARM_SECTION_BYTES // self.ENTRY_SIZE)
        try:
            if key(first_hot, field) < target:
                lo, hi = first_hot, n - 1
            else:
                reads += 1
                if key(0, field) > target:
                    return -1 if lower else 0
                lo, hi = 0, first_hot
            while lo < hi:
                mid = (lo + hi + 1) // 2
                reads += 1
                found = key(mid, field)
                if found > target:
                    hi = mid - 1
                elif found < target:
                    lo = mid
                else:
                    return mid
            if lower:
                return lo
            return -1 if lo == n - 1 else lo + 1
        finally:
            self._stats.add("index_bytes_read", reads * self.ENTRY_SIZE)

    def _truncate_to_key(self, offset: int, field: int) -> None:
        with self._lock:
            slot = self._largest_lower_bound(offset, field)
            if slot < 0:
                n = 0
            elif self._key(slot, field) == offset:  # a slot the search read: counted there
                n = slot
            else:
                n = slot + 1
            self._forget_from(n)

    def _forget_from(self, n: int) -> None:
        """Drop entries n… and zero their slots: unlike Kafka, no stale entry is left in the file to be
        revived as "valid" by a reopen after a crash (§3.1 rule 4)."""
        if n < self._entries:
            self._mm[n * self.ENTRY_SIZE : self._entries * self.ENTRY_SIZE] = bytes(
                (self._entries - n) * self.ENTRY_SIZE
            )
        self._entries = n
        self.recognised = min(self.recognised, n)
        self._reload_last()

    # --- size changes, durability (§3.1) ---------------------------------------------------------

    def resize(self, new_size: int) -> bool:
        with self._lock:
            rounded = self.ENTRY_SIZE * (new_size // self.ENTRY_SIZE)
            if rounded == self._length:
                return False
            if rounded < self._entries * self.ENTRY_SIZE:
                raise IndexFailure(
                    ILLEGAL_ARGUMENT, "resize-below-entries", f"cannot resize to {rounded} bytes", self.path
                )
            self._file.unmap(self._mm)
            self._file.truncate(rounded)
            self._length = rounded
            self._mm = self._file.map()
            self._reload_last()
            return True

    def trim_to_valid_size(self) -> bool:
        return self.resize(self.ENTRY_SIZE * self._entries)

    def truncate(self) -> None:
        with self._lock:
            self._forget_from(0)

    def reset(self) -> None:
        self.truncate()
        self.resize(self.max_index_size)

    def flush(self) -> None:
        with self._lock:
            if self._length:
                self._file.flush_map(self._mm)

    def close(self, sync: bool = False) -> None:
        """trimToValidSize, then unmap.  Kafka does not fsync here; ``sync`` makes the trimmed file
        durable (see :meth:`impl.segment.LogSegment.close`)."""
        self.trim_to_valid_size()
        if sync:
            self.sync()
        self.close_handler()

    def sync(self) -> None:
        """fsync the file: its entries and its (trimmed) length."""
        with self._lock:
            self._file.fsync()

    def close_handler(self) -> None:
        self._file.unmap(self._mm)
        self._file.close()

    def entry_slot(self, n: int) -> tuple[int, int]:
        if n < 0 or n >= self._entries:
            raise IndexFailure(
                ILLEGAL_ARGUMENT,
                "entry-out-of-range",
                f"Attempt to fetch the {n}th entry from an index of size {self._entries}",
                self.path,
            )
        return self._raw(n)

    def entry(self, n: int) -> tuple[int, int]:
        raise NotImplementedError

    def logical_entries(self) -> list[tuple[int, int]]:
        """Every entry Kafka counts, read in one pass (the bytes counted once)."""
        return self._as_logical(self._slots(self._entries))

    def _as_logical(self, slots) -> list[tuple[int, int]]:
        raise NotImplementedError

    def recognised_entries(self) -> list[tuple[int, int]]:
        """The real entries found when the file was opened (fewer if a truncation cut them since):
        Kafka's entries without the zero tail it counts too."""
        return [self.entry(i) for i in range(self.recognised)]

    def _check_length(self) -> None:
        """Both of Kafka's sanity checks end with: the file is a whole number of entries."""
        if self._length % self.ENTRY_SIZE:
            raise IndexFailure(
                CORRUPT_INDEX,
                "length-not-multiple",
                f"index file length {self._length} is not a multiple of {self.ENTRY_SIZE}",
                self.path,
            )

    def file_bytes(self) -> bytes:
        return bytes(self._mm[: self._length])


class OffsetIndex(_MmapIndex):
    """``.index``: (int32 relative offset, int32 position) entries (§3.2)."""

    ENTRY_SIZE = 8
    _entry = struct.Struct(">ii")

    def _check_prefix(self, n: int) -> str:
        prev_rel = prev_pos = -1
        for i, (rel, pos) in enumerate(self._slots(n)):
            if rel <= prev_rel or pos <= prev_pos or rel < 0 or pos < 0:
                return f"entry {i} ({rel}, {pos}) does not increase on entry {i - 1} ({prev_rel}, {prev_pos})"
            prev_rel, prev_pos = rel, pos
        return ""

    def _reload_last(self) -> None:
        self.last_offset = self.base_offset + self._raw(self._entries - 1)[0] if self._entries else self.base_offset

    def _set_last(self, key: int, value: int) -> None:
        self.last_offset = self.base_offset + key

    def _key(self, slot: int, field: int) -> int:  # not counted: _search counts its reads
        raw = self._entry.unpack_from(self._mm, slot * self.ENTRY_SIZE)
        return self.base_offset + raw[0] if field == 0 else raw[1]

    def entry(self, n: int) -> tuple[int, int]:
        rel, pos = self.entry_slot(n)
        return self.base_offset + rel, pos

    def _as_logical(self, slots) -> list[tuple[int, int]]:
        base = self.base_offset
        return [(base + rel, pos) for rel, pos in slots]

    def append(self, offset: int, position: int) -> None:
        with self._lock:
            if self.is_full():
                raise IndexFailure(
                    ILLEGAL_ARGUMENT,
                    "index-full",
                    f"Attempt to append to a full index (size = {self._entries})",
                    self.path,
                )
            if self._entries == 0 or offset > self.last_offset:
                self._write(self.relative_offset(offset), position)
                self.last_offset = offset
                return
            raise IndexFailure(
                INVALID_OFFSET,
                "offset-not-increasing",
                f"Attempt to append an offset ({offset}) to position {self._entries} no larger than the last offset appended ({self.last_offset})",
                self.path,
            )

    def lookup(self, target: int) -> tuple[int, int]:
        slot = self._largest_lower_bound(target, 0)
        return (self.base_offset, 0) if slot == -1 else self.entry(slot)

    def fetch_upper_bound_offset(self, start_position: int, fetch_size: int) -> tuple[int, int] | None:
        slot = self._search(start_position + fetch_size, 1, False)
        return None if slot == -1 else self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        self._truncate_to_key(offset, 0)

    def kafka_sanity_check(self) -> None:
        """Kafka's verdict on the file as Kafka opens it (entries = file length / 8, §3.2.7)."""
        slots = self._length // self.ENTRY_SIZE
        last = self.base_offset + self._raw(slots - 1)[0] if slots else self.base_offset
        if slots and last < self.base_offset:
            raise IndexFailure(
                CORRUPT_INDEX,
                "last-offset-below-base",
                f"has non-zero size but the last offset is {last} which is less than the base offset {self.base_offset}",
                self.path,
            )
        self._check_length()


class TimeIndex(_MmapIndex):
    """``.timeindex``: (int64 timestamp, int32 relative offset) entries (§3.3)."""

    ENTRY_SIZE = 12
    _entry = struct.Struct(">qi")

    def _check_prefix(self, n: int) -> str:
        prev_ts, prev_rel = -1, 0
        for i, (ts, rel) in enumerate(self._slots(n)):
            if ts <= prev_ts or rel < prev_rel or rel < 0:
                return f"entry {i} ({ts}, {rel}) does not follow entry {i - 1} ({prev_ts}, {prev_rel})"
            prev_ts, prev_rel = ts, rel
        return ""

    def _reload_last(self) -> None:
        if self._entries:
            ts, rel = self._raw(self._entries - 1)
            self.last_entry = (ts, self.base_offset + rel)
        else:
            self.last_entry = (-1, self.base_offset)

    def _set_last(self, key: int, value: int) -> None:
        self.last_entry = (key, self.base_offset + value)

    def _key(self, slot: int, field: int) -> int:  # not counted: _search counts its reads
        raw = self._entry.unpack_from(self._mm, slot * self.ENTRY_SIZE)
        return raw[0] if field == 0 else self.base_offset + raw[1]

    def is_full(self) -> bool:
        return self._entries >= self.max_entries - 1

    def entry(self, n: int) -> tuple[int, int]:
        ts, rel = self.entry_slot(n)
        return ts, self.base_offset + rel

    def _as_logical(self, slots) -> list[tuple[int, int]]:
        base = self.base_offset
        return [(ts, base + rel) for ts, rel in slots]

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        with self._lock:
            if not skip_full_check and self.is_full():
                raise IndexFailure(ILLEGAL_ARGUMENT, "index-full", "Attempt to append to a full time index", self.path)
            last_ts, last_offset = self.last_entry
            if self._entries and offset < last_offset:
                raise IndexFailure(
                    INVALID_OFFSET,
                    "offset-not-increasing",
                    f"Attempt to append an offset ({offset}) to slot {self._entries} no larger than the last offset appended ({last_offset})",
                    self.path,
                )
            if self._entries and timestamp < last_ts:
                raise IndexFailure(
                    ILLEGAL_STATE,
                    "timestamp-not-increasing",
                    f"Attempt to append a timestamp ({timestamp}) to slot {self._entries} no larger than the last timestamp appended ({last_ts})",
                    self.path,
                )
            if timestamp > last_ts:
                self._write(timestamp, self.relative_offset(offset))
                self.last_entry = (timestamp, offset)

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        slot = self._largest_lower_bound(target_timestamp, 0)
        return (-1, self.base_offset) if slot == -1 else self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        self._truncate_to_key(offset, 1)

    def kafka_sanity_check(self) -> None:
        """Kafka's verdict on the file as Kafka opens it (entries = file length / 12, §3.3.6)."""
        slots = self._length // self.ENTRY_SIZE
        if slots:
            first_ts = self._raw(0)[0]
            last_ts, last_rel = self._raw(slots - 1)
            if last_ts < first_ts:
                raise IndexFailure(
                    CORRUPT_INDEX,
                    "last-timestamp-below-first",
                    f"Corrupt time index found, has non-zero size but the last timestamp is {last_ts} which is less than the first timestamp {first_ts}",
                    self.path,
                )
            if self.base_offset + last_rel < self.base_offset:
                raise IndexFailure(
                    CORRUPT_INDEX,
                    "last-offset-below-base",
                    f"has non-zero size but the last offset is {self.base_offset + last_rel} which is less than the base offset {self.base_offset}",
                    self.path,
                )
        self._check_length()


_LOCK_CREATION = threading.Lock()


class LazyIndex:
    """Deferred materialisation (§3.6): nothing is opened, created or read until :meth:`get`; the
    index is constructed at most once, under a lock (KAFKA-9156).

    The lock itself is made on first need (:attr:`_lock`): a load makes two lazy indexes per segment
    and never touches most of them, so a lock each was a good part of a clean start's cost."""

    __slots__ = ("_storage", "_path", "_kind", "_base_offset", "_max_index_size", "_index", "_own_lock",
                 "constructions")  # fmt: skip

    def __init__(self, storage: Storage, path: str, kind: type[_MmapIndex], base_offset: int, max_index_size: int):
        self._storage = storage
        self._path = path
        self._kind = kind
        self._base_offset = base_offset
        self._max_index_size = max_index_size
        self._index: _MmapIndex | None = None
        self._own_lock: threading.Lock | None = None
        self.constructions = 0

    @classmethod
    def offset_index(cls, storage: Storage, path: str, base_offset: int, max_index_size: int) -> LazyIndex:
        return cls(storage, path, OffsetIndex, base_offset, max_index_size)

    @classmethod
    def time_index(cls, storage: Storage, path: str, base_offset: int, max_index_size: int) -> LazyIndex:
        return cls(storage, path, TimeIndex, base_offset, max_index_size)

    @property
    def _lock(self) -> threading.Lock:
        """This index's lock, made once: two threads asking at once get the same one (made under a
        lock shared by all, held only for that)."""
        lock = self._own_lock
        if lock is None:
            with _LOCK_CREATION:
                if self._own_lock is None:
                    self._own_lock = threading.Lock()
                lock = self._own_lock
        return lock

    def _factory(self, storage: Storage, path: str, rebuild: bool) -> _MmapIndex:
        return self._kind(storage, path, self._base_offset, self._max_index_size, rebuild)

    @property
    def path(self) -> str:
        return self._path

    @property
    def is_materialised(self) -> bool:
        return self._index is not None

    def get(self, rebuild: bool = False) -> _MmapIndex:
        """The index, constructed on first use.  ``rebuild``: the caller rebuilds it from the log
        right away, so a first construction does not read the file (see ``_MmapIndex``)."""
        index = self._index
        if index is not None:
            return index
        sync_point("LazyIndex.get:checked-unmaterialised")
        with self._lock:
            sync_point("LazyIndex.get:locked")
            if self._index is None:
                sync_point("LazyIndex.get:constructing")
                index = self._factory(self._storage, self._path, rebuild)
                self.constructions += 1
                sync_point("LazyIndex.get:constructed")
                self._index = index
            return self._index

    def moved_to(self, new_path: str) -> None:
        """Its directory was renamed (LocalLog.renameDir's updateParentDir): the same file, a new path."""
        with self._lock:
            self._path = new_path
            if self._index is not None:
                self._index.path = new_path
                self._index._file.path = new_path

    def rename_to(self, new_path: str) -> None:
        with self._lock:
            if self._storage.exists(self._path):
                self._storage.rename(self._path, new_path)
            self._path = new_path
            if self._index is not None:
                self._index.path = new_path

    def delete_if_exists(self) -> bool:
        with self._lock:
            if self._index is not None:
                self._index.close_handler()
            if self._storage.exists(self._path):
                self._storage.unlink(self._path)
                return True
            return False

    def _never_materialised(self) -> bool:
        """Nothing to close: no index, and no get() under way (it makes the lock before it builds)."""
        return self._own_lock is None and self._index is None

    def close(self, sync: bool = False) -> None:
        """An index never materialised is not trimmed (KAFKA-9373 behaviour, §7.5)."""
        if self._never_materialised():
            return
        with self._lock:
            if self._index is not None:
                self._index.close(sync)

    def close_handler(self) -> None:
        if self._never_materialised():
            return
        with self._lock:
            if self._index is not None:
                self._index.close_handler()
