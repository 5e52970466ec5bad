package klc.kafka;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * What a round of Kafka's cleaner did, in the model's words, for every generation that drives one
 * ({@code CleanerRound}: kafka-storage's {@code Cleaner}, 4.1 on; {@code ScalaCleanerRound}: the Scala
 * {@code kafka.log.Cleaner}, 3.1–4.0): {@code {"groups": [[source bases], …]}}, the groups installed
 * in order, plus {@code "split": base} when a cleaned segment overflowed and Kafka split the source
 * ({@code splitOverflowedSegment}) and aborted the round. Both are read off the log's segment list
 * as the round left it, compared by identity with the list before it: replaceSegments swaps each
 * group for one new segment at the group's first base (its sources are the removed ones up to the
 * next segment), a split swaps one source for its pieces, each at or past the source's base, and
 * the split source is the last source the round removed (the round ends with it).
 */
final class CleanedGroups {
    /** LogCleanerManager cleans only a log whose cleanup.policy holds compact: the step's refusal
     *  otherwise, named as the model names it. */
    static final class NotCompacted extends RuntimeException {
        NotCompacted(String message) {
            super(message);
        }
    }

    private CleanedGroups() { }

    /** A question asked of one batch, by reflection. */
    private interface BatchTest {
        boolean test(Object batch) throws ReflectiveOperationException;
    }

    /** Whether an inactive segment holds a magic 0/1 batch among the batches before its first
     *  damaged one: what the model's and impl's {@code holds_legacy_batches} ask. {@code logs}: the
     *  segments' FileRecords, oldest first, the active one last (the record classes moved between
     *  releases: read by reflection). */
    static boolean holdsLegacyBatches(List<?> logs) {
        return anyValidBatch(logs, batch -> (Byte) call(batch, "magic") < 2);
    }

    /** Whether an inactive segment holds, among the batches before its first damaged one, a
     *  control batch or a v2 record with a key and no value: what a cleaner before KIP-534 keeps
     *  or drops by segment mtimes. {@code logs} as for {@link #holdsLegacyBatches}. */
    static boolean holdsTombstonesOrMarkers(List<?> logs) {
        return anyValidBatch(logs, batch -> {
            if ((Boolean) call(batch, "isControlBatch")) {
                return true;
            }
            for (Object record : (Iterable<?>) batch) {
                if ((Boolean) call(record, "hasKey") && !(Boolean) call(record, "hasValue")) {
                    return true;
                }
            }
            return false;
        });
    }

    /** Whether {@code test} holds for a batch of an inactive segment before its first damaged one. */
    private static boolean anyValidBatch(List<?> logs, BatchTest test) {
        try {
            for (Object records : logs.subList(0, logs.size() - 1)) {
                if (validBatchBefore((Iterable<?>) call(records, "batches"), test)) {
                    return true;
                }
            }
            return false;
        } catch (ReflectiveOperationException e) {
            throw new AdapterFailure("a segment's batches are not readable", e);
        }
    }

    private static boolean validBatchBefore(Iterable<?> batches, BatchTest test) throws ReflectiveOperationException {
        try {
            for (Object batch : batches) {
                if (!(Boolean) call(batch, "isValid")) {
                    return false;
                }
                if (test.test(batch)) {
                    return true;
                }
            }
        } catch (RuntimeException e) {
            if (!e.getClass().getSimpleName().equals("CorruptRecordException")) {
                throw e;
            }
        }
        return false; // the valid batches end here
    }

    /** A public method of a batch class that may itself not be public (DefaultFileChannelRecordBatch). */
    private static Object call(Object target, String name) throws ReflectiveOperationException {
        java.lang.reflect.Method method = target.getClass().getMethod(name);
        method.setAccessible(true);
        return method.invoke(target);
    }

    /** The answer from the segment lists before and after the round; {@code aborted}: the round
     *  ended in LogCleaningAbortedException (only a split aborts it here). */
    static void answer(ObjectNode out, List<?> before, List<?> after, boolean aborted, ToLongFunction<Object> baseOffset) {
        Map<Object, Boolean> kept = new IdentityHashMap<>();
        after.forEach(s -> kept.put(s, true));
        Map<Object, Boolean> old = new IdentityHashMap<>();
        before.forEach(s -> old.put(s, true));
        List<Object> removed = new ArrayList<>();
        for (Object s : before) {
            if (!kept.containsKey(s)) {
                removed.add(s);
            }
        }
        Object split = aborted && !removed.isEmpty() ? removed.remove(removed.size() - 1) : null;
        ArrayNode groups = out.putArray("groups");
        for (int i = 0; i < after.size(); i++) {
            Object s = after.get(i);
            long base = baseOffset.applyAsLong(s);
            if (old.containsKey(s) || (split != null && base >= baseOffset.applyAsLong(split))) {
                continue; // a segment the round left, or a piece of the split source (it starts at or past its base)
            }
            long end = i + 1 < after.size() ? baseOffset.applyAsLong(after.get(i + 1)) : Long.MAX_VALUE;
            ArrayNode group = groups.addArray();
            for (Object r : removed) {
                long source = baseOffset.applyAsLong(r);
                if (source >= base && source < end) {
                    group.add(source);
                }
            }
        }
        if (split != null) {
            out.put("split", baseOffset.applyAsLong(split));
        }
    }
}
