"""Loading one partition directory: Kafka's LogLoader.load() (spec §5.2–§5.7, decision table §5.4).

Temp files (``.deleted``, ``.cleaned``, invalid ``.swap``) are removed, interrupted swaps completed,
orphan indexes deleted, segments opened with lazy indexes, the load-time recovery cases applied
(``.index`` missing, corrupt txn index), and after an unclean shutdown every segment from the one
containing the recovery point onward is recovered until one loses bytes — the rest are deleted.
Below the recovery point (or after a clean shutdown) nothing of a segment is read at load: its
indexes are proven lazily on first use (:mod:`impl.segment`).

Better than Kafka: every segment is scanned at most once per load.  Kafka recovers a segment twice
when loadSegmentFiles already recovered it (``.index`` missing, corrupt txn index, §5.3) and it is
also unflushed (§5.4, §5.6).  Its second pass reads the whole file again for nothing: the log was
already cut after its last valid batch (0 bytes truncated, so the recovery loop goes on to the next
segment), the indexes it rebuilds are the ones the first pass built, and it assigns no leader epoch
(none of the segment's epochs is above the cache's latest any more).  Here that second recovery is
counted — ``LoadReport.recovered_segments`` lists Kafka's recoveries, as the model does — but not
performed; ``LoadReport.scanned_segments`` lists what was actually read.

The loader's own delayed deletions go to :attr:`PartitionLoader.deferred`, a scheduler of its own,
which the caller moves into the shared one once the load is over: partitions loaded in parallel
(:mod:`impl.log_manager`) then queue their deletions in the same order as a sequential load.

A segment whose offsets overflow its base (a legacy segment, KAFKA-6264) is split when its recovery
finds the overflow, and the step that recovered it — loadSegmentFiles or recoverLog — starts over
(§5.5, :mod:`impl.split`).

Producer-state snapshots are read, written and deleted as Kafka 4.4's loader does
(docs/producer-state.md, rules 14–17, 26, 39): every recovery of a segment first rebuilds the producer
state up to it with a manager of its own — also the recovery this loader does not repeat — and the
load ends with the stray snapshots removed and the log's own manager rebuilt.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import attrs

from impl.config import LogConfig
from impl.errors import IndexFailure, LogFormatError
from impl.leader_epoch import CHECKPOINT_NAME, LeaderEpochCache
from impl.log import PartitionLog, Scheduler
from impl.names import offset_from_file_name
from impl.producer_state import BadSnapshotName, ProducerStateManager, RebuildError, rebuild
from impl.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    SWAP_SUFFIX,
    LogSegment,
    LogSegmentOffsetOverflow,
    filename_prefix,
)
from impl.split import SplitError, replace_segments, split_overflowed_segment

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


def _name_file(e: LogFormatError | IndexFailure, path: str) -> None:
    """An error that names no file is given ``path``: every load error says where it is."""
    if e.file is None:
        e.file = path


class LoadError(Exception):
    """This partition cannot be loaded; names the file (and position where known)."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}")


@attrs.define
class LoadReport:
    """What the load did — Kafka logs most of this as INFO/WARN lines."""

    deleted_files: list[str] = attrs.Factory(list)
    completed_swaps: list[str] = attrs.Factory(list)
    recovered_segments: list[int] = attrs.Factory(list)  # base offsets, in recovery order (Kafka's)
    scanned_segments: list[int] = attrs.Factory(list)  # base offsets actually read: each at most once
    recovery_reasons: dict[int, str] = attrs.Factory(dict)
    truncated_bytes: int = 0
    removed_segments: list[int] = attrs.Factory(list)  # deleted after a truncated segment
    split_segments: list[int] = attrs.Factory(list)  # overflowed segments split (§5.5), in order


def _offset(path: str) -> int:
    name = path.rsplit("/", 1)[-1]
    try:
        return offset_from_file_name(name)
    except Exception as e:  # the name rules raise Kafka's kinds; a load stops on any of them
        raise LoadError(path, f"file name does not start with an offset ({e})") from None


