"""What a cleaning round knows of transactions (Kafka's ``CleanedTransactionMetadata``; KIP-98,
KIP-534): which transactional batches and markers it may drop, and what the cleaned segment's
``.txnindex`` holds.

* The aborted transactions of the transaction indexes over the range being read are added as the
  round reaches each source segment; one becomes *ongoing* for its producer when the round reads a
  batch ending at or past its first offset (the first one of a producer wins).
* A transactional data batch of a producer with an ongoing aborted transaction is aborted data:
  dropped, and its keys never enter the offset map.  Any other transactional batch records that
  its producer's committed data was read.
* A marker may go when nothing of its transaction was read in this round: an ABORT whose data was
  read stays, and its entry is written to the cleaned segment's index; a COMMIT stays while its
  producer's committed data was read; an empty control batch (emptied by an earlier round) may
  go; a marker of any other type stays.
"""

from __future__ import annotations

import bisect
import struct

from impl.txn_index import AbortedTxn, TransactionIndex

ABORT, COMMIT = 0, 1  # ControlRecordType ids
_int16 = struct.Struct(">h").unpack_from


class UnreadableMarker(Exception):
    """A control batch Kafka's ``ControlRecordType.parse`` reads otherwise (only damage makes one)."""


def marker_type(keys_and_values: list[tuple[bytes | None, int]]) -> int | None:
    """The type id of a control batch's first record (None: no records).  ``keys_and_values``:
    each record's key and its value's length (−1: null).  Raises :class:`UnreadableMarker` for a
    key missing, under 4 bytes or of a negative version, or an ABORT/COMMIT value under 6 bytes."""
    for key, value_len in keys_and_values:
        if key is None or len(key) < 4 or _int16(key, 0)[0] < 0:
            raise UnreadableMarker("a control record key Kafka cannot parse")
        if _int16(key, 2)[0] in (ABORT, COMMIT) and value_len < 6:
            raise UnreadableMarker("an end-transaction marker value under 6 bytes")
    if not keys_and_values:
        return None
    return _int16(keys_and_values[0][0], 2)[0]


class CleanedTransactionMetadata:
    def __init__(self):
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # sorted by first offset, then arrival
        self._next = 0  # how many of _pending were reached
        self._arrivals = 0
        self._aborted: dict[int, list] = {}  # producer id → [its aborted txn, a batch of it was read]
        self._committed: set[int] = set()
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        rest = self._pending[self._next :]
        for t in txns:
            bisect.insort(rest, (t.first_offset, self._arrivals, t))
            self._arrivals += 1
        self._pending, self._next = rest, 0

    def _reach(self, offset: int) -> None:
        while self._next < len(self._pending) and self._pending[self._next][0] <= offset:
            txn = self._pending[self._next][2]
            self._next += 1
            if txn.producer_id not in self._aborted:
                self._aborted[txn.producer_id] = [txn, False]

    def on_control_batch_read(self, last_offset: int, producer_id: int, kind: int | None) -> bool:
        """Whether the marker (``kind`` from :func:`marker_type`) may be dropped."""
        self._reach(last_offset)
        if kind is None:
            return True
        if kind == ABORT:
            ongoing = self._aborted.pop(producer_id, None)
            if ongoing is None or not ongoing[1]:
                return True
            if self.cleaned_index is not None:
                self.cleaned_index.append(ongoing[0])  # may raise IndexFailure: last offsets must increase
            return False
        if kind == COMMIT:
            read = producer_id in self._committed
            self._committed.discard(producer_id)
            return not read
        return False

    def on_batch_read(self, last_offset: int, producer_id: int, transactional: bool) -> bool:
        """Whether the data batch is aborted data."""
        self._reach(last_offset)
        if not transactional:
            return False
        ongoing = self._aborted.get(producer_id)
        if ongoing is not None:
            ongoing[1] = True
            return True
        self._committed.add(producer_id)
        return False


def collect_aborted_transactions(log, base: int, upper: int) -> list[AbortedTxn]:
    """UnifiedLog.collectAbortedTransactions: the indexes from the segment holding ``base`` on,
    each entry ending at or past the log start offset (what Kafka passes, not ``base``) and
    starting below ``upper``, until one index's entries reach ``upper`` (§3.7.6)."""
    segment = log.floor_segment(base)
    out: list[AbortedTxn] = []
    while segment is not None:
        txns, complete = segment.txn_index.collect_aborted_txns(log.log_start_offset, upper)
        out.extend(txns)
        if complete:
            break
        segment = log.higher_segment(segment.base_offset)
    return out


__all__ = ["CleanedTransactionMetadata", "UnreadableMarker", "collect_aborted_transactions", "marker_type"]
