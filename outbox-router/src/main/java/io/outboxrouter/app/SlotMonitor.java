package io.outboxrouter.app;

import io.outboxrouter.config.SourceConfig;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Measures, every 15 s, the router's Postgres slot: active, confirmed position, and the WAL it retains (the cost of falling behind). */
final class SlotMonitor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SlotMonitor.class);
    private static final long PERIOD_SECONDS = 15;

    private final SourceConfig source;
    /** The slot as last measured; {@code exists} false when the server has no such slot. */
    record SlotState(String slot, boolean exists, boolean active, String confirmedFlushLsn, String walStatus, long retainedBytes,
                     java.time.Instant measuredAt) {
    }

    private final AtomicLong retainedBytes = new AtomicLong(-1);
    private final java.util.concurrent.atomic.AtomicReference<SlotState> state = new java.util.concurrent.atomic.AtomicReference<>();
    private final ScheduledExecutorService timer;

    SlotMonitor(SourceConfig source, String routerName) {
        this.source = source;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            var t = new Thread(r, "slot-monitor-" + routerName);
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(this::measure, 0, PERIOD_SECONDS, TimeUnit.SECONDS);
    }

    long retainedBytes() {
        return retainedBytes.get();
    }

    /** Null before the first measurement. */
    SlotState state() {
        return state.get();
    }

    private void measure() {
        var conn = source.connection();
        String slot = source.postgres().slot();
        try (var c = DriverManager.getConnection(conn.url(), conn.user(), conn.password().reveal());
             var ps = c.prepareStatement("SELECT active, confirmed_flush_lsn::text, wal_status, "
                     + "pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                if (rs.next()) {
                    retainedBytes.set(rs.getLong(4));
                    state.set(new SlotState(slot, true, rs.getBoolean(1), rs.getString(2), rs.getString(3), rs.getLong(4), java.time.Instant.now()));
                } else {
                    state.set(new SlotState(slot, false, false, null, null, -1, java.time.Instant.now()));
                }
            }
        } catch (SQLException e) {
            LOG.debug("Could not measure the WAL retained by slot {}: {}", slot, e.getMessage());
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
