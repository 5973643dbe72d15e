package io.outboxrouter.cdc;

import io.outboxrouter.config.JdbcConnection;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Postgres 17 failover slots: a logical slot with {@code failover = true} is copied to standbys that run with
 * {@code sync_replication_slots = on}, so a promoted standby has a copy of the router's slot. The router creates its
 * slots so, marks an existing slot of its own so at start, and {@code check} says whether the cluster around it will
 * carry the slot over.
 */
final class SlotFailover {
    private static final Logger LOG = LoggerFactory.getLogger(SlotFailover.class);

    private SlotFailover() {
    }

    static boolean supported(Connection c) throws SQLException {
        return PostgresVersion.atLeast(c, PostgresVersion.FAILOVER_SLOTS);
    }

    /**
     * Makes the router's slots that exist without failover failover slots (made by an earlier build, by hand, or by the
     * Debezium Server the router took over from). A slot still read by another session cannot be changed: that is
     * logged, and the next start tries again.
     *
     * @return whether the server has failover slots (Postgres 17+); false when that could not be read
     */
    static boolean ensure(JdbcConnection connection, List<String> slots) {
        var plain = new ArrayList<String>();
        var busy = new ArrayList<String>();
        try (var c = connection.open()) {
            if (!supported(c)) {
                return false;
            }
            try (var ps = c.prepareStatement("SELECT slot_name, active FROM pg_replication_slots WHERE slot_name = ANY (?) "
                    + "AND slot_type = 'logical' AND NOT failover")) {
                ps.setArray(1, c.createArrayOf("text", slots.toArray()));
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        (rs.getBoolean(2) ? busy : plain).add(rs.getString(1));
                    }
                }
            }
        } catch (SQLException e) {
            LOG.warn("Cannot tell whether replication slot(s) {} are failover slots: {}", slots, e.getMessage());
            return false;
        }
        if (!busy.isEmpty()) {
            LOG.warn("Replication slot(s) {} are not failover slots and are read by another session now, so they cannot be made "
                    + "ones; the next start tries again", busy);
        }
        if (plain.isEmpty()) {
            return true;
        }
        // ALTER_REPLICATION_SLOT is a replication command: it runs on a replication connection only.
        var replication = new Properties();
        replication.setProperty("replication", "database");
        replication.setProperty("preferQueryMode", "simple");
        replication.setProperty("assumeMinServerVersion", "10");
        try (var r = connection.open(replication); var st = r.createStatement()) {
            for (String slot : plain) {
                st.execute(alter(slot));
                LOG.info("Replication slot {} is now a failover slot: a standby with sync_replication_slots = on keeps a copy, "
                        + "and the router goes on from it after a promotion", slot);
            }
        } catch (SQLException e) {
            LOG.warn("Could not make replication slot(s) {} failover slots ({}): after a failover to a standby they would be "
                    + "gone. Run {} on a replication connection while the router is stopped", plain, e.getMessage(), alter(plain.get(0)));
        }
        return true;
    }

    static String alter(String slot) {
        return "ALTER_REPLICATION_SLOT \"" + slot.replace("\"", "\"\"") + "\" (FAILOVER true)";
    }

    /**
     * Whether a failover keeps the slot: the slot's failover flag, and what the primary shows of its standbys. What
     * must be set on a standby cannot be read from here; the fix names it.
     */
    static Check check(Connection c, String slot) {
        try {
            return readiness(c, slot);
        } catch (SQLException e) {
            return Check.warn("failover", "could not tell whether a failover keeps slot " + slot + ": " + e.getMessage(),
                    "check that the server is Postgres (a fork may lack pg_replication_slots.failover)");
        }
    }

    private static Check readiness(Connection c, String slot) throws SQLException {
        if (!supported(c)) {
            return Check.pass("failover", "Postgres " + PostgresVersion.major(c) + " keeps logical slots on the "
                    + "primary only: after a failover to a standby, slot " + slot + " is gone and the router refuses to start "
                    + "(Postgres 17 failover slots keep it)");
        }
        Boolean failover = null;
        try (var ps = c.prepareStatement("SELECT failover FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                if (rs.next()) {
                    failover = rs.getBoolean(1);
                }
            }
        }
        int standbys;
        // Physical walsenders (standbys) are connected to no database; logical ones (the router's, other consumers') are.
        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT count(*) FROM pg_stat_replication r "
                + "JOIN pg_stat_activity a ON a.pid = r.pid WHERE a.datname IS NULL")) {
            rs.next();
            standbys = rs.getInt(1);
        }
        String synchronizedSlots;
        try (var st = c.createStatement(); var rs = st.executeQuery("SHOW synchronized_standby_slots")) {
            rs.next();
            synchronizedSlots = rs.getString(1);
        }
        String standbySide = "on each standby that may be promoted: sync_replication_slots = on, hot_standby_feedback = on, "
                + "primary_slot_name set to its physical slot here, and a dbname in primary_conninfo";
        String flag = failover == null ? "slot " + slot + " will be created as a failover slot"
                : failover ? "slot " + slot + " is a failover slot" : "slot " + slot + " is not a failover slot yet (the router makes "
                + "it one at its next start)";
        // A failover slot's walsender waits for every slot synchronized_standby_slots names: a missing or idle one stalls it.
        var stalled = new ArrayList<String>();
        if (synchronizedSlots != null && !synchronizedSlots.isBlank() && !"*".equals(synchronizedSlots.trim())) {
            for (String name : synchronizedSlots.split(",")) {
                String physical = name.trim().replace("\"", "");
                try (var ps = c.prepareStatement("SELECT active AND coalesce(wal_status, '') <> 'lost' FROM pg_replication_slots "
                        + "WHERE slot_name = ? AND slot_type = 'physical'")) {
                    ps.setString(1, physical);
                    try (var rs = ps.executeQuery()) {
                        if (!rs.next() || !rs.getBoolean(1)) {
                            stalled.add(physical);
                        }
                    }
                }
            }
        }
        if (!stalled.isEmpty()) {
            return Check.warn("failover", flag + "; synchronized_standby_slots names " + String.join(", ", stalled) + ", which no "
                    + "standby streams from now: the router reads nothing until it does",
                    "start the standby, or take its slot out of synchronized_standby_slots (ALTER SYSTEM SET "
                            + "synchronized_standby_slots = '...'; SELECT pg_reload_conf())");
        }
        if (standbys == 0) {
            return Check.pass("failover", flag + "; no standby streams from this server, so a failover would need a new "
                    + "primary with the slot synchronized (" + standbySide + ")");
        }
        if (Boolean.FALSE.equals(failover)) {
            return Check.warn("failover", flag + "; " + standbys + " standby(s) stream from this server, and a failover now "
                    + "would lose the slot", "stop the router and start it again while nothing else reads the slot, or run "
                    + alter(slot) + " on a replication connection while it is stopped");
        }
        if (synchronizedSlots == null || synchronizedSlots.isBlank()) {
            return Check.warn("failover", flag + "; " + standbys + " standby(s) stream from this server, but "
                    + "synchronized_standby_slots is empty: the router may read changes a standby has not received yet, "
                    + "and after its promotion those events would be published though their transactions are lost",
                    "ALTER SYSTEM SET synchronized_standby_slots = '<the standbys'' physical slots>'; SELECT pg_reload_conf(); "
                            + "and " + standbySide);
        }
        return Check.pass("failover", flag + "; " + standbys + " standby(s) stream from this server; synchronized_standby_slots = "
                + synchronizedSlots + " (make sure " + standbySide + ")");
    }
}
