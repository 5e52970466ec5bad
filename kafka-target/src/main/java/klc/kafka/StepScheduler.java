package klc.kafka;

import org.apache.kafka.server.util.Scheduler;

import java.util.concurrent.ScheduledFuture;

/** Kafka 4.x's {@code org.apache.kafka.server.util.Scheduler}, run step by step ({@link StepTasks}). */
final class StepScheduler extends StepTasks implements Scheduler {
    StepScheduler(StepClock clock) {
        super(clock);
    }

    @Override
    public ScheduledFuture<?> schedule(String name, Runnable task, long delayMs, long periodMs) {
        return submit(name, task, delayMs, periodMs);
    }

    @Override
    public void resizeThreadPool(int newSize) { }
}
