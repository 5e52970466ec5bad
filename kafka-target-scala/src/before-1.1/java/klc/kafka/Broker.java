package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import kafka.log.CleanerConfig;
import kafka.log.Log;
import kafka.log.LogAppendInfo;
import kafka.log.LogConfig;
import kafka.log.LogManager;
import kafka.log.LogSegment;
import kafka.log.TimestampOffset;
import kafka.server.FetchDataInfo;
import kafka.server.epoch.EpochEntry;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.requests.IsolationLevel;

import scala.Option;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * The {@link Generation} of Kafka 0.11 and 1.0: the Scala {@code kafka.log.Log} under the broker's
 * LogManager, before 1.1 reshaped its API (KIP-113's future replicas: {@code isFuture} on getLog and
 * truncateTo, getOrCreateLog). What differs between 0.11 and 1.0 is called by name ({@link Scala}):
 * 1.0 brought the log-dir failure channel (KIP-112) and a new log in a chosen dir
 * ({@code updatePreferredLogDir}, KIP-113); 0.11 places a new log itself and takes no dir offline.
 */
final class Broker extends ScalaGeneration<Log> {
    /** The broker's default transactional.id.expiration.ms, which LogManager.apply passes as maxPidExpirationMs. */
    private static final int MAX_PID_EXPIRATION_MS = 7 * 24 * 3600 * 1000;
    private static final String FAILURE_CHANNEL = "kafka.server.LogDirFailureChannel";

    private final LogConfig logConfig;
    /** 1.0's LogDirFailureChannel; null on 0.11, which has none. */
    private Object failures;

    Broker(JsonNode request) {
        super(request, config -> kafkaConfig(config, Scala.list(LogConfig.configNames()), ""));
        this.logConfig = (LogConfig) logConfig(topicConfig); // Kafka refuses a bad value here
    }

    @Override
    protected Object logConfig(Properties config) {
        return LogConfig.apply(config);
    }

    /** Up to 1.0 a topic's new config is assigned to each of its logs (TopicConfigHandler: {@code log.config = …}). */
    @Override
    protected void updateConfig(Log log, Object config, Set<String> updated) {
        log.config_$eq((LogConfig) config);
    }

    // --- the broker's life ------------------------------------------------------------------

    /** The LogManager's constructor loads the logs; one that threw is never seen here. */
    @Override
    protected Startup.Step startManager() {
        failures = Scala.hasClass(FAILURE_CHANNEL) ? Scala.constructFirst(classOf(FAILURE_CHANNEL), new Object[] {dataDirs.size()}) : null;
        return () -> {
            manager = newLogManager();
            manager.startup();
        };
    }

    /** LogManager's constructor: 1.0 takes the dirs as a Seq, the dirs offline at start (none) and
     *  the failure channel; 0.11 an array of dirs. */
    private LogManager newLogManager() {
        CleanerConfig noCleaner = new CleanerConfig(1, 4L << 20, 0.9, 1 << 20, 32 << 20, Double.MAX_VALUE, 15_000L, false, "MD5");
        Object brokerState = Scala.newInstance("kafka.server.BrokerState");
        Object topicStats = Scala.newInstance("kafka.server.BrokerTopicStats");
        Object noOverrides = scala.collection.immutable.Map$.MODULE$.empty();
        long never = Long.MAX_VALUE;
        Object[] v10 = {Scala.seq(dataDirs), Scala.seq(List.<File>of()), noOverrides, logConfig, noCleaner, recoveryThreads,
            never, never, never, never, MAX_PID_EXPIRATION_MS, scheduler, brokerState, topicStats, failures, clock};
        Object[] v011 = {dataDirs.toArray(new File[0]), noOverrides, logConfig, noCleaner, recoveryThreads,
            never, never, never, never, MAX_PID_EXPIRATION_MS, scheduler, brokerState, topicStats, clock};
        return Scala.constructFirst(LogManager.class, v10, v011);
    }

    @Override
    public boolean loadedIn(TopicPartition tp, File dataDir) {
        if (manager == null) {
            return false; // the constructor loads: one that threw holds no log
        }
        return findLog(tp).map(log -> log.dir().getAbsoluteFile().getParentFile().equals(dataDir)).orElse(false);
    }

    /** 0.11 takes no dir offline: an I/O error of the load fails the broker's startup. */
    @Override
    public boolean online(File dataDir) {
        return failures == null || super.online(dataDir);
    }

    /** takeNextOfflineLogDir blocks: read the channel's map. */
    @Override
    protected boolean queuedOffline(String dataDir) {
        return failures != null
                && ((Map<?, ?>) Scala.field(failures, failures.getClass(), "offlineLogDirs")).containsKey(dataDir);
    }

    /** One replica: the high watermark (in the Replica, which this adapter does not build) is the
     *  log end, and a read takes its bound as an offset. */
    @Override
    protected void highWatermarkAtTheEnd(Log log) {
    }

    @Override
    protected long highWatermark(Log log) {
        return log.logEndOffset();
    }

    /** Kafka up to 1.0 passes over "-delete" dirs (and has no future replicas yet; "-future" is 1.1's). */
    @Override
    protected boolean ignored(String name) {
        return name.endsWith("-delete") || name.endsWith("-future");
    }

    @Override
    protected TopicPartition parseTopicPartitionName(File dir) {
        return Log.parseTopicPartitionName(dir);
    }

    // --- steps on one partition ---------------------------------------------------------------

