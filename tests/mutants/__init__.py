"""Mutants: small, named, deliberately broken variants of ``impl`` (DESIGN.md "Mutants").

A mutant is a textual edit of one ``impl`` module's source — ``old`` must occur exactly once, and is
replaced by ``new`` — compiled into a fresh module object that never replaces the real one.  No flag
in production code switches them on.  Each mutant names the checks that must catch it; the suite is
only trusted while every mutant is caught (tests/test_mutants.py).
"""

from __future__ import annotations

import importlib
import sys
import types

import attrs


@attrs.frozen
class Mutant:
    name: str
    module: str  # the impl module it edits
    old: str
    new: str
    description: str
    caught_by: tuple[str, ...]  # names of checks (conformance.formats.FORMAT_CHECKS, ...)
    more: tuple[tuple[str, str], ...] = ()  # further (old, new) edits of the same module, in order

    @property
    def edits(self) -> tuple[tuple[str, str], ...]:
        return ((self.old, self.new), *self.more)

    def source(self) -> str:
        original = importlib.import_module(self.module)
        with open(original.__file__, encoding="utf-8") as f:
            text = f.read()
        for old, new in self.edits:
            count = text.count(old)
            if count != 1:
                raise LookupError(
                    f"mutant {self.name}: expected the edited text exactly once in {self.module}, found {count}"
                )
            text = text.replace(old, new)
        return text

    def load(self) -> types.ModuleType:
        """A new module object with the mutation applied (``impl`` itself is untouched)."""
        name = f"{self.module}__mutant_{self.name.replace('-', '_')}"
        module = types.ModuleType(name)
        module.__file__ = f"<mutant {self.name} of {self.module}>"
        module.MUTANT_OF = self.module  # which real module it stands in for
        code = compile(self.source(), module.__file__, "exec")
        sys.modules[name] = module  # dataclass/NamedTuple machinery looks the module up
        try:
            exec(code, module.__dict__)
        finally:
            sys.modules.pop(name, None)
        return module


FORMAT_MUTANTS = (
    Mutant(
        name="crc-range-off-by-one",
        module="impl.file_records",
        old="computed = crc32c(mv[pos + 21 : pos + total])",
        new="computed = crc32c(mv[pos + 22 : pos + total])",
        description="v2 CRC-32C computed from byte 22 instead of 21 (attributes' first byte not covered, §1.5)",
        caught_by=("spec-vectors", "generated-segments", "damaged-segments", "cut-everywhere", "file-records-machine"),
    ),
    Mutant(
        name="seventeen-byte-tail-is-corrupt",
        module="impl.file_records",
        old="last_header_start = end - 17",
        new="last_header_start = end - 16",
        description="a tail of exactly 17 bytes is examined (and judged corrupt or torn) instead of ignored (§1.10 rule 1)",
        caught_by=("cut-everywhere", "tail-lengths", "file-records-machine"),
    ),
    Mutant(
        name="read-past-declared-size",
        module="impl.file_records",
        old="computed = zlib.crc32(mv[pos + 16 : pos + total])",
        new="computed = zlib.crc32(mv[pos + 16 : end])",
        description="legacy CRC-32 computed up to the end of the buffer instead of the declared batch end (§1.7, §1.10)",
        caught_by=("spec-vectors", "generated-segments", "cut-everywhere", "file-records-machine"),
    ),
    Mutant(
        name="legacy-last-offset-wrong-field",
        module="impl.file_records",
        old="(pos, total, offset, offset, magic, crc, attributes, -1, -1, ts, ts, -1, -1, -1, -1)",
        new="(pos, total, offset, offset + _size_at(mv, pos + 23)[0], magic, crc, attributes, -1, -1, ts, ts, -1, -1, -1, -1)",
        description="v0/v1 lastOffset read as if the message had a v2 lastOffsetDelta at byte 23, not the offset field (§1.7)",
        caught_by=("spec-vectors", "generated-segments", "cut-everywhere", "file-records-machine"),
    ),
)

INDEX_MUTANTS = (
    Mutant(
        name="lazy-index-without-lock",
        module="impl.index",
        old="""        with self._lock:
            sync_point("LazyIndex.get:locked")
            if self._index is None:""",
        new="""        if True:
            sync_point("LazyIndex.get:locked")
            if self._index is None:""",
        description="KAFKA-9156: the lazy getter checks and constructs without the lock, so two threads can both build the index (§7.4)",
        caught_by=("lazy-index-schedules", "index-machine", "regression-corpus", "log-machine"),
    ),
    Mutant(
        name="warm-section-bound-off-by-one",
        module="impl.index",
        old="lo, hi = first_hot, n - 1",
        new="lo, hi = first_hot + 1, n - 1",
        description="the hot-section binary search starts one slot after the first hot entry (§3.4 step 3)",
        caught_by=("regression-corpus", "index-machine"),
    ),
    Mutant(
        name="time-index-sanity-accepts-zero-last-timestamp",
        module="impl.index",
        old="if last_ts < first_ts:",
        new="if last_ts < first_ts and last_ts != 0:",
        description="the time-index sanity check passes a zero-padded index whose last entry reads (0, base) (§3.3.6, §7.7)",
        caught_by=("index-files-arbitrary-bytes", "index-machine"),
    ),
    Mutant(
        name="trim-keeps-one-extra-entry",
        module="impl.index",
        old="return self.resize(self.ENTRY_SIZE * self._entries)",
        new="return self.resize(self.ENTRY_SIZE * (self._entries + 1))",
        description="trimToValidSize leaves one slot past the last entry (§3.1), so a reopened index has a bogus final entry",
        caught_by=("index-machine",),
    ),
)

# impl's producer expiration check (ProducerStateManager.removeExpiredProducers), which two mutants edit
_EXPIRY = "gone = [p for p, e in self.producers.items() if e[7] < 0 and now_ms - e[5] >= PRODUCER_ID_EXPIRATION_MS]"

