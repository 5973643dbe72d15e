package io.outboxrouter.cdc;

import java.util.List;
import java.util.function.Function;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Finds, in a batch of connector records, the position to store: one after which no source transaction is open, the
 * only kind of place where storing cannot lose part of a transaction on restart (Debezium can resume past records that
 * share an LSN, dbz#1554). Relies on {@code provide.transaction.metadata=true}: BEGIN/END markers arrive in order with
 * the data. State carries over between batches, since batches often end inside a transaction.
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
    /**
     * What to store after a batch.
     *
     * @param record what to mark processed (possibly from an earlier batch)
     * @param index  the index in this batch up to which everything is covered by that position
     */
    record Safe<R>(R record, int index) {
    }

    private final String transactionTopic;
    private final boolean changesOnly;
    private final Function<R, SourceRecord> source;
    private boolean open;
    private R lastChange;

    /**
     * @param changesOnly store only positions of changes, never COMMIT-typed ones (Postgres)
     */
    TransactionBoundaries(String topicPrefix, boolean changesOnly, Function<R, SourceRecord> source) {
        this.transactionTopic = topicPrefix + ".transaction";
        this.changesOnly = changesOnly;
        this.source = source;
    }

    /** The position to store after {@code batch}, or null when none is safe. */
    Safe<R> lastSafe(List<R> batch) {
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

    private static boolean inTransaction(SourceRecord r) {
        if (r.value() instanceof Struct v && v.schema().field("transaction") != null) {
            return v.get("transaction") != null;
        }
        return false;
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