    /** 1.0: updatePreferredLogDir, then getOrCreateLog(partition, config, isNew); 0.11's createLog
     *  puts a new log in the dir Kafka picks (nextLogDir), so a create names its dir only where that
     *  is Kafka's pick. */
    @Override
    protected void createLog(TopicPartition tp, String dataDir) {
        if (Scala.has(manager, "getOrCreateLog")) {
            Scala.call(manager, "updatePreferredLogDir", tp, dataDir);
            Scala.call(manager, "getOrCreateLog", tp, logConfig);
            return;
        }
        boolean exists = findLog(tp).isPresent();
        String picked = exists ? dataDir : nextLogDir();
        if (!dataDir.equals(picked)) {
            throw new Unsupported("create in " + new File(dataDir).getName() + ": Kafka " + Release.version()
                    + " puts a new log in the dir it picks, here " + new File(picked).getName()
                    + " (a preferred log dir came with 1.0, KIP-113)");
        }
        Log log = (Log) Scala.call(manager, "createLog", tp, logConfig);
        if (!exists && !log.dir().getAbsoluteFile().getParent().equals(picked)) {
            // an Error: the adapter's fault, a harness error, never a verdict (Main.describe)
            throw new AssertionError("Kafka " + Release.version() + " put " + tp + " in " + log.dir().getParent()
                    + ", not in " + picked + " as this adapter predicted: its nextLogDir is not the one it models");
        }
    }

    /**
     * 0.11's LogManager.nextLogDir: the only dir if there is one; else the dir holding the fewest
     * logs, the first in the broker's order among equals (its counts, a Scala immutable map of up to
     * four entries, keep that order before a stable sort). With five or more dirs the map is hashed
     * and the order is not modelled here.
     */
    private String nextLogDir() {
        if (dataDirs.size() > 4) {
            throw new Unsupported("create with " + dataDirs.size() + " data dirs: Kafka " + Release.version()
                    + " picks a new log's dir by the order of a hashed map past four dirs");
        }
        Map<String, Integer> counts = new java.util.LinkedHashMap<>();
        for (File dir : dataDirs) {
            counts.put(dir.getAbsolutePath(), 0);
        }
        for (Log log : logs()) {
            counts.merge(log.dir().getAbsoluteFile().getParent(), 1, Integer::sum);
        }
        String best = null;
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            if (best == null || e.getValue() < counts.get(best)) {
                best = e.getKey();
            }
        }
        return best;
    }

    /** A leader append as a produce request makes it (appendAsLeader's default: from a client). */
    @Override
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
        out.put("first", info.firstOffset());
        out.put("last", info.lastOffset());
        return out;
    }

    /** Log.roll(expectedNextOffset), its default 0. */
    @Override
    ObjectNode roll(Log log) {
        LogSegment rolled = log.roll(log.roll$default$1());
        return JSON.createObjectNode().put("base", rolled.baseOffset());
    }

    /** Log.read takes the bound as an optional offset and the isolation level (uncommitted here). */
    @Override
    ObjectNode read(Log log, long offset, int maxBytes, Long maxOffset, boolean minOne) throws IOException {
        if (maxOffset != null && (maxOffset < log.logStartOffset() || maxOffset > log.logEndOffset())) {
            throw new OffsetOutOfRangeException("max offset " + maxOffset + " outside the log");
        }
        Option<Object> bound = maxOffset == null ? Option.empty() : Option.apply(maxOffset);
        FetchDataInfo info = log.read(offset, maxBytes, bound, minOne, IsolationLevel.READ_UNCOMMITTED);
        return JSON.createObjectNode().put("bytes", java.util.HexFormat.of().formatHex(bytesOf(info.records())));
    }

    @Override
    ObjectNode readCommitted(Log log, long offset, int maxBytes, boolean minOne) {
        throw new Unsupported("a read_committed fetch: this adapter does not read aborted transactions on Kafka "
                + Release.version() + " yet");
    }

    /** fetchOffsetsByTimestamp knows −1 (latest) and −2 (earliest); −3 came with 3.0 (KIP-734). */
    @Override
    ObjectNode offsetForTimestamp(Log log, long timestamp) {
        if (timestamp < -2) {
            throw new Unsupported("offset_for_timestamp " + timestamp + ": Kafka " + Release.version()
                    + " knows -1 (latest) and -2 (earliest) only; -3 (max timestamp) came with 3.0 (KIP-734)");
        }
        Option<TimestampOffset> found = log.fetchOffsetsByTimestamp(timestamp);
        ObjectNode out = JSON.createObjectNode();
        if (found.isEmpty()) {
            out.putNull("found");
        } else {
            out.putArray("found").add(found.get().timestamp()).add(found.get().offset());
        }
        return out;
    }

    @Override
    protected void incrementLogStartOffset(Log log, long offset) {
        log.maybeIncrementLogStartOffset(offset);
    }

    @Override
    protected void flushBelow(Log log, long offset) {
        log.flush(offset);
    }

    // --- observations -------------------------------------------------------------------------

    @Override
    protected String keyOf(Log log) {
        return log.dir().getAbsoluteFile().getParentFile().getName() + "/" + log.dir().getName();
    }

    @Override
    protected void describe(Log log, ObjectNode p) {
        ArrayNode segments = p.putArray("segments");
        for (LogSegment s : Scala.list(log.logSegments())) {
            segments.addArray().add(s.baseOffset()).add(s.size()).add(s.log().file().getName());
        }
        ArrayNode epochs = p.putArray("epochs");
        Object cache = log.leaderEpochCache();
        @SuppressWarnings("unchecked")
        scala.collection.Iterable<EpochEntry> entries = (scala.collection.Iterable<EpochEntry>) Scala.call(cache, "epochEntries");
        for (EpochEntry e : Scala.list(entries)) {
            epochs.addArray().add(e.epoch()).add(e.startOffset());
        }
    }

    /** Up to 2.2 every index is built with its segment. */
    @Override
    protected boolean materialised(Object segment, String lazyAccessor) {
        return true;
    }

    private static Class<?> classOf(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            throw new AdapterFailure(e);
        }
    }
}
