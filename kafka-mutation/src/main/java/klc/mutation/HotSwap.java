package klc.mutation;

import java.io.IOException;
import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * Replaces one class's bytecode in the running JVM ({@link Instrumentation#redefineClasses}) when a
 * driver asks, so one adapter JVM judges mutant after mutant: a PIT mutant changes one method's
 * body and keeps the class's shape, which is what redefinition allows.
 *
 * <p>The driver writes {@code CONTROL_DIR/request} (renamed into place): the class's name on the
 * first line, the path of its new class file on the second.  This thread loads the class if it is
 * not yet (without initialising it), redefines it, and answers in {@code CONTROL_DIR/answer}:
 * {@code ok}, or {@code error: why} (a class that fails to verify, a shape change).  The driver
 * asks only between scenarios, when no Kafka code runs.
 */
final class HotSwap {
    private HotSwap() {}

    static void start(String dir, Instrumentation inst) {
        if (!inst.isRedefineClassesSupported()) {
            throw new IllegalStateException("kafka-mutation agent: this JVM cannot redefine classes");
        }
        Path control = Path.of(dir);
        Thread t = new Thread(() -> serve(control, inst), "klc-hot-swap");
        t.setDaemon(true);
        t.start();
    }

    private static void serve(Path control, Instrumentation inst) {
        Path request = control.resolve("request");
        while (true) {
            try {
                if (Files.exists(request)) {
                    List<String> lines = Files.readAllLines(request, StandardCharsets.UTF_8);
                    Files.delete(request);
                    answer(control, swap(lines, inst));
                } else {
                    Thread.sleep(5);
                }
            } catch (InterruptedException e) {
                return;
            } catch (IOException e) {
                answer(control, "error: " + e);
            }
        }
    }

    private static String swap(List<String> lines, Instrumentation inst) {
        if (lines.size() < 2) {
            return "error: a request is two lines, a class name and a class file";
        }
        try {
            Class<?> c = Class.forName(lines.get(0), false, ClassLoader.getSystemClassLoader());
            inst.redefineClasses(new ClassDefinition(c, Files.readAllBytes(Path.of(lines.get(1)))));
            return "ok";
        } catch (Throwable e) { // a VerifyError, an UnsupportedOperationException (shape): the driver's harness error
            return "error: " + e.toString().replace('\n', ' ');
        }
    }

    private static void answer(Path control, String text) {
        try {
            Path tmp = control.resolve("answer.tmp");
            Files.writeString(tmp, text, StandardCharsets.UTF_8);
            Files.move(tmp, control.resolve("answer"), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            System.err.println("kafka-mutation agent: cannot answer in " + control + ": " + e);
        }
    }
}
