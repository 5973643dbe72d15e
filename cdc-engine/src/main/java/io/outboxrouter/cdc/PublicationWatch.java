package io.outboxrouter.cdc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What a running Postgres router depends on in the catalog, compared with what it was when streaming began: each outbox
 * table (the same table, still in the publication, with every column the router reads), the publication (still
 * publishing inserts) and the slot (not invalidated). pgoutput decides what a slot sends when it decodes each change,
 * with the catalog as it was then, so a row written while any of these is off is never sent, even after a fix.
 *
 * <p>Each look also reads the oldest transaction id still running, in the same statement snapshot as the catalog: every
 * transaction that commits after a look that found nothing wrong has an id at or above it. That bounds what a later
 * drift may have lost ({@code replay --from-xid}).
 */
final class PublicationWatch {

    /**
     * What changed, what it means and the fix (up to the start that accepts the loss).
     *
     * @param lostAfterLsn for a slot whose WAL is gone, its confirmed position (what committed after it is lost); else null
     */
    record Change(String problem, String fix, Long lostAfterLsn) {
        Change(String problem, String fix) {
            this(problem, fix, null);
        }
    }

    /** One look: the oldest running xid and the WAL position at that moment, and what changed (empty when nothing). */
    record Look(long oldestXid, long walLsn, Optional<Change> change) {
    }

    private final String publication;
    private final String slot;
    private final List<String> tables;
    private final Collection<String> columns;
    /** Each table's oid when streaming began; a table created after that is taken as it is first seen. */
    private final Map<String, Long> oids = new HashMap<>();
    private Boolean columnLists;

    PublicationWatch(String publication, String slot, List<String> tables, Collection<String> columns) {
        this.publication = publication;
        this.slot = slot;
        this.tables = tables;
        this.columns = columns;
    }

    /** Takes the catalog as it is now as the one streaming began with. */
    void baseline(Connection c) throws SQLException {
        oids.clear();
        for (String t : tables) {
            var oid = tableOid(c, t);
            if (oid != null) {
                oids.put(t, oid);
            }
        }
    }

    Look look(Connection c) throws SQLException {
        long xid;
        long lsn;
        try (var st = c.createStatement();
             var rs = st.executeQuery("SELECT txid_snapshot_xmin(txid_current_snapshot()), "
                     + "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")) {
            rs.next();
            xid = rs.getLong(1);
            lsn = rs.getLong(2);
        }
        return new Look(xid, lsn, change(c));
    }

