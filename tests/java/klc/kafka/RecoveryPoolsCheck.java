// RecoveryPools against the wake-up it must not mistake for idleness, for tests/test_kafka_target.py.
// Compiled beside the adapter's jar, in its package: RecoveryPools is package-private.
//
// A recovery pool's only thread sits in getTask, blocked on its queue's take(); a load is then queued
// and the thread's wake-up held back by a gate (a loaded machine holds it back by not scheduling it).
// awaitDrained must wait for that load: it prints "drained after the load" when it returned after
// the load ran, "drained before the load" when it returned with the load still queued.
package klc.kafka;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

public final class RecoveryPoolsCheck {
    /** A queue whose first take() waits for the gate before looking at its items. */
    static final class GatedQueue extends LinkedBlockingQueue<Runnable> {
        private static final long serialVersionUID = 1L;
        final CountDownLatch gate = new CountDownLatch(1);

        @Override
        public Runnable take() throws InterruptedException {
            gate.await();
            return super.take();
        }
    }

    public static void main(String[] args) throws Exception {
        RecoveryPools pools = new RecoveryPools();
        GatedQueue queue = new GatedQueue();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, queue,
                r -> new Thread(r, "log-recovery-/check/d0-0"));
        pool.prestartCoreThread();
        Thread worker = waitingWorker();
        AtomicBoolean loaded = new AtomicBoolean();
        pool.execute(() -> loaded.set(true));
        Thread opener = new Thread(() -> {
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                return;
            }
            queue.gate.countDown();
        });
        opener.start();
        pools.awaitDrained();
        System.out.println(loaded.get() ? "drained after the load" : "drained before the load");
        opener.join();
        pool.shutdown();
        worker.join(10_000);
    }

    /** The pool's thread once it waits in getTask. */
    private static Thread waitingWorker() throws InterruptedException {
        for (int i = 0; i < 1000; i++) {
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().startsWith("log-recovery-/check") && t.getState() == Thread.State.WAITING) {
                    return t;
                }
            }
            Thread.sleep(10);
        }
        throw new IllegalStateException("the pool's thread never waited for a task");
    }
}
