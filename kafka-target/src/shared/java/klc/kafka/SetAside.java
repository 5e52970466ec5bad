package klc.kafka;

import org.apache.kafka.common.TopicPartition;

import java.io.File;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * KRaft's {@code isStray} at startup for the partitions the scenario's metadata image no longer
 * assigns to this broker (the {@code unassign} step): the predicate {@code LogManager.startup}
 * takes, which {@code loadLog} asks of every current and future log it loaded before registering
 * it, and then renames a stray one {@code <topic>-<partition>.<id>-stray} (its id the scenario's:
 * {@link DeleteDirNames}). The {@code open} answer lists such a directory under its new name, with
 * what its load did under the name it had ({@link LoadedPartitions}).
 */
final class SetAside {
    private static volatile Set<TopicPartition> unassigned = Set.of();
    /** The directory each log the predicate marked stray was loaded from → that log. */
    private static final Map<File, Object> MARKED = new ConcurrentHashMap<>();

    private SetAside() { }

    /** A startup: the partitions its metadata image does not assign here. */
    static void configure(Set<TopicPartition> partitions) {
        unassigned = Set.copyOf(partitions);
        MARKED.clear();
    }

    static Set<TopicPartition> unassigned() {
        return unassigned;
    }

    /** The predicate: {@code log} is the release's log class, loaded from {@code dir}. */
    static boolean isStray(Object log, TopicPartition tp, File dir) {
        if (!unassigned.contains(tp)) {
            return false;
        }
        MARKED.put(dir.getAbsoluteFile(), log);
        return true;
    }

    /** The directory {@code dir}'s log was loaded from: its own, or the one the load renamed it from. */
    static File loadedFrom(File dir) {
        for (Map.Entry<File, Object> e : MARKED.entrySet()) {
            if (dirOf(e.getValue()).equals(dir.getAbsoluteFile())) {
                return e.getKey();
            }
        }
        return dir;
    }

    /** Why a load with these partitions unassigned is not judged, or null: a partition with two
     *  directories a startup would set aside draws their ids in two threads at once (one per data
     *  dir or recovery thread), in an order Kafka does not fix; the model draws them in name order. */
    static String unjudged(List<File> dataDirs) {
        for (TopicPartition tp : unassigned) {
            int found = 0;
            for (File dataDir : dataDirs) {
                File[] children = dataDir.listFiles(File::isDirectory);
                for (File child : children == null ? new File[0] : children) {
                    String name = child.getName();
                    if (name.equals(tp.toString()) || (name.startsWith(tp + ".") && name.endsWith("-future"))) {
                        found++;
                    }
                }
            }
            if (found > 1) {
                return "two directories of unassigned " + tp + " set aside -stray by one startup: their ids are drawn in a race";
            }
        }
        return null;
    }

    private static File dirOf(Object log) {
        try {
            return ((File) log.getClass().getMethod("dir").invoke(log)).getAbsoluteFile();
        } catch (ReflectiveOperationException | ClassCastException e) {
            throw new AdapterFailure("a log of Kafka " + Release.version() + " names no dir", e);
        }
    }
}
