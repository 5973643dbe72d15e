package io.outboxrouter.cdc;

import io.outboxrouter.config.SourceConfig;
import java.sql.SQLException;
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
 * falling behind). It also watches the slot's publication: one dropped, or dropped and created again, under a running
 * router leaves the slot unable to decode what was written since, and Debezium would restart its task for ever.
 */
public final class SlotMonitor implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SlotMonitor.class);
    private static final long PERIOD_SECONDS = 15;
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
    /** The publication's oid when first seen; null until it exists (a first start creates it after this starts). */
    private Long publicationOid;
    private SourceSetupException drifted;
    private volatile boolean watching;

    /** @param drift told once, on the monitor's thread, when the publication is dropped or replaced under the router */
    SlotMonitor(SourceConfig source, String routerName, Consumer<SourceSetupException> drift) {
        this.source = source;
        this.drift = drift;
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

    /**
     * Measures now, on the caller's thread, the drift callback too: after the engine failed, a publication changed under
     * it is reported as such (Debezium reports it in words of its own, or not at all).
     */
    public void measureNow() {
        measure();
    }

    /** This process streams from now on: the publication as it is now is the one to keep (a standby watches nothing). */
    public synchronized void watchFromNow() {
        publicationOid = null;
        drifted = null;
        watching = true;
        measure();
    }

    /** This process no longer streams (its lock was lost): whatever the streaming process does is not drift here. */
    public void stopWatching() {
        watching = false;
    }

    private synchronized void measure() {
        String slot = source.postgres().slot();
        try (var c = source.connection().open(TIMEOUTS);
             var ps = c.prepareStatement("SELECT active, confirmed_flush_lsn::text, wal_status, "
                     + "pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = ?");
             var pub = c.prepareStatement("SELECT oid::bigint FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                state.set(rs.next()
                        ? new SlotState(slot, true, rs.getBoolean(1), rs.getString(2), rs.getString(3), rs.getLong(4), Instant.now())
                        : new SlotState(slot, false, false, null, null, -1, Instant.now()));
            }
            pub.setString(1, source.postgres().publication());
            try (var rs = pub.executeQuery()) {
                watchPublication(rs.next() ? rs.getLong(1) : null);
            }
        } catch (SQLException e) {
            LOG.debug("Could not measure the WAL retained by slot {}: {}", slot, e.getMessage());
        }
    }

    private void watchPublication(Long oid) {
        if (!watching) {
            return;
        }
        if (publicationOid == null || drifted != null) {
            publicationOid = oid;
            return;
        }
        if (publicationOid.equals(oid)) {
            return;
        }
        String publication = source.postgres().publication();
        String slot = source.postgres().slot();
        drifted = new SourceSetupException("publication " + publication + " was dropped" + (oid == null ? "" : " and created again")
                + " while the router ran: slot " + slot + " cannot decode the changes written since (pgoutput looks the publication up "
                + "as it was when each change was written), so the router stops rather than go past them. Fix: drop the slot "
                + "(SELECT pg_drop_replication_slot('" + slot + "'))" + (oid == null ? "" : " and the new publication (DROP PUBLICATION "
                + publication + ")") + ", then " + PostgresPreflight.START_AFRESH);
        drift.accept(drifted);
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
