package klc.kafka;

import java.util.function.Supplier;

/**
 * A broker's startup around {@code LogManager}'s, the same for every generation: the load, then
 * what ReplicaManager's log-dir failure handler does with the dirs the load queued offline, then
 * (when the broker runs) the first steps of a started broker. An exception out of the load ends
 * the startup (Kafka's failure policy, §6.2 step 7), after the loads queued behind it have run.
 */
final class Startup {
    /** A step that may throw what Kafka throws. */
    interface Step {
        void run() throws Exception;
    }

    private Startup() { }

    /** Returns why the startup failed (the broker is then down, its files as the loads left
     *  them), or null. {@code offline} returns why the failure handler halted the broker, or null. */
    static String run(Step load, Supplier<String> offline, Step started) throws InterruptedException {
        RecoveryPools pools = new RecoveryPools();
        try {
            load.run();
            String halted = offline.get();
            if (halted == null) {
                started.run();
            }
            return halted;
        } catch (Exception | Error e) {
            AdapterFailure.rethrowIfOurs(e); // the adapter's, not the broker's startup
            if (e instanceof Error && !isDataError(e)) {
                throw (Error) e; // the JVM's or this adapter's: a harness failure, not the broker's
            }
            pools.awaitDrained(); // the loads queued behind the failed one still run
            return "the broker's startup failed: " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    /** An Error Kafka's load throws over bad data, which ends the broker's startup as any exception
     *  does (BrokerServer.startup catches Throwable): snappy-java's SnappyError on a chunk length out
     *  of bounds. 4.4's Java LogManager rethrows it as a ClassCastException, the Scala one of 1.1–4.3
     *  as itself (loadLogs: the ExecutionException's cause). */
    private static boolean isDataError(Throwable e) {
        return e.getClass().getSimpleName().equals("SnappyError");
    }
}
