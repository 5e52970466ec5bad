package klc.kafka;

import org.apache.kafka.server.util.Scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;

/**
 * Kafka's background scheduler made deterministic, as the scenario format's determinism contract
 * says (docs/scenario-format.md): a one-shot task with no delay (the post-roll flush, the
 * leader-epoch checkpoint flush, the producer-state flush) runs at once, as if the scheduler's
 * thread took it before the caller went on (the model's reading: a roll inside an append flushes
 * before the append writes); one with a delay runs at the end of the step in which it fell due; a
 * segment's delayed file deletion ({@code delete-file}, {@code file.delete.delay.ms}) runs at the
 * first {@code tick} at or after its due time, so its {@code .deleted} files are there until then.
 * Periodic tasks (the retention, flush and checkpoint threads that LogManager.startup schedules)
 * are kept and never run: each is a step of its own.
 */
final class StepScheduler implements Scheduler {
    private record Task(String name, Runnable body, long dueMs, long seq) { }

    private static final String DELETE_FILE = "delete-file"; // LocalLog's asynchronous segment deletion
    private final StepClock clock;
    private final List<Task> pending = new ArrayList<>();
    private long seq;

    StepScheduler(StepClock clock) {
        this.clock = clock;
    }

    @Override
    public void startup() { }

    @Override
    public void shutdown() {
        pending.clear(); // a broker going down drops its pending tasks (their files stay, §2.4)
    }

    @Override
    public synchronized ScheduledFuture<?> schedule(String name, Runnable task, long delayMs, long periodMs) {
        if (periodMs > 0) {
            return new NeverRuns(); // a background thread's loop: each is a step of its own
        }
        if (delayMs <= 0 && !name.equals(DELETE_FILE)) {
            run(task);
            return new NeverRuns();
        }
        pending.add(new Task(name, task, clock.milliseconds() + Math.max(0, delayMs), seq++));
        return new NeverRuns();
    }

    @Override
    public void resizeThreadPool(int newSize) { }

    /** The tasks a step ends with: every one due by now but the file deletions. */
    void runDue() {
        runDue(false);
    }

    /** A tick: every task due by now, file deletions included. */
    void tick() {
        runDue(true);
    }

    /** Runs the due tasks, oldest due time first, tasks scheduled by tasks included. */
    private void runDue(boolean deletions) {
        while (true) {
            Task next;
            synchronized (this) {
                next = pending.stream()
                        .filter(t -> t.dueMs <= clock.milliseconds() && (deletions || !t.name.equals(DELETE_FILE)))
                        .min(Comparator.comparingLong(Task::dueMs).thenComparingLong(Task::seq))
                        .orElse(null);
                if (next == null) {
                    return;
                }
                pending.remove(next);
            }
            run(next.body);
        }
    }

    /** As Kafka's scheduler runs a task: an exception is logged, not thrown at whoever scheduled it. */
    private static void run(Runnable task) {
        try {
            task.run();
        } catch (RuntimeException e) {
            org.slf4j.LoggerFactory.getLogger(StepScheduler.class).error("Uncaught exception in a scheduled task", e);
        }
    }

    synchronized void forget() {
        pending.clear();
    }

    /** What Kafka holds of a scheduled task: only cancellation is ever asked of it here. */
    private static final class NeverRuns extends CompletableFuture<Void> implements ScheduledFuture<Void> {
        @Override
        public long getDelay(java.util.concurrent.TimeUnit unit) {
            return Long.MAX_VALUE;
        }

        @Override
        public int compareTo(java.util.concurrent.Delayed o) {
            return 0;
        }
    }
}
