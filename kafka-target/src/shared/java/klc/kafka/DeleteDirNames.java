package klc.kafka;

import org.apache.kafka.common.TopicPartition;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * The scenario's unique id in place of Kafka's random one in a deleted (or stray) partition's
 * directory name ({@code <topic>-<partition>.<uuid>-delete}, {@code -stray}, spec §2.3 rule 2). Kafka
 * draws {@code UUID.randomUUID()} in {@code LocalLog.logDirNameWithSuffixCappedLength}; the advice
 * woven at the end of {@code LocalLog.logDeleteDirName} ({@code logStrayDirName}) replaces the name
 * with the scenario's
 * (conformance.targets.unique_id_source): the first of SHA-256("seed:topic-partition:n") in hex,
 * cut to 32 digits, n = 0, 1, …, whose directory is in no data dir, in Kafka's own shape (the
 * topic cut so the name stays within 255 characters). The model and impl name it alike, so the
 * targets' files compare.
 */
public final class DeleteDirNames {
    private static volatile long seed;
    private static volatile List<File> dataDirs = List.of();

    private DeleteDirNames() { }

    /** A new broker: the scenario's seed and data dirs. */
    static void configure(long jitterSeed, List<File> dirs) {
        seed = jitterSeed;
        dataDirs = List.copyOf(dirs);
    }

    /** Called at the end of LocalLog.logDeleteDirName (public: the woven code runs in Kafka's package). */
    public static String named(TopicPartition tp) {
        return named(tp, "-delete");
    }

    /** Called at the end of LocalLog.logStrayDirName. */
    public static String strayNamed(TopicPartition tp) {
        return named(tp, "-stray");
    }

    private static String named(TopicPartition tp, String kind) {
        for (int n = 0; ; n++) {
            String name = capped(tp, uniqueId(tp, n), kind);
            if (dataDirs.stream().noneMatch(d -> new File(d, name).exists())) {
                return name;
            }
        }
    }

    private static String uniqueId(TopicPartition tp, int n) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest((seed + ":" + tp.topic() + "-" + tp.partition() + ":" + n).getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest).substring(0, 32);
        } catch (NoSuchAlgorithmException e) {
            throw new AdapterFailure("SHA-256 is part of every JDK", e);
        }
    }

    private static String capped(TopicPartition tp, String uniqueId, String kind) {
        String suffix = "-" + tp.partition() + "." + uniqueId + kind;
        int keep = Math.max(0, Math.min(tp.topic().length(), 255 - suffix.length()));
        return tp.topic().substring(0, keep) + suffix;
    }
}
