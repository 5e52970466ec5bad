package klc.findings;

import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.UnifiedLog;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * lookup-by-a-lost-max-timestamp (README.md beside this project): after a restart a segment's
 * max timestamp is loaded lazily from its last time-index entry; LogSegment.truncateTo truncates
 * the indexes first and only then asks maxTimestampSoFar() whether to recompute the max. When the
 * truncation removed every time-index entry, that first load reads the emptied index: −1, "no
 * timestamps", and the recomputation is skipped although the records kept carry timestamps.
 *
 * <p>LogSegmentTest.testReloadLargestTimestampAndNextOffsetAfterTruncation checks the max after a
 * truncation of a reloaded segment whose time index keeps entries; these add a close and reopen
 * (the final time-index entry a shutdown writes is the only entry) before a truncation below it.
 */
class LookupByALostMaxTimestampTest {
    private static final long TS0 = 1_699_000_000_000L;
    private static final long TS1 = 1_699_000_000_001L;

    @TempDir
    File tmp;
    private final LogConfig config = Logs.config(Map.of());
    private KafkaScheduler scheduler;
    private UnifiedLog log;

    @BeforeEach
    void setUp() {
        scheduler = new KafkaScheduler(1);
        scheduler.startup();
    }

    @AfterEach
    void tearDown() throws Exception {
        if (log != null) {
            log.close();
        }
        scheduler.shutdown();
    }

    /** A segment holding offsets 0 (TS0) and 1 (TS1), closed as a shutdown closes it, reopened. */
    private LogSegment reloadedSegment(File dir) throws Exception {
        LogSegment segment = LogSegment.open(dir, 0L, config, Time.SYSTEM, false, 4096, false, "");
        segment.append(0L, Logs.batch(0L, 10, TS0));
        segment.append(1L, Logs.batch(1L, 10, TS1));
        segment.flush();
        segment.onBecomeInactiveSegment(); // a shutdown's (or a roll's) final time-index entry
        segment.close();
        assertEquals(12, new File(dir, "00000000000000000000.timeindex").length(),
                "the final time-index entry (TS1 at offset 1) is the only one");
        return LogSegment.open(dir, 0L, config, Time.SYSTEM, true, 4096, false, "");
    }

    @Test
    void testReloadedSegmentKeepsTheMaxTimestampOfWhatATruncationKeeps() throws Exception {
        LogSegment segment = reloadedSegment(tmp);
        segment.truncateTo(1L);
        assertEquals(1L, segment.readNextOffset());
        // expected: offset 0 (TS0) is kept, so TS0 is the segment's max
        assertEquals(OptionalLong.of(TS0), segment.largestRecordTimestamp());
        assertEquals(TS0, segment.maxTimestampSoFar());
        segment.close();
    }

    @Test
    @Tag("control")
    void testReloadedSegmentWhoseMaxWasLoadedBeforeTheTruncation() throws Exception {
        LogSegment segment = reloadedSegment(tmp);
        assertEquals(TS1, segment.maxTimestampSoFar()); // the lazy max, loaded before the truncation
        segment.truncateTo(1L);
        assertEquals(OptionalLong.of(TS0), segment.largestRecordTimestamp());
        assertEquals(TS0, segment.maxTimestampSoFar());
        segment.close();
    }

    /** The broker's path: shut down cleanly, restart, become a follower and truncate to the new
     *  leader's offset 1, roll and fetch a newer record; ListOffsets for a time between the two. */
    private Optional<FileRecords.TimestampAndOffset> lookupAfterARestartAndATruncation(boolean maxLoadedFirst)
            throws Exception {
        File dir = new File(tmp, "topic-0");
        log = Logs.open(dir, config, 0L, 0L, true, scheduler, Time.SYSTEM);
        log.appendAsLeader(Logs.batch(0L, 10, TS0), 0);
        log.appendAsLeader(Logs.batch(0L, 10, TS1), 0);
        Logs.shutdown(log);
        log = Logs.open(dir, config, 0L, 2L, true, scheduler, Time.SYSTEM);
        if (maxLoadedFirst) {
            log.activeSegment().maxTimestampSoFar();
        }
        log.truncateTo(1L);
        log.roll();
        log.appendAsFollower(Logs.batch(1L, 10, 1_700_000_000_500L), 0);
        log.updateHighWatermark(log.logEndOffset());
        return log.fetchOffsetByTimestamp(1_699_500_000_000L, Optional.empty()).timestampAndOffsetOpt();
    }

    @Test
    void testOffsetForTimestampAfterARestartAndATruncationBelowTheLastTimeIndexEntry() throws Exception {
        // expected: offset 1 is the earliest whose timestamp is at or after the target
        assertEquals(Optional.of(1L), lookupAfterARestartAndATruncation(false).map(t -> t.offset));
    }

    @Test
    @Tag("control")
    void testOffsetForTimestampWhenTheMaxWasLoadedBeforeTheTruncation() throws Exception {
        assertEquals(Optional.of(1L), lookupAfterARestartAndATruncation(true).map(t -> t.offset));
    }
}