def _files(storage, directory: str) -> list[str]:
    """A fresh listing's regular files (everything but directories), sorted, as paths."""
    return _Listing(storage, directory).paths()


# the largest 20-digit file name prefix that parses as a long (Long.MAX_VALUE, zero-padded)
_MAX_PREFIX = filename_prefix(2**63 - 1)


def _canonical_prefix(name: str) -> str | None:
    """The part before the first dot if it is a base offset as Kafka writes it (§2.1: 20 decimal
    digits, in range), else None: then that part is its own ``filename_prefix``, no parse needed."""
    prefix = name[:20]
    if name[20:21] == "." and prefix.isdigit() and prefix.isascii() and prefix <= _MAX_PREFIX:
        return prefix
    return None


class _Listing:
    """One listing of a partition dir, kept up to date with what the loader itself deletes and
    renames there.  Kafka lists the dir at §5.2 step 1, again at steps 3 and 4 and in
    loadSegmentFiles (§5.3 step 1), and asks the file system whether each segment's index files
    exist; between those listings only the loader changes the dir, so one listing (a single read
    of the dir, with each entry's type) answers all of them.  Where the loader makes files it does
    not track — a swap segment's missing ``.index.swap`` created by readNextOffset (§5.2 step 2),
    the segments a split writes (§5.5) — the caller drops the listing and the dir is read again."""

    def __init__(self, storage, directory: str):
        self.dir = directory
        names, dirs = storage.scan_dir(directory)
        self.names = set(names)  # every entry: Kafka's File.exists() is true for a directory too
        self.files = dict.fromkeys(n for n in names if n not in dirs) if dirs else dict.fromkeys(names)  # sorted
        self._sorted = True

    def file_names(self) -> list[str]:
        """The regular files (all but directories), sorted by name."""
        if not self._sorted:
            self.files = dict.fromkeys(sorted(self.files))
            self._sorted = True
        return list(self.files)

    def paths(self) -> list[str]:
        return [f"{self.dir}/{name}" for name in self.file_names()]

    def removed(self, path: str) -> None:
        name = path.rsplit("/", 1)[-1]
        self.names.discard(name)
        self.files.pop(name, None)

    def created(self, *names: str) -> None:
        for name in names:
            self.names.add(name)
            if name not in self.files:
                self.files[name] = None
                self._sorted = False

    def renamed(self, src: str, dst: str) -> None:
        self.removed(src)
        name = dst.rsplit("/", 1)[-1]
        self.names.add(name)
        if name not in self.files:
            self.files[name] = None
            self._sorted = False


