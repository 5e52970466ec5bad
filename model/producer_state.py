"""Kafka's ProducerStateManager (docs/producer-state.md): a partition's producer-state snapshot
files (``<offset>.snapshot``) and the map end offset that decides when one is written.

Producers come from the batches of idempotent and transactional producers (an append, the
rebuild's scan, a segment's recovery: rules 45–52) and from the snapshots; each is written into the
next snapshot, in the order Kafka's HashMap iterates them, and dropped at a load once it expired.  A
transactional batch opens its producer's transaction and a COMMIT or ABORT marker completes it (rules
53, 55); a segment's recovery writes each aborted one to the segment's transaction index (rule 57).

The files live in ``disk`` (name → bytes), shared with whatever else looks at the directory: Kafka's
in-memory map of snapshots (:attr:`snapshots`) and the directory can disagree — a temporary manager
of a segment's recovery deletes files this one still lists (rule 17 of docs/producer-state.md).
"""

from __future__ import annotations

import itertools
import re
import struct
from typing import NamedTuple

import attrs
import crc32c

from model.errors import LogError, RecordFormatError
from model.file_records import framed
from model.indexes import AbortedTxn
from model.names import filename_prefix

SUFFIX = ".snapshot"
DELETED = SUFFIX + ".deleted"
VERSION = 1
_HEADER = struct.Struct(">hIi")  # version, CRC-32C of everything after it, entry count
_ENTRY = struct.Struct(">qhiqiqiq")  # producer id, epoch, last sequence, last offset, offset delta,
#                                       timestamp, coordinator epoch, current transaction's first offset
MAX_ENTRIES = 1_000_000  # the generated reader's bound on an array's length
# the broker's producer.id.expiration.ms: Kafka's default, which the kafka target runs with
PRODUCER_ID_EXPIRATION_MS = 86_400_000
REBUILDING = "rebuilding producer state"  # how a load that failed in the rebuild says so
_LONG = re.compile(r"[+-]?[0-9]+")


NO_SEQUENCE = -1
EPOCH_MAX = 2**15 - 1  # Short.MAX_VALUE: a producer epoch that can go no higher
BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN: what duplicate detection sees
INT_MAX = 2**31 - 1


def last_sequence(base_sequence: int, delta: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap from Int.MAX to 0 (rule 46)."""
    return delta - (INT_MAX - base_sequence) - 1 if base_sequence > INT_MAX - delta else base_sequence + delta


def first_sequence(last: int, delta: int) -> int:
    """DefaultRecordBatch.decrementSequence, the inverse of :func:`last_sequence`."""
    return INT_MAX - (delta - last) + 1 if last < delta else last - delta


class CorruptSnapshot(Exception):
    """CorruptSnapshotException: Kafka deletes the file and tries the next older snapshot."""


class RebuildError(Exception):
    """What the rebuild's scan of the segment at ``base`` raised (``cause``: a RecordFormatError or
    a LogError); it fails a load, and a truncation."""

    def __init__(self, base: int, cause: Exception):
        self.base, self.cause = base, cause
        super().__init__(f"{REBUILDING} from segment {base}: {cause}")


def snapshot_name(offset: int) -> str:
    return filename_prefix(offset) + SUFFIX


def snapshot_offset(name: str) -> int:
    """Long.parseLong of the name up to its first dot; ValueError (NumberFormatException) if that
    is no long — which fails the partition's load (rule 34)."""
    head = name.split(".", 1)[0]
    if not _LONG.fullmatch(head) or not -(2**63) <= int(head) < 2**63:
        raise ValueError(f'For input string: "{head}"')
    return int(head)


