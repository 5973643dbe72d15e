package io.outboxrouter.offsets;

import io.outboxrouter.retry.Retry;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The router's durable positions: one row per (router name, offset key) in a JDBC table. Every statement names
 * the router in its WHERE clause (or conflict target), so several routers can share one table. Transient
 * failures (lost connection, timeouts) are retried with backoff, then surface as {@link OffsetStoreException}.
 */
public final class OffsetTable implements AutoCloseable {
    /** One stored row, for operators. */
    public record Row(String routerName, String key, String value, Instant updatedAt) {
    }

    /**
     * The layout of the table this build writes. Version 1: {@code (router_name, offset_key, offset_value, updated_at)},
     * one row per key. A change of layout raises it and adds its step to {@code OffsetTableLayout.MIGRATIONS}.
     */
    public static final int LAYOUT_VERSION = 1;
    /** The row that keeps the layout version: a router name no router can have (names are lower-case letters, digits, - and _). */
    static final String LAYOUT_ROW = "*";
    static final String LAYOUT_KEY = "outbox-router.layout";

    /**
     * The row that records this router's state beside its offsets: {@link #STORED} once it stored a position,
     * {@link #RESET} after an operator reset it. Told apart from the engine's keys, which are JSON arrays.
     */
    public static final String STATE_KEY = "outbox-router.state";
    /** The router has stored a position: no stored offsets now means they were lost. JSON, like every value. */
    public static final String STORED = "{\"state\":\"stored\"}";
    /** An operator reset the position ({@code offsets reset}): the next start begins afresh. */
    public static final String RESET = "{\"state\":\"reset\"}";
    /**
     * The row that says which copy of the position is authoritative when the router runs exactly-once: {@link #TABLE}
     * after an at-least-once run or an operator's {@code offsets set|reset} (the offsets topic may be stale), {@link #TOPIC}
     * while an exactly-once router commits its positions to its offsets topic (this table is then the mirror).
     */
    public static final String AUTHORITY_KEY = "outbox-router.authority";
    public static final String TABLE = "{\"authority\":\"table\"}";
    public static final String TOPIC = "{\"authority\":\"topic\"}";
    /**
     * The row that pauses outbox retention: written when the position is moved by hand or a gap accepted ({@code offsets
     * set|reset}, {@code run --accept-gap}), whose events may have to be replayed from the rows retention would delete.
     */
    public static final String RETENTION_HOLD_KEY = "outbox-router.retention-hold";
    /**
     * The row that records a loss found while the router ran (what the source stopped sending, and which rows to publish
     * again): the router refuses to start until an operator accepts it ({@code run --accept-gap}).
     */
    public static final String GAP_KEY = "outbox-router.gap";
    /**
     * The row that keeps the catalog a Postgres router streamed with (its publication's and outbox tables' identities) and
     * the oldest transaction running when it last found them in order: a change made while no router streamed is found
     * at the next start, with the rows it may have cost.
     */
    public static final String CATALOG_KEY = "outbox-router.catalog";
    /**
     * The row that names where this router's positions come from (a token made once per offsets table and router): an
     * offsets topic whose positions for the same name carry another token was written by another router.
     */
    public static final String SOURCE_KEY = "outbox-router.source";
    /**
     * The row a router's first start writes before its initial snapshot, and a later start removes once a position is
     * stored: a slot found without a stored position is then known to be the first start's, whose snapshot did not finish.
     */
    public static final String FIRST_START_KEY = "outbox-router.first-start";
    /**
     * The row that keeps, per outbox table, the time through which the self-audit proved every row published (matched
     * with what the stream delivered, or with the records in Kafka): outbox retention deletes no row dated after it.
     */
    public static final String AUDITED_KEY = "outbox-router.audited";
    /**
     * The row that keeps the history a Postgres router streams from (the server's system identifier and timeline),
     * written at every start before a position read there is stored: a position of a timeline that the server's history
     * left before it is refused at the next start (a standby promoted before it had the router's last transactions).
     */
    public static final String TIMELINE_KEY = "outbox-router.timeline";
    /**
     * The row that keeps the stream's parked aggregates (park id, position, since), written once their markers are
     * acknowledged: a parking topic that lost them is found at the next start, and so is a start under another policy.
     */
    public static final String PARKS_KEY = "outbox-router.parks";
    /** The row that holds the router's fencing token ({@link #nextFence}). */
    public static final String FENCE_KEY = "outbox-router.fence";
    private static final Pattern FENCE_VALUE = Pattern.compile("\"fence\"\\s*:\\s*(\\d+)");

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

