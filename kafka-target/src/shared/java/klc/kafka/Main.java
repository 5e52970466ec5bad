package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;

/**
 * The kafka target's process: one JSON request per line on stdin, one JSON answer per line on
 * stdout (docs/kafka-target.md). Answers are {@code {"ok": result}}, {@code {"refused": class,
 * "message": text}} when Kafka threw (a refusal the scenario format names by Kafka's exception
 * class), {@code {"unsupported": why}} for a step this target cannot express, and
 * {@code {"harness": text}} when the request or this program is at fault.
 */
public final class Main {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Kafka exits or halts the JVM when every log dir fails; here that ends the step, not the
     *  process ({@link Release#trapExits}). */
    static final class Halted extends RuntimeException {
        Halted(int status, String message) {
            super("Kafka asked the JVM to exit with status " + status + ": " + message);
        }
    }

    private Main() { }

    /** Serves requests until {@code quit} or the end of its input, then ends the JVM: threads Kafka
     *  left running (a failed startup's recovery pools, which loadLogs never shuts down) would
     *  otherwise keep it alive after klc has gone. */
    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        int status = 0;
        try {
            serve(protocol);
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        } finally {
            protocol.flush();
            System.err.flush();
            Runtime.getRuntime().halt(status);
        }
    }

    private static void serve(PrintStream protocol) throws Exception {
        System.setOut(System.err); // nothing but answers on the protocol stream
        Release.trapExits();
        KafkaLog kafkaLog = KafkaLog.install();
        Advices.install();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Generation<?, ?> broker = null; // the generation's Broker
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer = JSON.createObjectNode();
            try {
                JsonNode request = JSON.readTree(line);
                String op = request.path("op").asText();
                if (op.equals("configure")) {
                    broker = new Broker(request);
                    answer.set("ok", JSON.createObjectNode());
                } else if (op.equals("hello")) {
                    answer.putObject("ok").put("kafka", Release.version()).put("protocol", 1);
                } else if (op.equals("quit")) {
                    protocol.println("{\"ok\":{}}");
                    return;
                } else if (broker == null) {
                    answer.put("harness", "the first request must be configure");
                } else {
                    try {
                        answer.set("ok", op.equals("race") ? Race.run(broker, request, kafkaLog) : Steps.apply(broker, op, request));
                    } finally {
                        broker.afterStep(); // Kafka's scheduler runs whether the step was refused or not
                    }
                }
            } catch (Throwable e) {
                describe(answer, e);
            }
            if (answer.has("refused") || answer.has("harness")) {
                answer.putPOJO("log", kafkaLog.recent());
            }
            protocol.println(JSON.writeValueAsString(answer));
        }
    }

    /** One step's answer on a race's thread: ok, or what went wrong, as the request loop answers it. */
    static ObjectNode answer(Generation<?, ?> broker, JsonNode request, KafkaLog kafkaLog) {
        ObjectNode answer = JSON.createObjectNode();
        try {
            answer.set("ok", Steps.apply(broker, request.path("op").asText(), request));
        } catch (Throwable e) {
            describe(answer, e);
        }
        if (answer.has("refused") || answer.has("harness")) {
            answer.putPOJO("log", kafkaLog.recent());
        }
        return answer;
    }

    /** What the answer says of a step that threw: unsupported, Kafka's refusal, or a harness failure. */
    private static void describe(ObjectNode answer, Throwable e) {
        answer.removeAll();
        if (e instanceof Unsupported) {
            answer.put("unsupported", e.getMessage());
        } else if (e instanceof Halted) {
            answer.put("refused", "Halted");
            answer.put("message", e.getMessage());
        } else if (e instanceof Steps.BadRequest) {
            answer.put("harness", e.getMessage());
        } else if (e instanceof AdapterFailure) {
            answer.put("harness", "the kafka target failed: " + trace(e));
        } else if (e instanceof RuntimeException || e instanceof java.io.IOException) {
            Throwable refusal = Release.refusal(e);
            answer.put("refused", refusal.getClass().getSimpleName());
            answer.put("message", String.valueOf(refusal.getMessage()));
            appendOffsets(refusal, answer);
            answer.put("trace", trace(e));
        } else if (e.getClass().getSimpleName().equals("SnappyError")) {
            // snappy-java's SnappyError (a chunk length out of bounds) is an Error Kafka's request
            // handlers answer like any exception: a refusal, named by its class
            answer.put("refused", "SnappyError");
            answer.put("message", String.valueOf(e.getMessage()));
            answer.put("trace", trace(e));
        } else {
            answer.put("harness", "the kafka target failed: " + trace(e));
        }
    }

    /**
     * The offsets an UnexpectedAppendOffsetException carries for the replica fetcher (its first and
     * last offset), answered as {@code "fields"}: a Scala val before 4.1, a Java field since, so
     * read by name either way.
     */
    private static void appendOffsets(Throwable refusal, ObjectNode answer) {
        if (!refusal.getClass().getSimpleName().equals("UnexpectedAppendOffsetException")) {
            return;
        }
        ObjectNode fields = answer.putObject("fields");
        fields.put("first_offset", longMember(refusal, "firstOffset"));
        fields.put("last_offset", longMember(refusal, "lastOffset"));
    }

    private static long longMember(Object o, String name) {
        try {
            return o.getClass().getField(name).getLong(o);
        } catch (NoSuchFieldException e) {
            try {
                return ((Number) o.getClass().getMethod(name).invoke(o)).longValue();
            } catch (ReflectiveOperationException f) {
                throw new AdapterFailure(o.getClass().getName() + " has no " + name, f);
            }
        } catch (IllegalAccessException e) {
            throw new AdapterFailure(o.getClass().getName() + "." + name + " is not readable", e);
        }
    }

    private static String trace(Throwable e) {
        StringWriter out = new StringWriter();
        e.printStackTrace(new PrintWriter(out));
        String text = out.toString();
        return text.length() > 4000 ? text.substring(0, 4000) : text;
    }
}
