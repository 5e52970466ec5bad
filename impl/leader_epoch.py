"""The leader-epoch cache of a partition and its ``leader-epoch-checkpoint`` file (spec §4.14, §5.2
steps 7 and 9, §6.5).

Entries (epoch, start offset), epochs and start offsets both increasing.  Every change is written
through :func:`impl.checkpoints.write_epochs` (temp file, fsync, rename, directory fsync).  Kafka
flushes truncations asynchronously (a scheduler task with no delay); here they are written before
the operation returns, which is what that task does at the end of the step.

Better than Kafka: a truncation's flush that would write back the very bytes the file durably holds
is skipped.  Kafka schedules one whenever truncateFromStart removes an entry, and at every load it
removes the first entry and puts it back when that entry starts at the log start offset (§5.2 step
9) — the common case, so every partition's load rewrote its checkpoint, two fsyncs, unchanged.  The
bytes are known durable after a clean shutdown (every write here is synchronous and complete before
the marker is written, and a crash makes the next start unclean, §6.4) or after this cache wrote
them; after a crash the rewrite is kept, as Kafka's: it is what makes a half-done rename durable.
"""

from __future__ import annotations

from impl.checkpoints import parse_epochs, read_bytes, render_epochs, write_epochs
from impl.storage import Storage

CHECKPOINT_NAME = "leader-epoch-checkpoint"


class LeaderEpochCache:
    def __init__(self, storage: Storage, partition_dir: str, exists: bool | None = None, durable: bool = False):
        """``exists``: whether the file exists, if the caller has just listed the dir (None: ask).
        ``durable``: the file as read is known durable (a clean start, see the module docstring)."""
        self._storage = storage
        self.path = f"{partition_dir}/{CHECKPOINT_NAME}"
        if not (storage.exists(self.path) if exists is None else exists):  # CheckpointFile's constructor creates it
            storage.open(self.path, create=True).close()
        self.entries: list[tuple[int, int]] = []
        data = read_bytes(storage, self.path)
        self._durable: bytes | None = data if durable else None  # the file's bytes, when known durable
        loaded = parse_epochs(data, self.path)
        if any(epoch < 0 or start < 0 for epoch, start in loaded):
            self.entries = loaded  # left as read
            return
        for epoch, start in loaded:  # the constructor assigns each entry: a damaged file collapses
            self._assign(epoch, start)

    def _write(self) -> None:
        self._durable = None
        write_epochs(self._storage, self.path, self.entries)
        self._durable = render_epochs(self.entries).encode()

    def _flush_truncation(self) -> None:
        """The flush Kafka schedules after a truncation removed entries, unless the file durably
        holds what it would write (see the module docstring)."""
        if self._durable != render_epochs(self.entries).encode():
            self._write()

    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry (epoch {epoch}, offset {start_offset})")
        if self._assign(epoch, start_offset):
            self._write()

    def _assign(self, epoch: int, start_offset: int) -> bool:
        """The entry added, every later-or-equal one before it dropped; False if no update is
        needed (the same epoch, not starting earlier)."""
        if self.entries:
            last_epoch, last_start = self.entries[-1]
            if epoch == last_epoch and start_offset >= last_start:
                return False
        while self.entries and (self.entries[-1][0] >= epoch or self.entries[-1][1] >= start_offset):
            self.entries.pop()
        self.entries.append((epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove entries starting at or after ``end_offset``."""
        if end_offset >= 0 and self.entries and self.entries[-1][1] >= end_offset:
            while self.entries and self.entries[-1][1] >= end_offset:
                self.entries.pop()
            self._flush_truncation()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries starting at or before ``start_offset``; the last dropped epoch starts there."""
        dropped = None
        while self.entries and self.entries[0][1] <= start_offset:
            dropped = self.entries.pop(0)
        if dropped is not None:
            self.entries.insert(0, (dropped[0], start_offset))
            self._flush_truncation()

    def clear_and_flush(self) -> None:
        self.entries = []
        self._write()
