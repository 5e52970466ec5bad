package klc.findings;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.Scheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A partition's log as the broker's LogManager opens and closes it, for the findings' tests: the
 * arguments {@code LogManager.loadLog} passes to {@code UnifiedLog.create} on a broker with the
 * default broker settings, and the flush-then-close its shutdown does.
 */
final class Logs {
    /** transaction.max.timeout.ms and producer.id.expiration.* at their broker defaults. */
    private static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;
    private static final int PRODUCER_ID_EXPIRATION_MS = 86_400_000;
    private static final int PRODUCER_ID_EXPIRATION_CHECK_MS = 600_000;

    private Logs() {
    }

    /** A topic config: Kafka's defaults with {@code overrides}. */
    static LogConfig config(Map<String, Object> overrides) {
        return new LogConfig(new HashMap<>(overrides));
    }

    /** Opens the partition dir {@code dir} (named topic-partition) as LogManager's load does:
     *  {@code cleanShutdown} is whether the data dir had its clean-shutdown marker. */
    static UnifiedLog open(File dir, LogConfig config, long logStartOffset, long recoveryPoint, boolean cleanShutdown,
                           Scheduler scheduler, Time time) throws IOException {
        return open(dir, config, logStartOffset, recoveryPoint, cleanShutdown, scheduler, time, new LogDirFailureChannel(1));
    }

    /** The same, reporting I/O errors to {@code failures}, the broker's LogDirFailureChannel. */
    static UnifiedLog open(File dir, LogConfig config, long logStartOffset, long recoveryPoint, boolean cleanShutdown,
                           Scheduler scheduler, Time time, LogDirFailureChannel failures) throws IOException {
        return UnifiedLog.create(dir, config, logStartOffset, recoveryPoint, scheduler, new BrokerTopicStats(), time,
                MAX_TRANSACTION_TIMEOUT_MS, new ProducerStateManagerConfig(PRODUCER_ID_EXPIRATION_MS, false),
                PRODUCER_ID_EXPIRATION_CHECK_MS, failures, cleanShutdown, Optional.empty());
    }

    /** What the release's LogManager.shutdown does to each log: from 4.4 it first prepares the
     *  active segment for the close (UnifiedLog.prepareActiveSegmentForClose: the final time-index
     *  entry, the indexes trimmed), up to 4.3 LogSegment.close writes that entry; then it flushes
     *  everything, the active segment included, and closes. */
    static void shutdown(UnifiedLog log) throws ReflectiveOperationException {
        try {
            UnifiedLog.class.getMethod("prepareActiveSegmentForClose").invoke(log);
        } catch (NoSuchMethodException before44) {
            // LogSegment.close writes the final entry
        }
        log.flush(true);
        log.close();
    }

    /** One v2 batch at {@code baseOffset} of one record per timestamp, values of {@code valueBytes} bytes. */
    static MemoryRecords batch(long baseOffset, int valueBytes, long... timestamps) {
        SimpleRecord[] records = new SimpleRecord[timestamps.length];
        for (int i = 0; i < timestamps.length; i++) {
            byte[] value = new byte[valueBytes];
            java.util.Arrays.fill(value, (byte) 'v');
            records[i] = new SimpleRecord(timestamps[i], ("k" + i).getBytes(StandardCharsets.UTF_8), value);
        }
        return MemoryRecords.withRecords(baseOffset, Compression.NONE, 0, records);
    }

    /** The batches as one fetch response's records: what a follower hands appendAsFollower. */
    static MemoryRecords fetched(List<MemoryRecords> batches) {
        int size = batches.stream().mapToInt(MemoryRecords::sizeInBytes).sum();
        ByteBuffer buffer = ByteBuffer.allocate(size);
        for (MemoryRecords b : batches) {
            buffer.put(b.buffer().duplicate());
        }
        buffer.flip();
        return MemoryRecords.readableRecords(buffer);
    }

    /** The last offset of the last batch the segment files of {@code log} hold, whatever the log end offset says. */
    static long lastOffsetInFiles(UnifiedLog log) {
        long last = -1;
        for (var segment : log.logSegments()) {
            for (RecordBatch batch : segment.log().batches()) {
                last = Math.max(last, batch.lastOffset());
            }
        }
        return last;
    }

    /** Every offset fetches from {@code offset} serve, fetch after fetch up to the log end offset
     *  (the first fetch always runs: it may serve offsets past the end). */
    static List<Long> offsetsServedFrom(UnifiedLog log, long offset) throws IOException {
        List<Long> offsets = new ArrayList<>();
        do {
            long before = offset;
            for (RecordBatch batch : log.read(offset, 1 << 20, FetchIsolation.LOG_END, true).records.batches()) {
                for (long o = batch.baseOffset(); o <= batch.lastOffset(); o++) {
                    offsets.add(o);
                }
                offset = batch.lastOffset() + 1;
            }
            if (offset == before) {
                break;
            }
        } while (offset < log.logEndOffset());
        return offsets;
    }

    /** Closes each log; one whose dir an interrupted call took offline throws, which is expected. */
    static void closeAll(UnifiedLog... logs) {
        for (UnifiedLog log : logs) {
            if (log != null) {
                try {
                    log.close();
                } catch (RuntimeException alreadyOffline) {
                    // the interrupted call took the log's dir offline
                }
            }
        }
    }
}
