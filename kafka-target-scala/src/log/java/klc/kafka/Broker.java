package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import kafka.log.CleanerConfig;
import kafka.log.Log;
import kafka.log.LogAppendInfo;
import kafka.log.LogConfig;
import kafka.log.LogManager;
import kafka.log.LogSegment;
import kafka.log.OffsetIndex;
import kafka.log.OffsetPosition;
import kafka.log.TimeIndex;
import kafka.log.TimestampOffset;
import kafka.server.BrokerTopicStats;
import kafka.server.FetchDataInfo;
import kafka.server.LogDirFailureChannel;
import kafka.server.LogOffsetMetadata;
import kafka.server.epoch.EpochEntry;
import kafka.utils.FileLock;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Records;

import scala.Function0;
import scala.Option;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * One broker's log layer on Kafka 2.x: Kafka's own LogManager over the scenario's data dirs,
 * driven one step at a time. Each method is one op of the JSON-lines protocol
 * (docs/kafka-target.md) and calls the Kafka method the scenario format names for that step
 * (docs/scenario-format.md). Calls whose signature changed within 2.x go through {@link Scala}.
 */
final class Broker {
    private static final HexFormat HEX = HexFormat.of();
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Kafka 2.x's default transactional.id.expiration.ms, which LogManager.apply passes as maxPidExpirationMs. */
    private static final int MAX_PID_EXPIRATION_MS = 7 * 24 * 3600 * 1000;
    /** keepPartitionMetadataFile (2.8): a 2.8 broker keeps partition.metadata (its IBP uses topic ids). */
    private static final boolean KEEP_PARTITION_METADATA = true;
    private static final String BEFORE_MAX = "message.timestamp.before.max.ms";
    private static final String AFTER_MAX = "message.timestamp.after.max.ms";

    private final File root;
    private final List<File> dataDirs = new ArrayList<>();
    private final Properties topicConfig = new Properties();
    private final int recoveryThreads;
    private final StepClock clock;
    private final StepScheduler scheduler;
    private final LogConfig logConfig;
    private LogManager manager;

