package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The {@code race} op: each thread's requests (one step; an append of several requests is one
 * thread's sequence) run on a thread of their own, all released together, so Kafka's own code
 * decides the interleaving — the scenario's {@code schedule} is impl's and not followed here. The
 * threads spin at the start rather than park, so they leave it within microseconds of each other,
 * not a scheduler's wake-up apart: a first access to a lazy index takes about as long. Answers
 * {@code {"race": [[answer per request] per thread], "index_builds": {file: n}}}: how many index
 * objects Kafka built for each file during the race — two for one file is KAFKA-9156
 * ({@link IndexBuilds}).
 */
final class Race {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A race thread still running after this long has hung: a harness failure, not a verdict. */
    private static final long JOIN_MS = 60_000;

    private Race() { }

    static ObjectNode run(Generation<?, ?> broker, JsonNode request, KafkaLog kafkaLog) throws Exception {
        JsonNode threads = request.path("threads");
        if (!threads.isArray() || threads.size() == 0) {
            throw new Steps.BadRequest("race needs threads: a list of request lists");
        }
        AtomicInteger start = new AtomicInteger(threads.size());
        ArrayNode[] answers = new ArrayNode[threads.size()];
        List<Thread> running = new ArrayList<>();
        Map<String, Integer> builds;
        IndexBuilds.start();
        try {
            for (int i = 0; i < threads.size(); i++) {
                JsonNode requests = threads.get(i);
                int slot = i;
                Thread t = new Thread(() -> answers[slot] = runThread(broker, requests, start, kafkaLog), "klc-race-" + i);
                running.add(t);
                t.start();
            }
            for (Thread t : running) {
                t.join(JOIN_MS);
                if (t.isAlive()) {
                    throw new TimeoutException(t.getName() + " did not end within " + JOIN_MS + " ms");
                }
            }
        } finally {
            builds = IndexBuilds.stop(broker.root());
        }
        ObjectNode out = JSON.createObjectNode();
        ArrayNode race = out.putArray("race");
        for (ArrayNode a : answers) {
            race.add(a);
        }
        ObjectNode built = out.putObject("index_builds");
        builds.forEach(built::put);
        return out;
    }

    private static ArrayNode runThread(Generation<?, ?> broker, JsonNode requests, AtomicInteger start, KafkaLog kafkaLog) {
        ArrayNode out = JSON.createArrayNode();
        start.decrementAndGet();
        long deadline = System.nanoTime() + JOIN_MS * 1_000_000;
        while (start.get() > 0) {
            if (System.nanoTime() > deadline) {
                out.addObject().put("harness", "the race's threads were not all started within " + JOIN_MS + " ms");
                return out;
            }
            Thread.onSpinWait();
        }
        for (JsonNode r : requests) {
            out.add(Main.answer(broker, r, kafkaLog));
        }
        return out;
    }
}
