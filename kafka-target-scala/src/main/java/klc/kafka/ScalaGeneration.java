package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;

import kafka.log.LogManager;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Records;

import scala.Option;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Function;

/**
 * What the Scala generations share (Kafka 0.11 to 4.0): the broker's Scala {@code kafka.log.LogManager},
 * whose calls the two make alike, and the members of a log or a segment that keep their names
 * from {@code kafka.log.Log} (0.11 to 3.0) to {@code kafka.log.UnifiedLog} (3.1 to 4.0), reached by
 * name ({@link Scala}). What differs between them is each one's {@code Broker}.
 *
 * @param <L> kafka.log.Log or kafka.log.UnifiedLog
 */
abstract class ScalaGeneration<L> extends Generation<LogManager, L> {
    private static final String BEFORE_MAX = "message.timestamp.before.max.ms";
    private static final String AFTER_MAX = "message.timestamp.after.max.ms";
    private static final String CODEC = "compression.type";
    /** The broker epoch LogManager.shutdown writes into the clean-shutdown marker from 3.7 (KIP-966), as the model writes it. */
    private static final long BROKER_EPOCH = -1L;

    protected ScalaGeneration(JsonNode request, Function<Map<String, JsonNode>, Properties> kafkaConfig) {
        super(request, kafkaConfig);
    }

    /** The scenario's topic config as the release's LogConfig takes it: {@code known} its config
     *  names; {@code split} how the release came to split the timestamp bound (said when it cannot
     *  express two). */
    protected static Properties kafkaConfig(Map<String, JsonNode> config, List<String> known, String split) {
        Properties topicConfig = new Properties();
        config.forEach((key, value) -> topicConfig.put(key, value.asText()));
        expressTimestampBounds(topicConfig, known, split);
        expressCodec(topicConfig.getProperty(CODEC));
        for (String key : topicConfig.stringPropertyNames()) {
            if (!known.contains(key)) {
                throw new Unsupported("topic config " + key + ": Kafka " + Release.version() + " has no such config");
            }
        }
        return topicConfig;
    }

    /** A codec a release has no {@code CompressionType} of (zstd before 2.1, KIP-110): its LogConfig
     *  refuses the name, so the scenario is not expressible there (never a refusal judged). */
    private static void expressCodec(String codec) {
        if (codec == null || codec.equals("producer") || codec.equals("uncompressed")) {
            return;
        }
        try {
            CompressionType.forName(codec);
        } catch (IllegalArgumentException e) {
            throw new Unsupported(CODEC + " " + codec + ": Kafka " + Release.version() + " has no such codec");
        }
    }

    /** Up to 3.5 Kafka bounds a CreateTime by one message.timestamp.difference.max.ms either way of
     *  the broker's clock; 3.6 split it into a bound before and one after (KIP-937). Equal bounds are one. */
    private static void expressTimestampBounds(Properties topicConfig, List<String> known, String split) {
        String before = topicConfig.getProperty(BEFORE_MAX);
        String after = topicConfig.getProperty(AFTER_MAX);
        if ((before == null && after == null) || known.contains(BEFORE_MAX)) {
            return;
        }
        if (before == null || !before.equals(after)) {
            throw new Unsupported(BEFORE_MAX + " and " + AFTER_MAX + " unless equal: Kafka " + Release.version()
                    + " has one message.timestamp.difference.max.ms for both" + split);
        }
        topicConfig.remove(BEFORE_MAX);
        topicConfig.remove(AFTER_MAX);
        topicConfig.put("message.timestamp.difference.max.ms", before);
    }

    // --- the LogManager ---------------------------------------------------------------------

    /** A dir's failure handling (KIP-112) came with 1.0: the LogManager calls of it are made by
     *  name, so this class compiles against 0.11 too (whose Broker answers for them). */
    @Override
    public boolean online(File dataDir) {
        return (Boolean) Scala.call(manager, "isLogDirOnline", dataDir.getAbsolutePath());
    }

    /** A ZooKeeper broker halts only when no live dir is left. */
    @Override
    protected String haltsOn(File dataDir) {
        if (Scala.items(Scala.call(manager, "liveLogDirs")).size() == 1) {
            return "log dir " + dataDir.getName() + " failed, the last live one: the broker halts";
        }
        return null;
    }

    @Override
    protected void handleLogDirFailure(String dataDir) {
        Scala.call(manager, "handleLogDirFailure", dataDir);
    }

    /** LogManager.shutdown: from 3.7 it takes the broker epoch it writes into the marker (KIP-966). */
    @Override
    protected void stopManager() {
        Scala.callFirst(manager, "shutdown", new Object[] {BROKER_EPOCH}, new Object[0]);
    }

    /** Whether a log of {@code dir} is in LogManager's {@code logsToBeDeleted} queue (the
     *  generations that list {@code -delete} directories). */
    @Override
    public boolean queuedForDeletion(File dir) {
        return manager != null && DeletionQueue.holds(manager, dir);
    }

