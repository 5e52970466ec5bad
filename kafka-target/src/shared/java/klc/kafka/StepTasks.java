package klc.kafka;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Kafka's background scheduler made deterministic, as the scenario format's determinism contract
 * says (docs/scenario-format.md): a one-shot task with no delay (the post-roll flush, the
 * leader-epoch checkpoint flush, the producer-state flush) runs at once, as if the scheduler's
 * thread took it before the caller went on (the model's reading: a roll inside an append flushes
 * before the append writes); one with a delay runs at the end of the step in which it fell due; a
 * segment's delayed file deletion ({@code delete-file}, {@code file.delete.delay.ms}) runs at the
 * first {@code tick} at or after its due time, so its {@code .deleted} files are there until then.
 * Periodic tasks (the retention, flush and checkpoint threads that LogManager.startup schedules)
 * are kept and never run: each is a step of its own. A delayed task runs on a thread of its own,
 * as on Kafka's scheduler, and the step waits for its end — unless it blocks for good, which a
 * scheduler thread of Kafka up to 3.7 does (KAFKA-16588: {@code kafka-delete-logs} takes from an
 * empty queue when file.delete.delay.ms is 0); that thread then stays blocked, as in the broker.
 *
 * <p>Each generation's {@code StepScheduler} puts this behind its release's Scheduler interface.
 */
class StepTasks {
    private record Task(String name, Runnable body, long dueMs, long seq) { }

    /** The task of a segment's asynchronous deletion: Kafka 2.x's Log and 4.x's LocalLog both name it so. */
    private static final String DELETE_FILE = "delete-file";
    /** A task thread seen waiting this long, with every other thread the step's, waits for good. */
    private static final int STALLED_POLLS = 40;
    private static final long POLL_MS = 5;
    private final StepClock clock;
    private final List<Task> pending = new ArrayList<>();
    private long seq;

    StepTasks(StepClock clock) {
        this.clock = clock;
    }

    /** Scheduler.startup: nothing to start, tasks run on the step's own threads. */
    public void startup() { }

    /** Scheduler.shutdown: the pending tasks are dropped, as a broker's shutdown drops them. */
    public void shutdown() {
        forget();
    }

    /** Scheduler.isStarted (2.x's trait). */
    public boolean isStarted() {
        return true;
    }

    /** Kafka's schedule(name, task, delay, period): what Kafka gets back is never run by it. */
    final ScheduledFuture<?> submit(String name, Runnable task, long delayMs, long periodMs) {
        if (periodMs > 0) {
            return new NeverRuns(); // a background thread's loop: each is a step of its own
        }
        if (delayMs <= 0 && !name.equals(DELETE_FILE)) {
            run(task);
            return new NeverRuns();
        }
        synchronized (this) {
            pending.add(new Task(name, task, clock.milliseconds() + Math.max(0, delayMs), seq++));
        }
        return new NeverRuns();
    }

    /** The tasks a step ends with: every one due by now but the file deletions. */
    final void runDue() {
        runDue(false);
    }

    /** A tick: every task due by now, file deletions included. */
    final void tick() {
        runDue(true);
    }

    /** A broker going down, or dying, drops its pending tasks (their files stay, §2.4). */
    final synchronized void forget() {
        pending.clear();
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
            runOnItsThread(next);
        }
    }

    /** Runs a task on a thread of its own to its end, or until it is blocked for good: it waits
     *  (or waits for a monitor) with nothing left to wake it, as no other thread is running. */
    private static void runOnItsThread(Task task) {
        Thread thread = new Thread(() -> run(task.body), "klc-scheduler-" + task.name);
        thread.setDaemon(true);
        thread.start();
        int stalled = 0;
        while (thread.isAlive() && stalled < STALLED_POLLS) {
            try {
                thread.join(POLL_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AdapterFailure("interrupted while " + task.name + " ran", e);
            }
            Thread.State state = thread.getState();
            stalled = state == Thread.State.WAITING || state == Thread.State.BLOCKED ? stalled + 1 : 0;
        }
        if (thread.isAlive()) {
            org.slf4j.LoggerFactory.getLogger(StepTasks.class).warn("Scheduled task {} is blocked for good", task.name);
        }
    }

    /** As Kafka's scheduler runs a task: an exception is logged, not thrown at whoever scheduled it. */
    private static void run(Runnable task) {
        try {
            task.run();
        } catch (RuntimeException e) {
            AdapterFailure.rethrowIfOurs(e);
            org.slf4j.LoggerFactory.getLogger(StepTasks.class).error("Uncaught exception in a scheduled task", e);
        }
    }

    /** What Kafka holds of a scheduled task: only cancellation is ever asked of it here. */
    private static final class NeverRuns extends CompletableFuture<Void> implements ScheduledFuture<Void> {
        @Override
        public long getDelay(TimeUnit unit) {
            return Long.MAX_VALUE;
        }

        @Override
        public int compareTo(Delayed o) {
            return 0;
        }
    }
}
