package io.outboxrouter.cdc;

import io.outboxrouter.config.SourceConfig;
import java.sql.SQLException;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Measures, every 15 s, the router's Postgres slot: active, confirmed position, and the WAL it retains (the cost of falling behind). */
public final class SlotMonitor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SlotMonitor.class);
    private static final long PERIOD_SECONDS = 15;

    /** The slot as last measured; {@code exists} false when the server has no such slot. */
    public record SlotState(String slot, boolean exists, boolean active, String confirmedFlushLsn, String walStatus, long retainedBytes,
                            Instant measuredAt) {
    }

    private final SourceConfig source;
    private final AtomicReference<SlotState> state = new AtomicReference<>();
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

    /** The WAL the slot retains, as last measured; negative before the first measurement or without a slot. */
    public long retainedBytes() {
        var s = state.get();
        return s == null ? -1 : s.retainedBytes();
    }

    /** Null before the first measurement. */
    public SlotState state() {
        return state.get();
    }

    private void measure() {
        String slot = source.postgres().slot();
        try (var c = source.connection().open();
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

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
