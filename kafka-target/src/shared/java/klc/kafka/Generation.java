package klc.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.function.Function;

/**
 * One broker's log layer: Kafka's own LogManager over the scenario's data dirs, driven one step at
 * a time, the same for every generation of Kafka's log classes. Each public-facing method is one op
 * of the JSON-lines protocol (docs/kafka-target.md), which {@link Steps} dispatches; what it asks of
 * Kafka is the generation's {@code Broker}, one abstract method per call whose API differs between
 * generations: Kafka 4.1 on (kafka-target/src/main), 3.1 to 4.0's Scala {@code UnifiedLog} and 1.1
 * to 3.0's Scala {@code Log} (kafka-target-scala).
 *
 * @param <M> the generation's LogManager
 * @param <L> the generation's log class, one partition's log
 */
abstract class Generation<M, L> implements LoadedPartitions.Manager {
    protected static final ObjectMapper JSON = new ObjectMapper();
    /** The broker's own config among the scenario's: the rest are its topics' log config. */
    private static final String RECOVERY_THREADS = "num.recovery.threads.per.data.dir";
    /** The broker's KIP-890 switch (ProducerStateManagerConfig's): a transactional batch is taken
     *  only with the guard of a verification its producer started ({@code verify_transaction}). */
    private static final String VERIFICATION = "transaction.partition.verification.enable";
    private static final String CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown";

    protected final File root;
    protected final List<File> dataDirs = new ArrayList<>();
    /** The scenario header's topic config as this generation's LogConfig takes it. */
    protected final Properties topicConfig;
    protected final int recoveryThreads;
    /** {@code transaction.partition.verification.enable}: the scenario's, false unless it says. */
    protected final boolean transactionVerification;
    protected final StepClock clock;
    protected final StepScheduler scheduler;
    /** The running broker's LogManager; null while the broker is down. */
    protected M manager;
    /** The header's topic config as the scenario wrote it: what alter_config overlays. */
    private final Map<String, JsonNode> header = new LinkedHashMap<>();
    private final Function<Map<String, JsonNode>, Properties> kafkaConfig;
    /** The distinct guards verify_transaction handed out since the broker started: a process's
     *  memory, emptied by open, shutdown and halt. */
    private final List<Object> guards = new ArrayList<>();

