package io.outboxrouter.cdc;

import io.outboxrouter.config.Shard;
import io.outboxrouter.config.SourceConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Postgres prerequisites, as checks: {@code check} reports them all; at start every failed one is named with its
 * fix at once, then the publication (only the outbox tables, plus the heartbeat table) and the heartbeat table are
 * created when missing. An existing publication is used as it is, never altered.
 */
final class PostgresPreflight {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresPreflight.class);

    private PostgresPreflight() {
    }

    /**
     * Checks every prerequisite, then creates the heartbeat table and the publication when missing.
     *
     * @param routerName the router's name; a shard's ({@code orders-shard-0-of-4}) names its heartbeat row
     * @param columns    the columns every outbox table must have
     * @param read       those and the columns read where a table has them: what a publication the router creates lists
     * @return a shard's row filter per outbox table (for its snapshot); empty when not sharded
     */
    static Map<String, String> run(String routerName, SourceConfig source, Collection<String> columns, Collection<String> read,
                                   String aggregateId) {
        var checks = checks(routerName, source, columns, read, aggregateId);
        checks.stream().filter(Check::warning).forEach(w -> LOG.warn("Router {}: {}: {}. Fix: {}", routerName, w.name(), w.detail(), w.fix()));
        var failed = checks.stream().filter(c -> !c.ok()).map(Check::problem).toList();
        if (!failed.isEmpty()) {
            throw new SourceSetupException("the source database is not set up for the router: " + String.join("; ", failed));
        }
        return create(routerName, source, read, aggregateId);
    }

    /**
     * Creates the heartbeat table and the publication(s) of the router's layout when missing, without checking first (a
     * re-shard creates the next layout while the earlier one still streams).
     *
     * @param columns the columns the router reads: on Postgres 15+ the publication lists only those (and the replica identity)
     * @return a shard's row filter per outbox table (for its snapshot); empty when not sharded
     */
    static Map<String, String> create(String routerName, SourceConfig source, Collection<String> columns, String aggregateId) {
        var conn = source.connection();
        var pg = source.postgres();
        try (Connection c = conn.open()) {
            if (pg.heartbeat()) {
                ensureHeartbeatTable(c, pg.heartbeatTable());
            }
            var lists = columnLists(c, source, columns);
            if (pg.shard() == null) {
                PostgresPublication.ensurePublication(c, pg.publication(), PostgresDdl.createPublication(pg.publication(), published(source),
                        anyPartitioned(c, published(source)), lists), published(source));
                return Map.of();
            }
            var filters = PostgresShards.shardFilters(c, source, aggregateId, new ArrayList<>());
            var shard = pg.shard();
            var layout = PostgresShards.Layout.of(source, routerName);
            try (var lock = layout.lock(c)) {
                // The first start of a layout creates every shard's publication (its slots follow, after the position check:
                // createLayoutSlots), so that all shards begin at the same point.
                boolean fresh = layout.existingSlots(c).isEmpty();
                for (int i = fresh ? 0 : shard.index(); i < (fresh ? pg.shards() : shard.index() + 1); i++) {
                    var each = new Shard(i, pg.shards());
                    var eachFilters = PostgresShards.shardFilters(c, source, aggregateId, new ArrayList<>(), each);
                    String publication = layout.publication(i);
                    PostgresPublication.ensurePublication(c, publication, PostgresDdl.createShardPublication(publication, eachFilters,
                            pg.heartbeat() ? pg.heartbeatTable() : null, layout.routerName(i), anyPartitioned(c, source.tables()), lists),
                            source.tables());
                }
            }
            return filters;
        } catch (SQLException e) {
            throw new SourceSetupException("cannot prepare the source database " + conn.redactedUrl() + ": " + e.getMessage(), e);
        }
    }

    /**
     * The column lists of the publication(s) the router creates. None beside a heartbeat table of an unsharded router:
     * its upserts need a publication of updates, where a list would have to cover the outbox's replica identity.
     */
    private static Map<String, List<String>> columnLists(Connection c, SourceConfig source, Collection<String> columns)
            throws SQLException {
        return source.postgres().heartbeat() && source.postgres().shard() == null ? Map.of() : ColumnLists.of(c, source.tables(), columns);
    }

    private static List<String> published(SourceConfig source) {
        var tables = new ArrayList<>(source.tables());
        if (source.postgres().heartbeat()) {
            tables.add(source.postgres().heartbeatTable());
        }
        return tables;
    }

    /**
     * Every prerequisite, checked; a connection failure is one failed check.
     *
     * @param columns the columns every outbox table must have
     * @param read    those and the ones read where a table has them: an existing column list must not leave them out
     */
    static List<Check> checks(String routerName, SourceConfig source, Collection<String> columns, Collection<String> read,
                              String aggregateId) {
        var conn = source.connection();
        var checks = new ArrayList<Check>();
        try (Connection c = conn.open()) {
            checks.add(Check.pass("source connection", "connected to " + conn.redactedUrl() + " as " + conn.user()));
            String level = scalar(c, "SHOW wal_level");
            checks.add("logical".equals(level) ? Check.pass("wal_level", "wal_level = logical")
                    : Check.fail("wal_level", "wal_level is " + level + ", logical decoding needs logical",
                    "ALTER SYSTEM SET wal_level = logical; then restart Postgres"));
            // Amazon RDS and Aurora give replication through membership in their rds_replication role instead of the attribute.
            boolean replication = "t".equals(scalar(c, "SELECT (r.rolreplication OR r.rolsuper OR EXISTS (SELECT 1 FROM pg_roles g "
                    + "WHERE g.rolname = 'rds_replication' AND pg_has_role(r.oid, g.oid, 'MEMBER')))::text::char FROM pg_roles r "
                    + "WHERE r.rolname = current_user"));
            boolean rds = "1".equals(scalar(c, "SELECT count(*)::text FROM pg_roles WHERE rolname = 'rds_replication'"));
            checks.add(replication ? Check.pass("replication privilege", conn.user() + " may replicate")
                    : Check.fail("replication privilege", conn.user() + (rds ? " is not a member of rds_replication"
                            : " lacks the REPLICATION attribute"),
                    rds ? "GRANT rds_replication TO " + conn.user() : "ALTER ROLE " + conn.user() + " WITH REPLICATION"));
            checks.add(slotCheck(c, source.postgres().slot()));
            checks.add(SlotFailover.check(c, source.postgres().slot()));
            for (String t : source.tables()) {
                var table = tableCheck(c, t);
                checks.add(table);
                if (table.ok()) {
                    checks.add(Check.columns(t, columns(c, t), columns));
                }
            }
            checks.add(PostgresShards.layoutCheck(c, source.postgres()));
            if (source.postgres().messages()) {
                checks.add(messagesCheck(c, source.postgres().messagePrefix()));
            }
            if (source.postgres().shard() == null) {
                checks.add(PostgresPublication.publicationCheck(c, source.postgres().publication(), source.postgres().slot(), published(source),
                        columnLists(c, source, columns)));
            } else {
                checks.addAll(PostgresShards.shardChecks(c, routerName, source, aggregateId, ColumnLists.of(c, source.tables(), columns)));
            }
            PostgresPublication.publishedRowsCheck(c, source.postgres().publication(), source.tables(), columns, read).ifPresent(checks::add);
        } catch (SQLException e) {
            checks.add(Check.connectionFailed(conn.redactedUrl(), e));
        }
        return checks;
    }

    /** pgoutput carries logical decoding messages from Postgres 14 on. */
    private static Check messagesCheck(Connection c, String prefix) throws SQLException {
        return PostgresVersion.atLeast(c, PostgresVersion.MESSAGES) ? Check.pass("messages", "logical decoding messages with prefix " + prefix + " are routed")
                : Check.fail("messages", "logical decoding messages reach the router through pgoutput from Postgres 14 on; this "
                + "server is " + PostgresVersion.describe(c), "upgrade Postgres, or use an outbox table (remove "
                + "source.postgres.messages.prefix)");
    }

    private static Check slotCheck(Connection c, String slot) throws SQLException {
        try (var ps = c.prepareStatement("SELECT active, pg_size_pretty(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)), "
                + "wal_status FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                if (rs.next()) {
                    String status = rs.getString(3);
                    if ("lost".equals(status)) {
                        return Check.fail("replication slot", invalidated(slot), dropInvalidated(slot));
                    }
                    return Check.pass("replication slot", "slot " + slot + " exists (" + (rs.getBoolean(1) ? "in use" : "idle")
                            + ", retaining " + rs.getString(2) + " of WAL" + ("unreserved".equals(status) ? "; wal_status "
                            + "unreserved: past max_slot_wal_keep_size, the server invalidates it at its next checkpoint" : "") + ")");
                }
            }
        }
        int max = Integer.parseInt(scalar(c, "SHOW max_replication_slots"));
        int used = Integer.parseInt(scalar(c, "SELECT count(*)::text FROM pg_replication_slots"));
        return used < max ? Check.pass("replication slot", "slot " + slot + " will be created on first start (" + used + " of "
                + max + " slots used)")
                : Check.fail("replication slot", "all " + max + " replication slots are in use and slot " + slot + " does not exist",
                "raise max_replication_slots (restart needed) or drop an unused slot");
    }

    /**
     * The table as the configuration names it: it must exist under exactly that name, since changes arrive under the name
     * Postgres keeps (unquoted names are folded to lower case), and a change from a table of another name is not routed.
     */
    private static Check tableCheck(Connection c, String table) throws SQLException {
        String name = "outbox table " + table;
        var found = describe(c, "SELECT c.relkind::text, has_table_privilege(c.oid, 'SELECT'), n.nspname || '.' || c.relname "
                + "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ?", table, true);
        if (found == null) {
            var folded = describe(c, "SELECT c.relkind::text, false, n.nspname || '.' || c.relname FROM pg_class c "
                    + "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(?)", table, false);
            return folded == null
                    ? Check.fail(name, "outbox table " + table + " does not exist (source.tables)",
                            "`java -jar outbox-router.jar schema --config ...` prints the DDL")
                    : Check.fail(name, "source.tables names " + table + ", but the table is called " + folded[2]
                                    + " (Postgres folds unquoted names to lower case): its changes would arrive under that name and not be routed",
                            "name it as the database does: source.tables: [" + folded[2] + "]");
        }
        if (!"t".equals(found[1])) {
            return Check.fail(name, "no SELECT privilege on " + table, "GRANT SELECT ON " + table + " TO <router role>");
        }
        return Check.pass(name, "p".equals(found[0]) ? "exists (partitioned: published through its root), SELECT granted"
                : "exists, SELECT granted");
    }

    /** relkind, SELECT privilege (t/f) and the qualified name of a table, or null when there is none. */
    private static String[] describe(Connection c, String sql, String table, boolean byParts) throws SQLException {
        try (var ps = c.prepareStatement(sql)) {
            if (byParts) {
                int dot = table.indexOf('.');
                ps.setString(1, table.substring(0, dot));
                ps.setString(2, table.substring(dot + 1));
            } else {
                ps.setString(1, table);
            }
            try (var rs = ps.executeQuery()) {
                return rs.next() ? new String[] {rs.getString(1), rs.getBoolean(2) ? "t" : "f", rs.getString(3)} : null;
            }
        }
    }

    /** The columns of a table, as Postgres names them; empty when there is no such table. */
    static Set<String> columns(Connection c, String table) throws SQLException {
        var columns = new LinkedHashSet<String>();
        try (var ps = c.prepareStatement("SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(?) AND attnum > 0 "
                + "AND NOT attisdropped ORDER BY attnum")) {
            ps.setString(1, table);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    columns.add(rs.getString(1));
                }
            }
        }
        return columns;
    }

    /** Whether any of the tables is partitioned: its changes then arrive under the root only through such a publication. */
    static boolean anyPartitioned(Connection c, List<String> tables) throws SQLException {
        for (String t : tables) {
            var found = describe(c, "SELECT c.relkind::text, false, '' FROM pg_class c WHERE c.oid = to_regclass(?)", t, false);
            if (found != null && "p".equals(found[0])) {
                return true;
            }
        }
        return false;
    }

    /**
     * A slot decodes each change with the catalog as it was when the change was written: with a publication created now,
     * pgoutput fails on everything written before ("publication does not exist") and the connector restarts for ever.
     * So the router never creates one behind a slot (it creates the publication before the slot).
     */
    static Check missingBehindSlot(String publication, String slot) {
        return Check.fail("publication", "publication " + publication + " is missing while slot " + slot + " exists (dropped "
                + "behind the router's back?): the slot cannot decode what was written before a publication created now",
                "drop the slot (SELECT pg_drop_replication_slot('" + slot + "')) and " + START_AFRESH);
    }

    /** A slot whose WAL the server removed ({@code wal_status = lost}): Debezium would retry it for half an hour. */
    static String invalidated(String slot) {
        return "replication slot " + slot + " was invalidated by the server (wal_status lost: it fell behind by more than "
                + "max_slot_wal_keep_size, or its WAL was removed otherwise): the changes it had not sent are gone from it";
    }

    /** The fix for {@link #invalidated}: a new slot, and the rows it lacks published again. */
    static String dropInvalidated(String slot) {
        return "drop the slot (SELECT pg_drop_replication_slot('" + slot + "')), then start once with run --accept-gap, which "
                + "creates a new slot at the current WAL position; raise max_slot_wal_keep_size (or set it to -1) so that a "
                + "router that falls behind is not cut off again";
    }

    /** How to go on once a slot cannot decode its WAL any more: what follows dropping it (and a replaced publication). */
    static final String START_AFRESH = "start once with run --accept-gap, which creates the publication, then the slot; then "
            + "publish what was committed since the router's stored position with replay --since <the time offsets show prints "
            + "as updated>";

    /** Creates a slot, a failover slot from Postgres 17 on; returns where it starts (its confirmed position). */
    static String createSlot(Connection c, String slot) throws SQLException {
        try (var ps = c.prepareStatement(SlotFailover.supported(c)
                ? "SELECT lsn::text FROM pg_create_logical_replication_slot(?, 'pgoutput', false, false, true)"
                : "SELECT lsn::text FROM pg_create_logical_replication_slot(?, 'pgoutput')")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                rs.next();
                LOG.info("Created replication slot {} at {}", slot, rs.getString(1));
                return rs.getString(1);
            }
        } catch (SQLException e) {
            if (!"42710".equals(e.getSQLState())) {
                throw e;
            }
            LOG.info("Replication slot {} exists already", slot);
        }
        try (var ps = c.prepareStatement("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    static String scalar(Connection c, String sql) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    private static void ensureHeartbeatTable(Connection c, String table) throws SQLException {
        try (var ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, table);
            try (var rs = ps.executeQuery()) {
                if (rs.next() && rs.getBoolean(1)) {
                    return;
                }
            }
        }
        try (var st = c.createStatement()) {
            st.execute(PostgresDdl.heartbeatTable(table));
        } catch (SQLException e) {
            if ("23505".equals(e.getSQLState()) || "42P07".equals(e.getSQLState())) {
                return; // created meanwhile by another shard's process
            }
            throw new SourceSetupException("cannot create the heartbeat table " + table + " (" + e.getMessage()
                    + "); create it: " + PostgresDdl.heartbeatTable(table), e);
        }
    }

    static boolean slotExists(Connection c, String slot) throws SQLException {
        try (var ps = c.prepareStatement("SELECT 1 FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

}
