package klc.kafka;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The offset and time index objects Kafka builds during a race, grouped by the file each refers to
 * when the race ends: two objects for one file is KAFKA-9156 (a lazy index initialised twice under
 * concurrent first access, 2.3.x), whose second object positions itself at the end of the file the
 * first preallocated and reads as full. Grouped by the file at the end, not at construction: a
 * roll onto an empty active segment replaces it (KAFKA-6388's fix), renaming the old segment's
 * index to {@code .deleted} before the new segment builds its own for the same name.
 */
public final class IndexBuilds {
    private static volatile List<Object> built;

    private IndexBuilds() { }

    static void start() {
        built = Collections.synchronizedList(new ArrayList<>());
    }

    /** How many index objects built since {@link #start} refer to each file now, by path relative
     *  to {@code root}; counting stops. */
    static Map<String, Integer> stop(File root) {
        List<Object> objects = built;
        built = null;
        Map<String, Integer> out = new TreeMap<>();
        if (objects != null) {
            synchronized (objects) {
                for (Object index : objects) {
                    Path file = fileOf(index).toPath().toAbsolutePath();
                    out.merge(root.toPath().toAbsolutePath().relativize(file).toString(), 1, Integer::sum);
                }
            }
        }
        return out;
    }

    /** An index constructor ended (public: the woven code runs in Kafka's package). */
    public static void built(Object index) {
        List<Object> objects = built;
        if (objects != null) {
            objects.add(index);
        }
    }

    /** {@code AbstractIndex.file()}: a Scala var's accessor in 2.x, a method in 4.x. */
    private static File fileOf(Object index) {
        try {
            return (File) index.getClass().getMethod("file").invoke(index);
        } catch (ReflectiveOperationException e) {
            throw new AdapterFailure("an index of Kafka " + Release.version() + " without file()", e);
        }
    }
}
