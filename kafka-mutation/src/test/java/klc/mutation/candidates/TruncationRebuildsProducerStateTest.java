package klc.mutation.candidates;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;
import org.apache.kafka.test.TestUtils;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A candidate test for Kafka (docs/kafka-mutation.md): a truncation rebuilds the producer state
 * from the newest snapshot at or below its target and the batches after it.  None of
 * kafka-storage's own unit tests in 4.3.1 fails when {@code UnifiedLog.rebuildProducerState} reads
 * the log although the state was empty and already reached the target (PIT mutants of its
 * {@code isEmptyBeforeTruncation}, lines 2572 and 2583), or when the transactions the rebuild
 * reads to their end are left open ({@code loadProducersFromRecords}, lines 2659 and 2663); this
 * suite's {@code log/truncation-after-expiry-reads-no-expired-producer-back.json} and
 * {@code log/transaction-committed-before-a-truncation-stays-complete.json} do.  Passes on the release.
 */
public class TruncationRebuildsProducerStateTest {
    private static final long PRODUCER_ID = 1L;
    private static final short EPOCH = 0;
    private static final int PRODUCER_ID_EXPIRATION_MS = 86_400_000;
    private final KafkaScheduler scheduler = new KafkaScheduler(1);
    private UnifiedLog log;

    @BeforeEach
    public void setUp() throws IOException {
        File logDir = new File(TestUtils.tempDirectory(), "topic-0");
        assertTrue(logDir.mkdirs());
        scheduler.startup();
        log = UnifiedLog.create(logDir, new LogConfig(new HashMap<>()), 0L, 0L, scheduler,
            new BrokerTopicStats(), Time.SYSTEM, 900_000, new ProducerStateManagerConfig(PRODUCER_ID_EXPIRATION_MS, false),
            600_000, new LogDirFailureChannel(1), false, Optional.empty());
    }

    @AfterEach
    public void tearDown() throws InterruptedException {
        log.close();
        scheduler.shutdown();
    }

    @Test
    public void testTruncationDoesNotBringAnExpiredProducerBack() throws IOException {
        appendPlain("a");
        log.roll();  // a snapshot at offset 1, before the producer's batch
        log.appendAsLeader(MemoryRecords.withIdempotentRecords(Compression.NONE, PRODUCER_ID, EPOCH, 0,
            new SimpleRecord("b".getBytes())), 0);
        appendPlain("c");
        appendPlain("d");
        log.removeExpiredProducers(Time.SYSTEM.milliseconds() + PRODUCER_ID_EXPIRATION_MS + 1);
        assertEquals(Map.of(), log.activeProducersWithLastSequence());

        assertTrue(log.truncateTo(3L));

        assertEquals(Map.of(), log.activeProducersWithLastSequence());
    }

    @Test
    public void testTruncationKeepsACommittedTransactionComplete() throws IOException {
        log.appendAsLeader(MemoryRecords.withTransactionalRecords(Compression.NONE, PRODUCER_ID, EPOCH, 0,
            new SimpleRecord("a".getBytes())), 0);
        log.appendAsLeader(MemoryRecords.withEndTransactionMarker(PRODUCER_ID, EPOCH,
            new EndTransactionMarker(ControlRecordType.COMMIT, 0)), 0, AppendOrigin.COORDINATOR,
            RequestLocal.noCaching(), VerificationGuard.SENTINEL, (short) 0);
        appendPlain("b");
        appendPlain("c");

        assertTrue(log.truncateTo(3L));  // no snapshot at or below 3: the rebuild reads the marker
        log.updateHighWatermark(log.logEndOffset());

        assertEquals(Optional.empty(), log.firstUnstableOffset());
        assertEquals(3L, log.lastStableOffset());
    }

    private void appendPlain(String value) throws IOException {
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(value.getBytes())), 0);
    }
}
