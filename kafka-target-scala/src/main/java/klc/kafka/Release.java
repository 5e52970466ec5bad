package klc.kafka;

import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.Exit;

import java.io.File;

/** What the protocol needs of Kafka 1.1–4.0 outside the log layer. */
final class Release {
    /** The classes {@link Advices} weaves into: a segment (the broker's Scala kafka.log.LogSegment up
     *  to 3.6, kafka-storage's from 3.7), and the log class: up to 3.0 {@code Log}, whose constructor
     *  loads the partition (segments, recovery, producer state); from 3.1 UnifiedLog, which
     *  LogLoader's result is handed to: its construction marks a partition loaded (UnifiedLog.apply
     *  loads, then constructs). */
    static final String SEGMENT_CLASS = Scala.hasClass("kafka.log.LogSegment")
            ? "kafka.log.LogSegment" : "org.apache.kafka.storage.internals.log.LogSegment";
    static final String LOG_CLASS = Scala.hasClass("kafka.log.UnifiedLog") ? "kafka.log.UnifiedLog" : "kafka.log.Log";
    /** The index classes whose constructions a race counts ({@link IndexBuilds}): kafka.log up to
     *  3.4, kafka-storage from 3.5; only those of the running release match. */
    static final String[] INDEX_CLASSES = {"kafka.log.OffsetIndex", "kafka.log.TimeIndex",
        "org.apache.kafka.storage.internals.log.OffsetIndex", "org.apache.kafka.storage.internals.log.TimeIndex"};

    private Release() { }

    /** A LogSegment.recover call starts: which file, which base offset. */
    static void recovering(Object segment) {
        File file = (File) Scala.member(Scala.member(segment, "log"), "file");
        Recoveries.recovering(file, (Long) Scala.member(segment, "baseOffset"));
    }

    static String version() {
        return AppInfoParser.getVersion();
    }

    /** Kafka's exits and halts (every log dir failed) end the step, not the process. */
    static void trapExits() {
        Exit.setExitProcedure((status, message) -> { throw new Main.Halted(status, message); });
        Exit.setHaltProcedure((status, message) -> { throw new Main.Halted(status, message); });
    }

    /** The refusal a broker would answer: a RecordValidationException (kafka.common from 2.4 to 3.4,
     *  kafka-storage after; before 2.4 the refusal is thrown as is) answers with the exception it wraps. */
    static Throwable refusal(Throwable e) {
        if (e.getClass().getSimpleName().equals("RecordValidationException")) {
            return (Throwable) Scala.member(e, "invalidException");
        }
        return e;
    }
}
