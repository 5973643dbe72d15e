package io.outboxrouter.audit;

import io.outboxrouter.cdc.OutboxSql;
import io.outboxrouter.config.OutboxConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The self-audit's reads of one outbox table, by its time column: the rows of a window, in one snapshot with the log mark
 * every transaction visible in it committed before; the same rows again, with their aggregates, to name those lost.
 * Bounds are kept as the database renders them, so that a bound read back compares exactly.
 */
final class AuditReads {
    /** A time, as the database renders it and in microseconds since the epoch. */
    record Bound(String text, long micros) {
    }

    /**
     * The rows of {@code table} dated after {@code lower} and through {@code upper}, as visible before {@code mark}.
     *
     * @param skewMillis   the router's clock minus the database's, when the window was read
     * @param readAtMillis when it was read, on the router's clock
     */
    record Window(String table, Bound lower, Bound upper, OutboxSql.LogMark mark, LongSet ids, long skewMillis, long readAtMillis) {
    }

    /** A row the report names. */
    record Row(String id, String aggregateType, String aggregateId, String time, long micros) {
        Instant instant() {
            return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000), Math.floorMod(micros, 1_000_000) * 1000L);
        }

        @Override
        public String toString() {
            return id + " (" + aggregateType + " " + aggregateId + ", " + time + ")";
        }
    }

    private final OutboxSql sql;
    private final OutboxConfig.Columns columns;
    private final String timeColumn;

    AuditReads(OutboxSql sql, OutboxConfig.Columns columns, String timeColumn) {
        this.sql = sql;
        this.columns = columns;
        this.timeColumn = timeColumn;
    }

    /** The database's clock {@code ago} before now. */
    Bound now(Connection c, Duration ago) throws SQLException {
        return bound(c, "SELECT " + sql.asText("x") + ", " + sql.epochMicros("x") + " FROM (SELECT " + sql.nowMinus(ago) + " AS x) n", null);
    }

    /** An instant as the database renders it. */
    Bound at(Connection c, long micros) throws SQLException {
        return bound(c, "SELECT " + sql.asText("x") + ", " + sql.epochMicros("x") + " FROM (SELECT " + sql.fromEpochMicros() + " AS x) n",
                micros);
    }

    private static Bound bound(Connection c, String query, Long parameter) throws SQLException {
        try (var ps = c.prepareStatement(query)) {
            if (parameter != null) {
                ps.setLong(1, parameter);
            }
            try (var rs = ps.executeQuery()) {
                rs.next();
                return new Bound(rs.getString(1), rs.getLong(2));
            }
        }
    }

    /**
     * In one snapshot: the log mark, then the rows dated after {@code lower} and at least {@code lag} ago, at most about
     * {@code most} of them (all the rows of the last time read, however many share it).
     *
     * @return empty when no time has passed since {@code lower}
     */
    Optional<Window> next(Connection c, String table, Bound lower, Duration lag, int most) throws SQLException {
        long routerNow = System.currentTimeMillis();
        var mark = sql.beginSnapshot(c);
        try {
            var dbNow = now(c, Duration.ZERO);
            var upper = now(c, lag);
            long skew = routerNow - dbNow.micros() / 1000;
            if (upper.micros() <= lower.micros()) {
                return Optional.empty();
            }
            // One range read in time order; when it holds more than the most, the window ends at the last time read, and
            // the rows of that time (one transaction's, often) are read whole.
            var ids = new LongSet(1024);
            // The rows of the last time read, kept apart until a later time shows they are all read.
            var sameTime = new java.util.ArrayList<Long>();
            long lastMicros = Long.MIN_VALUE;
            String lastText = null;
            int n = 0;
            try (var ps = c.prepareStatement("SELECT " + sql.asText(columns.id()) + ", " + sql.asText(timeColumn) + ", "
                    + sql.epochMicros(timeColumn) + " FROM " + table + " WHERE " + range() + filter(table) + " ORDER BY " + timeColumn
                    + " LIMIT " + (most + 1))) {
                bind(ps, lower, upper);
                ps.setFetchSize(10_000);
                try (var rs = ps.executeQuery()) {
                    while (rs.next()) {
                        n++;
                        long micros = rs.getLong(3);
                        if (micros != lastMicros) {
                            sameTime.forEach(ids::add);
                            sameTime.clear();
                            lastMicros = micros;
                            lastText = rs.getString(2);
                        }
                        if (rs.getString(1) != null) { // a row without an id is dead-lettered for it, and cannot be matched
                            sameTime.add(DeliveredIds.hash(rs.getString(1)));
                        }
                    }
                }
            }
            if (n > most) {
                upper = new Bound(lastText, lastMicros);
                addIdsAt(c, table, upper, ids);
            } else {
                sameTime.forEach(ids::add);
            }
            return Optional.of(new Window(table, lower, upper, mark, ids, skew, routerNow));
        } finally {
            sql.endSnapshot(c);
        }
    }

    /** The rows of a window whose id hashes are in {@code wanted}, dated in its range, oldest first; at most {@code most}. */
    List<Row> rows(Connection c, Window w, LongSet wanted, int most) throws SQLException {
        var out = new ArrayList<Row>();
        try (var ps = c.prepareStatement("SELECT " + sql.asText(columns.id()) + ", " + columns.aggregateType() + ", " + columns.aggregateId()
                + ", " + sql.asText(timeColumn) + ", " + sql.epochMicros(timeColumn) + " FROM " + w.table() + " WHERE " + range() + filter(w.table()) + " ORDER BY " + timeColumn)) {
            bind(ps, w.lower(), w.upper());
            ps.setFetchSize(10_000);
            try (var rs = ps.executeQuery()) {
                while (rs.next() && out.size() < most) {
                    String id = rs.getString(1);
                    if (id != null && wanted.contains(DeliveredIds.hash(id))) {
                        out.add(new Row(id, rs.getString(2), rs.getString(3), rs.getString(4), rs.getLong(5)));
                    }
                }
            }
        }
        return out;
    }

    /**
     * In one snapshot: the log mark, and the rows dated after {@code lower} and through {@code upper} (a range whose
     * deliveries this process does not know).
     */
    Window window(Connection c, String table, Bound lower, Bound upper) throws SQLException {
        long routerNow = System.currentTimeMillis();
        var mark = sql.beginSnapshot(c);
        try {
            long skew = routerNow - now(c, Duration.ZERO).micros() / 1000;
            return new Window(table, lower, upper, mark, ids(c, table, lower, upper), skew, routerNow);
        } finally {
            sql.endSnapshot(c);
        }
    }

    /** Adds the ids of the rows dated exactly {@code at}. */
    private void addIdsAt(Connection c, String table, Bound at, LongSet ids) throws SQLException {
        addIds(c, table, timeColumn + " = " + sql.timestampParameter(), ids, at.text());
    }

    /** The ids of the rows dated after {@code lower} and through {@code upper}, as hashes. */
    private LongSet ids(Connection c, String table, Bound lower, Bound upper) throws SQLException {
        var ids = new LongSet(1024);
        addIds(c, table, range(), ids, lower.text(), upper.text());
        return ids;
    }

    /** Adds the hashes of the ids of the table's rows (this stream's) where {@code where} holds, its parameters given in order. */
    private void addIds(Connection c, String table, String where, LongSet ids, String... parameters) throws SQLException {
        try (var ps = c.prepareStatement("SELECT " + sql.asText(columns.id()) + " FROM " + table + " WHERE " + where + filter(table))) {
            for (int i = 0; i < parameters.length; i++) {
                ps.setString(i + 1, parameters[i]);
            }
            ps.setFetchSize(10_000);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    String id = rs.getString(1);
                    if (id != null) { // a row without an id is dead-lettered for it, and cannot be matched
                        ids.add(DeliveredIds.hash(id));
                    }
                }
            }
        }
    }

    private String range() {
        return timeColumn + " > " + sql.timestampParameter() + " AND " + timeColumn + " <= " + sql.timestampParameter();
    }

    private String filter(String table) {
        String f = sql.rowFilter(table);
        return f == null ? "" : " AND (" + f + ")";
    }

    private static void bind(java.sql.PreparedStatement ps, Bound lower, Bound upper) throws SQLException {
        ps.setString(1, lower.text());
        ps.setString(2, upper.text());
    }
}
