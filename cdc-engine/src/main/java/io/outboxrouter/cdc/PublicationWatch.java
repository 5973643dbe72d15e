package io.outboxrouter.cdc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What a running Postgres router depends on in the catalog, compared with what it was when streaming began: the
 * publication (the same one, still publishing inserts), each outbox table (the same table, still in the publication,
 * with every column the router reads) and the slot (not invalidated). pgoutput decides what a slot sends when it decodes
 * each change, with the catalog as it was then, so a row written while any of these is off is never sent, even after a
 * fix.
 *
 * <p>Each look first reads the oldest transaction id still running, then the catalog: every transaction that commits
 * after a look that found everything in order has an id at or above it. That bounds what a later change may have lost
 * ({@code replay --from-xid}).
 */
final class PublicationWatch {

    /**
     * What changed, what it means and the fix (up to the start that accepts the loss).
     *
     * @param lostAfterLsn when the fix drops the slot, its confirmed position (what committed after it is lost); else null
     */
    record Change(String problem, String fix, Long lostAfterLsn) {
        Change(String problem, String fix) {
            this(problem, fix, null);
        }
    }

    /**
     * One look: the oldest running xid and the WAL insert position at that moment, and what changed.
     *
     * @param clean        whether everything was found in order (a look that could not tell, e.g. no publication yet, is not)
     * @param confirmedLsn the slot's confirmed position; null without a slot
     */
    record Look(long oldestXid, long walLsn, long atNanos, Optional<Change> change, boolean clean, Long confirmedLsn) {
    }

    /**
     * The catalog a look found in order, kept in the offsets table between runs: the publication's and each table's oid,
     * and the oldest transaction id running then (every transaction committed after it has an id at or above it).
     */
    record Kept(Long publication, Map<String, Long> tables, long xid, long walLsn) {
    }

    private final String publication;
    private final String slot;
    private final List<String> tables;
    private final Collection<String> columns;
    /** The publication's and each table's oid when streaming began; a publication created after that is taken when first seen. */
    private Long publicationOid;
    private final Map<String, Long> oids = new HashMap<>();

    PublicationWatch(String publication, String slot, List<String> tables, Collection<String> columns) {
        this.publication = publication;
        this.slot = slot;
        this.tables = tables;
        this.columns = columns;
    }

    /** Takes the catalog as it is now as the one streaming began with. */
    void baseline(Connection c) throws SQLException {
        publicationOid = publication(c).map(Publication::oid).orElse(null);
        oids.clear();
        for (String t : tables) {
            var oid = tableOid(c, t);
            if (oid != null) {
                oids.put(t, oid);
            }
        }
    }

    /** Takes a catalog kept by an earlier run as the one to compare with (a change made while no router streamed). */
    void baseline(Kept kept) {
        publicationOid = kept.publication();
        oids.clear();
        oids.putAll(kept.tables());
    }

    /** Whether the publication or an outbox table is another one than in the baseline (dropped and created again). */
    boolean replacedSince(Connection c) throws SQLException {
        var pub = publication(c);
        if (publicationOid != null && pub.isPresent() && !pub.get().oid().equals(publicationOid)) {
            return true;
        }
        for (var kept : oids.entrySet()) {
            Long now = tableOid(c, kept.getKey());
            if (now != null && !now.equals(kept.getValue())) {
                return true;
            }
        }
        return false;
    }

    /** What to keep of a look that found everything in order. */
    Kept kept(Look look) {
        return new Kept(publicationOid, Map.copyOf(oids), look.oldestXid(), look.walLsn());
    }

    Look look(Connection c) throws SQLException {
        long xid;
        long lsn;
        try (var st = c.createStatement();
             var rs = st.executeQuery("SELECT txid_snapshot_xmin(txid_current_snapshot()), "
                     + "pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint")) {
            rs.next();
            xid = rs.getLong(1);
            lsn = rs.getLong(2);
        }
        long at = System.nanoTime();
        var slotState = slot(c);
        if (slotState.lost()) {
            return new Look(xid, lsn, at, Optional.of(new Change(PostgresPreflight.invalidated(slot), PostgresPreflight.dropInvalidated(slot),
                    slotState.confirmed())), false, slotState.confirmed());
        }
        var pub = publication(c);
        if (publicationOid == null) {
            publicationOid = pub.map(Publication::oid).orElse(null); // a first start creates it after streaming began
            return new Look(xid, lsn, at, Optional.empty(), publicationOid != null && tablesChange(c, pub.get()).isEmpty(),
                    slotState.confirmed());
        }
        if (pub.isEmpty() || !pub.get().oid().equals(publicationOid)) {
            return new Look(xid, lsn, at, Optional.of(publicationReplaced(pub.isPresent(), slotState.confirmed())), false,
                    slotState.confirmed());
        }
        var change = tablesChange(c, pub.get());
        return new Look(xid, lsn, at, change, change.isEmpty(), slotState.confirmed());
    }

    private Change publicationReplaced(boolean createdAgain, Long confirmed) {
        return new Change("publication " + publication + " was dropped" + (createdAgain ? " and created again" : "") + ": slot " + slot
                + " cannot decode the changes written since (pgoutput looks the publication up as it was when each change was "
                + "written), so the router stops rather than go past them",
                "drop the slot (SELECT pg_drop_replication_slot('" + slot + "'))" + (createdAgain ? " and the new publication (DROP "
                        + "PUBLICATION " + publication + ")" : "") + ", then start once with run --accept-gap, which creates the "
                        + "publication, then the slot", confirmed == null ? -1L : confirmed);
    }