LOG_MUTANTS = (
    Mutant(
        name="rebuilt-gzip-keeps-zlibs-os-byte",
        module="impl.codecs",
        old="        out[GZIP_OS] = OS_UNKNOWN\n",
        new="        pass\n",
        description="a batch the cleaner rebuilds is gzipped with zlib's header (OS byte 3), where Kafka on Java 17 "
        "writes GZIPOutputStream's (OS 255, JDK-8244706): the cleaned segment differs by a byte (pinned by "
        "corpora/log/cleaning-rebuilds-compressed-batches-as-kafka-writes-them.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="tombstone-kept-past-its-horizon",
        module="impl.cleaner",
        old="retain_deletes = (horizon is None or f.now < horizon) if v2 else f.retain_legacy_deletes",
        new="retain_deletes = True if v2 else f.retain_legacy_deletes",
        description="a cleaning round keeps a v2 tombstone whose delete horizon the clock has passed, where Kafka's "
        "Cleaner.shouldRetainRecord drops it (§5.9, KIP-534; pinned by "
        "corpora/log/compaction-rounds-on-kafkas-own-cleaner.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="aborted-data-kept-by-the-cleaner",
        module="impl.cleaned_transaction_metadata",
        old="            ongoing[1] = True\n            return True\n",
        new="            ongoing[1] = True\n            return False\n",
        description="a cleaning round keeps (and maps the keys of) the batches of an aborted transaction, where "
        "Kafka's CleanedTransactionMetadata has them dropped (pinned by "
        "corpora/log/cleaning-drops-aborted-transactions.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="cleaned-txn-index-left-empty",
        module="impl.cleaned_transaction_metadata",
        old="                self.cleaned_index.append(ongoing[0])",
        new="                pass",
        description="the cleaned segment's .txnindex loses the aborted transactions whose markers the round kept, "
        "where Kafka writes them into it: a read_committed fetch hands the consumer aborted data (pinned by "
        "corpora/log/cleaning-drops-aborted-transactions.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="failed-cleaning-round-deletes-its-cleaned-files",
        module="impl.cleaner",
        old="    except _Aborted:\n        # Cleaner.cleanSegments deletes",
        new="    except Exception:\n        # Cleaner.cleanSegments deletes",
        description="a cleaning round that fails (not aborted) deletes its .cleaned files, where Kafka's "
        "cleanSegments deletes them on LogCleaningAbortedException only and leaves them to the next load "
        "(pinned by corpora/log/failed-cleaning-round-leaves-its-cleaned-files.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="cleaning-past-the-last-stable-offset",
        module="impl.cleaner",
        old="min(log.last_stable_offset(), log.active_segment.base_offset)",
        new="min(log.high_watermark, log.active_segment.base_offset)",
        description="a cleaning round reaches past the first offset of an open transaction, where "
        "LogCleanerManager.cleanableOffsets stops it at the last stable offset (pinned by "
        "corpora/log/cleaning-stops-at-the-last-stable-offset.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="marker-dropped-before-its-horizon",
        module="impl.cleaner",
        old="    drop = can_discard and (horizon_passed or not control)\n",
        new="    drop = can_discard\n",
        description="a cleaning round drops a transaction marker as soon as nothing of its transaction is left, "
        "where Kafka first writes a delete horizon into it and drops it only once delete.retention.ms has passed "
        "(KIP-534; pinned by corpora/log/cleaning-keeps-a-marker-until-its-delete-horizon.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="producers-expire-strictly-after-their-day",
        module="impl.producer_state",
        old=_EXPIRY,
        new="gone = [p for p, e in self.producers.items() if e[7] < 0 and now_ms - e[5] > PRODUCER_ID_EXPIRATION_MS]",
        description="the producer expiration check keeps a producer last seen exactly producer.id.expiration.ms ago, "
        "where Kafka's isProducerExpired (>=) forgets it (pinned by "
        "corpora/log/producers-expire-a-day-after-their-last-batch.json)",
        caught_by=("log-scenarios", "log-machine"),
    ),
    Mutant(
        name="producer-in-a-transaction-expires",
        module="impl.producer_state",
        old=_EXPIRY,
        new="gone = [p for p, e in self.producers.items() if now_ms - e[5] >= PRODUCER_ID_EXPIRATION_MS]",
        description="the producer expiration check forgets a producer whose transaction is open, where Kafka keeps "
        "it until the transaction completes (pinned by corpora/log/producers-expire-a-day-after-their-last-batch.json)",
        caught_by=("log-scenarios", "log-machine"),
    ),
    Mutant(
        name="cleaned-group-below-segment-bytes",
        module="impl.cleaner",
        old="            if not (log_size + s.size <= max_size):\n",
        new="            if not (log_size + s.size < max_size):\n",
        description="groupSegmentsBySize closes a group before a segment that would bring it to exactly "
        "segment.bytes, where Kafka's bound is inclusive (KAFKA-5413; pinned by "
        "corpora/KAFKA-7385/emptied-producer-batch-alone-in-a-cleaned-segment.json, whose rounds 1 and 3 "
        "fill a group to the byte)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="unassigned-log-served",
        module="impl.log_manager",
        old="        if kind in (\"\", \"future\") and tp in self.unassigned:\n",
        new="        if False:\n",
        description="a startup serves the log of a partition its metadata image no longer assigns here, where "
        "Kafka's loadLog renames it -stray when KRaft's isStray holds (4.1 on; pinned by "
        "corpora/crash/unassigned-partitions-set-aside-at-startup.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="unassigned-future-log-kept",
        module="impl.log_manager",
        old="        if kind in (\"\", \"future\") and tp in self.unassigned:\n",
        new="        if kind == \"\" and tp in self.unassigned:\n",
        description="a startup keeps the future log of an unassigned partition as a future log, where Kafka's "
        "loadLog asks isStray of every log before it keys a future one apart (pinned by "
        "corpora/crash/unassigned-partitions-set-aside-at-startup.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="producers-last-batch-dropped",
        module="impl.cleaner",
        old="    return producers_last or h.last_offset + 1 == f.upper_bound, drop, can_discard and control\n",
        new="    return h.last_offset + 1 == f.upper_bound, drop, can_discard and control\n",
        description="a cleaning round drops an active producer's last batch once it is emptied, where Kafka keeps "
        "its header for the producer's sequence and epoch (pinned by "
        "corpora/log/cleaning-keeps-each-producers-last-batch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="log-append-time-not-stamped",
        module="impl.log",
        old='                if self.config.message_timestamp_type == "LogAppendTime":\n',
        new="                if False:\n",
        description="under message.timestamp.type=LogAppendTime a leader's batch keeps the producer's CreateTime, where "
        "Kafka's LogValidator stamps its max timestamp with the broker's clock (§4.14)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="loaded-segments-draw-no-jitter",
        module="impl.loader",
        old='return self.jitter(f"{self.topic}-{self.partition}", base) % bound if bound else 0',
        new="return 0",
        description="the segments a load opens draw no roll jitter, where Kafka's LogSegment.open gives each a new "
        "one: the active segment after a restart rolls by segment.ms alone (§4.3 rule 2)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="marker-read-whole-as-json",
        module="impl.clean_shutdown",
        old="root, _ = json.JSONDecoder(parse_constant=_refuse).raw_decode(text)",
        new="root = json.JSONDecoder(parse_constant=_refuse).decode(text)",
        description="the clean-shutdown marker's content must be JSON to its end, where Kafka's Jackson mapping reads "
        "the root object and nothing after it: the broker registers no previous epoch (§6.4, KIP-966)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="index-existence-from-a-stale-listing",
        module="impl.loader",
        old='                listing.created(f"{prefix}.index", f"{prefix}.timeindex")',
        new="                pass",
        description="loadSegmentFiles answers whether a segment's index exists from the listing taken before an earlier "
        "segment's recovery wrote it, so a second name for the same base is recovered again (§5.3; Kafka asks the file system)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="reversed-segment-range-answered",
        module="impl.log",
        old="        if end < start:\n            raise LogError(",
        new="        if False:\n            raise LogError(",
        description="LogSegments.values(from, to) with to below from answers segments instead of refusing "
        "(IllegalArgumentException in Kafka, §4.13 rule 1)",
        caught_by=("segments-range",),
    ),
    Mutant(
        name="unexpected-append-offset-names-the-wrapper-offset",
        module="impl.log",
        old='{"first_offset": base_offset(data, headers[0]), "last_offset": last}',
        new='{"first_offset": headers[0].offset, "last_offset": last}',
        description="a follower append refused below the log end carries a legacy wrapper's own offset (its last inner "
        "record's) as the first offset, where Kafka's UnexpectedAppendOffsetException carries the batch's base offset (§4.14)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="unreadable-first-batch-rolls-by-the-clock",
        module="impl.segment",
        old="if size < _RECORD_OVERHEAD_V0:",
        new="if False:",
        description="a roll check that finds the active segment's first batch with a size field below 14 reads on instead of "
        "throwing CorruptRecordException, so the append is taken where Kafka refuses it (§4.3, loadFirstBatchTimestamp)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="compacted-topic-takes-keyless-records",
        module="impl.log",
        old="if cfg.compact_enabled and not all(has_key for _, has_key in records):",
        new="if False:",
        description="a leader append of a keyless record to a compacted topic is taken; Kafka's LogValidator refuses it (§4.14)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="future-timestamps-taken",
        module="impl.log",
        old="or ts - now > cfg.message_timestamp_after_max_ms",
        new="or False",
        description="a CreateTime more than message.timestamp.after.max.ms ahead of the broker's clock is taken; Kafka 4.x refuses it (§4.14)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="roll-one-batch-late",
        module="impl.segment",
        old="self._size > max_segment_bytes - size",
        new="self._size > max_segment_bytes",
        description="the segment rolls only once it already exceeds segment.bytes, one append too late (§4.3 rule 1)",
        caught_by=("log-machine", "log-scenarios"),
    ),
    Mutant(
        name="retention-by-mtime",
        module="impl.log",
        old="lambda seg, _n: start - seg.largest_timestamp() > self.config.retention_ms",
        new="lambda seg, _n: start - self.storage.mtime_ms(seg.log_path) > self.config.retention_ms",
        description="time retention judges a segment by its file's modification time instead of its largest record timestamp (§4.8)",
        caught_by=("log-machine", "log-scenarios"),
    ),
    Mutant(
        name="checkpoint-in-place",
        module="impl.checkpoints",
        old='tmp = path + ".tmp"',
        new="tmp = path",
        description="checkpoint files rewritten in place instead of temp file + fsync + rename + directory fsync (§6.5)",
        caught_by=("log-scenarios", "log-machine"),
    ),
    Mutant(
        name="truncate-keeps-target-batch",
        module="impl.segment",
        old="self._truncate_log(mapping.position)",
        new="self._truncate_log(mapping.position + mapping.size)",
        description="truncateTo keeps the batch that contains the target offset instead of removing it (§4.7 step 4)",
        caught_by=("log-scenarios", "log-machine"),
    ),
    Mutant(
        name="marker-before-checkpoints",
        module="impl.log_manager",
        old="""                self.checkpoint_recovery_points(d)
                self.checkpoint_log_start_offsets(d)""",
        new="""                self.write_marker(d)
                self.checkpoint_recovery_points(d)
                self.checkpoint_log_start_offsets(d)""",
        description="the clean-shutdown marker is written before the dir's checkpoints (§6.3: the marker comes last)",
        caught_by=("log-scenarios", "log-machine"),
    ),
    Mutant(
        name="lock-kept-after-shutdown",
        module="impl.log_manager",
        old="""        for d in self.data_dirs:  # the dir locks destroyed last, whatever each dir's outcome (§6.3)
            self._unlock(d)""",
        new="""        pass""",
        description="a graceful shutdown unlocks the data dirs but leaves their .lock files, as Kafka before 3.8 did (KAFKA-16391)",
        caught_by=("log-scenarios", "log-machine"),
    ),
    Mutant(
        name="stale-lock-emptied-at-startup",
        module="impl.log_manager",
        old="""            if not self.storage.exists(path):
                self.storage.open(path, create=True).close()
            self.locked.add(data_dir)""",
        new="""            f = self.storage.open(path, create=True)
            f.truncate(0)
            f.close()
            self.locked.add(data_dir)""",
        description="the startup empties a stale .lock instead of opening it as it is (Kafka's FileChannel.open with CREATE does not truncate)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="earliest-offset-is-the-first-segment-base",
        module="impl.log",
        old="""        if timestamp == EARLIEST_TIMESTAMP:
            return (-1, self.log_start_offset)""",
        new="""        if timestamp == EARLIEST_TIMESTAMP:
            return (-1, self.segments[0].base_offset)""",
        description="ListOffsets' earliest (-2) answers the first segment's base offset, not the log start offset a delete_records moved (UnifiedLog.fetchOffsetByTimestamp)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="max-timestamp-tie-picks-the-later-segment",
        module="impl.log",
        old="""            best = max(segments, key=lambda s: s.content_max_timestamp_and_offset()[0])  # first of equals""",
        new="""            best = max(list(segments)[::-1], key=lambda s: s.content_max_timestamp_and_offset()[0])""",
        description="ListOffsets' -3 picks the last of the segments sharing the largest timestamp, not the first (UnifiedLog.fetchOffsetByTimestamp keeps a segment only for a strictly larger maxTimestampSoFar)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="checkpoint-line-of-extra-fields-read",
        module="impl.checkpoints",
        old="""        if len(fields) != width:
            raise _malformed(file, reader.number, line)""",
        new="""        if len(fields) < width:
            raise _malformed(file, reader.number, line)""",
        description="a checkpoint line with more fields than its format's is read by its first ones, not refused as malformed (OffsetCheckpointFile's formatter takes exactly three; pinned by corpora/crash/recovery-point-line-of-four-fields-resets-the-checkpoint.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="rebuild-leaves-completed-transactions-open",
        module="impl.producer_state",
        old="""            self.read(h, segment.marker(h))""",
        new="""            self.append(h, segment.marker(h), REPLICATION)""",
        description="the producer-state rebuild's scan moves each producer to the batches it reads but never completes the transactions their end markers close (UnifiedLog.loadProducersFromRecords hands each to completeTxn; pinned by corpora/log/transaction-committed-before-a-truncation-stays-complete.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="truncation-rereads-an-empty-producer-state",
        module="impl.producer_state",
        old="""    empty_before = not psm.producers and psm.map_end >= last_offset""",
        new="""    empty_before = False""",
        description="a rebuild reads the log from the snapshot on even when the producer state was empty and reached the target already, bringing expired producers back (UnifiedLog.rebuildProducerState's isEmptyBeforeTruncation; pinned by corpora/log/truncation-after-expiry-reads-no-expired-producer-back.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="roll-by-the-producers-time-under-log-append-time",
        module="impl.log",
        old="""            headers = list(BatchScan(data))
        else:""",
        new="""            producers_max = max(-1, *(h.max_timestamp for h in headers))
            headers = list(BatchScan(data))
            headers[-1] = headers[-1]._replace(max_timestamp=producers_max)
        else:""",
        description="under LogAppendTime the time-based roll goes by the producer's max timestamp, not the stamped one (UnifiedLog.append hands maybeRoll the validator's; pinned by corpora/log/log-append-time-rolls-by-the-stamped-time.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="negative-truncation-taken",
        module="impl.log",
        old="""        if target < 0:
            raise LogError("IllegalArgumentException", f"Cannot truncate to a negative offset ({target})")""",
        new="""        if False:
            raise LogError("IllegalArgumentException", f"Cannot truncate to a negative offset ({target})")""",
        description="a truncation to a negative offset is taken, not refused (UnifiedLog.truncateTo's IllegalArgumentException; pinned by corpora/log/truncation-to-a-negative-offset-is-refused.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="max-message-bytes-refuses-its-own-size",
        module="impl.log",
        old="""            if leader and h.size > self.config.max_message_bytes:  # appendAsFollower: ignoreRecordSize""",
        new="""            if leader and h.size >= self.config.max_message_bytes:""",
        description="a leader's batch of exactly max.message.bytes is refused (Kafka refuses only a larger one; pinned by corpora/log/max-message-bytes-takes-a-batch-of-exactly-its-size.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="promoted-epoch-cache-keeps-its-old-file",
        module="impl.log",
        old="""        self.epoch_cache.path = f"{directory}/{self.epoch_cache.path.rsplit('/', 1)[1]}\"""",
        new="""        pass""",
        description="after a rename (a future log's promotion) the leader-epoch cache still checkpoints into the old dir's file (UnifiedLog.renameDir re-creates the cache on the renamed dir's; pinned by corpora/log/promoted-log-checkpoints-its-epochs-in-its-new-dir.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="follower-refuses-an-older-producer-epoch",
        module="impl.producer_state",
        old="""        if h.producer_epoch < epoch and origin != REPLICATION:""",
        new="""        if h.producer_epoch < epoch:""",
        description="a follower's batch whose producer epoch is below the known one is refused as a leader's is (Kafka checks the epoch for client and coordinator appends only, and a replica's append only warns; pinned by corpora/log/follower-takes-a-producers-older-epoch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="offline-future-dir-takes-its-current-log",
        module="impl.log_manager",
        old="""                if load.data_dir == d and load.log is not None:""",
        new="""                if load.log is not None and (load.data_dir == d or any(x.data_dir == d and x.kind == "future" and (x.topic, x.partition) == (load.topic, load.partition) for x in loads)):""",
        description="a data dir that goes offline at startup takes with it the current log of each future log it holds, in another dir, where handleLogDirFailure removes only the logs in the failed dir (§6.6; pinned by corpora/log/offline-future-dir-keeps-its-current-log.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="transaction-version-2-marker-at-the-epoch-taken",
        module="impl.producer_state",
        old="""    if transaction_version < 2:
        return epoch < entry[1]""",
        new="""    if True:
        return epoch < entry[1]""",
        description="a marker at transaction version 2 is checked as version 0 checks it: one at the producer's epoch while its transaction is open completes it, where KIP-890's coordinator bumps the epoch first and Kafka refuses it (InvalidProducerEpochException; pinned by corpora/log/transaction-version-2-markers-bump-the-epoch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="transaction-version-2-marker-retry-refused",
        module="impl.producer_state",
        old="""    return epoch < entry[1] or (epoch == entry[1] and entry[7] >= 0 and epoch != EPOCH_MAX)""",
        new="""    return epoch <= entry[1]""",
        description="a version 2 marker at the producer's epoch with no transaction open is refused, where Kafka takes it as the retry of a marker already written and writes it again (KAFKA-19999; pinned by corpora/log/transaction-version-2-markers-bump-the-epoch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="failed-log-deletion-escapes-the-startup",
        module="impl.log_manager",
        old="""            except OSError as e:  # UnifiedLog.delete: the dir queued offline (§6.6), the task goes on""",
        new="""            except ValueError as e:""",
        description="an I/O error deleting a log queued for deletion escapes the kafka-delete-logs task, so the startup that runs it raises it; Kafka's UnifiedLog.delete queues the log's data dir offline and the task catches the KafkaStorageException and goes on (pinned by corpora/crash/failed-deletion-of-a-queued-log-at-startup-queues-its-dir-offline.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="offset-map-read-from-the-proven-index",
        module="impl.cleaner",
        old="""    position = segment.offset_index.get().lookup(start)[1]""",
        new="""    position = segment.translate_position(start) if segment.base_offset < start else 0""",
        description="a cleaning round maps a dirty segment's keys from where the proven index puts the round's start, so a damaged offset-index entry is read past and the round fails later, after its .cleaned segment was made and left behind; Kafka's buildOffsetMapForSegment reads from the entry as the index holds it and fails before (pinned by corpora/crash/cleaning-reads-a-damaged-offset-index-as-kafka-does.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="verification-kept-after-the-first-batch",
        module="impl.producer_state",
        old="""        if v is None or not (v.supports_epoch_bump and is_control(h) and h.producer_epoch == v.epoch):
            self.verifying.pop(h.producer_id, None)""",
        new="""        pass""",
        description="a producer's verification entry outlives its transaction's first batch, so the next verification hands back the old guard (and a stale one still verifies: KIP-890's ABA case), where updateProducers clears it (pinned by corpora/log/transaction-verification-guards-a-transactions-first-batch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="verification-ignores-the-lowest-sequence",
        module="impl.producer_state",
        old="""            if h.base_sequence > verification.lowest_sequence:""",
        new="""            if False:""",
        description="a batch above the lowest sequence its producer's verification saw is written, where checkSequence refuses it (OutOfOrderSequenceException: the retry loop KIP-890 prevents; pinned by corpora/log/transaction-verification-guards-a-transactions-first-batch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="verification-sentinel-verifies",
        module="impl.producer_state",
        old="""        return guard != SENTINEL and v is not None and v.guard == guard""",
        new="""        return v is not None and guard in (SENTINEL, v.guard)""",
        description="a transactional batch with no guard is written once its producer has a verification entry, where the sentinel verifies nothing (VerificationGuard.verify; pinned by corpora/log/transaction-verification-guards-a-transactions-first-batch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="verification-before-the-epoch-check",
        module="impl.log",
        old="""        psm.fence_older_epoch(h.producer_id, h.producer_epoch)
        needed""",
        new="""        needed""",
        description="a transactional batch of an older producer epoch, outside an open transaction and with no guard, is refused for its guard (InvalidTxnStateException), where Kafka's analysis fences its epoch first (InvalidProducerEpochException; pinned by corpora/log/transaction-verification-guards-a-transactions-first-batch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="verification-never-expires",
        module="impl.producer_state",
        old="""        for p in [p for p, v in self.verifying.items() if now_ms - v.timestamp >= PRODUCER_ID_EXPIRATION_MS]:
            del self.verifying[p]""",
        new="""        pass""",
        description="a verification entry lingers past producer.id.expiration.ms, so a guard handed out a day ago still lets its transaction start, where removeExpiredProducers drops it (pinned by corpora/log/transaction-verification-guards-a-transactions-first-batch.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="retention-skips-future-logs",
        module="impl.log_manager",
        old="""        \"\"\"cleanupLogs: deleteOldSegments on each current log, then on its future log if any.\"\"\"
        logs = [x for tp, log in sorted(self.logs.items()) for x in (log, self.futures.get(tp)) if x]""",
        new="""        \"\"\"cleanupLogs: deleteOldSegments on each current log, then on its future log if any.\"\"\"
        logs = [log for tp, log in sorted(self.logs.items())]""",
        description="the retention task leaves future logs alone, where cleanupLogs runs deleteOldSegments on each current log's future log too, whose high watermark the alter-log-dirs thread keeps at its end (pinned by corpora/log/retention-deletes-a-future-logs-old-segments.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="leader-writes-the-producers-codec",
        module="impl.log_validator",
        old="""    target = source if compression_type == "producer" else CODECS[compression_type]""",
        new="""    target = source""",
        description="a leader writes a batch in the codec its producer chose whatever the topic's compression.type says, where LogValidator rebuilds it in the topic's codec (buildRecordsAndAssignOffsets, §4.14; pinned by corpora/log/compression-type-rebuilds-a-leaders-batch-in-the-topics-codec.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="rebuilt-batch-size-unchecked",
        module="impl.log",
        old="""                if len(rebuilt) > self.config.max_message_bytes:  # messageSizeMaybeChanged: checked again""",
        new="""                if False:""",
        description="a batch the leader rebuilt in the topic's codec is not held to max.message.bytes again, where UnifiedLog.append checks every batch once more when the validator says their sizes may have changed (a gzip batch decompressed past the bound is refused, §4.14; pinned by corpora/log/compression-type-rebuilds-a-leaders-batch-in-the-topics-codec.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="legacy-wrapper-log-append-time-ignored",
        module="impl.record_walk",
        old="""    append_time = magic == 1 and attributes & 0x08  # LogAppendTime: every record has the wrapper's""",
        new="""    append_time = False""",
        description="the records of a magic 1 wrapper a LogAppendTime leader stamped read as their own CreateTimes, not the wrapper's time (AbstractLegacyRecordBatch; pinned by corpora/log/log-append-time-on-a-followers-legacy-messages.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="malformed-suffixed-dir-name-taken",
        module="impl.names",
        old="""    elif _suffixed(dir_name[: -len(suffix)]):""",
        new="""    elif True:""",
        description="a dir named with a -delete, -future or -stray suffix but not in the shape Kafka makes (topic-partition.id-suffix) is read by the part before its last '.', not refused (LocalLog.parseTopicPartitionName; pinned by corpora/log/partition-dir-name-with-a-malformed-*-suffix-fails-the-startup.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="dir-name-with-an-empty-topic-taken",
        module="impl.names",
        old="""    partition = parse_java_number(base[dash + 1 :], 32) if dash > 0 else None""",
        new="""    partition = parse_java_number(base[dash + 1 :], 32) if dash >= 0 else None""",
        description="a partition dir named '-0' loads as partition 0 of a topic named '' instead of failing the startup (LocalLog.parseTopicPartitionName refuses an empty topic; pinned by corpora/log/partition-dir-name-with-an-empty-topic-fails-the-startup.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="append-rolls-by-its-last-batchs-time",
        module="impl.log",
        old="""        max_ts = max(-1, *(h.max_timestamp for h in headers))""",
        new="""        max_ts = headers[-1].max_timestamp""",
        description="an append of several batches rolls by time on its last batch's max timestamp, not the largest (UnifiedLog.analyzeAndValidateRecords; pinned by corpora/log/follower-append-rolls-by-its-largest-timestamp.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="batches-ending-at-one-offset-taken",
        module="impl.log",
        old="""            if last >= h.last_offset:
                monotonic = False""",
        new="""            if last > h.last_offset:
                monotonic = False""",
        description="a follower's append of two batches ending at the same offset counts as monotonic and is taken (UnifiedLog.analyzeAndValidateRecords refuses a last offset not above the previous one; pinned by corpora/log/follower-append-of-two-batches-ending-at-one-offset-is-refused.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="read-below-the-log-start-allowed",
        module="impl.log",
        old="""        if start_offset < self.log_start_offset or start_offset > self.log_end_offset:""",
        new="""        if start_offset > self.log_end_offset:""",
        description="a fetch below the log start offset is answered from the segments still on disk instead of refused (UnifiedLog.read's checkLogStartOffset)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="time-retention-at-its-boundary",
        module="impl.log",
        old="lambda seg, _n: start - seg.largest_timestamp() > self.config.retention_ms",
        new="lambda seg, _n: start - seg.largest_timestamp() >= self.config.retention_ms",
        description="time retention deletes a segment exactly retention.ms past its largest timestamp (Kafka's deleteRetentionMsBreachedSegments: strictly more)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="truncate-fully-keeps-the-producers",
        module="impl.log",
        old="""        self.producer_state.truncate_fully_and_start_at(new_offset)""",
        new="""        pass""",
        description="truncateFullyAndStartAt keeps the producers of the records it removed: an idempotent producer's next batch is checked against a sequence no longer in the log",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="fetch-reads-the-live-log-end",
        module="impl.log",
        old="""        end, base, position = self._end_metadata
        if offset == end:
            return base, position""",
        new="""        if offset == self.log_end_offset:
            return self.active_segment.base_offset, self.active_segment.size""",
        description="a fetch bounded by the log end offset reads the active segment's live size instead of the position captured with the offset (LogOffsetMetadata): beside an append it returns a batch written but not yet published (pinned by a race step: corpora/crash/fetch-beside-an-append-stops-at-the-published-log-end.json)",
        caught_by=("log-machine", "crash-scenarios", "regression-corpus"),
    ),
    Mutant(
        name="delete-records-refuses-the-high-watermark",
        module="impl.log",
        old="        offset = self.log_end_offset if offset == HIGH_WATERMARK else offset\n",
        new="",
        description="delete_records refuses -1, which DeleteRecordsRequest defines as the high watermark (Partition.deleteRecordsOnLeader; pinned by corpora/log/delete-records-takes-minus-one-as-the-high-watermark.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="empty-append-refused",
        module="impl.log",
        old="            return LogAppendInfo(-1, -1)\n",
        new='            raise LogError("InvalidRecordException", "the append holds no complete batch")\n',
        description="an append of no batches is refused, where Kafka's UnifiedLog.append returns at once with first and last offset -1 (pinned by corpora/log/append-of-no-batches-is-a-no-op.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="marker-leaves-the-transaction-open",
        module="impl.producer_state",
        old="        if self.ongoing.pop(txn.first_offset, None) is None:\n",
        new="        if self.ongoing.get(txn.first_offset) is None:\n",
        description="a COMMIT or ABORT marker does not close its transaction, so the last stable offset never passes it (docs/producer-state.md rule 56; pinned by corpora/log/transactions-markers-and-the-last-stable-offset.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="aborted-txn-stable-after-its-marker",
        module="impl.producer_state",
        old="        lso = next((f for f in sorted(self.ongoing) if self.ongoing[f] != txn.producer_id), txn.last_offset + 1)\n",
        new="        lso = txn.last_offset + 1\n",
        description="an aborted transaction's index entry takes the offset after its marker as the last stable offset, ignoring another producer's open transaction (rule 56)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="marker-epoch-unchecked",
        module="impl.producer_state",
        old="        if origin != REPLICATION and _fenced_marker(h.producer_epoch, entry, transaction_version):\n",
        new="        if False:\n",
        description="appendEndTxnMarker's epoch check gone: a version 2 marker at the producer's epoch while its transaction is open is written, where Kafka refuses it (InvalidProducerEpochException, rule 55); a marker of an older epoch is fenced before, by the analysis of a transactional batch outside an open transaction (rule 63)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="coordinator-epoch-unchecked",
        module="impl.producer_state",
        old="        if origin != REPLICATION and entry[6] > coordinator_epoch:\n",
        new="        if False:\n",
        description="a marker of a fenced transaction coordinator (coordinator epoch below the producer's) is written, where Kafka refuses it (TransactionCoordinatorFencedException, rule 55)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="plain-batch-inside-a-transaction-accepted",
        module="impl.producer_state",
        old="        if txn >= 0 and not transactional:\n",
        new="        if False:\n",
        description="a producer's non-transactional batch is written while its transaction is open, where Kafka refuses it (InvalidTxnStateException, rule 53)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="open-transactions-not-reloaded",
        module="impl.producer_state",
        old="                    if e[7] >= 0:\n                        self.ongoing[e[7]] = e[0]\n",
        new="",
        description="a snapshot entry's open transaction is not reopened at a load or a truncation's reload, so the last stable offset runs past it (rule 59)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="read-committed-up-to-the-log-end",
        module="impl.log",
        old="        return self.log_end_offset if first is None else min(max(first, self.log_start_offset), self.log_end_offset)\n",
        new="        return self.log_end_offset\n",
        description="a read at read_committed runs to the log end, exposing open transactions (rule 58)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="aborted-transactions-of-the-fetched-segment-only",
        module="impl.log",
        old="            if complete:\n                break\n            segment = self.higher_segment(segment.base_offset)\n",
        new="            break\n",
        description="a read at read_committed answers only the aborted transactions of the fetched segment's index, not those of later segments' indexes the range still overlaps (LocalLog.collectAbortedTransactions, rule 60)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="aborted-transactions-left-out",
        module="impl.log",
        old="            aborted += [(t.producer_id, t.first_offset) for t in txns]\n",
        new="            aborted += []\n",
        description="a read at read_committed answers no aborted transaction, so the consumer keeps aborted data (rule 60); judged on impl alone, the read-committed property catches it without the model",
        caught_by=("read-committed-alone", "log-scenarios"),
    ),
    Mutant(
        name="legacy-follower-append-refused",
        module="impl.log",
        old="            if h.magic < 2 and leader:\n",
        new="            if h.magic < 2:\n",
        description="a follower's magic 0/1 message set is refused (UnsupportedForMessageFormatException), where Kafka 4.4 appends it (pinned by corpora/log/legacy-follower-appends.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="legacy-append-keeps-the-epoch-cache",
        module="impl.log",
        old="            elif self.epoch_cache.entries:  # a legacy append clears the cache and its checkpoint\n                self.epoch_cache.clear_and_flush()\n",
        new="",
        description="a legacy append leaves the leader-epoch cache as it was, where Kafka clears it and its checkpoint (UnifiedLog.append)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="legacy-roll-at-the-log-end",
        module="impl.log",
        old="first if first >= 0 else last - INT32_MAX, last, max_ts)",
        new="first, last, max_ts)",
        description="a roll for an append whose first batch is legacy goes to the log end offset, not to the last offset less Int.MAX (KAFKA-6264's guess): offsets past Int.MAX beyond it overflow the new segment",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="follower-batch-size-checked",
        module="impl.log",
        old="            if leader and h.size > self.config.max_message_bytes:  # appendAsFollower: ignoreRecordSize\n",
        new="            if h.size > self.config.max_message_bytes:\n",
        description="a follower's batch above max.message.bytes is refused, where Kafka's appendAsFollower ignores the record size (pinned by corpora/log/follower-batches-are-not-bound-by-max-message-bytes.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="truncation-keeps-txn-index-entries",
        module="impl.segment",
        old="        self.txn_index.truncate_to(offset)\n",
        new="",
        description="a truncation leaves the transaction index's entries of the aborted transactions it cut (LogSegment.truncateTo, rule 59)",
        caught_by=("log-scenarios",),
    ),
)

