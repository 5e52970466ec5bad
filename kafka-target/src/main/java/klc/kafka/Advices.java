package klc.kafka;

import net.bytebuddy.agent.ByteBuddyAgent;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.matcher.ElementMatchers;

import org.apache.kafka.storage.internals.log.LogSegment;

/**
 * What this target weaves into Kafka 4.x's classes when the JVM starts (Byte Buddy attaches to
 * its own JVM): every {@code LogSegment.recover} call is recorded ({@link Recoveries}) and, on its
 * return, reported to {@link LoadCrash}; so is the end of every {@code UnifiedLog} constructor,
 * which runs after LogLoader has loaded the partition.
 */
public final class Advices {
    private static final String SEGMENT = "org.apache.kafka.storage.internals.log.LogSegment";
    private static final String LOG = "org.apache.kafka.storage.internals.log.UnifiedLog";

    private Advices() { }

    static void install() {
        new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .type(ElementMatchers.named(SEGMENT))
                .transform((builder, type, loader, module, domain) ->
                        builder.visit(Advice.to(OnRecover.class).on(ElementMatchers.named("recover"))))
                .type(ElementMatchers.named(LOG))
                .transform((builder, type, loader, module, domain) ->
                        builder.visit(Advice.to(OnLogBuilt.class).on(ElementMatchers.isConstructor())))
                .installOn(ByteBuddyAgent.install());
    }

    /** Called from inside LogSegment.recover (public: the woven code runs in Kafka's package). */
    public static void recovering(Object segment) {
        LogSegment s = (LogSegment) segment;
        Recoveries.recovering(s.log().file(), s.baseOffset());
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

    /** Inlined at the end of UnifiedLog's constructor. */
    static final class OnLogBuilt {
        private OnLogBuilt() { }

        @Advice.OnMethodExit
        static void exit() {
            LoadCrash.partitionLoaded();
        }
    }
}
