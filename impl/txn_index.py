"""The transaction index ``.txnindex`` (spec §3.7): 34-byte AbortedTxn records, not mmapped, not
preallocated, opened only if it exists or on the first append."""

from __future__ import annotations

import struct
from typing import NamedTuple

from impl.errors import IndexFailure
from impl.storage import Storage, StorageFile

_RECORD = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset
SIZE = 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


class TransactionIndex:
    def __init__(self, storage: Storage, path: str, base_offset: int):
        self._storage = storage
        self.path = path
        self.base_offset = base_offset
        self._file: StorageFile | None = storage.open(path) if storage.exists(path) else None
        self.last_offset: int | None = None  # in memory only (§3.7.2)

    @property
    def exists(self) -> bool:
        return self._file is not None

    def _data(self) -> bytes:
        if self._file is None:
            return b""
        return self._file.read(0, self._file.size())

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

    def all_entries(self) -> list[AbortedTxn]:
        data = self._data()
        out = []
        for pos in range(0, len(data) - SIZE + 1, SIZE):
            if data[pos] and data[pos] < 0x80:  # version read as the single high byte (§3.7 quirk)
                raise IndexFailure(
                    "KafkaException",
                    "unexpected-txn-version",
                    f"Unexpected aborted transaction version {data[pos]} at byte position {pos}",
                    self.path,
                )
            _, pid, first, last, lso = _RECORD.unpack_from(data, pos)
            version = data[pos] - 256 if data[pos] >= 0x80 else data[pos]
            out.append(AbortedTxn(pid, first, last, lso, version))
        return out

    def truncate_to(self, offset: int) -> None:
        if self._file is None:
            return
        entries = self.all_entries()
        for i, txn in enumerate(entries):
            if txn.last_offset >= offset:
                self._file.truncate(i * SIZE)
                self.last_offset = entries[i - 1].last_offset if i else None
                return
        self.last_offset = entries[-1].last_offset if entries else None

    def reset(self) -> None:
        if self._file is not None:
            self._file.truncate(0)
        self.last_offset = None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
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
                    "CorruptIndexException",
                    "txn-last-offset-below-base",
                    f"Last offset of aborted transaction {tuple(txn)} at byte position {i * SIZE} is less than start offset {self.base_offset}",
                    self.path,
                )

    def flush(self) -> None:
        if self._file is not None:
            self._file.fsync()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