    /** {@code kafkaConfig}: a scenario's topic config, in order, as the generation's LogConfig takes
     *  it (renamed where a release names a setting otherwise); throws {@link Unsupported} for what the
     *  release cannot express. The config is read before the clock exists: a refused one changes nothing. */
    protected Generation(JsonNode request, Function<Map<String, JsonNode>, Properties> kafkaConfig) {
        this.root = new File(request.path("root").asText());
        for (JsonNode d : request.path("data_dirs")) {
            dataDirs.add(new File(root, d.asText()).getAbsoluteFile());
        }
        int threads = 1;
        boolean verification = false;
        Iterator<Map.Entry<String, JsonNode>> fields = request.path("config").fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> e = fields.next();
            if (e.getKey().equals(RECOVERY_THREADS)) {
                threads = e.getValue().asInt();
            } else if (e.getKey().equals(VERIFICATION)) {
                if (!e.getValue().isBoolean()) {
                    throw new Steps.BadRequest(VERIFICATION + " must be a boolean, got " + e.getValue());
                }
                verification = e.getValue().asBoolean();
            } else {
                header.put(e.getKey(), e.getValue());
            }
        }
        if (verification && !verifiesTransactions()) {
            throw new Unsupported(VERIFICATION + "=true: transaction verification (KIP-890) is driven on Kafka 4.1"
                    + " and later only, not by this adapter of Kafka " + Release.version());
        }
        this.recoveryThreads = threads;
        this.transactionVerification = verification;
        this.kafkaConfig = kafkaConfig;
        this.topicConfig = kafkaConfig.apply(header);
        this.clock = new StepClock(request.path("clock_ms").asLong());
        SystemTimeSegments.use(clock);
        SegmentJitter.configure(request.path("jitter_seed").asLong(0), header);
        DeleteDirNames.configure(request.path("jitter_seed").asLong(0), dataDirs);
        this.scheduler = new StepScheduler(clock);
    }

    // --- the broker's life ------------------------------------------------------------------

    /** Kafka's load (LogManager's startup), the log-dir failure handler, then a started broker's
     *  first steps; answers the {@code loaded} list ({@link LoadedPartitions}). */
    ObjectNode open() throws Exception {
        if (!listsMovedDirs() || !listsStrayDirs() || !loadsDeleteDirsAsModelled()) {
            refuseMovedDirs();
        }
        refuseUnassigned();
        guards.clear(); // a new process: the guards handed out before are gone with the old one
        Recoveries.reset();
        LogsBuilt.reset();
        SegmentJitter.restarted();
        Startup.Step load = startManager();
        String failed = Startup.run(load, this::takeOfflineDirs, () -> {
            for (L log : logsWithFutures()) {
                highWatermarkAtTheEnd(log);
            }
            scheduler.runDue();
        });
        ObjectNode out = LoadedPartitions.answer(dataDirs, failed, this);
        if (failed != null) {
            halt();
        }
        return out;
    }

    /** What ReplicaManager's log-dir failure handler does with the dirs the load queued offline:
     *  each stops serving its logs ({@code LogManager.handleLogDirFailure}), unless losing it halts
     *  the broker. Returns why the broker halted, or null. */
    private String takeOfflineDirs() {
        for (File dir : dataDirs) {
            String path = dir.getAbsolutePath();
            if (!queuedOffline(path)) {
                continue;
            }
            String halts = haltsOn(dir);
            if (halts != null) {
                return halts;
            }
            handleLogDirFailure(path);
        }
        return null;
    }

    /** LogManager.shutdown; what it throws is swallowed, as the broker's shutdown swallows it
     *  (CoreUtils.swallow): after a log dir failure the dir's lock is destroyed twice, and the
     *  second release throws once the checkpoints and markers of the live dirs are written. */
    ObjectNode shutdown() throws IOException {
        try {
            stopManager();
        } catch (Exception e) {
            AdapterFailure.rethrowIfOurs(e);
            org.slf4j.LoggerFactory.getLogger(getClass()).warn("LogManager.shutdown threw; swallowed as the broker's shutdown does", e);
        }
        scheduler.forget();
        ObjectNode out = JSON.createObjectNode();
        ObjectNode dirs = out.putObject("shutdown");
        for (File dir : dataDirs) {
            dirs.put(dir.getName(), new File(dir, CLEAN_SHUTDOWN_FILE).exists());
        }
        manager = null;
        guards.clear();
        ProcessMetrics.forget(); // the per-dir gauges would keep the shut-down LogManager reachable
        return out;
    }

    /** The process dies: nothing is flushed, trimmed or closed; only the dir locks are let go so
     *  the next LogManager in this JVM can take them (an OS releases them with the process). */
    ObjectNode halt() throws IOException {
        if (manager != null) {
            releaseDirLocks();
        }
        manager = null;
        guards.clear();
        scheduler.forget();
        ProcessMetrics.forget(); // its gauges would keep every abandoned log reachable
        AbandonedHandles.collectIfMany(); // the abandoned logs' channels and mappings go with their objects
        return JSON.createObjectNode();
    }

    void clockAt(long nowMs) {
        clock.set(nowMs);
    }

    /** Time has passed (the request's now_ms): the tasks now due run, as Kafka's scheduler runs them. */
    ObjectNode tick() {
        scheduler.tick();
        return JSON.createObjectNode();
    }

    void afterStep() throws IOException {
        if (manager == null) {
            return;
        }
        scheduler.runDue();
        for (L log : logsWithFutures()) {
            highWatermarkAtTheEnd(log);
        }
    }

    // --- steps on the broker ------------------------------------------------------------------

    /** The partition's log in the step's data dir (maybeUpdatePreferredLogDir, getOrCreateLog). */
    ObjectNode create(String topic, int partition, int dir) throws IOException {
        createLog(new TopicPartition(topic, partition), dataDirs.get(dir % dataDirs.size()).getAbsolutePath());
        return JSON.createObjectNode();
    }

    /** LogManager.asyncDelete: the partition's directory renamed {@code -delete} and queued for
     *  deletion; its new name, or null when there is no such log. */
    ObjectNode deletePartition(String topic, int partition) throws Exception {
        String renamed = asyncDelete(new TopicPartition(topic, partition));
        ObjectNode out = JSON.createObjectNode();
        if (renamed == null) {
            out.putNull("renamed");
        } else {
            out.put("renamed", renamed);
        }
        return out;
    }

    /** LogManager.replaceCurrentWithFutureLog (KIP-113): the future log renamed to the partition's
     *  name and served, the current one renamed {@code -delete} (the scenario's name), closed and
     *  queued for deletion; answers that name. */
    ObjectNode replaceCurrentWithFuture(String topic, int partition) throws Exception {
        String renamed = replaceCurrentWithFutureLog(new TopicPartition(topic, partition));
        return JSON.createObjectNode().put("renamed", renamed);
    }

    /** LogManager.replaceCurrentWithFutureLog(tp): the current log's new {@code -delete} name. */
    protected String replaceCurrentWithFutureLog(TopicPartition tp) throws Exception {
        throw new Unsupported("replace_current_with_future: LogManager.replaceCurrentWithFutureLog is driven on Kafka 3.1 and later only");
    }

    /** LogManager.asyncDelete(tp): the renamed directory's name, or null. */
    protected String asyncDelete(TopicPartition tp) throws Exception {
        throw new Unsupported("delete_partition: LogManager.asyncDelete is driven on Kafka 3.1 and later only");
    }

    /** Whether the load queued the log of this {@code -delete} directory for deletion. */
    @Override
    public boolean queuedForDeletion(File dir) {
        return false;
    }

    /** Whether the future log of {@code tp} is the one loaded from {@code dir}. */
    @Override
    public boolean futureLoadedFrom(TopicPartition tp, File dir) {
        return false;
    }

    /** Whether this generation answers {@code -future} and {@code -stray} directories in the
     *  {@code loaded} list (Kafka 2.8 on: the Log generation from 2.8, the Scala UnifiedLog
     *  generation, the Scala LogManager of 4.1–4.3 and the Java one of 4.4). */
    protected boolean listsMovedDirs() {
        return false;
    }

    /** Whether {@code -stray} directories are Kafka's to load here (KRaft's stray replicas, 3.6 on);
     *  a release that lists {@code -future} ones but has no such suffix refuses a load meeting one. */
    protected boolean listsStrayDirs() {
        return listsMovedDirs();
    }

    /** The partitions the next startup's metadata image does not assign here (the {@code unassign}
     *  step: the open request's {@code unassigned}), whose logs it sets aside -stray ({@link SetAside}). */
    void unassigned(Set<TopicPartition> partitions) {
        SetAside.configure(partitions);
    }

    /** Whether this adapter passes LogManager.startup the predicate {@link SetAside#isStray}. */
    protected boolean setsAsideStray() {
        return false;
    }

    private void refuseUnassigned() {
        Set<TopicPartition> unassigned = SetAside.unassigned();
        if (unassigned.isEmpty()) {
            return;
        }
        if (!setsAsideStray()) {
            throw new Unsupported("a startup whose metadata image no longer assigns "
                    + unassigned.stream().map(TopicPartition::toString).sorted().toList() + ": this adapter of Kafka "
                    + Release.version() + " passes LogManager no isStray predicate (driven on 4.1 and later)");
        }
        String why = SetAside.unjudged(dataDirs);
        if (why != null) {
            throw new Unsupported(why);
        }
    }

    /** A load that would meet a {@code -future} or {@code -stray} directory this adapter does not
     *  list: unsupported, never judged on a list that leaves them out. */
    private void refuseMovedDirs() {
        for (File dir : dataDirs) {
            File[] children = dir.listFiles(File::isDirectory);
            for (File child : children == null ? new File[0] : children) {
                String kind = LoadedPartitions.kindOf(child.getName());
                if (kind.equals("delete") && listsDeleteDirs() && !loadsDeleteDirsAsModelled()) {
                    throw new Unsupported("a -delete directory (" + dir.getName() + "/" + child.getName() + "): before 3.9"
                            + " Kafka's startup deletes it after a fixed delay (no log.initial.task.delay.ms), not the model's none");
                }
                if ((kind.equals("delete") && !listsDeleteDirs()) || (kind.equals("future") && !listsMovedDirs())
                        || (kind.equals("stray") && !listsStrayDirs())) {
                    throw new Unsupported("a -" + kind + " directory (" + dir.getName() + "/" + child.getName()
                            + "): its load is followed on Kafka " + (kind.equals("stray") ? "3.6" : "2.8") + " and later only, not by this adapter of Kafka " + Release.version());
                }
            }
        }
    }

    ObjectNode retention() throws IOException {
        int deleted = 0;
        for (L log : sortedLogs()) { // LogManager.cleanupLogs: a current log, then its future log
            deleted += deleteOldSegments(log);
            Optional<L> future = futureLog(log);
            if (future.isPresent()) {
                deleted += deleteOldSegments(future.get());
            }
        }
        return JSON.createObjectNode().put("deleted", deleted);
    }

    /**
     * Every log's {@code PeriodicProducerExpirationCheck} run once, as the broker's scheduler runs
     * it every {@code producer.id.expiration.check.interval.ms} (a periodic task is a step of its own
     * here: StepTasks): a current log, then its future log. The number of producers forgotten.
     */
    ObjectNode expireProducers() {
        int expired = 0;
        for (L log : sortedLogs()) {
            expired += expireProducers(log);
            Optional<L> future = futureLog(log);
            if (future.isPresent()) {
                expired += expireProducers(future.get());
            }
        }
        return JSON.createObjectNode().put("expired", expired);
    }

    /** The log's producer expiration check at the clock's time; the number of producers it forgot. */
    protected int expireProducers(L log) {
        throw new Unsupported("expire_producers: the producer expiration check is driven on Kafka 3.1 and later only"
                + " (the producer state of Kafka " + Release.version() + "'s Log is not compared)");
    }

    ObjectNode checkpoint() {
        checkpointLogRecoveryAndStartOffsets();
        return JSON.createObjectNode();
    }

    /**
     * A topic's config altered as a broker applies an AlterConfigs (LogManager.updateTopicConfig):
     * the header's config overlaid with {@code changes}, read by the same rules as the header's,
     * becomes the config of every log the topic has ({@code updateConfig}). A partition created
     * later gets the header's: the config repository here holds no topic override.
     */
    ObjectNode alterConfig(String topic, JsonNode changes) {
        Map<String, JsonNode> merged = new LinkedHashMap<>(header);
        Set<String> updated = new LinkedHashSet<>();
        Iterator<Map.Entry<String, JsonNode>> fields = changes.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> e = fields.next();
            if (e.getKey().equals(RECOVERY_THREADS) || e.getKey().equals(VERIFICATION)) {
                throw new Steps.BadRequest(e.getKey() + " is the broker's config, not a topic's");
            }
            merged.put(e.getKey(), e.getValue());
            updated.add(e.getKey());
        }
        Object config = logConfig(kafkaConfig.apply(merged)); // Kafka refuses a bad value here
        for (L log : sortedLogs()) {
            if (topicPartition(log).topic().equals(topic)) {
                updateConfig(log, config, updated);
                SegmentJitter.altered(topicPartition(log).toString(), merged);
                Optional<L> future = futureLog(log); // LogManager.logsByTopic: future logs too
                if (future.isPresent()) {
                    updateConfig(future.get(), config, updated);
                }
            }
        }
        return JSON.createObjectNode();
    }

    L log(String topic, int partition) {
        return findLog(new TopicPartition(topic, partition))
                .orElseThrow(() -> new UnknownTopicOrPartitionException(topic + "-" + partition + " has no log"));
    }

    // --- steps on one partition ---------------------------------------------------------------

    ObjectNode truncate(L log, long offset) {
        boolean truncated = offset < logEndOffset(log);
        if (offset < 0) {
            truncateLog(log, offset); // Kafka's own refusal
        }
        truncateTo(topicPartition(log), offset);
        return JSON.createObjectNode().put("truncated", truncated);
    }

    ObjectNode truncateFully(L log, long offset) {
        truncateFullyAndStartAt(topicPartition(log), offset);
        return JSON.createObjectNode();
    }

    /** Partition.deleteRecordsOnLeader: −1 is the high watermark, another negative offset is refused. */
    ObjectNode deleteRecords(L log, long offset) {
        long converted = offset == -1 ? highWatermark(log) : offset;
        if (converted < 0) {
            throw new OffsetOutOfRangeException("The offset " + converted + " for partition " + topicPartition(log) + " is not valid");
        }
        incrementLogStartOffset(log, converted);
        return JSON.createObjectNode().put("log_start_offset", logStartOffset(log));
    }

    /** The harness's precondition (the step's offset lies within the log), then Kafka's flush of
     *  the offsets below it. */
    ObjectNode flush(L log, Long offset) {
        long to = offset == null ? logEndOffset(log) : offset;
        if (to < 0 || to > logEndOffset(log)) {
            throw new OffsetOutOfRangeException("cannot flush to " + to + ": the log ends at " + logEndOffset(log));
        }
        flushBelow(log, to);
        return JSON.createObjectNode();
    }

    abstract ObjectNode append(L log, byte[] data, boolean leader, int leaderEpoch) throws IOException;

    /** An append whose marker the coordinator writes at {@code transactionVersion}: versions 0 and 1
     *  check a marker's epoch alike (the classic protocol), version 2 (KIP-890) otherwise, which a
     *  generation that takes no version cannot express. */
    ObjectNode append(L log, byte[] data, boolean leader, int leaderEpoch, short transactionVersion) throws IOException {
        if (transactionVersion >= 2) {
            throw new Unsupported("a marker at transaction version " + transactionVersion + ": Kafka "
                    + Release.version() + " takes no transaction version (KIP-890's markers, 4.2 on)");
        }
        return append(log, data, leader, leaderEpoch);
    }

    /**
     * A client's append carrying the {@code n}th guard {@code verify_transaction} handed out since the
     * broker started (KIP-890): 0 is none (Kafka's {@code VerificationGuard.SENTINEL}), a number past
     * the list a guard no producer's verification holds (one from before a restart). Only a leader's
     * client append takes a guard; a follower's or a marker's append is the plain one.
     */
    ObjectNode append(L log, byte[] data, boolean leader, int leaderEpoch, short transactionVersion, int guard)
            throws IOException {
        if (guard < 0) {
            throw new Steps.BadRequest("verification_guard must be 0 or more, got " + guard);
        }
        if (guard == 0) {
            return append(log, data, leader, leaderEpoch, transactionVersion);
        }
        return appendVerified(log, data, leader, leaderEpoch, transactionVersion, guard <= guards.size() ? guards.get(guard - 1) : null);
    }

    /** The append with Kafka's guard {@code guard}; null: a guard of none of the handed-out ones. */
    protected ObjectNode appendVerified(L log, byte[] data, boolean leader, int leaderEpoch, short transactionVersion, Object guard)
            throws IOException {
        throw new Unsupported("an append with a verification guard: transaction verification (KIP-890) is driven on Kafka 4.1"
                + " and later only, not by this adapter of Kafka " + Release.version());
    }

    /**
     * UnifiedLog.maybeStartTransactionVerification (KIP-890): the guard Kafka answers, numbered on the
     * wire by its place among the distinct guards handed out since the broker started (from 1; 0 is
     * the sentinel, which Kafka answers while the producer's transaction is ongoing).
     */
    ObjectNode verifyTransaction(L log, long producerId, int sequence, short epoch, boolean supportsEpochBump) {
        Object guard = startTransactionVerification(log, producerId, sequence, epoch, supportsEpochBump);
        int n = 0;
        if (guard != null) {
            n = guards.indexOf(guard) + 1; // equals: the guard's value
            if (n == 0) {
                guards.add(guard);
                n = guards.size();
            }
        }
        return JSON.createObjectNode().put("guard", n);
    }

    /** Kafka's guard for the producer's verification, or null for its sentinel. */
    protected Object startTransactionVerification(L log, long producerId, int sequence, short epoch, boolean supportsEpochBump) {
        throw new Unsupported("verify_transaction: transaction verification (KIP-890) is driven on Kafka 4.1"
                + " and later only, not by this adapter of Kafka " + Release.version());
    }

    /** Whether this generation passes {@code transaction.partition.verification.enable} to Kafka
     *  (asked before the subclass is built: a constant). */
    protected boolean verifiesTransactions() {
        return false;
    }

    abstract ObjectNode roll(L log) throws IOException;

    /** One log-cleaner round on the partition (the {@code clean} step, spec §5.9): Kafka's own
     *  cleaner where the generation drives it (4.1 on: {@code CleanerRound}; 1.1–4.0:
     *  {@code ScalaCleanerRound}); the {@code kafka.log.Cleaner} of 0.11 and 1.0 is not driven, so
     *  a round there is not judged. */
    ObjectNode clean(L log) throws Exception {
        throw new Unsupported("a log-cleaner round: this adapter of Kafka " + Release.version()
                + " does not drive its Scala kafka.log.Cleaner (Kafka's own cleaner is driven from 1.1 on)");
    }

    /** A fetch bounded by {@code maxOffset} the way a follower's high watermark bounds it (§4.5). */
    abstract ObjectNode read(L log, long offset, int maxBytes, Long maxOffset, boolean minOne) throws IOException;

    /** A consumer's fetch at read_committed: up to the last stable offset, with the aborted
     *  transactions the fetched range overlaps (null: the fetch answered none at all). */
    abstract ObjectNode readCommitted(L log, long offset, int maxBytes, boolean minOne) throws IOException;

    abstract ObjectNode offsetForTimestamp(L log, long timestamp) throws IOException;

    // --- observations -------------------------------------------------------------------------

    /** The data dirs queued on the log-dir failure channel (an I/O error took them offline), by
     *  name: what ReplicaManager's failure handler would act on next. */
    ObjectNode offlineDirs() {
        ObjectNode out = JSON.createObjectNode();
        var names = out.putArray("offline");
        for (File dir : dataDirs) {
            if (queuedOffline(dir.getAbsolutePath())) {
                names.add(dir.getName());
            }
        }
        return out;
    }

    ObjectNode state() throws IOException {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode parts = out.putObject("partitions");
        for (L log : sortedLogs()) {
            ObjectNode p = parts.putObject(keyOf(log));
            p.put("log_start_offset", logStartOffset(log));
            p.put("log_end_offset", logEndOffset(log));
            p.put("recovery_point", recoveryPoint(log));
            describe(log, p);
        }
        return out;
    }

    /** The entries of every segment whose two indexes are materialised (reading an index that is
     *  not would materialise it, which changes what Kafka does next: KAFKA-7283). */
    ObjectNode indexEntries() throws Exception {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode segs = out.putObject("segments");
        for (L log : sortedLogs()) {
            List<?> segments = segments(log);
            for (int i = 0; i < segments.size(); i++) {
                Object s = segments.get(i);
                if (materialised(s, "lazyOffsetIndex") && materialised(s, "lazyTimeIndex")) {
                    ObjectNode e = segs.putObject(keyOf(log) + "/" + baseOffset(s));
                    indexEntries(s, e.putArray("offsets"), e.putArray("times"));
                    e.put("active", i == segments.size() - 1);
                    e.put("end", i + 1 < segments.size() ? baseOffset(segments.get(i + 1)) : logEndOffset(log));
                }
            }
        }
        return out;
    }

    /** The directory the data dirs lie in. */
    File root() {
        return root;
    }

    boolean running() {
        return manager != null;
    }

    /** A partition dir as Kafka's loader names it; null for anything else it finds there. */
    @Override
    public TopicPartition partitionOf(File dir) {
        if (ignored(dir.getName())) {
            return null;
        }
        try {
            return parseTopicPartitionName(dir);
        } catch (Exception e) { // Kafka's refusal of the name; up to 4.3 the Java one declares IOException
            AdapterFailure.rethrowIfOurs(e);
            return null;
        }
    }

    /** A name no partition parses from, of a directory the load does not pass over (the remote
     *  index cache, and the names {@link #ignored} leaves to each generation). */
    @Override
    public boolean refusesName(File dir) {
        String name = dir.getName();
        return !ignored(name) && !name.equals("remote-log-index-cache") && partitionOf(dir) == null;
    }

    // --- what differs by Kafka's API -----------------------------------------------------------

    /** A new LogManager over the data dirs (this.manager), answering its load: startup (the
     *  constructor too where it loads, up to 2.7). What it throws before the load is a refusal. */
    protected abstract Startup.Step startManager() throws Exception;

    /** What the broker read from its data dirs' clean-shutdown markers as it started, before the
     *  load deleted them (LogManager.readBrokerEpochFromCleanShutdownFiles, KIP-966, 3.7+): the
     *  broker epoch, empty when a marker is missing or unreadable or the dirs disagree. */
    protected OptionalLong previousBrokerEpoch() {
        throw new Unsupported("previous_broker_epoch: Kafka " + Release.version() + " writes no broker epoch into its clean-shutdown marker (3.7+)");
    }

    /** The {@code previous_broker_epoch} step's answer. */
    ObjectNode previousBrokerEpochAnswer() {
        OptionalLong epoch = previousBrokerEpoch();
        ObjectNode out = JSON.createObjectNode();
        if (epoch.isPresent()) {
            out.put("broker_epoch", epoch.getAsLong());
        } else {
            out.putNull("broker_epoch");
        }
        return out;
    }

    /** Whether the load queued the data dir on the log-dir failure channel. */
    protected abstract boolean queuedOffline(String dataDir);

    /** Why losing the data dir halts the broker, or null: it goes offline alone. */
    protected abstract String haltsOn(File dataDir);

    protected abstract void handleLogDirFailure(String dataDir);

    protected abstract void stopManager() throws Exception;

    /** Every dir lock the LogManager holds let go as a dead process's are, the files kept ({@link DirLocks}). */
    protected abstract void releaseDirLocks() throws IOException;

    protected abstract List<L> logs();

    /** The served logs and every future log: one replica, whose high watermark is each log's end
     *  after every step — a future log's too, as the alter-log-dirs thread keeps it at the current
     *  log's, clamped to its own end (Partition.createLog, ReplicaAlterLogDirsThread). */
    protected List<L> logsWithFutures() {
        List<L> out = new java.util.ArrayList<>(logs());
        for (L log : logs()) {
            futureLog(log).ifPresent(out::add);
        }
        return out;
    }

    /** The future log (KIP-113) of a current log's partition, where this generation follows them. */
    protected Optional<L> futureLog(L current) {
        return Optional.empty();
    }

    protected abstract Optional<L> findLog(TopicPartition tp);

    protected abstract void createLog(TopicPartition tp, String dataDir) throws IOException;

    protected abstract void truncateTo(TopicPartition tp, long offset);

    protected abstract void truncateFullyAndStartAt(TopicPartition tp, long offset);

    protected abstract void checkpointLogRecoveryAndStartOffsets();

    /** The generation's LogConfig of a topic config (Kafka refuses a bad value here). */
    protected abstract Object logConfig(Properties config);

    /** The log takes {@code config} (a {@link #logConfig}); {@code updated}: the keys the step set. */
    protected abstract void updateConfig(L log, Object config, Set<String> updated);

    /** One replica: the high watermark is the log end offset (scenario determinism contract). */
    protected abstract void highWatermarkAtTheEnd(L log) throws IOException;

    protected abstract long highWatermark(L log);

    protected abstract TopicPartition topicPartition(L log);

    protected abstract long logStartOffset(L log);

    protected abstract long logEndOffset(L log);

    protected abstract long recoveryPoint(L log);

    protected abstract void truncateLog(L log, long offset);

    protected abstract void incrementLogStartOffset(L log, long offset);

    protected abstract void flushBelow(L log, long offset);

    protected abstract int deleteOldSegments(L log) throws IOException;

    /** The log's data dir and partition dir, as the answers name a partition. */
    protected abstract String keyOf(L log);

    /** The state's per-partition fields beyond the offsets: segments, epochs, producers. */
    protected abstract void describe(L log, ObjectNode partition) throws IOException;

    protected abstract List<?> segments(L log);

    protected abstract long baseOffset(Object segment);

    /** Whether a segment's index object exists yet (lazy since 2.3, KAFKA-7283). */
    protected abstract boolean materialised(Object segment, String lazyIndex) throws ReflectiveOperationException;

    /** A segment's offset-index and time-index entries, as [offset, position] and [timestamp, offset]. */
    protected abstract void indexEntries(Object segment, ArrayNode offsets, ArrayNode times) throws IOException;

    protected abstract TopicPartition parseTopicPartitionName(File dir) throws Exception;

    /** Directories the loader passes over by name, and KRaft's metadata log, which LogManager
     *  leaves to the raft layer; Kafka up to 3.0 knows only the first two. */
    protected boolean ignored(String name) {
        return (name.endsWith("-delete") && !listsDeleteDirs())
                || (name.endsWith("-future") && !listsMovedDirs())
                || (name.endsWith("-stray") && !listsStrayDirs())
                || name.startsWith("__cluster_metadata-");
    }

    /** Whether a load meeting a {@code -delete} directory runs as the model states it: the startup's
     *  {@code kafka-delete-logs} task starts at once (the adapter's initial task delay is 0). */
    protected boolean loadsDeleteDirsAsModelled() {
        return true;
    }

    /** Whether this generation answers {@code -delete} directories in the {@code loaded} list. */
    protected boolean listsDeleteDirs() {
        return false;
    }

    protected List<L> sortedLogs() {
        List<L> logs = logs();
        logs.sort(Comparator.comparing((L l) -> topicPartition(l).topic()).thenComparingInt(l -> topicPartition(l).partition()));
        return logs;
    }
}
