package klc.kafka;

/**
 * A process crash inside Kafka's own load: the {@code open} request's {@code halt_at} names an
 * event of the load and a count, and the JVM halts right after that many such events — no
 * answer, no flush, no shutdown hook, as a killed broker. The next JVM started on the same
 * directory loads what this one left, as an operator's restart would.
 *
 * <p>The events are reported by advice each generation weaves into Kafka's classes
 * ({@code Advices}): {@value #SEGMENT_RECOVERED} when a {@code LogSegment.recover} call returns,
 * {@value #PARTITION_LOADED} when a partition's log object has been constructed (its load done).
 * The count runs over the whole load, every data dir and recovery thread together.
 */
public final class LoadCrash {
    static final String SEGMENT_RECOVERED = "segment-recovered";
    static final String PARTITION_LOADED = "partition-loaded";
    /** The JVM's exit status at the crash (EX_SOFTWARE), told apart from Kafka's own exits. */
    static final int EXIT_STATUS = 70;

    private static String point;
    private static long left;

    private LoadCrash() { }

    static synchronized void arm(String at, long count) {
        if (!at.equals(SEGMENT_RECOVERED) && !at.equals(PARTITION_LOADED)) {
            throw new Steps.BadRequest("halt_at point must be " + SEGMENT_RECOVERED + " or " + PARTITION_LOADED + ", got " + at);
        }
        if (count < 1) {
            throw new Steps.BadRequest("halt_at count must be at least 1, got " + count);
        }
        point = at;
        left = count;
    }

    static synchronized void disarm() {
        point = null;
    }

    /** A LogSegment.recover call returned (public: called from code woven into Kafka's class). */
    public static void segmentRecovered() {
        event(SEGMENT_RECOVERED);
    }

    /** A partition's log was constructed (public: called from code woven into Kafka's class). */
    public static void partitionLoaded() {
        event(PARTITION_LOADED);
    }

    private static synchronized void event(String what) {
        if (what.equals(point) && --left == 0) {
            Runtime.getRuntime().halt(EXIT_STATUS);
        }
    }
}
