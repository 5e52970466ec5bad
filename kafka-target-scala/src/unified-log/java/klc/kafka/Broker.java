package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import kafka.log.LogManager;
import kafka.log.UnifiedLog;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Records;

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
 * One broker's log layer on Kafka 3.1–4.0: the Scala LogManager over the scenario's data dirs,
 * driven one step at a time, its partitions {@code kafka.log.UnifiedLog}. Each method is one op of
 * the JSON-lines protocol (docs/kafka-target.md) and calls the Kafka method the scenario format
 * names for that step (docs/scenario-format.md). Between 3.1 and 4.0 the classes around UnifiedLog
 * moved from the broker's {@code kafka.log} and {@code kafka.server} into kafka-storage and
 * server-common (3.5 to 4.0): they are reached by name ({@link Scala#classOf}), and calls whose
 * signature changed go through {@link Scala#callFirst}, newest release first.
 */
final class Broker {
    private static final HexFormat HEX = HexFormat.of();
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String STORAGE = "org.apache.kafka.storage.internals.log.";
    /** transactional.id.expiration.ms's default, which LogManager.apply passes as maxPidExpirationMs up to 3.3. */
    private static final int MAX_PID_EXPIRATION_MS = 7 * 24 * 3600 * 1000;
    /** From 3.4 (KIP-854): producer.id.expiration.ms, transaction.max.timeout.ms and
     *  producer.id.expiration.check.interval.ms, at their defaults. */
    private static final int PRODUCER_ID_EXPIRATION_MS = 86_400_000;
    private static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;
    private static final int PRODUCER_ID_EXPIRATION_CHECK_MS = 600_000;
    /** keepPartitionMetadataFile: a broker whose protocol uses topic ids keeps partition.metadata. */
    private static final boolean KEEP_PARTITION_METADATA = true;
    /** The broker epoch LogManager.shutdown writes into the clean-shutdown marker from 3.7 (KIP-966), as the model writes it. */
    private static final long BROKER_EPOCH = -1L;
    private static final String BEFORE_MAX = "message.timestamp.before.max.ms";
    private static final String AFTER_MAX = "message.timestamp.after.max.ms";
    private static final String CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown";

    private final File root;
    private final List<File> dataDirs = new ArrayList<>();
    private final Properties topicConfig = new Properties();
    private final int recoveryThreads;
    private final StepClock clock;
    private final StepScheduler scheduler;
    private final Object logConfig;
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
        List<String> known = configNames();
        expressTimestampBounds(known);
        refuseUnknownConfigs(known);
        this.clock = new StepClock(request.path("clock_ms").asLong());
        SystemTimeSegments.use(clock);
        this.scheduler = new StepScheduler(clock);
        this.logConfig = newLogConfig(); // Kafka refuses a bad value here
    }

    /** LogConfig: the broker's Scala case class up to 3.4 (props, overridden configs), kafka-storage's after. */
    private Object newLogConfig() {
        Class<?> type = Scala.classOf(STORAGE + "LogConfig", "kafka.log.LogConfig");
        return Scala.constructFirst(type, new Object[] {topicConfig}, new Object[] {topicConfig, scala.collection.immutable.Set$.MODULE$.empty()});
    }

    private static List<String> configNames() {
        try {
            Class<?> type = Scala.classOf(STORAGE + "LogConfig", "kafka.log.LogConfig");
            List<String> names = new ArrayList<>();
            for (Object name : Scala.items(type.getMethod("configNames").invoke(null))) {
                names.add((String) name);
            }
            return names;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Up to 3.5 Kafka bounds a CreateTime by one message.timestamp.difference.max.ms either way of
     *  the broker's clock; 3.6 split it into a bound before and one after (KIP-937). Equal bounds are one. */
    private void expressTimestampBounds(List<String> known) {
        String before = topicConfig.getProperty(BEFORE_MAX);
        String after = topicConfig.getProperty(AFTER_MAX);
        if ((before == null && after == null) || known.contains(BEFORE_MAX)) {
            return;
        }
        if (before == null || !before.equals(after)) {
            throw new Unsupported(BEFORE_MAX + " and " + AFTER_MAX + " unless equal: Kafka " + Release.version()
                    + " has one message.timestamp.difference.max.ms for both (KIP-937 split it in 3.6)");
        }
        topicConfig.remove(BEFORE_MAX);
        topicConfig.remove(AFTER_MAX);
        topicConfig.put("message.timestamp.difference.max.ms", before);
    }

    private void refuseUnknownConfigs(List<String> known) {
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
        Object failures = Scala.constructFirst(Scala.classOf(STORAGE + "LogDirFailureChannel", "kafka.server.LogDirFailureChannel"),
                new Object[] {dataDirs.size()});
        String failed = Startup.run(() -> {
            manager = newLogManager(failures);
            Scala.callFirst(manager, "startup", new Object[] {scala.collection.immutable.Set$.MODULE$.empty()});
        }, () -> takeOfflineDirs(failures), () -> {
            for (UnifiedLog log : logs()) {
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
                Option<UnifiedLog> log = manager.getLog(tp, false);
                return log.isDefined() && log.get().parentDirFile().getAbsoluteFile().equals(dataDir);
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

    /** LogManager's constructor: 3.9 and 4.0 end with the initial task delay (0 here, as the
     *  4.x adapter has it) and 4.0 drops the inter-broker protocol; 3.6 adds whether remote storage
     *  is enabled (no); 3.4 replaces maxPidExpirationMs with the transaction timeout, the producer
     *  state config and its check interval (KIP-854); 3.1 takes an ApiVersion, later releases a
     *  MetadataVersion (the latest production one here). */
    private LogManager newLogManager(Object failures) {
        Object[] head = {Scala.seq(dataDirs), Scala.seq(List.<File>of()), Scala.noProperties("kafka.server.metadata.ConfigRepository"),
            logConfig, cleanerConfig(), recoveryThreads, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE};
        Object[] producers = {MAX_TRANSACTION_TIMEOUT_MS, producerStateManagerConfig(), PRODUCER_ID_EXPIRATION_CHECK_MS};
        Object[] tail = {scheduler.asKafkaScheduler(), brokerTopicStats(), failures, clock, KEEP_PARTITION_METADATA};
        Object ibp = interBrokerProtocol();
        Object[] v40 = flat(head, producers, tail, false, 0L);
        Object[] v39 = flat(head, producers, ibp, tail, false, 0L);
        Object[] v36 = flat(head, producers, ibp, tail, false);
        Object[] v34 = flat(head, producers, ibp, tail);
        Object[] v31 = flat(head, MAX_PID_EXPIRATION_MS, ibp, tail);
        return Scala.constructFirst(LogManager.class, v40, v39, v36, v34, v31);
    }

    /** No cleaner: kafka-storage's CleanerConfig(enableCleaner) from 3.5, the broker's case class before. */
    private static Object cleanerConfig() {
        Class<?> type = Scala.classOf(STORAGE + "CleanerConfig", "kafka.log.CleanerConfig");
        return Scala.constructFirst(type, new Object[] {false},
                new Object[] {1, 4L << 20, 0.9, 1 << 20, 32 << 20, Double.MAX_VALUE, 15_000L, false, "MD5"});
    }

    /** ProducerStateManagerConfig (3.4 on): 3.6 adds whether transactions are verified (no, as the 4.x adapter). */
    private static Object producerStateManagerConfig() {
        if (!Scala.hasClass(STORAGE + "ProducerStateManagerConfig") && !Scala.hasClass("kafka.log.ProducerStateManagerConfig")) {
            return null;
        }
        Class<?> type = Scala.classOf(STORAGE + "ProducerStateManagerConfig", "kafka.log.ProducerStateManagerConfig");
        return Scala.constructFirst(type, new Object[] {PRODUCER_ID_EXPIRATION_MS, false}, new Object[] {PRODUCER_ID_EXPIRATION_MS});
    }

    /** The BrokerTopicStats LogManager takes (the broker's up to 3.9, kafka-storage's in 4.0; 3.9
     *  has both): 3.6 and 3.7 construct it with the broker's config, 3.9 with whether remote
     *  storage is enabled, for its metrics (no). */
    private static Object brokerTopicStats() {
        for (Class<?> type : LogManager.class.getConstructors()[0].getParameterTypes()) {
            if (type.getSimpleName().equals("BrokerTopicStats")) {
                return Scala.constructFirst(type, new Object[0], new Object[] {false}, new Object[] {java.util.Optional.empty()});
            }
        }
        throw new IllegalStateException("the LogManager of Kafka " + Release.version() + " takes no BrokerTopicStats");
    }

    /** The latest inter-broker protocol a release ships as production-ready. */
    private static Object interBrokerProtocol() {
        if (Scala.hasClass("org.apache.kafka.server.common.MetadataVersion")) {
            Class<?> type = Scala.classOf("org.apache.kafka.server.common.MetadataVersion");
            for (String latest : new String[] {"LATEST_PRODUCTION", "latestProduction", "latest"}) {
                try {
                    return type.getField(latest).get(null);
                } catch (ReflectiveOperationException e) {
                    try {
                        return type.getMethod(latest).invoke(null);
                    } catch (ReflectiveOperationException f) {
                        // the next name
                    }
                }
            }
        }
        Object apiVersion = Scala.object("kafka.api.ApiVersion");
        return apiVersion == null ? null : Scala.call(apiVersion, "latestVersion");
    }

    /**
     * What ReplicaManager's log-dir failure handler does with the dirs the load queued offline:
     * each stops serving its logs ({@code LogManager.handleLogDirFailure}); a ZooKeeper broker
     * halts only when no live dir is left. Returns why the broker halted, or null.
     */
    private String takeOfflineDirs(Object failures) {
        for (File dir : dataDirs) {
            if (!(Boolean) Scala.call(failures, "hasOfflineLogDir", dir.getAbsolutePath())) {
                continue;
            }
            if (manager.liveLogDirs().size() == 1) {
                return "log dir " + dir.getName() + " failed, the last live one: the broker halts";
            }
            manager.handleLogDirFailure(dir.getAbsolutePath());
        }
        return null;
    }

    /** LogManager.shutdown: from 3.7 it takes the broker epoch it writes into the marker (KIP-966). */
    ObjectNode shutdown() {
        try {
            Scala.callFirst(manager, "shutdown", new Object[] {BROKER_EPOCH}, new Object[0]);
        } catch (Exception e) {
            // KafkaServer.shutdown swallows it (CoreUtils.swallow), as after a log dir failure
            org.slf4j.LoggerFactory.getLogger(Broker.class).warn("LogManager.shutdown threw; swallowed as KafkaServer.shutdown does", e);
        }
        scheduler.forget();
        ObjectNode out = JSON.createObjectNode();
        ObjectNode dirs = out.putObject("shutdown");
        for (File dir : dataDirs) {
            dirs.put(dir.getName(), new File(dir, CLEAN_SHUTDOWN_FILE).exists());
        }
        manager = null;
        ProcessMetrics.forget(); // the per-dir gauges would keep the shut-down LogManager reachable
        return out;
    }

    /** The process dies: nothing is flushed, trimmed or closed; only the dir locks are let go so
     *  the next LogManager in this JVM can take them (an OS releases them with the process). */
    ObjectNode halt() {
        if (manager != null) {
            for (Object lock : Scala.items(Scala.field(manager, LogManager.class, "dirLocks"))) {
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
     *  {@code dirLocks}) throws ClosedChannelException. */
    private static void destroy(Object lock) {
        try {
            Scala.call(lock, "destroy");
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
        for (UnifiedLog log : logs()) {
            log.updateHighWatermark(log.logEndOffset());
        }
    }

    // --- steps on one partition ---------------------------------------------------------------

    /** getOrCreateLog(partition, isNew, isFuture, topic id): 3.7 adds the target dir's id (none). */
    ObjectNode create(String topic, int partition, int dir) {
        TopicPartition tp = new TopicPartition(topic, partition);
        manager.maybeUpdatePreferredLogDir(tp, dataDirs.get(dir % dataDirs.size()).getAbsolutePath());
        Scala.callFirst(manager, "getOrCreateLog", new Object[] {tp, false, false, Option.empty()});
        return JSON.createObjectNode();
    }

    /** A leader's end-transaction marker is written as the transaction coordinator's
     *  WriteTxnMarkers request writes it (origin COORDINATOR); any other leader append is a
     *  client's produce request (appendAsLeader's defaults). A follower's append carries the
     *  largest epoch of its batches from 3.9 (KAFKA-16990's signature); 4.0 and before 3.9 none. */
    ObjectNode append(UnifiedLog log, byte[] data, boolean leader, int leaderEpoch) {
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(data));
        boolean marker = records.batches().iterator().hasNext() && records.batches().iterator().next().isControlBatch();
        Object info;
        if (!leader) {
            info = Scala.callFirst(log, "appendAsFollower", new Object[] {records, leaderEpoch}, new Object[] {records});
        } else if (marker) {
            Object coordinator = Scala.constant(Scala.classOf(STORAGE + "AppendOrigin", "kafka.log.AppendOrigin"), "COORDINATOR", "Coordinator");
            info = Scala.call(log, "appendAsLeader", records, leaderEpoch, coordinator);
        } else {
            info = Scala.call(log, "appendAsLeader", records, leaderEpoch);
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("first", firstOffset(info));
        out.put("last", (Long) Scala.member(info, "lastOffset"));
        return out;
    }

    /** UnifiedLog.roll(expectedNextOffset = None). */
    ObjectNode roll(UnifiedLog log) {
        Object rolled = Scala.call(log, "roll", Option.empty());
        return JSON.createObjectNode().put("base", (Long) Scala.member(rolled, "baseOffset"));
    }

    /** A fetch bounded by {@code maxOffset} the way a follower's high watermark bounds it (§4.5). */
    ObjectNode read(UnifiedLog log, long offset, int maxBytes, Long maxOffset, boolean minOne) throws IOException {
        String isolation = "LOG_END";
        if (maxOffset != null) {
            if (maxOffset < log.logStartOffset() || maxOffset > log.logEndOffset()) {
                throw new OffsetOutOfRangeException("max offset " + maxOffset + " outside the log");
            }
            log.updateHighWatermark(maxOffset);
            isolation = "HIGH_WATERMARK";
        }
        try {
            Object info = Scala.call(log, "read", offset, maxBytes, isolation(isolation), minOne);
            return JSON.createObjectNode().put("bytes", HEX.formatHex(bytesOf((Records) Scala.member(info, "records"))));
        } finally {
            log.updateHighWatermark(log.logEndOffset());
        }
    }

    /** A consumer's fetch at read_committed: up to the last stable offset, with the aborted
     *  transactions the fetched range overlaps (null: the fetch answered none at all). */
    ObjectNode readCommitted(UnifiedLog log, long offset, int maxBytes, boolean minOne) throws IOException {
        Object info = Scala.call(log, "read", offset, maxBytes, isolation("TXN_COMMITTED"), minOne);
        ObjectNode out = JSON.createObjectNode().put("bytes", HEX.formatHex(bytesOf((Records) Scala.member(info, "records"))));
        List<Object> aborted = Scala.items(Scala.member(info, "abortedTransactions"));
        if (aborted.isEmpty()) {
            out.putNull("aborted");
        } else {
            ArrayNode list = out.putArray("aborted");
            for (Object t : Scala.items(aborted.get(0))) {
                list.addArray().add((Long) Scala.member(t, "producerId")).add((Long) Scala.member(t, "firstOffset"));
            }
        }
        return out;
    }

    /** FetchIsolation: the broker's Scala objects up to 3.4 (FetchLogEnd, ...), kafka-storage's
     *  enum in 3.5 to 3.9, server-common's in 4.0. */
    private static Object isolation(String name) {
        Class<?> type = Scala.classOf("org.apache.kafka.server.storage.log.FetchIsolation", STORAGE + "FetchIsolation",
                "kafka.server.FetchIsolation");
        String scala = switch (name) {
            case "LOG_END" -> "FetchLogEnd";
            case "HIGH_WATERMARK" -> "FetchHighWatermark";
            default -> "FetchTxnCommitted";
        };
        return Scala.constant(type, name, scala);
    }

    /** fetchOffsetByTimestamp: 3.6 adds the remote log manager (none); 4.0 answers an
     *  OffsetResultHolder, before an Option of the timestamp and offset. */
    ObjectNode offsetForTimestamp(UnifiedLog log, long timestamp) {
        Object answer = Scala.callFirst(log, "fetchOffsetByTimestamp", new Object[] {timestamp, Option.empty()}, new Object[] {timestamp});
        if (!(answer instanceof Option<?>)) {
            Object error = Scala.items(Scala.member(answer, "maybeOffsetsError"));
            if (!((List<?>) error).isEmpty()) {
                throw (RuntimeException) ((List<?>) error).get(0);
            }
            answer = Scala.member(answer, "timestampAndOffsetOpt");
        }
        List<Object> found = Scala.items(answer);
        ObjectNode out = JSON.createObjectNode();
        if (found.isEmpty()) {
            out.putNull("found");
        } else {
            FileRecords.TimestampAndOffset t = (FileRecords.TimestampAndOffset) found.get(0);
            out.putArray("found").add(t.timestamp).add(t.offset);
        }
        return out;
    }

    ObjectNode truncate(UnifiedLog log, long offset) {
        boolean truncated = offset < log.logEndOffset();
        if (offset < 0) {
            log.truncateTo(offset); // Kafka's own refusal
        }
        manager.truncateTo(scalaMap(log.topicPartition(), offset), false);
        return JSON.createObjectNode().put("truncated", truncated);
    }

    /** truncateFullyAndStartAt(partition, offset, isFuture): 3.6 adds the log start offset to keep (none). */
    ObjectNode truncateFully(UnifiedLog log, long offset) {
        Scala.call(manager, "truncateFullyAndStartAt", log.topicPartition(), offset, false);
        return JSON.createObjectNode();
    }

    /** Partition.deleteRecordsOnLeader: −1 is the high watermark, another negative offset is refused. */
    ObjectNode deleteRecords(UnifiedLog log, long offset) {
        long converted = offset == -1 ? log.highWatermark() : offset;
        if (converted < 0) {
            throw new OffsetOutOfRangeException("The offset " + converted + " for partition " + log.topicPartition() + " is not valid");
        }
        Class<?> reasons = Scala.classOf(STORAGE + "LogStartOffsetIncrementReason", "kafka.log.LogStartOffsetIncrementReason");
        Scala.call(log, "maybeIncrementLogStartOffset", converted, Scala.constant(reasons, "ClientRecordDeletion", "ClientRecordDeletion"));
        return JSON.createObjectNode().put("log_start_offset", log.logStartOffset());
    }

    /** The harness's precondition (the step's offset lies within the log), then Kafka's flush of
     *  the offsets below it: flushUptoOffsetExclusive from 3.4, flush(offset) before. */
    ObjectNode flush(UnifiedLog log, Long offset) {
        long to = offset == null ? log.logEndOffset() : offset;
        if (to < 0 || to > log.logEndOffset()) {
            throw new OffsetOutOfRangeException("cannot flush to " + to + ": the log ends at " + log.logEndOffset());
        }
        Scala.call(log, Scala.has(log, "flushUptoOffsetExclusive") ? "flushUptoOffsetExclusive" : "flush", to);
        return JSON.createObjectNode();
    }

    ObjectNode retention() {
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
        Option<UnifiedLog> log = manager.getLog(new TopicPartition(topic, partition), false);
        if (log.isEmpty()) {
            throw new UnknownTopicOrPartitionException(topic + "-" + partition + " has no log");
        }
        return log.get();
    }

    // --- observations -------------------------------------------------------------------------

    ObjectNode state() {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode parts = out.putObject("partitions");
        for (UnifiedLog log : sortedLogs()) {
            ObjectNode p = parts.putObject(keyOf(log));
            p.put("log_start_offset", log.logStartOffset());
            p.put("log_end_offset", log.logEndOffset());
            p.put("recovery_point", log.recoveryPoint());
            ArrayNode segments = p.putArray("segments");
            for (Object s : segments(log)) {
                File file = (File) Scala.member(Scala.member(s, "log"), "file");
                segments.addArray().add((Long) Scala.member(s, "baseOffset")).add((Integer) Scala.member(s, "size")).add(file.getName());
            }
            ArrayNode epochs = p.putArray("epochs");
            for (Object cache : Scala.items(optional(Scala.call(log, "leaderEpochCache")))) {
                for (Object e : Scala.items(Scala.member(cache, "epochEntries"))) {
                    epochs.addArray().add((Integer) Scala.member(e, "epoch")).add((Long) Scala.member(e, "startOffset"));
                }
            }
            producers(p.putArray("producers"), Scala.member(Scala.call(log, "producerStateManager"), "activeProducers"));
        }
        return out;
    }

    /** The producer state in memory, one snapshot entry per producer, by id: what a snapshot written
     *  now would hold (the last batch's sequence, offset and delta; -1, -1, 0 without a batch).
     *  activeProducers is a Scala map of the broker's ProducerStateEntry up to 3.4, a Java map of
     *  kafka-storage's after. */
    private static void producers(ArrayNode out, Object activeProducers) {
        List<Object> entries = new ArrayList<>();
        if (activeProducers instanceof scala.collection.Map<?, ?> scala) {
            entries.addAll(Scala.items(scala.values()));
        } else {
            entries.addAll(((Map<?, ?>) activeProducers).values());
        }
        entries.sort(Comparator.comparingLong(e -> (Long) Scala.member(e, "producerId")));
        for (Object e : entries) {
            List<Object> batches = Scala.items(Scala.member(e, "batchMetadata"));
            Object last = batches.isEmpty() ? null : batches.get(batches.size() - 1);
            List<Object> txn = Scala.items(Scala.member(e, "currentTxnFirstOffset"));
            out.addArray().add((Long) Scala.member(e, "producerId")).add((Short) Scala.member(e, "producerEpoch"))
                    .add(last == null ? -1 : (Integer) Scala.member(last, "lastSeq"))
                    .add(last == null ? -1L : (Long) Scala.member(last, "lastOffset"))
                    .add(last == null ? 0 : (Integer) Scala.member(last, "offsetDelta"))
                    .add((Long) Scala.member(e, "lastTimestamp")).add((Integer) Scala.member(e, "coordinatorEpoch"))
                    .add(txn.isEmpty() ? -1L : (Long) txn.get(0));
        }
    }

    /** The entries of every segment whose two indexes are materialised (reading an index that is
     *  not would materialise it, which changes what Kafka does next: KAFKA-7283). */
    ObjectNode indexEntries() {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode segs = out.putObject("segments");
        for (UnifiedLog log : sortedLogs()) {
            List<Object> segments = segments(log);
            for (int i = 0; i < segments.size(); i++) {
                Object s = segments.get(i);
                if (materialised(s, "lazyOffsetIndex") && materialised(s, "lazyTimeIndex")) {
                    long end = i + 1 < segments.size() ? (Long) Scala.member(segments.get(i + 1), "baseOffset") : log.logEndOffset();
                    indexEntry(segs.putObject(keyOf(log) + "/" + Scala.member(s, "baseOffset")), s, i == segments.size() - 1, end);
                }
            }
        }
        return out;
    }

    private static void indexEntry(ObjectNode e, Object segment, boolean active, long end) {
        ArrayNode offsets = e.putArray("offsets");
        Object oi = Scala.member(segment, "offsetIndex");
        for (int k = 0; k < (Integer) Scala.member(oi, "entries"); k++) {
            Object op = Scala.call(oi, "entry", k);
            offsets.addArray().add((Long) Scala.member(op, "offset")).add((Integer) Scala.member(op, "position"));
        }
        ArrayNode times = e.putArray("times");
        Object ti = Scala.member(segment, "timeIndex");
        for (int k = 0; k < (Integer) Scala.member(ti, "entries"); k++) {
            Object to = Scala.call(ti, "entry", k);
            times.addArray().add((Long) Scala.member(to, "timestamp")).add((Long) Scala.member(to, "offset"));
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

    private List<UnifiedLog> logs() {
        return Scala.list(manager.allLogs());
    }

    private List<UnifiedLog> sortedLogs() {
        List<UnifiedLog> logs = logs();
        logs.sort(Comparator.comparing((UnifiedLog l) -> l.topicPartition().topic())
                .thenComparingInt(l -> l.topicPartition().partition()));
        return logs;
    }

    /** UnifiedLog.logSegments: a Scala Iterable up to 3.6, a Java Collection from 3.7. */
    private static List<Object> segments(UnifiedLog log) {
        return Scala.items(Scala.call(log, "logSegments"));
    }

    /** The leader-epoch cache: an Option up to 3.9, always there in 4.0. */
    private static Object optional(Object cache) {
        return cache instanceof Option<?> || cache == null ? cache : Option.apply(cache);
    }

    private static String keyOf(UnifiedLog log) {
        return log.parentDirFile().getName() + "/" + log.dir().getName();
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
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** The offset of LogAppendInfo.firstOffset: an Option of a LogOffsetMetadata up to 3.4 (none: -1),
     *  a long from 3.5 (-1 when none). */
    private static long firstOffset(Object info) {
        Object first = Scala.member(info, "firstOffset");
        if (first instanceof Long offset) {
            return offset;
        }
        List<Object> some = Scala.items(first);
        return some.isEmpty() ? -1 : (Long) Scala.member(some.get(0), "messageOffset");
    }

    /** Whether a segment's index object exists yet: its LazyIndex's wrapper is an IndexValue. */
    private static boolean materialised(Object segment, String lazyField) {
        Object lazy = Scala.field(segment, segment.getClass(), lazyField);
        for (Class<?> c = lazy.getClass(); c != null; c = c.getSuperclass()) {
            for (java.lang.reflect.Field f : c.getDeclaredFields()) {
                if (f.getName().endsWith("indexWrapper")) {
                    return Scala.field(lazy, c, "indexWrapper").getClass().getName().endsWith("IndexValue");
                }
            }
        }
        throw new IllegalStateException(lazy.getClass().getName() + " of Kafka " + Release.version() + " holds no index wrapper");
    }

    private static scala.collection.immutable.Map<TopicPartition, Object> scalaMap(TopicPartition tp, long offset) {
        return scala.collection.immutable.Map$.MODULE$.<TopicPartition, Object>empty().updated(tp, offset);
    }

    /** The arguments in order, the items of an Object[] among them spliced in. */
    private static Object[] flat(Object... parts) {
        List<Object> all = new ArrayList<>();
        for (Object part : parts) {
            if (part instanceof Object[] items) {
                all.addAll(Arrays.asList(items));
            } else {
                all.add(part);
            }
        }
        return all.toArray();
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
