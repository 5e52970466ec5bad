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
import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * truncate-interrupted-leaves-a-hole (README.md beside this project): UnifiedLog.truncateTo
 * renames the segments above its target {@code .deleted} in ascending order and cuts the segment
 * holding the target last. A process that dies after the first rename leaves the higher segments
 * in place; the next load serves a log with the renamed segment's offsets missing, under records
 * the truncation was removing.
 *
 * <p>The process death is placed between the two renames by Kafka's own code: a directory in the
 * way of the second segment's rename makes it fail right where a kill would stop the call; the
 * broker is then restarted over the files as they are (unclean: no shutdown ran). Extends
 * UnifiedLogTest.testTruncateTo by a restart after an interrupted call.
 */
class TruncateInterruptedLeavesAHoleTest {
    private static final long T0 = 1_700_000_000_000L;

    @TempDir
    File tmp;
    private final LogConfig config = Logs.config(Map.of());
    private KafkaScheduler scheduler;
    private File dir;
    private UnifiedLog log;
    private UnifiedLog abandoned;

    @BeforeEach
    void setUp() throws Exception {
        scheduler = new KafkaScheduler(1);
        scheduler.startup();
        dir = new File(tmp, "topic-0");
    }

    @AfterEach
    void tearDown() throws Exception {
        Logs.closeAll(log, abandoned);
        scheduler.shutdown();
    }

    /** A follower's log in segments 0 (offsets 0..7), 8 (8..11), 12 (12..13) and 14 (14..15),
     *  truncated to 9; the process dies inside that call (or, with {@code interrupted} false,
     *  right after it). */
    private void truncateTo9(boolean interrupted) throws Exception {
        abandoned = Logs.open(dir, config, 0L, 0L, true, scheduler, Time.SYSTEM);
        long[][] segments = {{0, 8}, {8, 4}, {12, 2}, {14, 2}};
        for (long[] s : segments) {
            if (s[0] > 0) {
                abandoned.roll();
            }
            long[] timestamps = new long[(int) s[1]];
            for (int i = 0; i < timestamps.length; i++) {
                timestamps[i] = T0 + s[0] + i;
            }
            abandoned.appendAsFollower(Logs.batch(s[0], 10, timestamps), 0);
        }
        abandoned.flush(true);
        assertEquals(4, abandoned.logSegments().size());
        File inTheWay = new File(dir, "00000000000000000014.log.deleted");
        if (interrupted) {
            assertTrue(new File(inTheWay, "blocker").mkdirs());
            assertThrows(Exception.class, () -> abandoned.truncateTo(9L));
            Files.delete(new File(inTheWay, "blocker").toPath());
            Files.delete(inTheWay.toPath());
            assertTrue(new File(dir, "00000000000000000012.log.deleted").exists());
            assertTrue(new File(dir, "00000000000000000014.log").exists());
        } else {
            abandoned.truncateTo(9L);
        }
        // the restart: no clean shutdown, the last checkpoints said recovery point and start 0
        log = Logs.open(dir, config, 0L, 0L, false, scheduler, Time.SYSTEM);
    }

    @Test
    void testLoadAfterAnInterruptedTruncateTo() throws Exception {
        truncateTo9(true);
        // expected: the old log (0..15) or the truncated one (0..7, then 8..11 cut at its batch);
        // never offsets missing below the log end
        List<Long> served = Logs.offsetsServedFrom(log, log.logStartOffset());
        for (int i = 0; i < served.size(); i++) {
            assertEquals((long) i, served.get(i), "a fetch from the start serves " + served + ": offsets missing");
        }
    }

    @Test
    @Tag("control")
    void testLoadAfterACompletedTruncateTo() throws Exception {
        truncateTo9(false);
        assertEquals(8L, log.logEndOffset());
        assertEquals(2, log.logSegments().size());
    }
}
