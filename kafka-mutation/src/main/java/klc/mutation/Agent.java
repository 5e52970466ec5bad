package klc.mutation;

import java.lang.instrument.Instrumentation;

/**
 * The agent's entry: {@code -javaagent:kafka-mutation.jar=coverage:OUT_FILE,PREFIX...} records the
 * methods run ({@link MethodCoverage}); {@code =swap:CONTROL_DIR} lets a driver replace a class's
 * bytecode between scenarios ({@link HotSwap}).
 */
public final class Agent {
    private Agent() {}

    public static void premain(String args, Instrumentation inst) {
        String given = args == null ? "" : args;
        if (given.startsWith("coverage:")) {
            MethodCoverage.start(given.substring("coverage:".length()), inst);
        } else if (given.startsWith("swap:")) {
            HotSwap.start(given.substring("swap:".length()), inst);
        } else {
            throw new IllegalArgumentException("kafka-mutation agent: coverage:OUT,PREFIX... or swap:DIR, got " + args);
        }
    }
}
