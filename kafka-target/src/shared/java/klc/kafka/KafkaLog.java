package klc.kafka;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/**
 * Kafka's own log lines: the last warnings and errors are kept for the answer to a refused or
 * failed request; with KLC_KAFKA_DEBUG set, every line from INFO up also goes to stderr, with the
 * stack trace of its exception. Nothing reaches stdout, which carries only the protocol.
 */
final class KafkaLog extends AbstractAppender {
    private static final boolean ECHO = System.getenv("KLC_KAFKA_DEBUG") != null;
    private final Deque<String> recent = new ArrayDeque<>();

    private KafkaLog() {
        super("klc", null, null, true, Property.EMPTY_ARRAY);
    }

    static KafkaLog install() {
        KafkaLog appender = new KafkaLog();
        appender.start();
        LoggerContext ctx = (LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        Configuration config = ctx.getConfiguration();
        config.addAppender(appender);
        LoggerConfig root = config.getRootLogger();
        for (String name : new ArrayList<>(root.getAppenders().keySet())) {
            root.removeAppender(name);
        }
        Level level = ECHO ? Level.INFO : Level.WARN;
        root.setLevel(level);
        root.addAppender(appender, level, null);
        ctx.updateLoggers();
        return appender;
    }

    @Override
    public synchronized void append(LogEvent event) {
        String line = event.getLevel() + " " + event.getLoggerName() + ": " + event.getMessage().getFormattedMessage();
        for (Throwable t = event.getThrown(); t != null; t = t.getCause() == t ? null : t.getCause()) {
            line += " | " + t.getClass().getSimpleName() + ": " + t.getMessage();
        }
        if (ECHO) {
            System.err.println(line);
            if (event.getThrown() != null) {
                event.getThrown().printStackTrace(System.err);
            }
        }
        if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
            recent.addLast(line);
            while (recent.size() > 20) {
                recent.removeFirst();
            }
        }
    }

    synchronized List<String> recent() {
        return new ArrayList<>(recent);
    }
}
