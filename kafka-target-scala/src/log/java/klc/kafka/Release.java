package klc.kafka;

import kafka.log.LogSegment;

import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.Exit;

/** What the protocol needs of Kafka 2.x outside the log layer. */
final class Release {
    /** The classes {@link Advices} weaves into: a segment, and {@code Log}, whose constructor loads
     *  the partition in 2.x (segments, recovery, producer state). */
    static final String SEGMENT_CLASS = "kafka.log.LogSegment";
    static final String LOG_CLASS = "kafka.log.Log";
    /** The index classes whose constructions a race counts ({@link IndexBuilds}). */
    static final String[] INDEX_CLASSES = {"kafka.log.OffsetIndex", "kafka.log.TimeIndex"};

    private Release() { }

    /** A LogSegment.recover call starts: which file, which base offset. */
    static void recovering(Object segment) {
        LogSegment s = (LogSegment) segment;
        Recoveries.recovering(s.log().file(), s.baseOffset());
    }

    static String version() {
        return AppInfoParser.getVersion();
    }

    /** Kafka's exits and halts (every log dir failed) end the step, not the process. */
    static void trapExits() {
        Exit.setExitProcedure((status, message) -> { throw new Main.Halted(status, message); });
        Exit.setHaltProcedure((status, message) -> { throw new Main.Halted(status, message); });
    }

    /** The refusal a broker would answer: a RecordValidationException answers with the exception it wraps. */
    static Throwable refusal(Throwable e) {
        // kafka.common.RecordValidationException came with 2.4; before, the refusal is thrown as is
        if (e.getClass().getName().equals("kafka.common.RecordValidationException")) {
            return (Throwable) Scala.call(e, "invalidException");
        }
        return e;
    }
}
