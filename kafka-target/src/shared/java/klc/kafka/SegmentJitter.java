package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.File;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32;

/**
 * The scenario's roll jitter in place of Kafka's random one. Kafka gives each segment object
 * {@code LogConfig.randomSegmentJitter()}: a random int modulo min(segment.jitter.ms, segment.ms)
 * (spec §4.3 rule 2). The scenario draws it from its {@code jitter_seed}, the partition and the
 * segment's base offset (conformance.targets.jitter_source: CRC-32 of "seed:partition:base",
 * masked to 31 bits), and the model and impl use that draw; so at the end of each segment
 * constructor the segment's {@code rollJitterMs} (a final field in every generation, set by
 * reflection) is made the scenario's. The bound is the config the partition's log runs under: the
 * scenario's, or an alter_config's for the logs that existed when it was altered.
 */
public final class SegmentJitter {
    private static final long SEGMENT_MS_DEFAULT = 7L * 24 * 60 * 60 * 1000;
    private static volatile long seed;
    private static volatile long defaultBound;
    private static final Map<String, Long> ALTERED = new ConcurrentHashMap<>(); // partition dir → bound

    private SegmentJitter() { }

    /** A new broker: the scenario's seed and config (what every log loads and is created with). */
    static void configure(long jitterSeed, Map<String, JsonNode> config) {
        seed = jitterSeed;
        defaultBound = bound(config);
        ALTERED.clear();
    }

    /** A startup: every log takes the scenario's config again (docs/departures.md). */
    static void restarted() {
        ALTERED.clear();
    }

    /** An alter_config on the running log of {@code partition} ("t-0"): its config from now on. */
    static void altered(String partition, Map<String, JsonNode> config) {
        ALTERED.put(partition, bound(config));
    }

    /** LogConfig.randomSegmentJitter's modulus: 0 when segment.jitter.ms is 0, else min(jitter, segment.ms). */
    static long bound(Map<String, JsonNode> config) {
        long jitter = config.containsKey("segment.jitter.ms") ? config.get("segment.jitter.ms").asLong() : 0;
        long segmentMs = config.containsKey("segment.ms") ? config.get("segment.ms").asLong() : SEGMENT_MS_DEFAULT;
        return jitter == 0 ? 0 : Math.min(jitter, segmentMs);
    }

    /** Called at the end of each segment constructor (public: the woven code runs in Kafka's package). */
    public static void built(Object segment) {
        try {
            Object records = field(segment, "log").get(segment); // its FileRecords
            File file = (File) records.getClass().getMethod("file").invoke(records);
            String partition = file.getAbsoluteFile().getParentFile().getName();
            long bound = ALTERED.getOrDefault(partition, defaultBound);
            long base = field(segment, "baseOffset").getLong(segment);
            field(segment, "rollJitterMs").setLong(segment, bound == 0 ? 0 : draw(partition, base) % bound);
        } catch (ReflectiveOperationException e) {
            throw new AdapterFailure("cannot set the roll jitter of a segment of " + segment.getClass(), e);
        }
    }

    /** The scenario's draw for the segment of {@code base} in {@code partition}. */
    static long draw(String partition, long base) {
        CRC32 crc = new CRC32();
        crc.update((seed + ":" + partition + ":" + base).getBytes(StandardCharsets.UTF_8));
        return crc.getValue() & 0x7FFFFFFFL;
    }

    private static Field field(Object segment, String name) throws NoSuchFieldException {
        Field f = segment.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }
}
