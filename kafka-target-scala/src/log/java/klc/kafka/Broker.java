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
import kafka.server.BrokerTopicStats;
import kafka.server.FetchDataInfo;
import kafka.server.LogDirFailureChannel;
import kafka.server.epoch.EpochEntry;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;

import scala.Function0;
import scala.Option;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * The {@link Generation} of Kafka 1.1 to 3.0: the Scala {@code kafka.log.Log} under the broker's
 * LogManager. Calls whose signature changed within these releases go through {@link Scala}.
 */
final class Broker extends ScalaGeneration<Log> {
    private static final HexFormat HEX = HexFormat.of();
    /** Kafka 2.x's default transactional.id.expiration.ms, which LogManager.apply passes as maxPidExpirationMs. */
    private static final int MAX_PID_EXPIRATION_MS = 7 * 24 * 3600 * 1000;
    /** keepPartitionMetadataFile (2.8): a 2.8 broker keeps partition.metadata (its IBP uses topic ids). */
    private static final boolean KEEP_PARTITION_METADATA = true;

    private final LogConfig logConfig;
    private LogDirFailureChannel failures;

    Broker(JsonNode request) {
        super(request, config -> kafkaConfig(config, Scala.list(LogConfig.configNames()), ""));
        this.logConfig = (LogConfig) logConfig(topicConfig); // Kafka refuses a bad value here
    }

    @Override
    protected Object logConfig(Properties config) {
        return LogConfig.apply(config, LogConfig.apply$default$2());
    }

    /** Log.updateConfig: 2.x up to 2.6 (1.1 on) takes the updated keys too (TopicConfigHandler
     *  passes the keys the topic's config sets), 2.7 on the config alone. */
    @Override
    protected void updateConfig(Log log, Object config, Set<String> updated) {
        scala.collection.mutable.HashSet<String> keys = new scala.collection.mutable.HashSet<>();
        for (String key : updated) {
            keys.add(key);
        }
        Scala.callFirst(log, "updateConfig", new Object[] {config}, new Object[] {keys, config});
    }

    // --- the broker's life ------------------------------------------------------------------

    /** Up to 2.7 the LogManager's constructor loads the logs; one that threw is never seen here:
     *  its dir locks leave this JVM's lock table when the garbage collector in halt() takes them. */
    @Override
    protected Startup.Step startManager() {
        failures = new LogDirFailureChannel(dataDirs.size());
        return () -> {
            manager = newLogManager(failures);
            startup();
        };
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

    @Override
    public boolean loadedIn(TopicPartition tp, File dataDir) {
        if (manager == null) {
            return false; // up to 2.7 the constructor loads: one that threw holds no log
        }
        Option<Log> log = manager.getLog(tp, false);
        return log.isDefined() && log.get().dir().getAbsoluteFile().getParentFile().equals(dataDir);
    }

    // --- -delete and -future directories (KIP-113's future replicas) ---------------------------

    /** Driven from 2.8: before, a startup that fails leaves no LogManager to ask which log loaded
     *  (the constructor loads, up to 2.7), a promotion's checkpoints differ up to 2.6, and a future
     *  dir's recovery point up to 2.5 — none of them modelled (docs/departures.md). */
    private static final boolean MOVES_AS_MODELLED = atLeast(2, 8);

    private static boolean atLeast(int major, int minor) {
        String[] v = Release.version().split("[.-]");
        int a = Integer.parseInt(v[0]);
        int b = Integer.parseInt(v[1]);
        return a > major || (a == major && b >= minor);
    }

    private static void refuseBefore28(String what) {
        if (!MOVES_AS_MODELLED) {
            throw new Unsupported(what + ": driven on Kafka 2.8 and later only, not on " + Release.version());
        }
    }

    /** A future log is not served: futureLog reaches it (allLogs holds both). */
    @Override
    protected List<Log> logs() {
        List<Log> current = new java.util.ArrayList<>(super.logs());
        current.removeIf(Log::isFuture);
        return current;
    }

    @Override
    protected java.util.Optional<Log> futureLog(Log current) {
        Option<Log> future = manager.getLog(current.topicPartition(), true);
        return future.isDefined() ? java.util.Optional.of(future.get()) : java.util.Optional.empty();
    }

    @Override
    public boolean futureLoadedFrom(TopicPartition tp, File dir) {
        Option<Log> log = manager == null ? Option.empty() : manager.getLog(tp, true);
        return log.isDefined() && log.get().dir().getAbsoluteFile().equals(dir.getAbsoluteFile());
    }

    /** asyncDelete(tp, isFuture = false): 2.8 adds checkpoint (true, Scala's default) and answers an
     *  Option; before, the removed log or null. Renamed -delete (the scenario's name, Log$'s
     *  logDeleteDirName woven: {@link DeleteDirNames}) and queued; the new name, or null. */
    @Override
    protected String asyncDelete(TopicPartition tp) {
        refuseBefore28("delete_partition");
        Object removed = Scala.callFirst(manager, "asyncDelete", new Object[] {tp, false, true}, new Object[] {tp, false});
        if (removed instanceof Option<?> option) {
            removed = option.isDefined() ? option.get() : null;
        }
        return removed == null ? null : ((Log) removed).dir().getName();
    }

    @Override
    protected boolean listsDeleteDirs() {
        return MOVES_AS_MODELLED;
    }

    @Override
    protected boolean listsMovedDirs() {
        return MOVES_AS_MODELLED;
    }

    /** -stray directories are Kafka's from 3.6 (KRaft's stray replicas). */
    @Override
    protected boolean listsStrayDirs() {
        return false;
    }

    /** kafka-delete-logs first runs a fixed 30 s after the startup (log.initial.task.delay.ms is 3.9's):
     *  an open meeting a -delete directory is unsupported, as on 3.1–3.8. */
    @Override
    protected boolean loadsDeleteDirsAsModelled() {
        return false;
    }

    /** replaceCurrentWithFutureLog(tp); the -delete name the current log's directory took. A future
     *  log in its current log's data dir: unsupported, as on the later generations. */
    @Override
    protected String replaceCurrentWithFutureLog(TopicPartition tp) {
        refuseBefore28("replace_current_with_future");
        Option<Log> current = manager.getLog(tp, false);
        Option<Log> future = manager.getLog(tp, true);
        if (current.isDefined() && future.isDefined()
                && current.get().dir().getParentFile().equals(future.get().dir().getParentFile())) {
            throw new Unsupported("replace_current_with_future: the future log is in its current log's data dir");
        }
        manager.replaceCurrentWithFutureLog(tp);
        return current.get().dir().getName(); // renamed -delete by the call
    }

    /** 2.x has no hasOfflineLogDir, and takeNextOfflineLogDir blocks: read the channel's map. */
    @Override
    protected boolean queuedOffline(String dataDir) {
        return ((Map<?, ?>) Scala.field(failures, LogDirFailureChannel.class, "offlineLogDirs")).containsKey(dataDir);
    }

    /** One replica: the high watermark is the log end (2.4 moved it into Log; before, it lived in
     *  the Replica, which this adapter does not build, and a read takes its bound as an offset). */
    @Override
    protected void highWatermarkAtTheEnd(Log log) {
        atTheEnd(log);
    }

    private static void atTheEnd(Log log) {
        if (Scala.has(log, "updateHighWatermark")) {
            Scala.call(log, "updateHighWatermark", log.logEndOffset());
        }
    }

    /** One replica: up to 2.3 the high watermark (in the Replica) is the log end. */
    @Override
    protected long highWatermark(Log log) {
        return Scala.has(log, "highWatermark") ? (Long) Scala.call(log, "highWatermark") : log.logEndOffset();
    }

    @Override
    protected TopicPartition parseTopicPartitionName(File dir) {
        return Log.parseTopicPartitionName(dir);
    }

    // --- steps on one partition ---------------------------------------------------------------

    /** getOrCreateLog: 3.0 takes the partition and its topic id (none here), 2.8 the partition
     *  alone, 2.7 also a LogConfig supplier, 2.0 to 2.4 a LogConfig. */
    @Override
    protected void createLog(TopicPartition tp, String dataDir) {
        manager.maybeUpdatePreferredLogDir(tp, dataDir);
        Function0<LogConfig> config = () -> logConfig;
        Scala.callFirst(manager, "getOrCreateLog", new Object[] {tp, false, false, Option.empty()}, new Object[] {tp},
                new Object[] {tp, config}, new Object[] {tp, logConfig});
    }


    /** A leader append as a produce request makes it (appendAsLeader's defaults: a client's
     *  append at the latest inter-broker protocol); a follower's carries no epoch in 2.x. */
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
        out.put("first", firstOffset(info));
        out.put("last", info.lastOffset());
        return out;
    }