CRASH_MUTANTS = (
    Mutant(
        name="read-bounded-by-the-active-size",
        module="impl.log",
        old="        if offset == end:\n            return base, position\n",
        new="        if offset == end:\n            return self.active_segment.base_offset, self.active_segment.size\n",
        description="a read to the log end is bounded by the active segment's size, not the log end's offset metadata, so it serves the bytes a failed append left past the log end (pinned by corpora/crash/read-to-the-log-end-after-a-failed-append-stops-at-its-metadata.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="read-to-the-log-end-searched",
        module="impl.log",
        old="        if offset == end:\n            return base, position\n",
        new="        if False:\n            return base, position\n",
        description="a read to the log end searches the log for the log end's batch by base offsets instead of keeping its offset metadata, so a damaged legacy wrapper a clean load kept fails the fetch (pinned by corpora/crash/read-to-the-log-end-decodes-no-batch.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="split-cleans-up-after-a-snappy-error",
        module="impl.split",
        old='        if isinstance(e, SplitError) and e.kind == "SnappyError":\n',
        new="        if False:\n",
        description="a split stopped by snappy-java's SnappyError deletes its new segments, where Kafka's catch (Exception) lets the Error through and leaves the .cleaned file (pinned by corpora/crash/split-stopped-by-a-snappy-error-leaves-its-cleaned-segment.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="unstable-log-loads-in-an-offline-dir",
        module="impl.log_manager",
        old="        if loaded.error is None and state.queued_offline is not None and log.producer_state.unstable_after_load():\n",
        new="        if False:\n",
        description="a partition whose load ends with a first unstable offset loads although its dir went offline during the startup, where Kafka's UnifiedLog constructor fails on the read that converts the offset (docs/producer-state.md rule 61; pinned by corpora/crash/open-transaction-in-a-dir-gone-offline-fails-its-load.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="clean-io-error-escapes",
        module="impl.log",
        old="    @storage_errors\n    def clean(self) -> dict:\n",
        new="    def clean(self) -> dict:\n",
        description="an I/O error in a log-cleaner round escapes as an OSError instead of Kafka's KafkaStorageException, which takes the dir offline (pinned by corpora/crash/io-error-in-a-cleaning-round-is-a-storage-error.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="recovery-leaves-the-txn-index-empty",
        module="impl.loader",
        old="            txn_index = segment.txn_index  # rebuilt from the markers (a second pass gives the same)\n",
        new="",
        description="segment recovery empties the transaction index and does not rebuild it from the markers it keeps, so a read at read_committed no longer learns of the aborted transactions (LogSegment.recover, rule 57)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="marker-kept-until-loaded",
        module="impl.log_manager",
        old="""        if state.had_clean_shutdown:
            self.storage.unlink(marker)  # at once, before any log is loaded (KAFKA-10471)
            # Better than Kafka, which does not fsync the dir here: a power loss later in the load
            # could bring the marker back over indexes the load already resized to full size, and
            # the next start would skip recovery and take them as full (KAFKA-10471's mechanism).
            self.storage.fsync_dir(state.path)
""",
        new="",
        more=(
            (
                "        state.load_completed = all(load.error is None for load in loads)\n",
                "        state.load_completed = all(load.error is None for load in loads)\n"
                "        if state.had_clean_shutdown:  # only now, once every log of the dir loaded\n"
                "            self.storage.unlink(marker)\n",
            ),
        ),
        description="KAFKA-10471 (≤ 2.7): the clean-shutdown marker stays until every log of the dir has loaded, so a crash during loading leaves it and the next start skips recovery (§6.2, §7.6; pinned by corpora/KAFKA-10471/marker-deleted-before-loading.json)",
        caught_by=("regression-corpus", "crash-exhaustive"),  # not the crash machine within its CI budget
    ),
    Mutant(
        name="roll-by-the-segments-own-config",
        module="impl.log",
        old="if segment.should_roll(self.config.segment_ms, self.config.segment_bytes, max_ts, last, size, self.clock()):",
        new="if segment.should_roll(segment.config.segment_ms, segment.config.segment_bytes, max_ts, last, size, self.clock()):",
        description="the roll bounds are the ones the active segment was created with, as before 2.1 (RollParams): a topic's segment.bytes or segment.ms altered rolls only the next segment (§4.3; pinned by corpora/log/alter-config-rolls-and-retains-by-the-new-config.json)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="recovery-starts-after-rp-segment",
        module="impl.loader",
        old="unflushed = [b for b in bases if floor is None or b >= floor]",
        new="unflushed = [b for b in bases if floor is None or b > floor]",
        description="recoverLog starts after, not at, the segment containing the recovery point: its unflushed tail is never checked (§5.6 step 1a)",
        caught_by=("crash-exhaustive", "crash-scenarios", "crash-machine"),
    ),
    Mutant(
        name="torn-middle-keeps-later-segments",
        module="impl.loader",
        old="doomed = [self.segments.pop(b) for b in unflushed[i + 1 :]]",
        new="doomed = []",
        description="a torn tail in a middle segment no longer deletes the unflushed segments after it, leaving a hole in the log (§5.6 step 1b)",
        caught_by=("crash-exhaustive", "crash-scenarios"),  # not the crash machine within its CI budget
    ),
    Mutant(
        name="recovery-point-to-leo-after-unclean",
        module="impl.loader",
        old="return min(self.recovery_point_checkpoint, leo), leo",
        new="return leo, leo",
        description="KAFKA-10101 (≤ 2.7): after an unclean recovery the recovery point jumps to the log end, so recovered-but-unflushed data is trusted after the next crash (§5.6 step 4)",
        caught_by=("crash-exhaustive", "crash-scenarios", "crash-machine"),
    ),
    Mutant(
        name="checkpoint-rename-without-fsync",
        module="impl.checkpoints",
        old="""        if sync:
            f.fsync()
    finally:""",
        new="""        if sync and False:
            f.fsync()
    finally:""",
        description="the checkpoint temp file is renamed over the checkpoint without an fsync first: a power loss can leave an empty or torn checkpoint (§6.5 step 2)",
        caught_by=("crash-exhaustive", "crash-scenarios", "crash-machine"),
    ),
    Mutant(
        name="offline-dir-takes-every-partition",
        module="impl.log_manager",
        old="                if load.data_dir == d and load.log is not None:\n",
        new="                if load.log is not None:\n",
        description="the failure handler takes a dir offline with the partitions of every dir, not only its own: one I/O error in a load fails partitions of a healthy dir (§6.6; pinned by corpora/crash/io-error-in-a-load-takes-only-its-own-dir-offline.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="translate-by-last-offset",
        module="impl.segment",
        old="        base = base_offset(view, header)\n",
        new="        base = header.offset\n",
        description="translateOffset takes a legacy wrapper's base offset from its header instead of its first inner record's, as Kafka before 4.1 never asked: a wrapper that does not decompress is passed over where Kafka 4.4.0 fails (KAFKA-18989; pinned by corpora/crash/clean-load-decompresses-the-legacy-wrapper-it-translates.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="base-offset-reads-every-inner-record",
        module="impl.record_walk",
        old="    _uncompressed(stream, entries[0][1])\n    return entries[0][0]\n",
        new="    return _legacy(raw, h, limit)[0][0]\n",
        description="a legacy wrapper's base offset is found by reading every inner record's fields, not by the deep iterator's constructor, which only frames them: a split refuses a wrapper Kafka splits (§1.8.3; pinned by corpora/crash/split-takes-a-wrapper-whose-records-are-unreadable.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="translate-skips-batches-whose-crc-fails",
        module="impl.segment",
        old="        return _search_for_offset(self.batches(start, framing_only=True), offset, self.view())[0]\n",
        new="        return _search_for_offset(self.batches(start), offset, self.view())[0]\n",
        description="translateOffset scans validated batches and stops before one whose CRC fails, where Kafka reads by framing and serves it (§4.5; pinned by corpora/crash/read-serves-a-batch-whose-crc-fails.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="snapshot-with-a-bad-name-skipped",
        module="impl.producer_state",
        old="                raise BadSnapshotName(path)\n",
        new="                continue\n",
        description="a *.snapshot whose name is no offset is skipped, where Kafka's ProducerStateManager fails the partition's load with NumberFormatException (docs/producer-state.md rule 34; pinned by corpora/crash/snapshot-name-that-is-no-offset.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="corrupt-snapshot-kept",
        module="impl.producer_state",
        old="            except CorruptSnapshot:\n                self._remove_and_delete(offset)\n",
        new="            except CorruptSnapshot:\n                self.snapshots.pop(offset)\n",
        description="a snapshot that fails its CRC is passed over but left on disk, where Kafka deletes it before trying the next older one (rule 35; pinned by corpora/crash/corrupt-newest-snapshot-is-deleted.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="expired-producers-kept",
        module="impl.producer_state",
        old="                if e[7] >= 0 or now_ms - e[5] < PRODUCER_ID_EXPIRATION_MS:\n",
        new="                if True:\n",
        description="a snapshot's producers are loaded whatever their age, where Kafka drops those last seen producer.id.expiration.ms ago outside a transaction (rule 35; pinned by corpora/crash/snapshot-producers-carried-and-expired.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="snapshot-producers-sorted",
        module="impl.producer_state",
        old="    return sorted(keys, key=lambda k: (bucket(k), rank[k]))\n",
        new="    return sorted(keys)\n",
        description="a snapshot's producers are written by producer id, where Kafka writes its HashMap's iteration order (rule 4; pinned by corpora/crash/snapshot-producers-carried-and-expired.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="create-with-a-time-index-too-small-kept",
        module="impl.log_manager",
        old="        if config.segment_index_bytes < TimeIndex.ENTRY_SIZE:\n",
        new="        if False:\n",
        # and the new log's indexes left lazy, so nothing builds the time index that cannot hold an entry
        more=(("        segment.resize_indexes(config.segment_index_bytes)\n", ""),),
        description="a create under a segment.index.bytes below one time-index entry makes the partition, as Kafka 4.4.0 does, where the model refuses it and leaves nothing (corpora/kafka-findings/segment-index-bytes-below-a-time-index-entry)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="split-segments-on-the-wall-clock",
        module="impl.loader",
        old="            self.storage, self.dir, base, self.config, self.clock(), self._jitter(base), suffix=CLEANED_SUFFIX,\n",
        new="            self.storage, self.dir, base, self.config, int(__import__('time').time() * 1000), self._jitter(base), suffix=CLEANED_SUFFIX,\n",
        description="a segment split at load takes its creation time from the machine's clock, not the log's (Kafka's createNewCleanedSegment on Time.SYSTEM, which the kafka target moves onto the scenario clock): under the scenario clock it never rolls by segment.ms when its first batch has no timestamp (§4.3 rule 2; pinned by corpora/crash/split-at-recovery-rolls-by-the-logs-clock.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="max-timestamp-lookup-checks-crcs",
        module="impl.log",
        old="            for header in best.batches(best.translate_position(offset), lookup=True):\n",
        new="            for header in best.batches(best.translate_position(offset)):\n",
        description="the -3 lookup walks the newest segment's batches checking CRCs, so a damaged batch before the one holding the max timestamp ends the walk: Kafka's batchesFrom frames them and finds it (§4.8; pinned by corpora/crash/lookups-by-timestamp-read-a-batch-whose-crc-fails.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="timestamp-search-checks-crcs",
        module="impl.record_walk",
        old="    scan = iter(BatchScan(buf, start_position, check_crc=False))  # by framing, as batchesFrom walks\n",
        new="    scan = iter(BatchScan(buf, start_position))\n",
        description="FileRecords.searchForTimestamp walks batches checking CRCs, so a damaged batch ends the search: Kafka's batchesFrom frames them (§4.8; pinned by corpora/crash/lookups-by-timestamp-read-a-batch-whose-crc-fails.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="duplicate-retry-appended",
        module="impl.producer_state",
        old="        if entry is None or entry[1] != h.producer_epoch:\n            return None\n",
        new="        if True:\n            return None\n",
        description="a client's retry of one of its producer's last batches is appended again, where Kafka answers the first one's offsets and writes nothing (rule 48; pinned by corpora/log/idempotent-producers-duplicates-sequences-and-epochs.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="producer-sequence-unchecked",
        module="impl.producer_state",
        old="        if not (h.base_sequence == last + 1 or (h.base_sequence == 0 and last == INT_MAX)):\n",
        new="        if False:\n",
        description="a client's batch with a gap in its producer's sequence is appended, where Kafka refuses it (OutOfOrderSequenceException, rule 47; pinned by corpora/log/idempotent-producers-duplicates-sequences-and-epochs.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="sequence-wrap-out-of-order",
        module="impl.producer_state",
        old="        if not (h.base_sequence == last + 1 or (h.base_sequence == 0 and last == INT_MAX)):\n",
        new="        if not h.base_sequence == last + 1:\n",
        description="sequence 0 after Int.MAX is refused as out of order, where Kafka's sequences wrap (rule 46; pinned by corpora/crash/producers-recovered-retried-and-expired.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="one-batch-kept-for-retries",
        module="impl.producer_state",
        old="KEPT_BATCHES = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN\n",
        new="KEPT_BATCHES = 1\n",
        description="a producer keeps only its last batch for duplicate detection, where Kafka keeps five: a retry of an older one is refused (rule 48; pinned by corpora/crash/producers-recovered-retried-and-expired.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="rebuild-skips-producers",
        module="impl.producer_state",
        old="                read += segment.scan_batches(start, last, psm.reader(segment))\n",
        new="                read += segment.scan_batches(start, last)\n",
        description="the producer-state rebuild reads the segments but not their producers (rule 50; pinned by corpora/log/idempotent-producers-duplicates-sequences-and-epochs.json)",
        caught_by=("log-scenarios",),
    ),
    Mutant(
        name="producers-not-read-at-recovery",
        module="impl.loader",
        old="            psm.read(header, marker, txn_index)  # LogSegment.recover updates the batches' producers\n",
        new="            pass\n",
        description="a segment's recovery at load keeps its batches but not their producers in the snapshot it writes (rule 51; pinned by corpora/crash/producers-recovered-retried-and-expired.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="rebuild-snapshot-before-the-scan",
        module="impl.producer_state",
        old="    psm.truncate_and_reload(log_start, last_offset, now_ms)\n    read = 0\n",
        new="    psm.truncate_and_reload(log_start, last_offset, now_ms)\n    read, end = 0, psm.map_end\n    psm.update_map_end(last_offset)\n    psm.take_snapshot()\n    psm.update_map_end(end)\n",
        description="the producer-state rebuild writes its snapshot at the log end before reading the segments, so the file holds the producers of the older snapshot only (rule 36); an interrupted load leaves it to the next one, which trusts it (pinned by corpora/crash/snapshot-of-an-interrupted-load-is-trusted.json)",
        caught_by=("idempotent-recovery-alone", "crash-scenarios"),
    ),
    Mutant(
        name="snapshots-renamed-below-the-log-start",
        module="impl.loader",
        old="                epoch_cache.clear_and_flush()\n                self.producer_state.truncate_fully_and_start_at(self.log_start_checkpoint)\n",
        new="                self._delete_snapshots_async(doomed)\n                epoch_cache.clear_and_flush()\n                self.producer_state.truncate_fully_and_start_at(self.log_start_checkpoint)\n",
        description="a load whose log end falls below the log start renames the snapshots at the deleted segments' bases .deleted, where Kafka's call gets its emptied map's live view and renames none (rule 32; pinned by corpora/crash/log-end-below-the-log-start-deletes-its-snapshots-at-once.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="lookup-decodes-a-plain-legacy-message",
        module="impl.record_walk",
        old="    if header.magic < 2 and not header.attributes & 0x07:  # no codec\n",
        new="    if False:\n",
        description="a lookup decodes a plain legacy message's key and value, where Kafka's iterator gives the message itself as its record, offset and timestamp only (§4.8; pinned by corpora/crash/lookup-reads-a-plain-legacy-message-as-its-own-record.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="truncation-content-max-only-when-lost",
        module="impl.segment",
        old="        if self._size and self._shadow is None:\n",
        new="        if self._size and self._shadow is None and self.max_timestamp_so_far() < 0:\n",
        description="after a truncation the content's max timestamp is recomputed only when Kafka's was lost, not when an overflowed entry the cut kept names records gone (§4.7 rule 7; pinned by corpora/kafka-findings/lookup-by-a-max-timestamp-a-truncation-kept)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="truncation-lookups-by-kafkas-max",
        module="impl.segment",
        old="        if self._size and self._shadow is None:\n",
        new="        if False:\n",
        description="after a truncation that cut the time index's only entry before the max timestamp was loaded, lookups go by Kafka's max (−1) instead of the content's: the max-timestamp search finds nothing (§4.7 rule 7, §4.8; pinned by corpora/crash/max-timestamp-search-after-truncating-the-only-time-entry.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="negative-base-named-like-python",
        module="impl.segment",
        old='    return f"{offset:020d}" if offset >= 0 else "-" + f"{-offset:020d}"',
        new='    return f"{offset:020d}"',
        description="a negative base offset (a damaged batch's offset, split at load) named with Python's 20-character width, the sign included, instead of Kafka's 20 digits after the sign (LogFileUtils.filenamePrefixFromOffset, §2.1; pinned by corpora/crash/negative-base-offset-split-at-load-is-named-as-kafka-names-it.json)",
        caught_by=("crash-scenarios",),
    ),
    Mutant(
        name="epoch-checkpoint-loaded-as-read",
        module="impl.leader_epoch",
        old="        if any(epoch < 0 or start < 0 for epoch, start in loaded):\n",
        new="        if True:\n",
        description="a leader-epoch checkpoint whose entries do not both increase (damage) is loaded as read instead of assigned entry by entry as LeaderEpochFileCache's constructor does, so a later assign keeps an entry Kafka dropped (pinned by corpora/crash/damaged-epoch-checkpoint-collapses-as-kafka-loads-it.json)",
        caught_by=("crash-scenarios",),
    ),
)

