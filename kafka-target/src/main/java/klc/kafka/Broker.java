package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
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
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;

/**
 * The {@link Generation} of Kafka 4.1 on: kafka-storage's Java {@code UnifiedLog}, under the
 * LogManager of {@link Logs} (the broker's Scala one up to 4.3, kafka-storage's from 4.4).
 */
final class Broker extends Generation<Logs, UnifiedLog> {
    private static final HexFormat HEX = HexFormat.of();
    /** The broker epoch LogManager.shutdown writes into the clean-shutdown marker (KIP-966), as the model writes it. */
    private static final int BROKER_EPOCH = -1;

    private LogDirFailureChannel failures;
    private OptionalLong previousEpoch = OptionalLong.empty();

    Broker(JsonNode request) {
        super(request, Broker::kafkaConfig);
        new LogConfig(topicConfig); // a config Kafka refuses fails here, before any step
    }

    /** The scenario's topic config as LogConfig takes it. */
    private static Properties kafkaConfig(Map<String, JsonNode> config) {
        Properties topicConfig = new Properties();
        for (Map.Entry<String, JsonNode> e : config.entrySet()) {
            String key = e.getKey();
            String value = e.getValue().asText();
            if (!LogConfig.configNames().contains(key)) {
                // LogConfig ignores a name it does not define: the step would run without the setting
                throw new Unsupported("topic config " + key + ": Kafka " + Release.version() + " has no such config");
            } else if (key.equals("segment.bytes") && e.getValue().asLong() < 1024 * 1024) {
                // below Kafka's public minimum; its own tests set the internal config (§8)
                topicConfig.put(LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG, value);
            } else {
                topicConfig.put(key, value);
            }
        }
        return topicConfig;
    }

    // --- the broker's life ------------------------------------------------------------------

    @Override
    protected Startup.Step startManager() throws IOException {
        failures = new LogDirFailureChannel(dataDirs.size());
        manager = new Logs(dataDirs, new LogConfig(topicConfig), recoveryThreads, transactionVerification, scheduler, failures, clock);
        // BrokerServer reads the markers' broker epoch from the new LogManager before its startup
        previousEpoch = manager.readBrokerEpochFromCleanShutdownFiles();
        return () -> manager.startup();
    }

    @Override
    protected boolean setsAsideStray() {
        return true;
    }

    @Override
    protected OptionalLong previousBrokerEpoch() {
        return previousEpoch;
    }

    @Override
    public boolean loadedIn(TopicPartition tp, File dataDir) {
        Optional<UnifiedLog> log = manager.getLog(tp);
        return log.isPresent() && new File(log.get().parentDir()).equals(dataDir);
    }

    @Override
    protected String asyncDelete(TopicPartition tp) {
        return manager.asyncDelete(tp);
    }

    @Override
    public boolean queuedForDeletion(File dir) {
        return manager != null && manager.queuedForDeletion(dir);
    }

    @Override
    protected boolean listsDeleteDirs() {
        return Logs.DELETES_PARTITIONS;
    }

    @Override
    public boolean futureLoadedFrom(TopicPartition tp, File dir) {
        Optional<UnifiedLog> log = manager.getFutureLog(tp);
        return log.isPresent() && log.get().dir().getAbsoluteFile().equals(dir.getAbsoluteFile());
    }

    @Override
    protected String replaceCurrentWithFutureLog(TopicPartition tp) throws IOException {
        Optional<UnifiedLog> current = manager.getLog(tp);
        Optional<UnifiedLog> future = manager.getFutureLog(tp);
        if (current.isPresent() && future.isPresent() && current.get().parentDir().equals(future.get().parentDir())) {
            // Kafka's rename over the current dir fails and takes the data dir offline: not modelled
            throw new Unsupported("replace_current_with_future: the future log is in its current log's data dir");
        }
        return manager.replaceCurrentWithFutureLog(tp);
    }

