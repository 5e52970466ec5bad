package klc.kafka;

import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;

import java.util.function.Supplier;

/**
 * Kafka's clock, moved only by the scenario's {@code tick} steps (docs/scenario-format.md,
 * "Determinism contract"): every time Kafka reads — segment creation, roll by time, retention,
 * the delay of an asynchronous file deletion — comes from here.
 */
final class StepClock implements Time {
    private volatile long nowMs;

    StepClock(long startMs) {
        this.nowMs = startMs;
    }

    void set(long ms) {
        nowMs = ms;
    }

    @Override
    public long milliseconds() {
        return nowMs;
    }

    @Override
    public long nanoseconds() {
        return nowMs * 1_000_000L;
    }

    /** Abstract in Kafka 2.0's Time, a default (the same value) later; no @Override for that. */
    public long hiResClockMs() {
        return nowMs;
    }

    @Override
    public void sleep(long ms) {
        nowMs += ms; // nothing in the log layer sleeps on the step path; if it did, time passes
    }

    /** Abstract in the Time of Kafka 2.2 on (no @Override: 2.0 and 2.1 lack it); the log layer
     *  does not wait. Nothing else runs while a step waits, so a condition false now stays false:
     *  the wait times out at once. */
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        if (!condition.get()) {
            throw new TimeoutException("Condition not satisfied before deadline");
        }
    }
}