CRASH_MUTANTS += (
    Mutant(
        name="segment-deletes-unsynced-lowest-first",
        module="impl.log",
        old="sorted((s for s in self.segments if s.base_offset > target), key=lambda s: -s.base_offset)",
        new="[s for s in self.segments if s.base_offset > target]",
        more=(("                self.storage.fsync_dir(self.dir)\n        due = ", "        due = "),),
        description="Kafka's own segment deletion: renames to .deleted never fsynced, truncateTo's lowest first, so a power loss can bring a segment back before a hole (§4.7, §4.9; a finding of the exhaustive test)",
        caught_by=("crash-scenarios", "crash-exhaustive"),
    ),
    Mutant(
        name="flush-leaves-segment-entries-unsynced",
        module="impl.log",
        old="""            if any(s.base_offset >= current for s in to_flush):
                self.storage.fsync_dir(self.dir)
""",
        new="",
        description="KAFKA-3968 (before 3.0): a flush fsyncs the segments but never their directory, so a power loss can take a new segment file whose data was flushed (model.durability; §4.10)",
        caught_by=("crash-scenarios", "crash-exhaustive"),
    ),
    Mutant(
        name="truncate-cut-unsynced",
        module="impl.log",
        old="""        if self.active_segment.truncate_to(target, self.clock()):
""",
        new="""        if self.active_segment.truncate_to(target, self.clock()) and False:
""",
        description="Kafka's own truncateTo: the cut of the active segment is never fsynced although the recovery point drops to the target and is checkpointed, so a power loss brings removed batches back below it (§4.7, §4.10; a finding of the exhaustive test)",
        caught_by=("crash-scenarios", "crash-exhaustive"),
    ),
    Mutant(
        name="read-next-offset-checks-crc",
        module="impl.segment",
        old="        headers = self.batches(start, framing_only=True)\n",
        new="        headers = self.batches(start)\n",
        description="readNextOffset stops at a batch whose CRC fails, where Kafka's batchesFrom iterator checks framing only (§4.5 rule 3, §1.10): a clean load after a bit flip in the active segment's tail puts the log end offset below batches that stay on disk (pinned by corpora/crash/clean-load-counts-a-batch-whose-crc-fails.json)",
        caught_by=("crash-scenarios", "regression-corpus"),
    ),
    Mutant(
        name="roll-ignores-an-unsound-full-index",
        module="impl.segment",
        old="            or self.time_index.get().is_full()\n",
        new="            or (self._proven() is None and self.time_index.get().is_full())\n",
        description="the roll decision taken from impl's proven view of the indexes instead of Kafka's loaded ones: a trusted time index judged unsound is not full for the roll, so the append does not roll where Kafka does (§4.3 rule 4) and the recovery point and segments differ (impl's old in-place rebuild did this)",
        caught_by=("regression-corpus", "crash-scenarios"),
    ),
    Mutant(
        name="startup-goes-on-after-a-failed-load",
        module="impl.log_manager",
        old="            self.startup_error = next((load.error for load in loads if load.fatal), None)\n",
        new="            self.startup_error = None\n",
        description="the broker starts without a partition whose load threw, where Kafka's loadLogs rethrows the job's exception and the startup fails (§6.2 step 7; pinned by corpora/crash/failed-load-keeps-its-split.json)",
        caught_by=("crash-scenarios", "regression-corpus"),
    ),
    Mutant(
        name="unreadable-checkpoint-keeps-its-dir-online",
        module="impl.log_manager",
        old="""            if isinstance(e, OSError) or getattr(e, "kind", None) == "IOException":  # §6.5 rule 6
                state.queued_offline = state.queued_offline or f"{state.path}/{name}: {e}"
""",
        new="",
        description="an offset checkpoint whose read throws IOException only resets the map, where Kafka's failure handler also queues its dir offline (§6.5 rule 6, §6.6; pinned by corpora/crash/unreadable-checkpoint-takes-its-dir-offline.json)",
        caught_by=("regression-corpus", "crash-scenarios"),
    ),
)

