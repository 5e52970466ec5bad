package klc.findings;

import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.TimeIndex;
import org.apache.kafka.storage.internals.log.UnifiedLog;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * full-index-mid-append (README.md beside this project): a follower's fetch of several batches
 * into a segment whose time index has fewer free slots than the fetch needs entries.
 *
 * <p>Since 4.x's LogSegment.append adds index entries per batch, an append of n batches of at
 * least index.interval.bytes each adds n time-index entries, but UnifiedLog rolls before an
 * append only when the active segment's indexes are already full. The fetch below runs out of
 * slots half way, after all its bytes are in the .log.
 *
 * <p>The trigger at broker scale: index.interval.bytes at its default (4096), batches of 5 KB, and
 * a time index smaller than segment.bytes / 341 (e.g. log.index.size.max.bytes=1 MiB with the
 * default 1 GiB segments: 87381 time-index entries fill after about 350 MB). Here
 * segment.index.bytes=4096 (341 entries, the last kept for the roll) keeps the log at 1.7 MB; the arithmetic is the same.
 * Kafka's roll tests (UnifiedLogTest.testSizeBasedLogRoll, testTimeBasedLogRollDuringAppend) append
 * one batch per call; this one is a follower's append of several.
 */
class FullIndexMidAppendTest {
    private static final int BATCH_VALUE_BYTES = 5000;   // one record: a batch of about 5 KB
    private static final int FETCHED_BATCHES = 4;
    private static final long T0 = 1_700_000_000_000L;

    @TempDir
    File tmp;
    private KafkaScheduler scheduler;
    private UnifiedLog log;
    private File dir;
    private final LogConfig config = Logs.config(Map.of("segment.index.bytes", 4096));

    @BeforeEach
    void setUp() throws Exception {
        scheduler = new KafkaScheduler(1);
        scheduler.startup();
        dir = new File(tmp, "topic-0");
        log = Logs.open(dir, config, 0L, 0L, false, scheduler, Time.SYSTEM);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (log != null) {
            log.close();
        }
        scheduler.shutdown();
    }

    /** Free slots of the active segment's time index: a time index keeps its last slot for the
     *  entry a roll or close writes, so it is full one entry before its size (4096 / 12 = 341). */
    private int freeTimeIndexSlots() throws Exception {
        TimeIndex index = log.activeSegment().timeIndex();
        return index.maxEntries() - 1 - index.entries();
    }

    /** Appends leader batches until the active segment's time index has {@code free} slots left. */
    private long fillTimeIndexLeaving(int free) throws Exception {
        return fillTimeIndexLeaving(free, BATCH_VALUE_BYTES);
    }

    private long fillTimeIndexLeaving(int free, int valueBytes) throws Exception {
        long offset = 0;
        long limit = log.activeSegment().timeIndex().maxEntries() + 1L;
        while (freeTimeIndexSlots() > free && offset < limit) {
            log.appendAsLeader(Logs.batch(0, valueBytes, T0 + offset), 0);
            offset++;
        }
        assertEquals(1, log.logSegments().size(), "the fill itself must not roll");
        assertEquals(free, freeTimeIndexSlots());
        return offset;
    }

    /** The follower's fetch: {@code FETCHED_BATCHES} 5 KB batches from {@code from} on, newer timestamps. */
    private MemoryRecords fetch(long from) {
        List<MemoryRecords> batches = new ArrayList<>();
        for (long o = from; o < from + FETCHED_BATCHES; o++) {
            batches.add(Logs.batch(o, BATCH_VALUE_BYTES, T0 + o));
        }
        return Logs.fetched(batches);
    }

    @Test
    void testFollowerFetchIntoATimeIndexWithFewerFreeSlotsThanBatches() throws Exception {
        long leo = fillTimeIndexLeaving(2);
        // expected: the fetch is appended (rolling when the index fills), as it is with 4 free slots
        assertDoesNotThrow(() -> log.appendAsFollower(fetch(leo), 0));
        assertEquals(leo + FETCHED_BATCHES, log.logEndOffset());
    }

