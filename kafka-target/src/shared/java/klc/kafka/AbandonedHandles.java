package klc.kafka;

import com.sun.management.UnixOperatingSystemMXBean;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;

/**
 * What the logs a halt abandons hold until the collector frees them: their segments' file
 * channels (descriptors) and their indexes' mappings. A JVM that serves targets for hours must let
 * them go (ulimit -n; vm.max_map_count, 65,530 by default), and the JDK's cleaners close and unmap
 * them, writing nothing, once the objects are collected. Collecting at every halt cost a full
 * collection each (about 40 ms with the serial collector, an eighth of the kafka target's time on
 * the corpora), while most halts abandon a few dozen handles; so a halt collects only when the
 * descriptors or the mapped buffers exceed by {@link #BOUND} the fewest seen at any halt (the
 * cleaners run after a collection, so the counts a collection leaves show at a later halt).
 */
final class AbandonedHandles {
    /** Descriptors, or mapped buffers, halts may leave behind before one collects them. */
    static final long BOUND = 256;

    private static long fewestDescriptors = Long.MAX_VALUE;
    private static long fewestMappings = Long.MAX_VALUE;

    private AbandonedHandles() { }

    static synchronized void collectIfMany() {
        long descriptors = descriptors();
        long mappings = mappings();
        fewestDescriptors = Math.min(fewestDescriptors, descriptors);
        fewestMappings = Math.min(fewestMappings, mappings);
        if (descriptors - fewestDescriptors >= BOUND || mappings - fewestMappings >= BOUND) {
            System.gc();
        }
    }

    private static long descriptors() {
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof UnixOperatingSystemMXBean unix ? unix.getOpenFileDescriptorCount() : 0;
    }

    private static long mappings() {
        long n = 0;
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().startsWith("mapped")) {
                n += pool.getCount();
            }
        }
        return n;
    }
}
