package klc.kafka;

import kafka.log.LogManager;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.ConfigRepository;
import org.apache.kafka.server.util.FileLock;
import org.apache.kafka.server.util.Scheduler;
import org.apache.kafka.storage.internals.log.CleanerConfig;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import scala.Function5;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.jdk.javaapi.OptionConverters;

import java.io.File;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;

/**
 * The broker's LogManager in 4.1–4.3: still the Scala {@code kafka.log.LogManager} of the broker's
 * jar (kafka_2.13), over kafka-storage's Java {@code UnifiedLog} (4.4 moved LogManager to
 * kafka-storage: {@code src/since-4.4}). The same calls as there, Scala's collections, options and
 * default arguments spelled out.
 */
final class Logs {
    private final LogManager manager;

    Logs(List<File> dirs, LogConfig config, int recoveryThreads, boolean transactionVerification, Scheduler scheduler, LogDirFailureChannel failures, Time time) {
        ConfigRepository noOverrides = resource -> new Properties();
        Object[] args = {CollectionConverters.asScala(dirs), CollectionConverters.asScala(List.<File>of()), noOverrides, config,
            new CleanerConfig(false), recoveryThreads,
            Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, 900_000,
            new ProducerStateManagerConfig(86_400_000, transactionVerification), 600_000,
            scheduler, new BrokerTopicStats(), failures, time, false, 0L, noCleaner()};
        manager = construct(args);
    }

    /** LogManager's constructor: 4.2 adds a builder of the log cleaner (none is started here). */
    private static LogManager construct(Object[] args) {
        for (int arity : new int[] {args.length, args.length - 1}) {
            for (Constructor<?> c : LogManager.class.getConstructors()) {
                if (c.getParameterCount() == arity) {
                    try {
                        return (LogManager) c.newInstance(Arrays.copyOf(args, arity));
                    } catch (InvocationTargetException e) {
                        throw Logs.<RuntimeException>sneaky(e.getCause()); // what the constructor threw, as 4.4's would
                    } catch (ReflectiveOperationException e) {
                        throw new AdapterFailure(e);
                    }
                }
            }
        }
        throw new AdapterFailure("Kafka " + Release.version() + "'s LogManager has no known constructor");
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E sneaky(Throwable e) throws E {
        throw (E) e;
    }

    private static Function5<Object, Object, Object, Object, Object, Object> noCleaner() {
        return (cleanerConfig, logDirs, logs, channel, clock) -> {
            throw new AdapterFailure("the log cleaner is not started by this target");
        };
    }

    /** KRaft's isStray: {@link SetAside}. */
    void startup() {
        scala.Function1<UnifiedLog, Object> isStray = log -> SetAside.isStray(log, log.topicPartition(), log.dir());
        manager.startup(CollectionConverters.asScala(Set.<String>of()), isStray);
    }

    OptionalLong readBrokerEpochFromCleanShutdownFiles() {
        return manager.readBrokerEpochFromCleanShutdownFiles();
    }

    void shutdown(long brokerEpoch) {
        manager.shutdown(brokerEpoch);
    }

    List<UnifiedLog> allLogs() {
        List<UnifiedLog> logs = new ArrayList<>();
        CollectionConverters.asJava(manager.allLogs()).forEach(logs::add);
        return logs;
    }

    Optional<UnifiedLog> getLog(TopicPartition tp) {
        return OptionConverters.toJava(manager.getLog(tp, false));
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
        return CollectionConverters.asJava(manager.dirLocks());
    }

    void maybeUpdatePreferredLogDir(TopicPartition tp, String dir) {
        manager.maybeUpdatePreferredLogDir(tp, dir);
    }

    void getOrCreateLog(TopicPartition tp) {
        manager.getOrCreateLog(tp, false, false, Optional.empty(), Option.empty());
    }

    void truncateTo(TopicPartition tp, long offset) {
        manager.truncateTo(CollectionConverters.asScala(Map.<TopicPartition, Object>of(tp, offset)), false);
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

    /** asyncDelete(tp) with Scala's defaults (current log, checkpoints written, not stray): renamed
     *  -delete, queued; the new name, or null. */
    String asyncDelete(TopicPartition tp) {
        Option<UnifiedLog> removed = manager.asyncDelete(
                tp, manager.asyncDelete$default$2(), manager.asyncDelete$default$3(), manager.asyncDelete$default$4());
        return removed.isDefined() ? removed.get().dir().getName() : null;
    }

    /** Whether a log of {@code dir} is in LogManager's {@code logsToBeDeleted} queue. */
    boolean queuedForDeletion(File dir) {
        return DeletionQueue.holds(manager, dir);
    }

    /** Whether the load's -future and -stray directories are listed (LoadedPartitions). */
    static final boolean LISTS_MOVED_DIRS = true;

    /** The partition's future log (KIP-113), keyed apart from its current one. */
    Optional<UnifiedLog> getFutureLog(TopicPartition tp) {
        return OptionConverters.toJava(manager.getLog(tp, true));
    }

    /** replaceCurrentWithFutureLog(tp); the -delete name the current log's directory took. */
    String replaceCurrentWithFutureLog(TopicPartition tp) {
        UnifiedLog current = OptionConverters.toJava(manager.getLog(tp, false)).orElse(null);
        manager.replaceCurrentWithFutureLog(tp);
        return current.dir().getName(); // renamed -delete by the call (the current replica is there: it checks)
    }
}
