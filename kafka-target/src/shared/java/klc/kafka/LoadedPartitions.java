package klc.kafka;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;

import java.io.File;
import java.util.Arrays;
import java.util.Comparator;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code loaded} list of an {@code open} answer, the same for every generation: one entry per
 * partition directory of every data dir, in name order — its load error (null when its log is
 * loaded from that dir) and the segments Kafka recovered ({@link Recoveries}) — and one per
 * directory whose name Kafka refuses, with the startup's failure.
 */
final class LoadedPartitions {
    /** What a generation's LogManager says of the partition directories. */
    interface Manager {
        /** The directory's partition as Kafka parses its name; null if Kafka does not load it as one. */
        TopicPartition partitionOf(File dir);

        /** Whether Kafka's load refuses the directory's name: no partition parses from it, and it is
         *  none of the directories the load passes over. Such a name fails the startup (§2.3). */
        boolean refusesName(File dir);

        /** Whether the loaded log of {@code tp} lives in the data dir {@code dataDir}. */
        boolean loadedIn(TopicPartition tp, File dataDir);

        /** Whether the data dir is still online (the log-dir failure channel did not take it). */
        boolean online(File dataDir);

        /** Whether the load queued the log of this {@code -delete} directory for deletion. */
        boolean queuedForDeletion(File dir);

        /** Whether the partition's future log (KIP-113) is the one loaded from this {@code -future} directory. */
        boolean futureLoadedFrom(TopicPartition tp, File dir);
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
        Map<File, Boolean> duplicates = failed != null && failed.contains("Duplicate log directories")
                ? duplicates(dataDirs, manager) : Map.of();
        for (PartitionDir p : partitionDirs(dataDirs, manager)) {
            entry(loaded.addObject(), p.dataDir(), p.dir(), p.tp(), failed, manager, duplicates);
        }
    }

    /** A partition directory of a data dir, with the partition Kafka parses from its name. */
    private record PartitionDir(File dataDir, File dir, TopicPartition tp) { }

    /** Every data dir's partition directories, in data dir and name order. */
    private static List<PartitionDir> partitionDirs(List<File> dataDirs, Manager manager) {
        List<PartitionDir> out = new ArrayList<>();
        for (File dataDir : dataDirs) {
            File[] children = dataDir.listFiles(File::isDirectory);
            if (children == null) {
                continue;
            }
            Arrays.sort(children, Comparator.comparing(File::getName));
            for (File child : children) {
                TopicPartition tp = manager.partitionOf(child);
                if (tp != null || manager.refusesName(child)) {
                    out.add(new PartitionDir(dataDir, child, tp));
                }
            }
        }
        return out;
    }

    /** The directories of a partition's current (or future) log found twice, when the startup
     *  failed on them (LogManager.loadLog's IllegalStateException): each one → whether it is the
     *  failed one — every one but the first in data dir and name order. Which of them Kafka
     *  registered first is a race between the data dirs' recovery pools; the model names the later
     *  ones failed, and so does this list. */
    private static Map<File, Boolean> duplicates(List<File> dataDirs, Manager manager) {
        Map<String, List<File>> groups = new LinkedHashMap<>();
        for (PartitionDir p : partitionDirs(dataDirs, manager)) {
            String kind = kindOf(p.dir().getName());
            if (p.tp() != null && (kind.isEmpty() || kind.equals("future"))) {
                groups.computeIfAbsent(p.tp() + "/" + kind, k -> new ArrayList<>()).add(p.dir());
            }
        }
        Map<File, Boolean> out = new HashMap<>();
        for (List<File> group : groups.values()) {
            for (int i = 0; group.size() > 1 && i < group.size(); i++) {
                out.put(group.get(i), i > 0);
            }
        }
        return out;
    }

    private static void entry(ObjectNode entry, File dir, File child, TopicPartition tp, String failed, Manager manager,
                              Map<File, Boolean> duplicates) {
        entry.put("dir", dir.getName());
        entry.put("partition", child.getName());
        if (tp == null) { // a name Kafka refuses: never loaded, and the startup fails on it
            entry.put("error", failed != null ? failed : dir.getName() + "/" + child.getName() + ": not loaded");
            entry.putArray("recovered");
            return;
        }
        String kind = kindOf(child.getName());
        Boolean duplicate = duplicates.get(child);
        if (duplicate != null ? !duplicate : loaded(kind, dir, child, tp, failed, manager)) {
            entry.putNull("error");
        } else if (failed != null) {
            entry.put("error", failed);
        } else {
            String where = dir.getName() + "/" + child.getName() + ": ";
            entry.put("error", where + (manager.online(dir)
                    ? "not loaded" : "log dir " + dir.getName() + " went offline during the load"));
        }
        ArrayNode recovered = entry.putArray("recovered");
        String loadedAs = SetAside.loadedFrom(child).getName(); // a log set aside -stray loaded under its old name
        Recoveries.of(dir, loadedAs).forEach(recovered::add);
        entry.put("recovered_bytes", Recoveries.bytesOf(dir, loadedAs));
        if (!kind.isEmpty()) {
            entry.put("kind", kind); // loaded, then not served: queued for deletion, a future log, set aside
        }
    }

    /** The directory's suffix (§2.3): "delete", "future", "stray", or "" for a partition's own. */
    static String kindOf(String name) {
        for (String kind : new String[] {"delete", "future", "stray"}) {
            if (name.endsWith("-" + kind)) {
                return kind;
            }
        }
        return "";
    }

    /** Whether the directory's log loaded where Kafka 4.4.0's LogManager.loadLog puts it: a
     *  {@code -delete} one queued for deletion, a {@code -future} one as the partition's future log,
     *  a {@code -stray} one loaded and held by nothing (its log built in an online dir, {@link
     *  LogsBuilt}: a startup that failed on another partition may have loaded it first), any other
     *  as the partition's current log. */
    private static boolean loaded(String kind, File dir, File child, TopicPartition tp, String failed, Manager manager) {
        switch (kind) {
            case "delete": return manager.queuedForDeletion(child);
            case "future": return manager.futureLoadedFrom(tp, child);
            case "stray": return manager.online(dir) && (failed == null || LogsBuilt.contains(SetAside.loadedFrom(child)));
            default: return manager.loadedIn(tp, dir);
        }
    }
}
