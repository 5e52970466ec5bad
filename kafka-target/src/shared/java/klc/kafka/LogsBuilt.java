package klc.kafka;

import java.io.File;
import java.util.HashSet;
import java.util.Set;

/**
 * The partition directories whose log a load constructed, reported by the advice each generation
 * weaves into the log class's constructors ({@code Advices}). Kafka 4.4.0's LogManager holds a
 * {@code -stray} log nowhere once loaded, so after a startup that failed on another partition
 * this is what says that the stray one had loaded.
 */
public final class LogsBuilt {
    private static final Set<File> DIRS = new HashSet<>();

    private LogsBuilt() { }

    /** A log constructed; {@code log} is the release's log class, whose {@code dir()} names its
     *  directory. A log without one is left out: its directory then reads as not loaded when
     *  the startup failed, the answer before this record existed. */
    static void built(Object log) {
        File dir;
        try {
            dir = (File) log.getClass().getMethod("dir").invoke(log);
        } catch (ReflectiveOperationException | ClassCastException e) {
            return;
        }
        synchronized (DIRS) {
            DIRS.add(dir.getAbsoluteFile());
        }
    }

    static boolean contains(File dir) {
        synchronized (DIRS) {
            return DIRS.contains(dir.getAbsoluteFile());
        }
    }

    static void reset() {
        synchronized (DIRS) {
            DIRS.clear();
        }
    }
}
