package klc.mutation.candidates;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
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
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A candidate test for Kafka (docs/kafka-mutation.md): a read_committed fetch lists the aborted
 * transactions of the range it returns, so that the consumer can drop their batches.  None of
 * kafka-storage's own unit tests in 4.3.1 fails when LocalLog leaves the list empty (PIT mutants of
 * {@code LocalLog.addAbortedTransactions} and {@code collectAbortedTransactions}: the search of the
 * transaction indexes removed or cut short); this suite's
 * {@code crash/transaction-index-rebuilt-by-recovery.json} does.  Passes on the release.
 */
public class ReadCommittedListsAbortedTransactionsTest {
    private static final long PRODUCER_ID = 7L;
    private static final short EPOCH = 0;
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
    public void testReadCommittedListsTheAbortedTransactionOfItsRange() throws IOException {
        log.appendAsLeader(MemoryRecords.withTransactionalRecords(Compression.NONE, PRODUCER_ID, EPOCH, 0,
            new SimpleRecord("aborted".getBytes())), 0);
        // the coordinator's marker, at transaction version 0 (a pre-KIP-890 transaction)
        log.appendAsLeader(MemoryRecords.withEndTransactionMarker(PRODUCER_ID, EPOCH,
            new EndTransactionMarker(ControlRecordType.ABORT, 0)), 0, AppendOrigin.COORDINATOR,
            RequestLocal.noCaching(), VerificationGuard.SENTINEL, (short) 0);
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("committed".getBytes())), 0);
        log.updateHighWatermark(log.logEndOffset());

        FetchDataInfo read = log.read(0L, 1 << 20, FetchIsolation.TXN_COMMITTED, true);

        assertEquals(Optional.of(List.of(new FetchResponseData.AbortedTransaction().setProducerId(PRODUCER_ID).setFirstOffset(0L))),
            read.abortedTransactions);
    }
}
