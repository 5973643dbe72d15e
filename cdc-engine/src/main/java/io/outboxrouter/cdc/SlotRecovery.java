package io.outboxrouter.cdc;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.config.RouterConfig;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * The way on after the router's Postgres slot was lost while a position is stored: a failover to a standby that kept no
 * copy of the slot (before Postgres 17, or without {@code sync_replication_slots}), or a slot dropped while the router
 * was stopped. The router knows its last published transaction; with {@code track_commit_timestamp} the server knows
 * when every later one committed. A new slot is created with an exported snapshot, the outbox rows committed after that
 * transaction and visible in the snapshot are published again, and the stored position moves to the slot's start: what
 * the snapshot does not see, the slot streams. Nothing is left between the two, and nothing is guessed.
 */
public final class SlotRecovery {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * @param committedAt  the commit time, on this server, of the router's last published transaction
     * @param publishedXid that transaction (published whole, so left out); -1 when the stored position names none
     * @param storedLsn    the stored position, for the operator
     * @param offsetKey    the engine's key of the stored position
     */
    public record Plan(String slot, Instant committedAt, long publishedXid, String storedLsn, String offsetKey) {
    }

    private SlotRecovery() {
    }

    /**
     * What a recovery would publish, read without changing anything.
     *
     * @param stored the engine's stored entries (key to value)
     * @throws IllegalStateException with the reason when there is nothing to recover or it cannot be done exactly
     */
    public static Plan plan(RouterConfig config, Map<String, String> stored) throws SQLException {
        String slot = config.source().postgres().slot();
        if (stored.isEmpty()) {
            throw new IllegalStateException("router " + config.name() + " has no stored position in " + config.offsets().table()
                    + ": there is no last published transaction to recover from. The next start creates its slot (and takes the "
                    + "initial snapshot when source.snapshot is initial)");
        }
        var entry = stored.entrySet().iterator().next();
        long xid;
        long usec;
        String lsn;
        try {
            var offset = JSON.readTree(entry.getValue());
            xid = offset.path("txId").canConvertToLong() ? offset.path("txId").asLong() : -1;
            usec = offset.path("ts_usec").canConvertToLong() ? offset.path("ts_usec").asLong() : -1;
            lsn = offset.path("lsn").canConvertToLong() ? PostgresSource.formatLsn(offset.path("lsn").asLong()) : "?";
        } catch (IOException e) {
            throw new IllegalStateException("the stored position of router " + config.name() + " is not JSON: " + entry.getValue(), e);
        }
        try (var c = config.source().connection().open()) {
            try (var ps = c.prepareStatement("SELECT 1 FROM pg_replication_slots WHERE slot_name = ?")) {
                ps.setString(1, slot);
                try (var rs = ps.executeQuery()) {
                    if (rs.next()) {
                        throw new IllegalStateException("replication slot " + slot + " exists: the router resumes from it, and there is "
                                + "nothing to recover. If an earlier `offsets recover` stopped before it stored the new position, "
                                + "drop the slot it created (SELECT pg_drop_replication_slot('" + slot + "')) and run it again");
                    }
                }
            }
            try (var st = c.createStatement(); var rs = st.executeQuery("SHOW track_commit_timestamp")) {
                if (!rs.next() || !"on".equals(rs.getString(1))) {
                    throw new IllegalStateException("recovery needs the commit time of every transaction, and this server has "
                            + "track_commit_timestamp = off. Turn it on (postgresql.conf, then a restart; it covers transactions "
                            + "committed from then on). Without it: `run --accept-gap`, then `replay --since` the stored "
                            + "position's time (`offsets show`) less your longest transaction");
                }
            }
            Instant committedAt = xid < 0 ? null : commitTime(c, xid);
            if (committedAt == null && usec >= 0 && xid < 0) {
                committedAt = Instant.ofEpochSecond(usec / 1_000_000, (usec % 1_000_000) * 1_000);
            }
            if (committedAt == null) {
                throw new IllegalStateException("this server keeps no commit time for transaction " + xid + ", the last that router "
                        + config.name() + " published (stored position " + lsn + "): track_commit_timestamp was turned on after "
                        + "it, or the transaction is not in this server's history (a standby promoted before it received it). "
                        + "Without that time the range cannot be told exactly: `run --accept-gap`, then `replay --since` the "
                        + "stored position's time (`offsets show`) less your longest transaction");
            }
            return new Plan(slot, committedAt, xid, lsn, entry.getKey());
        }
    }

    private static Instant commitTime(Connection c, long xid) {
        try (var ps = c.prepareStatement("SELECT pg_xact_commit_timestamp(CAST(? AS xid))")) {
            ps.setString(1, Long.toString(xid & 0xFFFFFFFFL));
            try (var rs = ps.executeQuery()) {
                Timestamp t = rs.next() ? rs.getTimestamp(1) : null;
                return t == null ? null : t.toInstant();
            }
        } catch (SQLException e) {
            return null; // older than the commit times kept, or not a transaction of this server
        }
    }

    /** Creates the router's slot with an exported snapshot; the snapshot stays valid until {@link NewSlot#close()}. */
    public static NewSlot create(RouterConfig config) throws SQLException {
        var replication = new Properties();
        replication.setProperty("replication", "database");
        replication.setProperty("preferQueryMode", "simple");
        replication.setProperty("assumeMinServerVersion", "10");
        String slot = config.source().postgres().slot();
        Connection r = config.source().connection().open(replication);
        try (var st = r.createStatement();
             var rs = st.executeQuery("CREATE_REPLICATION_SLOT \"" + slot.replace("\"", "\"\"") + "\" LOGICAL pgoutput EXPORT_SNAPSHOT")) {
            rs.next();
            return new NewSlot(config, r, rs.getString("consistent_point"), rs.getString("snapshot_name"));
        } catch (SQLException | RuntimeException e) {
            r.close();
            throw e;
        }
    }

    /** A slot just created, and the snapshot of everything committed before its start. */
    public static final class NewSlot implements AutoCloseable {
        private final RouterConfig config;
        private final Connection replication;
        private final String consistentPoint;
        private final String snapshot;

        private NewSlot(RouterConfig config, Connection replication, String consistentPoint, String snapshot) {
            this.config = config;
            this.replication = replication;
            this.consistentPoint = consistentPoint;
            this.snapshot = snapshot;
        }

        /** The exported snapshot's name, for {@code SET TRANSACTION SNAPSHOT}. */
        public String snapshot() {
            return snapshot;
        }

        /** Where the slot starts: every transaction committed after it streams from the slot. */
        public String consistentPoint() {
            return consistentPoint;
        }

        /** The stored position at the slot's start, under the engine's key. */
        public Map<String, String> offsets(Plan plan) {
            var value = JSON.createObjectNode().put("lsn", PostgresSource.parseLsn(consistentPoint))
                    .put("ts_usec", Instant.now().toEpochMilli() * 1_000);
            var entries = new LinkedHashMap<String, String>();
            entries.put(plan.offsetKey(), value.toString());
            return entries;
        }

        /** Drops the slot again, so that a recovery that failed half way can be run once more. */
        public void drop() throws SQLException {
            replication.close();
            try (var c = config.source().connection().open(); var ps = c.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
                ps.setString(1, config.source().postgres().slot());
                ps.execute();
            }
        }

        @Override
        public void close() throws SQLException {
            replication.close();
        }
    }
}