    /** Log.roll: 2.2 on takes the expected next offset as an Option, 2.0 and 2.1 as a Long (default 0). */
    @Override
    ObjectNode roll(Log log) {
        LogSegment rolled = (LogSegment) Scala.callFirst(log, "roll", new Object[] {Option.empty()}, new Object[0]);
        return JSON.createObjectNode().put("base", rolled.baseOffset());
    }

    @Override
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
            atTheEnd(log);
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

    @Override
    ObjectNode readCommitted(Log log, long offset, int maxBytes, boolean minOne) {
        throw new Unsupported("a read_committed fetch: this adapter does not read aborted transactions on Kafka "
                + Release.version() + " yet");
    }

    /** Kafka 2.x's fetchOffsetByTimestamp knows two special timestamps, −1 (latest) and −2
     *  (earliest); −3, the offset of the largest timestamp, came with 3.0 (KIP-734). */
    @Override
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

    /** maybeIncrementLogStartOffset: 2.7 and 2.8 take the reason, a client's DeleteRecords here. */
    @Override
    protected void incrementLogStartOffset(Log log, long offset) {
        Object reason = Scala.object("kafka.log.ClientRecordDeletion");
        Scala.callFirst(log, "maybeIncrementLogStartOffset", new Object[] {offset, reason}, new Object[] {offset});
    }

    /** Kafka 2.x's flush flushes the offsets below the one given. */
    @Override
    protected void flushBelow(Log log, long offset) {
        log.flush(offset);
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
        for (EpochEntry e : epochEntries(log)) {
            epochs.addArray().add(e.epoch()).add(e.startOffset());
        }
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

    /** Kafka's own cleaner, one round ({@link ScalaCleanerRound}). */
    @Override
    ObjectNode clean(Log log) {
        return ScalaCleanerRound.clean(log, clock);
    }

    /** Whether a segment's index object exists yet. Lazy since 2.3 (KAFKA-7283): 2.4 on a
     *  LazyIndex whose wrapper becomes an IndexValue, 2.3 a LazyOffsetIndex/LazyTimeIndex holding
     *  an Option; up to 2.2 every index is built with its segment. */
    @Override
    protected boolean materialised(Object segment, String lazyAccessor) {
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
        throw new AdapterFailure(lazy.getClass().getName() + " of Kafka " + Release.version() + " holds no index");
    }

    private static Object[] concat(Object[] head, Object... tail) {
        Object[] all = Arrays.copyOf(head, head.length + tail.length);
        System.arraycopy(tail, 0, all, head.length, tail.length);
        return all;
    }
}