    private Optional<Change> tablesChange(Connection c, Publication pub) throws SQLException {
        if (!tables.isEmpty() && !pub.inserts()) {
            return Optional.of(new Change("publication " + publication + " no longer publishes inserts (its publish option was "
                    + "changed), so slot " + slot + " sends no outbox row written since",
                    "ALTER PUBLICATION " + publication + " SET (publish = 'insert')"));
        }
        for (String t : tables) {
            Long oid = tableOid(c, t);
            if (oid == null) {
                return Optional.of(new Change("outbox table " + t + " was dropped", "create it again, add it to the publication "
                        + "(ALTER PUBLICATION " + publication + " ADD TABLE " + t + ")"));
            }
            Long before = oids.putIfAbsent(t, oid);
            before = before == null ? oid : before;
            var published = publishedColumns(c, pub, oid);
            if (published.isEmpty()) {
                return Optional.of(new Change("outbox table " + t + (before.equals(oid) ? " was removed from publication "
                        + publication : " was dropped and created again (a table is published by its identity, so the new "
                        + "one is not in publication " + publication + ")") + ": slot " + slot + " sends none of its rows",
                        "ALTER PUBLICATION " + publication + " ADD TABLE " + t));
            }
            if (!before.equals(oid) && !pub.allTables() && !inSchema(c, pub, oid)) {
                return Optional.of(new Change("outbox table " + t + " was dropped and created again, then added to publication "
                        + publication + " again: rows written between the two were not in the publication and are not published",
                        "nothing to change in the publication"));
            }
            var cols = published.get();
            var missing = columns.stream().filter(col -> !cols.contains(col)).toList();
            if (!missing.isEmpty()) {
                var inTable = PostgresPreflight.columns(c, t);
                if (!inTable.containsAll(missing)) {
                    return Optional.of(new Change("outbox table " + t + " lost column(s) " + String.join(", ", missing) + " that the "
                            + "router reads: its rows written since cannot be routed", "add the column(s) back to " + t));
                }
                var list = new LinkedHashSet<String>();
                inTable.stream().filter(col -> cols.contains(col) || columns.contains(col)).forEach(list::add);
                return Optional.of(new Change("the entry of outbox table " + t + " in publication " + publication + " lost column(s) "
                        + String.join(", ", missing) + " that the router reads: its rows written since cannot be routed",
                        ColumnLists.fix(c, publication, t, List.copyOf(list))));
            }
        }
        return Optional.empty();
    }

    private record Publication(Long oid, boolean inserts, boolean allTables) {
    }

    private Optional<Publication> publication(Connection c) throws SQLException {
        try (var ps = c.prepareStatement("SELECT oid::bigint, pubinsert, puballtables FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(new Publication(rs.getLong(1), rs.getBoolean(2), rs.getBoolean(3))) : Optional.empty();
            }
        }
    }

    private record SlotState(boolean lost, Long confirmed) {
    }

    /** Whether the slot's WAL is gone ({@code max_slot_wal_keep_size}), and its confirmed position. */
    private SlotState slot(Connection c) throws SQLException {
        try (var ps = c.prepareStatement("SELECT wal_status, pg_wal_lsn_diff(confirmed_flush_lsn, '0/0')::bigint "
                + "FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new SlotState(false, null);
                }
                String status = rs.getString(1);
                long confirmed = rs.getLong(2);
                return new SlotState("lost".equals(status), rs.wasNull() ? null : confirmed);
            }
        }
    }

    /**
     * The columns the publication publishes of a table (all of them without a column list), or empty when it does not
     * publish the table. Reads only this table's entries, however many tables the publication holds.
     */
    private Optional<Set<String>> publishedColumns(Connection c, Publication pub, long table) throws SQLException {
        if (pub.allTables() || inSchema(c, pub, table)) {
            return Optional.of(attributes(c, table, null));
        }
        boolean lists = columnLists(c);
        try (var ps = c.prepareStatement(lists
                ? "SELECT prattrs::text FROM pg_publication_rel WHERE prpubid = ? AND prrelid = ?"
                : "SELECT NULL FROM pg_publication_rel WHERE prpubid = ? AND prrelid = ?")) {
            ps.setLong(1, pub.oid());
            ps.setLong(2, table);
            try (var rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(attributes(c, table, rs.getString(1))) : Optional.empty();
            }
        }
    }

    /** A table's column names; with {@code attnums} (an int2vector as text, "1 2 5"), only those. */
    private static Set<String> attributes(Connection c, long table, String attnums) throws SQLException {
        var names = new LinkedHashSet<String>();
        try (var ps = c.prepareStatement("SELECT attname, attnum FROM pg_attribute WHERE attrelid = ? AND attnum > 0 AND NOT attisdropped")) {
            ps.setLong(1, table);
            var wanted = attnums == null || attnums.isBlank() ? null : Set.of(attnums.trim().split("\\s+"));
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (wanted == null || wanted.contains(Integer.toString(rs.getInt(2)))) {
                        names.add(rs.getString(1));
                    }
                }
            }
        }
        return names;
    }

    private Boolean columnLists;

    /** Column lists ({@code prattrs}) and schema publications exist from Postgres 15 on. */
    private boolean columnLists(Connection c) throws SQLException {
        if (columnLists == null) {
            columnLists = PostgresVersion.atLeast(c, PostgresVersion.COLUMN_LISTS);
        }
        return columnLists;
    }

    /** Whether the publication takes the table through its schema ({@code FOR TABLES IN SCHEMA}). */
    private boolean inSchema(Connection c, Publication pub, long table) throws SQLException {
        if (!columnLists(c)) {
            return false;
        }
        try (var ps = c.prepareStatement("SELECT EXISTS (SELECT 1 FROM pg_publication_namespace pn JOIN pg_class r "
                + "ON r.relnamespace = pn.pnnspid WHERE pn.pnpubid = ? AND r.oid = ?)")) {
            ps.setLong(1, pub.oid());
            ps.setLong(2, table);
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
