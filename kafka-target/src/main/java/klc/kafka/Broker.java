package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.FileLock;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.BatchMetadata;
import org.apache.kafka.storage.internals.log.ProducerStateEntry;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.internals.log.LazyIndex;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason;
import org.apache.kafka.storage.internals.log.OffsetIndex;
import org.apache.kafka.storage.internals.log.OffsetPosition;
import org.apache.kafka.storage.internals.log.TimeIndex;
import org.apache.kafka.storage.internals.log.TimestampOffset;
import org.apache.kafka.storage.internals.log.UnifiedLog;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * One broker's log layer: Kafka's own LogManager over the scenario's data dirs, driven one
 * step at a time. Each method is one op of the JSON-lines protocol (docs/kafka-target.md) and
 * calls the Kafka method the scenario format names for that step (docs/scenario-format.md).
 */
final class Broker {
    private static final HexFormat HEX = HexFormat.of();
    private static final ObjectMapper JSON = new ObjectMapper();
    /** One replica: the high watermark is the log end offset (scenario determinism contract). */
    private static final int BROKER_EPOCH = -1;

    private final File root;
    private final List<File> dataDirs = new ArrayList<>();
    private final Properties topicConfig = new Properties();
    private final int recoveryThreads;
    private final StepClock clock;
    private final StepScheduler scheduler;
    private Logs manager;
    private LogDirFailureChannel failures;