    @Override
    protected boolean listsMovedDirs() {
        return Logs.LISTS_MOVED_DIRS;
    }

    @Override
    public boolean online(File dataDir) {
        return manager.isLogDirOnline(dataDir.getAbsolutePath());
    }

    @Override
    protected boolean queuedOffline(String dataDir) {
        return failures.hasOfflineLogDir(dataDir);
    }

    /** The first data dir holds the metadata log (KRaft's default {@code metadata.log.dir}), whose
     *  failure halts the broker, as does losing the last live dir. */
    @Override
    protected String haltsOn(File dataDir) {
        if (dataDir.equals(dataDirs.get(0)) || manager.liveLogDirCount() == 1) {
            return "log dir " + dataDir.getName() + " failed: the broker halts";
        }
        return null;
    }

    @Override
    protected void handleLogDirFailure(String dataDir) {
        manager.handleLogDirFailure(dataDir);
    }

    @Override
    protected void stopManager() throws IOException {
        manager.shutdown(BROKER_EPOCH);
    }

    /** Each dir lock let go as a dead process's is, its file kept ({@link DirLocks}). */
    @Override
    protected void releaseDirLocks() throws IOException {
        for (FileLock lock : manager.dirLocks()) {
            DirLocks.letGo(lock);
        }
    }

    @Override
    protected List<UnifiedLog> logs() {
        List<UnifiedLog> current = new ArrayList<>(manager.allLogs());
        current.removeIf(UnifiedLog::isFuture); // a future log is not served: futureLog reaches it
        return current;
    }

    @Override
    protected List<UnifiedLog> logsWithFutures() {
        return new ArrayList<>(manager.allLogs()); // a future log without a current one too
    }

    @Override
    protected Optional<UnifiedLog> futureLog(UnifiedLog current) {
        return manager.getFutureLog(current.topicPartition());
    }

    @Override
    protected Optional<UnifiedLog> findLog(TopicPartition tp) {
        return manager.getLog(tp);
    }

    @Override
    protected void createLog(TopicPartition tp, String dataDir) throws IOException {
        manager.maybeUpdatePreferredLogDir(tp, dataDir);
        manager.getOrCreateLog(tp);
    }

    @Override
    protected void truncateTo(TopicPartition tp, long offset) {
        manager.truncateTo(tp, offset);
    }

    @Override
    protected void truncateFullyAndStartAt(TopicPartition tp, long offset) {
        manager.truncateFullyAndStartAt(tp, offset);
    }

    @Override
    protected void checkpointLogRecoveryAndStartOffsets() {
        manager.checkpointLogRecoveryOffsets();
        manager.checkpointLogStartOffsets();
    }

    @Override
    protected Object logConfig(Properties config) {
        return new LogConfig(config);
    }

    @Override
    protected void updateConfig(UnifiedLog log, Object config, Set<String> updated) {
        log.updateConfig((LogConfig) config);
    }

    // --- steps on one partition ---------------------------------------------------------------

    /** A leader's end-transaction marker is written as the transaction coordinator's
     *  WriteTxnMarkers request writes it (origin COORDINATOR), at transaction version 0 (the
     *  classic protocol, whose markers keep the producer's epoch); any other leader append is a
     *  client's produce request. */
    @Override
    ObjectNode append(UnifiedLog log, byte[] data, boolean leader, int leaderEpoch) throws IOException {
        return append(log, data, leader, leaderEpoch, (short) 0);
    }

    /** As {@link #append(UnifiedLog, byte[], boolean, int)}, a marker at {@code transactionVersion}. */
    @Override
    ObjectNode append(UnifiedLog log, byte[] data, boolean leader, int leaderEpoch, short transactionVersion)
            throws IOException {
        LogAppendInfo info = !leader ? log.appendAsFollower(Moved.memoryRecords(data), leaderEpoch)
                : isControlBatch(data) ? coordinatorAppend(log, data, leaderEpoch, transactionVersion)
                : log.appendAsLeader(Moved.memoryRecords(data), leaderEpoch);
        ObjectNode out = JSON.createObjectNode();
        out.put("first", info.firstOffset());
        out.put("last", info.lastOffset());
        return out;
    }

