"""Kafka's ProducerStateManager on a partition directory (docs/producer-state.md): the
producer-state snapshot files (``<offset>.snapshot``) and the map end offset that decides when one is
written, read and deleted through :mod:`impl.storage` as Kafka does it (no temp file, no directory
fsync: the write is in place, and only a close or a load syncs it; a roll leaves the sync to the
post-roll flush).

Producers come from the batches of idempotent and transactional producers and from the
end-transaction markers (an append, the rebuild's scan, a segment's recovery) and from the
snapshots: an entry goes into the next snapshot, in java.util.HashMap's order, and a load drops it
once expired unless its transaction is open.  The open transactions give the first unstable offset;
a completed one that aborted goes into its segment's transaction index (docs/producer-state.md
section 9).
"""

from __future__ import annotations

import itertools
import re
import struct
from typing import NamedTuple

import crc32c

from impl.errors import LogError, LogFormatError
from impl.file_records import has_producer
from impl.segment import filename_prefix
from impl.txn_index import AbortedTxn

SUFFIX = ".snapshot"
DELETED = SUFFIX + ".deleted"
_HEADER = struct.Struct(">hIi")  # version 1, CRC-32C of the rest, entry count
_ENTRY = struct.Struct(">qhiqiqiq")  # producer id, epoch, last seq, last offset, delta, timestamp,
#                                       coordinator epoch, current transaction's first offset
MAX_ENTRIES = 1_000_000
PRODUCER_ID_EXPIRATION_MS = 86_400_000  # the broker's producer.id.expiration.ms (Kafka's default)
_LONG = re.compile(r"[+-]?[0-9]+")


INT_MAX = 2**31 - 1
KEPT_BATCHES = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_TRANSACTIONAL, _CONTROL = 0x10, 0x20  # v2 attribute bits 4 and 5
EPOCH_MAX = 2**15 - 1  # Short.MAX_VALUE: a producer epoch that can go no higher
CLIENT, COORDINATOR, REPLICATION = "client", "coordinator", "replication"  # AppendOrigin


# VerificationGuard (KIP-890): unique values in the process, 0 the sentinel that verifies nothing
SENTINEL = 0
_GUARDS = itertools.count(1)


class Verification:
    """A producer's VerificationStateEntry: made when its transactional produce is verified, gone
    with its next transactional batch (or expired); the guard that batch must bring."""

    __slots__ = ("timestamp", "guard", "lowest_sequence", "epoch", "supports_epoch_bump")

    def __init__(self, timestamp: int, sequence: int, epoch: int, supports_epoch_bump: bool):
        self.timestamp, self.guard = timestamp, next(_GUARDS)
        self.lowest_sequence, self.epoch, self.supports_epoch_bump = sequence, epoch, supports_epoch_bump

    def update(self, sequence: int, epoch: int) -> None:
        """maybeUpdateLowestSequenceAndEpoch: the lowest sequence seen at the epoch, a higher epoch restarting it."""
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch, self.lowest_sequence = epoch, sequence


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class CorruptSnapshot(Exception):
    pass


def _next_sequence(sequence: int, delta: int) -> int:
    """DefaultRecordBatch.incrementSequence: Int.MAX wraps to 0."""
    return sequence + delta if sequence <= INT_MAX - delta else delta - (INT_MAX - sequence) - 1


def is_transactional(h) -> bool:
    """RecordBatch.isTransactional: attribute bit 4."""
    return bool(h.attributes & _TRANSACTIONAL)


def is_control(h) -> bool:
    return h.magic >= 2 and bool(h.attributes & _CONTROL)


def _fenced_marker(epoch: int, entry: tuple, transaction_version: int) -> bool:
    """checkProducerEpoch for a marker: below the producer's epoch; from transaction version 2
    (KIP-890, the coordinator bumps the epoch first) at it too, unless the producer has no open
    transaction (or the epoch is Short.MAX): a retry of a marker already written (KAFKA-19999)."""
    if transaction_version < 2:
        return epoch < entry[1]
    return epoch < entry[1] or (epoch == entry[1] and entry[7] >= 0 and epoch != EPOCH_MAX)


