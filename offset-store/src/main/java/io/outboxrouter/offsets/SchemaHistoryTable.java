package io.outboxrouter.offsets;

import java.sql.SQLException;

/**
 * What operators and the start-up checks need of a binlog router's schema history table (Debezium writes it through
 * {@link JdbcSchemaHistory}): how many records a router has, and deleting them when its position is reset.
 */
public final class SchemaHistoryTable {
    private SchemaHistoryTable() {
    }

    /** The router's schema history records; 0 when the table does not exist. */
    public static long count(OffsetTableSettings history) {
        return run(history, "SELECT COUNT(*) FROM ", true);
    }

    /** The router's schema history records, as stored (JSON), in order; empty when the table does not exist. */
    public static java.util.List<String> records(OffsetTableSettings history) {
        var out = new java.util.ArrayList<String>();
        try (var c = history.connection().open();
             var ps = c.prepareStatement("SELECT record FROM " + history.table() + " WHERE router_name = ? ORDER BY seq")) {
            ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
            ps.setString(1, history.routerName());
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
            return out;
        } catch (SQLException e) {
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            if (state.equals("42P01") || state.equals("42S02")) {
                return out;
            }
            throw new OffsetStoreException("table " + history.table() + ": " + e.getMessage(), e);
        }
    }

    /** Deletes the router's schema history; returns how many records went (0 when the table does not exist). */
    public static long delete(OffsetTableSettings history) {
        return run(history, "DELETE FROM ", false);
    }

    private static long run(OffsetTableSettings history, String verb, boolean query) {
        try (var c = history.connection().open(); var ps = c.prepareStatement(verb + history.table() + " WHERE router_name = ?")) {
            ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
            ps.setString(1, history.routerName());
            if (!query) {
                return ps.executeUpdate();
            }
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            if (state.equals("42P01") || state.equals("42S02")) {
                return 0; // no such table: no history
            }
            throw new OffsetStoreException("table " + history.table() + ": " + e.getMessage(), e);
        }
    }
}