    /** appendAsLeader(records, epoch, COORDINATOR, …): 4.2 adds the transaction version (KIP-890's
     *  markers), which the 3-argument form leaves unknown (−1); 4.1 has none, so it checks every
     *  marker as version 0 does and cannot take a version 2 one. */
    private static LogAppendInfo coordinatorAppend(UnifiedLog log, byte[] data, int leaderEpoch, short version) {
        Object records = Moved.memoryRecords(data);
        Object[] head = {records, leaderEpoch, AppendOrigin.COORDINATOR, RequestLocal.noCaching(), VerificationGuard.SENTINEL};
        Object[] withVersion = java.util.Arrays.copyOf(head, head.length + 1);
        withVersion[head.length] = version;
        boolean takesVersion = java.util.Arrays.stream(log.getClass().getMethods())
                .anyMatch(m -> m.getName().equals("appendAsLeader") && m.getParameterCount() == withVersion.length);
        if (version >= 2 && !takesVersion) {
            throw new Unsupported("a marker at transaction version " + version + ": Kafka " + Release.version()
                    + " takes no transaction version (KIP-890's markers, 4.2 on)");
        }
        return (LogAppendInfo) Moved.callFirst(log, "appendAsLeader", withVersion, head);
    }

    /** A leader's client append with {@code guard} (null: a new guard, which no producer's
     *  verification holds); a follower's or a marker's append takes none and is the plain one. */
    @Override
    protected ObjectNode appendVerified(UnifiedLog log, byte[] data, boolean leader, int leaderEpoch, short transactionVersion,
            Object guard) throws IOException {
        if (!leader || isControlBatch(data)) {
            return append(log, data, leader, leaderEpoch, transactionVersion);
        }
        LogAppendInfo info = clientAppend(log, data, leaderEpoch, guard == null ? new VerificationGuard() : (VerificationGuard) guard);
        ObjectNode out = JSON.createObjectNode();
        out.put("first", info.firstOffset());
        out.put("last", info.lastOffset());
        return out;
    }

    /** appendAsLeader(records, epoch, CLIENT, …, guard): what the 2-argument form calls with the
     *  sentinel, at the transaction version it passes there (unknown, −1, from 4.2; 4.1 takes none). */
    private static LogAppendInfo clientAppend(UnifiedLog log, byte[] data, int leaderEpoch, VerificationGuard guard) {
        Object[] head = {Moved.memoryRecords(data), leaderEpoch, AppendOrigin.CLIENT, RequestLocal.noCaching(), guard};
        Object[] withVersion = java.util.Arrays.copyOf(head, head.length + 1);
        withVersion[head.length] = (short) -1;
        return (LogAppendInfo) Moved.callFirst(log, "appendAsLeader", withVersion, head);
    }

    /** UnifiedLog.maybeStartTransactionVerification (the same shape 4.1 to 4.4); null: the sentinel. */
    @Override
    protected Object startTransactionVerification(UnifiedLog log, long producerId, int sequence, short epoch,
            boolean supportsEpochBump) {
        VerificationGuard guard = log.maybeStartTransactionVerification(producerId, sequence, epoch, supportsEpochBump);
        return guard.equals(VerificationGuard.SENTINEL) ? null : guard;
    }

    @Override
    protected boolean verifiesTransactions() {
        return true;
    }

    /** Whether the request's first batch is a v2 control batch (magic at byte 16, the control bit
     *  of the attributes at bytes 21–22: the record batch format, KIP-98). */
    private static boolean isControlBatch(byte[] data) {
        return data.length > 22 && data[16] == 2 && (data[22] & 0x20) != 0;
    }

