"""Loading one partition directory: Kafka's LogLoader.load() (spec §5.2–§5.7), as a pure function of
the directory's files.

The files are a dict {name: bytes}, changed in place as Kafka changes the directory.  The passes are
LogLoader's, under its names:

- :meth:`LogLoader.remove_temp_files_and_collect_swaps` (§5.2 step 1): ``.deleted`` and ``.cleaned``
  files removed, a ``.swap`` at or above the lowest ``.cleaned`` offset removed (an interrupted
  split, KAFKA-6264), the valid swaps collected;
- :meth:`LogLoader.complete_swap_operations` (§5.2 steps 2–4): the segments a swap replaces removed,
  a missing ``.index.swap`` created, every swap renamed into place;
- :meth:`LogLoader.load_segment_files` (§5.3): orphan indexes removed, every ``.log`` opened in
  offset order, a segment whose ``.index`` is missing or whose txn index is corrupt recovered;
- :meth:`LogLoader.recover_log` (§5.6): after an unclean shutdown every segment from the one holding
  the recovery point recovered until one loses bytes (the rest deleted), the log end below the log
  start deleting every segment, an empty log given a segment, the recovery point = min(checkpoint,
  log end) unless the shutdown was clean;

both of the last two under :meth:`LogLoader.retry_on_offset_overflow`: a recovery that finds an
offset past its segment's base + Int.MAX splits that segment (§5.5, :mod:`model.split`) and the pass
starts over.  The load then truncates the leader-epoch cache to the log end and the log start (§5.7)
and rebuilds the producer state from the snapshots (§5.8; docs/producer-state.md rules 14–17, 39):
every segment recovery first rebuilds it up to the segment with a manager of its own and takes a
snapshot after it, and the load ends with the stray snapshots removed and the log's manager rebuilt.

What a load cannot do (a bad file name, an index refusal, a framing error where Kafka's reads
throw) is a :class:`PartitionLoadError` naming the file; :class:`LoadOutcome` records the branches
the load took and what a failed load leaves on disk.  The data dirs, the clean-shutdown marker and
the checkpoints around the load are :mod:`model.log_manager`'s (§6).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from model.checkpoints import IO, CheckpointError, parse_epochs
from model.config import Config
from model.errors import SNAPPY_ERROR, IndexFailure, LogError, RecordFormatError
from model.indexes import OffsetIndex, TimeIndex, TransactionIndex
from model.log import Log, assigned_epochs
from model.names import offset_from_file_name
from model.producer_state import DELETED as SNAPSHOT_DELETED
from model.producer_state import REBUILDING, ProducerStateManager, RebuildError, rebuild, snapshot_offset
from model.producer_state import SUFFIX as SNAPSHOT
from model.segment import INT32_MAX, Segment, SegmentOffsetOverflow, prefix
from model.split import SplitError, split

EPOCHS = "leader-epoch-checkpoint"
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")

# Every loader branch a load can take, by the spec rule behind it (§5, §6.2): what `event()` and
# campaign reports count, and what they list as not reached.
BRANCHES = (
    "5.2.1b .deleted file removed",
    "5.2.1e invalid .swap removed",
    "5.2.1f .cleaned removed",
    "5.2.2 missing .index.swap created full of zero entries",
    "5.2.3 original replaced by a swap removed",
    "5.2.4 .swap renamed",
    "5.3.2 orphan index removed",
    "5.5 overflowed segment split",
    "5.5 split below the segment's base",
    "5.3.3c .index missing: segment recovered",
    "5.3.3c corrupt txn index: segment recovered",
    "5.6.1 unflushed segment recovered",
    "5.6.1b bytes truncated: recovery stops",
    "5.6.1b invalid offset: segment emptied",
    "5.6.1b later unflushed segments deleted",
    "5.6.2 log end below log start: all segments deleted",
    "5.6.3 no segment left: empty segment created",
    "5.6.4 recovery point kept below the log end (checkpoint)",
    "5.7 epoch entries at or past the log end removed",
    "6.2 marker present: clean load",
    "6.2 no marker: unclean load",
    "6.2.3 checkpoint unreadable: empty map",
    "load failed",
)
CLEAN_LOAD = "6.2 marker present: clean load"
LATER_DELETED = "5.6.1b later unflushed segments deleted"
SPLIT_BELOW_BASE = "5.5 split below the segment's base"
EPOCHS_PAST_END = "5.7 epoch entries at or past the log end removed"
ALL_DELETED = "5.6.2 log end below log start: all segments deleted"
INVALID_SWAP_REMOVED = "5.2.1e invalid .swap removed"


class PartitionLoadError(Exception):
    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}")


class DirQueuedOffline(PartitionLoadError):
    """An I/O error ended this partition's load (a KafkaStorageException the load job swallows):
    the partition is not loaded and its data dir is queued offline (§6.2 step 6, §6.6)."""


@attrs.define(eq=False)
class PartitionFiles:
    """A loaded partition: its Log plus the files the log layer does not own (kept as found)."""

    log: Log
    data_dir: str
    other: dict[str, bytes] = attrs.Factory(dict)  # name → bytes (snapshots, partition.metadata, …)
    epoch_text: bytes = b""  # leader-epoch-checkpoint as last written
    # the directory's name when it is not the log's own (a ``-delete`` dir, §2.3 rule 2)
    dir_name: str = ""

    @property
    def path(self) -> str:
        return f"{self.data_dir}/{self.dir_name or self.log.name}"


@attrs.define
class LoadOutcome:
    data_dir: str
    name: str
    topic: str | None
    partition: int | None
    error: str | None
    fatal: bool = True  # an error Kafka's startup rethrows (not an I/O error, which offlines the dir)
    kind: str = ""  # the directory's suffix (§2.3): "" a partition's, "delete", "future" or "stray"
    recovered: list[int] = attrs.Factory(list)
    truncated_bytes: int = 0
    branches: list[str] = attrs.Factory(list)  # the loader rules this load went through (§5, §6.2)
    log_bytes_read: int = 0  # what Kafka's algorithm reads of .log files (recover + readNextOffset)
    producer_state_bytes_read: int = 0  # what its producer-state rebuilds read of them besides
    # the files this load's recoveries wrote, by name in the partition's directory: what a load that
    # fails before its segments are in the log (§5.3) leaves over ``files_now``; from §5.6 on, the
    # log's segments say it (``log_now``) (docs/crash-recovery.md, "a failed load")
    written: dict[str, bytes] = attrs.Factory(dict)
    # the partition's files as the load's steps 1–4 and its splits left them (name → bytes), while it
    # runs: what a failed load leaves of the files as found, before ``written``
    files_now: dict[str, bytes] | None = None
    # the partition's log once its segments are loaded (§5.6 on): from then on the log's segments are
    # what a failed load leaves on disk
    log_now: PartitionFiles | None = None
    # the partition's producer snapshots (name → bytes), changed in place by the load
    snapshots: dict[str, bytes] = attrs.Factory(dict)
    # files a failed split left (its new segments' .cleaned logs, when an Error skipped the cleanup)
    left: dict[str, bytes] = attrs.Factory(dict)

    def took(self, branch: str) -> None:
        assert branch in BRANCHES, branch
        if branch not in self.branches:
            self.branches.append(branch)

    def wrote(self, seg: Segment) -> None:
        """Note what a recovery left of ``seg`` on disk, for the case the load fails later: its log
        as cut and its indexes as rebuilt, trimmed to their entries (docs/crash-recovery.md, "a
        failed load"; impl writes a load's recoveries as it goes, as Kafka does;
        corpora/found/conforms-9d085cfd83)."""
        p = prefix(seg.base_offset)
        self.written[f"{p}.log"] = bytes(seg.log)
        self.written[f"{p}.index"] = seg.offset_index.file_bytes()
        self.written[f"{p}.timeindex"] = seg.time_index.file_bytes()
        if seg.txn_index.exists:
            self.written[f"{p}.txnindex"] = seg.txn_index.data


def load_partition(
    files, path, topic, partition, config, clock, jitter, clean, rp_checkpoint, ls_checkpoint, outcome, mtimes
) -> PartitionFiles:
    """UnifiedLog.create on a partition directory's ``files``: the leader-epoch cache read from its
    checkpoint and the producer-state manager from its snapshots, then :meth:`LogLoader.load`."""
    files = dict(files)
    epochs_text = files.pop(EPOCHS, b"")
    try:
        epochs = parse_epochs(epochs_text, f"{path}/{EPOCHS}")
    except CheckpointError as e:  # read first, as the epoch cache is built (§6.5 rule 6)
        raise (DirQueuedOffline if e.kind == IO else PartitionLoadError)(f"{path}/{EPOCHS}", str(e)) from None
    log = Log(topic, partition, config, clock, jitter, [], epochs=_epoch_cache(epochs))
    pf = PartitionFiles(log, "", epoch_text=epochs_text)
    outcome.files_now = files  # changed in place by the load, as Kafka changes the directory
    outcome.snapshots = {n: files.pop(n) for n in list(files) if n.endswith((SNAPSHOT, SNAPSHOT_DELETED))}
    log.producer_state = _producer_state(outcome.snapshots, path)
    loader = LogLoader(files, path, pf, clean, rp_checkpoint, ls_checkpoint, outcome, mtimes)
    loader.load()
    return pf


def _epoch_cache(entries: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """LeaderEpochFileCache's constructor assigns the checkpointed entries one by one, so a file
    whose entries do not both increase (only damage writes one) collapses as appends would: an
    entry drops every earlier one whose epoch or start offset is not below its own.  Not written
    back.  (Entries with a negative field are left as read.)"""
    if any(epoch < 0 or start < 0 for epoch, start in entries):
        return list(entries)
    cache: list[tuple[int, int]] = []
    for epoch, start in entries:
        cache = assigned_epochs(cache, epoch, start) or cache
    return cache


def _producer_state(snapshots: dict[str, bytes], path: str) -> ProducerStateManager:
    """The partition's ProducerStateManager as UnifiedLog.create makes it; a snapshot name that is
    no offset fails the load (NumberFormatException, docs/producer-state.md rule 34)."""
    try:
        return ProducerStateManager.listing(snapshots)
    except ValueError as e:
        bad = next(n for n in sorted(snapshots) if n.endswith(SNAPSHOT) and not _is_offset(n))
        raise PartitionLoadError(f"{path}/{bad}", f"NumberFormatException: {e}") from None


def _is_offset(name: str) -> bool:
    try:
        snapshot_offset(name)
        return True
    except ValueError:
        return False


def _file_offset(directory: str, name: str) -> int:
    try:
        return offset_from_file_name(name)
    except Exception as e:
        raise PartitionLoadError(f"{directory}/{name}", f"file name does not start with an offset ({e})") from None


class LogLoader:
    """LogLoader over one partition directory (``files``: name → bytes, the epoch checkpoint and
    the snapshots already taken out by :func:`load_partition`), loading into ``pf.log``."""

    def __init__(self, files, path: str, pf: PartitionFiles, clean: bool, rp_checkpoint: int, ls_checkpoint: int,
                 outcome: LoadOutcome, mtimes: dict[str, int]):  # fmt: skip
        self.files, self.path, self.pf, self.log = files, path, pf, pf.log
        self.config: Config = pf.log.config
        self.clock: Callable[[], int] = pf.log.clock
        self.clean = clean
        self.rp_checkpoint, self.ls_checkpoint = rp_checkpoint, ls_checkpoint
        self.outcome = outcome
        self.mtimes = dict(mtimes)  # a rename keeps a file's modification time
        self.other: dict[str, bytes] = {}  # what the segments did not take (load_segment_files)

    def load(self) -> None:
        """LogLoader.load() (§5.2): the temporary files and swaps (steps 1–4), the segment files (5),
        the log's recovery (6), then the active segment's indexes resized, the epoch cache cut to the
        log end and the log start (7, 9) and the producer state rebuilt (11–12)."""
        swaps = self.remove_temp_files_and_collect_swaps()
        self.complete_swap_operations(swaps)
        segments = self.retry_on_offset_overflow(self.load_segment_files, self._install_in_files)
        self.pf.other = self.other
        self.log.segments = [segments[b] for b in sorted(segments)]
        self.outcome.log_now = self.pf
        if self.path.endswith("-delete"):
            # Kafka 4.4.0's LogLoader.load: a log queued for deletion is not recovered and its
            # active indexes keep their size; with no segment an empty one is made at 0; its
            # recovery point and log end are 0, so its epoch cache and snapshots are cut to 0
            if not self.log.segments:
                self.log.segments = [self.log.new_segment(0)]
                self.log.segments[0].indexes_unmade = True
            recovery_point, leo = 0, 0
        else:
            recovery_point, leo = self.retry_on_offset_overflow(self.recover_log, self._install_in_log)
            self.log.segments[-1].offset_index.resize(self.config.segment_index_bytes)
            self.log.segments[-1].time_index.resize(self.config.segment_index_bytes)
        self._truncate_epochs(leo)
        log = self.log
        log.log_start_offset = max(self.ls_checkpoint, log.segments[0].base_offset)
        log.epochs_truncate_from_start(self.ls_checkpoint)
        log.log_end_offset = leo
        log.recovery_point = max(recovery_point, log.log_start_offset)
        # docs/producer-state.md rules 39.7–8: stray snapshots removed, the log's manager rebuilt
        log.producer_state.remove_stray_snapshots([s.base_offset for s in log.segments])
        self.outcome.producer_state_bytes_read += self._rebuild(
            log.producer_state, log.segments, log.log_start_offset, leo, self.clean
        )
        log.fresh_segments = False  # the active segment's indexes are built by the resize above

    def _truncate_epochs(self, leo: int) -> None:
        """§5.7: the epoch cache's entries at or past the log end removed."""
        cache = list(self.log.epochs)
        self.log.epochs_truncate_from_end(leo)
        if self.log.epochs != cache:
            # Kafka's own, not idempotent: the recovery before it assigned no epoch its batches carry
            # (not above the latest, §4.6 step 3f), so the next load's recovery, from the cache without
            # those entries, assigns them anew (corpora/found/idempotent-recovery-0607043e93)
            self.outcome.took(EPOCHS_PAST_END)

    # --- §5.2: temporary files and swaps ----------------------------------------------------------

    def remove_temp_files_and_collect_swaps(self) -> list[str]:
        """§5.2 step 1: ``.deleted`` files (not the KRaft ``.checkpoint.deleted``) and ``.cleaned``
        files removed, and every ``.swap`` at or above the lowest ``.cleaned`` offset — part of a
        split that did not finish (KAFKA-6264); the names of the valid swaps."""
        files, outcome = self.files, self.outcome
        cleaned = [n for n in files if n.endswith(".cleaned")]
        min_cleaned = min((_file_offset(self.path, n) for n in cleaned), default=None)
        for name in list(files):
            if name.endswith(".deleted") and not name.endswith(".checkpoint.deleted"):
                del files[name]
                outcome.took("5.2.1b .deleted file removed")
        for name in [n for n in outcome.snapshots if n.endswith(SNAPSHOT_DELETED)]:
            del outcome.snapshots[name]
            outcome.took("5.2.1b .deleted file removed")
        swaps = [n for n in files if n.endswith(".swap")]
        for name in swaps:
            if min_cleaned is not None and _file_offset(self.path, name) >= min_cleaned:
                del files[name]
                outcome.took(INVALID_SWAP_REMOVED)
        for name in cleaned:
            del files[name]
            outcome.took("5.2.1f .cleaned removed")
        return [n for n in swaps if n in files]

    def complete_swap_operations(self, swaps: list[str]) -> None:
        """§5.2 steps 2–4: the files whose offsets lie between the lowest ``.log.swap`` base and the
        highest next offset of one (readNextOffset) removed — the originals a compaction or split
        replaced — then every ``.swap`` file renamed into place."""
        log_swaps = [n for n in swaps if n.endswith(".log.swap")]
        if log_swaps:
            low = min(_file_offset(self.path, n) for n in log_swaps)
            high = max(self._swap_next_offset(n, _file_offset(self.path, n)) for n in log_swaps)
            self._delete_swapped(low, high)
        for name in [n for n in self.files if n.endswith(".swap")]:
            self.files[name[: -len(".swap")]] = self.files.pop(name)
            # a rename keeps the file's modification time: retention of a segment without timestamps
            # goes by it (§4.8; pinned by corpora/crash/swap-renamed-at-load-keeps-its-mtime.json)
            if f"{self.path}/{name}" in self.mtimes:
                self.mtimes[f"{self.path}/{name[: -len('.swap')]}"] = self.mtimes.pop(f"{self.path}/{name}")
            self.outcome.took("5.2.4 .swap renamed")

    def _delete_swapped(self, low: int, high: int) -> None:
        """§5.2 step 3: every non-swap file whose name starts with an offset in [low, high) removed
        (a name without one is skipped, as Kafka ignores its NumberFormatException)."""
        for name in list(self.files):
            if name.endswith(".swap"):
                continue
            try:
                offset = offset_from_file_name(name)
            except Exception:
                continue
            if low <= offset < high:
                del self.files[name]
                self.outcome.took("5.2.3 original replaced by a swap removed")
        for name in list(self.outcome.snapshots):
            if low <= snapshot_offset(name) < high:  # a snapshot's name parses, or the load failed first
                del self.outcome.snapshots[name]
                self.outcome.took("5.2.3 original replaced by a swap removed")

    def _swap_next_offset(self, name: str, base: int) -> int:
        """§5.2 step 2: readNextOffset of a ``.log.swap`` segment, which materialises its offset
        index — a missing ``.index.swap`` is created empty at its full preallocated size (§5.9 caveat
        3) and is later renamed into place like the other swap files."""
        index_name = name[: -len(".log.swap")] + ".index.swap"
        if index_name not in self.files:
            self.files[index_name] = bytes(8 * (self.config.segment_index_bytes // 8))
            self.outcome.took("5.2.2 missing .index.swap created full of zero entries")
        seg = Segment(base, self.config, self.clock(), 0, bytearray(self.files[name]))
        seg.offset_index = OffsetIndex.open_existing(base, self.config.segment_index_bytes, self.files[index_name])
        self.outcome.log_bytes_read += _tail_bytes(seg)
        return self._next_offset(seg, name)

    # --- §5.5: the overflow retry -----------------------------------------------------------------

    def retry_on_offset_overflow(self, run: Callable, install: Callable[[list[Segment], Segment], None]):
        """retryOnOffsetOverflow (§5.5, KAFKA-6264): ``run`` a pass; each SegmentOffsetOverflow out
        of it splits the overflowed segment, ``install`` puts the new segments where the pass will
        find them, and the pass starts over.  The pass's result."""
        while True:
            try:
                return run()
            except SegmentOffsetOverflow as e:
                install(self._split(e.segment, e.written), e.segment)

    def _split(self, seg: Segment, written) -> list[Segment]:
        """§5.5: the segments that replace an overflowed one (:mod:`model.split`).  ``written``: the
        index entries its recovery rebuilt before the overflow, which stay on disk, trimmed, if the
        split fails the load (docs/crash-recovery.md, "A failed load")."""
        self.outcome.took("5.5 overflowed segment split")
        try:
            new = split(seg, self.log.new_segment, self.clock())
        except (SplitError, IndexFailure, LogError) as e:  # also an index refusal: a full index (§3.1)
            for index in written:
                index.trim_to_valid_size()
            seg.offset_index, seg.time_index = written
            self.outcome.wrote(seg)
            if getattr(e, "kind", None) == SNAPPY_ERROR:  # not an Exception: the split's cleanup does not run
                self.outcome.left.update({f"{prefix(n.base_offset)}.log.cleaned": bytes(n.log) for n in e.made})
            raise PartitionLoadError(
                f"{self.path}/{prefix(seg.base_offset)}.log", f"cannot split the overflowed segment: {e}"
            ) from None
        if new and min(n.base_offset for n in new) != seg.base_offset:
            # no new segment takes the original's name: replaceSegments renames it .deleted (§5.9 step 3)
            # and nothing makes that durable before the new segments' renames (step 5 syncs once, at the
            # end), so a power loss can keep both (docs/swap-files.md, "a split below the segment's base")
            self.outcome.took(SPLIT_BELOW_BASE)
        return new

    def _install_in_files(self, new: list[Segment], old: Segment) -> None:
        """A split during loadSegmentFiles: Kafka recovers a segment before adding it to the map, so
        replaceSegments finds no old segment to rename .deleted: the split's files replace the
        original's only where their names are the same (§5.9 step 3 filters old segments by the map)."""
        for seg in new:
            p = prefix(seg.base_offset)
            self.files[f"{p}.log"] = bytes(seg.log)
            self.files[f"{p}.index"] = seg.offset_index.file_bytes()
            self.files[f"{p}.timeindex"] = seg.time_index.file_bytes()
            self.mtimes[f"{self.path}/{p}.log"] = seg.mtime_ms

    def _install_in_log(self, new: list[Segment], old: Segment) -> None:
        """A split during recoverLog: replaceSegments on the log's segment map (§5.9)."""
        self.log.replace_segments(new, [old])

    # --- §5.3: the segment files ------------------------------------------------------------------

    def load_segment_files(self) -> dict[int, Segment]:
        """§5.3 loadSegmentFiles on the files left after §5.2: orphan indexes removed, each ``.log``
        opened in offset order and recovered if its ``.index`` is missing or its txn index corrupt.
        The segments by base offset; what the segments did not take is :attr:`other`."""
        self.other = files = dict(self.files)
        for name in [n for n in files if n.endswith(INDEX_SUFFIXES)]:
            if f"{prefix(_file_offset(self.path, name))}.log" not in files:
                del files[name]
                self.outcome.took("5.3.2 orphan index removed")
        segments: dict[int, Segment] = {}
        recovered: list[Segment] = []
        for name in sorted(n for n in files if n.endswith(".log")):
            base = _file_offset(self.path, name)
            if base in segments:
                # LogSegment.open names its files by the base offset (§2.1), not by the name listed:
                # a second name for a base this pass opened ("0.log" beside its canonical name)
                # opens the same files again, finds the index the first one's recovery wrote
                # (checked on Kafka 4.4.0), and replaces it in the map; the other name is left alone
                segments[base] = self._reopen(segments[base])
                continue
            seg, reason = self._open_segment(name)
            if reason:
                try:
                    lower = [segments[b] for b in sorted(segments)]
                    self.outcome.truncated_bytes += self.recover_segment(seg, lower)
                except SegmentOffsetOverflow as e:
                    self._leave_failed_pass(recovered, e)
                    raise
                except IndexFailure as e:  # Kafka's load fails on any index refusal here (§5.3)
                    raise PartitionLoadError(f"{self.path}/{prefix(seg.base_offset)}.log", str(e)) from None
                recovered.append(seg)
            segments[seg.base_offset] = seg
        return segments

    def _open_segment(self, name: str) -> tuple[Segment, str | None]:
        """LogSegment.open on ``name`` and its indexes, popped from :attr:`other`, and its sanity
        check (§5.3 step 3): why the segment must be recovered, or None."""
        files, path = self.other, self.path
        base = _file_offset(path, name)
        p = prefix(base)
        # LogSegment.open names the file by the base offset: for another name ("0.log") it opens,
        # creating it empty, the canonical one and leaves the listed one alone (checked on Kafka 4.4.0)
        name = f"{p}.log"
        if len(files.get(name, b"")) > INT32_MAX:  # FileRecords' constructor: a segment is at most Int.MAX bytes
            raise PartitionLoadError(
                f"{path}/{name}",
                f"KafkaException: The size of segment {path}/{name} ({len(files[name])}) is larger than the "
                f"maximum allowed segment size of {INT32_MAX}",
            )
        bound, now = self.config.jitter_bound(), self.clock()
        jitter = self.log.jitter(self.log.name, base) % bound if bound else 0
        seg = Segment(base, self.config, now, jitter, bytearray(files.pop(name, b"")))
        seg.mtime_ms = self.mtimes.get(f"{path}/{name}", now)
        index_bytes, time_bytes = files.pop(f"{p}.index", None), files.pop(f"{p}.timeindex", None)
        txn = files.pop(f"{p}.txnindex", None)
        seg.offset_index = OffsetIndex.open_existing(base, self.config.segment_index_bytes, index_bytes or b"")
        seg.time_index = TimeIndex.open_existing(base, self.config.segment_index_bytes, time_bytes or b"")
        if txn is not None:
            seg.txn_index = TransactionIndex.open_existing(base, txn)
        if index_bytes is None:
            self.outcome.took("5.3.3c .index missing: segment recovered")
            return seg, f"{path}/{p}.index does not exist"
        if txn is not None:
            try:
                seg.txn_index.sanity_check()
            except IndexFailure as e:
                self.outcome.took("5.3.3c corrupt txn index: segment recovered")
                return seg, str(e)
        return seg, None

    def _reopen(self, seg: Segment) -> Segment:
        """LogSegment.open on the files ``seg`` has now: its bytes and trimmed indexes, as a
        segment opened at load (its sanity check passes: the index exists)."""
        now = self.clock()
        again = Segment(seg.base_offset, self.config, now, seg.jitter_ms, bytearray(seg.log))
        again.mtime_ms = seg.mtime_ms
        size = self.config.segment_index_bytes
        again.offset_index = OffsetIndex.open_existing(seg.base_offset, size, seg.offset_index.file_bytes())
        again.time_index = TimeIndex.open_existing(seg.base_offset, size, seg.time_index.file_bytes())
        if seg.txn_index.exists:
            again.txn_index = TransactionIndex.open_existing(seg.base_offset, seg.txn_index.data)
        return again

    def _leave_failed_pass(self, recovered: list[Segment], e: SegmentOffsetOverflow) -> None:
        """The files a loadSegmentFiles pass that met an overflow leaves for the next (§5.5): the
        segments it recovered are closed before the retry and write their indexes; the overflowed
        one's recovery had reset both index files to full size (materialising a missing one) and
        written the entries of the batches before the overflow (§4.6 steps 1, 3)."""
        for seg in recovered:
            seg.close()
            self.files[f"{prefix(seg.base_offset)}.index"] = seg.offset_index.file_bytes()
            self.files[f"{prefix(seg.base_offset)}.timeindex"] = seg.time_index.file_bytes()
        for suffix, entry, index in ((".index", 8, e.written[0]), (".timeindex", 12, e.written[1])):
            name = f"{prefix(e.segment.base_offset)}{suffix}"
            size = self.config.segment_index_bytes // entry * entry
            index.trim_to_valid_size()
            head = index.file_bytes()
            self.files[name] = head + self.files.get(name, b"")[len(head) : size].ljust(size - len(head), b"\0")

    # --- recovery: a segment (§4.6, §5.3, §5.6) and the log (§5.6) ---------------------------------

    def recover_segment(self, seg: Segment, segments: list[Segment]) -> int:
        """LogLoader.recoverSegment: a manager of its own over the directory rebuilds the producer
        state up to the segment from ``segments`` (docs/producer-state.md rule 17), the segment is
        recovered (:meth:`Segment.recover`), and a snapshot is taken at the offset after its last v2
        batch.  The bytes the recovery cut."""
        outcome = self.outcome
        psm = ProducerStateManager.listing(outcome.snapshots)
        outcome.producer_state_bytes_read += self._rebuild(psm, segments, self.ls_checkpoint, seg.base_offset, False)
        outcome.recovered.append(seg.base_offset)
        outcome.log_bytes_read += seg.size  # LogSegment.recover reads the whole file
        try:
            removed = seg.recover(self.log)
        except IndexFailure as e:
            if hasattr(e, "partial"):  # the entries rebuilt before the refusal stay on disk
                outcome.wrote(seg)
            raise
        outcome.wrote(seg)
        seg.recover_producer_state(psm)
        outcome.wrote(seg)
        psm.take_snapshot()
        return removed

    def recover_log(self) -> tuple[int, int]:
        """§5.6 recoverLog: the unflushed segments recovered unless the shutdown was clean, every
        segment deleted if the log end is below the log start, an empty log given a segment; the
        recovery point (the log end after a clean shutdown, else at most the checkpoint) and the
        log end."""
        if not self.clean:
            self._recover_unflushed()
        leo = self._delete_segments_if_log_start_greater_than_log_end()
        log, outcome = self.log, self.outcome
        if not log.segments:
            outcome.took("5.6.3 no segment left: empty segment created")
            log.segments.append(log.new_segment(self.ls_checkpoint))
        if self.clean and leo is not None:
            return leo, leo
        leo = self._next_offset(log.segments[-1]) if leo is None else leo
        if self.rp_checkpoint < leo:
            outcome.took("5.6.4 recovery point kept below the log end (checkpoint)")
        return min(self.rp_checkpoint, leo), leo

    def _recover_unflushed(self) -> None:
        """§5.6 step 1: recover every unflushed segment until one loses bytes; delete the rest."""
        log, outcome = self.log, self.outcome
        floor = max((s.base_offset for s in log.segments if s.base_offset <= self.rp_checkpoint), default=None)
        unflushed = [s for s in log.segments if floor is None or s.base_offset >= floor]
        for i, seg in enumerate(unflushed):
            outcome.took("5.6.1 unflushed segment recovered")
            try:
                removed = self.recover_segment(seg, list(log.segments))
            except IndexFailure as e:
                if e.kind != "InvalidOffsetException":
                    raise PartitionLoadError(f"{self.path}/{prefix(seg.base_offset)}.log", str(e)) from None
                removed = self._empty(seg)
            outcome.truncated_bytes += removed
            if removed > 0:
                outcome.took("5.6.1b bytes truncated: recovery stops")
                if unflushed[i + 1 :]:
                    outcome.took(LATER_DELETED)
                log.remove_and_delete(unflushed[i + 1 :])
                log.delete_producer_snapshots(unflushed[i + 1 :])
                break

    def _empty(self, seg: Segment) -> int:
        """§5.6 step 1b: a recovery that met an invalid offset empties the segment
        (truncateTo(baseOffset)); the bytes removed."""
        self.outcome.took("5.6.1b invalid offset: segment emptied")
        removed = seg.size
        seg.log = bytearray()
        seg.mtime_ms = self.clock() if removed else seg.mtime_ms
        seg.offset_index = OffsetIndex.create(seg.base_offset, self.config.segment_index_bytes)
        seg.time_index = TimeIndex.create(seg.base_offset, self.config.segment_index_bytes)
        return removed

    def _delete_segments_if_log_start_greater_than_log_end(self) -> int | None:
        """§5.6 step 2: the log end (readNextOffset of the last segment), or None when there is no
        segment or the log end is below the log start, which deletes every segment."""
        log = self.log
        if not log.segments:
            return None
        leo = self._next_offset(log.segments[-1])
        self.outcome.log_bytes_read += _tail_bytes(log.segments[-1])
        if leo >= self.ls_checkpoint:
            return leo
        self.outcome.took(ALL_DELETED)
        log.remove_and_delete(list(log.segments))
        # no snapshot renamed: Kafka passes removeAndDeleteSegmentsAsync the live view of its
        # segment map, empty once they are removed, so its deleteProducerSnapshotsAsync gets
        # none; truncateFullyAndStartAt then deletes every snapshot at once (docs/producer-state.md
        # rule 32)
        log.epochs_clear()
        log.producer_state.truncate_fully_and_start_at(self.ls_checkpoint)
        return None

    # --- reads of the load --------------------------------------------------------------------------

    def _rebuild(self, psm, segments, log_start: int, last_offset: int, clean: bool) -> int:
        """rebuildProducerState during a load; what its scan cannot read fails the load, naming the
        segment."""
        try:
            return rebuild(psm, segments, log_start, last_offset, self.clock(), clean)
        except RebuildError as e:
            raise PartitionLoadError(f"{self.path}/{prefix(e.base)}.log", f"{REBUILDING}: {e.cause}") from None

    def _next_offset(self, seg: Segment, name: str | None = None) -> int:
        """readNextOffset (§4.5 rule 3) of a segment being loaded; a framing error in the tail it
        scans fails the partition's load, naming the file and position (Kafka's load throws)."""
        try:
            return seg.read_next_offset()
        except RecordFormatError as e:
            raise PartitionLoadError(f"{self.path}/{name or prefix(seg.base_offset) + '.log'}", str(e)) from None


def _tail_bytes(seg: Segment) -> int:
    """What readNextOffset reads of the log: from the last offset-index entry's position to the end
    (§4.5 rule 3)."""
    index = seg.offset_index  # its last entry only: a crashed index counts every preallocated slot
    return seg.size - (index.entry(index.entries - 1)[1] if index.entries else 0)
