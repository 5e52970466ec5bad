package klc.kafka;

import java.io.File;
import java.lang.reflect.Field;
import java.util.Collection;
import java.util.Map;

/**
 * LogManager's {@code logsToBeDeleted} queue, read by reflection in every generation that deletes
 * partitions: pairs of a log and the time it was queued, a Java {@code Map.Entry} from 4.4 and a
 * {@code scala.Tuple2} before (the Scala LogManager of 3.1–4.3).
 */
final class DeletionQueue {
    private DeletionQueue() { }

    /** Whether the log of {@code dir} is queued for deletion in {@code manager}. */
    static boolean holds(Object manager, File dir) {
        try {
            Field queue = manager.getClass().getDeclaredField("logsToBeDeleted");
            queue.setAccessible(true);
            for (Object pair : (Collection<?>) queue.get(manager)) {
                Object log = pair instanceof Map.Entry<?, ?> entry ? entry.getKey() : pair.getClass().getMethod("_1").invoke(pair);
                File logDir = (File) log.getClass().getMethod("dir").invoke(log);
                if (logDir.getAbsoluteFile().equals(dir.getAbsoluteFile())) {
                    return true;
                }
            }
            return false;
        } catch (ReflectiveOperationException e) {
            throw new AdapterFailure("LogManager.logsToBeDeleted is not readable", e);
        }
    }
}
