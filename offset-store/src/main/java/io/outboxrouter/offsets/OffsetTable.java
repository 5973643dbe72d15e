package io.outboxrouter.offsets;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.outboxrouter.retry.Retry;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The router's durable positions: one row per (router name, offset key) in a JDBC table. Every statement names
 * the router in its WHERE clause (or conflict target), so several routers can share one table. Transient
 * failures (lost connection, timeouts) are retried with backoff, then surface as {@link OffsetStoreException}.
 */
public final class OffsetTable implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(OffsetTable.class);
    private static final int QUERY_TIMEOUT_SECONDS = 30;

    /** One stored row, for operators. */
    public record Row(String routerName, String key, String value, Instant updatedAt) {
    }

    private final HikariDataSource dataSource;
    private final String table;
    private final SqlDialect dialect;
    private final Retry retry;

    private OffsetTable(HikariDataSource dataSource, String table, SqlDialect dialect, Retry retry) {
        this.dataSource = dataSource;
        this.table = table;
        this.dialect = dialect;
        this.retry = retry;
    }

    /** Opens a small connection pool; connections are made lazily, so an unreachable database fails the first call, not this one. */
    public static OffsetTable open(OffsetTableSettings settings) {
        var hc = new HikariConfig();
        hc.setPoolName("offsets-" + settings.routerName());
        hc.setJdbcUrl(settings.url());
        if (settings.user() != null) {
            hc.setUsername(settings.user());
        }
        hc.setPassword(settings.password().reveal());
        hc.setMaximumPoolSize(2);
        hc.setMinimumIdle(0);
        hc.setConnectionTimeout(5_000);
        hc.setValidationTimeout(2_000);
        hc.setInitializationFailTimeout(-1);
        hc.setAutoCommit(false);
        return new OffsetTable(new HikariDataSource(hc), settings.table(), SqlDialect.of(settings.url()), settings.retry());
    }

    public String table() {
        return table;
    }

    public void createIfMissing() {
        run("create offset table " + table, c -> {
            try (var st = c.createStatement()) {
                st.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
                st.execute(dialect.createTable(table));
            }
            return null;
        });
    }

    /** Every stored key and value of one router. */
    public Map<String, String> read(String routerName) {
        return run("read offsets of " + routerName, c -> {
            var out = new LinkedHashMap<String, String>();
            try (var ps = c.prepareStatement("SELECT offset_key, offset_value FROM " + table + " WHERE router_name = ? ORDER BY offset_key")) {
                ps.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
                ps.setString(1, routerName);
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.put(rs.getString(1), rs.getString(2));
                    }
                }
            }
            return out;
        });
    }

    /** Every row of the table, or only one router's, for `offsets show`. */
    public List<Row> rows(Optional<String> routerName) {
        return run("list offsets", c -> {
            var out = new ArrayList<Row>();
            String sql = "SELECT router_name, offset_key, offset_value, updated_at FROM " + table
                    + (routerName.isPresent() ? " WHERE router_name = ?" : "") + " ORDER BY router_name, offset_key";
            try (var ps = c.prepareStatement(sql)) {
                ps.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
                if (routerName.isPresent()) {
                    ps.setString(1, routerName.get());
                }
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new Row(rs.getString(1), rs.getString(2), rs.getString(3), rs.getTimestamp(4).toInstant()));
                    }
                }
            }
            return out;
        });
    }

    /**
     * Writes one router's entries in one transaction: a non-null value upserts its key, a null value deletes it.
     */
    public void write(String routerName, Map<String, String> entries) {
        Objects.requireNonNull(routerName, "routerName");
        run("write offsets of " + routerName, c -> {
            try (var upsert = c.prepareStatement(dialect.upsert(table));
                 var delete = c.prepareStatement("DELETE FROM " + table + " WHERE router_name = ? AND offset_key = ?")) {
                upsert.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
                delete.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
                for (var e : entries.entrySet()) {
                    var ps = e.getValue() == null ? delete : upsert;
                    ps.setString(1, routerName);
                    ps.setString(2, e.getKey());
                    if (e.getValue() != null) {
                        ps.setString(3, e.getValue());
                    }
                    ps.executeUpdate();
                }
            }
            return null;
        });
    }

    /** Deletes every stored offset of one router; returns how many rows went. */
    public int delete(String routerName) {
        return run("delete offsets of " + routerName, c -> {
            try (var ps = c.prepareStatement("DELETE FROM " + table + " WHERE router_name = ?")) {
                ps.setQueryTimeout(QUERY_TIMEOUT_SECONDS);
                ps.setString(1, routerName);
                return ps.executeUpdate();
            }
        });
    }

    @FunctionalInterface
    private interface Work<T> {
        T apply(Connection c) throws SQLException;
    }

    /** Runs one unit of work in its own transaction, retrying transient failures. */
    private <T> T run(String operation, Work<T> work) {
        try {
            return retry.call(operation, OffsetTable::isTransient, LOG, () -> {
                try (var c = dataSource.getConnection()) {
                    try {
                        T result = work.apply(c);
                        c.commit();
                        return result;
                    } catch (SQLException | RuntimeException e) {
                        rollbackQuietly(c);
                        throw e;
                    }
                }
            });
        } catch (Retry.GaveUpException e) {
            throw new OffsetStoreException("offset table " + table + ": " + e.getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new OffsetStoreException("offset table " + table + ": " + operation + " interrupted", e);
        }
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // The connection is likely gone; the pool discards it.
        }
    }

    /**
     * Lost connections, timeouts and serialization conflicts are worth another try; bad credentials, a missing
     * database or table and bad SQL are not, even when the pool wraps them in a "transient" exception.
     */
    static boolean isTransient(Throwable e) {
        boolean transientSeen = false;
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s && s.getSQLState() != null) {
                String state = s.getSQLState();
                if (state.startsWith("28") || state.startsWith("42") || state.startsWith("3D") || state.startsWith("3F")) {
                    return false;
                }
                transientSeen |= state.startsWith("08") || state.startsWith("57P") || state.equals("40001")
                        || state.equals("40P01") || state.equals("53300") || state.equals("HYT00");
            }
            transientSeen |= t instanceof SQLTransientException || t instanceof SQLRecoverableException;
            if (t.getCause() == t) {
                break;
            }
        }
        return transientSeen;
    }

    @Override
    public void close() {
        dataSource.close();
    }
}