    @Test
    void testRefusedFollowerFetchLeavesNothingBehind() throws Exception {
        long leo = fillTimeIndexLeaving(2);
        int sizeBefore = log.activeSegment().size();
        // the replica fetcher catches this, logs "Unexpected error occurred while processing data
        // for partition" and marks the partition failed: no more fetches for it, the follower
        // drops out of the ISR and the partition stays under-replicated
        assertThrows(IllegalArgumentException.class, () -> log.appendAsFollower(fetch(leo), 0));
        assertEquals(leo, log.logEndOffset());
        // expected: a refused append leaves the log as it was
        assertEquals(leo - 1, Logs.lastOffsetInFiles(log), "the .log holds offsets past the log end");
        assertEquals(sizeBefore, log.activeSegment().size());
    }

    @Test
    void testRefusedFollowerFetchIsNotTheLogAfterARestart() throws Exception {
        long leo = fillTimeIndexLeaving(2);
        assertThrows(IllegalArgumentException.class, () -> log.appendAsFollower(fetch(leo), 0));
        Logs.shutdown(log);
        log = Logs.open(dir, config, 0L, leo, true, scheduler, Time.SYSTEM);
        // expected: the log ends where it ended when it was shut down
        assertEquals(leo, log.logEndOffset(), "a clean restart reads the refused batches back as the log");
    }

    @Test
    void testRetriedFollowerFetchLeavesNoSecondCopyBehind() throws Exception {
        long leo = fillTimeIndexLeaving(2);
        assertThrows(IllegalArgumentException.class, () -> log.appendAsFollower(fetch(leo), 0));
        // the fetcher resumes (after a leadership change): the now full index rolls first
        log.appendAsFollower(fetch(leo), 0);
        assertEquals(leo + FETCHED_BATCHES, log.logEndOffset());
        assertEquals(2, log.logSegments().size());
        // expected: the old segment ends where the new one begins
        var old = log.logSegments().get(0);
        long lastInOld = -1;
        for (var batch : old.log().batches()) {
            lastInOld = batch.lastOffset();
        }
        assertEquals(leo - 1, lastInOld, "the old segment keeps a second copy of offsets from " + leo);
    }

    /**
     * The same at broker scale (nightly: {@code -Dfindings.broker.scale=true}): a 1 MiB time index
     * (log.index.size.max.bytes=1048576) in a default 1 GiB segment, filled by about 360 MB of
     * 4.1 KB leader batches.
     */
    @Test
    @EnabledIfSystemProperty(named = "findings.broker.scale", matches = "true")
    void testFollowerFetchIntoATimeIndexWithFewerFreeSlotsThanBatchesAtBrokerScale() throws Exception {
        log.close();
        log = Logs.open(new File(tmp, "topic-1"), Logs.config(Map.of("segment.index.bytes", 1 << 20)), 0L, 0L, false,
                scheduler, Time.SYSTEM);
        long leo = fillTimeIndexLeaving(2, 4100);
        assertEquals(87_380 - 2, log.activeSegment().timeIndex().entries());
        assertDoesNotThrow(() -> log.appendAsFollower(fetch(leo), 0));
        assertEquals(leo + FETCHED_BATCHES, log.logEndOffset());
    }

    @Test
    @Tag("control")
    void testFollowerFetchWithAsManyFreeSlotsAsBatchesIsAppended() throws Exception {
        long leo = fillTimeIndexLeaving(FETCHED_BATCHES);
        log.appendAsFollower(fetch(leo), 0);
        assertEquals(leo + FETCHED_BATCHES, log.logEndOffset());
        assertEquals(leo + FETCHED_BATCHES - 1, Logs.lastOffsetInFiles(log));
    }

    @Test
    @Tag("control")
    void testFollowerFetchIntoAFullTimeIndexRollsFirst() throws Exception {
        long leo = fillTimeIndexLeaving(0);
        log.appendAsFollower(fetch(leo), 0);
        assertEquals(2, log.logSegments().size());
        assertEquals(leo, log.activeSegment().baseOffset());
        assertEquals(leo + FETCHED_BATCHES, log.logEndOffset());
    }
}
