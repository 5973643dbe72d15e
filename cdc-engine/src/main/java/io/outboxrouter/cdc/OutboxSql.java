package io.outboxrouter.cdc;

import io.outboxrouter.offsets.OffsetTable;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The outbox tables as SQL on a source: their columns, commit order and time (for {@code replay} and {@code audit}), and
 * what outbox retention needs to delete published rows safely.
 */
public interface OutboxSql {

    /** The columns of a table as the database names them; empty when there is no such table. */
    Set<String> columns(String table) throws SQLException;

    /** An SQL expression that reads {@code column} as text, for comparisons with a string parameter. */
    String asText(String column);

    /**
     * SQL expressions that order a table's rows by the commit of the transaction that wrote them, when the server keeps
     * what that takes (Postgres with {@code track_commit_timestamp = on}); empty when it does not.
     */
    default List<String> commitOrder(Connection c) throws SQLException {
        return List.of();
    }

    /**
     * An SQL expression for the commit time of the transaction that wrote a row, when the server keeps it (Postgres with
     * {@code track_commit_timestamp = on}; null for rows committed before it was); empty when it does not.
     */
    default Optional<String> commitTime(Connection c) throws SQLException {
        return Optional.empty();
    }

    /**
     * Starts a read-only snapshot transaction on {@code c}, then reads where the source's log ends: every transaction
     * visible in the snapshot committed before that mark (a transaction becomes visible only after its commit is in the
     * log). The caller reads candidate rows in the snapshot, then ends it with {@link #endSnapshot}.
     */
    LogMark beginSnapshot(Connection c) throws SQLException;

    /** Ends the transaction {@link #beginSnapshot} started; the connection is in auto-commit mode after. */
    void endSnapshot(Connection c) throws SQLException;

    /**
     * Whether the router has published, and stored the position past, every transaction that committed before the mark
     * (Postgres: the slot's confirmed position, which only moves once that holds; MySQL/MariaDB: the stored position).
     *
     * @param c      a connection to the source, in auto-commit mode
     * @param stored the router's offsets table (opened on first use), for sources that compare with the stored position
     */
    boolean publishedPast(LogMark mark, Connection c, java.util.function.Supplier<OffsetTable> stored) throws SQLException;

    /**
     * Moves the stream past the log's current end even when nothing else is written (Postgres: a heartbeat message, which
     * the router publishes nothing for), so that {@link #publishedPast} can come true on a quiet database.
     */
    default void nudge(Connection c) throws SQLException {
    }

    /** A condition on {@code column} (a timestamp) that holds for rows older than {@code age}, by the database's clock. */
    String olderThan(String column, java.time.Duration age);

    /** An SQL expression for the database's clock {@code age} ago (within a snapshot: as of its start). */
    String nowMinus(java.time.Duration age);

    /** An SQL expression for a timestamp given as a text parameter in the database's own rendering ({@link #asText}). */
    String timestampParameter();

    /** An SQL expression for an instant given as a parameter in microseconds since the epoch. */
    String fromEpochMicros();

    /** An SQL expression for the microseconds since the epoch of a timestamp expression. */
    String epochMicros(String timestamp);

    /** The age in seconds of the oldest value of {@code column} in {@code table}, as one SQL query (null when empty). */
    String oldestAgeSeconds(String table, String column);

    /** Makes a session wait at most a few seconds for a row lock, then fail (retention never queues behind an application). */
    String shortLockWait();

    /** Why the router's user may not delete rows of {@code table}, or null when it may (or the source cannot tell). */
    default String deleteDenied(String table) throws SQLException {
        return null;
    }

    /** The condition that selects this stream's rows of an outbox table (a shard's), or null for every row. */
    default String rowFilter(String table) {
        return null;
    }

    /** A position in the source's log: {@code position} compared by the source, {@code text} for people. */
    record LogMark(String text, Object position) {
    }
}
