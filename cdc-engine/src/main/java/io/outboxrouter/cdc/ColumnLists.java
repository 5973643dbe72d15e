package io.outboxrouter.cdc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Postgres 15+ publication column lists: pgoutput sends only the listed columns, so a column the router does not read
 * is never decoded, whatever its type or size. The router lists, for each outbox table, the columns it reads and the
 * table's replica identity (without which Postgres refuses an UPDATE or DELETE of the table while the publication
 * publishes them).
 */
final class ColumnLists {
    private ColumnLists() {
    }

    /**
     * The column list of each outbox table for a publication the router creates; empty before Postgres 15. A table whose
     * replica identity is FULL, or that has no column the router leaves out, gets none (a list of every column saves nothing).
     *
     * @param columns the columns the router reads
     */
    static Map<String, List<String>> of(Connection c, List<String> tables, Collection<String> columns) throws SQLException {
        var lists = new LinkedHashMap<String, List<String>>();
        if (!supported(c)) {
            return lists;
        }
        for (String t : tables) {
            listFor(c, t, columns).ifPresent(list -> lists.put(t, list));
        }
        return lists;
    }

    /** The list for one table, in the table's column order; empty when it would list every column, or the identity is FULL. */
    static Optional<List<String>> listFor(Connection c, String table, Collection<String> columns) throws SQLException {
        var identity = replicaIdentity(c, table);
        if (identity.isEmpty()) {
            return Optional.empty();
        }
        var all = PostgresPreflight.columns(c, table);
        var list = all.stream().filter(col -> columns.contains(col) || identity.get().contains(col)).toList();
        return list.isEmpty() || list.size() == all.size() ? Optional.empty() : Optional.of(list);
    }

    static boolean supported(Connection c) throws SQLException {
        return PostgresVersion.atLeast(c, PostgresVersion.COLUMN_LISTS);
    }

    /**
     * The columns of the table's replica identity: its primary key (default), the index it names, or none (NOTHING);
     * empty for FULL, where every column is the identity.
     */
    private static Optional<Set<String>> replicaIdentity(Connection c, String table) throws SQLException {
        try (var ps = c.prepareStatement("SELECT r.relreplident::text, a.attname FROM pg_class r "
                + "LEFT JOIN pg_index i ON i.indrelid = r.oid AND CASE r.relreplident WHEN 'i' THEN i.indisreplident "
                + "WHEN 'd' THEN i.indisprimary ELSE false END "
                + "LEFT JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum = ANY (i.indkey) "
                + "WHERE r.oid = to_regclass(?)")) {
            ps.setString(1, table);
            var names = new LinkedHashSet<String>();
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    if ("f".equals(rs.getString(1))) {
                        return Optional.empty();
                    }
                    if (rs.getString(2) != null) {
                        names.add(rs.getString(2));
                    }
                }
            }
            return Optional.of(names);
        }
    }

    /**
     * The statements that give a table of an existing publication the column list {@code list}, keeping its row filter
     * and the publication's other tables ({@link PostgresDdl#setColumnList}).
     */
    static String fix(Connection c, String publication, String table, List<String> list) throws SQLException {
        String filter = null;
        try (var ps = c.prepareStatement("SELECT pg_get_expr(pr.prqual, pr.prrelid) FROM pg_publication_rel pr "
                + "JOIN pg_publication p ON p.oid = pr.prpubid WHERE p.pubname = ? AND pr.prrelid = to_regclass(?)")) {
            ps.setString(1, publication);
            ps.setString(2, table);
            try (var rs = ps.executeQuery()) {
                if (rs.next()) {
                    filter = rs.getString(1);
                }
            }
        }
        return PostgresDdl.setColumnList(publication, table, list, filter);
    }

    /**
     * Whether an existing publication lists no columns for the table although the router leaves some out: what a list
     * would save (the unread columns' names and their average width by the planner's statistics) and the statements
     * that add it. Empty when it has a list, the server has none, or a list would save nothing.
     */
    static Optional<String> wouldSave(Connection c, String publication, String table, Collection<String> columns) throws SQLException {
        if (!supported(c)) {
            return Optional.empty();
        }
        try (var ps = c.prepareStatement("SELECT pr.prattrs IS NULL FROM pg_publication_rel pr JOIN pg_publication p "
                + "ON p.oid = pr.prpubid WHERE p.pubname = ? AND pr.prrelid = to_regclass(?)")) {
            ps.setString(1, publication);
            ps.setString(2, table);
            try (var rs = ps.executeQuery()) {
                if (!rs.next() || !rs.getBoolean(1)) {
                    return Optional.empty(); // listed already, or published through ALL TABLES or its schema, which take no list
                }
            }
        }
        var list = listFor(c, table, columns);
        if (list.isEmpty()) {
            return Optional.empty();
        }
        var unread = PostgresPreflight.columns(c, table).stream().filter(col -> !list.get().contains(col)).toList();
        long width = 0;
        int dot = table.indexOf('.');
        try (var ps = c.prepareStatement("SELECT coalesce(sum(avg_width), 0) FROM pg_stats WHERE schemaname = ? AND tablename = ? "
                + "AND attname = ANY (?)")) {
            ps.setString(1, table.substring(0, dot));
            ps.setString(2, table.substring(dot + 1));
            ps.setArray(3, c.createArrayOf("text", unread.toArray()));
            try (var rs = ps.executeQuery()) {
                if (rs.next()) {
                    width = rs.getLong(1);
                }
            }
        }
        return Optional.of("publication " + publication + " sends every column of " + table + "; a column list would leave out "
                + String.join(", ", unread) + (width > 0 ? " (about " + width + " bytes a row, by the planner's statistics)" : "")
                + ", which the connector then never decodes: " + fix(c, publication, table, list.get()));
    }
}