def render(entries: list[tuple]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", VERSION, crc32c.crc32c(body)) + body


EMPTY_SNAPSHOT = render([])  # 00 01 48 67 4b c7 00 00 00 00


def parse(data: bytes) -> list[tuple]:
    """ProducerStateManager.readSnapshot: the entries, as Kafka normalises them when it writes
    them back; CorruptSnapshot for a version other than 1, a malformed array or a CRC mismatch
    (bytes after the last entry are covered by the CRC and otherwise ignored)."""
    if len(data) < _HEADER.size:
        raise CorruptSnapshot(f"Snapshot failed schema validation: {len(data)} bytes")
    version, crc, count = _HEADER.unpack_from(data)
    if version != VERSION:
        raise CorruptSnapshot(f"Snapshot contained an unknown file version {version}")
    if count < 0 or count > MAX_ENTRIES or count * _ENTRY.size > len(data) - _HEADER.size:
        raise CorruptSnapshot(f"Snapshot failed schema validation: {count} entries")
    computed = crc32c.crc32c(data[6:])
    if crc != computed:
        raise CorruptSnapshot(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}"
        )
    return [_normalised(_ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size)) for i in range(count)]


def _normalised(entry: tuple) -> tuple:
    """A ProducerStateEntry as read: without a last batch (last offset < 0) its sequence, offset
    and delta read back as −1, −1, 0; a negative transaction start as none (−1)."""
    pid, epoch, seq, offset, delta, timestamp, coordinator, txn = entry
    if offset < 0:
        seq, offset, delta = -1, -1, 0
    return pid, epoch, seq, offset, delta, timestamp, coordinator, txn if txn >= 0 else -1


def expired(entry, now_ms: int) -> bool:
    """ProducerStateManager.isProducerExpired: no open transaction and last seen at least
    producer.id.expiration.ms ago."""
    return entry[7] < 0 and now_ms - entry[5] >= PRODUCER_ID_EXPIRATION_MS


# VerificationGuard (KIP-890): a value unique in the process (Kafka's AtomicLong); the sentinel is 0
# and verifies nothing
SENTINEL = 0
_GUARDS = itertools.count(1)


@attrs.define
class Verification:
    """A producer's VerificationStateEntry: made when a transactional produce asks the coordinator
    to verify it (``maybeStartTransactionVerification``), held until the producer's next
    transactional batch is appended; its guard must come back with that batch."""

    timestamp: int  # the broker's clock when made: expired with the producers (removeExpiredProducers)
    guard: int
    lowest_sequence: int
    epoch: int
    supports_epoch_bump: bool  # the client's transaction version is 2

    def update(self, sequence: int, epoch: int) -> None:
        """maybeUpdateLowestSequenceAndEpoch: a lower sequence at the same epoch, or a higher epoch
        with its sequence, is the lowest a later batch may start at (an OutOfOrderSequence loop
        otherwise)."""
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch, self.lowest_sequence = epoch, sequence


def hashmap_order(keys: list[int]) -> list[int]:
    """The order java.util.HashMap iterates Long keys inserted in ``keys``' order: by bucket of the
    table (16 slots, doubled whenever more than three quarters are used), insertion order within a
    bucket.  (A bucket of eight or more becomes a tree in Kafka; no snapshot here holds that many.)"""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: int) -> int:
        unsigned = key & (2**64 - 1)
        h = (unsigned ^ (unsigned >> 32)) & 0xFFFFFFFF  # Long.hashCode
        return (h ^ (h >> 16)) & (capacity - 1)  # HashMap.hash, then the table index

    return sorted(keys, key=lambda k: (bucket(k), keys.index(k)))


