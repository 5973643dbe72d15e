package io.outboxrouter.app;

import io.outboxrouter.config.OutboxConfig;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * Which outbox rows a replay, an audit or a recovery reads; null fields do not filter. {@code timeColumn} orders, and filters when since or until is set;
 * {@code orderBy} (may be empty) replaces the default order; {@code fromXid} (Postgres) keeps the rows written by
 * transaction {@code fromXid} or a later one, the range a stop of the router names.
 */
public record ReplayFilter(Instant since, Instant until, String aggregateType, String aggregateId, String id, String timeColumn,
                           List<String> orderBy, Long fromXid, Recovery recovery, List<String> ids) {

    public ReplayFilter {
        ids = ids == null ? List.of() : List.copyOf(ids);
    }

    public ReplayFilter(Instant since, Instant until, String aggregateType, String aggregateId, String id, String timeColumn,
                        List<String> orderBy, Long fromXid, Recovery recovery) {
        this(since, until, aggregateType, aggregateId, id, timeColumn, orderBy, fromXid, recovery, List.of());
    }

    /** The rows with one of these event ids (for {@code audit --repair}), in the order they committed. */
    public static ReplayFilter ofIds(List<String> ids, String timeColumn) {
        return new ReplayFilter(null, null, null, null, null, timeColumn, List.of(), null, null, ids);
    }

    public ReplayFilter(Instant since, Instant until, String aggregateType, String aggregateId, String id, String timeColumn,
                        List<String> orderBy, Long fromXid) {
        this(since, until, aggregateType, aggregateId, id, timeColumn, orderBy, fromXid, null);
    }

    public ReplayFilter(Instant since, Instant until, String aggregateType, String aggregateId, String id, String timeColumn,
                        List<String> orderBy) {
        this(since, until, aggregateType, aggregateId, id, timeColumn, orderBy, null, null);
    }

    /**
     * Postgres: the rows that may have committed after the router's last published transaction: committed since
     * {@code committedSince} (by track_commit_timestamp, reaching back before that transaction's commit time), or written
     * by a transaction newer than it ({@code publishedXid}, itself excluded; -1: none known). As an exported snapshot sees
     * them (null: as now); the snapshot is a new slot's, and what it does not see, the slot streams.
     */
    public record Recovery(Instant committedSince, long publishedXid, String snapshot) {
    }

    /**
     * The filter as a WHERE clause (empty when it selects every row), its parameters bound by {@link #bind}.
     *
     * @param time   the time column's expression
     * @param asText the source's SQL that reads a column as text
     */
    String where(String time, OutboxConfig.Columns cols, UnaryOperator<String> asText) {
        var where = new ArrayList<String>();
        if (since() != null) {
            where.add(time + " >= ?");
        }
        if (until() != null) {
            where.add(time + " < ?");
        }
        if (aggregateType() != null) {
            where.add(cols.aggregateType() + " = ?");
        }
        if (aggregateId() != null) {
            where.add(cols.aggregateId() + " = ?");
        }
        if (id() != null) {
            where.add(asText.apply(cols.id()) + " = ?");
        }
        if (!ids().isEmpty()) {
            where.add(asText.apply(cols.id()) + " IN (" + String.join(", ", Collections.nCopies(ids().size(), "?")) + ")");
        }
        if (recovery() != null) {
            // Commit times follow commit order only roughly (taken before the commit record is written; a clock may step):
            // the caller reaches back. A transaction begun after the published one has a newer xid, whatever its clock.
            if (recovery().publishedXid() >= 0) {
                where.add("(pg_xact_commit_timestamp(xmin) >= ? OR age(xmin) < age(CAST(? AS xid)))");
                where.add("NOT (xmin = CAST(? AS xid))");
            } else {
                where.add("pg_xact_commit_timestamp(xmin) >= ?");
            }
        }
        if (fromXid() != null) {
            // xmin is the 32-bit id of the row's writer: compared by age, which holds within two billion transactions; a
            // frozen row's age is the largest there is, so it counts as older.
            where.add("age(xmin) <= age(CAST(? AS xid))");
        }
        return where.isEmpty() ? "" : " WHERE " + String.join(" AND ", where);
    }

    /** Binds the parameters of {@link #where}, in order. */
    void bind(PreparedStatement ps) throws SQLException {
        int i = 1;
        if (since() != null) {
            ps.setTimestamp(i++, Timestamp.from(since()));
        }
        if (until() != null) {
            ps.setTimestamp(i++, Timestamp.from(until()));
        }
        for (String value : new String[] {aggregateType(), aggregateId(), id()}) {
            if (value != null) {
                ps.setString(i++, value);
            }
        }
        for (String value : ids()) {
            ps.setString(i++, value);
        }
        if (recovery() != null) {
            ps.setTimestamp(i++, Timestamp.from(recovery().committedSince()));
            if (recovery().publishedXid() >= 0) {
                ps.setString(i++, Long.toString(recovery().publishedXid() & 0xFFFFFFFFL));
                ps.setString(i++, Long.toString(recovery().publishedXid() & 0xFFFFFFFFL));
            }
        }
        if (fromXid() != null) {
            ps.setString(i, Long.toString(fromXid() & 0xFFFFFFFFL));
        }
    }
}