    Broker(JsonNode request) {
        this.root = new File(request.path("root").asText());
        for (JsonNode d : request.path("data_dirs")) {
            dataDirs.add(new File(root, d.asText()).getAbsoluteFile());
        }
        int threads = 1;
        Iterator<Map.Entry<String, JsonNode>> fields = request.path("config").fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> e = fields.next();
            String key = e.getKey();
            String value = e.getValue().asText();
            if (key.equals("num.recovery.threads.per.data.dir")) {
                threads = e.getValue().asInt();
            } else if (key.equals("segment.jitter.ms") && e.getValue().asLong() != 0) {
                throw new Unsupported("segment.jitter.ms > 0: Kafka draws the jitter from java.util.Random, the scenario from its jitter_seed");
            } else if (!LogConfig.configNames().contains(key)) {
                // LogConfig ignores a name it does not define: the step would run without the setting
                throw new Unsupported("topic config " + key + ": Kafka " + Release.version() + " has no such config");
            } else if (key.equals("segment.bytes") && e.getValue().asLong() < 1024 * 1024) {
                // below Kafka's public minimum; its own tests set the internal config (§8)
                topicConfig.put(LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG, value);
            } else {
                topicConfig.put(key, value);
            }
        }
        this.recoveryThreads = threads;
        this.clock = new StepClock(request.path("clock_ms").asLong());
        SystemTimeSegments.use(clock);
        this.scheduler = new StepScheduler(clock);
        new LogConfig(topicConfig); // a config Kafka refuses fails here, before any step
    }

    // --- the broker's life ------------------------------------------------------------------

    ObjectNode open() throws Exception {
        Recoveries.reset();
        failures = new LogDirFailureChannel(dataDirs.size());
        manager = new Logs(dataDirs, new LogConfig(topicConfig), recoveryThreads, scheduler, failures, clock);
        String failed = Startup.run(() -> manager.startup(), this::takeOfflineDirs, () -> {
            for (UnifiedLog log : manager.allLogs()) {
                log.updateHighWatermark(log.logEndOffset());
            }
            scheduler.runDue();
        });
        ObjectNode out = LoadedPartitions.answer(dataDirs, failed, new LoadedPartitions.Manager() {
            @Override
            public TopicPartition partitionOf(File dir) {
                return Broker.partitionOf(dir);
            }

            @Override
            public boolean loadedIn(TopicPartition tp, File dataDir) {
                Optional<UnifiedLog> log = manager.getLog(tp);
                return log.isPresent() && new File(log.get().parentDir()).equals(dataDir);
            }

            @Override
            public boolean online(File dataDir) {
                return manager.isLogDirOnline(dataDir.getAbsolutePath());
            }
        });
        if (failed != null) {
            halt();
        }
        return out;
    }

    /**
     * What ReplicaManager's log-dir failure handler does with the dirs the load queued offline (an
     * unreadable checkpoint, an I/O error in a partition's load): each stops serving its logs
     * ({@code LogManager.handleLogDirFailure}). The first data dir holds the metadata log (KRaft's
     * default {@code metadata.log.dir}), whose failure halts the broker, as does losing the last
     * live dir. Returns why the broker halted, or null.
     */
    private String takeOfflineDirs() {
        for (File dir : dataDirs) {
            String path = dir.getAbsolutePath();
            if (!failures.hasOfflineLogDir(path)) {
                continue;
            }
            if (dir.equals(dataDirs.get(0)) || manager.liveLogDirCount() == 1) {
                return "log dir " + dir.getName() + " failed: the broker halts";
            }
            manager.handleLogDirFailure(path);
        }
        return null;
    }

    ObjectNode shutdown() throws IOException {
        try {
            manager.shutdown(BROKER_EPOCH);
        } catch (Exception e) {
            // BrokerServer.shutdown swallows it (CoreUtils.swallow): after a log dir failure the
            // dir's lock is destroyed twice, and the second release throws once the checkpoints
            // and markers of the live dirs are written
            org.slf4j.LoggerFactory.getLogger(Broker.class).warn("LogManager.shutdown threw; swallowed as BrokerServer.shutdown does", e);
        }
        scheduler.forget();
        ObjectNode out = JSON.createObjectNode();
        ObjectNode dirs = out.putObject("shutdown");
        for (File dir : dataDirs) {
            dirs.put(dir.getName(), new File(dir, ".kafka_cleanshutdown").exists());
        }
        manager = null;
        ProcessMetrics.forget(); // the per-dir gauges would keep the shut-down LogManager reachable
        return out;
    }

    /** The process dies: nothing is flushed, trimmed or closed; only the dir locks are let go so
     *  the next LogManager in this JVM can take them (an OS releases them with the process). The
     *  lock of a dir the failure handler took offline is already gone: handleLogDirFailure
     *  destroys it and leaves it in {@code dirLocks()}, where unlocking it again throws. */
    ObjectNode halt() throws IOException {
        if (manager != null) {
            for (FileLock lock : manager.dirLocks()) {
                try {
                    lock.destroy();
                } catch (ClosedChannelException alreadyReleased) {
                    // an offline dir's: released when the dir went offline
                }
            }
        }
        manager = null;
        scheduler.forget();
        ProcessMetrics.forget(); // its gauges would keep every abandoned log reachable
        System.gc(); // the abandoned logs' channels and mappings go with their objects
        return JSON.createObjectNode();
    }

    void clockAt(long nowMs) {
        clock.set(nowMs);
    }

    /** Time has passed (the request's now_ms): the tasks now due run, as Kafka's scheduler runs them. */
    ObjectNode tick() {
        scheduler.tick();
        return JSON.createObjectNode();
    }

    void afterStep() throws IOException {
        if (manager == null) {
            return;
        }
        scheduler.runDue();
        for (UnifiedLog log : manager.allLogs()) {
            log.updateHighWatermark(log.logEndOffset());
        }
    }

    // --- steps on one partition ---------------------------------------------------------------

    ObjectNode create(String topic, int partition, int dir) throws IOException {
        TopicPartition tp = new TopicPartition(topic, partition);
        manager.maybeUpdatePreferredLogDir(tp, dataDirs.get(dir % dataDirs.size()).getAbsolutePath());
        manager.getOrCreateLog(tp);
        return JSON.createObjectNode();
    }

    /** A leader's end-transaction marker is written as the transaction coordinator's
     *  WriteTxnMarkers request writes it (origin COORDINATOR), at transaction version 0 (the
     *  classic protocol, whose markers keep the producer's epoch); any other leader append is a
     *  client's produce request. */
    ObjectNode append(UnifiedLog log, byte[] data, boolean leader, int leaderEpoch) throws IOException {
        LogAppendInfo info = !leader ? log.appendAsFollower(Moved.memoryRecords(data), leaderEpoch)
                : isControlBatch(data) ? coordinatorAppend(log, data, leaderEpoch)
                : log.appendAsLeader(Moved.memoryRecords(data), leaderEpoch);
        ObjectNode out = JSON.createObjectNode();
        out.put("first", info.firstOffset());
        out.put("last", info.lastOffset());
        return out;
    }

    /** appendAsLeader(records, epoch, COORDINATOR, …): 4.2 adds the transaction version (KIP-890's
     *  markers), which the 3-argument form leaves unknown (−1); 4.1 has none. */
    private static LogAppendInfo coordinatorAppend(UnifiedLog log, byte[] data, int leaderEpoch) {
        Object records = Moved.memoryRecords(data);
        Object[] head = {records, leaderEpoch, AppendOrigin.COORDINATOR, RequestLocal.noCaching(), VerificationGuard.SENTINEL};
        Object[] withVersion = java.util.Arrays.copyOf(head, head.length + 1);
        withVersion[head.length] = (short) 0;
        return (LogAppendInfo) Moved.callFirst(log, "appendAsLeader", withVersion, head);
    }

    /** Whether the request's first batch is a v2 control batch (magic at byte 16, the control bit
     *  of the attributes at bytes 21–22: the record batch format, KIP-98). */
    private static boolean isControlBatch(byte[] data) {
        return data.length > 22 && data[16] == 2 && (data[22] & 0x20) != 0;
    }

    ObjectNode roll(UnifiedLog log) throws IOException {
        return JSON.createObjectNode().put("base", log.roll().baseOffset());
    }

    /** A fetch bounded by {@code maxOffset} the way a follower's high watermark bounds it (§4.5). */
    ObjectNode read(UnifiedLog log, long offset, int maxBytes, Long maxOffset, boolean minOne) throws IOException {
        FetchIsolation isolation = FetchIsolation.LOG_END;
        if (maxOffset != null) {
            if (maxOffset < log.logStartOffset() || maxOffset > log.logEndOffset()) {
                throw new OffsetOutOfRangeException("max offset " + maxOffset + " outside the log");
            }
            log.updateHighWatermark(maxOffset);
            isolation = FetchIsolation.HIGH_WATERMARK;
        }
        try {
            FetchDataInfo info = log.read(offset, maxBytes, isolation, minOne);
            return JSON.createObjectNode().put("bytes", HEX.formatHex(Moved.bytesOf(info.records)));
        } finally {
            log.updateHighWatermark(log.logEndOffset());
        }
    }

    /** A consumer's fetch at read_committed: up to the last stable offset, with the aborted
     *  transactions the fetched range overlaps (null: the fetch answered none at all). */
    ObjectNode readCommitted(UnifiedLog log, long offset, int maxBytes, boolean minOne) throws IOException {
        FetchDataInfo info = log.read(offset, maxBytes, FetchIsolation.TXN_COMMITTED, minOne);
        ObjectNode out = JSON.createObjectNode().put("bytes", HEX.formatHex(Moved.bytesOf(info.records)));
        if (info.abortedTransactions.isEmpty()) {
            out.putNull("aborted");
        } else {
            var aborted = out.putArray("aborted");
            info.abortedTransactions.get().forEach(t -> aborted.addArray().add(t.producerId()).add(t.firstOffset()));
        }
        return out;
    }

    ObjectNode offsetForTimestamp(UnifiedLog log, long timestamp) {
        var holder = log.fetchOffsetByTimestamp(timestamp, Optional.empty());
        ObjectNode out = JSON.createObjectNode();
        if (holder.maybeOffsetsError().isPresent()) {
            throw holder.maybeOffsetsError().get();
        }
        var found = holder.timestampAndOffsetOpt(); // FileRecords.TimestampAndOffset: FileRecords moved in 4.4
        if (found.isEmpty()) {
            out.putNull("found");
        } else {
            out.putArray("found").add(found.get().timestamp).add(found.get().offset);
        }
        return out;
    }

    ObjectNode truncate(UnifiedLog log, long offset) {
        boolean truncated = offset < log.logEndOffset();
        if (offset < 0) {
            log.truncateTo(offset); // Kafka's own refusal
        }
        manager.truncateTo(log.topicPartition(), offset);
        return JSON.createObjectNode().put("truncated", truncated);
    }

    ObjectNode truncateFully(UnifiedLog log, long offset) {
        manager.truncateFullyAndStartAt(log.topicPartition(), offset);
        return JSON.createObjectNode();
    }

    /** Partition.deleteRecordsOnLeader: −1 is the high watermark, another negative offset is refused. */
    ObjectNode deleteRecords(UnifiedLog log, long offset) {
        long converted = offset == -1 ? log.highWatermark() : offset;
        if (converted < 0) {
            throw new OffsetOutOfRangeException("The offset " + converted + " for partition " + log.topicPartition() + " is not valid");
        }
        log.maybeIncrementLogStartOffset(converted, LogStartOffsetIncrementReason.ClientRecordDeletion);
        return JSON.createObjectNode().put("log_start_offset", log.logStartOffset());
    }

    /** The harness's precondition (the step's offset lies within the log), then Kafka's flush. */
    ObjectNode flush(UnifiedLog log, Long offset) {
        long to = offset == null ? log.logEndOffset() : offset;
        if (to < 0 || to > log.logEndOffset()) {
            throw new OffsetOutOfRangeException("cannot flush to " + to + ": the log ends at " + log.logEndOffset());
        }
        log.flushUptoOffsetExclusive(to);
        return JSON.createObjectNode();
    }

    ObjectNode retention() throws IOException {
        int deleted = 0;
        for (UnifiedLog log : sortedLogs()) {
            deleted += log.deleteOldSegments();
        }
        return JSON.createObjectNode().put("deleted", deleted);
    }

    ObjectNode checkpoint() {
        manager.checkpointLogRecoveryOffsets();
        manager.checkpointLogStartOffsets();
        return JSON.createObjectNode();
    }

    UnifiedLog log(String topic, int partition) {
        return manager.getLog(new TopicPartition(topic, partition))
                .orElseThrow(() -> new UnknownTopicOrPartitionException(topic + "-" + partition + " has no log"));
    }

    // --- observations -------------------------------------------------------------------------

    ObjectNode state() throws IOException {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode parts = out.putObject("partitions");
        for (UnifiedLog log : sortedLogs()) {
            ObjectNode p = parts.putObject(keyOf(log));
            p.put("log_start_offset", log.logStartOffset());
            p.put("log_end_offset", log.logEndOffset());
            p.put("recovery_point", log.recoveryPoint());
            ArrayNode segments = p.putArray("segments");
            for (LogSegment s : log.logSegments()) {
                segments.addArray().add(s.baseOffset()).add(s.size()).add(s.log().file().getName());
            }
            ArrayNode epochs = p.putArray("epochs");
            LeaderEpochFileCache cache = log.leaderEpochCache();
            for (EpochEntry e : cache.epochEntries()) {
                epochs.addArray().add((Integer) Moved.member(e, "epoch")).add((Long) Moved.member(e, "startOffset"));
            }
            producers(p.putArray("producers"), log.producerStateManager().activeProducers().values());
        }
        return out;
    }

    /** The producer state in memory, one snapshot entry per producer, by id: what a snapshot written
     *  now would hold (the last batch's sequence, offset and delta; -1, -1, 0 without a batch). */
    static void producers(ArrayNode out, Collection<ProducerStateEntry> entries) {
        List<ProducerStateEntry> sorted = new ArrayList<>(entries);
        sorted.sort(Comparator.comparingLong(ProducerStateEntry::producerId));
        for (ProducerStateEntry e : sorted) {
            BatchMetadata last = null;
            for (BatchMetadata b : e.batchMetadata()) last = b;
            out.addArray().add(e.producerId()).add(e.producerEpoch())
                    .add(last == null ? -1 : (Integer) Moved.member(last, "lastSeq"))
                    .add(last == null ? -1L : (Long) Moved.member(last, "lastOffset"))
                    .add(last == null ? 0 : (Integer) Moved.member(last, "offsetDelta")).add(e.lastTimestamp()).add(e.coordinatorEpoch())
                    .add(e.currentTxnFirstOffset().orElse(-1L));
        }
    }

    /** The entries of every segment whose two indexes are materialised (reading an index that is
     *  not would materialise it, which changes what Kafka does next: KAFKA-7283). */
    ObjectNode indexEntries() throws Exception {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode segs = out.putObject("segments");
        for (UnifiedLog log : sortedLogs()) {
            List<LogSegment> segments = log.logSegments();
            for (int i = 0; i < segments.size(); i++) {
                LogSegment s = segments.get(i);
                if (!materialised(s, "lazyOffsetIndex") || !materialised(s, "lazyTimeIndex")) {
                    continue;
                }
                ObjectNode e = segs.putObject(keyOf(log) + "/" + s.baseOffset());
                ArrayNode offsets = e.putArray("offsets");
                OffsetIndex oi = s.offsetIndex();
                for (int k = 0; k < oi.entries(); k++) {
                    OffsetPosition op = oi.entry(k);
                    offsets.addArray().add((Long) Moved.member(op, "offset")).add((Integer) Moved.member(op, "position"));
                }
                ArrayNode times = e.putArray("times");
                TimeIndex ti = s.timeIndex();
                for (int k = 0; k < ti.entries(); k++) {
                    TimestampOffset to = ti.entry(k);
                    times.addArray().add((Long) Moved.member(to, "timestamp")).add((Long) Moved.member(to, "offset"));
                }
                e.put("active", i == segments.size() - 1);
                e.put("end", i + 1 < segments.size() ? segments.get(i + 1).baseOffset() : log.logEndOffset());
            }
        }
        return out;
    }

    /** The directory the data dirs lie in. */
    File root() {
        return root;
    }

    boolean running() {
        return manager != null;
    }

    // --- helpers ------------------------------------------------------------------------------

    private List<UnifiedLog> sortedLogs() {
        List<UnifiedLog> logs = new ArrayList<>(manager.allLogs());
        logs.sort(Comparator.comparing((UnifiedLog l) -> l.topicPartition().topic())
                .thenComparingInt(l -> l.topicPartition().partition()));
        return logs;
    }

    private static String keyOf(UnifiedLog log) {
        return new File(log.parentDir()).getName() + "/" + log.dir().getName();
    }

    /** A partition dir as Kafka's loader names it; null for anything else it finds there, and for
     *  KRaft's metadata log, which LogManager leaves to the raft layer. */
    private static TopicPartition partitionOf(File dir) {
        String name = dir.getName();
        if (name.endsWith("-delete") || name.endsWith("-future") || name.endsWith("-stray")
                || name.startsWith("__cluster_metadata-")) {
            return null;
        }
        try {
            return UnifiedLog.parseTopicPartitionName(dir);
        } catch (Exception e) { // up to 4.3 it declares IOException
            return null;
        }
    }

    private static boolean materialised(LogSegment segment, String field) throws ReflectiveOperationException {
        Field lazyField = LogSegment.class.getDeclaredField(field);
        lazyField.setAccessible(true);
        LazyIndex<?> lazy = (LazyIndex<?>) lazyField.get(segment);
        Field wrapper = LazyIndex.class.getDeclaredField("indexWrapper");
        wrapper.setAccessible(true);
        return wrapper.get(lazy).getClass().getSimpleName().equals("IndexValue");
    }
}