def _empty(pid: int) -> tuple:
    return (pid, -1, -1, -1, 0, -1, -1, -1)  # ProducerStateEntry.empty


class BadSnapshotName(ValueError):
    """A ``*.snapshot`` whose name is no offset: Kafka's NumberFormatException fails the load."""

    def __init__(self, path: str):
        self.path = path
        super().__init__(f"{path}: the name before the first dot is no offset (NumberFormatException)")


def offset_of(name: str) -> int | None:
    head = name.split(".", 1)[0]
    if _LONG.fullmatch(head) and -(2**63) <= int(head) < 2**63:
        return int(head)
    return None


def encode(entries) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def decode(data: bytes) -> list[tuple]:
    """readSnapshot: the entries, normalised as Kafka writes them back; CorruptSnapshot when the
    version, the array or the CRC is wrong."""
    if len(data) < _HEADER.size:
        raise CorruptSnapshot(f"{len(data)} bytes: no header")
    version, crc, count = _HEADER.unpack_from(data)
    if version != 1:
        raise CorruptSnapshot(f"unknown file version {version}")
    if not 0 <= count <= MAX_ENTRIES or count * _ENTRY.size > len(data) - _HEADER.size:
        raise CorruptSnapshot(f"{count} entries do not fit")
    if crc != crc32c.crc32c(data[6:]):
        raise CorruptSnapshot("CRC mismatch")
    out = []
    for i in range(count):
        pid, epoch, seq, offset, delta, ts, coordinator, txn = _ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size)
        if offset < 0:  # no last batch: sequence, offset and delta read back as Kafka's defaults
            seq, offset, delta = -1, -1, 0
        out.append((pid, epoch, seq, offset, delta, ts, coordinator, txn if txn >= 0 else -1))
    return out


