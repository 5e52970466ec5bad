"""The transaction index ``.txnindex`` (spec §3.7): 34-byte AbortedTxn records, not mmapped, not
preallocated, opened only if it exists or on the first append."""

from __future__ import annotations

import struct
from typing import NamedTuple

from impl.errors import IndexFailure
from impl.storage import Storage, StorageFile

_RECORD = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset
SIZE = 34
# records per read when streaming the file: 32 Ki records, 1.1 MB of bytes held at a time, whatever
# the file's size (docs/dump.md, "Bounded memory"; benchmarks/txn_index_memory.py measures it)
READ_RECORDS = 1 << 15


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


class TransactionIndex:
    def __init__(self, storage: Storage, path: str, base_offset: int, exists: bool | None = None):
        """``exists``: whether the file exists, if the caller knows from a listing (None: ask)."""
        self._storage = storage
        self.path = path
        self.base_offset = base_offset
        if exists is None:
            exists = storage.exists(path)
        self._file: StorageFile | None = storage.open(path) if exists else None
        self.last_offset: int | None = None  # in memory only (§3.7.2)

    @property
    def exists(self) -> bool:
        return self._file is not None

    def append(self, txn: AbortedTxn) -> None:
        if self.last_offset is not None and self.last_offset >= txn.last_offset:
            raise IndexFailure(
                "IllegalArgumentException",
                "txn-offset-not-increasing",
                f"The last offset of appended transactions must increase sequentially, but {txn.last_offset} is not greater than current last offset {self.last_offset}",
                self.path,
            )
        if self._file is None:
            self._file = self._storage.open(self.path, create=True)
        self.last_offset = txn.last_offset
        self._file.append(
            _RECORD.pack(txn.version, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)
        )

    def iter_entries(self, records_per_read: int = READ_RECORDS):
        """Every record in file order, read a bounded chunk at a time (a 2 GiB file is read, not
        held); raises on the first record whose version byte Kafka refuses (§3.7)."""
        for start, data in self._chunks(records_per_read):
            for at in range(0, len(data) - SIZE + 1, SIZE):
                yield self._record(data, at, start + at)

    def _chunks(self, records_per_read: int = READ_RECORDS):
        """(byte position, bytes) of whole records, ``records_per_read`` at a time."""
        if self._file is None:
            return
        size = self._file.size() // SIZE * SIZE  # a trailing partial record is not read (§3.7)
        for start in range(0, size, SIZE * records_per_read):
            yield start, self._file.read(start, min(SIZE * records_per_read, size - start))

    def _record(self, data: bytes, at: int, pos: int) -> AbortedTxn:
        if data[at] and data[at] < 0x80:  # version read as the single high byte (§3.7 quirk)
            raise IndexFailure(
                "KafkaException",
                "unexpected-txn-version",
                f"Unexpected aborted transaction version {data[at]} at byte position {pos}",
                self.path,
            )
        _, pid, first, last, lso = _RECORD.unpack_from(data, at)
        version = data[at] - 256 if data[at] >= 0x80 else data[at]
        return AbortedTxn(pid, first, last, lso, version)

    def all_entries(self) -> list[AbortedTxn]:
        return list(self.iter_entries())

    def truncate_to(self, offset: int) -> None:
        """Cut before the first record ending at or past ``offset`` (its predecessor's last offset
        kept in memory); nothing cut leaves the last offset in memory as it was (§3.7)."""
        if self._file is None:
            return
        previous = None
        for i, txn in enumerate(self.iter_entries()):
            if txn.last_offset >= offset:
                self._file.truncate(i * SIZE)
                self.last_offset = previous
                return
            previous = txn.last_offset

    def reset(self) -> None:
        if self._file is not None:
            self._file.truncate(0)
        self.last_offset = None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        out = []
        for txn in self.iter_entries():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return out, True
        return out, False

    def sanity_check(self) -> None:
        if self._file is None:  # no file, no entries (the common case: checked for every segment at load)
            return
        # Kafka reads every record first (allAbortedTxns: a bad version anywhere is the failure),
        # then checks each in order; here one streamed pass, one read (READ_RECORDS) held at a time,
        # remembering the first record below the base.  A chunk of zeros (a sparse or zero-filled
        # file) is records of version 0 ending at offset 0: it is skipped unless base > 0.
        first = None
        for start, data in self._chunks():
            if not data.strip(b"\0"):
                if self.base_offset > 0 and first is None:
                    first = (AbortedTxn(0, 0, 0, 0), start)
                continue
            for at in range(0, len(data) - SIZE + 1, SIZE):
                txn = self._record(data, at, start + at)
                if first is None and txn.last_offset < self.base_offset:
                    first = (txn, start + at)
        if first is not None:
            txn, pos = first
            raise IndexFailure(
                "CorruptIndexException",
                "txn-last-offset-below-base",
                f"Last offset of aborted transaction {tuple(txn)} at byte position {pos} is less than start offset {self.base_offset}",
                self.path,
            )

    def flush(self) -> None:
        if self._file is not None:
            self._file.fsync()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
