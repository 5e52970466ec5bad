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
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * truncate-fully-interrupted-keeps-the-old-active-segment (README.md beside this project):
 * UnifiedLog.truncateFullyAndStartAt (a follower whose leader's log starts past its own end)
 * opens the new segment before it renames the old active segment {@code .deleted}. A process that
 * dies between the two leaves both; the next load keeps both, and the old one holds offsets at
 * and past the new log end.
 *
 * <p>The process death is placed between the two steps by Kafka's own code: a directory in the
 * way of the old segment's rename makes the rename fail right where a kill would stop it; the
 * broker is then restarted over the files as they are (unclean: no shutdown ran). Extends
 * LocalLogTest.testTruncateFullyAndStartAt and UnifiedLogTest.testTruncateFullyAndStart by a
 * restart after an interrupted call.
 */
class TruncateFullyInterruptedTest {
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

    /** A follower's log of offsets 20..23 in segment 20, told by its new leader to start at 22;
     *  the process dies inside that call (or, with {@code interrupted} false, right after it). */
    private void truncateFullyTo22(boolean interrupted) throws Exception {
        abandoned = Logs.open(dir, config, 0L, 0L, true, scheduler, Time.SYSTEM);
        abandoned.truncateFullyAndStartAt(20L, Optional.of(20L));
        abandoned.appendAsFollower(Logs.batch(20L, 10, T0, T0 + 1), 0);
        abandoned.appendAsFollower(Logs.batch(22L, 10, T0 + 2, T0 + 3), 0);
        abandoned.flush(true);
        File inTheWay = new File(dir, "00000000000000000020.log.deleted");
        if (interrupted) {
            assertTrue(new File(inTheWay, "blocker").mkdirs());
            assertThrows(Exception.class, () -> abandoned.truncateFullyAndStartAt(22L, Optional.of(22L)));
            Files.delete(new File(inTheWay, "blocker").toPath());
            Files.delete(inTheWay.toPath());
            assertTrue(new File(dir, "00000000000000000020.log").exists());
        } else {
            abandoned.truncateFullyAndStartAt(22L, Optional.of(22L));
        }
        assertTrue(new File(dir, "00000000000000000022.log").exists());
        // the restart: no clean shutdown, the last checkpoints said recovery point and start 20
        log = Logs.open(dir, config, 20L, 20L, false, scheduler, Time.SYSTEM);
    }

    @Test
    void testLoadAfterAnInterruptedTruncateFullyAndStartAt() throws Exception {
        truncateFullyTo22(true);
        // expected: either the old log (20..23) or the new one (empty at 22), never a log that
        // ends at 22 with a segment holding 22 and 23
        long end = log.logEndOffset();
        assertTrue(Logs.lastOffsetInFiles(log) < end,
                "log end " + end + " but segment files hold offsets up to " + Logs.lastOffsetInFiles(log));
        assertTrue(Logs.offsetsServedFrom(log, log.logStartOffset()).stream().allMatch(o -> o < end),
                "a fetch serves " + Logs.offsetsServedFrom(log, log.logStartOffset()) + " with the log ending at " + end);
    }

    @Test
    @Tag("control")
    void testLoadAfterACompletedTruncateFullyAndStartAt() throws Exception {
        truncateFullyTo22(false);
        assertEquals(22L, log.logEndOffset());
        assertEquals(22L, log.logStartOffset());
        assertEquals(1, log.logSegments().size());
        assertEquals(-1L, Logs.lastOffsetInFiles(log));
    }
}
