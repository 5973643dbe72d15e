package io.outboxrouter.cdc;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.function.BooleanSupplier;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.apache.kafka.connect.data.Struct;

/**
 * Everything that differs between kinds of source database, in one place per kind: connector properties,
 * prerequisites, how a position reads, how {@code run --once} finds the end, how a stored position is set, and what
 * is monitored. Adding a source kind means adding one implementation.
 */
public sealed interface Source permits PostgresSource, BinlogSource {

    /** The source of a router's configuration. */
    static Source of(RouterConfig config) {
        return config.source().kind().isBinlog() ? new BinlogSource(config) : new PostgresSource(config);
    }

    /** Every prerequisite of the database, checked without changing anything (for {@code check}). */
    List<Check> checks();

    /** Whether the router's stored position still adds up with the database, as a check (for {@code check}). */
    default Check positionCheck(RouterConfig config) {
        try {
            return PositionCheck.find(config, this).map(d -> Check.fail("stored position", d.problem(),
                            "to accept this and " + d.accepted() + ", start the router once with run --accept-gap"))
                    .orElseGet(() -> Check.pass("stored position", "adds up with the source"));
        } catch (RuntimeException e) {
            return Check.fail("stored position", "cannot compare the stored position with the source: " + e.getMessage(),
                    "check the offsets and source connections");
        }
    }

    /**
     * Checks every prerequisite and creates what the router may create itself (a publication, a heartbeat table).
     *
     * @throws SourceSetupException naming every failed prerequisite with its fix
     */
    void prepare();

    /**
     * Creates what the stream reads from, once its stored position is known to add up ({@link PositionCheck}): Postgres
     * shards, on a layout's first start, create every shard's slot at once.
     */
    default void afterPositionCheck() {
    }

    /** Adds the connector properties of this kind to the common ones. */
    void addConnectorProperties(Properties p);

    /** The JMX domain of the connector's metrics, e.g. {@code debezium.postgres}. */
    String metricsDomain();

    /** The connector's streaming metrics bean: its {@code Connected} attribute says whether the stream is open. */
    default ObjectName streamingMetrics(String routerName) {
        try {
            return new ObjectName(metricsDomain() + ":type=connector-metrics,context=streaming,server=" + routerName);
        } catch (MalformedObjectNameException e) {
            throw new IllegalArgumentException("router name " + routerName + " cannot name a metrics bean", e);
        }
    }

    /** A change record's {@code source} block as a position people can read, e.g. {@code lsn:0/16B3748}. */
    String position(Struct source);

    /** How {@code run --once} knows that everything committed before now is published and stored. */
    Drain newDrain(EngineProgress progress);

    /** What the stream reads from, for log lines: {@code slot orders_router}, {@code binlog}. */
    String describe();

    /**
     * The offset entries to store so that the next start reads again from {@code position} (a record's
     * {@code source.position} header).
     *
     * @param stored the router's stored entries, key to value
     * @throws IllegalArgumentException when this source cannot go back there; the message says why and what to do instead
     */
    Map<String, String> offsetsAt(String position, Map<String, String> stored) throws SQLException;

    /**
     * Whether the stored position still adds up with the server: a replication slot or binlog that is gone, offsets that
     * are gone while the stream's state remains. Reads only.
     */
    Optional<Drift> drift(StoredPosition stored) throws SQLException;

    /**
     * Forgets the router's position on purpose ({@code offsets reset}, {@code run --accept-gap}): the next start begins
     * afresh, as {@code source.snapshot} says, and is not refused for the missing position. The table says it is the
     * authoritative copy, so that an exactly-once start corrects its offsets topic rather than take the forgotten position back.
     */
    default void resetPosition(OffsetTable table, String routerName) {
        table.delete(routerName);
        // The table is then the position: an exactly-once router's offsets topic still holds the forgotten one.
        // The events between the old position and the new one may be replayed from the outbox rows: retention keeps them.
        table.write(routerName, Map.of(OffsetTable.STATE_KEY, OffsetTable.RESET, OffsetTable.AUTHORITY_KEY, OffsetTable.TABLE,
                OffsetTable.RETENTION_HOLD_KEY, OffsetTable.retentionHoldFromNow()));
    }

    /**
     * The server's view of the stream (a replication slot), measured in the background; empty when there is none to watch.
     *
     * @param drift told when the source changed under the running router so that it cannot go on (a dropped publication)
     */
    Optional<SlotMonitor> monitor(java.util.function.Consumer<SourceSetupException> drift);

    /** The columns of a table as the database names them; empty when there is no such table. */
    Set<String> columns(String table) throws SQLException;

    /**
     * How the engine finds transaction ends in the connector's records, and which position it stores there; see
     * {@link TransactionBoundaries}. The connector gets transaction metadata unless this is {@link TransactionBoundaries.Mode#POSTGRES}.
     */
    default TransactionBoundaries.Mode boundaries() {
        return TransactionBoundaries.Mode.BINLOG;
    }

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

    // --- outbox retention (see Retention) ---------------------------------------------------------------------------

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

    /** A condition on {@code column} (a timestamp) that holds for rows older than {@code age}, by the database's clock. */
    String olderThan(String column, java.time.Duration age);

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

    /**
     * Returns once the stream can be read by this process (Postgres: no other session reads the slot), or once
     * {@code stopping} is true; runs on the engine's thread before the connector starts.
     *
     * @throws SourceSetupException when another reader keeps the stream past the server's own timeout
     */
    default void awaitStreamFree(String routerName, BooleanSupplier stopping) throws InterruptedException {
    }
}
