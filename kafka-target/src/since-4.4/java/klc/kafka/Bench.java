package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.ProducerStateManager;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * Kafka 4.4's own recovery and load, timed for benchmarks/vs_kafka.py: one JSON request per line on
 * stdin, one answer per line on stdout, in a JVM started with a broker's flags and kept warm across
 * requests. Nothing is woven into Kafka's classes here (no {@link Advices}): the clock sees Kafka's
 * code alone.
 *
 * <ul>
 * <li>{@code {"op": "recover", "dir": D}}: the segment at base offset 0 in D opened as the loader
 *     opens an existing one ({@code LogSegment.open}, the topic's defaults), with a fresh
 *     {@code ProducerStateManager} and the {@code LeaderEpochFileCache} of D's checkpoint; the clock
 *     covers {@code LogSegment.recover(producerState, epochCache)} only. Answers the nanoseconds, the
 *     bytes truncated, both indexes' entries and the producers the call followed.
 * <li>{@code {"op": "load", "dirs": [...], "threads": N}}: a broker's {@code LogManager} over the data
 *     dirs ({@link Logs}: one replica, no cleaner), the clock covering its construction and
 *     {@code startup}; then shut down, outside the clock. Answers the nanoseconds and the partitions
 *     loaded.
 * </ul>
 */
public final class Bench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TopicPartition TP = new TopicPartition("t", 0);
    /** transaction.max.timeout.ms's default, as a broker passes it to the producer state. */
    private static final int MAX_TRANSACTION_TIMEOUT_MS = 900_000;

    private Bench() { }

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        KafkaScheduler scheduler = new KafkaScheduler(1, true, "klc-bench-");
        scheduler.startup();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        try {
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                ObjectNode answer = JSON.createObjectNode();
                try {
                    JsonNode request = JSON.readTree(line);
                    String op = request.path("op").asText();
                    if (op.equals("quit")) {
                        protocol.println("{\"ok\":{}}");
                        return;
                    } else if (op.equals("hello")) {
                        answer.putObject("ok").put("kafka", Release.version());
                    } else if (op.equals("recover")) {
                        answer.set("ok", recover(new File(request.path("dir").asText()), scheduler));
                    } else if (op.equals("load")) {
                        answer.set("ok", load(request, scheduler));
                    } else {
                        answer.put("harness", "unknown op " + op);
                    }
                } catch (Throwable e) {
                    answer.removeAll();
                    answer.put("harness", e.toString());
                }
                protocol.println(JSON.writeValueAsString(answer));
            }
        } finally {
            scheduler.shutdown();
        }
    }

    private static LogConfig topicDefaults() {
        return new LogConfig(new Properties());
    }

    private static ObjectNode recover(File dir, KafkaScheduler scheduler) throws Exception {
        LogSegment segment = LogSegment.open(dir, 0L, topicDefaults(), Time.SYSTEM, true, 0, false, "");
        try {
            ProducerStateManager producers = new ProducerStateManager(
                    TP, dir, MAX_TRANSACTION_TIMEOUT_MS, new ProducerStateManagerConfig(86_400_000, false), Time.SYSTEM);
            LeaderEpochFileCache epochs = new LeaderEpochFileCache(
                    TP, new LeaderEpochCheckpointFile(LeaderEpochCheckpointFile.newFile(dir), new LogDirFailureChannel(1)),
                    scheduler);
            long began = System.nanoTime();
            int truncated = segment.recover(producers, epochs);
            long ns = System.nanoTime() - began;
            ObjectNode out = JSON.createObjectNode();
            out.put("ns", ns);
            out.put("truncated", truncated);
            out.put("offset_entries", segment.offsetIndex().entries());
            out.put("time_entries", segment.timeIndex().entries());
            out.put("producers", producers.activeProducers().size());
            out.put("size", segment.size());
            return out;
        } finally {
            segment.close();
        }
    }

    private static ObjectNode load(JsonNode request, KafkaScheduler scheduler) throws Exception {
        List<File> dirs = new ArrayList<>();
        request.path("dirs").forEach(d -> dirs.add(new File(d.asText())));
        int threads = request.path("threads").asInt(1);
        long began = System.nanoTime();
        Logs logs = new Logs(dirs, topicDefaults(), threads, false, scheduler, new LogDirFailureChannel(dirs.size()), Time.SYSTEM);
        logs.startup();
        long ns = System.nanoTime() - began;
        ObjectNode out = JSON.createObjectNode();
        out.put("ns", ns);
        out.put("partitions", logs.allLogs().size());
        logs.shutdown(-1L);
        ProcessMetrics.forget(); // a broker's process ends with its LogManager; here the next load follows
        return out;
    }
}
