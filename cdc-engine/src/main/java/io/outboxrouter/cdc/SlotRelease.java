package io.outboxrouter.cdc;

import io.outboxrouter.config.SourceConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Before the connector starts: waits until no other session reads the router's replication slot. The one holding it is
 * usually the walsender of a process that just lost or gave up the router's lock, gone within a second (or, for a lost
 * host, after {@code wal_sender_timeout}); meanwhile this process is active but not streaming, and says so. A reader
 * that stays longer is not ours to end: the router stops with its PID and the fix.
 */
final class SlotRelease {
    private static final Logger LOG = LoggerFactory.getLogger(SlotRelease.class);
    private static final Duration POLL = Duration.ofMillis(200);
    /** Beyond the server's own timeout for a silent reader, before the wait is given up. */
    private static final Duration MARGIN = Duration.ofSeconds(30);
    private static final Duration WITHOUT_SENDER_TIMEOUT = Duration.ofMinutes(5);

    private SlotRelease() {
    }

    /**
     * @param stopping polled: the wait ends (without an error) once it is true
     * @throws SourceSetupException when another session still holds the slot after the server's sender timeout and a margin
     */
    static void await(SourceConfig source, String routerName, BooleanSupplier stopping) throws InterruptedException {
        String slot = source.postgres().slot();
        long start = System.nanoTime();
        String holder = null;
        Duration budget = null;
        while (!stopping.getAsBoolean()) {
            try (var c = source.connection().open()) {
                if (budget == null) {
                    budget = budget(c);
                }
                holder = holder(c, slot);
            } catch (SQLException e) {
                // The connector's own connection fails the same way and says why; do not wait on a database we cannot ask.
                LOG.debug("Could not see whether slot {} is in use: {}", slot, e.getMessage());
                return;
            }
            if (holder == null) {
                if (System.nanoTime() - start > POLL.toNanos()) {
                    LOG.info("Router {}: replication slot {} is free after {} ms", routerName, slot, (System.nanoTime() - start) / 1_000_000);
                }
                return;
            }
            if (System.nanoTime() - start > budget.toNanos()) {
                throw new SourceSetupException("replication slot " + slot + " is still in use by " + holder + " after "
                        + budget.toSeconds() + " s, while this process holds router " + routerName + "'s lock: another program "
                        + "reads the router's slot (a second router with another name but this slot, a Debezium connector?). "
                        + "Stop it, or end its session with SELECT pg_terminate_backend(<pid>), then start the router again");
            }
            if (System.nanoTime() - start < POLL.toNanos()) {
                LOG.info("Router {}: replication slot {} is still in use by {}; waiting up to {} s for it to be released",
                        routerName, slot, holder, budget.toSeconds());
            }
            Thread.sleep(POLL.toMillis());
        }
    }

    /** How long a reader may hold the slot: the server ends a silent one after {@code wal_sender_timeout}. */
    private static Duration budget(Connection c) throws SQLException {
        try (var st = c.createStatement();
             var rs = st.executeQuery("SELECT setting::bigint FROM pg_settings WHERE name = 'wal_sender_timeout'")) {
            long millis = rs.next() ? rs.getLong(1) : 0;
            return millis > 0 ? Duration.ofMillis(millis).plus(MARGIN) : WITHOUT_SENDER_TIMEOUT;
        }
    }

    /** Who holds the slot ("PID 123 (Debezium Streaming from 10.0.0.5)"), or null when nobody does. */
    private static String holder(Connection c, String slot) throws SQLException {
        try (var ps = c.prepareStatement("SELECT s.active_pid, a.application_name, a.client_addr::text FROM pg_replication_slots s "
                + "LEFT JOIN pg_stat_activity a ON a.pid = s.active_pid WHERE s.slot_name = ? AND s.active")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                String app = rs.getString(2);
                String from = rs.getString(3);
                return "PID " + rs.getInt(1) + (app == null || app.isEmpty() ? "" : " (" + app + (from == null ? "" : " from " + from) + ")");
            }
        }
    }
}
