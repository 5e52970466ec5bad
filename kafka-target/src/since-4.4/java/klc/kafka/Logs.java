package klc.kafka;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.FileLock;
import org.apache.kafka.server.util.Scheduler;
import org.apache.kafka.storage.internals.log.CleanerConfig;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;

/**
 * The broker's LogManager from 4.4, kafka-storage's Java class (4.1–4.3 keep the Scala
 * {@code kafka.log.LogManager} in the broker's jar: {@code src/before-4.4}). The calls the
 * {@link Broker} makes, with the arguments a broker of one replica and no cleaner passes.
 */
final class Logs {
    private final LogManager manager;

    Logs(List<File> dirs, LogConfig config, int recoveryThreads, boolean transactionVerification, Scheduler scheduler, LogDirFailureChannel failures, Time time)
            throws IOException {
        manager = new LogManager(
                dirs, List.of(), resource -> new Properties(), config,
                new CleanerConfig(false), recoveryThreads,
                Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, 900_000,
                new ProducerStateManagerConfig(86_400_000, transactionVerification), 600_000,
                scheduler, new BrokerTopicStats(), failures, time, false, 0L,
                (cleanerConfig, logDirs, logs, channel, clock) -> {
                    throw new AdapterFailure("the log cleaner is not started by this target");
                });
    }

    /** KRaft's isStray: {@link SetAside}. */
    void startup() throws Exception {
        manager.startup(Set.of(), log -> SetAside.isStray(log, log.topicPartition(), log.dir()));
    }

    OptionalLong readBrokerEpochFromCleanShutdownFiles() {
        return manager.readBrokerEpochFromCleanShutdownFiles();
    }

    void shutdown(long brokerEpoch) throws IOException {
        manager.shutdown(brokerEpoch);
    }

    List<UnifiedLog> allLogs() {
        return new ArrayList<>(manager.allLogs());
    }

    Optional<UnifiedLog> getLog(TopicPartition tp) {
        return manager.getLog(tp);
    }

    /** Whether the load's -future and -stray directories are listed (LoadedPartitions). */
    static final boolean LISTS_MOVED_DIRS = true;

    /** replaceCurrentWithFutureLog(tp); the -delete name the current log's directory took. */
    String replaceCurrentWithFutureLog(TopicPartition tp) throws IOException {
        UnifiedLog current = manager.getLog(tp).orElse(null);
        manager.replaceCurrentWithFutureLog(tp);
        return current.dir().getName(); // renamed -delete by the call (the current replica is there: it checks)
    }

    /** The partition's future log (KIP-113), keyed apart from its current one. */
    Optional<UnifiedLog> getFutureLog(TopicPartition tp) {
        return manager.getLog(tp, true);
    }

    boolean isLogDirOnline(String dir) {
        return manager.isLogDirOnline(dir);
    }

    int liveLogDirCount() {
        return manager.liveLogDirs().size();
    }

    void handleLogDirFailure(String dir) {
        manager.handleLogDirFailure(dir);
    }

    List<FileLock> dirLocks() {
        return manager.dirLocks();
    }

    void maybeUpdatePreferredLogDir(TopicPartition tp, String dir) {
        manager.maybeUpdatePreferredLogDir(tp, dir);
    }

    void getOrCreateLog(TopicPartition tp) throws IOException {
        manager.getOrCreateLog(tp, Optional.empty());
    }

    void truncateTo(TopicPartition tp, long offset) {
        manager.truncateTo(Map.of(tp, offset), false);
    }

    void truncateFullyAndStartAt(TopicPartition tp, long offset) {
        manager.truncateFullyAndStartAt(tp, offset, false, Optional.empty());
    }

    void checkpointLogRecoveryOffsets() {
        manager.checkpointLogRecoveryOffsets();
    }

    void checkpointLogStartOffsets() {
        manager.checkpointLogStartOffsets();
    }

    /** Whether {@link #asyncDelete} and {@link #queuedForDeletion} are Kafka's here. */
    static final boolean DELETES_PARTITIONS = true;

    /** asyncDelete(tp): renamed -delete, checkpoints written, queued; the new name, or null. */
    String asyncDelete(TopicPartition tp) {
        return manager.asyncDelete(tp).map(log -> log.dir().getName()).orElse(null);
    }

    /** Whether a log of {@code dir} is in LogManager's {@code logsToBeDeleted} queue. */
    boolean queuedForDeletion(File dir) {
        return DeletionQueue.holds(manager, dir);
    }
}
