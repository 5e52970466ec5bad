package klc.findings;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.server.util.Scheduler;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * KAFKA-15572 (docs/kafka-15572.md), on a release's own classes: the flush a roll
 * schedules races with the rename of the log's directory that promotes a future replica
 * (replaceCurrentWithFutureLog: {@code topic-0.<id>-future} becomes {@code topic-0}).
 *
 * <p>LocalLog.flush fsyncs the segments, then reads the log's dir and fsyncs it with
 * Utils.flushDirIfExists, outside UnifiedLog's lock, which renameDir takes. A rename that lands
 * between the read and the fsync leaves the old path to fsync: it no longer exists, flushDirIfExists
 * swallows the NoSuchFileException, and the directory now holding the rolled segment is never
 * fsynced, though the flush moved the recovery point past the segment's records. The test puts
 * the rename exactly there (a static mock of Utils runs it, on another thread, when the flush calls
 * flushDirIfExists with the old path) and records every directory fsync and segment creation.
 * The controls: the same flush with no rename, and the rename before the flush.
 */
class Kafka15572Test {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("topic", 0);

    @TempDir
    File tmp;
    private final HeldTasks scheduler = new HeldTasks();
    private final List<String> journal = new ArrayList<>();
    private UnifiedLog log;
    private File futureDir;
    private MockedStatic<Utils> utils;
    private MockedStatic<FileRecords> fileRecords;
    /** Run when the flush is about to fsync the future dir: the rename, or nothing. */
    private final AtomicReference<Runnable> insideTheFlush = new AtomicReference<>();

    @BeforeEach
    void setUp() throws Exception {
        futureDir = new File(tmp, UnifiedLog.logFutureDirName(TP));
        log = Logs.open(futureDir, Logs.config(Map.of()), 0L, 0L, false, scheduler, Time.SYSTEM);
        log.appendAsLeader(Logs.batch(0, 20, T0), 0);
        log.flush(true);   // segment 0 and the dir are durable
        utils = Mockito.mockStatic(Utils.class, invocation -> {
            String name = invocation.getMethod().getName();
            if (name.equals("flushDirIfExists") && futureDir.toPath().equals(invocation.getArgument(0))) {
                Runnable hook = insideTheFlush.getAndSet(null);
                if (hook != null) {
                    hook.run();
                }
            }
            Object result = invocation.callRealMethod();
            if (name.equals("flushDir")) {   // a directory is known by its inode: a rename keeps it
                record("dir fsync " + inode(invocation.getArgument(0)));
            }
            return result;
        });
        fileRecords = Mockito.mockStatic(FileRecords.class, invocation -> {
            Object result = invocation.callRealMethod();
            if (invocation.getMethod().getName().equals("open") && invocation.getArguments().length == 5
                    && !(Boolean) invocation.getArgument(2)) {
                record("created " + ((File) invocation.getArgument(0)).getName());
            }
            return result;
        });
    }

    @AfterEach
    void tearDown() throws Exception {
        fileRecords.close();
        utils.close();
        Logs.closeAll(log);
    }

    private synchronized void record(String what) {
        journal.add(what);
    }

    /** The promotion's rename, on a thread of its own as on the broker (the alter-log-dirs path). */
    private void promote() {
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread renaming = new Thread(() -> log.renameDir(TP.topic() + "-" + TP.partition(), true), "promotion");
        renaming.setUncaughtExceptionHandler((thread, e) -> failed.set(e));
        renaming.start();
        try {
            renaming.join(30_000);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        assertFalse(renaming.isAlive(), "the rename did not finish");
        assertEquals(null, failed.get(), "the rename failed");
    }

    /** Rolls segment 1 and appends offset 1 to it (its file created after the dir's last fsync),
     *  then rolls segment 2 and runs the flush that roll schedules, which covers segment 1: the
     *  rename {@code inside} it, or not.  Returns where segment 1's creation lies in the journal. */
    private int rollAndFlush(Runnable inside) throws Exception {
        log.roll();
        scheduler.runHeld();
        log.appendAsLeader(Logs.batch(0, 20, T0 + 1), 0);
        log.roll();
        int created;
        synchronized (this) {
            created = journal.lastIndexOf("created 00000000000000000001.log");
        }
        assertTrue(created >= 0, "the roll did not create segment 1: " + journal);
        insideTheFlush.set(inside);
        scheduler.runHeld();
        assertEquals(2L, log.recoveryPoint(), "the roll's flush did not make offsets 0..1 durable");
        return created;
    }

    private static Object inode(Path path) throws IOException {
        return Files.readAttributes(path, BasicFileAttributes.class).fileKey();
    }

    private void assertHoldingDirFsyncedAfter(int created) throws IOException {
        String holding = log.dir().getName();
        String fsynced = "dir fsync " + inode(log.dir().toPath());
        long after = journal.subList(created + 1, journal.size()).stream().filter(fsynced::equals).count();
        assertTrue(after > 0, "segment 1 was created in " + futureDir.getName() + ", renamed " + holding
                + "; the flush made its records durable but no fsync of that directory (under either name)"
                + " followed the creation, so a power loss can take the segment's directory entry: " + journal);
    }

    @Test
    void testRollFlushRacingAPromotionFsyncsTheDirectoryHoldingTheSegment() throws Exception {
        int created = rollAndFlush(this::promote);
        assertEquals(TP.topic() + "-" + TP.partition(), log.dir().getName());
        assertHoldingDirFsyncedAfter(created);
    }

    @Test
    @Tag("control")
    void testRollFlushWithoutARenameFsyncsTheDirectory() throws Exception {
        assertHoldingDirFsyncedAfter(rollAndFlush(null));
    }

    @Test
    @Tag("control")
    void testRollFlushAfterAPromotionFsyncsTheRenamedDirectory() throws Exception {
        int created = rollAndFlush(null);
        promote();
        assertHoldingDirFsyncedAfter(created);
    }

    /** Kafka's scheduler with every task held until {@link #runHeld}, which runs them on the caller's thread. */
    static final class HeldTasks implements Scheduler {
        private final List<Runnable> held = new ArrayList<>();

        @Override
        public void startup() { }

        @Override
        public void shutdown() { }

        @Override
        public synchronized ScheduledFuture<?> schedule(String name, Runnable task, long delayMs, long periodMs) {
            if (periodMs <= 0) {
                held.add(task);
            }
            return null;
        }

        @Override
        public void resizeThreadPool(int newSize) { }

        void runHeld() {
            List<Runnable> tasks;
            synchronized (this) {
                tasks = new ArrayList<>(held);
                held.clear();
            }
            tasks.forEach(Runnable::run);
        }
    }
}
