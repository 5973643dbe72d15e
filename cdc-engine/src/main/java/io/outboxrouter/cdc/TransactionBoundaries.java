package io.outboxrouter.cdc;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Finds, in a batch of connector records, the position to store: one after which no source transaction is open, the
 * only kind of place where storing cannot lose part of a transaction on restart (Debezium can resume past records that
 * share an LSN, dbz#1554). State carries over between batches, since batches often end inside a transaction.
 *
 * <p>Where a transaction ends, two ways:
 * <ul>
 *   <li>{@link Mode#BINLOG} and {@link Mode#POSTGRES_MARKERS}: from Debezium's transaction metadata
 *   ({@code provide.transaction.metadata=true}), whose BEGIN/END markers arrive in order with the data.</li>
 *   <li>{@link Mode#POSTGRES}: without it (it costs the connector two more records per transaction, which weighs most
 *   on single-row transactions). pgoutput (protocol 1, no streaming of transactions in progress) hands each
 *   transaction over whole, after its COMMIT and in commit order, so a transaction has ended once any record (the next
 *   transaction's change, a non-transactional message, a heartbeat) was emitted after a COMMIT that came after its
 *   changes: every record's offset carries the end LSN of the last COMMIT read ({@code lsn_commit}), which grows in
 *   commit order. A record whose {@code lsn_commit} is lower than the open transaction's, or another transaction's with
 *   the same, is read again after the connector's task restarted in the process: the open transaction is then
 *   forgotten, not stored. The connector's heartbeat, which the router sets (see
 *   {@link PostgresSource#TRANSACTION_END_HEARTBEAT}), tells the end of the last transaction before a quiet spell.</li>
 * </ul>
 *
 * <p>Which record's position: on the binlog, the END marker's. On Postgres never a COMMIT-typed position (an END
 * marker, a heartbeat record), but the last change of the completed transaction, which may have come in an earlier
 * batch: Debezium 3.5 resumes from a COMMIT-typed position by matching the commit's end LSN, which can be the LSN of the
 * next WAL record, a row of a transaction still open then; it then skips that transaction's rows (upstream dbz#76). A
 * change's own LSN belongs to its transaction alone, and resuming from the last one skips exactly up to its COMMIT.
 *
 * @param <R> the engine's record type, from which {@code source} takes the connector record
 */
final class TransactionBoundaries<R> {
    /** How transaction ends are found, and which position is stored. */
    enum Mode {
        /** END markers; the END marker's position. */
        BINLOG,
        /** END markers; the last change's position. */
        POSTGRES_MARKERS,
        /** No markers: a record of what comes next, or a heartbeat after the COMMIT; the last change's position. */
        POSTGRES
    }

    /**
     * What to store after a batch.
     *
     * @param record what to mark processed (possibly from an earlier batch)
     * @param index  the index in this batch up to which everything is covered by that position
     */
    record Safe<R>(R record, int index) {
    }

    static final String HEARTBEAT_SCHEMA = "io.debezium.connector.common.Heartbeat";
    /**
     * A Postgres source offset's transaction id, and the end LSN of the last COMMIT (or non-transactional message) the
     * connector read before the record ({@code SourceInfo.TXID_KEY}, {@code PostgresOffsetContext.LAST_COMMIT_LSN_KEY}),
     * which grows in commit order.
     */
    private static final String TXID = "txId";
    private static final String LAST_COMMIT = "lsn_commit";

    private final String transactionTopic;
    private final Mode mode;
    private final Function<R, SourceRecord> source;
    private boolean open;
    private R lastChange;
    /** {@link Mode#POSTGRES}: the transaction id of {@link #lastChange}, while that transaction is open. */
    private Object openTransaction;
    /** {@link Mode#POSTGRES}: the last COMMIT read before the open transaction's changes (-1: none yet). */
    private long openTransactionLastCommit;

    TransactionBoundaries(String topicPrefix, Mode mode, Function<R, SourceRecord> source) {
        this.transactionTopic = topicPrefix + ".transaction";
        this.mode = mode;
        this.source = source;
    }

    /** The position to store after {@code batch}, or null when none is safe. */
    Safe<R> lastSafe(List<R> batch) {
        return mode == Mode.POSTGRES ? lastSafeWithoutMarkers(batch) : lastSafeAtMarkers(batch);
    }

    private Safe<R> lastSafeAtMarkers(List<R> batch) {
        boolean changesOnly = mode == Mode.POSTGRES_MARKERS;
        Safe<R> safe = null;
        for (int i = 0; i < batch.size(); i++) {
            R event = batch.get(i);
            SourceRecord r = source.apply(event);
            if (transactionTopic.equals(r.topic()) && r.value() instanceof Struct marker) {
                open = "BEGIN".equals(marker.getString("status"));
                if (open) {
                    lastChange = null;
                } else if (!changesOnly) {
                    safe = new Safe<>(event, i);
                } else if (lastChange != null) {
                    safe = new Safe<>(lastChange, i);
                }
            } else if (inTransaction(r)) {
                lastChange = event;
            } else if (!open && (!changesOnly || isSnapshotRow(r))) {
                // Outside any transaction: snapshot rows; and, on the binlog, heartbeats.
                safe = new Safe<>(event, i);
            }
        }
        return safe;
    }

    private Safe<R> lastSafeWithoutMarkers(List<R> batch) {
        Safe<R> safe = null;
        for (int i = 0; i < batch.size(); i++) {
            R event = batch.get(i);
            SourceRecord r = source.apply(event);
            if (isSnapshotRow(r)) {
                if (!open) {
                    safe = new Safe<>(event, i);
                }
                continue;
            }
            Map<String, ?> offset = r.sourceOffset() == null ? Map.of() : r.sourceOffset();
            Object txId = offset.get(TXID);
            long lastCommit = offset.get(LAST_COMMIT) instanceof Number n ? n.longValue() : -1;
            boolean heartbeat = isHeartbeat(r);
            if (open) {
                if (lastCommit > openTransactionLastCommit) {
                    // A COMMIT was read since the open transaction's last change: the next COMMIT in the stream is its own.
                    safe = new Safe<>(lastChange, heartbeat ? i : i - 1);
                    open = false;
                } else if (lastCommit < openTransactionLastCommit || !heartbeat && !Objects.equals(txId, openTransaction)) {
                    // Read again after the connector's task restarted in this process (it resumes from the stored position,
                    // and its heartbeats carry that position until records come): what was open is not known to have ended.
                    open = false;
                    lastChange = null;
                }
            }
            if (!heartbeat && txId != null) { // a change, or a transactional message; not a non-transactional message
                if (!open) {
                    open = true;
                    openTransaction = txId;
                    openTransactionLastCommit = lastCommit;
                }
                lastChange = event;
            }
        }
        return safe;
    }

    private static boolean inTransaction(SourceRecord r) {
        if (r.value() instanceof Struct v && v.schema().field("transaction") != null) {
            return v.get("transaction") != null;
        }
        return false;
    }

    private static boolean isHeartbeat(SourceRecord r) {
        return r.valueSchema() != null && HEARTBEAT_SCHEMA.equals(r.valueSchema().name());
    }

    /**
     * A snapshot row ({@code op} r). Not a heartbeat nor a non-transactional logical decoding message, whose positions are
     * COMMIT-typed on Postgres.
     */
    private static boolean isSnapshotRow(SourceRecord r) {
        return r.value() instanceof Struct v && v.schema().field("op") != null && "r".equals(v.get("op"));
    }

    /** Whether a transaction is open after the last batch: its changes are not covered by any position yet. */
    boolean open() {
        return open;
    }
}
