package klc.kafka;

import scala.Function0;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.concurrent.TimeUnit;

/**
 * Kafka's scheduler run step by step ({@link StepTasks}), behind whichever Scheduler interface the
 * release has: up to 3.4 the Scala trait {@code kafka.utils.Scheduler} (a task is a Function0, the
 * delay and period come with a TimeUnit), from 3.5 server-common's
 * {@code org.apache.kafka.server.util.Scheduler} (a Runnable, milliseconds). One proxy serves
 * both; the interfaces' default methods (scheduleOnce, Scala's default arguments) run as written.
 */
final class StepScheduler extends StepTasks {
    private final Object proxy;

    StepScheduler(StepClock clock) {
        super(clock);
        Class<?> type = Scala.classOf("org.apache.kafka.server.util.Scheduler", "kafka.utils.Scheduler");
        this.proxy = Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, this::handle);
    }

    /** What Kafka's constructors take as their Scheduler. */
    Object asKafkaScheduler() {
        return proxy;
    }

    private Object handle(Object self, Method method, Object[] args) throws Throwable {
        switch (method.getName()) {
            case "schedule":
                if (args.length == 5) { // the Scala trait: (name, Function0, delay, period, unit)
                    TimeUnit unit = (TimeUnit) args[4];
                    Function0<?> task = (Function0<?>) args[1];
                    return submit((String) args[0], task::apply, unit.toMillis((Long) args[2]), unit.toMillis((Long) args[3]));
                }
                return submit((String) args[0], (Runnable) args[1], (Long) args[2], (Long) args[3]);
            case "startup":
                startup();
                return null;
            case "shutdown":
                shutdown();
                return null;
            case "isStarted":
                return isStarted();
            case "resizeThreadPool":
                return null;
            case "hashCode":
                return System.identityHashCode(self);
            case "equals":
                return self == args[0];
            case "toString":
                return "the step scheduler";
            default:
                if (method.isDefault()) {
                    return InvocationHandler.invokeDefault(self, method, args);
                }
                throw new UnsupportedOperationException(method.toString());
        }
    }
}
