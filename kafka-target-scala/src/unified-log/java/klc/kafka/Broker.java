package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import kafka.log.LogManager;
import kafka.log.UnifiedLog;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;

/**
 * The {@link Generation} of Kafka 3.1–4.0: the broker's Scala LogManager, its partitions
 * {@code kafka.log.UnifiedLog}. Between 3.1 and 4.0 the classes around UnifiedLog moved from the
 * broker's {@code kafka.log} and {@code kafka.server} into kafka-storage and server-common (3.5 to
 * 4.0): they are reached by name ({@link Scala#classOf}), and calls whose signature changed go
 * through {@link Scala#callFirst}, newest release first.
 */
final class Broker extends ScalaGeneration<UnifiedLog> {
    private static final HexFormat HEX = HexFormat.of();
    private static final String STORAGE = "org.apache.kafka.storage.internals.log.";
    private OptionalLong previousEpoch; // read at the last startup; null: this release reads none
    /** transactional.id.expiration.ms's default, which LogManager.apply passes as maxPidExpirationMs up to 3.3. */
    private static final int MAX_PID_EXPIRATION_MS = 7 * 24 * 3600 * 1000;
    /** From 3.4 (KIP-854): producer.id.expiration.ms, transaction.max.timeout.ms and
     *  producer.id.expiration.check.interval.ms, at their defaults. */
    private static final int PRODUCER_ID_EXPIRATION_MS = 86_400_000;
    private static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;
    private static final int PRODUCER_ID_EXPIRATION_CHECK_MS = 600_000;
    /** keepPartitionMetadataFile: a broker whose protocol uses topic ids keeps partition.metadata. */
    private static final boolean KEEP_PARTITION_METADATA = true;

    private final Object logConfig;
    private Object failures;

    Broker(JsonNode request) {
        super(request, config -> kafkaConfig(config, configNames(), " (KIP-937 split it in 3.6)"));
        this.logConfig = logConfig(topicConfig); // Kafka refuses a bad value here
    }

    /** LogConfig: the broker's Scala case class up to 3.4 (props, overridden configs), kafka-storage's after. */
    @Override
    protected Object logConfig(Properties config) {
        Class<?> type = Scala.classOf(STORAGE + "LogConfig", "kafka.log.LogConfig");
        return Scala.constructFirst(type, new Object[] {config}, new Object[] {config, scala.collection.immutable.Set$.MODULE$.empty()});
    }

