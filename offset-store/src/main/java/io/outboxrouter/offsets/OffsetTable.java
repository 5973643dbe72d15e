package io.outboxrouter.offsets;

import io.outboxrouter.retry.Retry;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The router's durable positions: one row per (router name, offset key) in a JDBC table. Every statement names
 * the router in its WHERE clause (or conflict target), so several routers can share one table. Transient
 * failures (lost connection, timeouts) are retried with backoff, then surface as {@link OffsetStoreException}.
 */
public final class OffsetTable implements AutoCloseable {
    /** One stored row, for operators. */
    public record Row(String routerName, String key, String value, Instant updatedAt) {
    }

    private final JdbcStore store;
    private final String table;

    private OffsetTable(JdbcStore store) {
        this.store = store;
        this.table = store.table();
    }

    /** Opens a small connection pool; connections are made lazily, so an unreachable database fails the first call, not this one. */
    public static OffsetTable open(OffsetTableSettings settings) {
        return open(settings, Retry.Listener.NONE);
    }

    /** @param retries told about each failed attempt that is retried */
    public static OffsetTable open(OffsetTableSettings settings, Retry.Listener retries) {
        return new OffsetTable(JdbcStore.open(settings, "offsets-" + settings.routerName(), retries));
    }

    public String table() {
        return table;
    }

    public void createIfMissing() {
        run("create offset table " + table, c -> {
            try (var st = c.createStatement()) {
                st.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                st.execute(store.dialect().createTable(table));
            }
            return null;
        });
    }

    /** Every stored key and value of one router. */
    public Map<String, String> read(String routerName) {
        return run("read offsets of " + routerName, c -> {
            var out = new LinkedHashMap<String, String>();
            try (var ps = c.prepareStatement("SELECT offset_key, offset_value FROM " + table + " WHERE router_name = ? ORDER BY offset_key")) {
                ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
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
                ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
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
            try (var upsert = c.prepareStatement(store.dialect().upsert(table));
                 var delete = c.prepareStatement("DELETE FROM " + table + " WHERE router_name = ? AND offset_key = ?")) {
                upsert.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                delete.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
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
                ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                ps.setString(1, routerName);
                return ps.executeUpdate();
            }
        });
    }

    private <T> T run(String operation, JdbcStore.Work<T> work) {
        return store.run(operation, work);
    }

    @Override
    public void close() {
        store.close();
    }
}
