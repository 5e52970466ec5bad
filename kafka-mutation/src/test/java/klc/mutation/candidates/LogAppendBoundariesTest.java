package klc.mutation.candidates;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.OffsetsOutOfOrderException;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;
import org.apache.kafka.test.TestUtils;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A candidate test for Kafka (docs/kafka-mutation.md): boundaries of UnifiedLog's appends, its
 * truncation and its ListOffsets answer.  None of kafka-storage's own unit tests in 4.3.1 fails
 * when they move (PIT mutants of {@code truncateTo} 2341, {@code analyzeAndValidateRecords} 1541
 * and 1551, {@code fetchOffsetByTimestamp} 1733); this suite's cases
 * {@code log/truncation-to-a-negative-offset-is-refused.json},
 * {@code log/follower-append-of-two-batches-ending-at-one-offset-is-refused.json},
 * {@code log/max-message-bytes-takes-a-batch-of-exactly-its-size.json} and
 * {@code log/max-timestamp-tie-answers-the-first.json} do.  Passes on the release.
 */
public class LogAppendBoundariesTest {
    private final KafkaScheduler scheduler = new KafkaScheduler(1);
    private UnifiedLog log;

    @BeforeEach
    public void setUp() throws IOException {
        File logDir = new File(TestUtils.tempDirectory(), "topic-0");
        assertTrue(logDir.mkdirs());
        scheduler.startup();
        log = UnifiedLog.create(logDir, new LogConfig(new HashMap<>()), 0L, 0L, scheduler,
            new BrokerTopicStats(), Time.SYSTEM, 900_000, new ProducerStateManagerConfig(86_400_000, false),
            600_000, new LogDirFailureChannel(1), false, Optional.empty());
    }

    @AfterEach
    public void tearDown() throws InterruptedException {
        log.close();
        scheduler.shutdown();
    }

    @Test
    public void testTruncationToANegativeOffsetIsRefusedAndChangesNothing() throws IOException {
        appendAt(5L, "a");
        appendAt(6L, "b");

        assertThrows(IllegalArgumentException.class, () -> log.truncateTo(-1L));

        assertEquals(2L, log.logEndOffset());
        assertEquals(0L, log.logStartOffset());
    }

    @Test
    public void testFollowerBatchesEndingAtOneOffsetAreRefused() {
        MemoryRecords first = MemoryRecords.withRecords(0L, Compression.NONE, 0,
            new SimpleRecord("a".getBytes()), new SimpleRecord("b".getBytes()));
        MemoryRecords second = MemoryRecords.withRecords(1L, Compression.NONE, 0, new SimpleRecord("c".getBytes()));
        ByteBuffer both = ByteBuffer.allocate(first.sizeInBytes() + second.sizeInBytes());
        both.put(first.buffer()).put(second.buffer()).flip();

        assertThrows(OffsetsOutOfOrderException.class, () -> log.appendAsFollower(MemoryRecords.readableRecords(both), 0));

        assertEquals(0L, log.logEndOffset());
    }

    @Test
    public void testABatchOfExactlyMaxMessageBytesIsAppended() throws IOException {
        MemoryRecords batch = MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(5L, "a".getBytes()));
        log.updateConfig(new LogConfig(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, String.valueOf(batch.sizeInBytes()))));

        log.appendAsLeader(batch, 0);

        assertEquals(1L, log.logEndOffset());
    }

    @Test
    public void testMaxTimestampLookupAnswersTheFirstSegmentOfATie() throws IOException {
        appendAt(5L, "a");
        log.roll();
        appendAt(5L, "b");

        Optional<FileRecords.TimestampAndOffset> found =
            log.fetchOffsetByTimestamp(ListOffsetsRequest.MAX_TIMESTAMP, Optional.empty()).timestampAndOffsetOpt();

        assertTrue(found.isPresent());
        assertEquals(0L, found.get().offset);
    }

    private void appendAt(long timestamp, String value) throws IOException {
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(timestamp, value.getBytes())), 0);
    }
}
