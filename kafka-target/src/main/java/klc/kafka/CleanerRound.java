package klc.kafka;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.LogCleaningAbortedException;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;

import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * One round of Kafka's own log cleaner on a partition, as the {@code clean} step defines it (spec
 * §5.9, §7.9; docs/scenario-format.md): kafka-storage's {@link Cleaner} ({@code doClean}) with the
 * dirty section the whole inactive log — no cleaner-offset checkpoint, so the first dirty offset is
 * the log start offset; the first uncleanable offset is the lower of the last stable offset (the
 * high watermark is the log end offset) and the active segment's base ({@code min.compaction.lag.ms}
 * 0), as {@code LogCleanerManager.cleanableOffsets} bounds it — grouped
 * and cleaned by Kafka's own {@code groupSegmentsBySize} (KAFKA-5413) and {@code cleanSegments}.
 * What LogCleanerManager decides before a round (which log; compacted ones only) is the step's.
 *
 * <p>The answer is the model's ({@link CleanedGroups}).
 */
final class CleanerRound {
    /** LogCleaner: {@code log.cleaner.io.buffer.size} (524288) / {@code log.cleaner.threads} (1) / 2. */
    private static final int IO_BUFFER_SIZE = 524288 / 1 / 2;
    /** {@code log.cleaner.dedupe.buffer.size} (128 MiB) / 1 thread: Kafka's default offset map. */
    private static final int DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024;
    /** {@code log.cleaner.io.buffer.load.factor}. */
    private static final double DEDUPE_LOAD_FACTOR = 0.9;
    /** One offset map for the JVM: buildOffsetMap clears it first, and no two rounds run at once. */
    private static SkimpyOffsetMap offsetMap;

    private CleanerRound() { }

    static ObjectNode clean(UnifiedLog log, Time time) throws Exception {
        if (CleanedGroups.holdsLegacyBatches(log.logSegments().stream().map(LogSegment::log).toList())) {
            // filterTo rebuilds every legacy batch it keeps as v2 (KIP-724): not modelled
            throw new Unsupported("a log-cleaner round over a legacy (magic 0/1) batch: Kafka 4.x rebuilds every one it keeps as v2");
        }
        if (!log.config().compact) {
            throw new CleanedGroups.NotCompacted(log.name() + " has cleanup.policy=" + log.config().getList("cleanup.policy"));
        }
        long firstDirty = log.logStartOffset();
        // LogCleanerManager.cleanableOffsets: below the last stable offset (the high watermark is
        // the log end offset here) and the active segment; min.compaction.lag.ms is 0
        long firstUncleanable = Math.max(firstDirty, Math.min(log.lastStableOffset(), log.activeSegment().baseOffset()));
        ObjectNode out = Generation.JSON.createObjectNode();
        if (firstDirty >= firstUncleanable) {
            out.putArray("groups"); // LogCleanerManager never picks a log with nothing cleanable
            return out;
        }
        List<LogSegment> before = log.logSegments();
        boolean aborted = false;
        try {
            cleaner(log, time).doClean(new LogToClean(log, firstDirty, firstUncleanable, false), time.milliseconds());
        } catch (LogCleaningAbortedException e) {
            aborted = true; // only splitOverflowedSegment aborts: checkDone never does here
        }
        CleanedGroups.answer(out, before, log.logSegments(), aborted, s -> ((LogSegment) s).baseOffset());
        return out;
    }

    /** Kafka's cleaner as LogCleaner builds its thread's, over the one map; the buffers grow to the
     *  topic's max.message.bytes, which stands for the broker's message.max.bytes too (the model's). */
    private static Cleaner cleaner(UnifiedLog log, Time time) throws NoSuchAlgorithmException {
        if (offsetMap == null) {
            offsetMap = new SkimpyOffsetMap(DEDUPE_BUFFER_SIZE, "MD5");
        }
        Throttler unthrottled = new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", time);
        return new Cleaner(0, offsetMap, IO_BUFFER_SIZE, log.config().maxMessageSize(), DEDUPE_LOAD_FACTOR,
                unthrottled, time, tp -> { });
    }
}
