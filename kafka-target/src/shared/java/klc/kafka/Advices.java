package klc.kafka;

import net.bytebuddy.agent.ByteBuddyAgent;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.matcher.ElementMatchers;

/**
 * What this target weaves into Kafka's classes when the JVM starts (Byte Buddy attaches to its
 * own JVM): every {@code LogSegment.recover} call is recorded ({@link Recoveries}) and, on its
 * return, reported to {@link LoadCrash}; so is the end of every constructor of the partition's log
 * class, which has then loaded the partition.  Which classes: {@link Release} of the generation
 * ({@code UnifiedLog} in 4.x, built after LogLoader ran; {@code kafka.log.Log} in 2.x, which loads
 * the partition itself). Every segment constructor's end is reported to {@link SystemTimeSegments},
 * every index constructor's to {@link IndexBuilds}, and each segment takes the scenario's roll
 * jitter ({@link SegmentJitter}); a deleted partition's directory takes the scenario's name
 * ({@link DeleteDirNames}).
 */
public final class Advices {
    /** The class that names a deleted partition's directory: kafka-storage's LocalLog (4.0 on), the
     *  Scala LocalLog's companion object before (3.0–3.9), and the Log companion's (1.1–3.0). */
    private static final String[] LOCAL_LOG = {"org.apache.kafka.storage.internals.log.LocalLog", "kafka.log.LocalLog$", "kafka.log.Log$"};

    private Advices() { }

    /** Inlined at the end of LocalLog.logDeleteDirName: the scenario's name ({@link DeleteDirNames}). */
    static final class OnDeleteDirNamed {
        private OnDeleteDirNamed() { }

        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) org.apache.kafka.common.TopicPartition tp,
                         @Advice.Return(readOnly = false) String name) {
            name = DeleteDirNames.named(tp);
        }
    }

    /** Inlined at the end of LocalLog.logStrayDirName: the scenario's name ({@link DeleteDirNames}). */
    static final class OnStrayDirNamed {
        private OnStrayDirNamed() { }

        @Advice.OnMethodExit
        static void exit(@Advice.Argument(0) org.apache.kafka.common.TopicPartition tp,
                         @Advice.Return(readOnly = false) String name) {
            name = DeleteDirNames.strayNamed(tp);
        }
    }

    static void install() {
        new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .type(ElementMatchers.named(Release.SEGMENT_CLASS))
                .transform((builder, type, loader, module, domain) ->
                        builder.visit(Advice.to(OnRecover.class).on(ElementMatchers.named("recover")))
                                .visit(Advice.to(OnSegmentBuilt.class).on(ElementMatchers.isConstructor())))
                .type(ElementMatchers.named(Release.LOG_CLASS))
                .transform((builder, type, loader, module, domain) ->
                        builder.visit(Advice.to(OnLogBuilt.class).on(ElementMatchers.isConstructor())))
                .type(ElementMatchers.namedOneOf(LOCAL_LOG))
                .transform((builder, type, loader, module, domain) ->
                        builder.visit(Advice.to(OnDeleteDirNamed.class).on(ElementMatchers.named("logDeleteDirName")))
                                .visit(Advice.to(OnStrayDirNamed.class).on(ElementMatchers.named("logStrayDirName"))))
                .type(ElementMatchers.namedOneOf(Release.INDEX_CLASSES))
                .transform((builder, type, loader, module, domain) ->
                        builder.visit(Advice.to(OnIndexBuilt.class).on(ElementMatchers.isConstructor())))
                .installOn(ByteBuddyAgent.install());
    }

    /** Called from inside LogSegment.recover (public: the woven code runs in Kafka's package). */
    public static void recovering(Object segment) {
        Release.recovering(segment);
    }

    /** Called from the log class's constructors (public: the woven code runs in Kafka's package). */
    public static void logBuilt(Object log) {
        LogsBuilt.built(log);
    }

    /** Inlined into LogSegment.recover. */
    static final class OnRecover {
        private OnRecover() { }

        @Advice.OnMethodEnter
        static void enter(@Advice.This Object segment) {
            Advices.recovering(segment);
        }

        @Advice.OnMethodExit
        static void exit() {
            LoadCrash.segmentRecovered();
        }
    }

    /** Inlined at the end of the segment class's constructors. */
    static final class OnSegmentBuilt {
        private OnSegmentBuilt() { }

        @Advice.OnMethodExit
        static void exit(@Advice.This Object segment) {
            SystemTimeSegments.built(segment);
            SegmentJitter.built(segment);
        }
    }

    /** Inlined at the end of the index classes' constructors. */
    static final class OnIndexBuilt {
        private OnIndexBuilt() { }

        @Advice.OnMethodExit
        static void exit(@Advice.This Object index) {
            IndexBuilds.built(index);
        }
    }

    /** Inlined at the end of the log class's constructors. */
    static final class OnLogBuilt {
        private OnLogBuilt() { }

        @Advice.OnMethodExit
        static void exit(@Advice.This Object log) {
            Advices.logBuilt(log);
            LoadCrash.partitionLoaded();
        }
    }
}
