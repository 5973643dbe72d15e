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

/** Measures, every 15 s, how much WAL the router's Postgres slot retains on the server: the cost of falling behind. */
final class SlotMonitor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SlotMonitor.class);
    private static final long PERIOD_SECONDS = 15;

    private final SourceConfig source;
    private final AtomicLong retainedBytes = new AtomicLong(-1);
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

    private void measure() {
        var conn = source.connection();
        try (var c = DriverManager.getConnection(conn.url(), conn.user(), conn.password().reveal());
             var ps = c.prepareStatement("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint FROM pg_replication_slots "
                     + "WHERE slot_name = ?")) {
            ps.setString(1, source.postgres().slot());
            try (var rs = ps.executeQuery()) {
                if (rs.next()) {
                    retainedBytes.set(rs.getLong(1));
                }
            }
        } catch (SQLException e) {
            LOG.debug("Could not measure the WAL retained by slot {}: {}", source.postgres().slot(), e.getMessage());
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
