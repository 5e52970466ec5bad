package klc.kafka;

import java.io.File;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The offset and time index objects Kafka builds during a race, by file: two for one file is
 * KAFKA-9156 (a lazy index initialised twice under concurrent first access, 2.3.x), whose second
 * object positions itself at the end of the file the first preallocated and reads as full.
 */
public final class IndexBuilds {
    private static volatile Map<String, Integer> counting;

    private IndexBuilds() { }

    static void start() {
        counting = new ConcurrentHashMap<>();
    }

    /** How many index objects were built for each file since {@link #start}, by path relative to
     *  {@code root}; counting stops. */
    static Map<String, Integer> stop(File root) {
        Map<String, Integer> counts = counting;
        counting = null;
        Map<String, Integer> out = new TreeMap<>();
        if (counts != null) {
            counts.forEach((path, n) -> out.put(root.toPath().toAbsolutePath().relativize(new File(path).toPath().toAbsolutePath()).toString(), n));
        }
        return out;
    }

    /** An index constructor ended (public: the woven code runs in Kafka's package). */
    public static void built(Object index) {
        Map<String, Integer> counts = counting;
        if (counts != null) {
            counts.merge(fileOf(index).getAbsolutePath(), 1, Integer::sum);
        }
    }

    /** {@code AbstractIndex.file()}: a Scala var's accessor in 2.x, a method in 4.x. */
    private static File fileOf(Object index) {
        try {
            return (File) index.getClass().getMethod("file").invoke(index);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("an index of Kafka " + Release.version() + " without file()", e);
        }
    }
}
