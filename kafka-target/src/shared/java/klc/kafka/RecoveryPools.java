package klc.kafka;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadPoolExecutor;

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

    /** Blocked taking its pool's next task with none queued: every load given to the pool ran.
     *  The queue is read first. A worker woken for a task it has not yet taken still reports
     *  WAITING inside getTask until it is scheduled (a loaded machine can take a while), so its
     *  state alone would call a pool idle with a load still queued; once the queue reads empty,
     *  a worker found in getTask took nothing after it. */
    private static boolean idle(Thread t) {
        ThreadPoolExecutor pool = PoolOf.thread(t);
        if (pool == null) {
            return true; // ended
        }
        if (!pool.getQueue().isEmpty()) {
            return false;
        }
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
