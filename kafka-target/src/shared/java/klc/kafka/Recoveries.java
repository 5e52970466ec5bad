package klc.kafka;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Which segments a load recovered: every call of Kafka's {@code LogSegment.recover} (what the
 * loader's recoverSegment runs, spec §4.6), reported by the advice each generation weaves into
 * LogSegment ({@code Advices}). No API returns it, and Kafka logs only some of its calls (a
 * missing index above the recovery point of an unclean load is recovered silently).
 */
public final class Recoveries {
    /** "data dir path/partition dir name" → base offsets recovered, in call order. */
    private static final Map<String, List<Long>> RECOVERED = new HashMap<>();
    /** The same key → the log bytes those calls read: each call's .log size when it begins (a
     *  recovery reads its segment from byte 0 to the end or to the first invalid batch; a segment
     *  recovered twice counts twice). benchmarks/vs_kafka.py counts impl's the same way. */
    private static final Map<String, Long> BYTES = new HashMap<>();

    private Recoveries() { }

    /** A recover call on the segment whose log file is {@code segmentFile}. */
    static void recovering(File segmentFile, long baseOffset) {
        File partition = segmentFile.getAbsoluteFile().getParentFile();
        String key = partition.getParentFile().getPath() + "/" + partition.getName();
        synchronized (RECOVERED) {
            RECOVERED.computeIfAbsent(key, k -> new ArrayList<>()).add(baseOffset);
            BYTES.merge(key, segmentFile.length(), Long::sum);
        }
    }

    static List<Long> of(File dataDir, String partition) {
        synchronized (RECOVERED) {
            return new ArrayList<>(RECOVERED.getOrDefault(dataDir.getAbsolutePath() + "/" + partition, List.of()));
        }
    }

    static long bytesOf(File dataDir, String partition) {
        synchronized (RECOVERED) {
            return BYTES.getOrDefault(dataDir.getAbsolutePath() + "/" + partition, 0L);
        }
    }

    static void reset() {
        synchronized (RECOVERED) {
            RECOVERED.clear();
            BYTES.clear();
        }
    }
}
