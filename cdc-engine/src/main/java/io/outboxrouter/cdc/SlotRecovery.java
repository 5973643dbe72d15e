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
 * transaction (reaching back a little, since commit times follow commit order only roughly) and visible in the snapshot
 * are published again, and the stored position moves to the slot's start: what the snapshot does not see, the slot
 * streams. Nothing is left between the two.
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
        /** The commit times to publish from: commit times follow commit order only roughly, so from a while before. */
        public Instant since(java.time.Duration reachBack) {
            return committedAt.minus(reachBack);
        }
    }

    private SlotRecovery() {
    }

    /**
     * What a recovery would publish, read without changing anything.
     *
     * @param stored the engine's stored entries (key to value)
     * @throws IllegalStateException with the reason when there is nothing to recover or it cannot be told which rows to publish
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
        Long lsnValue = null;
        try {
            var offset = JSON.readTree(entry.getValue());
            xid = offset.path("txId").canConvertToLong() ? offset.path("txId").asLong() : -1;
            usec = offset.path("ts_usec").canConvertToLong() ? offset.path("ts_usec").asLong() : -1;
            for (String key : new String[] {"lsn", "lsn_proc", "lsn_commit"}) {
                if (offset.path(key).canConvertToLong() && (lsnValue == null || Long.compareUnsigned(offset.path(key).asLong(), lsnValue) > 0)) {
                    lsnValue = offset.path(key).asLong();
                }
            }
            lsn = lsnValue == null ? "?" : PostgresSource.formatLsn(lsnValue);
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
            String current;
            try (var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_current_wal_lsn()::text")) {
                rs.next();
                current = rs.getString(1);
            }
            String otherHistory = ": the position comes from another history (a standby promoted before it received what the "
                    + "router had read, or a database restored to an earlier point). The events the router published from the "
                    + "former primary stay published; for this server's since, `run --accept-gap`, then `replay --since` the time "
                    + "it took over";
            if (lsnValue != null && Long.compareUnsigned(lsnValue, PostgresSource.parseLsn(current)) > 0) {
                throw new IllegalStateException("router " + config.name() + "'s stored position " + lsn + " is ahead of this "
                        + "server's WAL, which ends at " + current + otherHistory);
            }
            Instant storedTime = usec < 0 ? null : Instant.ofEpochSecond(usec / 1_000_000, (usec % 1_000_000) * 1_000);
            Instant committedAt = storedTime;
            if (xid >= 0) {
                committedAt = commitTime(c, xid);
                if (committedAt == null) {
                    throw new IllegalStateException("this server keeps no commit time for transaction " + xid + ", the last that "
                            + "router " + config.name() + " published (stored position " + lsn + "): track_commit_timestamp was "
                            + "turned on after it, the position is the initial snapshot's (whose transaction does not commit), or "
                            + "the transaction is not in this server's history. Without that time the range cannot be told: `run "
                            + "--accept-gap`, then `replay --since` the stored position's time (`offsets show`) less your longest "
                            + "transaction");
                }
                if (storedTime != null && !storedTime.equals(committedAt)) {
                    // The stored time is that transaction's commit time as the router read it: another transaction under the
                    // same 32-bit id is another history's.
                    throw new IllegalStateException("transaction " + xid + " committed at " + committedAt + " on this server, but "
                            + "router " + config.name() + "'s stored position says its last published transaction " + xid
                            + " committed at " + storedTime + otherHistory);
                }
            }
            if (committedAt == null) {
                throw new IllegalStateException("router " + config.name() + "'s stored position " + lsn + " names neither a "
                        + "transaction nor a time: `run --accept-gap`, then `replay --since` a time before it");
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
        int version;
        long before;
        try (var c = config.source().connection().open(); var st = c.createStatement();
             var rs = st.executeQuery("SELECT current_setting('server_version_num')::int, "
                     + "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint")) {
            rs.next();
            version = rs.getInt(1);
            before = rs.getLong(2);
        }
        // Postgres 17 keeps a failover slot on a standby with sync_replication_slots; the options syntax is 15's.
        String options = version >= 170000 ? " (SNAPSHOT 'export', FAILOVER true)" : version >= 150000 ? " (SNAPSHOT 'export')"
                : " EXPORT_SNAPSHOT";
        Connection r = config.source().connection().open(replication);
        try (var st = r.createStatement();
             var rs = st.executeQuery("CREATE_REPLICATION_SLOT \"" + slot.replace("\"", "\"\"") + "\" LOGICAL pgoutput" + options)) {
            rs.next();
            return new NewSlot(config, r, rs.getString("consistent_point"), rs.getString("snapshot_name"), before);
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

        /** The server's clock just before the slot was created: every transaction the slot streams committed after it. */
        private final long createdAfterMicros;

        private NewSlot(RouterConfig config, Connection replication, String consistentPoint, String snapshot, long createdAfterMicros) {
            this.config = config;
            this.replication = replication;
            this.consistentPoint = consistentPoint;
            this.snapshot = snapshot;
            this.createdAfterMicros = createdAfterMicros;
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
            // No transaction: a later recovery reaches back from this time, which is before anything the slot streams.
            var value = JSON.createObjectNode().put("lsn", PostgresSource.parseLsn(consistentPoint)).put("ts_usec", createdAfterMicros);
            var entries = new LinkedHashMap<String, String>();
            entries.put(plan.offsetKey(), value.toString());
            return entries;
        }

        /**
         * Drops the slot again, so that a recovery that failed half way can be run once more.
         *
         * @return empty, or why the slot could not be dropped
         */
        public java.util.Optional<String> drop() {
            try {
                replication.close();
                try (var c = config.source().connection().open(); var ps = c.prepareStatement("SELECT pg_drop_replication_slot(?)")) {
                    ps.setString(1, config.source().postgres().slot());
                    ps.execute();
                }
                return java.util.Optional.empty();
            } catch (SQLException e) {
                return java.util.Optional.of(e.getMessage());
            }
        }

        @Override
        public void close() throws SQLException {
            replication.close();
        }
    }
}
