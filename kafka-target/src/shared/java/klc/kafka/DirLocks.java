package klc.kafka;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;

/**
 * A data dir's lock let go as the OS lets it go when the broker's process dies: unlocked and its
 * channel closed, the {@code .lock} file left where it is. Never {@code destroy()}, a graceful
 * shutdown's, which deletes the file from 3.8 (KAFKA-16391). The lock is Kafka's {@code FileLock}
 * of the generation (server-common's Java class from 3.9, core's Scala one before), read by
 * reflection: both hold the channel in a field {@code channel}.
 */
final class DirLocks {
    private DirLocks() { }

    /** {@code lock} let go; one the failure handler destroyed already (an offline dir's) stays so. */
    static void letGo(Object lock) throws IOException {
        try {
            lock.getClass().getMethod("unlock").invoke(lock);
        } catch (java.lang.reflect.InvocationTargetException e) {
            if (!(e.getCause() instanceof ClosedChannelException)) {
                throw new IOException("unlocking " + lock, e.getCause());
            }
            return; // destroyed already: its channel is closed
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Kafka's FileLock has no unlock()", e);
        }
        channel(lock).close();
    }

    private static FileChannel channel(Object lock) {
        try {
            Field field = lock.getClass().getDeclaredField("channel");
            field.setAccessible(true);
            return (FileChannel) field.get(lock);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Kafka's FileLock has no channel field", e);
        }
    }
}
