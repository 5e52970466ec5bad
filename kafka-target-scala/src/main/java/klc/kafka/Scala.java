package klc.kafka;

import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * Calling Kafka's Scala API from Java across releases (2.x's Log, 3.x's UnifiedLog). Where a signature differs between
 * releases the caller lists the argument lists it knows, newest release first, and the first one
 * the running release's method accepts is used; Scala's default arguments (the
 * {@code name$default$N} methods the Scala compiler writes) fill whatever a list leaves off.
 */
final class Scala {
    private Scala() { }

    /** {@code target.name(args...)} with the first of {@code alternatives} the method accepts. */
    static Object callFirst(Object target, String name, Object[]... alternatives) {
        for (Object[] args : alternatives) {
            for (Method m : target.getClass().getMethods()) {
                if (m.getName().equals(name) && accepts(m, args) && hasDefaults(target.getClass(), m, args.length)) {
                    return invoke(target, m, withDefaults(target, m, args));
                }
            }
        }
        throw new AdapterFailure("Kafka " + Release.version() + " has no " + name + " taking any of the known argument lists");
    }

    static Object call(Object target, String name, Object... args) {
        return callFirst(target, name, args);
    }

    /** {@code new type(args...)} with the first of {@code alternatives} a public constructor accepts. */
    static <T> T constructFirst(Class<T> type, Object[]... alternatives) {
        for (Object[] args : alternatives) {
            for (Constructor<?> c : type.getConstructors()) {
                if (c.getParameterCount() == args.length && accepts(c, args)) {
                    try {
                        return type.cast(c.newInstance(args));
                    } catch (InvocationTargetException e) {
                        throw sneaky(e.getCause());
                    } catch (ReflectiveOperationException e) {
                        throw new AdapterFailure(e);
                    }
                }
            }
        }
        throw new AdapterFailure("Kafka " + Release.version() + " has no " + type.getSimpleName() + " constructor taking any of the known argument lists");
    }

    /** The Scala {@code object} of that name, or null where this release does not have it. */
    static Object object(String className) {
        try {
            return Class.forName(className + "$").getField("MODULE$").get(null);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    /** A new instance of a class with a public no-argument constructor, or null where this release lacks it. */
    static Object newInstance(String className) {
        try {
            return Class.forName(className).getConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    /** An implementation of an interface whose every method answering Properties answers none
     *  (a config repository with no override), or null where this release lacks the interface. */
    static Object noProperties(String interfaceName) {
        Class<?> type;
        try {
            type = Class.forName(interfaceName);
        } catch (ClassNotFoundException e) {
            return null;
        }
        return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
            if (method.getReturnType() == Properties.class) {
                return new Properties();
            }
            switch (method.getName()) {
                case "hashCode": return System.identityHashCode(proxy);
                case "equals": return proxy == args[0];
                case "toString": return "no topic config overrides";
                default: throw new UnsupportedOperationException(method.toString());
            }
        });
    }

    /** The value of a private field, found by the end of its name (Scala may mangle it). */
    static Object field(Object target, Class<?> declaring, String name) {
        for (Field f : declaring.getDeclaredFields()) {
            if (f.getName().equals(name) || f.getName().endsWith("$$" + name)) {
                try {
                    f.setAccessible(true);
                    return f.get(target);
                } catch (IllegalAccessException e) {
                    throw new AdapterFailure(e);
                }
            }
        }
        throw new AdapterFailure(declaring.getName() + " of Kafka " + Release.version() + " has no field " + name);
    }

    /** The first of the classes named that this release has (a class that moved between
     *  releases, e.g. from the broker's kafka.log into kafka-storage in 3.5 to 3.7). */
    static Class<?> classOf(String... names) {
        for (String name : names) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e) {
                // moved: the next name
            }
        }
        throw new AdapterFailure("Kafka " + Release.version() + " has none of " + String.join(", ", names));
    }

    /** Whether this release has a class of that name, without loading it (a class Byte Buddy weaves into
     *  must not be loaded before the weaving is installed). */
    static boolean hasClass(String name) {
        return ClassLoader.getSystemResource(name.replace('.', '/') + ".class") != null;
    }

    /** A constant of a Java enum, or the Scala {@code object} of that name nested in {@code type}'s companion
     *  ({@code kafka.log.AppendOrigin.Coordinator} in 3.1 to 3.4, the enum {@code AppendOrigin.COORDINATOR} after). */
    static Object constant(Class<?> type, String javaName, String scalaName) {
        if (type.isEnum()) {
            for (Object c : type.getEnumConstants()) {
                if (((Enum<?>) c).name().equals(javaName)) {
                    return c;
                }
            }
        }
        Object scala = object(type.getName() + "$" + scalaName);
        if (scala == null) {
            scala = object(type.getPackageName() + "." + scalaName);
        }
        if (scala == null) {
            throw new AdapterFailure(type.getName() + " of Kafka " + Release.version() + " has no " + javaName);
        }
        return scala;
    }