    /** UnifiedLog.updateConfig(newConfig), which answers the config it replaced. */
    @Override
    protected void updateConfig(UnifiedLog log, Object config, Set<String> updated) {
        Scala.call(log, "updateConfig", config);
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
            throw new AdapterFailure(e);
        }
    }

    // --- the broker's life ------------------------------------------------------------------

    @Override
    protected Startup.Step startManager() {
        failures = Scala.constructFirst(Scala.classOf(STORAGE + "LogDirFailureChannel", "kafka.server.LogDirFailureChannel"),
                new Object[] {dataDirs.size()});
        return () -> {
            manager = newLogManager(failures);
            previousEpoch = readBrokerEpoch(manager);
            Scala.callFirst(manager, "startup", new Object[] {scala.collection.immutable.Set$.MODULE$.empty()});
        };
    }

    /** What BrokerServer reads before the LogManager's startup (3.7+, KIP-966); null before 3.7,
     *  whose marker holds nothing. */
    private static OptionalLong readBrokerEpoch(LogManager manager) {
        try {
            return (OptionalLong) manager.getClass().getMethod("readBrokerEpochFromCleanShutdownFiles").invoke(manager);
        } catch (NoSuchMethodException before37) {
            return null;
        } catch (ReflectiveOperationException e) {
            throw new AdapterFailure(e);
        }
    }

    @Override
    protected OptionalLong previousBrokerEpoch() {
        return previousEpoch == null ? super.previousBrokerEpoch() : previousEpoch;
    }

    /** LogManager's constructor: 3.9 and 4.0 end with the initial task delay (0 here, as the
     *  4.x adapter has it) and 4.0 drops the inter-broker protocol; 3.6 adds whether remote storage
     *  is enabled (no); 3.4 replaces maxPidExpirationMs with the transaction timeout, the producer
     *  state config and its check interval (KIP-854); 3.2 and 3.3 take the transaction timeout
     *  before maxPidExpirationMs; 3.1 takes an ApiVersion (as 3.2 does), later releases a
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
        Object[] v32 = flat(head, MAX_TRANSACTION_TIMEOUT_MS, MAX_PID_EXPIRATION_MS, ibp, tail);
        Object[] v31 = flat(head, MAX_PID_EXPIRATION_MS, ibp, tail);
        return Scala.constructFirst(LogManager.class, v40, v39, v36, v34, v32, v31);
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
        throw new AdapterFailure("the LogManager of Kafka " + Release.version() + " takes no BrokerTopicStats");
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

    @Override
    public boolean loadedIn(TopicPartition tp, File dataDir) {
        Option<UnifiedLog> log = manager.getLog(tp, false);
        return log.isDefined() && log.get().parentDirFile().getAbsoluteFile().equals(dataDir);
    }

    // --- -delete, -future and -stray directories (the same LogManager calls as 4.x's) ----------

    /** A future log is not served: futureLog reaches it (allLogs holds both). */
    @Override
    protected List<UnifiedLog> logs() {
        List<UnifiedLog> current = super.logs();
        current.removeIf(UnifiedLog::isFuture);
        return current;
    }

    @Override
    protected Optional<UnifiedLog> futureLog(UnifiedLog current) {
        Option<UnifiedLog> future = manager.getLog(current.topicPartition(), true);
        return future.isDefined() ? Optional.of(future.get()) : Optional.empty();
    }

    @Override
    public boolean futureLoadedFrom(TopicPartition tp, File dir) {
        Option<UnifiedLog> log = manager.getLog(tp, true);
        return log.isDefined() && log.get().dir().getAbsoluteFile().equals(dir.getAbsoluteFile());
    }

    /** asyncDelete(tp) with Scala's default arguments (current log, checkpoints written; 3.6 adds
     *  whether it is stray: no): renamed -delete, queued; the new name, or null. */
    @Override
    protected String asyncDelete(TopicPartition tp) {
        Option<?> removed = (Option<?>) Scala.callFirst(manager, "asyncDelete", new Object[] {tp});
        return removed.isDefined() ? ((UnifiedLog) removed.get()).dir().getName() : null;
    }

    @Override
    protected boolean listsDeleteDirs() {
        return true;
    }

    @Override
    protected boolean listsMovedDirs() {
        return true;
    }

    /** -stray directories are Kafka's from 3.6 (KRaft's stray replicas): before, such a name is
     *  not one LogManager knows. */
    @Override
    protected boolean listsStrayDirs() {
        return STRAY_DIRS;
    }

    /** From 3.9 LogManager takes the initial delay of its tasks (log.initial.task.delay.ms, 0 here);
     *  before, kafka-delete-logs first runs a fixed 30 s after the startup. */
    @Override
    protected boolean loadsDeleteDirsAsModelled() {
        return java.util.Arrays.stream(LogManager.class.getConstructors()).anyMatch(c -> {
            Class<?>[] types = c.getParameterTypes();
            return types[types.length - 1] == long.class;
        });
    }

    private static final boolean STRAY_DIRS = java.util.Arrays.stream(LogManager.class.getMethods())
            .anyMatch(m -> m.getName().equals("asyncDelete") && m.getParameterCount() == 4);

    /** replaceCurrentWithFutureLog(tp); the -delete name the current log's directory took. A future
     *  log in its current log's data dir: unsupported, as on 4.x (Kafka's rename over the current
     *  dir fails and takes the dir offline, not modelled). */
    @Override
    protected String replaceCurrentWithFutureLog(TopicPartition tp) {
        Option<UnifiedLog> current = manager.getLog(tp, false);
        Option<UnifiedLog> future = manager.getLog(tp, true);
        if (current.isDefined() && future.isDefined() && current.get().parentDir().equals(future.get().parentDir())) {
            throw new Unsupported("replace_current_with_future: the future log is in its current log's data dir");
        }
        Scala.callFirst(manager, "replaceCurrentWithFutureLog", new Object[] {tp});
        return current.get().dir().getName(); // renamed -delete by the call (the current replica is there: it checks)
    }

    @Override
    protected boolean queuedOffline(String dataDir) {
        return (Boolean) Scala.call(failures, "hasOfflineLogDir", dataDir);
    }

    @Override
    protected void highWatermarkAtTheEnd(UnifiedLog log) {
        log.updateHighWatermark(log.logEndOffset());
    }

    @Override
    protected long highWatermark(UnifiedLog log) {
        return log.highWatermark();
    }

    @Override
    protected TopicPartition parseTopicPartitionName(File dir) {
        return UnifiedLog.parseTopicPartitionName(dir);
    }

    // --- steps on one partition ---------------------------------------------------------------

    /** getOrCreateLog(partition, isNew, isFuture, topic id): 3.7 adds the target dir's id (none). */
    @Override
    protected void createLog(TopicPartition tp, String dataDir) {
        manager.maybeUpdatePreferredLogDir(tp, dataDir);
        Scala.callFirst(manager, "getOrCreateLog", new Object[] {tp, false, false, Option.empty()});
    }


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
    @Override
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
    @Override
    ObjectNode roll(UnifiedLog log) {
        Object rolled = Scala.call(log, "roll", Option.empty());
        return JSON.createObjectNode().put("base", (Long) Scala.member(rolled, "baseOffset"));
    }

    @Override
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

    @Override
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
    @Override
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

    @Override
    protected void incrementLogStartOffset(UnifiedLog log, long offset) {
        Class<?> reasons = Scala.classOf(STORAGE + "LogStartOffsetIncrementReason", "kafka.log.LogStartOffsetIncrementReason");
        Scala.call(log, "maybeIncrementLogStartOffset", offset, Scala.constant(reasons, "ClientRecordDeletion", "ClientRecordDeletion"));
    }

    /** Kafka's flush of the offsets below one: flushUptoOffsetExclusive from 3.4, flush(offset) before. */
    @Override
    protected void flushBelow(UnifiedLog log, long offset) {
        Scala.call(log, Scala.has(log, "flushUptoOffsetExclusive") ? "flushUptoOffsetExclusive" : "flush", offset);
    }

    // --- observations -------------------------------------------------------------------------

    @Override
    protected String keyOf(UnifiedLog log) {
        return log.parentDirFile().getName() + "/" + log.dir().getName();
    }

    @Override
    protected void describe(UnifiedLog log, ObjectNode p) {
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

    /** Kafka's own cleaner, one round ({@link ScalaCleanerRound}). */
    @Override
    ObjectNode clean(UnifiedLog log) {
        return ScalaCleanerRound.clean(log, clock);
    }

    /** The log's PeriodicProducerExpirationCheck: its producer state's removeExpiredProducers(now),
     *  which the task runs under the log's lock (one thread here). */
    @Override
    protected int expireProducers(UnifiedLog log) {
        if (producerStateManagerConfig() == null) {
            throw new Unsupported("expire_producers: before 3.4 (KIP-854) Kafka " + Release.version()
                    + " forgets producers after transactional.id.expiration.ms (7 days), not producer.id.expiration.ms");
        }
        Object producers = Scala.call(log, "producerStateManager");
        int before = count(Scala.member(producers, "activeProducers"));
        Scala.call(producers, "removeExpiredProducers", clock.milliseconds());
        return before - count(Scala.member(producers, "activeProducers"));
    }

    /** activeProducers' size: a Scala map up to 3.4, a Java map after. */
    private static int count(Object activeProducers) {
        return activeProducers instanceof scala.collection.Map<?, ?> scala ? scala.size() : ((Map<?, ?>) activeProducers).size();
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

    /** The leader-epoch cache: an Option up to 3.9, always there in 4.0. */
    private static Object optional(Object cache) {
        return cache instanceof Option<?> || cache == null ? cache : Option.apply(cache);
    }

    /** Whether a segment's index object exists yet: its LazyIndex's wrapper is an IndexValue. */
    @Override
    protected boolean materialised(Object segment, String lazyField) {
        Object lazy = Scala.field(segment, segment.getClass(), lazyField);
        for (Class<?> c = lazy.getClass(); c != null; c = c.getSuperclass()) {
            for (java.lang.reflect.Field f : c.getDeclaredFields()) {
                if (f.getName().endsWith("indexWrapper")) {
                    return Scala.field(lazy, c, "indexWrapper").getClass().getName().endsWith("IndexValue");
                }
            }
        }
        throw new AdapterFailure(lazy.getClass().getName() + " of Kafka " + Release.version() + " holds no index wrapper");
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
}
