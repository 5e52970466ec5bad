package klc.kafka;

/**
 * This adapter could not do what a step asks of Kafka: a constructor or method of the release not
 * found, a field not readable, a thread of its own still busy. A harness error, answered as
 * {@code harness} and never as the broker's refusal or failed startup — a release whose API the
 * adapter does not know must not be judged as a Kafka that fails every step.
 */
final class AdapterFailure extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    AdapterFailure(String message) {
        super(message);
    }

    AdapterFailure(String message, Throwable cause) {
        super(message, cause);
    }

    AdapterFailure(Throwable cause) {
        super(cause);
    }

    /** Rethrows {@code e} if it is an adapter failure, where a catch would take it for Kafka's. */
    static void rethrowIfOurs(Throwable e) {
        if (e instanceof AdapterFailure) {
            throw (AdapterFailure) e;
        }
    }
}