    SqlDialect dialect() {
        return store.dialect();
    }

    /** Whether the table exists yet (the first start creates it); looked up without writing anything. */
    public boolean exists() {
        // A probe rather than the catalog: it resolves the name as every other statement here does (schema search path,
        // case folding, a database prefix on MySQL).
        return run("look for table " + table, c -> {
            try (var st = c.createStatement()) {
                st.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                st.executeQuery("SELECT 1 FROM " + table + " WHERE 1 = 0").close();
                return true;
            } catch (SQLException e) {
                if (!"42P01".equals(e.getSQLState()) && !"42S02".equals(e.getSQLState())) { // undefined table
                    throw e;
                }
                if (!c.getAutoCommit()) {
                    c.rollback();
                }
                return false;
            }
        });
    }

    /** Refuses, without writing anything, a table whose layout a newer outbox-router wrote ({@link #createIfMissing} migrates). */
    public void requireKnownLayout() {
        layoutVersion().filter(v -> v > LAYOUT_VERSION).ifPresent(v -> OffsetTableLayout.refuseNewer(this, v));
    }

    /**
     * Creates the table when missing, and checks the version of its layout: a table of an older layout is migrated
     * ({@code OffsetTableLayout}), one of a newer layout (written by a newer outbox-router) is refused, so that an older build
     * never reads positions it does not understand.
     */
    public void createIfMissing() {
        run("create offset table " + table, c -> {
            try (var st = c.createStatement()) {
                st.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                st.execute(store.dialect().createTable(table));
            }
            return null;
        });
        OffsetTableLayout.upgrade(this);
    }

    /** The table's layout version; empty for a table made before versions were kept (version 1's layout). */
    public java.util.Optional<Integer> layoutVersion() {
        var value = readAll(LAYOUT_ROW).get(LAYOUT_KEY);
        if (value == null) {
            return java.util.Optional.empty();
        }
        var m = java.util.regex.Pattern.compile("\"version\"\\s*:\\s*(\\d+)").matcher(value);
        if (!m.find()) {
            throw new OffsetStoreException("offsets table " + table + " has an unreadable layout version row: " + value, null);
        }
        return java.util.Optional.of(Integer.parseInt(m.group(1)));
    }

    /** Every stored key and value of one router, without its state row. */
    public Map<String, String> read(String routerName) {
        var out = readAll(routerName);
        out.remove(STATE_KEY);
        out.remove(FENCE_KEY);
        out.remove(AUTHORITY_KEY);
        out.remove(RETENTION_HOLD_KEY);
        out.remove(GAP_KEY);
        out.remove(CATALOG_KEY);
        out.remove(SOURCE_KEY);
        out.remove(FIRST_START_KEY);
        out.remove(AUDITED_KEY);
        out.remove(TIMELINE_KEY);
        out.remove(PARKS_KEY);
        return out;
    }

    /** The value of a {@link #RETENTION_HOLD_KEY} row written now. */
    public static String retentionHoldFromNow() {
        return "{\"since\":\"" + java.time.Instant.now() + "\"}";
    }

    /** Since when outbox retention is held ({@link #RETENTION_HOLD_KEY}); empty when it is not. */
    public Optional<java.time.Instant> retentionHold(String routerName) {
        var value = readAll(routerName).get(RETENTION_HOLD_KEY);
        if (value == null) {
            return Optional.empty();
        }
        var m = java.util.regex.Pattern.compile("\"since\"\\s*:\\s*\"([^\"]+)\"").matcher(value);
        try {
            return m.find() ? Optional.of(java.time.Instant.parse(m.group(1))) : Optional.of(java.time.Instant.now());
        } catch (java.time.format.DateTimeParseException e) {
            return Optional.of(java.time.Instant.now()); // unreadable: held, from now
        }
    }

    /** The loss recorded while the router ran ({@link #GAP_KEY}), as JSON text; empty when none is. */
    public Optional<String> gap(String routerName) {
        return Optional.ofNullable(readAll(routerName).get(GAP_KEY));
    }

    /** How far the self-audit proved the outbox rows published ({@link #AUDITED_KEY}), as JSON text; empty before it did. */
    public Optional<String> audited(String routerName) {
        return Optional.ofNullable(readAll(routerName).get(AUDITED_KEY));
    }