    /** Each dir lock let go as a dead process's is, its file kept ({@link DirLocks}). */
    @Override
    protected void releaseDirLocks() throws java.io.IOException {
        for (Object lock : Scala.items(Scala.field(manager, LogManager.class, "dirLocks"))) {
            DirLocks.letGo(lock);
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    protected List<L> logs() {
        return (List<L>) (List<?>) Scala.list(manager.allLogs());
    }

    /** Every log, future ones included (a future log without a current one too). */
    @Override
    @SuppressWarnings("unchecked")
    protected List<L> logsWithFutures() {
        return (List<L>) (List<?>) Scala.list(manager.allLogs());
    }

    /** getLog: 1.1 on also takes isFuture (KIP-113's future replica), false here. */
    @Override
    @SuppressWarnings("unchecked")
    protected Optional<L> findLog(TopicPartition tp) {
        Option<?> log = (Option<?>) Scala.callFirst(manager, "getLog", new Object[] {tp, false}, new Object[] {tp});
        return log.isEmpty() ? Optional.empty() : Optional.of((L) log.get());
    }

    /** truncateTo: 1.1 on also takes isFuture. */
    @Override
    protected void truncateTo(TopicPartition tp, long offset) {
        Object offsets = scala.collection.immutable.Map$.MODULE$.<TopicPartition, Object>empty().updated(tp, offset);
        Scala.callFirst(manager, "truncateTo", new Object[] {offsets, false}, new Object[] {offsets});
    }

    /** truncateFullyAndStartAt(partition, offset): 1.1 on also takes isFuture, 3.6 the log start
     *  offset to keep (none). */
    @Override
    protected void truncateFullyAndStartAt(TopicPartition tp, long offset) {
        Scala.callFirst(manager, "truncateFullyAndStartAt", new Object[] {tp, offset, false}, new Object[] {tp, offset});
    }

    /** checkpointLogRecoveryOffsets was checkpointRecoveryPointOffsets up to 0.11. */
    @Override
    protected void checkpointLogRecoveryAndStartOffsets() {
        Scala.call(manager, Scala.has(manager, "checkpointLogRecoveryOffsets") ? "checkpointLogRecoveryOffsets" : "checkpointRecoveryPointOffsets");
        Scala.call(manager, "checkpointLogStartOffsets");
    }

    // --- a log's and a segment's members, named alike in every Scala generation ---------------

    @Override
    protected TopicPartition topicPartition(L log) {
        return (TopicPartition) Scala.member(log, "topicPartition");
    }

    @Override
    protected long logStartOffset(L log) {
        return (Long) Scala.member(log, "logStartOffset");
    }

    @Override
    protected long logEndOffset(L log) {
        return (Long) Scala.member(log, "logEndOffset");
    }

    @Override
    protected long recoveryPoint(L log) {
        return (Long) Scala.member(log, "recoveryPoint");
    }

    @Override
    protected void truncateLog(L log, long offset) {
        Scala.call(log, "truncateTo", offset);
    }

    @Override
    protected int deleteOldSegments(L log) {
        return (Integer) Scala.member(log, "deleteOldSegments");
    }

    /** logSegments: a Scala Iterable up to 3.6, a Java Collection from 3.7. */
    @Override
    protected List<Object> segments(L log) {
        return Scala.items(Scala.call(log, "logSegments"));
    }

    @Override
    protected long baseOffset(Object segment) {
        return (Long) Scala.member(segment, "baseOffset");
    }

    /** A segment's offset index: {@code offsetIndex} from 1.1, {@code index} before. */
    @Override
    protected void indexEntries(Object segment, ArrayNode offsets, ArrayNode times) {
        Object oi = Scala.member(segment, Scala.has(segment, "offsetIndex") ? "offsetIndex" : "index");
        for (int k = 0; k < (Integer) Scala.member(oi, "entries"); k++) {
            Object op = Scala.call(oi, "entry", k);
            offsets.addArray().add((Long) Scala.member(op, "offset")).add((Integer) Scala.member(op, "position"));
        }
        Object ti = Scala.member(segment, "timeIndex");
        for (int k = 0; k < (Integer) Scala.member(ti, "entries"); k++) {
            Object to = Scala.call(ti, "entry", k);
            times.addArray().add((Long) Scala.member(to, "timestamp")).add((Long) Scala.member(to, "offset"));
        }
    }

    /** The offset of LogAppendInfo.firstOffset: a long in 1.1 and from 3.5 (−1 when none), an Option
     *  of a Long from 2.0 to 2.7, of a LogOffsetMetadata from 2.8 to 3.4; −1 when none. */
    protected static long firstOffset(Object info) {
        Object first = Scala.member(info, "firstOffset");
        if (first instanceof Long offset) {
            return offset;
        }
        List<Object> some = Scala.items(first);
        if (some.isEmpty()) {
            return -1;
        }
        Object v = some.get(0);
        return v instanceof Long offset ? offset : (Long) Scala.member(v, "messageOffset");
    }

    protected static byte[] bytesOf(Records records) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(records.sizeInBytes());
        if (records instanceof FileRecords file) {
            file.readInto(buffer, 0);
        } else if (records instanceof MemoryRecords memory) {
            buffer.put(memory.buffer().duplicate());
        } else {
            throw new AdapterFailure("records of type " + records.getClass().getName());
        }
        return buffer.array();
    }
}
