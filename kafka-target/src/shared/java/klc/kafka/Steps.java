package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;

import java.util.HashSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/** The protocol's ops, each read from its request and handed to the broker: one dispatch for
 *  every generation, written against {@link Generation} and compiled with each. */
final class Steps {
    static final class BadRequest extends RuntimeException {
        BadRequest(String message) {
            super(message);
        }
    }

    private Steps() { }

    /** One op on any generation: {@code L} is its log class, which the partition ops take. */
    static <L> ObjectNode apply(Generation<?, L> broker, String op, JsonNode r) throws Exception {
        if (r.has("now_ms")) {
            broker.clockAt(number(r, "now_ms")); // the scenario's clock, moved only by tick steps
        }
        switch (op) {
            case "open": return open(broker, r);
            case "shutdown": return broker.shutdown();
            case "halt": return broker.halt();
            case "tick": return broker.tick();
            case "state": return broker.state();
            case "index_entries": return broker.indexEntries();
            case "offline_dirs": return broker.offlineDirs();
            default: break;
        }
        if (!broker.running()) {
            throw new BadRequest(op + " while the broker is down");
        }
        switch (op) {
            case "create": return broker.create(text(r, "topic"), (int) number(r, "partition"), (int) number(r, "dir"));
            case "retention": return broker.retention();
            case "checkpoint": return broker.checkpoint();
            case "expire_producers": return broker.expireProducers();
            case "alter_config": return broker.alterConfig(text(r, "topic"), object(r, "config"));
            case "previous_broker_epoch": return broker.previousBrokerEpochAnswer();
            case "delete_partition": return broker.deletePartition(text(r, "topic"), (int) number(r, "partition"));
            case "replace_current_with_future":
                return broker.replaceCurrentWithFuture(text(r, "topic"), (int) number(r, "partition"));
            default: break;
        }
        L log = broker.log(text(r, "topic"), (int) number(r, "partition"));
        switch (op) {
            case "append":
                return broker.append(log, HexFormat.of().parseHex(text(r, "data")), r.path("leader").asBoolean(true),
                        (int) number(r, "leader_epoch"), (short) r.path("transaction_version").asInt(0),
                        r.path("verification_guard").isNull() || r.path("verification_guard").isMissingNode()
                                ? 0 : (int) number(r, "verification_guard"));
            case "verify_transaction":
                return broker.verifyTransaction(log, number(r, "producer_id"), (int) number(r, "sequence"),
                        (short) number(r, "producer_epoch"), bool(r, "supports_epoch_bump", false));
            case "roll": return broker.roll(log);
            case "clean": return broker.clean(log);
            case "read":
                if (r.path("isolation").asText("read_uncommitted").equals("read_committed")) {
                    return broker.readCommitted(log, number(r, "offset"), (int) number(r, "max_bytes"),
                            r.path("min_one_message").asBoolean(true));
                }
                return broker.read(log, number(r, "offset"), (int) number(r, "max_bytes"),
                        r.path("max_offset").isNull() || r.path("max_offset").isMissingNode() ? null : number(r, "max_offset"),
                        r.path("min_one_message").asBoolean(true));
            case "offset_for_timestamp": return broker.offsetForTimestamp(log, number(r, "timestamp"));
            case "truncate": return broker.truncate(log, number(r, "offset"));
            case "truncate_fully": return broker.truncateFully(log, number(r, "offset"));
            case "delete_records": return broker.deleteRecords(log, number(r, "offset"));
            case "flush":
                return broker.flush(log, r.path("offset").isNull() || r.path("offset").isMissingNode() ? null : number(r, "offset"));
            default: throw new BadRequest("unknown op " + op);
        }
    }

    /** Kafka's load; with {@code halt_at}, the process dies at the chosen point of it. */
    private static ObjectNode open(Generation<?, ?> broker, JsonNode r) throws Exception {
        Set<TopicPartition> unassigned = new HashSet<>();
        for (JsonNode tp : r.path("unassigned")) { // [topic, partition] pairs: the unassign steps'
            unassigned.add(new TopicPartition(tp.path(0).asText(), tp.path(1).asInt()));
        }
        broker.unassigned(unassigned);
        JsonNode haltAt = r.path("halt_at");
        if (haltAt.isMissingNode() || haltAt.isNull()) {
            return counted(broker);
        }
        LoadCrash.arm(text(haltAt, "point"), number(haltAt, "count"));
        try {
            return counted(broker);
        } finally {
            LoadCrash.disarm();
        }
    }

    /** The load's answer with the index objects it built, per file ({@code indexes_built}): up to
     *  2.2 every segment's offset and time index is built and checked at load, from 2.3 only those
     *  something reads, the active segments' after a clean shutdown (KAFKA-7283). */
    private static ObjectNode counted(Generation<?, ?> broker) throws Exception {
        IndexBuilds.start();
        Map<String, Integer> built;
        ObjectNode answer;
        try {
            answer = broker.open();
        } finally {
            built = IndexBuilds.stop(broker.root());
        }
        ObjectNode files = answer.putObject("indexes_built");
        built.forEach(files::put);
        return answer;
    }

    private static long number(JsonNode r, String field) {
        return field(r, field, JsonNode::canConvertToLong, "an integer").asLong();
    }

    /** An optional boolean field: {@code absent} when missing or null. */
    private static boolean bool(JsonNode r, String field, boolean absent) {
        JsonNode v = r.get(field);
        if (v == null || v.isNull()) {
            return absent;
        }
        return field(r, field, JsonNode::isBoolean, "a boolean").asBoolean();
    }

    private static JsonNode object(JsonNode r, String field) {
        return field(r, field, JsonNode::isObject, "an object");
    }

    private static String text(JsonNode r, String field) {
        return field(r, field, JsonNode::isTextual, "a string").asText();
    }

    /** The request's field, which must be present and of the kind {@code ok} accepts. */
    private static JsonNode field(JsonNode r, String field, Predicate<JsonNode> ok, String kind) {
        JsonNode v = r.get(field);
        if (v == null || !ok.test(v)) {
            throw new BadRequest("field " + field + " must be " + kind + ", got " + v);
        }
        return v;
    }
}
