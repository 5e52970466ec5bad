package klc.kafka;

import org.apache.kafka.common.utils.Time;

import java.lang.reflect.Field;

/**
 * Segments Kafka builds on {@code Time.SYSTEM} instead of the log's clock — a split's segments and
 * a cleaning round's ({@code createNewCleanedSegment} in every generation) — are moved onto the
 * scenario's {@link StepClock} as they are built. In a broker both clocks are the wall clock; here
 * the log runs on the scenario's, and a segment created at the machine's "now" would be years
 * ahead of it, never old enough to roll by {@code segment.ms} when its first batch has no
 * timestamp (spec §4.3 rule 2). The segment's {@code created} and {@code time} fields carry the
 * same names in the Scala segment of 2.x and the Java one of 3.x and 4.x.
 */
public final class SystemTimeSegments {
    private static volatile StepClock clock;

    private SystemTimeSegments() { }

    /** The clock segments built from now on move onto. */
    static void use(StepClock stepClock) {
        clock = stepClock;
    }

    /** Called at the end of each segment constructor (public: the woven code runs in Kafka's package). */
    public static void built(Object segment) {
        StepClock now = clock;
        if (now == null) {
            return;
        }
        try {
            Field time = field(segment.getClass(), "time");
            if (time.get(segment) != Time.SYSTEM) {
                return;
            }
            time.set(segment, now);
            field(segment.getClass(), "created").setLong(segment, now.milliseconds());
        } catch (ReflectiveOperationException e) {
            throw new AdapterFailure("cannot move a segment of " + segment.getClass() + " onto the step clock", e);
        }
    }

    private static Field field(Class<?> type, String name) throws NoSuchFieldException {
        Field f = type.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }
}