    Broker(JsonNode request) {
        this.root = new File(request.path("root").asText());
        for (JsonNode d : request.path("data_dirs")) {
            dataDirs.add(new File(root, d.asText()).getAbsoluteFile());
        }
        int threads = 1;
        Iterator<Map.Entry<String, JsonNode>> fields = request.path("config").fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> e = fields.next();
            if (e.getKey().equals("num.recovery.threads.per.data.dir")) {
                threads = e.getValue().asInt();
            } else {
                topicConfig.put(e.getKey(), e.getValue().asText());
            }
        }
        this.recoveryThreads = threads;
        expressTimestampBounds();
        refuseUnknownConfigs();
        this.clock = new StepClock(request.path("clock_ms").asLong());
        SystemTimeSegments.use(clock);
        this.scheduler = new StepScheduler(clock);
        this.logConfig = LogConfig.apply(topicConfig, LogConfig.apply$default$2()); // Kafka refuses a bad value here
    }

    /** Kafka 2.x bounds a CreateTime by one message.timestamp.difference.max.ms either way of the
     *  broker's clock; 3.6 split it into a bound before and one after. Equal bounds are one. */
    private void expressTimestampBounds() {
        String before = topicConfig.getProperty(BEFORE_MAX);
        String after = topicConfig.getProperty(AFTER_MAX);
        if (before == null && after == null) {
            return;
        }
        if (before == null || !before.equals(after)) {
            throw new Unsupported(BEFORE_MAX + " and " + AFTER_MAX + " unless equal: Kafka " + Release.version()
                    + " has one message.timestamp.difference.max.ms for both");
        }
        topicConfig.remove(BEFORE_MAX);
        topicConfig.remove(AFTER_MAX);
        topicConfig.put("message.timestamp.difference.max.ms", before);
    }

    private void refuseUnknownConfigs() {
        List<String> known = Scala.list(LogConfig.configNames());
        for (String key : topicConfig.stringPropertyNames()) {
            if (!known.contains(key)) {
                throw new Unsupported("topic config " + key + ": Kafka " + Release.version() + " has no such config");
            }
        }
        if (Long.parseLong(topicConfig.getProperty("segment.jitter.ms", "0")) != 0) {
            throw new Unsupported("segment.jitter.ms > 0: Kafka draws the jitter from java.util.Random, the scenario from its jitter_seed");
        }
    }

    // --- the broker's life ------------------------------------------------------------------

    ObjectNode open() throws InterruptedException {
        Recoveries.reset();
        LogDirFailureChannel failures = new LogDirFailureChannel(dataDirs.size());
        // up to 2.7 the LogManager's constructor loads the logs; one that threw is never seen
        // here: its dir locks leave this JVM's lock table when the garbage collector in halt()
        // takes them
        String failed = Startup.run(() -> {
            manager = newLogManager(failures);
            startup();
        }, () -> takeOfflineDirs(failures), () -> {
            for (Log log : logs()) {
                highWatermarkAtTheEnd(log);
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
                if (manager == null) {
                    return false; // up to 2.7 the constructor loads: one that threw holds no log
                }
                Option<Log> log = manager.getLog(tp, false);
                return log.isDefined() && log.get().dir().getAbsoluteFile().getParentFile().equals(dataDir);
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

    /** LogManager's constructor: 3.0 also takes the inter-broker protocol (the latest here); 2.8
     *  a config repository (no override here) and keepPartitionMetadataFile; 2.0 to 2.7 a map of
     *  topic configs and the broker's BrokerState. */
    private LogManager newLogManager(LogDirFailureChannel failures) {
        CleanerConfig noCleaner = new CleanerConfig(1, 4L << 20, 0.9, 1 << 20, 32 << 20, Double.MAX_VALUE, 15_000L, false, "MD5");
        Object[] common = {Scala.seq(dataDirs), Scala.seq(List.<File>of()), null, logConfig, noCleaner, recoveryThreads,
            Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, MAX_PID_EXPIRATION_MS, scheduler};
        Object[] v28 = concat(common, new BrokerTopicStats(), failures, clock, KEEP_PARTITION_METADATA);
        v28[2] = Scala.noProperties("kafka.server.metadata.ConfigRepository");
        Object apiVersion = Scala.object("kafka.api.ApiVersion");
        Object[] v30 = concat(Arrays.copyOf(v28, 11), apiVersion == null ? null : Scala.call(apiVersion, "latestVersion"));
        v30 = concat(v30, Arrays.copyOfRange(v28, 11, v28.length));
        Object[] v20 = concat(common, Scala.newInstance("kafka.server.BrokerState"), new BrokerTopicStats(), failures, clock);
        v20[2] = scala.collection.immutable.Map$.MODULE$.empty();
        return Scala.constructFirst(LogManager.class, v30, v28, v20);
    }

    /** LogManager.startup: 2.8 takes the topics whose config overrides to fetch (none here). */
    private void startup() {
        Scala.callFirst(manager, "startup", new Object[] {scala.collection.immutable.Set$.MODULE$.empty()}, new Object[0]);
    }

    /**
     * What ReplicaManager's log-dir failure handler does with the dirs the load queued offline:
     * each stops serving its logs ({@code LogManager.handleLogDirFailure}); a 2.x (ZooKeeper)
     * broker halts only when no live dir is left. Returns why the broker halted, or null.
     */
    private String takeOfflineDirs(LogDirFailureChannel failures) {
        // 2.x has no hasOfflineLogDir, and takeNextOfflineLogDir blocks: read the channel's map
        @SuppressWarnings("unchecked")
        Map<String, String> queued = (Map<String, String>) Scala.field(failures, LogDirFailureChannel.class, "offlineLogDirs");
        for (File dir : dataDirs) {
            if (!queued.containsKey(dir.getAbsolutePath())) {
                continue;
            }
            if (manager.liveLogDirs().size() == 1) {
                return "log dir " + dir.getName() + " failed, the last live one: the broker halts";
            }
            manager.handleLogDirFailure(dir.getAbsolutePath());
        }
        return null;
    }

    ObjectNode shutdown() {
        try {
            manager.shutdown();
        } catch (Exception e) {
            // KafkaServer.shutdown swallows it (CoreUtils.swallow), as after a log dir failure
            org.slf4j.LoggerFactory.getLogger(Broker.class).warn("LogManager.shutdown threw; swallowed as KafkaServer.shutdown does", e);
        }
        scheduler.forget();
        ObjectNode out = JSON.createObjectNode();
        ObjectNode dirs = out.putObject("shutdown");
        for (File dir : dataDirs) {
            dirs.put(dir.getName(), new File(dir, Log.CleanShutdownFile()).exists());
        }
        manager = null;
        ProcessMetrics.forget(); // the per-dir gauges would keep the shut-down LogManager reachable
        return out;
    }

    /** The process dies: nothing is flushed, trimmed or closed; only the dir locks are let go so
     *  the next LogManager in this JVM can take them (an OS releases them with the process). */
    ObjectNode halt() {
        if (manager != null) {
            @SuppressWarnings("unchecked")
            scala.collection.Iterable<FileLock> locks = (scala.collection.Iterable<FileLock>) Scala.field(manager, LogManager.class, "dirLocks");
            for (FileLock lock : Scala.list(locks)) {
                destroy(lock);
            }
        }
        manager = null;
        scheduler.forget();
        ProcessMetrics.forget(); // its gauges would keep every abandoned log reachable
        System.gc(); // the abandoned logs' channels and mappings go with their objects
        return JSON.createObjectNode();
    }

    /** A dir lock let go; one the failure handler already destroyed (an offline dir's, still in
     *  {@code dirLocks}) throws ClosedChannelException — Scala declares no checked exception. */
    private static void destroy(FileLock lock) {
        try {
            lock.destroy();
        } catch (Exception e) {
            if (!(e instanceof java.nio.channels.ClosedChannelException)) {
                throw e;
            }
        }
    }

    void clockAt(long nowMs) {
        clock.set(nowMs);
    }

    /** Time has passed (the request's now_ms): the tasks now due run, as Kafka's scheduler runs them. */
    ObjectNode tick() {
        scheduler.tick();
        return JSON.createObjectNode();
    }

    void afterStep() {
        if (manager == null) {
            return;
        }
        scheduler.runDue();
        for (Log log : logs()) {
            highWatermarkAtTheEnd(log);
        }
    }

    /** One replica: the high watermark is the log end (2.4 moved it into Log; before, it lived in
     *  the Replica, which this adapter does not build, and a read takes its bound as an offset). */
    private static void highWatermarkAtTheEnd(Log log) {
        if (Scala.has(log, "updateHighWatermark")) {
            Scala.call(log, "updateHighWatermark", log.logEndOffset());
        }
    }

    // --- steps on one partition ---------------------------------------------------------------

    /** getOrCreateLog: 3.0 takes the partition and its topic id (none here), 2.8 the partition
     *  alone, 2.7 also a LogConfig supplier, 2.0 to 2.4 a LogConfig. */
    ObjectNode create(String topic, int partition, int dir) {
        TopicPartition tp = new TopicPartition(topic, partition);
        manager.maybeUpdatePreferredLogDir(tp, dataDirs.get(dir % dataDirs.size()).getAbsolutePath());
        Function0<LogConfig> config = () -> logConfig;
        Scala.callFirst(manager, "getOrCreateLog", new Object[] {tp, false, false, Option.empty()}, new Object[] {tp},
                new Object[] {tp, config}, new Object[] {tp, logConfig});
        return JSON.createObjectNode();
    }

    /** A leader append as a produce request makes it (appendAsLeader's defaults: a client's
     *  append at the latest inter-broker protocol); a follower's carries no epoch in 2.x. */
    ObjectNode append(Log log, byte[] data, boolean leader, int leaderEpoch) {
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(data));
        if (leader && records.batches().iterator().hasNext() && records.batches().iterator().next().isControlBatch()) {
            throw new Unsupported("an end-transaction marker as leader: this adapter does not write as the "
                    + "transaction coordinator on Kafka " + Release.version() + " yet");
        }
        LogAppendInfo info = leader
                ? (LogAppendInfo) Scala.call(log, "appendAsLeader", records, leaderEpoch)
                : log.appendAsFollower(records);
        ObjectNode out = JSON.createObjectNode();
        out.put("first", firstOffset(info));
        out.put("last", info.lastOffset());
        return out;
    }

    /** Log.roll: 2.2 on takes the expected next offset as an Option, 2.0 and 2.1 as a Long (default 0). */
    ObjectNode roll(Log log) {
        LogSegment rolled = (LogSegment) Scala.callFirst(log, "roll", new Object[] {Option.empty()}, new Object[0]);
        return JSON.createObjectNode().put("base", rolled.baseOffset());
    }

    /** A fetch bounded by {@code maxOffset} the way a follower's high watermark bounds it (§4.5). */
    ObjectNode read(Log log, long offset, int maxBytes, Long maxOffset, boolean minOne) throws IOException {
        if (maxOffset != null && (maxOffset < log.logStartOffset() || maxOffset > log.logEndOffset())) {
            throw new OffsetOutOfRangeException("max offset " + maxOffset + " outside the log");
        }
        FetchDataInfo info = Scala.has(log, "updateHighWatermark")
                ? readToTheHighWatermark(log, offset, maxBytes, maxOffset, minOne)
                : readToAnOffset(log, offset, maxBytes, maxOffset, minOne);
        return JSON.createObjectNode().put("bytes", HEX.formatHex(bytesOf(info.records())));
    }

    /** 2.4 on: Log.read takes a FetchIsolation; the bound is the high watermark, set for the read. */
    private static FetchDataInfo readToTheHighWatermark(Log log, long offset, int maxBytes, Long maxOffset, boolean minOne) {
        Object isolation = Scala.object("kafka.server.FetchLogEnd");
        if (maxOffset != null) {
            Scala.call(log, "updateHighWatermark", maxOffset);
            isolation = Scala.object("kafka.server.FetchHighWatermark");
        }
        try {
            return (FetchDataInfo) Scala.call(log, "read", offset, maxBytes, isolation, minOne);
        } finally {
            highWatermarkAtTheEnd(log);
        }
    }

    /** 2.0 to 2.3: Log.read takes the bound as an optional offset; 2.1 on also whether to look up
     *  aborted transactions (not: this is a read_uncommitted fetch), 2.0 the isolation level. */
    private static FetchDataInfo readToAnOffset(Log log, long offset, int maxBytes, Long maxOffset, boolean minOne) {
        Option<Object> bound = maxOffset == null ? Option.empty() : Option.apply(maxOffset);
        return (FetchDataInfo) Scala.callFirst(log, "read",
                new Object[] {offset, maxBytes, bound, minOne, false},
                new Object[] {offset, maxBytes, bound, minOne, readUncommitted()});
    }

    /** 2.0's IsolationLevel (its package moved later): null where the release has none. */
    private static Object readUncommitted() {
        try {
            return Class.forName("org.apache.kafka.common.requests.IsolationLevel").getField("READ_UNCOMMITTED").get(null);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    ObjectNode readCommitted(Log log, long offset, int maxBytes, boolean minOne) {
        throw new Unsupported("a read_committed fetch: this adapter does not read aborted transactions on Kafka "
                + Release.version() + " yet");
    }

    /** Kafka 2.x's fetchOffsetByTimestamp knows two special timestamps, −1 (latest) and −2
     *  (earliest); −3, the offset of the largest timestamp, came with 3.0 (KIP-734). */
    ObjectNode offsetForTimestamp(Log log, long timestamp) {
        if (timestamp < -2 && !knowsMaxTimestamp()) {
            throw new Unsupported("offset_for_timestamp " + timestamp + ": Kafka " + Release.version()
                    + " knows -1 (latest) and -2 (earliest) only; -3 (max timestamp) came with 3.0 (KIP-734)");
        }
        // fetchOffsetByTimestamp (2.2 on) answers FileRecords.TimestampAndOffset; 2.0 and 2.1's
        // fetchOffsetsByTimestamp a TimestampOffset
        Option<?> found = (Option<?>) Scala.call(log, Scala.has(log, "fetchOffsetByTimestamp") ? "fetchOffsetByTimestamp" : "fetchOffsetsByTimestamp", timestamp);
        ObjectNode out = JSON.createObjectNode();
        if (found.isEmpty()) {
            out.putNull("found");
        } else if (found.get() instanceof FileRecords.TimestampAndOffset t) {
            out.putArray("found").add(t.timestamp).add(t.offset);
        } else {
            TimestampOffset t = (TimestampOffset) found.get();
            out.putArray("found").add(t.timestamp()).add(t.offset());
        }
        return out;
    }

    ObjectNode truncate(Log log, long offset) {
        boolean truncated = offset < log.logEndOffset();
        if (offset < 0) {
            log.truncateTo(offset); // Kafka's own refusal
        }
        manager.truncateTo(scalaMap(log.topicPartition(), offset), false);
        return JSON.createObjectNode().put("truncated", truncated);
    }

    ObjectNode truncateFully(Log log, long offset) {
        manager.truncateFullyAndStartAt(log.topicPartition(), offset, false);
        return JSON.createObjectNode();
    }

    /** maybeIncrementLogStartOffset: 2.7 and 2.8 take the reason, a client's DeleteRecords here. */
    /** Partition.deleteRecordsOnLeader: −1 is the high watermark, another negative offset is refused. */
    ObjectNode deleteRecords(Log log, long offset) {
        long converted = offset == -1 ? highWatermark(log) : offset;
        if (converted < 0) {
            throw new OffsetOutOfRangeException("The offset " + converted + " for partition " + log.topicPartition() + " is not valid");
        }
        Object reason = Scala.object("kafka.log.ClientRecordDeletion");
        Scala.callFirst(log, "maybeIncrementLogStartOffset", new Object[] {converted, reason}, new Object[] {converted});
        return JSON.createObjectNode().put("log_start_offset", log.logStartOffset());
    }

    /** The harness's precondition (the step's offset lies within the log), then Kafka's flush,
     *  which in 2.x flushes the offsets below the one given. */
    ObjectNode flush(Log log, Long offset) {
        long to = offset == null ? log.logEndOffset() : offset;
        if (to < 0 || to > log.logEndOffset()) {
            throw new OffsetOutOfRangeException("cannot flush to " + to + ": the log ends at " + log.logEndOffset());
        }
        log.flush(to);
        return JSON.createObjectNode();
    }

    ObjectNode retention() {
        int deleted = 0;
        for (Log log : sortedLogs()) {
            deleted += log.deleteOldSegments();
        }
        return JSON.createObjectNode().put("deleted", deleted);
    }

    ObjectNode checkpoint() {
        manager.checkpointLogRecoveryOffsets();
        manager.checkpointLogStartOffsets();
        return JSON.createObjectNode();
    }

    /** ListOffsetsRequest.MAX_TIMESTAMP (−3) came with KIP-734 in 3.0. */
    private static boolean knowsMaxTimestamp() {
        try {
            Class.forName("org.apache.kafka.common.requests.ListOffsetsRequest").getField("MAX_TIMESTAMP");
            return true;
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    /** One replica: up to 2.3 the high watermark (in the Replica) is the log end. */
    private static long highWatermark(Log log) {
        return Scala.has(log, "highWatermark") ? (Long) Scala.call(log, "highWatermark") : log.logEndOffset();
    }

    Log log(String topic, int partition) {
        Option<Log> log = manager.getLog(new TopicPartition(topic, partition), false);
        if (log.isEmpty()) {
            throw new UnknownTopicOrPartitionException(topic + "-" + partition + " has no log");
        }
        return log.get();
    }

    // --- observations -------------------------------------------------------------------------

    ObjectNode state() {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode parts = out.putObject("partitions");
        for (Log log : sortedLogs()) {
            ObjectNode p = parts.putObject(keyOf(log));
            p.put("log_start_offset", log.logStartOffset());
            p.put("log_end_offset", log.logEndOffset());
            p.put("recovery_point", log.recoveryPoint());
            ArrayNode segments = p.putArray("segments");
            for (LogSegment s : Scala.list(log.logSegments())) {
                segments.addArray().add(s.baseOffset()).add(s.size()).add(s.log().file().getName());
            }
            ArrayNode epochs = p.putArray("epochs");
            for (EpochEntry e : epochEntries(log)) {
                epochs.addArray().add(e.epoch()).add(e.startOffset());
            }
        }
        return out;
    }

    /** The entries of every segment whose two indexes are materialised (reading an index that is
     *  not would materialise it, which changes what Kafka does next: KAFKA-7283, lazy since 2.3). */
    ObjectNode indexEntries() {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode segs = out.putObject("segments");
        for (Log log : sortedLogs()) {
            List<LogSegment> segments = Scala.list(log.logSegments());
            for (int i = 0; i < segments.size(); i++) {
                LogSegment s = segments.get(i);
                if (materialised(s, "lazyOffsetIndex") && materialised(s, "lazyTimeIndex")) {
                    long end = i + 1 < segments.size() ? segments.get(i + 1).baseOffset() : log.logEndOffset();
                    indexEntry(segs.putObject(keyOf(log) + "/" + s.baseOffset()), s, i == segments.size() - 1, end);
                }
            }
        }
        return out;
    }

    private static void indexEntry(ObjectNode e, LogSegment s, boolean active, long end) {
        ArrayNode offsets = e.putArray("offsets");
        OffsetIndex oi = s.offsetIndex();
        for (int k = 0; k < oi.entries(); k++) {
            OffsetPosition op = oi.entry(k);
            offsets.addArray().add(op.offset()).add(op.position());
        }
        ArrayNode times = e.putArray("times");
        TimeIndex ti = s.timeIndex();
        for (int k = 0; k < ti.entries(); k++) {
            TimestampOffset to = ti.entry(k);
            times.addArray().add(to.timestamp()).add(to.offset());
        }
        e.put("active", active);
        e.put("end", end);
    }

    /** The directory the data dirs lie in. */
    File root() {
        return root;
    }

    boolean running() {
        return manager != null;
    }

    // --- helpers ------------------------------------------------------------------------------

    private List<Log> logs() {
        return Scala.list(manager.allLogs());
    }

    private List<Log> sortedLogs() {
        List<Log> logs = logs();
        logs.sort(Comparator.comparing((Log l) -> l.topicPartition().topic())
                .thenComparingInt(l -> l.topicPartition().partition()));
        return logs;
    }

    private static String keyOf(Log log) {
        return log.dir().getAbsoluteFile().getParentFile().getName() + "/" + log.dir().getName();
    }

    /** A partition dir as Kafka's loader names it; null for anything else it finds there. */
    private static TopicPartition partitionOf(File dir) {
        String name = dir.getName();
        if (name.endsWith("-delete") || name.endsWith("-future")) {
            return null;
        }
        try {
            return Log.parseTopicPartitionName(dir);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** The offset of LogAppendInfo.firstOffset: a long in 1.1 (−1 when none), an Option of a Long
     *  from 2.0 to 2.7, of a LogOffsetMetadata in 2.8; -1 when none. */
    private static long firstOffset(LogAppendInfo info) {
        Object first = Scala.call(info, "firstOffset");
        if (first instanceof Long offset) {
            return offset;
        }
        Option<?> some = (Option<?>) first;
        if (some.isEmpty()) {
            return -1;
        }
        Object v = some.get();
        return v instanceof LogOffsetMetadata m ? m.messageOffset() : (Long) v;
    }

    /** Leader-epoch entries: the cache is optional from 2.2 (none below message format 2), a
     *  LeaderEpochFileCache always before. */
    @SuppressWarnings("unchecked")
    private static List<EpochEntry> epochEntries(Log log) {
        Object cache = Scala.call(log, "leaderEpochCache");
        if (cache instanceof Option<?> o) {
            if (o.isEmpty()) {
                return List.of();
            }
            cache = o.get();
        }
        return Scala.list((scala.collection.Iterable<EpochEntry>) Scala.call(cache, "epochEntries"));
    }

    /** Whether a segment's index object exists yet. Lazy since 2.3 (KAFKA-7283): 2.4 on a
     *  LazyIndex whose wrapper becomes an IndexValue, 2.3 a LazyOffsetIndex/LazyTimeIndex holding
     *  an Option; up to 2.2 every index is built with its segment. */
    private static boolean materialised(LogSegment segment, String lazyAccessor) {
        if (!Scala.has(segment, lazyAccessor)) {
            return true;
        }
        Object lazy = Scala.call(segment, lazyAccessor);
        for (Class<?> c = lazy.getClass(); c != null; c = c.getSuperclass()) {
            for (java.lang.reflect.Field f : c.getDeclaredFields()) {
                if (f.getName().endsWith("indexWrapper")) {
                    return Scala.field(lazy, c, "indexWrapper").getClass().getName().endsWith("IndexValue");
                }
                if (f.getName().endsWith("offsetIndex") || f.getName().endsWith("timeIndex")) {
                    return ((Option<?>) Scala.field(lazy, c, f.getName())).isDefined();
                }
            }
        }
        throw new IllegalStateException(lazy.getClass().getName() + " of Kafka " + Release.version() + " holds no index");
    }

    private static scala.collection.immutable.Map<TopicPartition, Object> scalaMap(TopicPartition tp, long offset) {
        return scala.collection.immutable.Map$.MODULE$.<TopicPartition, Object>empty().updated(tp, offset);
    }

    private static Object[] concat(Object[] head, Object... tail) {
        Object[] all = Arrays.copyOf(head, head.length + tail.length);
        System.arraycopy(tail, 0, all, head.length, tail.length);
        return all;
    }

    private static byte[] bytesOf(Records records) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(records.sizeInBytes());
        if (records instanceof FileRecords file) {
            file.readInto(buffer, 0);
        } else if (records instanceof MemoryRecords memory) {
            buffer.put(memory.buffer().duplicate());
        } else {
            throw new IllegalStateException("records of type " + records.getClass().getName());
        }
        return buffer.array();
    }
}