class PartitionLoader:
    def __init__(
        self,
        storage,
        directory: str,
        topic: str,
        partition: int,
        config: LogConfig,
        clock: Callable[[], int],
        jitter: Callable[[str, int], int],
        scheduler: Scheduler,
        had_clean_shutdown: bool,
        recovery_point_checkpoint: int,
        log_start_offset_checkpoint: int,
    ):
        self.storage = storage
        self.dir = directory
        self.topic, self.partition = topic, partition
        self.config = config
        self.clock = clock
        self.jitter = jitter
        self.scheduler = scheduler  # the log's, for after the load
        self.deferred = Scheduler()  # this load's delayed deletions, until the caller takes them
        self.pending_deletion: list[LogSegment] = []  # the segments those deletions hold open
        self._opened: list[LogSegment] = []  # every segment this load opened: a failed load closes them all
        self.clean = had_clean_shutdown
        self.recovery_point_checkpoint = recovery_point_checkpoint
        self.log_start_checkpoint = log_start_offset_checkpoint
        self.report = LoadReport()
        self.segments: dict[int, LogSegment] = {}
        self._scanned: set[int] = set()
        self._map_end_after: dict[int, int | None] = {}  # base → the offset after its last v2 batch
        self._producers_in: dict[int, list] = {}  # base → the headers of its batches with a producer id
        self.producer_state: ProducerStateManager | None = None  # the log's, made as the load starts
        self._listing: _Listing | None = None  # the dir as listed, see _Listing; None: list it again
        # snapshot files changed behind the log's producer-state manager (a recovery's own manager
        # writes and deletes them, a swap completion deletes some): it lists them again (§5.2 step 11)
        self._snapshots_changed = False

    def _listed(self) -> _Listing:
        if self._listing is None:
            self._listing = _Listing(self.storage, self.dir)
        return self._listing

    def _unlink(self, path: str) -> None:
        self.storage.unlink(path)
        if self._listing is not None:
            self._listing.removed(path)
        self.report.deleted_files.append(path)

    def _jitter(self, base: int) -> int:
        bound = self.config.jitter_bound()
        return self.jitter(f"{self.topic}-{self.partition}", base) % bound if bound else 0

    def _open(self, base: int, suffix: str = "", listed=None) -> LogSegment:
        segment = LogSegment(
            self.storage, self.dir, base, self.config, self.clock(), self._jitter(base), suffix=suffix, existing=True,
            listed=listed,
        )  # fmt: skip
        self._opened.append(segment)
        return segment

    # §5.2 step 1
    def remove_temp_files_and_collect_swaps(self) -> list[str]:
        swaps, cleaned, min_cleaned = [], [], None
        for name in self._listed().file_names():
            if name.endswith(DELETED_SUFFIX) and not name.endswith(".checkpoint.deleted"):
                self._unlink(f"{self.dir}/{name}")
            elif name.endswith(CLEANED_SUFFIX):
                offset = _offset(f"{self.dir}/{name}")
                min_cleaned = offset if min_cleaned is None else min(min_cleaned, offset)
                cleaned.append(f"{self.dir}/{name}")
            elif name.endswith(SWAP_SUFFIX):
                swaps.append(f"{self.dir}/{name}")
        valid = []
        for path in swaps:
            if min_cleaned is not None and _offset(path) >= min_cleaned:
                self._unlink(path)
            else:
                valid.append(path)
        for path in cleaned:
            self._unlink(path)
        return valid

    # §5.2 steps 2–4
    def complete_swaps(self, swaps: list[str]) -> None:
        log_swaps = [p for p in swaps if p[: -len(SWAP_SUFFIX)].endswith(".log")]
        if log_swaps:
            opened = [self._open(_offset(p), SWAP_SUFFIX) for p in log_swaps]
            try:
                low = min(s.base_offset for s in opened)
                high = max(s.read_next_offset() for s in opened)  # a damaged swap fails the load here
            finally:
                for s in opened:
                    s.close_handlers()
            self._listing = None  # readNextOffset may have created an .index.swap: listed again, as Kafka does
            self._snapshots_changed = True  # the range deleted may hold snapshots
            for path in self._listed().paths():
                if path.endswith(SWAP_SUFFIX):
                    continue
                try:
                    offset = offset_from_file_name(path.rsplit("/", 1)[-1])
                except Exception:
                    continue
                if low <= offset < high:
                    self._unlink(path)
        if not swaps:  # step 4's listing is step 1's less what step 1 deleted: no .swap left in it
            return
        listing = self._listed()
        for path in listing.paths():
            if path.endswith(SWAP_SUFFIX):
                self.storage.rename(path, path[: -len(SWAP_SUFFIX)])
                listing.renamed(path, path[: -len(SWAP_SUFFIX)])
                self.report.completed_swaps.append(path)

    # §5.3, started over after splitting an overflowed segment (§5.5)
    def load_segment_files(self, epoch_cache: LeaderEpochCache) -> None:
        while True:
            try:
                self._load_segment_files(epoch_cache)
                return
            except LogSegmentOffsetOverflow as e:
                for segment in self.segments.values():  # closed before the retry (recovered ones
                    segment.close()  # write their rebuilt indexes)
                self.segments.clear()
                # Kafka recovers a segment before adding it to the map: replaceSegments finds no
                # old segment to rename .deleted, and the new files replace the original's only
                # where the names are the same (§5.9 step 3 filters old segments by the map)
                self._split(e.segment)
                e.segment.close_handlers()
                # the retry opens every segment afresh from the listing, as Kafka's retry starts
                # from a cleared map: the split's segments, installed by replaceSegments, are closed
                for segment in self.segments.values():
                    segment.close_handlers()
                self.segments.clear()

    def _load_segment_files(self, epoch_cache: LeaderEpochCache) -> None:
        listing = self._listed()
        logs, indexes = [], []
        for name in listing.file_names():
            if name.endswith(".log"):
                logs.append(name)
            elif name.endswith(INDEX_SUFFIXES):
                indexes.append(name)
        for name in indexes:
            if f"{self._prefix(name)}.log" not in listing.files:
                self._unlink(f"{self.dir}/{name}")
        for name in logs:
            prefix = self._prefix(name)
            base = int(prefix)
            # whether its index files exist, from the listing: nothing but this loop changes the
            # dir, and a segment's sanity check or recovery makes only its own files (§5.3 step 3)
            time_index_new = f"{prefix}.timeindex" not in listing.names
            segment = self._open(base, listed=listing.names)
            problem = segment.sanity_check(time_index_new)
            if problem:
                self._recover(segment, epoch_cache, problem)
            if problem or time_index_new:
                # the files it made now exist for what follows: a second name for this base
                # ("0.log" beside its canonical name) opens the same files and finds its index
                # (checked on Kafka 4.4.0)
                listing.created(f"{prefix}.index", f"{prefix}.timeindex")
            self.segments[base] = segment

    def _prefix(self, name: str) -> str:
        """``filename_prefix`` of the offset the name starts with (LoadError if it starts with none)."""
        return _canonical_prefix(name) or filename_prefix(_offset(f"{self.dir}/{name}"))

    def _recover(self, segment: LogSegment, epoch_cache, reason: str) -> int:
        """LogLoader.recoverSegment: the producer state rebuilt up to the segment by a manager of
        its own, the segment recovered, a snapshot after its last v2 batch."""
        psm = ProducerStateManager(self.storage, self.dir)
        lower = [self.segments[b] for b in sorted(self.segments)]
        self._rebuild(psm, lower, self.log_start_checkpoint, segment.base_offset, False)
        self._snapshots_changed = True  # psm's rebuild deletes snapshots, its take_snapshot writes one
        self.report.recovered_segments.append(segment.base_offset)
        self.report.recovery_reasons[segment.base_offset] = reason
        truncated, txn_index = 0, None
        if segment.base_offset not in self._scanned:  # else Kafka's second pass changes nothing (module docstring)
            self._scanned.add(segment.base_offset)
            self.report.scanned_segments.append(segment.base_offset)
            try:
                truncated = segment.recover(epoch_cache)  # LogSegmentOffsetOverflow: the caller splits (§5.5)
            except (LogFormatError, IndexFailure) as e:
                _name_file(e, segment.log_path)  # a marker's records, read during recovery
                raise
            self.report.truncated_bytes += truncated
            self._map_end_after[segment.base_offset] = segment.recovered_map_end
            self._producers_in[segment.base_offset] = segment.recovered_producers
            txn_index = segment.txn_index  # rebuilt from the markers (a second pass gives the same)
        for header, marker in self._producers_in.get(segment.base_offset, ()):
            psm.read(header, marker, txn_index)  # LogSegment.recover updates the batches' producers
        if self._map_end_after.get(segment.base_offset) is not None:
            psm.update_map_end(self._map_end_after[segment.base_offset])
        psm.take_snapshot()
        return truncated

    def _split(self, segment: LogSegment) -> list[LogSegment]:
        """§5.5: split ``segment`` into ``.cleaned`` segments and install them (:mod:`impl.split`);
        the split segments will be recovered afresh if the retried step reaches them."""
        try:
            new = split_overflowed_segment(segment, self._new_cleaned)
        except SplitError as e:
            # the load fails: the entries the recovery rebuilt before the overflow stay, trimmed,
            # as after a refused recovery (docs/crash-recovery.md, "A failed load")
            for index in (segment.offset_index.get(), segment.time_index.get()):
                with contextlib.suppress(IndexFailure, OSError):
                    index.trim_to_valid_size()
            raise LoadError(segment.log_path, f"cannot split the overflowed segment: {e}") from None
        self._delete_snapshots_async(replace_segments(self.segments, new, [segment], self._delete_later))
        self._listing = None  # the split wrote files
        self._snapshots_changed = True
        self.report.split_segments.append(segment.base_offset)
        self._scanned -= {segment.base_offset, *(s.base_offset for s in new)}
        return new

    def _new_cleaned(self, base: int) -> LogSegment:
        """LocalLog.createNewCleanedSegment: any ``.cleaned`` files of ``base`` deleted, a new one opened."""
        for suffix in (".log", *INDEX_SUFFIXES):
            path = f"{self.dir}/{filename_prefix(base)}{suffix}{CLEANED_SUFFIX}"
            if self.storage.exists(path):
                self._unlink(path)
        segment = LogSegment(
            self.storage, self.dir, base, self.config, self.clock(), self._jitter(base), suffix=CLEANED_SUFFIX,
            preallocate=self.config.preallocate,
        )  # fmt: skip
        self._opened.append(segment)
        return segment

    # §5.6, started over after splitting an overflowed segment (§5.5)
    def recover_log(self, epoch_cache: LeaderEpochCache) -> tuple[int, int]:
        while True:
            try:
                return self._recover_log(epoch_cache)
            except LogSegmentOffsetOverflow as e:
                self._split(e.segment)

    def _recover_log(self, epoch_cache: LeaderEpochCache) -> tuple[int, int]:
        bases = sorted(self.segments)
        if not self.clean:
            rp = self.recovery_point_checkpoint
            floor = max((b for b in bases if b <= rp), default=None)
            unflushed = [b for b in bases if floor is None or b >= floor]
            for i, base in enumerate(unflushed):
                segment = self.segments[base]
                try:
                    truncated = self._recover(segment, epoch_cache, "unflushed (at or after the recovery point)")
                except IndexFailure as e:
                    if e.kind != "InvalidOffsetException":
                        raise LoadError(segment.log_path, str(e)) from None
                    truncated = segment.truncate_to(base, self.clock())
                    self.report.truncated_bytes += truncated
                if truncated > 0:
                    doomed = [self.segments.pop(b) for b in unflushed[i + 1 :]]
                    self.report.removed_segments += [s.base_offset for s in doomed]
                    self._delete_async(doomed)
                    self._delete_snapshots_async(doomed)
                    break
        leo = None
        if self.segments:
            leo = self.segments[max(self.segments)].read_next_offset()
            if leo < self.log_start_checkpoint:
                doomed = [self.segments.pop(b) for b in sorted(self.segments)]
                self.report.removed_segments += [s.base_offset for s in doomed]
                self._delete_async(doomed)
                # no snapshot renamed: Kafka's deleteProducerSnapshotsAsync gets its emptied segment
                # map's live view; truncateFullyAndStartAt deletes every snapshot at once (rule 32)
                epoch_cache.clear_and_flush()
                self.producer_state.truncate_fully_and_start_at(self.log_start_checkpoint)
                leo = None
        if not self.segments:
            base = self.log_start_checkpoint
            self.segments[base] = LogSegment(
                self.storage, self.dir, base, self.config, self.clock(), self._jitter(base),
                preallocate=self.config.preallocate,
            )  # fmt: skip
        if self.clean and leo is not None:
            return leo, leo
        if leo is None:
            leo = self.segments[max(self.segments)].read_next_offset()
        return min(self.recovery_point_checkpoint, leo), leo

    def _delete_async(self, segments: list[LogSegment]) -> None:
        for segment in segments:
            segment.change_file_suffixes("", DELETED_SUFFIX)
            self._delete_later(segment)

    def _delete_later(self, segment: LogSegment) -> None:
        self.pending_deletion.append(segment)
        due = self.clock() + self.config.file_delete_delay_ms
        self.deferred.schedule(due, f"delete {segment.log_path}", segment.delete_if_exists)

    def _rebuild(self, psm, segments, log_start: int, last_offset: int, clean: bool) -> None:
        """rebuildProducerState during the load; what its scan cannot read fails the load."""
        try:
            rebuild(psm, segments, log_start, last_offset, self.clock(), clean)
        except RebuildError as e:
            raise LoadError(e.segment.log_path, f"rebuilding producer state: {e.cause}") from None

    def _delete_snapshots_async(self, segments: list[LogSegment]) -> None:
        """deleteProducerSnapshotsAsync with the log's manager as it listed the directory at the start."""
        delay = self.config.file_delete_delay_ms
        self.producer_state.delete_for(segments, delay, self.clock() + delay, self.deferred)

    def load(self) -> PartitionLog:
        try:
            return self._load()
        except BaseException as e:
            if isinstance(e, LogFormatError | IndexFailure):
                _name_file(e, self.dir)  # where nothing nearer is known: the partition's dir
            # a failed load keeps no descriptor: the log's segments, those pending deletion, and
            # any opened on the way (a swap being read, a split's new segments, one being recovered)
            for segment in {
                id(s): s for s in [*self._opened, *self.segments.values(), *self.pending_deletion]
            }.values():
                segment.close_handlers()
            raise

    def close_handlers(self) -> None:
        """Close every file of the segments this load opened: the log's and those pending
        deletion (their delayed deletion still runs: it unlinks by name)."""
        for segment in [*self.segments.values(), *self.pending_deletion]:
            segment.close_handlers()

    def _load(self) -> PartitionLog:
        listing = self._listed()  # §5.2 step 1's listing, also what the caches' constructors list (§5.1)
        epoch_cache = LeaderEpochCache(
            self.storage, self.dir, exists=CHECKPOINT_NAME in listing.names, durable=self.clean
        )  # fmt: skip
        try:
            self.producer_state = ProducerStateManager(self.storage, self.dir, listed=listing.files)
        except BadSnapshotName as e:
            raise LoadError(e.path, "NumberFormatException: the name before the first dot is no offset") from None
        self.complete_swaps(self.remove_temp_files_and_collect_swaps())
        self.load_segment_files(epoch_cache)
        if self.dir.endswith("-delete"):
            # a log queued for deletion (Kafka 4.4.0's LogLoader.load): no recovery, its active
            # indexes not resized, an empty segment at 0 if none, recovery point and log end 0
            if not self.segments:
                self.segments[0] = LogSegment(
                    self.storage, self.dir, 0, self.config, self.clock(), self._jitter(0), preallocate=False
                )
            recovery_point, next_offset = 0, 0
        else:
            recovery_point, next_offset = self.recover_log(epoch_cache)
            self.segments[max(self.segments)].resize_indexes(self.config.segment_index_bytes)
        epoch_cache.truncate_from_end(next_offset)
        log_start = max(self.log_start_checkpoint, min(self.segments))
        epoch_cache.truncate_from_start(self.log_start_checkpoint)
        segments = [self.segments[b] for b in sorted(self.segments)]
        self.producer_state.remove_stray_snapshots([s.base_offset for s in segments], relist=self._snapshots_changed)
        self._rebuild(self.producer_state, segments, log_start, next_offset, self.clean)
        return PartitionLog(
            self.storage,
            self.dir,
            self.topic,
            self.partition,
            self.config,
            self.clock,
            self.jitter,
            self.scheduler,
            [self.segments[b] for b in sorted(self.segments)],
            log_start,
            recovery_point,
            next_offset,
            epoch_cache,
            self.producer_state,
        )
