package klc.kafka;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Map;

/**
 * Kafka's metrics registry is one per process (a static: {@code KafkaYammerMetrics.defaultRegistry()},
 * also exported over JMX), and its gauges hold what they measure: each log's (its segments, and
 * with them every segment's file channel and index mappings) and the LogManager's per data dir
 * (the manager, and with it every log). A broker whose process dies loses them with the process;
 * a LogManager this JVM lets go of (a halt, a shutdown) would stay reachable through them, and its
 * descriptors and mappings with it: each load of a 2,000-partition crashed dir left 2,000
 * descriptors (the segments' channels) and 4,000 mappings (their indexes) behind, and the 10th
 * load in one JVM failed at the descriptor limit (ulimit -n 20000; vm.max_map_count, 65,530 by
 * default, is the next wall) as an I/O error of the log dir. Forgetting every metric when the
 * broker goes is what a new process starts with; the abandoned objects are then garbage, and the
 * JDK's cleaners close their channels and unmap their indexes without writing anything (a crash's
 * files stay as they were).
 */
final class ProcessMetrics {
    /** Where a release keeps the registry: server-common's class from 3.x, the broker's in 2.6–2.8,
     *  Yammer's own default registry before. */
    private static final String[] REGISTRY_HOLDERS = {
        "org.apache.kafka.server.metrics.KafkaYammerMetrics",
        "kafka.metrics.KafkaYammerMetrics",
        "com.yammer.metrics.Metrics",
    };

    private ProcessMetrics() { }

    /** Remove every metric of the registry (and its JMX bean). The registry's classes (Yammer's
     *  metrics-core) are on the runtime classpath only, and named differently by release: reached
     *  by reflection. */
    static void forget() {
        try {
            Object registry = registry();
            Map<?, ?> metrics = (Map<?, ?>) registry.getClass().getMethod("allMetrics").invoke(registry);
            Method remove = null;
            for (Method m : registry.getClass().getMethods()) {
                if (m.getName().equals("removeMetric") && m.getParameterCount() == 1) {
                    remove = m;
                }
            }
            for (Object name : new ArrayList<>(metrics.keySet())) {
                remove.invoke(registry, name);
            }
        } catch (ReflectiveOperationException e) {
            throw new AdapterFailure("cannot clear Kafka's metrics registry", e);
        }
    }

    private static Object registry() throws ReflectiveOperationException {
        for (String holder : REGISTRY_HOLDERS) {
            try {
                return Class.forName(holder).getMethod("defaultRegistry").invoke(null);
            } catch (ClassNotFoundException notInThisRelease) {
                // the next one
            }
        }
        throw new ClassNotFoundException("no Yammer metrics registry: " + String.join(", ", REGISTRY_HOLDERS));
    }
}
