package io.outboxrouter.cdc;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import java.util.function.Supplier;

/** A MySQL or MariaDB source's outbox tables as SQL: retention's snapshot and its check against the stored position. */
final class BinlogOutboxSql implements OutboxSql {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final RouterConfig config;

    BinlogOutboxSql(RouterConfig config) {
        this.config = config;
    }

    /**
     * A consistent snapshot, then the end of the binlog: with the binlog on, a transaction is written to it before the
     * storage engine commits it, so every transaction visible in the snapshot ends before that position.
     */
    @Override
    public LogMark beginSnapshot(Connection c) throws SQLException {
        c.setAutoCommit(true);
        // A consistent snapshot is taken only under REPEATABLE READ (under READ COMMITTED each read sees the latest rows).
        c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        long serverId;
        try (var st = c.createStatement()) {
            st.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
            try (var rs = st.executeQuery("SELECT @@server_id")) {
                rs.next();
                serverId = rs.getLong(1);
            }
        }
        var end = BinlogPosition.end(config.source().connection());
        return new LogMark("binlog " + end.file() + ":" + end.position(), new Mark(serverId, end));
    }

    /** A binlog position of one server: positions of another (a failover, binary logs reset) are not comparable. */
    private record Mark(long serverId, BinlogPosition end) {
    }

    @Override
    public void endSnapshot(Connection c) throws SQLException {
        try (var st = c.createStatement()) {
            st.execute("ROLLBACK");
        }
        c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
    }

    /**
     * The router's stored position (written only after Kafka acknowledged everything before it, and where a restart
     * resumes): at or past the mark, every transaction that ended before the mark is published.
     */
    @Override
    public boolean publishedPast(LogMark mark, Connection c, Supplier<OffsetTable> stored) throws SQLException {
        var m = (Mark) mark.position();
        String value = stored.get().read(config.name()).values().stream().findFirst().orElse(null);
        if (value == null) {
            return false;
        }
        try {
            var offset = JSON.readTree(value);
            if (!offset.path("file").isTextual() || !offset.path("pos").canConvertToLong()) {
                return false;
            }
            if (offset.path("server_id").canConvertToLong() && offset.path("server_id").asLong() != m.serverId()) {
                return false; // stored from another server: its file and position say nothing about this one's
            }
            var at = new BinlogPosition(offset.path("file").asText(), offset.path("pos").asLong());
            var retained = BinlogPosition.retained(c);
            if (!retained.containsKey(at.file()) || retained.get(at.file()) < at.position()) {
                // The stored position is in no binlog the server keeps (RESET MASTER numbers files from 1 again, so its file
                // name would compare as ahead of everything): nothing can be said of what the router has read.
                return false;
            }
            if (at.compareTo(m.end()) >= 0) {
                return true;
            }
            // Behind the mark: what lies between matters only if it holds outbox rows. The connector resumes at `at` and skips
            // `event` events of the transaction there; stored at that transaction's END marker (the offset names it), the
            // whole transaction is behind the router.
            boolean throughFirstTransaction = (offset.path("event").asLong(0) > 0 || offset.path("row").asLong(0) > 0)
                    && offset.has("transaction_id");
            return noOutboxRowsBetween(c, at, m.end(), throughFirstTransaction);
                } catch (IOException e) {
            return false;
        }
    }

    /**
     * Whether no transaction between {@code from} and {@code to} (one binlog file) writes an outbox table, apart from the
     * first one when {@code throughFirstTransaction}: then every outbox row committed before {@code to} is behind a router
     * resuming at {@code from}. False when it cannot tell (another file, too many events).
     */
    private boolean noOutboxRowsBetween(Connection c, BinlogPosition from, BinlogPosition to, boolean throughFirstTransaction)
            throws SQLException {
        if (!from.file().equals(to.file())) {
            return false;
        }
        try (var st = c.createStatement()) {
            // A few rows at a time: an event's Info can hold a whole statement (MariaDB annotates row events with their
            // INSERT), and the reading ends at the first outbox row. MySQL's driver streams only when asked with MIN_VALUE.
            st.setFetchSize(config.source().connection().url().startsWith("jdbc:mysql:") ? Integer.MIN_VALUE : 8);
            return noOutboxRowsIn(st.executeQuery("SHOW BINLOG EVENTS IN '" + from.file().replace("'", "") + "' FROM " + from.position()
                    + " LIMIT 5000"), to, throughFirstTransaction);
        }
    }

    private boolean noOutboxRowsIn(java.sql.ResultSet events, BinlogPosition to, boolean throughFirstTransaction) throws SQLException {
        var tables = config.source().tables();
        boolean inFirst = throughFirstTransaction;
        try (var rs = events) {
            while (rs.next()) {
                if (rs.getLong("End_log_pos") > to.position()) {
                    return true;
                }
                String type = rs.getString("Event_type");
                String info = rs.getString("Info");
                if (!inFirst && "Table_map".equalsIgnoreCase(type) && info != null && tables.stream().anyMatch(t -> info.contains("(" + t + ")"))) {
                    return false;
                }
                if ("Xid".equalsIgnoreCase(type) || "Query".equalsIgnoreCase(type) && info != null && info.trim().equalsIgnoreCase("COMMIT")) {
                    inFirst = false;
                    if (rs.getLong("End_log_pos") >= to.position()) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    @Override
    public String olderThan(String column, Duration age) {
        return column + " < NOW(6) - INTERVAL " + age.toNanos() / 1000 + " MICROSECOND";
    }

    @Override
    public String nowMinus(Duration age) {
        return "(NOW(6) - INTERVAL " + age.toNanos() / 1000 + " MICROSECOND)";
    }

    @Override
    public String timestampParameter() {
        return "CAST(? AS DATETIME(6))";
    }

    /** In the session's time zone, as {@code NOW()} and a {@code TIMESTAMP} column read back. */
    @Override
    public String fromEpochMicros() {
        return "FROM_UNIXTIME(? / 1000000)";
    }

    @Override
    public String epochMicros(String timestamp) {
        return "CAST(UNIX_TIMESTAMP(" + timestamp + ") * 1000000 AS SIGNED)";
    }

    @Override
    public String oldestAgeSeconds(String table, String column) {
        return "SELECT TIMESTAMPDIFF(MICROSECOND, min(" + column + "), NOW(6)) / 1e6 FROM " + table;
    }

    @Override
    public String shortLockWait() {
        return "SET SESSION innodb_lock_wait_timeout = 3";
    }

    @Override
    public Set<String> columns(String table) throws SQLException {
        try (var c = config.source().connection().open()) {
            return BinlogPreflight.columns(c, table);
        }
    }

    @Override
    public String asText(String column) {
        return "CAST(" + column + " AS CHAR)";
    }
}
