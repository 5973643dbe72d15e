package io.outboxrouter.cdc;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/** A Postgres source's outbox tables as SQL: retention's snapshot and slot check, replay's commit order. */
final class PostgresOutboxSql implements OutboxSql {
    private final RouterConfig config;
    /** The shard's row filter per outbox table, as the source's preparation found it (empty before, and when not sharded). */
    private final Supplier<Map<String, String>> shardFilters;

    PostgresOutboxSql(RouterConfig config, Supplier<Map<String, String>> shardFilters) {
        this.config = config;
        this.shardFilters = shardFilters;
    }

    /** Repeatable read: the snapshot is taken as the first statement starts, and the WAL insert position is read after it. */
    @Override
    public LogMark beginSnapshot(Connection c) throws SQLException {
        c.setAutoCommit(false);
        c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_current_wal_insert_lsn()::text")) {
            rs.next();
            String lsn = rs.getString(1);
            return new LogMark("LSN " + lsn, PostgresSource.parseLsn(lsn));
        }
    }

    @Override
    public void endSnapshot(Connection c) throws SQLException {
        c.rollback();
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        c.setAutoCommit(true);
    }

    /**
     * The slot's confirmed position: Postgres never sends again a transaction that committed before it, and the router
     * confirms a position only once everything before it is published and stored; so every such transaction is published.
     */
    @Override
    public boolean publishedPast(LogMark mark, Connection c, Supplier<OffsetTable> stored) throws SQLException {
        try (var ps = c.prepareStatement("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, config.source().postgres().slot());
            try (var rs = ps.executeQuery()) {
                return rs.next() && rs.getString(1) != null && Long.compareUnsigned(PostgresSource.parseLsn(rs.getString(1)), (Long) mark.position()) >= 0;
            }
        }
    }

    /** A heartbeat message, as the slot monitor writes; pgoutput carries messages from Postgres 14 on. */
    @Override
    public void nudge(Connection c) throws SQLException {
        if (!PostgresVersion.atLeast(c, PostgresVersion.MESSAGES)) {
            return;
        }
        try (var ps = c.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?)")) {
            ps.setString(1, SlotMonitor.HEARTBEAT_PREFIX);
            ps.setString(2, config.source().postgres().slot());
            ps.execute();
        }
    }

    @Override
    public String olderThan(String column, Duration age) {
        return column + " < now() - interval '" + age.toMillis() + " milliseconds'";
    }

    @Override
    public String nowMinus(Duration age) {
        return "(now() - interval '" + age.toMillis() + " milliseconds')";
    }

    @Override
    public String timestampParameter() {
        return "CAST(? AS timestamptz)";
    }

    @Override
    public String fromEpochMicros() {
        return "to_timestamp(CAST(? AS float8) / 1000000)";
    }

    /** A time column without a zone is read in the session's zone, as {@code now()} fills it. */
    @Override
    public String epochMicros(String timestamp) {
        return "CAST(EXTRACT(EPOCH FROM CAST(" + timestamp + " AS timestamptz)) * 1000000 AS bigint)";
    }

    @Override
    public String oldestAgeSeconds(String table, String column) {
        return "SELECT EXTRACT(EPOCH FROM now() - min(" + column + "))::float8 FROM " + table;
    }

    @Override
    public String shortLockWait() {
        return "SET lock_timeout = '3s'";
    }

    @Override
    public String deleteDenied(String table) throws SQLException {
        try (var c = config.source().connection().open(); var ps = c.prepareStatement("SELECT has_table_privilege(?, 'DELETE')")) {
            ps.setString(1, table);
            try (var rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1) ? null : config.source().connection().user() + " may not delete rows of " + table;
            }
        }
    }

    @Override
    public String rowFilter(String table) {
        return shardFilters.get().get(table);
    }

    @Override
    public Set<String> columns(String table) throws SQLException {
        try (var c = config.source().connection().open()) {
            return PostgresPreflight.columns(c, table);
        }
    }

    @Override
    public String asText(String column) {
        return "CAST(" + column + " AS text)";
    }

    /**
     * The commit timestamp of the row's transaction (taken just before its commit record, so two commits in the same
     * microsecond, or a clock step, can tie or swap them). Rows whose commit time the server no longer knows (committed
     * before the setting was on, or older than it keeps) come first; then the time column and the id order the rest.
     */
    @Override
    public List<String> commitOrder(Connection c) throws SQLException {
        return commitTime(c).map(t -> List.of(t + " NULLS FIRST")).orElse(List.of());
    }

    @Override
    public Optional<String> commitTime(Connection c) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery("SHOW track_commit_timestamp")) {
            return rs.next() && "on".equals(rs.getString(1)) ? Optional.of("pg_xact_commit_timestamp(xmin)") : Optional.empty();
        }
    }
}
