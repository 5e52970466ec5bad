package klc.findings;

import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * torn-transaction-index-hides-an-aborted-transaction (README.md beside this project), a hardening
 * gap: a .txnindex cut inside a record while the broker is down passes the clean load's sanity
 * check (TransactionIndex.sanityCheck reads whole records only), and a read_committed fetch then
 * omits the aborted transaction whose record was cut: the consumer keeps aborted data.
 *
 * <p>Extends TransactionIndexTest.testSanityCheck by a file whose length is not a multiple of the
 * record size, on a log's clean load.
 */
class TornTransactionIndexTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final int ABORTED_TXN_BYTES = 34;

    @TempDir
    File tmp;
    private final LogConfig config = Logs.config(Map.of());
    private KafkaScheduler scheduler;
    private File dir;
    private UnifiedLog log;

    @BeforeEach
    void setUp() throws Exception {
        scheduler = new KafkaScheduler(1);
        scheduler.startup();
        dir = new File(tmp, "topic-0");
    }

    @AfterEach
    void tearDown() throws Exception {
        if (log != null) {
            log.close();
        }
        scheduler.shutdown();
    }

    private static MemoryRecords transactional(long offset, long producerId) {
        SimpleRecord r = new SimpleRecord(T0, "k".getBytes(StandardCharsets.UTF_8), "v".getBytes(StandardCharsets.UTF_8));
        return MemoryRecords.withTransactionalRecords(offset, Compression.NONE, producerId, (short) 0, 0, 0, r);
    }

    private static MemoryRecords abort(long offset, long producerId) {
        return MemoryRecords.withEndTransactionMarker(offset, T0, 0, producerId, (short) 0,
                new EndTransactionMarker(ControlRecordType.ABORT, 0));
    }

    /** Producers 1 and 2 each write a transactional batch (0, 1), both aborted (markers 2, 3),
     *  replicated to this broker; clean shutdown; while it is down, its .txnindex is cut to
     *  {@code txnIndexBytes}; clean restart; the producer ids a read_committed fetch from 0 answers. */
    private List<Long> abortedProducersAfterCuttingTheTxnIndexTo(int txnIndexBytes) throws Exception {
        log = Logs.open(dir, config, 0L, 0L, true, scheduler, Time.SYSTEM);
        log.appendAsFollower(transactional(0, 1L), 0);
        log.appendAsFollower(transactional(1, 2L), 0);
        log.appendAsFollower(abort(2, 1L), 0);
        log.appendAsFollower(abort(3, 2L), 0);
        Logs.shutdown(log);
        File txnIndex = new File(dir, "00000000000000000000.txnindex");
        assertEquals(2 * ABORTED_TXN_BYTES, txnIndex.length());
        try (RandomAccessFile f = new RandomAccessFile(txnIndex, "rw")) {
            f.setLength(txnIndexBytes);
        }
        log = Logs.open(dir, config, 0L, 4L, true, scheduler, Time.SYSTEM);
        log.updateHighWatermark(log.logEndOffset());
        return log.read(0L, 1 << 20, FetchIsolation.TXN_COMMITTED, true).abortedTransactions.orElseThrow().stream()
                .map(FetchResponseData.AbortedTransaction::producerId).sorted().toList();
    }

    @Test
    void testReadCommittedAfterATxnIndexCutInsideARecord() throws Exception {
        // expected: the load notices the partial record (and rebuilds the index from the markers)
        assertEquals(List.of(1L, 2L), abortedProducersAfterCuttingTheTxnIndexTo(ABORTED_TXN_BYTES + 16));
    }

    @Test
    @Tag("control")
    void testReadCommittedWithAnIntactTxnIndex() throws Exception {
        assertEquals(List.of(1L, 2L), abortedProducersAfterCuttingTheTxnIndexTo(2 * ABORTED_TXN_BYTES));
    }
}
