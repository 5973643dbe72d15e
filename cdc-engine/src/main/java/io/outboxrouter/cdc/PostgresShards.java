package io.outboxrouter.cdc;

import io.outboxrouter.config.Shard;
import io.outboxrouter.config.SourceConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shard layout of a Postgres router: each shard's checks (Postgres 15+, row filters that split the aggregates, a
 * publication of its own), the slots of another layout that still hold events, and the creation of a layout's slots
 * together, so that no shard starts later than another.
 */
final class PostgresShards {
    private static final Logger LOG = LoggerFactory.getLogger(PostgresShards.class);

    private PostgresShards() {
    }

    /**
     * The slots of this router's other shard layouts (unsharded, or another number of shards): they hold what was
     * committed since that layout last stored its position, which this layout's slots do not have.
     */
    static Check layoutCheck(Connection c, SourceConfig.PostgresSource pg) throws SQLException {
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
    static List<Check> shardChecks(Connection c, String routerName, SourceConfig source, String aggregateId,
                                           Map<String, List<String>> columnLists) throws SQLException {
        var checks = new ArrayList<Check>();
        var pg = source.postgres();
        if (!PostgresVersion.atLeast(c, PostgresVersion.COLUMN_LISTS)) {
            checks.add(Check.fail("shards", "shards need Postgres 15 or later (publication row filters); this server is "
                    + PostgresVersion.describe(c), "remove source.postgres.shards and source.postgres.shard"));
            return checks;
        }
        int senders = Integer.parseInt(PostgresPreflight.scalar(c, "SHOW max_wal_senders"));
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
                routerName, PostgresPreflight.anyPartitioned(c, source.tables()), columnLists);
        var published = rowFilters(c, pg.publication());
        if (published.isEmpty() && PostgresPreflight.slotExists(c, pg.slot())) {
            checks.add(PostgresPreflight.missingBehindSlot(pg.publication(), pg.slot()));
            return checks;
        }
        if (published.isEmpty()) {
            checks.add(PostgresPublication.toBeCreated(c, pg.publication(), create, source.tables()));
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
                        PostgresPreflight.anyPartitioned(c, source.tables()), columnLists)));
        return checks;
    }

    /** A row filter as text, without what Postgres adds when it prints one back: parentheses, spaces, casts to text. */
    static String normalized(String filter) {
        return filter == null ? "" : filter.replace("::text", "").replaceAll("[()\\s]", "");
    }

    /**
     * The row filter of each outbox table for this shard, by its aggregate id column's type; a failed check for each table
     * whose aggregate id Postgres cannot hash in a row filter.
     */
    static Map<String, String> shardFilters(Connection c, SourceConfig source, String aggregateId, List<Check> problems)
            throws SQLException {
        return shardFilters(c, source, aggregateId, problems, source.postgres().shard());
    }

    static Map<String, String> shardFilters(Connection c, SourceConfig source, String aggregateId, List<Check> problems,
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
    static Optional<Map<String, String>> rowFilters(Connection c, String publication) throws SQLException {
        if (PostgresPublication.publishedTables(c, publication).isEmpty()) {
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
            int max = Integer.parseInt(PostgresPreflight.scalar(c, "SHOW max_replication_slots"));
            int used = Integer.parseInt(PostgresPreflight.scalar(c, "SELECT count(*)::text FROM pg_replication_slots"));
            if (max - used < pg.shards()) {
                throw new SourceSetupException("the " + pg.shards() + " shards need " + pg.shards() + " replication slots, and "
                        + (max - used) + " of max_replication_slots = " + max + " are free; fix: raise max_replication_slots "
                        + "(restart needed) or drop unused slots");
            }
            startTogether(c, layout, pg.shards());
        } catch (SQLException e) {
            throw new SourceSetupException("cannot create the shards' replication slots on " + source.connection().redactedUrl() + ": "
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
    static void startTogether(Connection c, Layout layout, int shards) throws SQLException {
        String snapshot = "SELECT txid_snapshot_xmin(s)::text || ' ' || txid_snapshot_xmax(s)::text FROM txid_current_snapshot() s";
        String[] before = PostgresPreflight.scalar(c, snapshot).split(" ");
        var starts = new ArrayList<String>();
        for (int i = 0; i < shards; i++) {
            starts.add(PostgresPreflight.createSlot(c, layout.slot(i)));
        }
        String first = starts.stream().min(PostgresShards::compareLsn).orElseThrow();
        String last = starts.stream().max(PostgresShards::compareLsn).orElseThrow();
        // No transaction id given out meanwhile: nothing that writes began, so nothing committed between the slots' starts.
        boolean quiet = PostgresPreflight.scalar(c, snapshot).split(" ")[1].equals(before[1]);
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
    static void advance(Connection c, Layout layout, int shards, List<String> starts, String last) throws SQLException {
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

    static int compareLsn(String a, String b) {
        return Long.compareUnsigned(PostgresSource.parseLsn(a), PostgresSource.parseLsn(b));
    }
}