    @Override
    ObjectNode roll(UnifiedLog log) throws IOException {
        return JSON.createObjectNode().put("base", log.roll().baseOffset());
    }

    /** Kafka's own cleaner, one round ({@link CleanerRound}). */
    @Override
    ObjectNode clean(UnifiedLog log) throws Exception {
        return CleanerRound.clean(log, clock);
    }

    @Override
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

    @Override
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

    @Override
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

    @Override
    protected void highWatermarkAtTheEnd(UnifiedLog log) throws IOException {
        log.updateHighWatermark(log.logEndOffset());
    }

    @Override
    protected long highWatermark(UnifiedLog log) {
        return log.highWatermark();
    }

    @Override
    protected TopicPartition topicPartition(UnifiedLog log) {
        return log.topicPartition();
    }

    @Override
    protected long logStartOffset(UnifiedLog log) {
        return log.logStartOffset();
    }

    @Override
    protected long logEndOffset(UnifiedLog log) {
        return log.logEndOffset();
    }

    @Override
    protected long recoveryPoint(UnifiedLog log) {
        return log.recoveryPoint();
    }

    @Override
    protected void truncateLog(UnifiedLog log, long offset) {
        log.truncateTo(offset);
    }

    @Override
    protected void incrementLogStartOffset(UnifiedLog log, long offset) {
        log.maybeIncrementLogStartOffset(offset, LogStartOffsetIncrementReason.ClientRecordDeletion);
    }

    @Override
    protected void flushBelow(UnifiedLog log, long offset) {
        log.flushUptoOffsetExclusive(offset);
    }

    @Override
    protected int deleteOldSegments(UnifiedLog log) throws IOException {
        return log.deleteOldSegments();
    }

    /** UnifiedLog.removeExpiredProducers(now): what the log's periodic check runs, under its lock. */
    @Override
    protected int expireProducers(UnifiedLog log) {
        int before = log.producerStateManager().activeProducers().size();
        log.removeExpiredProducers(clock.milliseconds());
        return before - log.producerStateManager().activeProducers().size();
    }

    // --- observations -------------------------------------------------------------------------

    @Override
    protected String keyOf(UnifiedLog log) {
        return new File(log.parentDir()).getName() + "/" + log.dir().getName();
    }

    @Override
    protected void describe(UnifiedLog log, ObjectNode p) {
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

    @Override
    protected List<LogSegment> segments(UnifiedLog log) {
        return log.logSegments();
    }

    @Override
    protected long baseOffset(Object segment) {
        return ((LogSegment) segment).baseOffset();
    }

    @Override
    protected void indexEntries(Object segment, ArrayNode offsets, ArrayNode times) throws IOException {
        OffsetIndex oi = ((LogSegment) segment).offsetIndex();
        for (int k = 0; k < oi.entries(); k++) {
            OffsetPosition op = oi.entry(k);
            offsets.addArray().add((Long) Moved.member(op, "offset")).add((Integer) Moved.member(op, "position"));
        }
        TimeIndex ti = ((LogSegment) segment).timeIndex();
        for (int k = 0; k < ti.entries(); k++) {
            TimestampOffset to = ti.entry(k);
            times.addArray().add((Long) Moved.member(to, "timestamp")).add((Long) Moved.member(to, "offset"));
        }
    }

    @Override
    protected boolean materialised(Object segment, String field) throws ReflectiveOperationException {
        Field lazyField = LogSegment.class.getDeclaredField(field);
        lazyField.setAccessible(true);
        LazyIndex<?> lazy = (LazyIndex<?>) lazyField.get(segment);
        Field wrapper = LazyIndex.class.getDeclaredField("indexWrapper");
        wrapper.setAccessible(true);
        return wrapper.get(lazy).getClass().getSimpleName().equals("IndexValue");
    }

    @Override
    protected TopicPartition parseTopicPartitionName(File dir) throws Exception {
        return UnifiedLog.parseTopicPartitionName(dir);
    }
}
