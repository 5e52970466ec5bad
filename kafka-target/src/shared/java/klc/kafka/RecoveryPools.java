package klc.kafka;

import java.util.HashSet;
import java.util.Set;

/**
 * The threads of {@code LogManager.loadLogs}'s recovery pools (one pool per data dir). When a
 * partition's load throws, loadLogs rethrows it and shuts the pools down without interrupting them
 * (§6.2 step 7), so every load already queued still runs: the files after a failed startup are
 * those of every load done. Waiting for the pools' threads makes that the answer's state, not a
 * race with the next step.
 */
final class RecoveryPools {
    private static final long TIMEOUT_MS = 120_000;

    private final Set<Thread> before = new HashSet<>(Thread.getAllStackTraces().keySet());

    /** Taken before the startup: the threads alive then are not the pools'. */
    RecoveryPools() { }

    /** Waits until the pools' threads started since have ended or wait, idle, for a task that will
     *  not come (4.x names them {@code log-recovery-<dir>-<n>}, 2.x leaves Executors'
     *  {@code pool-<n>-thread-<m>}). A pool loadLogs made before a later dir's partition name failed
     *  the startup is never shut down: its threads idle on their empty queue once every load they
     *  were given ran. */
    void awaitDrained() throws InterruptedException {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (before.contains(t) || !isPoolThread(t.getName())) {
                continue;
            }
            while (t.isAlive() && !idle(t)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new AdapterFailure("recovery thread " + t.getName() + " still loading after " + TIMEOUT_MS + " ms");
                }
                t.join(10);
            }
        }
    }

    /** Blocked taking its pool's next task: the queue is empty, every load given to the pool ran. */
    private static boolean idle(Thread t) {
        Thread.State state = t.getState();
        if (state != Thread.State.WAITING && state != Thread.State.TIMED_WAITING) {
            return false;
        }
        for (StackTraceElement frame : t.getStackTrace()) {
            if (frame.getClassName().equals("java.util.concurrent.ThreadPoolExecutor") && frame.getMethodName().equals("getTask")) {
                return true;
            }
        }
        return false;
    }

    private static boolean isPoolThread(String name) {
        return name.startsWith("log-recovery-") || name.matches("pool-\\d+-thread-\\d+");
    }
}