    private Optional<Change> change(Connection c) throws SQLException {
        var slotChange = slot(c);
        if (slotChange.isPresent()) {
            return slotChange;
        }
        Boolean inserts = null;
        boolean allTables = false;
        try (var ps = c.prepareStatement("SELECT pubinsert, puballtables FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                if (rs.next()) {
                    inserts = rs.getBoolean(1);
                    allTables = rs.getBoolean(2);
                }
            }
        }
        if (inserts == null) {
            return Optional.empty(); // a dropped publication is the slot monitor's own case, with its own fix
        }
        if (!inserts) {
            return Optional.of(new Change("publication " + publication + " no longer publishes inserts (its publish option was "
                    + "changed), so slot " + slot + " sends no outbox row written since",
                    "ALTER PUBLICATION " + publication + " SET (publish = 'insert')"));
        }
        var published = publishedColumns(c);
        for (String t : tables) {
            Long oid = tableOid(c, t);
            Long before = oids.get(t);
            if (oid == null) {
                return Optional.of(new Change("outbox table " + t + " was dropped", "create it again, add it to the publication "
                        + "(ALTER PUBLICATION " + publication + " ADD TABLE " + t + ")"));
            }
            if (before == null) {
                oids.put(t, oid);
                before = oid;
            }
            var cols = published.get(t);
            if (cols == null) {
                return Optional.of(new Change("outbox table " + t + (before.equals(oid) ? " was removed from publication "
                        + publication : " was dropped and created again (a table is published by its identity, so the new "
                        + "one is not in publication " + publication + ")") + ": slot " + slot + " sends none of its rows",
                        "ALTER PUBLICATION " + publication + " ADD TABLE " + t));
            }
            if (!before.equals(oid) && !allTables && !inSchemaPublication(c, t)) {
                return Optional.of(new Change("outbox table " + t + " was dropped and created again, then added to publication "
                        + publication + " again: rows written between the two were not in the publication and are not published",
                        "nothing to change in the publication"));
            }
            var missing = columns.stream().filter(col -> !cols.contains(col)).toList();
            if (!missing.isEmpty()) {
                boolean inTable = PostgresPreflight.columns(c, t).containsAll(missing);
                return Optional.of(new Change("outbox table " + t + (inTable ? "'s entry in publication " + publication
                        + " lost column(s) " : " lost column(s) ") + String.join(", ", missing) + " that the router reads: its rows "
                        + "written since cannot be routed",
                        inTable ? "ALTER PUBLICATION " + publication + " SET TABLE " + t + " (" + String.join(", ", allNeeded(c, t, cols))
                                + ") (or without a column list)" : "add the column(s) back to " + t));
            }
        }
        return Optional.empty();
    }

    /** The slot's WAL is gone ({@code max_slot_wal_keep_size}): what it had not sent yet cannot be read again. */
    private Optional<Change> slot(Connection c) throws SQLException {
        try (var ps = c.prepareStatement("SELECT wal_status, pg_wal_lsn_diff(confirmed_flush_lsn, '0/0')::bigint "
                + "FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                if (rs.next() && "lost".equals(rs.getString(1))) {
                    long confirmed = rs.getLong(2);
                    return Optional.of(new Change(PostgresPreflight.invalidated(slot), PostgresPreflight.dropInvalidated(slot),
                            rs.wasNull() ? -1L : confirmed));
                }
            }
        }
        return Optional.empty();
    }

    /** Each published table of the publication with the columns it publishes (all of the table's without a column list). */
    private Map<String, Set<String>> publishedColumns(Connection c) throws SQLException {
        if (columnLists == null) {
            try (var st = c.createStatement(); var rs = st.executeQuery("SHOW server_version_num")) {
                rs.next();
                columnLists = Integer.parseInt(rs.getString(1)) >= 150000;
            }
        }
        var out = new HashMap<String, Set<String>>();
        try (var ps = c.prepareStatement(columnLists
                ? "SELECT schemaname || '.' || tablename, attnames::text[] FROM pg_publication_tables WHERE pubname = ?"
                : "SELECT schemaname || '.' || tablename, NULL::text[] FROM pg_publication_tables WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    var names = rs.getArray(2);
                    String table = rs.getString(1);
                    out.put(table, names == null ? PostgresPreflight.columns(c, table) : Set.of((String[]) names.getArray()));
                }
            }
        }
        return out;
    }

    /** The publication's column list for a table with the router's columns added. */
    private List<String> allNeeded(Connection c, String table, Set<String> listed) throws SQLException {
        var all = new ArrayList<String>();
        for (String col : PostgresPreflight.columns(c, table)) {
            if (listed.contains(col) || columns.contains(col)) {
                all.add(col);
            }
        }
        return all;
    }

    /** Whether the publication takes the table through its schema ({@code FOR TABLES IN SCHEMA}, Postgres 15+). */
    private boolean inSchemaPublication(Connection c, String table) throws SQLException {
        if (!columnLists) {
            return false;
        }
        try (var ps = c.prepareStatement("SELECT EXISTS (SELECT 1 FROM pg_publication_namespace pn "
                + "JOIN pg_publication p ON p.oid = pn.pnpubid JOIN pg_class r ON r.relnamespace = pn.pnnspid "
                + "WHERE p.pubname = ? AND r.oid = to_regclass(?))")) {
            ps.setString(1, publication);
            ps.setString(2, table);
            try (var rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    private static Long tableOid(Connection c, String table) throws SQLException {
        try (var ps = c.prepareStatement("SELECT to_regclass(?)::oid::bigint")) {
            ps.setString(1, table);
            try (var rs = ps.executeQuery()) {
                rs.next();
                long oid = rs.getLong(1);
                return rs.wasNull() ? null : oid;
            }
        }
    }
}
