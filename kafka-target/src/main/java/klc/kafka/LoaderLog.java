package klc.kafka;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

import java.io.File;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What Kafka's own log lines say that no API returns: which segments a load recovered
 * (LogLoader calls {@code recoverSegment} after each of the three lines matched here, spec §5.3
 * and §5.6), and the last warnings and errors, kept for error reports.
 */
final class LoaderLog extends AbstractAppender {
    private static final String LOADER = "org.apache.kafka.storage.internals.log.LogLoader";
    private static final Pattern PARTITION = Pattern.compile("partition=([^,\\]]+), dir=([^\\]]+)\\]");
    private static final Pattern UNFLUSHED = Pattern.compile("Recovering unflushed segment (\\d+)");
    private static final Pattern NO_INDEX = Pattern.compile(
            "(?:Could not find offset index file corresponding to log file|Found a corrupted index file corresponding to log file) (\\S+?\\.log)");

    /** "dir/topic-partition" (the data dir's absolute path) → base offsets recovered, in order. */
    private final Map<String, List<Long>> recovered = new LinkedHashMap<>();
    private final Deque<String> recent = new ArrayDeque<>();

    private LoaderLog() {
        super("klc-loader", null, null, true, Property.EMPTY_ARRAY);
    }

    static LoaderLog install() {
        LoaderLog appender = new LoaderLog();
        appender.start();
        LoggerContext ctx = (LoggerContext) org.apache.logging.log4j.LogManager.getContext(false);
        Configuration config = ctx.getConfiguration();
        config.addAppender(appender);
        LoggerConfig root = config.getRootLogger();
        for (String name : new ArrayList<>(root.getAppenders().keySet())) {
            root.removeAppender(name);
        }
        root.setLevel(Level.WARN);
        root.addAppender(appender, Level.WARN, null);
        LoggerConfig loader = new LoggerConfig(LOADER, Level.INFO, false);
        loader.addAppender(appender, Level.INFO, null);
        config.addLogger(LOADER, loader);
        ctx.updateLoggers();
        return appender;
    }

    @Override
    public synchronized void append(LogEvent event) {
        String text = event.getMessage().getFormattedMessage();
        if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
            recent.addLast(event.getLevel() + " " + event.getLoggerName() + ": " + text);
            while (recent.size() > 20) {
                recent.removeFirst();
            }
        }
        if (!LOADER.equals(event.getLoggerName())) {
            return;
        }
        Matcher where = PARTITION.matcher(text);
        if (!where.find()) {
            return;
        }
        String key = where.group(2) + "/" + where.group(1);
        Matcher m = UNFLUSHED.matcher(text);
        if (m.find()) {
            recovered.computeIfAbsent(key, k -> new ArrayList<>()).add(Long.parseLong(m.group(1)));
            return;
        }
        m = NO_INDEX.matcher(text);
        if (m.find()) {
            String name = new File(m.group(1)).getName();
            long base = Long.parseLong(name.substring(0, name.length() - ".log".length()));
            recovered.computeIfAbsent(key, k -> new ArrayList<>()).add(base);
        }
    }

    synchronized List<Long> recovered(File dataDir, String partition) {
        return recovered.getOrDefault(dataDir.getAbsolutePath() + "/" + partition, List.of());
    }

    synchronized void reset() {
        recovered.clear();
    }

    synchronized List<String> recent() {
        return new ArrayList<>(recent);
    }
}
