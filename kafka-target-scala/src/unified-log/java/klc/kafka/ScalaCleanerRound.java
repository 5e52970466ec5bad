package klc.kafka;

import com.fasterxml.jackson.databind.node.ObjectNode;

import kafka.log.LogToClean;
import kafka.log.UnifiedLog;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;

import java.util.List;

/**
 * One round of Kafka's own log cleaner on 3.1–4.0: the Scala {@code kafka.log.Cleaner} of the
 * broker's jar, driven as {@code CleanerRound} drives kafka-storage's on 4.1 on (the same bounds:
 * the whole inactive log below the last stable offset, {@code doClean} grouping and cleaning as
 * Kafka does), through reflection where its collaborators moved within the generation: the offset
 * map and the throttler (the broker's Scala classes up to 3.5 or so, kafka-storage's after) and the
 * log config ({@code compact}, {@code maxMessageSize}). The answer is the model's ({@link CleanedGroups}).
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

    private ScalaCleanerRound() { }

    static ObjectNode clean(UnifiedLog log, Time time) {
        List<Object> segments = Scala.items(Scala.call(log, "logSegments"));
        if (CleanedGroups.holdsLegacyBatches(segments.stream().map(seg -> Scala.member(seg, "log")).toList())) {
            // a legacy batch that loses records is rebuilt at its magic: not modelled (as on 4.x)
            throw new Unsupported("a log-cleaner round over a legacy (magic 0/1) batch: not modelled on Kafka " + Release.version());
        }
        Object config = Scala.member(log, "config");
        if (!(Boolean) Scala.member(config, "compact")) {
            throw new CleanedGroups.NotCompacted(log.name() + " has cleanup.policy=" + Scala.member(config, "cleanupPolicy"));
        }
        long firstDirty = log.logStartOffset();
        // LogCleanerManager.cleanableOffsets: below the last stable offset (the high watermark is
        // the log end offset here) and the active segment; min.compaction.lag.ms is 0
        long active = baseOffset(Scala.member(log, "activeSegment"));
        long firstUncleanable = Math.max(firstDirty, Math.min(log.lastStableOffset(), active));
        ObjectNode out = Generation.JSON.createObjectNode();
        if (firstDirty >= firstUncleanable) {
            out.putArray("groups"); // LogCleanerManager never picks a log with nothing cleanable
            return out;
        }
        Object cleanable = Scala.constructFirst(LogToClean.class, new Object[] {log.topicPartition(), log, firstDirty, firstUncleanable, false});
        boolean aborted = false;
        try {
            Scala.call(cleaner(config, time), "doClean", cleanable, time.milliseconds());
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

    private static long baseOffset(Object segment) {
        return (Long) Scala.member(segment, "baseOffset");
    }
}