SWAP_MUTANTS = (
    Mutant(
        name="invalid-swap-greater-than",
        module="impl.loader",
        old="if min_cleaned is not None and _offset(path) >= min_cleaned:",
        new="if min_cleaned is not None and _offset(path) > min_cleaned:",
        description="a .swap file at exactly the smallest .cleaned offset counts as valid (> instead of ≥, §5.2 step 1e): a replacement interrupted while renaming its lowest segment to .swap is completed with only part of its new segments",
        caught_by=("swap-states",),
    ),
    Mutant(
        name="swap-completion-deletes-the-segment-before",
        module="impl.loader",
        old="""                high = max(s.read_next_offset() for s in opened)  # a damaged swap fails the load here
""",
        new="""                high = max(s.read_next_offset() for s in opened)  # a damaged swap fails the load here
                logs = [offset_from_file_name(p.rsplit("/", 1)[-1]) for p in _files(self.storage, self.dir) if p.endswith(".log")]
                floor = max((b for b in logs if b <= low), default=low)
""",
        more=(("                if low <= offset < high:", "                if floor <= offset < high:"),),
        description="the pre-2.1 off-by-one of swap completion (fixed by 3afe2ed8e39d, §7.9, §7.10): the old segments replaced are those overlapping the swap's range, including one that ends exactly at the swap's base — once the original at that base is gone, an unrelated segment is deleted",
        caught_by=("swap-states",),
    ),
    Mutant(
        name="split-drops-last-batch",
        module="impl.split",
        old="""    created: list[LogSegment] = []
""",
        new="""    created: list[LogSegment] = []
    if len(batches) > 1:  # the source's last batch is never copied
        end -= batches.pop().size
        segment._size = end
""",
        description="a split that never copies the source's last batch (the issue's mutant; the loss KAFKA-6264's fix and its follow-up 3afe2ed8e39d guard against): the sizes still add up in this variant's bookkeeping, so only the data shows it",
        caught_by=("split-sweep", "regression-corpus"),
    ),
    Mutant(
        name="cleaned-to-swap-ascending",
        module="impl.split",
        old="""    for segment in reversed(new):
        segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)""",
        new="""    for segment in new:
        segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)""",
        description="replaceSegments renames .cleaned → .swap in ascending base order (§5.9): a crash after the low segment's rename leaves a valid .swap below every remaining .cleaned, so the next load completes a half-made replacement and deletes the original whose other half was never installed",
        caught_by=("regression-corpus", "split-sweep"),
    ),
    Mutant(
        name="originals-deleted-before-every-swap",
        module="impl.split",
        old="""    for segment in reversed(new):
        segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)""",
        new="""    for segment in old:
        segment.change_file_suffixes("", DELETED_SUFFIX)
    old = []
    for segment in reversed(new):
        segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)""",
        description="replaceSegments renames the originals .deleted before every new segment is a .swap (§5.9 steps 2–3 swapped): a crash in between leaves .deleted originals, which the next load deletes, and .cleaned new segments, which it deletes too",
        caught_by=("regression-corpus", "split-sweep"),
    ),
)

