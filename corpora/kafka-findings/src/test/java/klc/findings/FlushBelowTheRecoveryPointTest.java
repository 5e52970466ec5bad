package klc.findings;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason;
import org.apache.kafka.storage.internals.log.UnifiedLog;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mockito.MockedStatic;
import org.mockito.Mockito;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * flush-below-the-recovery-point-skips-the-directory (README.md beside this project):
 * LocalLog.flush(offset) fsyncs the segments from the recovery point up to {@code offset}, and the
 * partition directory only when one of those segments starts at or above the recovery point the
 * flush began from. A segment file created since the directory's last fsync whose base offset is
 * below that recovery point has its bytes fsynced but not its directory entry: after a power loss
 * the file is gone, or the file it replaced is back, under a recovery point that says its records
 * are on disk.
 *
 * <p>The recovery point rises past a segment's base without a flush when the log start offset does
 * (UnifiedLog.maybeIncrementLogStartOffset: deleteRecords on the leader, the leader's log start
 * offset on a follower). The segment file is created after the directory's last fsync by the roll
 * of KAFKA-6388: a follower append into an empty active segment whose index is full deletes that
 * segment and creates a new file of the same name. A legacy (magic 1) batch in the same fetch
 * clears the leader-epoch cache, so no later leader-epoch checkpoint write fsyncs the directory.
 *
 * <p>A directory fsync leaves nothing to see short of a power cut, so the test records them with
 * Mockito's static mocks: {@link Utils#flushDir} (every directory fsync of Kafka's log layer, also
 * under flushDirIfExists and atomicMoveWithFallback) and {@link FileRecords}'s open for creation
 * (every segment file created), on the test's thread and on the scheduler's, which runs the flush
 * the roll schedules. Extends UnifiedLogTest.testRollSegmentThatAlreadyExists by a log start
 * increment before the next roll, and by what is fsynced.
 */
class FlushBelowTheRecoveryPointTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final int LEADER_EPOCH = 4;
    /** truncateFullyAndStartAt's offset: the base of the segment the append replaces. */
    private static final long START = 44L;
    /** The fetch: offsets 44..45 (v2), then 46..49 (a magic-1 gzip wrapper). */
    private static final long LOG_END = 50L;
    /** The leader's log start offset after its deleteRecords: the last fetched offset. */
    private static final long NEW_LOG_START = 49L;

    @TempDir
    File tmp;
    /** segment.index.bytes=12: a one-entry time index, whose slot is kept for the roll's entry, so
     *  full while its segment is empty. */
    private final LogConfig config = Logs.config(Map.of("segment.index.bytes", 12));
    private final FsyncJournal journal = new FsyncJournal();
    private KafkaScheduler scheduler;
    private Watch watching;
    private File dir;
    private UnifiedLog log;

    @BeforeEach
    void setUp() {
        scheduler = new RecordingScheduler(journal);
        scheduler.startup();
        watching = journal.watchThisThread();
        dir = new File(tmp, "topic-0");
    }

    @AfterEach
    void tearDown() throws Exception {
        Logs.closeAll(log);
        scheduler.shutdown();
        watching.close();
    }

    /** The follower's steps; {@code raiseLogStart} false leaves out the log start increment. */
    private void fetchRaiseLogStartAndRoll(boolean raiseLogStart) throws Exception {
        log = Logs.open(dir, config, 0L, 0L, true, scheduler, Time.SYSTEM);
        // the follower's fetch from offset 0 finds the leader's log start at 44
        log.truncateFullyAndStartAt(START, Optional.empty());
        Object replacedKey = fileKey(segmentFile(START));
        int beforeFetch = journal.size();
        log.appendAsFollower(Logs.fetched(List.of(v2Batch(START, 2), legacyGzipBatch(START + 2, 4))), LEADER_EPOCH);
        assertEquals(LOG_END, log.logEndOffset());
        // the append's roll scheduled a flush below 44 (nothing to flush): let it run, as time would
        journal.awaitTask("flush-log", beforeFetch);
        // precondition: the append replaced segment 44's file by a new one of the same name
        assertNotEquals(replacedKey, fileKey(segmentFile(START)), "segment 44's file was not replaced");
        assertTrue(journal.lastCreation(segmentFile(START)) >= beforeFetch,
                "segment 44's file was not created by the append: " + journal);
        // the leader's high watermark and log start offset, as the replica fetcher applies them
        log.updateHighWatermark(LOG_END);
        if (raiseLogStart) {
            assertTrue(log.maybeIncrementLogStartOffset(NEW_LOG_START, LogStartOffsetIncrementReason.LeaderOffsetIncremented));
            assertEquals(NEW_LOG_START, log.recoveryPoint(), "the log start increment did not raise the recovery point");
        } else {
            // the flush below then starts at segment 44's base
            assertEquals(START, log.recoveryPoint());
        }
        int beforeRoll = journal.size();
        log.roll();
        journal.awaitTask("flush-log", beforeRoll);
        assertEquals(LOG_END, log.recoveryPoint(), "the roll's flush did not make offsets up to 50 durable");
    }

    /** Asserts that the partition dir was fsynced after segment 44's file was created. */
    private void assertDirectoryFsyncedAfterTheSegmentFileCreation() {
        File segment = segmentFile(START);
        int created = journal.lastCreation(segment);
        assertTrue(journal.dirFsyncsAfter(created, dir.toPath()) > 0,
                segment.getName() + " was created after the last fsync of " + dir.getName()
                        + " (replacing the empty active segment's file); the flush that made offsets up to "
                        + LOG_END + " durable, from a recovery point above the segment's base " + START
                        + ", fsynced the file but never the directory: a power loss loses its directory entry and "
                        + "the records the recovery point says are on disk; " + journal);
    }

    @Test
    void testFlushAboveARaisedRecoveryPointFsyncsTheDirectoryOfANewSegmentFile() throws Exception {
        fetchRaiseLogStartAndRoll(true);
        // expected: the new file's directory entry is durable once its records are
        assertDirectoryFsyncedAfterTheSegmentFileCreation();
    }

    @Test
    @Tag("control")
    void testFlushFromTheSegmentBaseFsyncsTheDirectory() throws Exception {
        fetchRaiseLogStartAndRoll(false);
        assertDirectoryFsyncedAfterTheSegmentFileCreation();
    }

    private File segmentFile(long baseOffset) {
        return new File(dir, String.format("%020d.log", baseOffset));
    }

    private static Object fileKey(File file) throws IOException {
        return Files.readAttributes(file.toPath(), BasicFileAttributes.class).fileKey();
    }

    /** A leader's v2 batch of {@code count} records from {@code baseOffset}, stamped with LEADER_EPOCH. */
    private static MemoryRecords v2Batch(long baseOffset, int count) {
        return MemoryRecords.withRecords(baseOffset, Compression.NONE, LEADER_EPOCH, records(baseOffset, count));
    }

    /** A magic-1 gzip wrapper of {@code count} records from {@code baseOffset}: a log written
     *  before message format v2, as a follower still fetches it. */
    private static MemoryRecords legacyGzipBatch(long baseOffset, int count) {
        return MemoryRecords.withRecords(RecordBatch.MAGIC_VALUE_V1, baseOffset, Compression.gzip().build(),
                records(baseOffset, count));
    }

    private static SimpleRecord[] records(long baseOffset, int count) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            records[i] = new SimpleRecord(T0 + baseOffset + i, ("k" + i).getBytes(StandardCharsets.UTF_8),
                    "v".getBytes(StandardCharsets.UTF_8));
        }
        return records;
    }

    /** A thread's recording: closing it stops the thread's static mocks. */
    interface Watch extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Kafka's directory fsyncs and segment file creations, in the order they happened, on every
     * thread that watches. Static mocks are per thread: each thread opens its own.
     */
    static final class FsyncJournal {
        private final List<String> kinds = new ArrayList<>();
        private final List<Path> paths = new ArrayList<>();
        private final List<String> threads = new ArrayList<>();

        /** Starts recording on this thread: the returned handle stops it. */
        Watch watchThisThread() {
            MockedStatic<Utils> utils = Mockito.mockStatic(Utils.class, invocation -> {
                Object result = invocation.callRealMethod();
                if (invocation.getMethod().getName().equals("flushDir")) {
                    record("dir fsync", invocation.getArgument(0));
                }
                return result;
            });
            MockedStatic<FileRecords> fileRecords = Mockito.mockStatic(FileRecords.class, invocation -> {
                Object result = invocation.callRealMethod();
                // open(file, mutable, fileAlreadyExists, initFileSize, preallocate): the others delegate to it
                if (invocation.getMethod().getName().equals("open") && invocation.getArguments().length == 5
                        && !(Boolean) invocation.getArgument(2)) {
                    record("created", ((File) invocation.getArgument(0)).toPath());
                }
                return result;
            });
            return () -> {
                fileRecords.close();
                utils.close();
            };
        }

        synchronized void record(String kind, Path path) {
            kinds.add(kind);
            paths.add(path == null ? null : path.toAbsolutePath().normalize());
            threads.add(Thread.currentThread().getName());
            notifyAll();
        }

        synchronized int size() {
            return kinds.size();
        }

        /** The position of the last creation of {@code file}, -1 if none. */
        synchronized int lastCreation(File file) {
            Path path = file.toPath().toAbsolutePath().normalize();
            for (int i = kinds.size() - 1; i >= 0; i--) {
                if (kinds.get(i).equals("created") && path.equals(paths.get(i))) {
                    return i;
                }
            }
            return -1;
        }

        /** How many fsyncs of {@code dir} came after position {@code position}. */
        synchronized int dirFsyncsAfter(int position, Path dir) {
            Path normalized = dir.toAbsolutePath().normalize();
            int count = 0;
            for (int i = position + 1; i < kinds.size(); i++) {
                if (kinds.get(i).equals("dir fsync") && normalized.equals(paths.get(i))) {
                    count++;
                }
            }
            return count;
        }

        /** Waits until a task named {@code name} scheduled after position {@code position} has run
         *  (RecordingScheduler records each task's end). */
        synchronized void awaitTask(String name, int position) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!kinds.subList(position, kinds.size()).contains("task " + name + " done")) {
                long left = deadline - System.nanoTime();
                assertTrue(left > 0, "the scheduled task " + name + " did not run within 30 s");
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }

        @Override
        public synchronized String toString() {
            StringBuilder s = new StringBuilder("journal [");
            for (int i = 0; i < kinds.size(); i++) {
                s.append(i == 0 ? "" : ", ").append(kinds.get(i));
                if (paths.get(i) != null) {
                    s.append(' ').append(paths.get(i).getFileName());
                }
                s.append(" (").append(threads.get(i)).append(')');
            }
            return s.append(']').toString();
        }
    }

    /** The broker's scheduler, each task watched by the journal on the scheduler's thread and its
     *  end recorded: the roll's flush runs there, as on a broker. */
    static final class RecordingScheduler extends KafkaScheduler {
        private final FsyncJournal journal;

        RecordingScheduler(FsyncJournal journal) {
            super(1);
            this.journal = journal;
        }

        @Override
        public ScheduledFuture<?> schedule(String name, Runnable task, long delayMs, long periodMs) {
            return super.schedule(name, () -> {
                try (Watch watching = journal.watchThisThread()) {
                    task.run();
                } finally {
                    journal.record("task " + name + " done", null);
                }
            }, delayMs, periodMs);
        }
    }
}
