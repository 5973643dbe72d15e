package io.outboxrouter.offsets;

import java.util.List;

/**
 * The offsets table's layout version: checked at every start, a newer one refused, an older one migrated step by step,
 * and this build's recorded.
 */
final class OffsetTableLayout {
    /** Step {@code i} migrates layout {@code i + 1} to {@code i + 2}; none yet. */
    private static final List<java.util.function.Consumer<OffsetTable>> MIGRATIONS = List.of();

    private OffsetTableLayout() {
    }

    /** Refuses a newer layout, migrates an older one, and records this build's. */
    static void upgrade(OffsetTable table) {
        // No version row: a table made before versions were kept (layout 1) when it has rows, else one made just now.
        int version = table.layoutVersion().orElseGet(() -> anyRows(table) ? 1 : OffsetTable.LAYOUT_VERSION);
        if (version > OffsetTable.LAYOUT_VERSION) {
            refuseNewer(table, version);
        }
        for (int v = version; v < OffsetTable.LAYOUT_VERSION; v++) {
            MIGRATIONS.get(v - 1).accept(table);
        }
        if (table.layoutVersion().filter(v -> v >= OffsetTable.LAYOUT_VERSION).isEmpty()) {
            raiseLayout(table);
        }
    }

    static void refuseNewer(OffsetTable table, int version) {
        throw new OffsetStoreException("offsets table " + table.table() + " has layout version " + version + ", written by a newer "
                + "outbox-router; this one reads up to version " + OffsetTable.LAYOUT_VERSION + ". Run the newer version (a downgrade would "
                + "misread its positions)", null);
    }

    /**
     * Records this build's layout version, only ever raising it: a lower one is replaced, a missing one inserted, and a
     * higher one (a newer build's, written meanwhile) kept, whatever order two processes of different builds do it in.
     */
    private static void raiseLayout(OffsetTable table) {
        table.run("record the layout version of " + table.table(), c -> {
            var lower = java.util.stream.IntStream.range(1, OffsetTable.LAYOUT_VERSION).mapToObj(OffsetTableLayout::layoutValue).toList();
            if (!lower.isEmpty()) {
                try (var ps = c.prepareStatement("UPDATE " + table.table() + " SET offset_value = ? WHERE router_name = ? AND offset_key = ? "
                        + "AND offset_value IN (" + String.join(", ", java.util.Collections.nCopies(lower.size(), "?")) + ")")) {
                    ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                    int i = 1;
                    ps.setString(i++, layoutValue(OffsetTable.LAYOUT_VERSION));
                    ps.setString(i++, OffsetTable.LAYOUT_ROW);
                    ps.setString(i++, OffsetTable.LAYOUT_KEY);
                    for (String v : lower) {
                        ps.setString(i++, v);
                    }
                    ps.executeUpdate();
                }
            }
            try (var ps = c.prepareStatement(table.dialect().insertIfAbsent(table.table()))) {
                ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                ps.setString(1, OffsetTable.LAYOUT_ROW);
                ps.setString(2, OffsetTable.LAYOUT_KEY);
                ps.setString(3, layoutValue(OffsetTable.LAYOUT_VERSION));
                ps.executeUpdate();
            }
            return null;
        });
    }

    private static String layoutValue(int version) {
        return "{\"version\":" + version + "}";
    }

    /** Whether any router has a row in the table. */
    private static boolean anyRows(OffsetTable table) {
        return table.run("read " + table.table(), c -> {
            try (var ps = c.prepareStatement("SELECT 1 FROM " + table.table() + " WHERE router_name <> ?")) {
                ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                ps.setMaxRows(1);
                ps.setString(1, OffsetTable.LAYOUT_ROW);
                try (var rs = ps.executeQuery()) {
                    return rs.next();
                }
            }
        });
    }
}