CLIENT, COORDINATOR, REPLICATION = "client", "coordinator", "replication"  # AppendOrigin


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@attrs.define(eq=False)
class ProducerStateManager:
    """One partition's manager: ``snapshots`` (offset → file name) as Kafka lists them in memory,
    the files themselves in ``disk``, ``producers`` (id → snapshot entry) in insertion order."""

    disk: dict[str, bytes]
    snapshots: dict[int, str] = attrs.Factory(dict)
    producers: dict[int, tuple] = attrs.Factory(dict)
    map_end: int = 0
    last_snap: int = 0
    # producer id → its last batches, oldest first: (last sequence, last offset, offset delta)
    recent: dict[int, list[tuple[int, int, int]]] = attrs.Factory(dict)
    # ongoingTxns: a transaction's first offset → its producer id (rule 54)
    ongoing: dict[int, int] = attrs.Factory(dict)
    # the last offsets of the transactions batches read back completed (rule 61)
    read_back: list[int] = attrs.Factory(list)
    # producer id → its Verification; in memory only, and shared with every scratch copy: Kafka
    # clears an entry while it analyses a request, before the request is known to succeed
    verifying: dict[int, Verification] = attrs.Factory(dict)

    @classmethod
    def listing(cls, disk: dict[str, bytes]) -> ProducerStateManager:
        """The constructor: every file whose name ends ``.snapshot`` (rule 34)."""
        return cls(disk, _listed(disk))

    # --- writing (rules 6–8) ------------------------------------------------------------------------

    def update_map_end(self, offset: int) -> None:
        self.map_end = offset

    def take_snapshot(self) -> str | None:
        """Writes a snapshot at the map end offset if it is past the last one (rule 6); the name
        written.  The file is opened without truncation: a longer one of that name keeps its tail."""
        if self.map_end <= self.last_snap:
            return None
        name = snapshot_name(self.map_end)
        data = render([self.producers[p] for p in hashmap_order(list(self.producers))])
        self.disk[name] = data + self.disk.get(name, b"")[len(data) :]
        self.snapshots[self.map_end] = name
        self.last_snap = self.map_end
        return name

    # --- producers from batches (rules 45–52) --------------------------------------------------

    def duplicate_of(self, h) -> tuple[int, int] | None:
        """ProducerStateEntry.findDuplicateBatch for a client's batch ``h`` (a v2 header): the first
        and last offset of one of the producer's last five batches with the same epoch and sequence
        range, which the append answers instead of writing (rule 48)."""
        entry = self.producers.get(h.producer_id)
        if entry is None or entry[1] != h.producer_epoch:
            return None
        last = last_sequence(h.base_sequence, h.last_offset_delta)
        for seq, offset, delta in self.recent.get(h.producer_id, ()):
            if seq == last and first_sequence(seq, delta) == h.base_sequence:
                return offset - delta, offset
        return None

    def validate(self, h, origin: str = CLIENT) -> None:
        """ProducerAppendInfo's checks of a data batch ``h`` (rule 47): an epoch below the
        producer's is fenced, unless a follower wrote it (origin REPLICATION: only logged); a
        client's new epoch starts at sequence 0 unless the producer had none; within an epoch the
        sequence follows the last one (Int.MAX wraps to 0), any sequence for a producer Kafka has
        no epoch for."""
        entry = self.producers.get(h.producer_id)
        current = entry[1] if entry else -1
        where = f"producer {h.producer_id} at offset {h.offset}"
        if h.producer_epoch < current and origin != REPLICATION:
            raise LogError("InvalidProducerEpochException", f"epoch {h.producer_epoch} of {where} is below {current}")
        if origin != CLIENT:
            return
        self._check_verified_sequence(h, where)
        if h.producer_epoch != current:
            if h.base_sequence != 0 and current != -1:
                raise LogError(
                    "OutOfOrderSequenceException",
                    f"sequence {h.base_sequence} of {where} opens epoch {h.producer_epoch}",
                )
            return
        recent = self.recent.get(h.producer_id)
        last = recent[-1][0] if recent else NO_SEQUENCE
        if not (h.base_sequence == last + 1 or (h.base_sequence == 0 and last == INT_MAX)):
            raise LogError("OutOfOrderSequenceException", f"sequence {h.base_sequence} of {where} follows {last}")

    def _check_verified_sequence(self, h, where: str) -> None:
        """checkSequence's first rules, while the producer is being verified (KIP-890): verified at
        transaction version 2, a producer with no batch known starts at sequence 0; and no batch
        starts above the lowest sequence verification saw."""
        state = self.verifying.get(h.producer_id)
        if state is None:
            return
        if state.supports_epoch_bump and h.base_sequence != 0 and not self.recent.get(h.producer_id):
            raise LogError(
                "OutOfOrderSequenceException", f"sequence {h.base_sequence} of {where}, a producer with no batch known"
            )
        if h.base_sequence > state.lowest_sequence:
            raise LogError(
                "OutOfOrderSequenceException",
                f"sequence {h.base_sequence} of {where} is above {state.lowest_sequence}, the lowest verified",
            )

    # --- transaction verification (KIP-890) ---------------------------------------------------------

    def has_ongoing_transaction(self, pid: int, epoch: int) -> bool:
        """UnifiedLog.hasOngoingTransaction: the producer has a transaction open at ``epoch``."""
        entry = self.producers.get(pid)
        return entry is not None and entry[7] >= 0 and entry[1] == epoch

    def fence_older_epoch(self, pid: int, epoch: int) -> None:
        """A verification, or a transactional batch outside an open transaction, at an epoch below
        the producer's entry's is refused (KIP-890's checks under the log's lock)."""
        entry = self.producers.get(pid)
        if entry is not None and epoch < entry[1]:
            raise LogError("InvalidProducerEpochException", f"epoch {epoch} of producer {pid} is below {entry[1]}")

    def verify(self, pid: int, sequence: int, epoch: int, supports_epoch_bump: bool, now_ms: int) -> int:
        """maybeCreateVerificationStateEntry: the producer's entry, made if it has none, its lowest
        sequence and epoch updated; its guard."""
        state = self.verifying.get(pid)
        if state is None:
            state = self.verifying[pid] = Verification(now_ms, next(_GUARDS), sequence, epoch, supports_epoch_bump)
        state.update(sequence, epoch)
        return state.guard

    def verifies(self, pid: int, guard: int) -> bool:
        """``verificationGuard(pid).verify(guard)``: the producer's entry holds ``guard`` (never the sentinel)."""
        state = self.verifying.get(pid)
        return guard != SENTINEL and state is not None and state.guard == guard

    def transactional_batch_done(self, h, control: bool) -> None:
        """updateProducers after a transactional batch: the producer's entry goes (the transaction
        has its first offset, or it ended), but where a marker closes the epoch an epoch-bump
        verification was made for."""
        state = self.verifying.get(h.producer_id)
        if not (state is not None and state.supports_epoch_bump and control and h.producer_epoch == state.epoch):
            self.verifying.pop(h.producer_id, None)

    def update(self, h, transactional: bool = False) -> None:
        """ProducerStateManager.update from data batch ``h`` (rules 45, 53): a new epoch forgets
        the producer's batches; the batch becomes its last (five are kept); the entry keeps its
        place in the map's insertion order.  A transactional batch opens the producer's transaction
        if none is open; a plain one while one is open is refused (InvalidTxnStateException)."""
        pid = h.producer_id
        entry = self.producers.get(pid, _empty(pid))
        txn = entry[7]
        if txn >= 0 and not transactional:
            raise LogError("InvalidTxnStateException", f"producer {pid} at offset {h.offset} is in a transaction")
        if txn < 0 and transactional:
            txn = h.offset
            self.ongoing[h.offset] = pid
        if entry[1] != h.producer_epoch:
            self.recent[pid] = []
        seq, delta = last_sequence(h.base_sequence, h.last_offset_delta), h.last_offset - h.offset
        self.recent[pid] = [*self.recent.get(pid, [])[-(BATCHES_TO_RETAIN - 1) :], (seq, h.last_offset, delta)]
        self.producers[pid] = (pid, h.producer_epoch, seq, h.last_offset, delta, h.max_timestamp, entry[6], txn)

    # --- transactions (section 9, rules 53–60) ------------------------------------------------------

    def end_transaction(self, h, marker, origin: str, transaction_version: int = 0) -> CompletedTxn | None:
        """ProducerAppendInfo.appendEndTxnMarker (rule 55) for the marker record ``marker`` of
        control batch ``h``: its epoch and coordinator epoch are checked (refused unless from a
        follower); the producer's open transaction, if any, is the one it completes; the entry
        takes the marker's epoch (a new one forgets the batches), coordinator epoch and timestamp,
        and no longer has a transaction.

        At ``transaction_version`` 2 (KIP-890) the coordinator bumps the epoch before the marker, so
        a marker must be above the producer's epoch; one at the epoch is refused too, unless no
        transaction is open (or the epoch is Short.MAX): a retry of a marker already written, which
        is written again (KAFKA-19999, rule 55)."""
        pid = h.producer_id
        entry = self.producers.get(pid, _empty(pid))
        where = f"producer {pid} at offset {h.offset}"
        if origin != REPLICATION:
            strict = transaction_version >= 2
            retry = strict and h.producer_epoch == entry[1] and (entry[7] < 0 or h.producer_epoch == EPOCH_MAX)
            if (h.producer_epoch <= entry[1] if strict else h.producer_epoch < entry[1]) and not retry:
                raise LogError(
                    "InvalidProducerEpochException",
                    f"epoch {h.producer_epoch} of {where} is {'<=' if strict else '<'} {entry[1]}"
                    f" (TV{transaction_version})",
                )
            if entry[6] > marker.coordinator_epoch:
                raise LogError(
                    "TransactionCoordinatorFencedException",
                    f"coordinator epoch {marker.coordinator_epoch} of {where} is below {entry[6]}",
                )
        completed = CompletedTxn(pid, entry[7], h.offset, marker.control_type == "ABORT") if entry[7] >= 0 else None
        seq, offset, delta = entry[2:5]
        if entry[1] != h.producer_epoch:
            self.recent[pid] = []
            seq, offset, delta = NO_SEQUENCE, -1, 0
        self.producers[pid] = (
            pid,
            h.producer_epoch,
            seq,
            offset,
            delta,
            marker.timestamp,
            marker.coordinator_epoch,
            -1,
        )
        return completed

    def last_stable_offset(self, txn: CompletedTxn) -> int:
        """PSM.lastStableOffset (rule 56): the first offset of the earliest open transaction of
        another producer (the markers' own request included), else the offset after the marker."""
        return next(
            (first for first in sorted(self.ongoing) if self.ongoing[first] != txn.producer_id), txn.last_offset + 1
        )

    def complete(self, txn: CompletedTxn) -> None:
        """PSM.completeTxn: the transaction is no longer open (rule 57)."""
        if self.ongoing.pop(txn.first_offset, None) is None:
            raise LogError("IllegalArgumentException", f"transaction {txn} was not started")

    def unstable_after_load(self) -> bool:
        """Whether UnifiedLog's constructor finds a first unstable offset after the load: an open
        transaction, or one the load's reads completed (Kafka's unreplicated map, not pruned while
        the high watermark is the log start) — rule 61."""
        return bool(self.ongoing or self.read_back)

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction (rule 58)."""
        return min(self.ongoing, default=None)

    def scratch(self) -> ProducerStateManager:
        """A copy to analyse a request on: Kafka applies a request's producer updates only once
        every batch passed (analyzeAndValidateProducerState, then update)."""
        return attrs.evolve(
            self, producers=dict(self.producers), recent={k: list(v) for k, v in self.recent.items()},
            ongoing=dict(self.ongoing),
        )  # fmt: skip

    def adopt(self, other: ProducerStateManager) -> None:
        self.producers, self.recent, self.ongoing = other.producers, other.recent, other.ongoing

    # --- loading (rules 27, 35) ---------------------------------------------------------------------

    def is_empty(self) -> bool:
        return not self.producers

    def latest_snapshot_offset(self) -> int | None:
        return max(self.snapshots, default=None)

    def truncate_and_reload(self, log_start: int, log_end: int, now_ms: int) -> None:
        for offset in [o for o in self.snapshots if o > log_end or o <= log_start]:
            self._remove_and_delete(offset)
        if log_end != self.map_end:
            self.producers.clear()
            self.recent.clear()
            self.ongoing.clear()
            self._load_from_snapshot(log_start, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start)

    def _load_from_snapshot(self, log_start: int, now_ms: int) -> None:
        """The newest snapshot that reads; a corrupt one is deleted and the next older tried.  A
        file the map lists but the directory lost is an I/O error (NoSuchFileException)."""
        while self.snapshots:
            offset = max(self.snapshots)
            name = self.snapshots[offset]
            if name not in self.disk:
                raise FileNotFoundError(f"{name}: no such file")
            try:
                entries = parse(self.disk[name])
            except CorruptSnapshot:
                self._remove_and_delete(offset)
                continue
            for entry in entries:
                if not expired(entry, now_ms):
                    self.producers[entry[0]] = entry
                    self.recent[entry[0]] = [(entry[2], entry[3], entry[4])] if entry[3] >= 0 else []
                    if entry[7] >= 0:  # loadProducerEntry: an open transaction (rule 59)
                        self.ongoing[entry[7]] = entry[0]
            self.last_snap = self.map_end = offset
            return
        self.last_snap = self.map_end = log_start

    def remove_expired(self, now_ms: int) -> int:
        """removeExpiredProducers (the broker's periodic check): every producer :func:`expired` at
        ``now_ms`` is forgotten, with its last batches; the others keep their places.  The number
        forgotten.  (Kafka's HashMap keeps the table it grew to; the snapshot order after a removal
        from a map of more than twelve producers is not modelled: docs/departures.md.)"""
        gone = [pid for pid, entry in self.producers.items() if expired(entry, now_ms)]
        for pid in gone:
            del self.producers[pid]
            self.recent.pop(pid, None)
        for pid in [p for p, v in self.verifying.items() if now_ms - v.timestamp >= PRODUCER_ID_EXPIRATION_MS]:
            del self.verifying[pid]  # lingering unverified, with the same bound
        return len(gone)

    def on_log_start_offset_incremented(self, log_start: int) -> None:
        """Rule 24: no file goes; the map end moves up to the log start, the last snapshot offset is
        the newest one listed (the log start if none)."""
        self.map_end = max(self.map_end, log_start)
        self.last_snap = max(self.snapshots, default=log_start)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Rule 19: every listed snapshot deleted, producers cleared."""
        for o in list(self.snapshots):
            self._remove_and_delete(o)
        self.producers.clear()
        self.recent.clear()
        self.ongoing.clear()
        self.last_snap = 0
        self.map_end = offset

    # --- deleting (rules 21–26) ---------------------------------------------------------------------

    def _remove_and_delete(self, offset: int) -> None:
        self.disk.pop(self.snapshots.pop(offset), None)

    def mark_for_deletion(self, offset: int) -> str | None:
        """removeAndMarkSnapshotForDeletion: renamed ``.snapshot.deleted`` (a missing file is
        ignored); the new name, for the delayed delete."""
        name = self.snapshots.pop(offset, None)
        if name is None or name not in self.disk:
            return None
        self.disk[name + ".deleted"] = self.disk.pop(name)
        return name + ".deleted"

    def remove_stray_snapshots(self, bases: list[int]) -> None:
        """Rule 26, after listing the directory afresh: a snapshot at a segment's base stays; of the
        others only the largest, and only if it lies above every base."""
        self.snapshots = _listed(self.disk)
        strays = sorted(o for o in self.snapshots if o not in set(bases))
        for offset in strays[:-1]:
            self._remove_and_delete(offset)
        if strays and bases and strays[-1] < max(bases):
            self._remove_and_delete(strays[-1])


def _listed(disk: dict[str, bytes]) -> dict[int, str]:
    return {snapshot_offset(n): n for n in sorted(disk) if n.endswith(SUFFIX)}


def rebuild(psm: ProducerStateManager, segments, log_start: int, last_offset: int, now_ms: int, clean: bool) -> int:
    """UnifiedLog.rebuildProducerState (rules 14, 36): after a clean shutdown that left no
    snapshot, empty snapshots at the bases of the last two segments and at ``last_offset``;
    otherwise reload from the newest snapshot and, unless the state was empty and already at
    ``last_offset``, read the segments from there.  ``segments`` are :class:`model.segment.Segment`
    in offset order.  Returns the ``.log`` bytes the scan read; RebuildError for what a read
    raises."""
    to_snapshot = [s.base_offset for s in segments[-2:]] + [last_offset]
    if psm.latest_snapshot_offset() is None and clean:
        for offset in to_snapshot:
            psm.update_map_end(offset)
            psm.take_snapshot()
        return 0
    empty_before = psm.is_empty() and psm.map_end >= last_offset
    psm.truncate_and_reload(log_start, last_offset, now_ms)
    read = 0
    if last_offset > psm.map_end and not empty_before:
        floor = max((s.base_offset for s in segments if s.base_offset <= last_offset), default=None)
        for seg in _segments_between(segments, psm.map_end, last_offset):
            start = max(seg.base_offset, psm.map_end, log_start)
            psm.update_map_end(start)
            if seg.base_offset in to_snapshot:
                psm.take_snapshot()
            try:
                read += _scan(psm, seg, start, last_offset if seg.base_offset == floor else None)
            except (RecordFormatError, LogError) as e:
                raise RebuildError(seg.base_offset, e) from None
    psm.update_map_end(last_offset)
    psm.take_snapshot()
    return read


def _segments_between(segments, start: int, end: int) -> list:
    """LogSegments.values(from, to): from the segment holding ``start`` (or the first) to those
    based below ``end``."""
    if start == end:
        return []
    floor = max((s.base_offset for s in segments if s.base_offset <= start), default=None)
    return [s for s in segments if (floor is None or s.base_offset >= floor) and s.base_offset < end]


def _scan(psm: ProducerStateManager, seg, start: int, last_offset: int | None) -> int:
    """``segment.read(start, Int.MaxValue, maxPosition)`` and its batches by framing: up to where
    ``last_offset`` translates in the segment that holds it, else the whole segment."""
    limit = seg.size
    if last_offset is not None:
        found = seg.batch_at_or_after(last_offset)
        limit = found.position if found is not None else seg.size
    first = seg.batch_at_or_after(start)
    if first is None:
        return 0
    if limit < first.position:
        raise LogError(
            "IllegalArgumentException", f"Invalid size {limit - first.position} for a slice at {first.position}"
        )
    read = 0
    for batch in framed(bytes(seg.log[first.position : limit])):
        read += batch.size
        read_producer(psm, batch)
    return read


def _empty(pid: int) -> tuple:
    """ProducerStateEntry.empty: no epoch, no batch, no timestamp, coordinator epoch −1."""
    return (pid, -1, NO_SEQUENCE, -1, 0, -1, -1, -1)


def append_batch(psm: ProducerStateManager, batch, origin: str, transaction_version: int = 0) -> CompletedTxn | None:
    """UnifiedLog.updateProducers for one batch carrying a producer id: a data batch is checked
    (:meth:`ProducerStateManager.validate`) and becomes the producer's last; a marker ends its
    transaction; a control batch with no record changes nothing but makes the entry (rule 55).
    The completed transaction, if any."""
    h = batch.header()
    completed = None
    if batch.is_control:
        records = batch.records()
        if not records:
            psm.producers.setdefault(h.producer_id, _empty(h.producer_id))
        elif records[0].control_type not in ("ABORT", "COMMIT"):
            raise LogError(
                "IllegalArgumentException",
                f"control record type {records[0].control_type} at offset {h.offset} ends no transaction",
            )
        else:
            completed = psm.end_transaction(h, records[0], origin, transaction_version)
    else:
        psm.validate(h, origin)
        psm.update(h, batch.is_transactional)
    if batch.is_transactional:
        psm.transactional_batch_done(h, batch.is_control)
    return completed


def read_producer(psm: ProducerStateManager, batch, txn_index=None) -> None:
    """A batch read back from the log (the rebuild's scan, a segment's recovery) updates its
    producer, unchecked (origin REPLICATION, rule 45); a transaction it completes is no longer
    open, and segment recovery (``txn_index``) writes an aborted one to the segment's index at the
    last stable offset of that moment (rule 57)."""
    if batch.is_v2 and batch.header().producer_id >= 0:
        completed = append_batch(psm, batch, REPLICATION)
        if completed is not None:
            if txn_index is not None and completed.aborted:
                txn_index.append(aborted_txn(completed, psm.last_stable_offset(completed)))
            psm.complete(completed)
            psm.read_back.append(completed.last_offset)


def aborted_txn(txn: CompletedTxn, last_stable_offset: int) -> AbortedTxn:
    return AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, last_stable_offset)
