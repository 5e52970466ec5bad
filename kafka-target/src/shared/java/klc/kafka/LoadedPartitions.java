package klc.kafka;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;

import java.io.File;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The {@code loaded} list of an {@code open} answer, the same for every generation: one entry per
 * partition directory of every data dir, in name order — its load error (null when its log is
 * loaded from that dir) and the segments Kafka recovered ({@link Recoveries}).
 */
final class LoadedPartitions {
    /** What a generation's LogManager says of the partition directories. */
    interface Manager {
        /** The directory's partition as Kafka parses its name; null if Kafka does not load it as one. */
        TopicPartition partitionOf(File dir);

        /** Whether the loaded log of {@code tp} lives in the data dir {@code dataDir}. */
        boolean loadedIn(TopicPartition tp, File dataDir);

        /** Whether the data dir is still online (the log-dir failure channel did not take it). */
        boolean online(File dataDir);

        /** Whether the load queued the log of this {@code -delete} directory for deletion. */
        boolean queuedForDeletion(File dir);
    }

    private LoadedPartitions() { }

    /** The {@code open} answer: {@code started} (false when {@code failed}, why the startup failed,
     *  is not null) and the {@code loaded} list. */
    static ObjectNode answer(List<File> dataDirs, String failed, Manager manager) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        out.put("started", failed == null);
        list(out.putArray("loaded"), dataDirs, failed, manager);
        return out;
    }

    /** ``failed``: why the startup failed (every partition not loaded then carries it), or null. */
    private static void list(ArrayNode loaded, List<File> dataDirs, String failed, Manager manager) {
        for (File dir : dataDirs) {
            File[] children = dir.listFiles(File::isDirectory);
            if (children == null) {
                continue;
            }
            Arrays.sort(children, Comparator.comparing(File::getName));
            for (File child : children) {
                TopicPartition tp = manager.partitionOf(child);
                if (tp != null) {
                    entry(loaded.addObject(), dir, child, tp, failed, manager);
                }
            }
        }
    }

    private static void entry(ObjectNode entry, File dir, File child, TopicPartition tp, String failed, Manager manager) {
        entry.put("dir", dir.getName());
        entry.put("partition", child.getName());
        boolean deleting = child.getName().endsWith("-delete");
        if (deleting ? manager.queuedForDeletion(child) : manager.loadedIn(tp, dir)) {
            entry.putNull("error");
        } else if (failed != null) {
            entry.put("error", failed);
        } else {
            String where = dir.getName() + "/" + child.getName() + ": ";
            entry.put("error", where + (manager.online(dir)
                    ? "not loaded" : "log dir " + dir.getName() + " went offline during the load"));
        }
        ArrayNode recovered = entry.putArray("recovered");
        Recoveries.of(dir, child.getName()).forEach(recovered::add);
        entry.put("recovered_bytes", Recoveries.bytesOf(dir, child.getName()));
        if (deleting) {
            entry.put("kind", "delete"); // loaded, then queued for deletion: not served (§2.3)
        }
    }
}
