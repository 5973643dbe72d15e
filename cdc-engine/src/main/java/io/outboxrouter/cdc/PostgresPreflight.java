package io.outboxrouter.cdc;

import io.outboxrouter.config.Shard;
import io.outboxrouter.config.SourceConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
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
                ensurePublication(c, pg.publication(), PostgresDdl.createPublication(pg.publication(), published(source),
                        anyPartitioned(c, published(source)), lists), published(source));
                return Map.of();
            }
            var filters = shardFilters(c, source, aggregateId, new ArrayList<>());
            var shard = pg.shard();
            var layout = Layout.of(source, routerName);
            try (var lock = layout.lock(c)) {
                // The first start of a layout creates every shard's publication (its slots follow, after the position check:
                // createLayoutSlots), so that all shards begin at the same point.
                boolean fresh = layout.existingSlots(c).isEmpty();
                for (int i = fresh ? 0 : shard.index(); i < (fresh ? pg.shards() : shard.index() + 1); i++) {
                    var each = new Shard(i, pg.shards());
                    var eachFilters = shardFilters(c, source, aggregateId, new ArrayList<>(), each);
                    String publication = layout.publication(i);
                    ensurePublication(c, publication, PostgresDdl.createShardPublication(publication, eachFilters,
                            pg.heartbeat() ? pg.heartbeatTable() : null, layout.routerName(i), anyPartitioned(c, source.tables()), lists),
                            source.tables());
                }
            }
            return filters;
        } catch (SQLException e) {
            throw new SourceSetupException("cannot prepare the source database " + conn.url() + ": " + e.getMessage(), e);
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
            checks.add(Check.pass("source connection", "connected to " + conn.url() + " as " + conn.user()));
            String level = scalar(c, "SHOW wal_level");
            checks.add("logical".equals(level) ? Check.pass("wal_level", "wal_level = logical")
                    : Check.fail("wal_level", "wal_level is " + level + ", logical decoding needs logical",
                    "ALTER SYSTEM SET wal_level = logical; then restart Postgres"));
            boolean replication = "t".equals(scalar(c, "SELECT (rolreplication OR rolsuper)::text::char FROM pg_roles WHERE rolname = current_user"));
            checks.add(replication ? Check.pass("replication privilege", conn.user() + " may replicate")
                    : Check.fail("replication privilege", conn.user() + " lacks the REPLICATION attribute",
                    "ALTER ROLE " + conn.user() + " WITH REPLICATION"));
            checks.add(slotCheck(c, source.postgres().slot()));
            checks.add(SlotFailover.check(c, source.postgres().slot()));
            for (String t : source.tables()) {
                var table = tableCheck(c, t);
                checks.add(table);
                if (table.ok()) {
                    checks.add(Check.columns(t, columns(c, t), columns));
                }
            }
            checks.add(layoutCheck(c, source.postgres()));
            if (source.postgres().messages()) {
                checks.add(messagesCheck(c, source.postgres().messagePrefix()));
            }
            if (source.postgres().shard() == null) {
                checks.add(publicationCheck(c, source.postgres().publication(), source.postgres().slot(), published(source),
                        columnLists(c, source, columns)));
            } else {
                checks.addAll(shardChecks(c, routerName, source, aggregateId, ColumnLists.of(c, source.tables(), columns)));
            }
            publishedRowsCheck(c, source.postgres().publication(), source.tables(), columns, read).ifPresent(checks::add);
        } catch (SQLException e) {
            checks.add(Check.connectionFailed(conn.url(), e));
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
    private static boolean anyPartitioned(Connection c, List<String> tables) throws SQLException {
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
    private static Check missingBehindSlot(String publication, String slot) {
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

    private static Check publicationCheck(Connection c, String publication, String slot, List<String> tables,
                                          Map<String, List<String>> columnLists) throws SQLException {
        var published = publishedTables(c, publication);
        boolean partitioned = anyPartitioned(c, tables);
        String create = PostgresDdl.createPublication(publication, tables, partitioned, columnLists);
        if (published.isEmpty() && slotExists(c, slot)) {
            return missingBehindSlot(publication, slot);
        }
        if (published.isEmpty()) {
            return Check.pass("publication", "publication " + publication + " will be created on first start (" + create
                    + "; this needs ownership of the tables, else run it as their owner)");
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
     * The slots of this router's other shard layouts (unsharded, or another number of shards): they hold what was
     * committed since that layout last stored its position, which this layout's slots do not have.
     */
    private static Check layoutCheck(Connection c, SourceConfig.PostgresSource pg) throws SQLException {
        var foreign = otherLayouts(c, pg).values().stream().flatMap(List::stream).toList();
        String now = pg.shards() == 1 ? "not sharded" : pg.shards() + " shards";
        if (foreign.isEmpty()) {
            return Check.pass("shard layout", "no slots of another shard layout (" + now + ")");
        }
        String drop = String.join("; ", foreign.stream().map(f -> "SELECT pg_drop_replication_slot('" + f + "')").toList());
        return Check.fail("shard layout", "replication slot" + (foreign.size() == 1 ? " " : "s ") + String.join(", ", foreign)
                        + " of this router's earlier shard layout exist, and the router is now " + now + " (source.postgres.shards): "
                        + "what was committed since that layout last stored its position is only in " + (foreign.size() == 1 ? "that slot" : "those slots"),
                "move the events over with `java -jar outbox-router.jar reshard --config <file>` (writers may go on writing: it "
                        + "creates this layout's slots, runs the earlier layout until it has published everything committed before "
                        + "they began, then drops its slots), then start the router; or go back to the earlier layout. To drop "
                        + "the earlier layout and what only it holds instead: " + drop);
    }

    /**
     * An existing publication must publish the outbox tables' inserts with every column the router reads (a Postgres 15+
     * column list may leave some out): else each row would reach the router without them, or not at all.
     */
    private static Optional<Check> publishedRowsCheck(Connection c, String publication, List<String> tables, Collection<String> required,
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
                    var inTable = columns(c, t);
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

    /** The slots of this router's other shard layouts (1: unsharded), by their number of shards. */
    static Map<Integer, List<String>> otherLayouts(Connection c, SourceConfig.PostgresSource pg) throws SQLException {
        String base = pg.shard() == null ? pg.slot() : pg.slot().substring(0, pg.slot().length() - pg.shard().suffix().length());
        var layout = Pattern.compile(Pattern.quote(base) + "(?:_shard_(\\d+)_of_(\\d+))?");
        var foreign = new java.util.TreeMap<Integer, List<String>>();
        try (var ps = c.prepareStatement("SELECT slot_name FROM pg_replication_slots WHERE left(slot_name, length(?)) = ? ORDER BY slot_name")) {
            ps.setString(1, base);
            ps.setString(2, base);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    var m = layout.matcher(rs.getString(1));
                    int count = !m.matches() ? -1 : m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
                    if (count > 0 && count != pg.shards()) {
                        foreign.computeIfAbsent(count, k -> new ArrayList<>()).add(rs.getString(1));
                    }
                }
            }
        }
        return foreign;
    }

    /** A shard's prerequisites: Postgres 15+ (row filters), an aggregate id Postgres can hash, its own publication. */
    private static List<Check> shardChecks(Connection c, String routerName, SourceConfig source, String aggregateId,
                                           Map<String, List<String>> columnLists) throws SQLException {
        var checks = new ArrayList<Check>();
        var pg = source.postgres();
        if (!PostgresVersion.atLeast(c, PostgresVersion.COLUMN_LISTS)) {
            checks.add(Check.fail("shards", "shards need Postgres 15 or later (publication row filters); this server is "
                    + PostgresVersion.describe(c), "remove source.postgres.shards and source.postgres.shard"));
            return checks;
        }
        int senders = Integer.parseInt(scalar(c, "SHOW max_wal_senders"));
        if (senders < pg.shards()) {
            checks.add(Check.fail("shards", "each of the " + pg.shards() + " shards streams through a WAL sender of its own, and "
                    + "max_wal_senders is " + senders, "raise max_wal_senders (restart needed) to at least " + pg.shards()
                    + " plus the server's other replication connections"));
        }
        var problems = new ArrayList<Check>();
        var filters = shardFilters(c, source, aggregateId, problems);
        checks.addAll(problems);
        if (!problems.isEmpty()) {
            return checks;
        }
        String create = PostgresDdl.createShardPublication(pg.publication(), filters, pg.heartbeat() ? pg.heartbeatTable() : null,
                routerName, anyPartitioned(c, source.tables()), columnLists);
        var published = rowFilters(c, pg.publication());
        if (published.isEmpty() && slotExists(c, pg.slot())) {
            checks.add(missingBehindSlot(pg.publication(), pg.slot()));
            return checks;
        }
        if (published.isEmpty()) {
            checks.add(Check.pass("publication", "publication " + pg.publication() + " will be created on first start (" + create
                    + "; this needs ownership of the tables, else run it as their owner)"));
            return checks;
        }
        var wrong = new ArrayList<String>();
        try (var ps = c.prepareStatement("SELECT pubupdate OR pubdelete OR pubtruncate FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, pg.publication());
            try (var rs = ps.executeQuery()) {
                if (rs.next() && rs.getBoolean(1)) {
                    wrong.add("it publishes more than inserts (then Postgres refuses UPDATE and DELETE on the outbox tables)");
                }
            }
        }
        var expected = new LinkedHashMap<>(filters);
        if (pg.heartbeat()) {
            expected.put(pg.heartbeatTable(), "router_name = '" + routerName + "'");
        }
        expected.forEach((table, filter) -> {
            if (!published.get().containsKey(table)) {
                wrong.add("it does not publish " + table);
            } else if (!normalized(filter).equals(normalized(published.get().get(table)))) {
                wrong.add("it filters " + table + " by " + published.get().get(table) + ", not by " + filter);
            }
        });
        checks.add(wrong.isEmpty() ? Check.pass("publication", "publication " + pg.publication() + " publishes " + routerName
                        + "'s rows of " + String.join(", ", expected.keySet()))
                : Check.fail("publication", "publication " + pg.publication() + " is not " + routerName + "'s: "
                        + String.join("; ", wrong) + ", so events would be missed or published twice",
                PostgresDdl.alterShardPublication(pg.publication(), filters, pg.heartbeat() ? pg.heartbeatTable() : null, routerName,
                        anyPartitioned(c, source.tables()), columnLists)));
        return checks;
    }

    /** A row filter as text, without what Postgres adds when it prints one back: parentheses, spaces, casts to text. */
    private static String normalized(String filter) {
        return filter == null ? "" : filter.replace("::text", "").replaceAll("[()\\s]", "");
    }

    /**
     * The row filter of each outbox table for this shard, by its aggregate id column's type; a failed check for each table
     * whose aggregate id Postgres cannot hash in a row filter.
     */
    private static Map<String, String> shardFilters(Connection c, SourceConfig source, String aggregateId, List<Check> problems)
            throws SQLException {
        return shardFilters(c, source, aggregateId, problems, source.postgres().shard());
    }

    private static Map<String, String> shardFilters(Connection c, SourceConfig source, String aggregateId, List<Check> problems,
                                                    Shard shard) throws SQLException {
        var filters = new LinkedHashMap<String, String>();
        String firstFunction = null;
        for (String table : source.tables()) {
            String type;
            try (var ps = c.prepareStatement("SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = to_regclass(?) "
                    + "AND attname = ? AND NOT attisdropped")) {
                ps.setString(1, table);
                ps.setString(2, aggregateId);
                try (var rs = ps.executeQuery()) {
                    type = rs.next() ? rs.getString(1) : null;
                }
            }
            if (type == null) {
                continue; // the table check names the missing table or column
            }
            String hash = PostgresDdl.aggregateHash(aggregateId, type);
            String function = hash == null ? null : hash.substring(0, hash.indexOf('('));
            if (function != null && firstFunction == null) {
                firstFunction = function;
            }
            String other = firstFunction;
            if (function != null && !function.equals(other)) {
                // One aggregate's events in two tables must land in one shard, or two streams would publish its key.
                problems.add(Check.fail("shards", "the aggregate id column " + aggregateId + " of " + table + " is " + type + " ("
                        + function + "), while another outbox table's hashes with " + other + ": one aggregate's events in both "
                        + "would land in two shards", "give the outbox tables' aggregate id columns one type, or shard them with "
                        + "one router each"));
            } else if (hash == null) {
                problems.add(Check.fail("shards", "the aggregate id column " + aggregateId + " of " + table + " is " + type
                        + ", which a publication's row filter cannot hash", "shard an outbox whose aggregate id is text, varchar, "
                        + "uuid or an integer type, or remove source.postgres.shards"));
            } else {
                filters.put(table, PostgresDdl.shardFilter(hash, shard));
            }
        }
        return filters;
    }

    /** The tables a publication publishes with their row filters (null: none), or empty when there is no such publication. */
    private static Optional<Map<String, String>> rowFilters(Connection c, String publication) throws SQLException {
        if (publishedTables(c, publication).isEmpty()) {
            return Optional.empty();
        }
        var filters = new HashMap<String, String>();
        try (var ps = c.prepareStatement("SELECT schemaname || '.' || tablename, rowfilter FROM pg_publication_tables WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    filters.put(rs.getString(1), rs.getString(2));
                }
            }
        }
        return Optional.of(filters);
    }

    /**
     * After the position check, on a layout's first start: creates every shard's slot at once, so that a shard whose process
     * starts later misses nothing committed meanwhile. Only when no slot of the layout exists and no shard of it ever stored
     * a position (a layout whose slots are gone is drift, refused shard by shard, never quietly re-created here).
     *
     * @param storedBefore whether the shard of this name stored a position, or was reset, before
     */
    static void createLayoutSlots(String routerName, SourceConfig source, Predicate<String> storedBefore) {
        var pg = source.postgres();
        var layout = Layout.of(source, routerName);
        try (Connection c = source.connection().open(); var lock = layout.lock(c)) {
            if (!layout.existingSlots(c).isEmpty()) {
                return;
            }
            for (int i = 0; i < pg.shards(); i++) {
                if (storedBefore.test(layout.routerName(i))) {
                    return;
                }
            }
            int max = Integer.parseInt(scalar(c, "SHOW max_replication_slots"));
            int used = Integer.parseInt(scalar(c, "SELECT count(*)::text FROM pg_replication_slots"));
            if (max - used < pg.shards()) {
                throw new SourceSetupException("the " + pg.shards() + " shards need " + pg.shards() + " replication slots, and "
                        + (max - used) + " of max_replication_slots = " + max + " are free; fix: raise max_replication_slots "
                        + "(restart needed) or drop unused slots");
            }
            startTogether(c, layout, pg.shards());
        } catch (SQLException e) {
            throw new SourceSetupException("cannot create the shards' replication slots on " + source.connection().url() + ": "
                    + e.getMessage(), e);
        }
    }

    /** A lock held until closed. */
    interface Held extends AutoCloseable {
        @Override
        void close() throws SQLException;
    }

    /** The names of one shard layout (a router's N shards), and a lock that keeps two processes from setting it up at once. */
    record Layout(String slot, String publication, String routerName, int count) {
        static Layout of(SourceConfig source, String shardName) {
            var pg = source.postgres();
            int cut = pg.shard().suffix().length();
            return new Layout(pg.slot().substring(0, pg.slot().length() - cut), pg.publication().substring(0, pg.publication().length() - cut),
                    shardName.substring(0, shardName.length() - pg.shard().routerName("").length()), pg.shards());
        }

        String slot(int i) {
            return slot + Shard.suffix(i, count);
        }

        String publication(int i) {
            return publication + Shard.suffix(i, count);
        }

        String routerName(int i) {
            return Shard.routerName(routerName, i, count);
        }

        /** The layout's slots that exist. */
        List<String> existingSlots(Connection c) throws SQLException {
            var found = new ArrayList<String>();
            try (var ps = c.prepareStatement("SELECT slot_name FROM pg_replication_slots WHERE slot_name = ANY (?) ORDER BY slot_name")) {
                ps.setArray(1, c.createArrayOf("text", IntStream.range(0, count).mapToObj(this::slot).toArray()));
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        found.add(rs.getString(1));
                    }
                }
            }
            return found;
        }

        /**
         * A session advisory lock on the layout (two int keys: a space apart from the router locks' bigint keys), held until
         * closed: the shards' processes set the layout up, and look at it, one at a time.
         */
        Held lock(Connection c) throws SQLException {
            try (var ps = c.prepareStatement("SELECT pg_advisory_lock(hashtext('outbox-router-layout'), hashtext(?))")) {
                ps.setString(1, slot);
                ps.execute();
            }
            return () -> {
                try (var ps = c.prepareStatement("SELECT pg_advisory_unlock(hashtext('outbox-router-layout'), hashtext(?))")) {
                    ps.setString(1, slot);
                    ps.execute();
                }
            };
        }
    }

    /**
     * Creates every shard's slot, then moves each to the last one's starting point. A slot starts once every transaction
     * running at its creation has ended, so under long transactions the slots start seconds apart, and a transaction
     * committed in between would reach the later shards' slots only: published in part. From one common point on, every
     * transaction reaches all of them or none. What committed while they were created is in none: the log says so, with
     * the replay that publishes it.
     */
    private static void startTogether(Connection c, Layout layout, int shards) throws SQLException {
        String snapshot = "SELECT txid_snapshot_xmin(s)::text || ' ' || txid_snapshot_xmax(s)::text FROM txid_current_snapshot() s";
        String[] before = scalar(c, snapshot).split(" ");
        var starts = new ArrayList<String>();
        for (int i = 0; i < shards; i++) {
            starts.add(createSlot(c, layout.slot(i)));
        }
        String first = starts.stream().min(PostgresPreflight::compareLsn).orElseThrow();
        String last = starts.stream().max(PostgresPreflight::compareLsn).orElseThrow();
        // No transaction id given out meanwhile: nothing that writes began, so nothing committed between the slots' starts.
        boolean quiet = scalar(c, snapshot).split(" ")[1].equals(before[1]);
        long oldestRunning = Long.parseLong(before[0]);
        advance(c, layout, shards, starts, last);
        if (first.equals(last) || quiet) {
            LOG.info("Created the {} shards' replication slots, all starting at {}", shards, last);
            return;
        }
        LOG.warn("The {} shards' replication slots started between {} and {} (each waits for the transactions running when it is "
                + "created); all now start at {}, so that no transaction is published in part. Transactions that committed "
                + "while the slots were created are published by no shard; to publish them: java -jar outbox-router.jar replay "
                + "--config <file> --from-xid {}", shards, first, last, last, oldestRunning);
    }

    /**
     * Moves each slot that starts before {@code last} there. Postgres writes an advanced slot's position out at the next
     * checkpoint; a crash before it would put the slot back at its own start, so a checkpoint is asked for at once
     * (it needs superuser or pg_checkpoint; without, the next scheduled checkpoint makes the move durable).
     */
    private static void advance(Connection c, Layout layout, int shards, List<String> starts, String last) throws SQLException {
        boolean moved = false;
        try (var ps = c.prepareStatement("SELECT pg_replication_slot_advance(?, CAST(? AS pg_lsn))")) {
            for (int i = 0; i < shards; i++) {
                if (compareLsn(starts.get(i), last) < 0) {
                    ps.setString(1, layout.slot(i));
                    ps.setString(2, last);
                    ps.execute();
                    moved = true;
                }
            }
        }
        if (moved) {
            var savepoint = c.getAutoCommit() ? null : c.setSavepoint();
            try (var st = c.createStatement()) {
                st.execute("CHECKPOINT");
            } catch (SQLException e) {
                if (savepoint != null) {
                    c.rollback(savepoint);
                }
                LOG.info("The shards' slots were moved to a common start; a checkpoint could not be asked for ({}), so the move "
                        + "is durable from the server's next checkpoint on", e.getMessage());
            }
        }
    }

    private static int compareLsn(String a, String b) {
        return Long.compareUnsigned(PostgresSource.parseLsn(a), PostgresSource.parseLsn(b));
    }

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

    private static String scalar(Connection c, String sql) throws SQLException {
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

    /** The tables a publication publishes, or empty when there is no such publication. */
    private static Optional<Set<String>> publishedTables(Connection c, String publication) throws SQLException {
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

    private static boolean viaRoot(Connection c, String publication) throws SQLException {
        try (var ps = c.prepareStatement("SELECT pubviaroot FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (var rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    private static boolean slotExists(Connection c, String slot) throws SQLException {
        try (var ps = c.prepareStatement("SELECT 1 FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    private static void ensurePublication(Connection c, String publication, String sql, List<String> tables) throws SQLException {
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
