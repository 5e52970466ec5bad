package klc.kafka;

import java.lang.invoke.MethodType;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;

/**
 * Kafka's classes that moved within the storage generation, reached by name so one source compiles
 * against every release of it: 4.4 moved the record classes ({@code FileRecords},
 * {@code MemoryRecords}) to {@code org.apache.kafka.common.record.internal} and
 * {@code AppInfoParser} and {@code Exit} to {@code org.apache.kafka.common.utils.internals}
 * (kafka-clients' public API keeps only what clients use). Each lookup lists the newest name first.
 */
final class Moved {
    private static final String RECORD = "org.apache.kafka.common.record.";
    private static final String UTILS = "org.apache.kafka.common.utils.";
    static final Class<?> MEMORY_RECORDS = classOf(RECORD + "internal.MemoryRecords", RECORD + "MemoryRecords");
    static final Class<?> FILE_RECORDS = classOf(RECORD + "internal.FileRecords", RECORD + "FileRecords");
    static final Class<?> APP_INFO = classOf(UTILS + "internals.AppInfoParser", UTILS + "AppInfoParser");
    static final Class<?> EXIT = classOf(UTILS + "internals.Exit", UTILS + "Exit");

    private Moved() { }

    /** The first of the names this release has. */
    static Class<?> classOf(String... names) {
        for (String name : names) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e) {
                // the next name
            }
        }
        throw new AdapterFailure("this Kafka has none of " + String.join(", ", names));
    }

    /** {@code MemoryRecords.readableRecords(bytes)}, typed as whatever MemoryRecords the caller's
     *  Kafka method takes (the compiler infers it from the call it is passed to). */
    @SuppressWarnings("unchecked")
    static <T> T memoryRecords(byte[] data) {
        return (T) invoke(null, method(MEMORY_RECORDS, "readableRecords", ByteBuffer.class), ByteBuffer.wrap(data));
    }

    /** The bytes of a fetch's {@code Records}: a segment's slice (FileRecords) or a buffer. */
    static byte[] bytesOf(Object records) {
        ByteBuffer buffer = ByteBuffer.allocate((Integer) invoke(records, method(records.getClass(), "sizeInBytes")));
        if (FILE_RECORDS.isInstance(records)) {
            invoke(records, method(FILE_RECORDS, "readInto", ByteBuffer.class, int.class), buffer, 0);
        } else if (MEMORY_RECORDS.isInstance(records)) {
            buffer.put(((ByteBuffer) invoke(records, method(MEMORY_RECORDS, "buffer"))).duplicate());
        } else {
            throw new AdapterFailure("records of type " + records.getClass().getName());
        }
        return buffer.array();
    }

    static String version() {
        return (String) invoke(null, method(APP_INFO, "getVersion"));
    }

    /** Exit's exit and halt procedures replaced by {@code procedure} (Exit.Procedure's one method). */
    static void trapExits(InvocationHandler procedure) {
        Class<?> type = classOf(EXIT.getName() + "$Procedure");
        Object proxy = Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, procedure);
        invoke(null, method(EXIT, "setExitProcedure", type), proxy);
        invoke(null, method(EXIT, "setHaltProcedure", type), proxy);
    }

    /** A value class's component: 4.2 made EpochEntry, BatchMetadata, OffsetPosition and
     *  TimestampOffset records (an accessor), 4.1 has them as classes of public final fields. */
    static Object member(Object target, String name) {
        try {
            return invoke(target, target.getClass().getMethod(name));
        } catch (NoSuchMethodException e) {
            try {
                return target.getClass().getField(name).get(target);
            } catch (ReflectiveOperationException f) {
                throw new AdapterFailure(target.getClass().getName() + " has no " + name, f);
            }
        }
    }

    /** {@code target.name(args)} with the first argument list a public method of that name and
     *  arity accepts (a signature that changed within the generation, newest first). */
    static Object callFirst(Object target, String name, Object[]... alternatives) {
        for (Object[] args : alternatives) {
            for (Method m : target.getClass().getMethods()) {
                if (m.getName().equals(name) && accepts(m.getParameterTypes(), args)) {
                    return invoke(target, m, args);
                }
            }
        }
        throw new AdapterFailure("Kafka " + version() + " has no " + name + " taking any of the known argument lists");
    }

    private static boolean accepts(Class<?>[] types, Object[] args) {
        if (types.length != args.length) {
            return false;
        }
        for (int i = 0; i < types.length; i++) {
            Class<?> type = types[i].isPrimitive() ? MethodType.methodType(types[i]).wrap().returnType() : types[i];
            if (args[i] != null ? !type.isInstance(args[i]) : types[i].isPrimitive()) {
                return false;
            }
        }
        return true;
    }

    private static Method method(Class<?> type, String name, Class<?>... parameters) {
        try {
            return type.getMethod(name, parameters);
        } catch (NoSuchMethodException e) {
            throw new AdapterFailure(type.getName() + " has no " + name, e);
        }
    }

    private static Object invoke(Object target, Method m, Object... args) {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw sneaky(e.getCause());
        } catch (IllegalAccessException e) {
            throw new AdapterFailure(e);
        }
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
        throw (E) e;
    }
}
