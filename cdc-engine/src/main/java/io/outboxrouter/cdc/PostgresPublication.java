package io.outboxrouter.cdc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Postgres publication the router streams through: whether it publishes the outbox tables, their inserts and every
 * column the router reads, and its creation when missing.
 */
final class PostgresPublication {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresPublication.class);

    private PostgresPublication() {
    }

    static Check publicationCheck(Connection c, String publication, String slot, List<String> tables,
                                          Map<String, List<String>> columnLists) throws SQLException {
        var published = publishedTables(c, publication);
        boolean partitioned = PostgresPreflight.anyPartitioned(c, tables);
        String create = PostgresDdl.createPublication(publication, tables, partitioned, columnLists);
        if (published.isEmpty() && PostgresPreflight.slotExists(c, slot)) {
            return PostgresPreflight.missingBehindSlot(publication, slot);
        }
        if (published.isEmpty()) {
            return toBeCreated(c, publication, create, tables);
        }
        var missing = tables.stream().filter(t -> !published.get().contains(t)).toList();
        if (partitioned && !viaRoot(c, publication)) {
            return Check.fail("publication", "publication " + publication + " publishes the partitions of a partitioned outbox table "
                    + "under their own names, which the router does not route", "ALTER PUBLICATION " + publication
                    + " SET (publish_via_partition_root = true)");
        }
        return missing.isEmpty() ? Check.pass("publication", "publication " + publication + (tables.isEmpty() ? " exists"
                : " publishes " + String.join(", ", tables)))
                : Check.fail("publication", "publication " + publication + " exists but does not publish " + String.join(", ", missing),
                "ALTER PUBLICATION " + publication + " ADD TABLE " + String.join(", ", missing));
    }

    /**
     * A publication the router will create at first start: passed only when its role may (CREATE on the database and
     * ownership of every table, or superuser), else the start would fail where {@code check} said all was well.
     */
    static Check toBeCreated(Connection c, String publication, String create, List<String> tables) throws SQLException {
        var lacks = new ArrayList<String>();
        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT rolsuper, has_database_privilege(current_database(), 'CREATE'), "
                + "current_user, current_database() FROM pg_roles WHERE rolname = current_user")) {
            if (rs.next() && !rs.getBoolean(1)) {
                String role = rs.getString(3);
                if (!rs.getBoolean(2)) {
                    lacks.add("CREATE on database " + rs.getString(4) + " (GRANT CREATE ON DATABASE " + rs.getString(4) + " TO " + role + ")");
                }
                for (String t : tables) {
                    // A table not there yet (the heartbeat table the router creates, one tableCheck reports) is left out.
                    try (var ps = c.prepareStatement("SELECT pg_has_role(c.relowner, 'USAGE') FROM pg_class c JOIN pg_namespace n "
                            + "ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ?")) {
                        int dot = t.indexOf('.');
                        ps.setString(1, dot < 0 ? "public" : t.substring(0, dot));
                        ps.setString(2, dot < 0 ? t : t.substring(dot + 1));
                        try (var owner = ps.executeQuery()) {
                            if (owner.next() && !owner.getBoolean(1)) {
                                lacks.add("ownership of " + t + " (ALTER TABLE " + t + " OWNER TO " + role + ")");
                            }
                        }
                    }
                }
            }
        }
        if (lacks.isEmpty()) {
            return Check.pass("publication", "publication " + publication + " will be created on first start (" + create + ")");
        }
        return Check.fail("publication", "publication " + publication + " is missing, and the router's role cannot create it: it lacks "
                + String.join(", ", lacks), "create it yourself as the tables' owner: " + create + "; or grant what it lacks");
    }

    /**
     * An existing publication must publish the outbox tables' inserts with every column the router reads (a Postgres 15+
     * column list may leave some out): else each row would reach the router without them, or not at all.
     */
    static Optional<Check> publishedRowsCheck(Connection c, String publication, List<String> tables, Collection<String> required,
                                                      Collection<String> read) throws SQLException {
        if (tables.isEmpty()) {
            return Optional.empty();
        }
        Boolean inserts = null;
        try (var ps = c.prepareStatement("SELECT pubinsert FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                if (rs.next()) {
                    inserts = rs.getBoolean(1);
                }
            }
        }
        if (inserts == null) {
            return Optional.empty();
        }
        if (!inserts) {
            return Optional.of(Check.fail("published rows", "publication " + publication + " does not publish inserts",
                    "ALTER PUBLICATION " + publication + " SET (publish = 'insert')"));
        }
        if (!PostgresVersion.atLeast(c, PostgresVersion.COLUMN_LISTS)) {
            return Optional.empty();
        }
        for (String t : tables) {
            int dot = t.indexOf('.');
            try (var ps = c.prepareStatement("SELECT attnames::text[] FROM pg_publication_tables WHERE pubname = ? AND schemaname = ? "
                    + "AND tablename = ?")) {
                ps.setString(1, publication);
                ps.setString(2, t.substring(0, dot));
                ps.setString(3, t.substring(dot + 1));
                try (var rs = ps.executeQuery()) {
                    if (!rs.next() || rs.getArray(1) == null) {
                        continue;
                    }
                    var listed = Set.of((String[]) rs.getArray(1).getArray());
                    var inTable = PostgresPreflight.columns(c, t);
                    var columns = read.stream().filter(col -> required.contains(col) || inTable.contains(col)).toList();
                    var missing = columns.stream().filter(col -> !listed.contains(col)).toList();
                    if (!missing.isEmpty()) {
                        var list = inTable.stream().filter(col -> listed.contains(col) || columns.contains(col)).toList();
                        return Optional.of(Check.fail("published rows", "publication " + publication + " publishes " + t + " without "
                                + "column(s) " + String.join(", ", missing) + " that the router reads (its column list)",
                                ColumnLists.fix(c, publication, t, list)));
                    }
                }
            }
        }
        var saving = new ArrayList<String>();
        for (String t : tables) {
            ColumnLists.wouldSave(c, publication, t, read).ifPresent(saving::add);
        }
        return Optional.of(Check.pass("published rows", "publication " + publication + " publishes the inserts of "
                + String.join(", ", tables) + " with every column the router reads" + (saving.isEmpty() ? ""
                : ". " + String.join(". ", saving))));
    }
    /** The tables a publication publishes, or empty when there is no such publication. */
    static Optional<Set<String>> publishedTables(Connection c, String publication) throws SQLException {
        try (var exists = c.prepareStatement("SELECT 1 FROM pg_publication WHERE pubname = ?")) {
            exists.setString(1, publication);
            try (var rs = exists.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
            }
        }
        var published = new HashSet<String>();
        try (var ps = c.prepareStatement("SELECT schemaname || '.' || tablename FROM pg_publication_tables WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    published.add(rs.getString(1));
                }
            }
        }
        return Optional.of(published);
    }

    static boolean viaRoot(Connection c, String publication) throws SQLException {
        try (var ps = c.prepareStatement("SELECT pubviaroot FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }
    static void ensurePublication(Connection c, String publication, String sql, List<String> tables) throws SQLException {
        if (publishedTables(c, publication).isPresent()) {
            LOG.info("Using existing publication {}", publication);
            return;
        }
        try (var st = c.createStatement()) {
            st.execute(sql);
        } catch (SQLException e) {
            if ("42710".equals(e.getSQLState()) || "23505".equals(e.getSQLState())) {
                LOG.info("Publication {} was created meanwhile by another process", publication);
                return;
            }
            throw new SourceSetupException("cannot create publication " + publication + " (" + e.getMessage()
                    + "); create it as the table owner: " + sql, e);
        }
        LOG.info("Created publication {} for {}", publication, tables);
    }
}