HISTORICAL_MUTANTS = (
    Mutant(
        name="retained-empty-batch-leaves-no-metadata",
        module="impl.cleaner",
        old="""            h.base_sequence,
        )
        chunk.retained(h.max_timestamp, h.last_offset, h.last_offset, h.position)
""",
        new="""            h.base_sequence,
        )
""",
        description="KAFKA-7385 (1.1-2.0.0): a cleaning round that keeps an emptied batch (an active producer's "
        "last) records neither its last offset nor its max timestamp (MemoryRecords.filterTo's result), so a "
        "cleaned segment holding only that batch gets no final time-index entry, or its append at offset -1 fails",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="swap-segment-recovered-at-load",
        module="impl.loader",
        old="""                high = max(s.read_next_offset() for s in opened)  # a damaged swap fails the load here
""",
        new="""                high = max(s.read_next_offset() for s in opened)  # a damaged swap fails the load here
                for s in opened:  # <= 2.8 completeSwapOperations: recoverSegment on every swap segment
                    s.recover()
                    self.report.recovered_segments.append(s.base_offset)
""",
        description="KAFKA-12520 (0.11-2.8): a .swap found at startup (a crash in the swap phase of log cleaning) is recovered before it replaces the originals; Kafka's recoverSegment then also deleted every producer snapshot above the swap's base, forcing a replay of the log (not modelled here: the recovery itself is what the case catches, §5.2, §7.10)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="eager-index-sanity-check",
        module="impl.loader",
        old="""            problem = segment.sanity_check(time_index_new)
""",
        new="""            problem = segment.sanity_check(time_index_new)
            if not problem:  # <= 2.2: every segment's indexes opened, mmapped and checked at load
                from impl.index import CORRUPT

                for index in (segment.offset_index.get(), segment.time_index.get()):
                    if index.recognition == CORRUPT:
                        problem = f"Found a corrupted index file {index.path}: {index.recognition_detail}"
""",
        description="KAFKA-7283 (<= 2.2): the loader opens and sanity-checks every segment's indexes, so a clean restart reads index files of every segment and rebuilds a corrupt one at load (§7.3)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="time-index-sanity-check-at-load",
        module="impl.loader",
        old="""            problem = segment.sanity_check(time_index_new)
""",
        new="""            problem = segment.sanity_check(time_index_new)
            if not problem and not time_index_new:  # 0.10.1-2.2: TimeIndex.sanityCheck at load
                f = self.storage.open(segment.time_index.path)
                size = f.size()
                if size >= 24:  # an existing file is taken as full: its last slot is the last entry
                    first, last = (int.from_bytes(f.read(at, 8), "big", signed=True) for at in (0, size - 12))
                    if last < first:
                        problem = f"Corrupt time index found, time index file ({f.path}) has non-zero size but the last timestamp is {last} which is less than the first timestamp {first}"
                f.close()
""",
        description="the active segment's time index judged corrupt after every unclean shutdown (0.10.1-2.2, §7.7): read as full, its zero last slot is below the first timestamp, so the segment is rebuilt at load and recovered a second time by recoverLog",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="roll-refuses-empty-active-segment",
        module="impl.log",
        old="if active.base_offset == new_offset and active.size == 0:  # KAFKA-6388",
        new="if False:  # <= 2.1.0: no special case for the empty active segment (KAFKA-6388)",
        description="KAFKA-6388 (< 2.1.1): rolling an empty active segment whose index reports full tries to create a segment at its own base offset and fails with KafkaException 'already exists' (§4.3 step 3a, §7.11)",
        caught_by=("log-machine", "regression-corpus"),
    ),
    Mutant(
        name="unproven-indexes-trusted",
        module="impl.segment",
        old="        if not self.indexes_checked:\n",
        new="        if False:  # Kafka since KIP-263: indexes of unrecovered segments used as found\n",
        description="KAFKA-10207 / KAFKA-19200 (2.3+, open): an index that escaped recovery is trusted, so a zeroed or padded final time-index entry makes the segment's largest timestamp 0 and retention deletes it early (§7.8)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="recovery-trusts-plain-batches",
        module="impl.segment",
        old="61 <= size <= end - pos and crc32c(mv[pos + 21 : pos + size]) == crc",
        new="61 <= size <= end - pos",
        description="recovery's fast path for plain v2 batches (issue #34) takes a whole batch as valid without its CRC-32C: a corrupted batch is kept, where Kafka's recovery truncates at it (§1.9, §4.6)",
        caught_by=("crash-scenarios",),
        # the rule mutated is the Python loop's; impl/_batch_walk.c runs the same rule and is held to
        # that loop by tests/test_batch_walk.py, so the mutant runs the loop alone
        more=(("        walk = _compiled_walk\n", "        walk = None\n"),),
    ),
    Mutant(
        name="recovery-indexes-base-offset",
        module="impl.segment",
        old="key = last  # the batch's last offset",
        new="key = first  # the batch's last offset",
        description="KAFKA-3955 / KAFKA-3919 (< 2.0): recovery indexes a batch by its first offset, so a segment holding a follower's overlapping batches (base below the previous batch's last offset) throws InvalidOffsetException and is truncated, or stops the load (§7.1)",
        caught_by=("regression-corpus",),
        # the rule mutated is the Python loop's; impl/_batch_walk.c runs the same rule and is held to
        # that loop by tests/test_batch_walk.py, so the mutant runs the loop alone
        more=(("        walk = _compiled_walk\n", "        walk = None\n"),),
    ),
)