def iteration_order(keys: list[int]) -> list[int]:
    """java.util.HashMap's iteration order of Long keys inserted in this order (16 buckets, doubled
    past three quarters full; insertion order within a bucket)."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity <<= 1
    rank = {k: i for i, k in enumerate(keys)}

    def bucket(key: int) -> int:
        u = key & 0xFFFFFFFFFFFFFFFF
        h = (u ^ (u >> 32)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=lambda k: (bucket(k), rank[k]))


class ProducerStateManager:
    def __init__(self, storage, directory: str, listed=None):
        """``listed``: the names of the dir's regular files as the caller has just listed them
        (the loader's listing, §5.1 step 3), or None to list the dir here."""
        self.storage, self.dir = storage, directory
        self.snapshots = self._list(listed)  # offset → path, as Kafka's map holds them
        self.producers: dict[int, tuple] = {}  # id → snapshot entry, in insertion order
        self.batches: dict[int, list[tuple[int, int, int]]] = {}  # id → last batches: (last seq, last offset, delta)
        self.ongoing: dict[int, int] = {}  # an open transaction's first offset → its producer id
        self.read_back: list[int] = []  # last offsets of the transactions batches read back completed
        # id → Verification, in memory only; scratch copies share it: Kafka clears an entry while
        # it checks a request, whether or not the request is then written
        self.verifying: dict[int, Verification] = {}
        self.map_end = 0
        self.last_snap = 0

    def _list(self, listed=None) -> dict[int, str]:
        """listSnapshotFiles: every regular file named ``*.snapshot``."""
        if listed is None:
            names, dirs = self.storage.scan_dir(self.dir)
            listed = [name for name in names if name not in dirs]
        out = {}
        for name in sorted(n for n in listed if n.endswith(SUFFIX)):
            path = f"{self.dir}/{name}"
            offset = offset_of(name)
            if offset is None:
                raise BadSnapshotName(path)
            out[offset] = path
        return out

    # --- writing ---------------------------------------------------------------------------------

    def update_map_end(self, offset: int) -> None:
        self.map_end = offset

    def take_snapshot(self, sync: bool = True) -> str | None:
        """A snapshot at the map end offset if past the last one; its path.  Written in place from
        position 0 (a longer file of that name keeps its tail)."""
        if self.map_end <= self.last_snap:
            return None
        path = f"{self.dir}/{filename_prefix(self.map_end)}{SUFFIX}"
        data = encode([self.producers[p] for p in iteration_order(list(self.producers))])
        f = self.storage.open(path, create=True)
        try:
            f.write_at(0, data)
            if sync:
                f.fsync()
        finally:
            f.close()
        self.snapshots[self.map_end] = path
        self.last_snap = self.map_end
        return path

    def flush(self, path: str) -> None:
        """UnifiedLog.flushProducerStateSnapshot: the post-roll fsync of a file that may be gone."""
        if self.storage.exists(path):
            f = self.storage.open(path)
            try:
                f.fsync()
            finally:
                f.close()

    # --- producers from batches -------------------------------------------------------------------

    def duplicate_of(self, h) -> tuple[int, int] | None:
        """The first and last offset of the producer's retained batch with ``h``'s epoch and
        sequence range: a client's retry, answered without writing."""
        entry = self.producers.get(h.producer_id)
        if entry is None or entry[1] != h.producer_epoch:
            return None
        first, last = h.base_sequence, _next_sequence(h.base_sequence, h.last_offset_delta)
        for seq, offset, delta in self.batches.get(h.producer_id, ()):
            if seq == last and _next_sequence(first, delta) == seq:
                return offset - delta, offset
        return None

    def validate(self, h, origin: str = CLIENT) -> None:
        """A data batch: InvalidProducerEpochException below the producer's epoch (a follower's is
        let through); a client's new epoch opens at sequence 0 (any, for a producer without one),
        else its next sequence follows."""
        entry = self.producers.get(h.producer_id)
        epoch = entry[1] if entry is not None else -1
        where = f"producer {h.producer_id} at offset {h.offset}"
        if h.producer_epoch < epoch and origin != REPLICATION:
            raise LogError("InvalidProducerEpochException", f"{where}: epoch {h.producer_epoch} is below {epoch}")
        if origin != CLIENT:
            return
        verification = self.verifying.get(h.producer_id)
        if verification is not None:
            if verification.supports_epoch_bump and h.base_sequence != 0 and not self.batches.get(h.producer_id):
                raise LogError("OutOfOrderSequenceException", f"{where}: {h.base_sequence}, no batch of it known")
            if h.base_sequence > verification.lowest_sequence:
                lowest = verification.lowest_sequence
                raise LogError("OutOfOrderSequenceException", f"{where}: {h.base_sequence} above {lowest} verified")
        if h.producer_epoch != epoch:
            if h.base_sequence != 0 and epoch != -1:
                raise LogError("OutOfOrderSequenceException", f"{where}: a new epoch opens at {h.base_sequence}")
            return
        kept = self.batches.get(h.producer_id)
        last = kept[-1][0] if kept else -1
        if not (h.base_sequence == last + 1 or (h.base_sequence == 0 and last == INT_MAX)):
            raise LogError("OutOfOrderSequenceException", f"{where}: sequence {h.base_sequence} after {last}")

    def append(self, h, marker, origin: str, transaction_version: int = 0) -> CompletedTxn | None:
        """UnifiedLog.updateProducers for batch ``h`` with a producer id (``marker``: its end
        marker, if a control batch, written at ``transaction_version``): checked, then applied;
        the transaction it completes."""
        completed = None
        if not is_control(h):
            self.validate(h, origin)
            self.update(h)
        elif marker is None:  # a control batch with no record: the entry, nothing more
            self.producers.setdefault(h.producer_id, _empty(h.producer_id))
        else:
            completed = self._end_transaction(h, marker, origin, transaction_version)
        if is_transactional(h):
            self._transactional_done(h)
        return completed

    def _transactional_done(self, h) -> None:
        """The producer's verification goes with its transactional batch (its transaction has a
        first offset, or ended), but a marker at the epoch a bump-verification was made for."""
        v = self.verifying.get(h.producer_id)
        if v is None or not (v.supports_epoch_bump and is_control(h) and h.producer_epoch == v.epoch):
            self.verifying.pop(h.producer_id, None)

    def ongoing_at(self, pid: int, epoch: int) -> bool:
        """hasOngoingTransaction: a transaction of the producer open at ``epoch``."""
        entry = self.producers.get(pid)
        return entry is not None and entry[7] >= 0 and entry[1] == epoch

    def fence_older_epoch(self, pid: int, epoch: int) -> None:
        """KIP-890's fence: a verification or an unverified transactional batch below the producer's epoch."""
        entry = self.producers.get(pid)
        if entry is not None and epoch < entry[1]:
            raise LogError("InvalidProducerEpochException", f"producer {pid}: epoch {epoch} is below {entry[1]}")

    def start_verification(self, pid: int, sequence: int, epoch: int, supports_epoch_bump: bool, now_ms: int) -> int:
        """maybeCreateVerificationStateEntry: the producer's entry (made if missing, then updated); its guard."""
        v = self.verifying.get(pid)
        if v is None:
            v = self.verifying[pid] = Verification(now_ms, sequence, epoch, supports_epoch_bump)
        v.update(sequence, epoch)
        return v.guard

    def verified(self, pid: int, guard: int) -> bool:
        """The producer's entry holds ``guard``: the sentinel verifies nothing."""
        v = self.verifying.get(pid)
        return guard != SENTINEL and v is not None and v.guard == guard

    def read(self, h, marker=None, txn_index=None) -> None:
        """A batch read back from the log (a rebuild's scan, a recovery): its producer, if any, moves
        to it unchecked (origin REPLICATION); a transaction it completes closes, into ``txn_index``
        (a recovery's) if it aborted."""
        if has_producer(h):
            completed = self.append(h, marker, REPLICATION)
            if completed is not None:
                if completed.aborted and txn_index is not None:
                    txn_index.append(self.aborted(completed))
                self.complete(completed)
                self.read_back.append(completed.last_offset)

    def reader(self, segment):
        """What the rebuild's scan of ``segment`` calls for each producer batch it reads by
        framing: its producer moves to it (a marker decoded from the segment)."""

        def read(h) -> None:
            self.read(h, segment.marker(h))

        return read

    def update(self, h) -> None:
        """The producer of data batch ``h`` moves to it (unchecked: ``validate`` ran); a
        transactional one opens its transaction, a plain one inside one is refused."""
        pid = h.producer_id
        old = self.producers.get(pid)
        coordinator, txn = (old[6], old[7]) if old is not None else (-1, -1)
        transactional = is_transactional(h)
        if txn >= 0 and not transactional:
            raise LogError("InvalidTxnStateException", f"producer {pid} at offset {h.offset} is in a transaction")
        if txn < 0 and transactional:
            txn = h.offset
            self.ongoing[txn] = pid
        kept = self.batches.get(pid, []) if old is not None and old[1] == h.producer_epoch else []
        seq, delta = _next_sequence(h.base_sequence, h.last_offset_delta), h.last_offset - h.offset
        self.batches[pid] = [*kept[-(KEPT_BATCHES - 1) :], (seq, h.last_offset, delta)]
        self.producers[pid] = (pid, h.producer_epoch, seq, h.last_offset, delta, h.max_timestamp, coordinator, txn)

    # --- transactions ----------------------------------------------------------------------------

    def _end_transaction(self, h, marker, origin: str, transaction_version: int) -> CompletedTxn | None:
        kind, coordinator_epoch, timestamp = marker
        pid = h.producer_id
        entry = self.producers.get(pid, _empty(pid))
        where = f"producer {pid} at offset {h.offset}"
        if origin != REPLICATION and _fenced_marker(h.producer_epoch, entry, transaction_version):
            raise LogError(
                "InvalidProducerEpochException",
                f"{where}: epoch {h.producer_epoch} is {'<=' if transaction_version >= 2 else '<'} {entry[1]}"
                f" (TV{transaction_version})",
            )
        if origin != REPLICATION and entry[6] > coordinator_epoch:
            raise LogError(
                "TransactionCoordinatorFencedException",
                f"{where}: coordinator epoch {coordinator_epoch} below {entry[6]}",
            )
        completed = CompletedTxn(pid, entry[7], h.offset, kind == "ABORT") if entry[7] >= 0 else None
        seq, offset, delta = entry[2:5]
        if entry[1] != h.producer_epoch:
            self.batches[pid] = []
            seq, offset, delta = -1, -1, 0
        self.producers[pid] = (pid, h.producer_epoch, seq, offset, delta, timestamp, coordinator_epoch, -1)
        return completed

    def aborted(self, txn: CompletedTxn) -> AbortedTxn:
        """The index record of an aborted transaction, at the last stable offset of this moment:
        the earliest open transaction of another producer, else the offset after the marker."""
        lso = next((f for f in sorted(self.ongoing) if self.ongoing[f] != txn.producer_id), txn.last_offset + 1)
        return AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso)

    def complete(self, txn: CompletedTxn) -> None:
        if self.ongoing.pop(txn.first_offset, None) is None:
            raise LogError("IllegalArgumentException", f"transaction {tuple(txn)} was not started")

    def unstable_after_load(self) -> bool:
        """Whether the log has a first unstable offset when the load ends: an open transaction, or
        one the load's reads completed (Kafka keeps those until the high watermark passes them)."""
        return bool(self.ongoing or self.read_back)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing, default=None)

    def scratch(self) -> ProducerStateManager:
        """A copy of the producers to check a request on; :meth:`adopt` takes it once written."""
        other = object.__new__(ProducerStateManager)
        other.__dict__.update(self.__dict__)
        other.producers, other.ongoing = dict(self.producers), dict(self.ongoing)
        other.batches = {k: list(v) for k, v in self.batches.items()}
        return other

    def adopt(self, other: ProducerStateManager) -> None:
        self.producers, self.batches, self.ongoing = other.producers, other.batches, other.ongoing

    # --- loading ---------------------------------------------------------------------------------

    def truncate_and_reload(self, log_start: int, log_end: int, now_ms: int) -> None:
        for offset in [o for o in self.snapshots if o > log_end or o <= log_start]:
            self._remove_and_delete(offset)
        if log_end != self.map_end:
            self.producers.clear()
            self.batches.clear()
            self.ongoing.clear()
            self._load_newest(log_start, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start)

    def _load_newest(self, log_start: int, now_ms: int) -> None:
        while self.snapshots:
            offset = max(self.snapshots)
            f = self.storage.open(self.snapshots[offset])  # a file gone from under the map: OSError
            try:
                data = f.read(0, f.size())
            finally:
                f.close()
            try:
                entries = decode(data)
            except CorruptSnapshot:
                self._remove_and_delete(offset)
                continue
            for e in entries:
                if e[7] >= 0 or now_ms - e[5] < PRODUCER_ID_EXPIRATION_MS:
                    self.producers[e[0]] = e
                    self.batches[e[0]] = [(e[2], e[3], e[4])] if e[3] >= 0 else []
                    if e[7] >= 0:
                        self.ongoing[e[7]] = e[0]
            self.last_snap = self.map_end = offset
            return
        self.last_snap = self.map_end = log_start

    def remove_expired(self, now_ms: int) -> int:
        """removeExpiredProducers: a producer with no open transaction last seen
        producer.id.expiration.ms or more before ``now_ms`` goes; the number gone."""
        gone = [p for p, e in self.producers.items() if e[7] < 0 and now_ms - e[5] >= PRODUCER_ID_EXPIRATION_MS]
        for p in gone:
            del self.producers[p]
            self.batches.pop(p, None)
        for p in [p for p, v in self.verifying.items() if now_ms - v.timestamp >= PRODUCER_ID_EXPIRATION_MS]:
            del self.verifying[p]
        return len(gone)

    def on_log_start_offset_incremented(self, log_start: int) -> None:
        self.map_end = max(self.map_end, log_start)
        self.last_snap = max(self.snapshots, default=log_start)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        for o in list(self.snapshots):
            self._remove_and_delete(o)
        self.producers.clear()
        self.batches.clear()
        self.ongoing.clear()
        self.last_snap = 0
        self.map_end = offset

    # --- deleting --------------------------------------------------------------------------------

    def _remove_and_delete(self, offset: int) -> None:
        path = self.snapshots.pop(offset)
        if self.storage.exists(path):
            self.storage.unlink(path)

    def mark_for_deletion(self, offset: int) -> str | None:
        """Renamed ``.snapshot.deleted``; the new path, None if it was not listed or is gone."""
        path = self.snapshots.pop(offset, None)
        if path is None or not self.storage.exists(path):
            return None
        self.storage.rename(path, path + ".deleted")
        return path + ".deleted"

    def delete_for(self, segments, delay_ms: int, due_ms: int, scheduler) -> None:
        """UnifiedLog.deleteProducerSnapshots, asynchronously: each segment's snapshot renamed
        ``.snapshot.deleted``, deleted at ``due_ms`` by ``scheduler`` — at once when ``delay_ms``
        is 0, as Kafka's scheduler runs a task without delay (docs/scenario-format.md, "Determinism")."""
        renamed = [p for p in (self.mark_for_deletion(s.base_offset) for s in segments) if p]
        if not renamed:
            return

        def delete() -> None:
            for path in renamed:
                if self.storage.exists(path):
                    self.storage.unlink(path)

        if delay_ms == 0:
            delete()
        else:
            scheduler.schedule(due_ms, "delete-producer-snapshot", delete)

    def remove_stray_snapshots(self, bases: list[int], relist: bool = True) -> None:
        """A snapshot at a segment's base stays; of the others only the largest, if above every base.
        Kafka lists the snapshot files again here (§5.2 step 11); ``relist=False``: the caller knows
        nothing but this manager changed them since it listed them, so its map is that listing."""
        if relist:
            self.snapshots = self._list()
        based = set(bases)
        strays = sorted(o for o in self.snapshots if o not in based)
        for offset in strays[:-1]:
            self._remove_and_delete(offset)
        if strays and bases and strays[-1] < max(bases):
            self._remove_and_delete(strays[-1])


