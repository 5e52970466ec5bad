package klc.mutation.candidates;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogFileUtils;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;
import org.apache.kafka.test.TestUtils;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * A candidate test for Kafka (docs/kafka-mutation.md): the load of a partition removes the files of
 * a segment deletion that a crash interrupted (renamed to {@code .deleted}, not yet deleted by the
 * scheduler).  None of kafka-storage's own unit tests in 4.3.1 fails when LogLoader keeps them (PIT
 * mutant of {@code LogLoader.removeTempFilesAndCollectSwapFiles}: the {@code .deleted} suffix check
 * replaced by false); this suite's {@code log/retention-of-an-empty-segment-after-restart.json}
 * does.  Passes on the release; fails on that mutant.
 */
public class LoadRemovesDeletedFilesTest {
    private final KafkaScheduler scheduler = new KafkaScheduler(1);
    private File logDir;

    @BeforeEach
    public void setUp() {
        logDir = new File(TestUtils.tempDirectory(), "topic-0");
        assertEquals(true, logDir.mkdirs());
        scheduler.startup();
    }

    @AfterEach
    public void tearDown() throws InterruptedException {
        scheduler.shutdown();
    }

    @Test
    public void testLoadRemovesTheFilesOfAnInterruptedSegmentDeletion() throws IOException {
        List<File> leftovers = List.of(
            new File(logDir, LogFileUtils.filenamePrefixFromOffset(0) + LogFileUtils.LOG_FILE_SUFFIX + LogFileUtils.DELETED_FILE_SUFFIX),
            new File(logDir, LogFileUtils.filenamePrefixFromOffset(0) + LogFileUtils.INDEX_FILE_SUFFIX + LogFileUtils.DELETED_FILE_SUFFIX),
            new File(logDir, LogFileUtils.filenamePrefixFromOffset(0) + LogFileUtils.TIME_INDEX_FILE_SUFFIX + LogFileUtils.DELETED_FILE_SUFFIX));
        for (File f : leftovers) {
            Files.write(f.toPath(), new byte[0]);
        }

        UnifiedLog log = UnifiedLog.create(logDir, new LogConfig(new HashMap<>()), 0L, 0L, scheduler,
            new BrokerTopicStats(), Time.SYSTEM, 900_000, new ProducerStateManagerConfig(86_400_000, false),
            600_000, new LogDirFailureChannel(1), false, Optional.empty());
        try {
            for (File f : leftovers) {
                assertFalse(f.exists(), "the load left " + f.getName() + " behind");
            }
            assertEquals(0L, log.logEndOffset());
        } finally {
            log.close();
        }
    }
}