DIR_MUTANTS = (
    Mutant(
        name="delete-dir-served-at-load",
        module="impl.log_manager",
        old='        if kind == "delete":  # loaded, then queued for deletion, never served (§2.3, §6.2 step 6)\n',
        new='        if False:  # a -delete dir loaded as its partition, served\n',
        description="the load serves a partition directory renamed -delete (asyncDelete's rename survived a crash) as the partition's log instead of queuing it for deletion, so a deleted partition comes back (LogManager.loadLog, §2.3 rule 2)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="future-dir-served-as-current",
        module="impl.log_manager",
        old='        if kind == "future":  # the partition\'s future log, keyed apart from its current one (KIP-113)\n',
        new='        if False:  # a -future dir loaded as its partition\'s current log\n',
        description="the load takes a -future dir (a replica moving between data dirs, KIP-113) for its partition's current log: beside the current one it is a duplicate that fails the startup, alone it is served, where Kafka 4.4.0's LogManager.loadLog keys it apart as the future log (§2.3 rule 2)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="duplicate-future-dirs-kept",
        module="impl.log_manager",
        old="            if tp in self.futures:\n",
        new="            if False:\n",
        description="a second -future dir of one partition replaces the first, where Kafka 4.4.0's LogManager.loadLog throws IllegalStateException (Duplicate log directories found) and the startup fails",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="stray-dir-served",
        module="impl.log_manager",
        old='        if kind == "stray":  # loaded and logged, then held by nothing: never served, closed or deleted\n',
        new='        if False:  # a -stray dir loaded as its partition\n',
        description="the load serves a -stray dir (a log KRaft's metadata no longer assigns to the broker) as its partition's log, where Kafka 4.4.0's LogManager.loadLog loads it and then only logs it (§2.3 rule 2)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="stray-dir-deleted",
        module="impl.log_manager",
        old='        if kind == "delete":  # loaded, then queued for deletion, never served (§2.3, §6.2 step 6)\n',
        new='        if kind in ("delete", "stray"):  # a -stray dir queued for deletion too\n',
        description="the load queues a -stray dir for deletion as it does a -delete one, so kafka-delete-logs removes a replica an operator may still need; Kafka 4.4.0's LogManager keeps it, never deleting it",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="promotion-keeps-the-current-dir",
        module="impl.log_manager",
        old="""        self.storage.rename(source.dir, gone)
        self.storage.fsync_dir(source_dir)
        source.moved_to(gone)
""",
        new="""        gone = source.dir
""",
        description="a completed replica move leaves the current log's directory under the partition's name instead of renaming it -delete (replaceCurrentWithFutureLog): the next load finds two current dirs of the partition and the startup fails (KIP-113, §2.3 rule 2)",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="promotion-renames-the-current-first",
        module="impl.log_manager",
        old="""        path = f"{dest_dir}/{topic}-{partition}"
        self.storage.rename(dest.dir, path)
        self.storage.fsync_dir(dest_dir)
        dest.moved_to(path)
""",
        new="",
        description="a replica move's promotion renames the current log -delete before the future log takes the partition's name, where replaceCurrentWithFutureLog renames the future first: a crash between the two leaves no current dir (the partition's data only in a -future and a -delete dir) instead of two that fail the startup",
        caught_by=("regression-corpus",),
        more=(
            (
                """        source.moved_to(gone)
""",
                """        source.moved_to(gone)
        path = f"{dest_dir}/{topic}-{partition}"
        self.storage.rename(dest.dir, path)
        self.storage.fsync_dir(dest_dir)
        dest.moved_to(path)
""",
            ),
        ),
    ),
    Mutant(
        name="delete-dir-recovered-at-load",
        module="impl.loader",
        old='        if self.dir.endswith("-delete"):\n',
        new='        if False:\n',
        description="the loader recovers a -delete dir's log and resizes its active indexes as a served log's, where Kafka 4.4.0's LogLoader.load skips both and loads it at log end 0, cutting its leader-epoch cache and producer snapshots to 0",
        caught_by=("regression-corpus",),
    ),
    Mutant(
        name="new-log-indexes-left-unbuilt",
        module="impl.log_manager",
        old="        segment.resize_indexes(config.segment_index_bytes)\n",
        new="",
        description="a created log's active indexes stay lazy, where getOrCreateLog's load resizes (builds) them: a log deleted at once leaves a -delete dir without index files, which the next load recovers (§5.7, §2.3)",
        caught_by=("regression-corpus",),
    ),
)

ALL_MUTANTS = {
    m.name: m
    for m in FORMAT_MUTANTS + INDEX_MUTANTS + LOG_MUTANTS + CRASH_MUTANTS + SWAP_MUTANTS + HISTORICAL_MUTANTS + DIR_MUTANTS
}