    /** The catalog the router last streamed with ({@link #CATALOG_KEY}), as JSON text; empty when none is kept. */
    public Optional<String> catalog(String routerName) {
        return Optional.ofNullable(readAll(routerName).get(CATALOG_KEY));
    }

    /** Whether the router's first start, with its initial snapshot, has not stored a position yet ({@link #FIRST_START_KEY}). */
    public boolean firstStartUnderWay(String routerName) {
        return readAll(routerName).containsKey(FIRST_START_KEY);
    }

    /** The history the router last streamed from ({@link #TIMELINE_KEY}), as JSON text; empty when none is kept. */
    public Optional<String> timeline(String routerName) {
        return Optional.ofNullable(readAll(routerName).get(TIMELINE_KEY));
    }

    /** The parked aggregates kept beside the position ({@link #PARKS_KEY}), as JSON text; empty when none is. */
    public Optional<String> parks(String routerName) {
        return Optional.ofNullable(readAll(routerName).get(PARKS_KEY));
    }

    /** The token of this router's positions ({@link #SOURCE_KEY}); empty before the first exactly-once start. */
    public Optional<String> source(String routerName) {
        return Optional.ofNullable(readAll(routerName).get(SOURCE_KEY));
    }

    /** Which copy of the router's position is authoritative ({@link #TABLE}, {@link #TOPIC}); empty when no row says. */
    public Optional<String> authority(String routerName) {
        return Optional.ofNullable(readAll(routerName).get(AUTHORITY_KEY));
    }

    /** The router's state row ({@link #STORED}, {@link #RESET}); empty when it never stored a position here. */
    public Optional<String> state(String routerName) {
        return Optional.ofNullable(readAll(routerName).get(STATE_KEY));
    }

    private Map<String, String> readAll(String routerName) {
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
                    + (routerName.isPresent() ? " WHERE router_name = ?" : " WHERE router_name <> '" + LAYOUT_ROW + "'")
                    + " ORDER BY router_name, offset_key";
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
            writeEntries(c, routerName, entries);
            return null;
        });
    }

    /**
     * Writes as {@link #write(String, Map)}, only while {@code fence} is still the router's fencing token: a process that
     * lost the router to another (which took a newer token) cannot move the position any more.
     *
     * @throws OffsetStoreException caused by {@link FencedException} when another process took a newer token
     */
    public void write(String routerName, Map<String, String> entries, long fence) {
        Objects.requireNonNull(routerName, "routerName");
        run("write offsets of " + routerName, c -> {
            long current = fence(c, routerName);
            if (current != fence) {
                throw new FencedException("router " + routerName + "'s fencing token is " + current + ", this process holds " + fence
                        + ": another process took the router over");
            }
            writeEntries(c, routerName, entries);
            return null;
        });
    }

    /** Takes the router's next fencing token; call it holding the router lock, before the engine starts. */
    public long nextFence(String routerName) {
        return run("take the fencing token of " + routerName, c -> {
            long next = fence(c, routerName) + 1;
            writeEntries(c, routerName, Map.of(FENCE_KEY, "{\"fence\":" + next + "}"));
            return next;
        });
    }

    /** The router's fencing token, its row locked until the transaction ends; 0 before the first. */
    private long fence(Connection c, String routerName) throws SQLException {
        try (var ps = c.prepareStatement("SELECT offset_value FROM " + table + " WHERE router_name = ? AND offset_key = ? FOR UPDATE")) {
            ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
            ps.setString(1, routerName);
            ps.setString(2, FENCE_KEY);
            try (var rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return 0;
                }
                var m = FENCE_VALUE.matcher(rs.getString(1));
                return m.find() ? Long.parseLong(m.group(1)) : 0;
            }
        }
    }

    private void writeEntries(Connection c, String routerName, Map<String, String> entries) throws SQLException {
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
    }

    /**
     * Deletes every stored offset of one router, and its state row; returns how many rows went. Its fencing token stays:
     * a process that held an older one is still refused.
     */
    public int delete(String routerName) {
        return run("delete offsets of " + routerName, c -> {
            try (var ps = c.prepareStatement("DELETE FROM " + table + " WHERE router_name = ? AND offset_key <> ?")) {
                ps.setQueryTimeout(JdbcStore.QUERY_TIMEOUT_SECONDS);
                ps.setString(1, routerName);
                ps.setString(2, FENCE_KEY);
                return ps.executeUpdate();
            }
        });
    }

    <T> T run(String operation, JdbcStore.Work<T> work) {
        return store.run(operation, work);
    }

    @Override
    public void close() {
        store.close();
    }
}
