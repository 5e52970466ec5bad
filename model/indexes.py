"""Offset, time and transaction indexes as plain sequences, with Kafka's exact rules (spec §3).

An index is its file: ``slots`` holds every entry-sized slot of the file, written or not (a slot
never written reads as zeros, and ``truncateTo`` does not erase what lies beyond the new end — Kafka
only moves the mmap position).  ``entries`` is how many of them Kafka believes are valid.  So the model
concludes from any file image exactly what Kafka concludes, including §3.1 rule 4: an existing file
is opened as completely full.
"""

from __future__ import annotations

import itertools
import struct
from typing import ClassVar

import attrs

from model.errors import (
    BUFFER_OVERFLOW,
    CORRUPT_INDEX,
    ILLEGAL_ARGUMENT,
    ILLEGAL_STATE,
    INDEX_OFFSET_OVERFLOW,
    INVALID_OFFSET,
    KAFKA,
    IndexFailure,
)
from model.file_records import iterate_file

INT32_MAX = 2**31 - 1
WARM_SECTION_BYTES = 8192  # §3.4 step 2
LARGEST_LOWER_BOUND, SMALLEST_UPPER_BOUND = "largest-lower-bound", "smallest-upper-bound"


def round_down(n: int, unit: int) -> int:
    return unit * (n // unit)


_ZEROS = bytes(1 << 16)


def _without_zero_tail(data: bytes) -> int:
    """``len(data.rstrip(b"\\0"))``, comparing 64 KiB at a time (rstrip goes byte by byte)."""
    end = len(data)
    while end >= len(_ZEROS) and data[end - len(_ZEROS) : end] == _ZEROS:
        end -= len(_ZEROS)
    return len(data[:end].rstrip(b"\0"))


class Slots:
    """The whole slots of an index file, kept as the file's bytes: slot ``i`` is ``fmt`` unpacked at
    ``i * fmt.size``.  A sequence of (field1, field2) pairs like a list, but a preallocated 10 MiB
    index (1.3 M slots, what a crashed broker leaves) costs its written bytes only: ``data`` may be
    shorter than the file, and everything after it reads as zeros."""

    __slots__ = ("fmt", "data", "n")

    def __init__(self, fmt: struct.Struct, n: int, data: bytes = b""):
        self.fmt = fmt
        self.n = n
        written = _without_zero_tail(data)  # the zero tail is implicit
        self.data = bytearray(data[: min(written, n * fmt.size)])

    def __len__(self) -> int:
        return self.n

    def _offset(self, i: int) -> int:
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(f"slot {i} of {self.n}")
        return i * self.fmt.size

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.n))]
        at, size = self._offset(i), self.fmt.size
        if at + size <= len(self.data):
            return self.fmt.unpack_from(self.data, at)
        return self.fmt.unpack(bytes(self.data[at : at + size]).ljust(size, b"\0"))

    def __setitem__(self, i: int, value: tuple[int, int]) -> None:
        at = self._offset(i)
        if len(self.data) < at + self.fmt.size:
            self.data.extend(bytes(at + self.fmt.size - len(self.data)))
        self.fmt.pack_into(self.data, at, *value)

    def __iter__(self):
        whole = min(len(self.data) // self.fmt.size, self.n)
        yield from self.fmt.iter_unpack(bytes(self.data[: whole * self.fmt.size]))
        yield from (self[i] for i in range(whole, min(whole + 1, self.n)))  # a partly written slot
        yield from itertools.repeat(self.fmt.unpack(bytes(self.fmt.size)), max(0, self.n - whole - 1))

    def __eq__(self, other) -> bool:
        if isinstance(other, Slots):
            return (self.fmt.format, self.n, self.data.rstrip(b"\0")) == (
                other.fmt.format, other.n, other.data.rstrip(b"\0"))  # fmt: skip
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"Slots({self.n} × {self.fmt.format})"

    def __bytes__(self) -> bytes:
        return bytes(self.data) + bytes(self.n * self.fmt.size - len(self.data))

    def resize(self, n: int) -> None:
        """Cut to ``n`` slots, or zero-extend to them."""
        self.n = n
        del self.data[n * self.fmt.size :]


@attrs.define
class _Index:
    """AbstractIndex (§3.1): common state and the operations shared by both mmapped indexes."""

    ENTRY_SIZE: ClassVar[int]
    _FORMAT: ClassVar[struct.Struct]

    base_offset: int
    max_index_size: int
    slots: Slots  # raw (field1, field2) of every whole slot in the file
    entries: int
    odd_tail: bytes = b""  # bytes past the last whole slot (a file whose length is not a multiple)

    # --- §3.1 open ---------------------------------------------------------------------------

    @classmethod
    def create(cls, base_offset: int, max_index_size: int):
        """A newly created file: preallocated to roundDown(maxIndexSize), zero-filled, no entries."""
        if max_index_size < cls.ENTRY_SIZE:
            raise IndexFailure(ILLEGAL_ARGUMENT, "invalid-max-index-size", f"Invalid max index size: {max_index_size}")
        n = max_index_size // cls.ENTRY_SIZE
        index = cls(base_offset, max_index_size, Slots(cls._FORMAT, n), 0)
        index._after_reload()
        return index

    @classmethod
    def open_existing(cls, base_offset: int, max_index_size: int, data: bytes):
        """An existing file: assumed completely full of valid entries (rule 4)."""
        n = len(data) // cls.ENTRY_SIZE
        slots = Slots(cls._FORMAT, n, data)
        index = cls(base_offset, max_index_size, slots, n, bytes(data[n * cls.ENTRY_SIZE :]))
        index._after_reload()
        return index

    def _after_reload(self) -> None:
        """Recompute the cached last entry (on open, truncation and resize)."""

    def assume_entries(self, n: int) -> None:
        """Take the first ``n`` slots as the valid entries — the state an index reaches when its real
        entries are known (rebuilt by recovery, or recognised by a reader that is not Kafka)."""
        if not 0 <= n <= len(self.slots):
            raise ValueError(f"{n} entries do not fit {len(self.slots)} slots")
        self.entries = n
        self._after_reload()

    # --- derived -----------------------------------------------------------------------------

    @property
    def length(self) -> int:
        return len(self.slots) * self.ENTRY_SIZE + len(self.odd_tail)

    @property
    def max_entries(self) -> int:
        return len(self.slots)

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def size_in_bytes(self) -> int:
        return self.ENTRY_SIZE * self.entries

    def file_bytes(self) -> bytes:
        return bytes(self.slots) + self.odd_tail

    def relative_offset(self, offset: int) -> int:
        r = offset - self.base_offset
        if r < 0 or r > INT32_MAX:
            raise IndexFailure(
                INDEX_OFFSET_OVERFLOW, "relative-offset-overflow", f"Integer overflow for offset: {offset}"
            )
        return r

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    # --- §3.1 size changes ------------------------------------------------------------------

    def resize(self, new_size: int) -> bool:
        rounded = round_down(new_size, self.ENTRY_SIZE)
        if rounded == self.length:
            return False
        n = rounded // self.ENTRY_SIZE
        if n < self.entries:
            raise IndexFailure(
                ILLEGAL_ARGUMENT, "resize-below-entries", f"cannot resize to {n} entries below {self.entries}"
            )
        # grow zero-extends, shrink cuts; an odd tail is cut or zero-extended into whole slots
        self.slots.resize(n)
        self.odd_tail = b""
        self._after_reload()
        return True

    def trim_to_valid_size(self) -> bool:
        return self.resize(self.ENTRY_SIZE * self.entries)

    def reset(self) -> None:
        self.truncate()
        self.resize(self.max_index_size)

    def truncate(self) -> None:
        self._truncate_to_entries(0)

    def _truncate_to_entries(self, n: int) -> None:
        self.entries = n
        self._after_reload()

    def _write(self, entry: tuple[int, int]) -> None:
        if self.entries >= len(self.slots):  # past the mapping limit
            raise IndexFailure(BUFFER_OVERFLOW, "write-past-mapping", f"slot {self.entries} of {len(self.slots)}")
        self.slots[self.entries] = entry
        self.entries += 1

    def entry_slot(self, n: int) -> tuple[int, int]:
        if n >= self.entries or n < 0:
            raise IndexFailure(
                ILLEGAL_ARGUMENT,
                "entry-out-of-range",
                f"Attempt to fetch the {n}th entry from an index of size {self.entries}",
            )
        return self.slots[n]

    def entry(self, n: int) -> tuple[int, int]:
        raise NotImplementedError

    def logical_entries(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(self.entries)]

    def _check_length(self) -> None:
        """Both sanity checks end with: the file length must be a whole number of entries."""
        if self.length % self.ENTRY_SIZE != 0:
            raise IndexFailure(
                CORRUPT_INDEX,
                "length-not-multiple",
                f"index file length {self.length} is not a multiple of {self.ENTRY_SIZE}",
            )

    # --- §3.4 search ------------------------------------------------------------------------

    def _key(self, slot: tuple[int, int], field: str) -> int:
        raise NotImplementedError

    def _search(self, target: int, field: str, bound: str) -> int:
        """Kafka's warm-section binary search, step by step (§3.4)."""
        if self.entries == 0:
            return -1
        warm = WARM_SECTION_BYTES // self.ENTRY_SIZE
        first_hot = max(0, self.entries - 1 - warm)
        if self._key(self.slots[first_hot], field) < target:
            return self._binary_search(target, field, bound, first_hot, self.entries - 1)
        if self._key(self.slots[0], field) > target:
            return -1 if bound == LARGEST_LOWER_BOUND else 0
        return self._binary_search(target, field, bound, 0, first_hot)

    def _binary_search(self, target: int, field: str, bound: str, lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) // 2
            found = self._key(self.slots[mid], field)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        if bound == LARGEST_LOWER_BOUND:
            return lo
        return -1 if lo == self.entries - 1 else lo + 1

    def _truncate_slot(self, offset: int, field: str) -> None:
        """truncateTo(offset) (§3.2.5, §3.3.5): keep entries with offset < ``offset``."""
        slot = self._search(offset, field, LARGEST_LOWER_BOUND)
        if slot < 0:
            n = 0
        elif self._key(self.slots[slot], field) == offset:
            n = slot
        else:
            n = slot + 1
        self._truncate_to_entries(n)


@attrs.define
class OffsetIndex(_Index):
    """``.index``: entries (int32 relative offset, int32 position) (§3.2)."""

    ENTRY_SIZE: ClassVar[int] = 8
    _FORMAT: ClassVar[struct.Struct] = struct.Struct(">ii")
    last_offset: int = 0

    def _after_reload(self) -> None:
        self.last_offset = self.base_offset + self.slots[self.entries - 1][0] if self.entries else self.base_offset

    def _key(self, slot, field):
        return self.base_offset + slot[0] if field == "key" else slot[1]

    def entry(self, n: int) -> tuple[int, int]:
        rel, pos = self.entry_slot(n)
        return self.base_offset + rel, pos

    def append(self, offset: int, position: int) -> None:
        if self.is_full():
            raise IndexFailure(
                ILLEGAL_ARGUMENT, "index-full", f"Attempt to append to a full index (size = {self.entries})"
            )
        if self.entries == 0 or offset > self.last_offset:
            rel = self.relative_offset(offset)
            self._write((rel, position))
            self.last_offset = offset
            return
        raise IndexFailure(
            INVALID_OFFSET, "offset-not-increasing",
            f"Attempt to append an offset ({offset}) to position {self.entries} no larger than the last offset appended ({self.last_offset})",
        )  # fmt: skip

    def lookup(self, target: int) -> tuple[int, int]:
        """Largest entry with offset ≤ target, else (baseOffset, 0)."""
        slot = self._search(target, "key", LARGEST_LOWER_BOUND)
        return (self.base_offset, 0) if slot == -1 else self.entry(slot)

    def fetch_upper_bound_offset(self, start_position: int, fetch_size: int) -> tuple[int, int] | None:
        slot = self._search(start_position + fetch_size, "value", SMALLEST_UPPER_BOUND)
        return None if slot == -1 else self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        self._truncate_slot(offset, "key")

    def sanity_check(self) -> None:
        """§3.2.7 (current): only a negative last relative offset or an odd length fail."""
        if self.entries != 0 and self.last_offset < self.base_offset:
            raise IndexFailure(
                CORRUPT_INDEX, "last-offset-below-base",
                f"has non-zero size but the last offset is {self.last_offset} which is less than the base offset {self.base_offset}",
            )  # fmt: skip
        self._check_length()


@attrs.define
class TimeIndex(_Index):
    """``.timeindex``: entries (int64 timestamp, int32 relative offset) (§3.3)."""

    ENTRY_SIZE: ClassVar[int] = 12
    _FORMAT: ClassVar[struct.Struct] = struct.Struct(">qi")
    last_entry: tuple[int, int] = (-1, 0)

    def _after_reload(self) -> None:
        if self.entries:
            ts, rel = self.slots[self.entries - 1]
            self.last_entry = (ts, self.base_offset + rel)
        else:
            self.last_entry = (-1, self.base_offset)

    def _key(self, slot, field):
        return slot[0] if field == "key" else self.base_offset + slot[1]

    def is_full(self) -> bool:
        """One slot is kept for the final entry written at roll/close (§3.3.1)."""
        return self.entries >= self.max_entries - 1

    def entry(self, n: int) -> tuple[int, int]:
        ts, rel = self.entry_slot(n)
        return ts, self.base_offset + rel

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        if not skip_full_check and self.is_full():
            raise IndexFailure(ILLEGAL_ARGUMENT, "index-full", "Attempt to append to a full time index")
        last_ts, last_offset = self.last_entry
        if self.entries != 0 and offset < last_offset:
            raise IndexFailure(
                INVALID_OFFSET, "offset-not-increasing",
                f"Attempt to append an offset ({offset}) to slot {self.entries} no larger than the last offset appended ({last_offset})",
            )  # fmt: skip
        if self.entries != 0 and timestamp < last_ts:
            raise IndexFailure(
                ILLEGAL_STATE, "timestamp-not-increasing",
                f"Attempt to append a timestamp ({timestamp}) to slot {self.entries} no larger than the last timestamp appended ({last_ts})",
            )  # fmt: skip
        if timestamp > last_ts:
            self._write((timestamp, self.relative_offset(offset)))
            self.last_entry = (timestamp, offset)

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """Largest entry with timestamp ≤ target, else (−1, baseOffset)."""
        slot = self._search(target_timestamp, "key", LARGEST_LOWER_BOUND)
        return (-1, self.base_offset) if slot == -1 else self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        self._truncate_slot(offset, "value")

    def sanity_check(self) -> None:
        """§3.3.6 (current; run by the dump tool, not the loader since 2.3)."""
        if self.entries != 0:
            first_ts = self.slots[0][0]
            if self.last_entry[0] < first_ts:
                raise IndexFailure(
                    CORRUPT_INDEX, "last-timestamp-below-first",
                    f"Corrupt time index found, has non-zero size but the last timestamp is {self.last_entry[0]} which is less than the first timestamp {first_ts}",
                )  # fmt: skip
            if self.last_entry[1] < self.base_offset:
                raise IndexFailure(
                    CORRUPT_INDEX, "last-offset-below-base",
                    f"has non-zero size but the last offset is {self.last_entry[1]} which is less than the base offset {self.base_offset}",
                )  # fmt: skip
        self._check_length()


# the suffixes an index file carries while deleted, swapped in or cleaned (§2.2)
_RENAMED = ("", ".deleted", ".swap", ".cleaned")


def file_entries(path: str, data: bytes) -> list[tuple[int, int]]:
    """Every whole slot of an index file's bytes, as the pair Kafka stores: for an offset index
    (``.index``) (relative offset, position), both int32 (§3.2); for a time index (``.timeindex``)
    (timestamp int64, relative offset int32) (§3.3); big-endian and signed.  ``path`` names the
    kind, also with a ``.deleted``, ``.swap`` or ``.cleaned`` suffix.  Written or not, every whole
    slot is returned (preallocated padding reads as zeros); a trailing partial slot is not.  Raises
    ValueError for any other file."""
    for suffix, index in ((".index", OffsetIndex), (".timeindex", TimeIndex)):
        if path.endswith(tuple(suffix + renamed for renamed in _RENAMED)):
            fmt = index._FORMAT
            return list(fmt.iter_unpack(bytes(data[: len(data) // fmt.size * fmt.size])))
    raise ValueError(f"{path}: not an offset or time index file")


# --- §3.7 transaction index ---------------------------------------------------------------------

ABORTED_TXN = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset
ABORTED_TXN_SIZE = 34


@attrs.frozen
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0

    def encode(self) -> bytes:
        return ABORTED_TXN.pack(
            self.version, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


@attrs.define
class TransactionIndex:
    """``.txnindex``: a plain append-only file of 34-byte AbortedTxn records (§3.7)."""

    base_offset: int
    data: bytes = b""  # the file, or b"" when absent
    exists: bool = False
    last_offset: int | None = None  # in memory only; empty on every open

    @classmethod
    def open_existing(cls, base_offset: int, data: bytes) -> TransactionIndex:
        return cls(base_offset, bytes(data), True)

    def append(self, txn: AbortedTxn) -> None:
        if self.last_offset is not None and self.last_offset >= txn.last_offset:
            raise IndexFailure(
                ILLEGAL_ARGUMENT, "txn-offset-not-increasing",
                f"The last offset of appended transactions must increase sequentially, but {txn.last_offset} is not greater than current last offset {self.last_offset}",
            )  # fmt: skip
        self.last_offset = txn.last_offset
        self.data += txn.encode()
        self.exists = True

    def all_entries(self) -> list[AbortedTxn]:
        """Whole 34-byte records from byte 0; a trailing partial record is ignored.  The version is
        read as the single byte at offset 0; a version > 0 is a KafkaException."""
        out = []
        for pos in range(0, len(self.data) - ABORTED_TXN_SIZE + 1, ABORTED_TXN_SIZE):
            version = struct.unpack_from(">b", self.data, pos)[0]
            if version > 0:
                raise IndexFailure(
                    KAFKA,
                    "unexpected-txn-version",
                    f"Unexpected aborted transaction version {version} at byte position {pos}",
                )
            _, pid, first, last, lso = ABORTED_TXN.unpack_from(self.data, pos)
            out.append(AbortedTxn(pid, first, last, lso, version))
        return out

    def truncate_to(self, offset: int) -> None:
        """Cut before the first entry ending at or past ``offset``; the last offset in memory
        becomes the entry before it.  Nothing cut: the last offset stays as it was."""
        if not self.exists:
            return
        entries = self.all_entries()
        for i, txn in enumerate(entries):
            if txn.last_offset >= offset:
                self.data = self.data[: i * ABORTED_TXN_SIZE]
                self.last_offset = entries[i - 1].last_offset if i > 0 else None
                return

    def reset(self) -> None:
        if self.exists:
            self.data = b""
        self.last_offset = None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetchOffset, upperBound); True when complete (§3.7.6)."""
        out = []
        for txn in self.all_entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return out, True
        return out, False

    def sanity_check(self) -> None:
        for i, txn in enumerate(self.all_entries()):
            if txn.last_offset < self.base_offset:
                raise IndexFailure(
                    CORRUPT_INDEX, "txn-last-offset-below-base",
                    f"Last offset of aborted transaction {txn} at byte position {i * ABORTED_TXN_SIZE} is less than start offset {self.base_offset}",
                )  # fmt: skip


# --- §4.6: the indexes recovery rebuilds from a segment's batches ----------------------------------


def rebuild_from_log(
    log: bytes, base_offset: int, index_interval_bytes: int, max_index_size: int, stop_at: int | None = None
) -> tuple[OffsetIndex, TimeIndex, int]:
    """What ``LogSegment.recover`` writes into freshly reset indexes (§4.6 steps 1–8): an offset
    entry (batch last offset, batch start) and a time entry (max timestamp so far, its offset) for
    each valid batch that starts more than ``index.interval.bytes`` after the previous entry (the
    batch at position 0 is never indexed), then the final time entry.  Returns the indexes and the
    valid byte count (where the log would be truncated).

    ``stop_at``: the position of a batch whose offset overflows the base (§4.6 step 3b): what the
    recovery had written when the exception stopped it — the entries of the batches before it, no
    final time entry, nothing trimmed."""
    offsets = OffsetIndex.create(base_offset, max_index_size)
    times = TimeIndex.create(base_offset, max_index_size)
    valid_bytes = last_index_entry = 0
    max_ts, offset_of_max_ts = -1, base_offset
    it = iterate_file(log)
    for batch in it.batches:
        if stop_at is not None and batch.position >= stop_at:
            return offsets, times, valid_bytes
        h = batch.header()
        if h.max_timestamp > max_ts:
            max_ts, offset_of_max_ts = h.max_timestamp, h.last_offset
        if valid_bytes - last_index_entry > index_interval_bytes:
            try:
                offsets.append(h.last_offset, valid_bytes)
                times.maybe_append(max_ts, offset_of_max_ts)
            except IndexFailure as e:
                # a refusal stops the recovery with the entries written so far (docs/crash-recovery.md,
                # "a failed load"): the files keep those, trimmed, and the log is not cut
                offsets.trim_to_valid_size()
                times.trim_to_valid_size()
                e.partial = (offsets, times)
                e.position = valid_bytes  # the refused batch's: the recovery stopped before its epoch
                raise
            last_index_entry = valid_bytes
        valid_bytes += h.size
    offsets.trim_to_valid_size()
    times.maybe_append(max_ts, offset_of_max_ts, skip_full_check=True)
    times.trim_to_valid_size()
    return offsets, times, valid_bytes
