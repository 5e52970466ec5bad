package klc.kafka;

import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.RecordValidationException;

/** What the protocol needs of Kafka 4.x outside the log layer. */
final class Release {
    /** The classes {@link Advices} weaves into: a segment, and the log built once a partition loaded. */
    static final String SEGMENT_CLASS = "org.apache.kafka.storage.internals.log.LogSegment";
    static final String LOG_CLASS = "org.apache.kafka.storage.internals.log.UnifiedLog";
    /** The index classes whose constructions a race counts ({@link IndexBuilds}). */
    static final String[] INDEX_CLASSES = {
        "org.apache.kafka.storage.internals.log.OffsetIndex", "org.apache.kafka.storage.internals.log.TimeIndex"};

    private Release() { }

    /** A LogSegment.recover call starts: which file, which base offset. */
    static void recovering(Object segment) {
        LogSegment s = (LogSegment) segment;
        Recoveries.recovering(s.log().file(), s.baseOffset());
    }

    static String version() {
        return Moved.version();
    }

    /** Kafka's exits and halts (every log dir failed) end the step, not the process. */
    static void trapExits() {
        Moved.trapExits((proxy, method, args) -> {
            if (method.getDeclaringClass() == Object.class) {
                return method.getName().equals("equals") ? proxy == args[0] : method.getName().equals("hashCode") ? 0 : "exit trap";
            }
            throw new Main.Halted((Integer) args[0], (String) args[1]);
        });
    }

    /** The refusal a broker would answer: a RecordValidationException answers with the exception it wraps. */
    static Throwable refusal(Throwable e) {
        return e instanceof RecordValidationException v ? v.invalidException() : e;
    }
}
