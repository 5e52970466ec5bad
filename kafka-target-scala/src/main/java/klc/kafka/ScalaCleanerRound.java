package klc.kafka;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;

import java.util.List;

/**
 * One round of Kafka's own log cleaner on 1.1–4.0: the Scala {@code kafka.log.Cleaner} of the
 * broker's jar, driven as {@code CleanerRound} drives kafka-storage's on 4.1 on (the same bounds:
 * the whole inactive log below the last stable offset, {@code clean} grouping and cleaning as
 * Kafka does), through reflection where its collaborators moved between releases: the log class
 * ({@code kafka.log.Log} to 3.0, {@code UnifiedLog} after), the offset map and the throttler (the
 * broker's Scala classes up to 3.5 or so, kafka-storage's after) and the log config
 * ({@code compact}, {@code maxMessageSize}). The answer is the model's ({@link CleanedGroups}).
 *
 * <p>Before 3.1 (KIP-534) a round keeps a tombstone or an emptied transaction's marker while its
 * segment is newer than the last cleaned segment's mtime minus {@code delete.retention.ms}, where
 * the model stamps a delete horizon into the batch (spec §5.9): a round over either is
 * unsupported there.
 */
final class ScalaCleanerRound {
    /** LogCleaner: {@code log.cleaner.io.buffer.size} (524288) / {@code log.cleaner.threads} (1) / 2. */
    private static final int IO_BUFFER_SIZE = 524288 / 1 / 2;
    /** {@code log.cleaner.dedupe.buffer.size} (128 MiB) / 1 thread: Kafka's default offset map. */
    private static final int DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024;
    /** {@code log.cleaner.io.buffer.load.factor}. */
    private static final double DEDUPE_LOAD_FACTOR = 0.9;
    private static final String STORAGE = "org.apache.kafka.storage.internals.";
    /** One offset map for the JVM: buildOffsetMap clears it first, and no two rounds run at once. */
    private static Object offsetMap;
    /** Whether the cleaner stamps delete horizons into batches (KIP-534, 3.1 on: the log class is UnifiedLog). */
    private static final boolean DELETE_HORIZONS = Scala.hasClass("kafka.log.UnifiedLog");

    private ScalaCleanerRound() { }

    /** {@code log}: the release's log class. */
    static ObjectNode clean(Object log, Time time) {
        List<Object> segments = Scala.items(Scala.call(log, "logSegments"));
        List<Object> files = segments.stream().map(seg -> Scala.member(seg, "log")).toList();
        if (CleanedGroups.holdsLegacyBatches(files)) {
            // a legacy batch that loses records is rebuilt at its magic: not modelled (as on 4.x)
            throw new Unsupported("a log-cleaner round over a legacy (magic 0/1) batch: not modelled on Kafka " + Release.version());
        }
        if (!DELETE_HORIZONS && CleanedGroups.holdsTombstonesOrMarkers(files)) {
            throw new Unsupported("a log-cleaner round over a tombstone or a transaction marker on Kafka " + Release.version()
                    + ": before 3.1 (KIP-534) it keeps them by the last cleaned segment's mtime, the model by a delete horizon in the batch");
        }
        Object config = Scala.member(log, "config");
        String name = (String) Scala.member(log, "name");
        if (!(Boolean) Scala.member(config, "compact")) {
            throw new CleanedGroups.NotCompacted(name + " has cleanup.policy=" + Scala.member(config, "cleanupPolicy"));
        }
        long firstDirty = (Long) Scala.member(log, "logStartOffset");
        // LogCleanerManager.cleanableOffsets: below the last stable offset (the high watermark is
        // the log end offset here) and the active segment; min.compaction.lag.ms is 0
        long active = baseOffset(Scala.member(log, "activeSegment"));
        long firstUncleanable = Math.max(firstDirty, Math.min(lastStableOffset(log), active));
        ObjectNode out = Generation.JSON.createObjectNode();
        if (firstDirty >= firstUncleanable) {
            out.putArray("groups"); // LogCleanerManager never picks a log with nothing cleanable
            return out;
        }
        Object cleanable = Scala.constructFirst(Scala.classOf("kafka.log.LogToClean"),
                new Object[] {Scala.member(log, "topicPartition"), log, firstDirty, firstUncleanable, false},
                new Object[] {Scala.member(log, "topicPartition"), log, firstDirty, firstUncleanable});
        boolean aborted = false;
        try {
            Object cleaner = cleaner(config, time);
            if (DELETE_HORIZONS) {
                Scala.call(cleaner, "doClean", cleanable, time.milliseconds()); // what Cleaner.clean calls (KIP-534)
            } else {
                // Cleaner.clean: doClean at the legacy delete horizon, which only the tombstones
                // and markers refused above would read
                Scala.call(cleaner, "clean", cleanable);
            }
        } catch (RuntimeException e) {
            if (!e.getClass().getSimpleName().equals("LogCleaningAbortedException")) {
                throw e;
            }
            aborted = true; // only splitOverflowedSegment aborts: checkDone never does here
        }
        CleanedGroups.answer(out, segments, Scala.items(Scala.call(log, "logSegments")), aborted, ScalaCleanerRound::baseOffset);
        return out;
    }

    /** Kafka's cleaner as LogCleaner builds its thread's, over the one map; the buffers grow to the
     *  topic's max.message.bytes, which stands for the broker's message.max.bytes too (the model's). */
    private static Object cleaner(Object config, Time time) {
        if (offsetMap == null) {
            offsetMap = Scala.constructFirst(Scala.classOf(STORAGE + "log.SkimpyOffsetMap", "kafka.log.SkimpyOffsetMap"),
                    new Object[] {DEDUPE_BUFFER_SIZE, "MD5"});
        }
        Object unthrottled = Scala.constructFirst(Scala.classOf(STORAGE + "utils.Throttler", "kafka.utils.Throttler"),
                new Object[] {Double.MAX_VALUE, 300L, "cleaner-io", "bytes", time},
                new Object[] {Double.MAX_VALUE, 300L, true, "cleaner-io", "bytes", time});
        scala.Function1<TopicPartition, scala.runtime.BoxedUnit> checkDone = tp -> scala.runtime.BoxedUnit.UNIT;
        return Scala.constructFirst(Scala.classOf("kafka.log.Cleaner"), new Object[] {0, offsetMap, IO_BUFFER_SIZE,
            (Integer) Scala.member(config, "maxMessageSize"), DEDUPE_LOAD_FACTOR, unthrottled, time, checkDone});
    }

    /** The last stable offset: a method from 2.0, the first unstable offset's (or the log end) in 1.1. */
    private static long lastStableOffset(Object log) {
        if (Scala.has(log, "lastStableOffset")) {
            return (Long) Scala.member(log, "lastStableOffset");
        }
        for (Object unstable : Scala.items(Scala.member(log, "firstUnstableOffset"))) {
            return (Long) Scala.member(unstable, "messageOffset");
        }
        return (Long) Scala.member(log, "logEndOffset");
    }

    private static long baseOffset(Object segment) {
        return (Long) Scala.member(segment, "baseOffset");
    }
}
