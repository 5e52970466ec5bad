package klc.findings;

import org.apache.kafka.common.utils.Time;
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
import java.nio.file.Files;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * rebuild-reads-a-torn-segment (README.md beside this project): a power loss while an append
 * rolls segment 8 keeps the new segment's .log but loses the unflushed write of offsets 4..7 into
 * segment 0, whose size the file system kept (its tail reads as zeros: XFS, ext4 data=writeback).
 * The load finds segment 8 without an offset index and recovers it at once; that recovery first
 * rebuilds producer state up to offset 8 and, with no snapshot, reads segment 0 from its start,
 * before recoverLog would have cut segment 0's torn tail. CorruptRecordException ends the load.
 *
 * <p>Combines what LogLoaderTest.testCorruptLog (a corrupted tail recovered) and testIndexRebuild
 * (a deleted index rebuilt at load) check apart: the control differs from the finding only by
 * segment 8's empty .index, which turns the load order around.
 */
class RebuildReadsATornSegmentTest {
    private static final long T0 = 1_700_000_000_000L;

    @TempDir
    File tmp;
    private final LogConfig config = Logs.config(Map.of(LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG, 700));
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

    /** Offsets 0..3 flushed (the recovery point checkpointed is 4), 4..7 written into segment 0
     *  but not flushed, segment 8 rolled, then the power loss's image of the files. Returns the
     *  byte position in segment 0 where offset 4 starts. */
    private long powerLossWhileRollingSegment8(boolean segment8IndexSurvives) throws Exception {
        UnifiedLog before = Logs.open(dir, config, 0L, 0L, true, scheduler, Time.SYSTEM);
        for (long o = 0; o < 8; o += 2) {
            before.appendAsLeader(Logs.batch(0L, 20, T0 + o, T0 + o + 1), 0);
        }
        long torn = before.activeSegment().size() / 2; // two of segment 0's four equal batches
        before.roll();
        before.appendAsLeader(Logs.batch(0L, 20, T0 + 8, T0 + 9), 0);
        assertEquals(8L, before.activeSegment().baseOffset());
        before.close(); // the files' contents are then set to what the power loss left
        File segment0 = new File(dir, "00000000000000000000.log");
        long size = segment0.length();
        try (RandomAccessFile f = new RandomAccessFile(segment0, "rw")) {
            f.seek(torn);
            f.write(new byte[(int) (size - torn)]); // lost write, size kept: zeros
        }
        try (RandomAccessFile f = new RandomAccessFile(new File(dir, "00000000000000000008.log"), "rw")) {
            f.setLength(0); // the roll's create survived, the append into it did not
        }
        Files.delete(new File(dir, "00000000000000000008.timeindex").toPath());
        File index8 = new File(dir, "00000000000000000008.index");
        Files.delete(index8.toPath());
        if (segment8IndexSurvives) {
            assertTrue(index8.createNewFile());
        }
        for (File f : dir.listFiles((d, name) -> name.endsWith(".snapshot"))) {
            Files.delete(f.toPath()); // the roll's producer snapshot at 8 was lost with the rest
        }
        return torn;
    }

    private UnifiedLog restartAfterThePowerLoss() throws Exception {
        return Logs.open(dir, config, 0L, 4L, false, scheduler, Time.SYSTEM); // recovery point 4
    }

    @Test
    void testUncleanLoadWithATornSegmentBelowASegmentWithoutIndex() throws Exception {
        powerLossWhileRollingSegment8(false);
        // expected: recovery cuts segment 0 at offset 4 and drops segment 8; the flushed 0..3 stay
        log = assertDoesNotThrow(this::restartAfterThePowerLoss, "the broker's load of the partition fails");
        assertEquals(4L, log.logEndOffset());
    }

    @Test
    @Tag("control")
    void testUncleanLoadWithATornSegmentBelowASegmentWithItsIndex() throws Exception {
        powerLossWhileRollingSegment8(true);
        log = restartAfterThePowerLoss();
        assertEquals(4L, log.logEndOffset());
        assertEquals(1, log.logSegments().size());
    }
}
