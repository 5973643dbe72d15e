package io.outboxrouter.cdc;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.config.SourceConfig;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Measures, every 15 s, the router's Postgres slot: active, confirmed position, and the WAL it retains (the cost of
 * falling behind). Every 2 s while this process streams, it also watches what the slot's output depends on: the
 * publication (dropped, or dropped and created again), the outbox tables in it ({@link PublicationWatch}) and the slot's
 * WAL. A change there loses rows without an error from Debezium, so the router is told at once, with the fix and the
 * rows that may not have been published ({@code replay --from-xid}). And it keeps a quiet outbox from pinning WAL.
 */
public final class SlotMonitor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SlotMonitor.class);
    private static final long PERIOD_SECONDS = 15;
    private static final long WATCH_MILLIS = 2000;
    /** The prefix of the router's heartbeat messages; the connector lets them through, routing ignores them. */
    static final String HEARTBEAT_PREFIX = "outbox-router.heartbeat";
    /** How long the slot's position stays put, with WAL written past it, before a heartbeat is sent. */
    private static final java.time.Duration HEARTBEAT_AFTER = java.time.Duration.ofSeconds(10);
    /** WAL written past the slot's position before a heartbeat is sent: an idle database is left idle (no heartbeat of its own). */
    private static final long HEARTBEAT_AFTER_BYTES = 64 * 1024;
    /** Looks that fail in a row before the watch says, as a warning, that it is blind. */
    private static final int FAILED_LOOKS_WARNED = 15;
    /** How often the catalog found in order is kept in the offsets table, for the next start to compare with. */
    private static final long KEEP_NANOS = 60_000_000_000L;
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A half-open connection fails in seconds: the engine-failure path and the lock's thread measure too. */
    private static final java.util.Properties TIMEOUTS = new java.util.Properties();

    static {
        TIMEOUTS.setProperty("connectTimeout", "5");
        TIMEOUTS.setProperty("socketTimeout", "10");
    }

    /** The slot as last measured; {@code exists} false when the server has no such slot. */
    public record SlotState(String slot, boolean exists, boolean active, String confirmedFlushLsn, String walStatus, long retainedBytes,
                            Instant measuredAt) {
    }

    private final SourceConfig source;
    private final AtomicReference<SlotState> state = new AtomicReference<>();
    private final ScheduledExecutorService timer;
    private final Consumer<SourceSetupException> drift;
    private final PublicationWatch watch;
    private final LostRange lost = new LostRange();
    private SourceSetupException drifted;
    private volatile boolean watching;
    private volatile boolean closed;
    private boolean baselined;
    /** Whether the server's pgoutput carries logical decoding messages; null until asked. */
    private Boolean messages;
    /** The slot's confirmed position at the last look, and since when it has not moved. */
    private Long lastConfirmed;
    private long confirmedSince;
    private Connection watchConnection;
    private int failedLooks;
    private final String routerName;
    private final OffsetTableSettings offsetSettings;
    private OffsetTable offsets;
    /** When the catalog was last kept; 0 until the first clean look of this streaming. */
    private long keptAt;

    /**
     * @param columns the columns the router reads from each outbox table
     * @param drift   told once, on the monitor's thread, when what the slot sends changed under the router
     * @param offsets where the catalog streamed with is kept ({@link OffsetTable#CATALOG_KEY})
     */
    SlotMonitor(SourceConfig source, String routerName, Collection<String> columns, Consumer<SourceSetupException> drift,
                OffsetTableSettings offsets) {
        this.source = source;
        this.routerName = routerName;
        this.offsetSettings = offsets;
        this.drift = drift;
        this.watch = new PublicationWatch(source.postgres().publication(), source.postgres().slot(), source.tables(), columns);
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            var t = new Thread(r, "slot-monitor-" + routerName);
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(() -> guarded(this::measure), 0, PERIOD_SECONDS, TimeUnit.SECONDS);
        timer.scheduleWithFixedDelay(() -> guarded(this::watchAndReport), WATCH_MILLIS, WATCH_MILLIS, TimeUnit.MILLISECONDS);
    }

    /** A scheduled task that throws is never run again: whatever goes wrong is logged, and the next run tries anew. */
    private static void guarded(Runnable task) {
        try {
            task.run();
        } catch (RuntimeException e) {
            LOG.warn("Slot monitor: {}", e.toString(), e);
        }
    }

    /** The WAL the slot retains, as last measured; negative before the first measurement or without a slot. */
    public long retainedBytes() {
        var s = state.get();
        return s == null ? -1 : s.retainedBytes();
    }

    /** Null before the first measurement. */
    public SlotState state() {
        return state.get();
    }

    /**
     * Measures now, on the caller's thread, the drift callback too: after the engine failed, a publication changed under
     * it is reported as such (Debezium reports it in words of its own, or not at all).
     */
    public void measureNow() {
        measure();
        watchAndReport();
    }

    /** This process streams from now on: the catalog as it is now is the one to keep (a standby watches nothing). */
    public void watchFromNow() {
        synchronized (this) {
            drifted = null;
            baselined = false;
            lost.clear();
            lastConfirmed = null;
            keptAt = 0;
            watching = true;
        }
        measureNow();
    }

    /** This process no longer streams (its lock was lost): whatever the streaming process does is not drift here. */
    public synchronized void stopWatching() {
        watching = false;
        closeWatchConnection();
    }

    private synchronized void measure() {
        if (closed) {
            return;
        }
        String slot = source.postgres().slot();
        try (var c = source.connection().open(TIMEOUTS);
             var ps = c.prepareStatement("SELECT active, confirmed_flush_lsn::text, wal_status, "
                     + "pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                state.set(rs.next()
                        ? new SlotState(slot, true, rs.getBoolean(1), rs.getString(2), rs.getString(3), rs.getLong(4), Instant.now())
                        : new SlotState(slot, false, false, null, null, -1, Instant.now()));
            }
        } catch (SQLException e) {
            LOG.debug("Could not measure the WAL retained by slot {}: {}", slot, e.getMessage());
        }
    }

    /**
     * A quiet outbox on a busy database: pgoutput sends nothing, so the slot's confirmed position stays at the last outbox
     * transaction and the server keeps every byte of WAL written since. A transactional logical decoding message reaches
     * every slot whatever its publication; once the router has stored its position, the slot is confirmed past all that WAL.
     * Sent only while this process streams, when the slot's position has not moved for {@link #HEARTBEAT_AFTER} and more
     * than a little WAL was written past it; the router publishes nothing for it.
     */
    private void heartbeatIfPinned(Connection c, Long confirmed) throws SQLException {
        long now = System.nanoTime();
        if (confirmed == null || !confirmed.equals(lastConfirmed)) {
            lastConfirmed = confirmed;
            confirmedSince = now;
            return;
        }
        if (now - confirmedSince < HEARTBEAT_AFTER.toNanos()) {
            return;
        }
        if (messages == null) {
            messages = PostgresVersion.atLeast(c, PostgresVersion.MESSAGES);
        }
        if (!messages) {
            return;
        }
        confirmedSince = now; // the next one only if this one did not move the slot within the interval
        String slot = source.postgres().slot();
        try (var ps = c.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?) FROM pg_replication_slots "
                + "WHERE slot_name = ? AND pg_wal_lsn_diff(pg_current_wal_insert_lsn(), confirmed_flush_lsn) > " + HEARTBEAT_AFTER_BYTES)) {
            ps.setString(1, HEARTBEAT_PREFIX);
            ps.setString(2, slot);
            ps.setString(3, slot);
            ps.execute();
        }
    }

    /** Looks at the catalog; a change is reported outside the monitor's lock (recording it writes to the offsets table). */
    private void watchAndReport() {
        var found = watch();
        if (found != null) {
            drift.accept(found);
        }
        keep();
    }

    private PublicationWatch.Kept toKeep;

    /**
     * Keeps, at most once a minute, the catalog the last clean look found in the offsets table (outside the monitor's lock:
     * a database outage must not hold back {@link #stopWatching}).
     */
    private void keep() {
        PublicationWatch.Kept kept;
        synchronized (this) {
            kept = toKeep;
            toKeep = null;
        }
        if (kept == null || closed) {
            return;
        }
        try {
            synchronized (offsetSettings) {
                if (offsets == null) {
                    offsets = OffsetTable.open(offsetSettings);
                }
            }
            offsets.write(routerName, java.util.Map.of(OffsetTable.CATALOG_KEY, JSON.writeValueAsString(kept)));
        } catch (RuntimeException | JsonProcessingException e) {
            LOG.debug("Could not keep the catalog of router {} in its offsets table: {}", routerName, e.getMessage());
        }
    }

    /**
     * The catalog kept by an earlier run, compared with the one now (at start, before streaming): a publication or an
     * outbox table replaced while no router streamed, named with what it may have cost. Empty when nothing changed.
     */
    static java.util.Optional<Drift> changedWhileStopped(Connection c, SourceConfig source, Collection<String> columns, String keptJson)
            throws SQLException {
        PublicationWatch.Kept kept;
        try {
            kept = JSON.readValue(keptJson, PublicationWatch.Kept.class);
        } catch (JsonProcessingException e) {
            LOG.warn("Cannot read the catalog kept in the offsets table ({}): not compared", e.getOriginalMessage());
            return java.util.Optional.empty();
        }
        var watch = new PublicationWatch(source.postgres().publication(), source.postgres().slot(), source.tables(), columns);
        watch.baseline(kept);
        var change = watch.look(c).change();
        if (change.isEmpty() || !watch.replacedSince(c)) {
            return java.util.Optional.empty(); // what is off now is refused by the start's own checks, with the fix
        }
        var range = new LostRange();
        range.add(new PublicationWatch.Look(kept.xid(), kept.walLsn(), 0, java.util.Optional.empty(), true, null));
        String rows = range.describe(change.get().lostAfterLsn());
        rows = rows.endsWith(".") ? rows.substring(0, rows.length() - 1) : rows; // the refusal goes on after it
        return java.util.Optional.of(new Drift("while the router was stopped, " + change.get().problem() + ". " + rows
                + (change.get().lostAfterLsn() == null ? "" : ". Fix first: " + change.get().fix()),
                "go on from the stored position (the rows named reach Kafka only by replay)", change.get().lostAfterLsn() == null, null));
    }

    private synchronized SourceSetupException watch() {
        if (!watching || closed || drifted != null) {
            return null;
        }
        try {
            if (watchConnection == null) {
                watchConnection = source.connection().open(TIMEOUTS);
            }
            if (!baselined) {
                watch.baseline(watchConnection);
                baselined = true;
            }
            var look = watch.look(watchConnection);
            if (failedLooks >= FAILED_LOOKS_WARNED) {
                LOG.info("The watch of slot {} and its publication works again", source.postgres().slot());
            }
            failedLooks = 0;
            if (look.change().isPresent()) {
                var change = look.change().get();
                drifted = new SourceSetupException("While the router ran, " + change.problem() + ". " + lost.describe(change.lostAfterLsn())
                        + " Fix: " + change.fix() + (change.lostAfterLsn() == null ? ", then start the router once with run --accept-gap" : "")
                        + " (the router refuses to start until then); then publish the rows named above with replay.");
                closeWatchConnection();
                return drifted;
            }
            if (look.clean()) {
                lost.add(look);
                if (keptAt == 0 || System.nanoTime() - keptAt >= KEEP_NANOS) {
                    keptAt = System.nanoTime();
                    toKeep = watch.kept(look);
                }
            }
            heartbeatIfPinned(watchConnection, look.confirmedLsn());
        } catch (SQLException e) {
            closeWatchConnection();
            if (++failedLooks == FAILED_LOOKS_WARNED) {
                LOG.warn("Cannot watch slot {} and its publication for {} s (a change there would go unnoticed until this works "
                        + "again): {}", source.postgres().slot(), FAILED_LOOKS_WARNED * WATCH_MILLIS / 1000, e.getMessage());
            } else {
                LOG.debug("Could not watch the publication of slot {}: {}", source.postgres().slot(), e.getMessage());
            }
        }
        return null;
    }

    private void closeWatchConnection() {
        if (watchConnection != null) {
            try {
                watchConnection.close();
            } catch (SQLException ignored) {
                // the connection is gone either way
            }
            watchConnection = null;
        }
    }

    @Override
    public void close() {
        closed = true;
        timer.shutdownNow();
        synchronized (this) {
            closeWatchConnection();
        }
        synchronized (offsetSettings) {
            if (offsets != null) {
                offsets.close();
            }
        }
    }
}
