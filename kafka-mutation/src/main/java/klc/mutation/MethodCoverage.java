package klc.mutation;

import java.io.FileOutputStream;
import java.io.IOException;
import java.lang.instrument.Instrumentation;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.matcher.ElementMatchers;

/**
 * Which methods of Kafka's log classes a JVM ran: a Java agent for the kafka target's JVM, used once
 * per corpus case on the stock release so that a mutant of method M is judged only by the cases that
 * run M (a PIT mutant changes one method's body, nothing else of its class).
 *
 * <p>{@code -javaagent:kafka-mutation.jar=coverage:OUT_FILE,PREFIX[,PREFIX...]} ({@link Agent}): every method and constructor
 * of the classes whose names start with a prefix gets an entry advice recording
 * {@code class.method(descriptor)} (PIT's spelling of a mutant's location); the set is written to
 * OUT_FILE, one line each, as each is first entered (so a JVM that halts, as the adapter's crash
 * inside a load does with {@code Runtime.halt}, has still told every method it ran).
 */
public final class MethodCoverage {
    private MethodCoverage() {}

    /** Every method entered so far; public because the advice is inlined into Kafka's classes. */
    public static final Set<String> HIT = ConcurrentHashMap.newKeySet();

    static void start(String args, Instrumentation inst) {
        String[] parts = args == null ? new String[0] : args.split(",");
        if (parts.length < 2) {
            throw new IllegalArgumentException("MethodCoverage: expected OUT_FILE,PREFIX[,PREFIX...], got " + args);
        }
        try {
            sink = new FileOutputStream(parts[0], true);
        } catch (IOException e) {
            throw new IllegalArgumentException("MethodCoverage: cannot write " + parts[0] + ": " + e);
        }
        List<String> prefixes = new ArrayList<>(List.of(parts).subList(1, parts.length));
        new AgentBuilder.Default()
            .type(td -> prefixes.stream().anyMatch(p -> td.getName().startsWith(p)))
            .transform((builder, type, loader, module, domain) ->
                builder.visit(Advice.to(Entered.class).on(ElementMatchers.isMethod().or(ElementMatchers.isConstructor())
                    .and(ElementMatchers.not(ElementMatchers.isAbstract())))))
            .installOn(inst);
    }

    private static FileOutputStream sink;

    /** Called by the advice: a method entered for the first time is written out at once. */
    public static void hit(String method) {
        if (HIT.add(method)) {
            synchronized (MethodCoverage.class) {
                try {
                    sink.write((method + "\n").getBytes(StandardCharsets.UTF_8));
                    sink.flush();
                } catch (IOException e) {
                    System.err.println("MethodCoverage: cannot write " + method + ": " + e);
                }
            }
        }
    }

    /** The advice: one set insertion at the entry of each method. */
    public static final class Entered {
        private Entered() {}

        @Advice.OnMethodEnter
        static void enter(@Advice.Origin("#t.#m#d") String method) {
            hit(method);
        }
    }
}
