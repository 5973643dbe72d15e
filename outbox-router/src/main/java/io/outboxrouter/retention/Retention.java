package io.outboxrouter.retention;

import io.outboxrouter.cdc.OutboxSql;
import io.outboxrouter.config.Durations;
import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Outbox retention ({@code outbox.retention}): deletes outbox rows older than the retention, and only rows the router has
 * already published, off the publishing path, in small batches with a pause after each.
 *
 * <p>"Already published" cannot be read from a time column (a long transaction commits rows dated long before), so each
 * cycle works from the source's log instead: in one snapshot it reads a log position that every transaction visible in the
 * snapshot committed before ({@link OutboxSql#beginSnapshot}) and the ids of the old rows visible there; it deletes them only
 * once the router has published and stored everything before that position ({@link OutboxSql#publishedPast}), and only
 * rows dated through the time the self-audit proved every row published ({@code outbox-router.audited}). A row the router
 * has not published is never deleted, however old it is, whatever the router is doing (stopped, behind, failing).
 * Rows are deleted by id, so a row committed after the snapshot is never touched by that cycle.
 */
public final class Retention implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Retention.class);
    /** How long a cycle waits for the router to publish past its mark before trying again at the next cycle. */
    private static final Duration MARK_WAIT = Duration.ofSeconds(30);
    private static final Duration MIN_PAUSE = Duration.ofMillis(20);
    /** Candidate ids read per snapshot, in batches. */
    private static final int BATCHES_PER_SNAPSHOT = 10;

    /** Told what each cycle did. */
    public interface Listener {
        void deleted(String table, int rows);

        /** After each cycle: the age of the oldest row kept per table (null for an empty table). */
        void oldest(String table, Duration age);
    }

    /** What one cycle did: rows deleted per table; {@code waiting} when old rows were left because the router was not past them yet. */
    public record Cycle(Map<String, Integer> deleted, String waiting) {
        public int total() {
            return deleted.values().stream().mapToInt(Integer::intValue).sum();
        }
    }

    /**
     * What retention has done, for the status page.
     *
     * @param oldestKept the age of the oldest row per table after the last cycle (absent: empty table)
     * @param waitingFor the log mark the last cycle waited for in vain (old rows kept until the router passes it), or null
     * @param lastRun    when the last cycle ended, or null before the first
     * @param lastError  why the last cycle failed, or null when it did not
     */
    public record Status(Duration after, long deletedTotal, Map<String, Duration> oldestKept, String waitingFor, java.time.Instant lastRun,
                         String lastError) {
    }

    private final RouterConfig config;
    private final OutboxSql source;
    private final java.util.concurrent.atomic.AtomicLong deletedTotal = new java.util.concurrent.atomic.AtomicLong();
    private final Map<String, Duration> oldestKept = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile String waitingFor;
    private volatile java.time.Instant lastRun;
    private volatile String lastError;
    /** The end of the hold last logged, so that it is logged once. */
    private volatile String heldUntil;
    private final OutboxConfig.Retention settings;
    private final Listener listener;
    private final Duration interval;
    private final ScheduledExecutorService timer;
    private volatile OffsetTable stored;
    private volatile boolean closed;

    public Retention(RouterConfig config, OutboxSql source, Listener listener) {
        this.config = config;
        this.source = source;
        this.settings = config.outbox().retention();
        this.listener = listener;
        this.interval = interval(settings.after());
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            var t = new Thread(r, "retention-" + config.name());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * How long a cycle waits for the router to pass a snapshot's mark: the mark is the log's end, which the router passes
     * with the next event or heartbeat; the interval, between 10 s and 30 s.
     */
    private Duration markWait() {
        return Duration.ofMillis(Math.min(MARK_WAIT.toMillis(), Math.max(10_000, interval.toMillis())));
    }

    /** A tenth of the retention, between 1 s and 5 min: rows are deleted at most that long after they are due. */
    static Duration interval(Duration retention) {
        long ms = Math.max(1_000, Math.min(retention.toMillis() / 10, Duration.ofMinutes(5).toMillis()));
        return Duration.ofMillis(ms);
    }

    /** Runs a cycle every {@link #interval} while {@code active} (this process streams the source); never on a standby. */
    public void start(BooleanSupplier active) {
        LOG.info("Router {}: outbox retention {}: rows older than that by {}, once published, are deleted {} at a time (checked every {})",
                config.name(), Durations.format(settings.after()), settings.timeColumn(), settings.batchSize(),
                Durations.format(interval));
        timer.scheduleWithFixedDelay(() -> {
            if (closed || !active.getAsBoolean()) {
                return;
            }
            try {
                runOnce(markWait(), () -> !closed && active.getAsBoolean());
                lastError = null;
            } catch (SQLException | RuntimeException e) {
                String message = "outbox retention of router " + config.name() + " failed, tried again in "
                        + Durations.format(interval) + ": " + e.getMessage();
                LOG.warn(message);
                lastError = e.getMessage();
            } finally {
                lastRun = java.time.Instant.now();
            }
        }, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** One cycle over every outbox table. */
    public Cycle runOnce() throws SQLException {
        return runOnce(markWait(), () -> true);
    }

    /** One cycle over every outbox table, waiting at most {@code markWait} for the router to publish past each mark. */
    public Cycle runOnce(Duration markWait) throws SQLException {
        return runOnce(markWait, () -> true);
    }

    /**
     * One cycle over every outbox table.
     *
     * @param markWait how long to wait, per snapshot, for the router to publish past the snapshot's log mark
     * @param active   whether this process still streams the source: checked before each batch, so that a process that
     *                 lost its lock stops deleting
     */
    public Cycle runOnce(Duration markWait, BooleanSupplier active) throws SQLException {
        var deleted = new LinkedHashMap<String, Integer>();
        var hold = stored().retentionHold(config.name()).filter(since -> since.plus(settings.after()).isAfter(java.time.Instant.now()));
        if (hold.isPresent()) {
            String until = hold.get().plus(settings.after()).toString();
            if (!until.equals(heldUntil)) {
                LOG.warn("Router {}: outbox retention is held until {}: the position was set, reset or a gap accepted at {}, and the "
                        + "rows of the events in between may have to be replayed; nothing is deleted before", config.name(), until, hold.get());
                heldUntil = until;
            }
            waitingFor = "held until " + until + " (position set, reset or gap accepted at " + hold.get() + ")";
            return new Cycle(Map.of(), waitingFor);
        }
        String waiting = null;
        SQLException failed = null;
        try (Connection c = config.source().connection().open()) {
            var proven = io.outboxrouter.audit.AuditedThrough.provenThrough(stored().audited(config.name()).orElse(null));
            for (String table : config.source().tables()) {
                int total = 0;
                String provenThrough = proven.get(table);
                try {
                    while (!closed && active.getAsBoolean()) {
                        if (provenThrough == null) {
                            waiting = "the self-audit to prove rows of " + table + " published";
                            break;
                        }
                        var batch = candidates(c, table, provenThrough);
                        if (batch.ids().isEmpty()) {
                            break;
                        }
                        if (!awaitPublished(c, batch.mark(), markWait)) {
                            waiting = batch.mark().text();
                            // Once when it starts waiting; then quietly, while the router stays behind (or the outbox is quiet).
                            (waitingFor == null ? LOG.atInfo() : LOG.atDebug()).log("Router {}: {} rows of {} are older than the "
                                    + "retention, but the router has not yet stored a position past {} (the log position when they "
                                    + "were read): kept for now; on a quiet outbox, the next event or heartbeat moves it", config.name(),
                                    batch.ids().size(), table, batch.mark().text());
                            break;
                        }
                        total += delete(c, table, batch.ids(), provenThrough, active);
                        if (batch.ids().size() < settings.batchSize() * BATCHES_PER_SNAPSHOT) {
                            break;
                        }
                    }
                    var age = oldest(c, table);
                    if (age == null) {
                        oldestKept.remove(table);
                    } else {
                        oldestKept.put(table, age);
                    }
                    listener.oldest(table, age);
                } catch (SQLException e) {
                    // A lock wait that timed out, a lost connection: the other tables still get their turn; this one's next cycle.
                    LOG.warn("Router {}: outbox retention of {} stopped for this cycle after {} rows: {}", config.name(), table, total,
                            e.getMessage());
                    failed = failed == null ? e : failed;
                }
                deleted.put(table, total);
                if (total > 0) {
                    LOG.info("Router {}: outbox retention deleted {} published rows of {} older than {}", config.name(), total, table,
                            Durations.format(settings.after()));
                }
            }
        }
        if (failed != null) {
            throw failed;
        }
        waitingFor = waiting;
        return new Cycle(Collections.unmodifiableMap(deleted), waiting);
    }

    private record Candidates(OutboxSql.LogMark mark, List<Object> ids) {
    }

    /**
     * In one snapshot: the log mark, then the ids of the old rows (of this stream's shard) visible in it that the self-audit
     * proved published (dated through {@code proven}), oldest first.
     */
    private Candidates candidates(Connection c, String table, String proven) throws SQLException {
        var mark = source.beginSnapshot(c);
        try {
            var columns = config.outbox().columns();
            String filter = source.rowFilter(table);
            String sql = "SELECT " + columns.id() + " FROM " + table + " WHERE " + source.olderThan(settings.timeColumn(), settings.after())
                    + " AND " + settings.timeColumn() + " <= " + source.timestampParameter()
                    + (filter == null ? "" : " AND (" + filter + ")") + " ORDER BY " + settings.timeColumn()
                    + " LIMIT " + (settings.batchSize() * BATCHES_PER_SNAPSHOT);
            var ids = new ArrayList<>();
            try (var ps = c.prepareStatement(sql)) {
                ps.setString(1, proven);
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        ids.add(rs.getObject(1));
                    }
                }
            }
            return new Candidates(mark, ids);
        } finally {
            source.endSnapshot(c);
        }
    }

    private boolean awaitPublished(Connection c, OutboxSql.LogMark mark, Duration wait) throws SQLException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (!closed) {
            if (source.publishedPast(mark, c, this::stored)) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            sleep(Duration.ofMillis(500));
        }
        return false;
    }

    /** By id, a batch at a time, each its own short transaction, with a pause as long as the batch took (at least 20 ms). */
    private int delete(Connection c, String table, List<Object> ids, String proven, BooleanSupplier active) throws SQLException {
        try (var st = c.createStatement()) {
            st.execute(source.shortLockWait());
        }
        // The age and shard conditions again: an id is not known to be unique, and a newer row with the same id stays.
        String filter = source.rowFilter(table);
        String also = " AND " + source.olderThan(settings.timeColumn(), settings.after()) + " AND " + settings.timeColumn() + " <= "
                + source.timestampParameter() + (filter == null ? "" : " AND (" + filter + ")");
        int deleted = 0;
        for (int from = 0; from < ids.size() && !closed && active.getAsBoolean(); from += settings.batchSize()) {
            var batch = ids.subList(from, Math.min(ids.size(), from + settings.batchSize()));
            String sql = "DELETE FROM " + table + " WHERE " + config.outbox().columns().id() + " IN ("
                    + String.join(", ", Collections.nCopies(batch.size(), "?")) + ")" + also;
            long started = System.nanoTime();
            try (var ps = c.prepareStatement(sql)) {
                for (int i = 0; i < batch.size(); i++) {
                    ps.setObject(i + 1, batch.get(i));
                }
                ps.setString(batch.size() + 1, proven);
                int n = ps.executeUpdate();
                deleted += n;
                deletedTotal.addAndGet(n);
                listener.deleted(table, n);
            }
            sleep(Duration.ofNanos(Math.max(MIN_PAUSE.toNanos(), System.nanoTime() - started)));
        }
        return deleted;
    }

    private Duration oldest(Connection c, String table) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery(source.oldestAgeSeconds(table, settings.timeColumn()))) {
            if (rs.next()) {
                double seconds = rs.getDouble(1);
                return rs.wasNull() ? null : Duration.ofMillis(Math.round(seconds * 1000));
            }
            return null;
        }
    }

    private OffsetTable stored() {
        var t = stored;
        if (t == null) {
            synchronized (this) {
                if (closed) {
                    throw new IllegalStateException("retention of router " + config.name() + " is closed");
                }
                if (stored == null) {
                    stored = OffsetTable.open(OffsetTableSettings.offsets(config));
                }
                t = stored;
            }
        }
        return t;
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis(), (int) (d.toNanos() % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public Status status() {
        return new Status(settings.after(), deletedTotal.get(), Map.copyOf(oldestKept), waitingFor, lastRun, lastError);
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        timer.shutdownNow();
        try {
            timer.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        var t = stored;
        if (t != null) {
            t.close();
        }
    }
}