    /** A value's member by name: a public method taking nothing (a Scala accessor, a Java getter),
     *  or else a public field (the storage classes of 3.5 on expose some as final fields). */
    static Object member(Object target, String name) {
        try {
            return invoke(target, target.getClass().getMethod(name), new Object[0]);
        } catch (NoSuchMethodException e) {
            try {
                return target.getClass().getField(name).get(target);
            } catch (ReflectiveOperationException f) {
                throw new AdapterFailure(target.getClass().getName() + " of Kafka " + Release.version() + " has no " + name, f);
            }
        }
    }

    /** The items of a Scala collection, a Java collection, or a Scala or Java optional (none or one). */
    @SuppressWarnings("unchecked")
    static List<Object> items(Object collection) {
        if (collection instanceof scala.collection.Iterable<?> scala) {
            return list((scala.collection.Iterable<Object>) scala);
        }
        if (collection instanceof Iterable<?> java) {
            List<Object> out = new ArrayList<>();
            java.forEach(out::add);
            return out;
        }
        if (collection instanceof scala.Option<?> o) {
            return o.isEmpty() ? List.of() : List.of(o.get());
        }
        if (collection instanceof java.util.Optional<?> o) {
            return o.isEmpty() ? List.of() : List.of(o.get());
        }
        if (collection instanceof java.util.OptionalLong o) {
            return o.isEmpty() ? List.of() : List.of(o.getAsLong());
        }
        throw new AdapterFailure("not a collection: " + collection.getClass().getName());
    }

    /** The items in order; by the collection's iterator, which Scala 2.12 and 2.13 both have
     *  (the converters between Java and Scala collections differ between them). */
    static <T> List<T> list(scala.collection.Iterable<T> items) {
        List<T> out = new ArrayList<>();
        scala.collection.Iterator<T> it = items.iterator();
        while (it.hasNext()) {
            out.add(it.next());
        }
        return out;
    }

    static <T> scala.collection.immutable.List<T> seq(List<T> items) {
        scala.collection.immutable.List<T> out = scala.collection.immutable.List$.MODULE$.empty();
        for (int i = items.size() - 1; i >= 0; i--) {
            out = out.$colon$colon(items.get(i));
        }
        return out;
    }

    /** Whether the release's class of {@code target} has a public method of that name. */
    static boolean has(Object target, String name) {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(name)) {
                return true;
            }
        }
        return false;
    }

    // --- helpers ------------------------------------------------------------------------------

    private static boolean accepts(Executable m, Object[] args) {
        Class<?>[] types = m.getParameterTypes();
        if (types.length < args.length) {
            return false;
        }
        for (int i = 0; i < args.length; i++) {
            if (args[i] == null || !box(types[i]).isInstance(args[i])) {
                return false;
            }
        }
        return true;
    }

    /** Whether every parameter after the first {@code given} has a Scala default. */
    private static boolean hasDefaults(Class<?> type, Method m, int given) {
        for (int i = given; i < m.getParameterCount(); i++) {
            try {
                type.getMethod(m.getName() + "$default$" + (i + 1));
            } catch (NoSuchMethodException e) {
                return false;
            }
        }
        return true;
    }

    private static Object[] withDefaults(Object target, Method m, Object[] args) {
        Object[] all = new Object[m.getParameterCount()];
        System.arraycopy(args, 0, all, 0, args.length);
        for (int i = args.length; i < all.length; i++) {
            try {
                all[i] = target.getClass().getMethod(m.getName() + "$default$" + (i + 1)).invoke(target);
            } catch (ReflectiveOperationException e) {
                throw new AdapterFailure(e);
            }
        }
        return all;
    }

    private static Object invoke(Object target, Method m, Object[] args) {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw sneaky(e.getCause()); // Kafka's own exception, checked or not, as a direct call throws it
        } catch (IllegalAccessException e) {
            throw new AdapterFailure(e);
        }
    }

    private static Class<?> box(Class<?> type) {
        if (!type.isPrimitive()) {
            return type;
        }
        if (type == long.class) {
            return Long.class;
        }
        if (type == int.class) {
            return Integer.class;
        }
        if (type == boolean.class) {
            return Boolean.class;
        }
        if (type == double.class) {
            return Double.class;
        }
        throw new IllegalArgumentException("no boxing for " + type);
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
        throw (E) e;
    }
}
