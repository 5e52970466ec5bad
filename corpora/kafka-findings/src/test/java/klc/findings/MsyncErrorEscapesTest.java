package klc.findings;

import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.AbstractIndex;
import org.apache.kafka.storage.internals.log.LazyIndex;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.OffsetIndex;
import org.apache.kafka.storage.internals.log.UnifiedLog;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.Mockito.doThrow;
import static org.mockito.Mockito.spy;

/**
 * msync-error-escapes-as-an-unchecked-exception (README.md beside this project): an I/O error on
 * the msync of a segment's offset index during a flush.
 *
 * <p>AbstractIndex.flush calls MappedByteBuffer.force, which the JDK (14 and later) reports
 * failing with an UncheckedIOException wrapping the IOException of msync. UnifiedLog's I/O error
 * handling turns an IOException into a KafkaStorageException and takes the log dir offline
 * (LogDirFailureChannel, KIP-112); an UncheckedIOException is no IOException, so it passes through:
 * the flush fails, the dir stays online, and the broker goes on appending to a disk that failed.
 *
 * <p>The index's flush is made to fail as the JDK fails it (a spy of the segment's OffsetIndex
 * throwing what MappedByteBuffer.force throws on EIO); the control makes the segment's FileRecords
 * flush fail with the IOException FileChannel.force throws on EIO, which Kafka handles.
 */
class MsyncErrorEscapesTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final String EIO = "Input/output error";

    @TempDir
    File tmp;
    private KafkaScheduler scheduler;
    private UnifiedLog log;
    private final LogDirFailureChannel failures = new LogDirFailureChannel(1);

    @BeforeEach
    void setUp() throws Exception {
        scheduler = new KafkaScheduler(1);
        scheduler.startup();
        log = Logs.open(new File(tmp, "topic-0"), Logs.config(Map.of()), 0L, 0L, false, scheduler, Time.SYSTEM, failures);
        log.appendAsLeader(Logs.batch(0, 20, T0, T0 + 1), 0);
        log.roll();   // segment 0 inactive, its offset index mapped and holding an entry
        log.appendAsLeader(Logs.batch(0, 20, T0 + 2), 0);
    }

    @AfterEach
    void tearDown() throws Exception {
        Logs.closeAll(log);
        scheduler.shutdown();
    }

    @Test
    void testIndexMsyncErrorTakesTheLogDirOffline() throws Exception {
        LogSegment segment = log.activeSegment();
        OffsetIndex failing = spy(segment.offsetIndex());
        doThrow(new UncheckedIOException(new IOException(EIO))).when(failing).flush();
        replaceOffsetIndex(segment, failing);

        Exception thrown = assertThrows(Exception.class, () -> log.flush(true));
        assertTrue(failures.hasOfflineLogDir(tmp.getAbsolutePath()),
                "an msync that failed with EIO left the log dir online; the flush threw " + thrown);
        assertEquals(KafkaStorageException.class, thrown.getClass());
    }

    @Test
    @Tag("control")
    void testSegmentFsyncErrorTakesTheLogDirOffline() throws Exception {
        LogSegment segment = log.activeSegment();
        FileRecords failing = spy(segment.log());
        doThrow(new IOException(EIO)).when(failing).flush();
        setField(LogSegment.class, segment, "log", failing);

        assertThrows(KafkaStorageException.class, () -> log.flush(true));
        assertTrue(failures.hasOfflineLogDir(tmp.getAbsolutePath()));
    }

    /** The segment's lazy offset index made to hold {@code index}, as a loaded index holds its own. */
    private static void replaceOffsetIndex(LogSegment segment, OffsetIndex index) throws Exception {
        Field lazy = LogSegment.class.getDeclaredField("lazyOffsetIndex");
        lazy.setAccessible(true);
        Class<?> value = Class.forName(LazyIndex.class.getName() + "$IndexValue");
        Constructor<?> holding = value.getDeclaredConstructor(AbstractIndex.class);
        holding.setAccessible(true);
        setField(LazyIndex.class, lazy.get(segment), "indexWrapper", holding.newInstance(index));
    }

    private static void setField(Class<?> owner, Object target, String name, Object value) throws Exception {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        field.set(target, value);
    }
}
