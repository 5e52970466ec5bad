package klc.kafka;

import net.bytebuddy.agent.ByteBuddyAgent;
import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.matcher.ElementMatchers;

import org.apache.kafka.storage.internals.log.LogSegment;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Which segments a load recovered: every call of Kafka's {@code LogSegment.recover} (what the
 * loader's recoverSegment runs, spec §4.6), recorded by advice woven into LogSegment when this
 * JVM starts. No API returns it, and LogLoader logs only some of its calls (a missing index above
 * the recovery point of an unclean load is recovered silently).
 */
public final class Recoveries {
    /** "data dir path/partition dir name" → base offsets recovered, in call order. */
    private static final Map<String, List<Long>> RECOVERED = new HashMap<>();

    private Recoveries() { }

    static void install() {
        new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                .type(ElementMatchers.named("org.apache.kafka.storage.internals.log.LogSegment"))
                .transform((builder, type, loader, module, domain) ->
                        builder.visit(Advice.to(OnRecover.class).on(ElementMatchers.named("recover"))))
                .installOn(ByteBuddyAgent.install());
    }

    /** Called from inside LogSegment.recover (public: the woven code runs in Kafka's package). */
    public static void recovering(Object segment) {
        LogSegment s = (LogSegment) segment;
        File partition = s.log().file().getAbsoluteFile().getParentFile();
        String key = partition.getParentFile().getPath() + "/" + partition.getName();
        synchronized (RECOVERED) {
            RECOVERED.computeIfAbsent(key, k -> new ArrayList<>()).add(s.baseOffset());
        }
    }

    static List<Long> of(File dataDir, String partition) {
        synchronized (RECOVERED) {
            return new ArrayList<>(RECOVERED.getOrDefault(dataDir.getAbsolutePath() + "/" + partition, List.of()));
        }
    }

    static void reset() {
        synchronized (RECOVERED) {
            RECOVERED.clear();
        }
    }

    /** The advice: inlined at the start of LogSegment.recover. */
    static final class OnRecover {
        private OnRecover() { }

        @Advice.OnMethodEnter
        static void enter(@Advice.This Object segment) {
            Recoveries.recovering(segment);
        }
    }
}