class RebuildError(Exception):
    def __init__(self, segment, cause: Exception):
        self.segment, self.cause = segment, cause
        super().__init__(f"rebuilding producer state from {segment.log_path}: {cause}")


def rebuild(psm: ProducerStateManager, segments, log_start: int, last_offset: int, now_ms: int, clean: bool) -> int:
    """UnifiedLog.rebuildProducerState over :class:`impl.segment.LogSegment` in offset order; the
    ``.log`` bytes its scan read.  RebuildError for what a read raises."""
    to_snapshot = [s.base_offset for s in segments[-2:]] + [last_offset]
    if not psm.snapshots and clean:
        for offset in to_snapshot:
            psm.update_map_end(offset)
            psm.take_snapshot()
        return 0
    empty_before = not psm.producers and psm.map_end >= last_offset
    psm.truncate_and_reload(log_start, last_offset, now_ms)
    read = 0
    if last_offset > psm.map_end and not empty_before:
        floor = max((s.base_offset for s in segments if s.base_offset <= last_offset), default=None)
        lo = max((s.base_offset for s in segments if s.base_offset <= psm.map_end), default=None)
        scanned = [s for s in segments if (lo is None or s.base_offset >= lo) and s.base_offset < last_offset]
        for segment in scanned:
            start = max(segment.base_offset, psm.map_end, log_start)
            psm.update_map_end(start)
            if segment.base_offset in to_snapshot:
                psm.take_snapshot()
            try:
                last = last_offset if segment.base_offset == floor else None
                read += segment.scan_batches(start, last, psm.reader(segment))
            except (LogFormatError, ValueError) as e:
                raise RebuildError(segment, e) from None
    psm.update_map_end(last_offset)
    psm.take_snapshot()
    return read
