package klc.kafka;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadPoolExecutor;
import net.bytebuddy.agent.ByteBuddyAgent;

/**
 * The executor a pool thread works for. The JDK names it nowhere public: the thread runs the
 * executor's private {@code Worker}, whose enclosing instance is the executor. The agent this
 * target already installs ({@link Advices}) opens {@code java.lang} and
 * {@code java.util.concurrent} to this module for the two reads: the thread's task (its
 * {@code target} field to JDK 18, {@code holder.task} from JDK 19) and the worker's outer instance.
 */
final class PoolOf {
    private static Field task;
    private static Field holder;
    private static Field outer;

    private PoolOf() { }

    /** The pool {@code t} works for, null once the thread has ended (it drops its task); an
     *  {@link AdapterFailure} naming the JDK when this JDK keeps it elsewhere. */
    static synchronized ThreadPoolExecutor thread(Thread t) {
        try {
            open();
            Object runs = holder == null ? task.get(t) : task.get(holder.get(t));
            if (runs == null) {
                return null;
            }
            if (outer == null) {
                outer = runs.getClass().getDeclaredField("this$0");
                outer.setAccessible(true);
            }
            return (ThreadPoolExecutor) outer.get(runs);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new AdapterFailure("cannot find the executor of pool thread " + t.getName() + " on Java "
                    + Runtime.version() + ": " + e);
        }
    }

    private static void open() throws NoSuchFieldException {
        if (task != null) {
            return;
        }
        Module ours = PoolOf.class.getModule();
        ByteBuddyAgent.install().redefineModule(Thread.class.getModule(), Set.of(), Map.of(),
                Map.of("java.lang", Set.of(ours), "java.util.concurrent", Set.of(ours)), Set.of(), Map.of());
        try {
            task = Thread.class.getDeclaredField("target");
        } catch (NoSuchFieldException beforeLoom) {
            holder = Thread.class.getDeclaredField("holder");
            holder.setAccessible(true);
            task = holder.getType().getDeclaredField("task");
        }
        task.setAccessible(true);
    }
}
