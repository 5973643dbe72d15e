package io.outboxrouter.cdc;

import java.util.List;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Finds, in a batch of connector records, the last record after which no source transaction is open: the only
 * kind of place where storing the offset cannot lose part of a transaction on restart (Debezium can resume past
 * records that share an LSN, dbz#1554). Relies on {@code provide.transaction.metadata=true}: BEGIN/END markers
 * arrive in order with the data. State carries over between batches, since batches often end inside a transaction.
 */
final class TransactionBoundaries {
    private final String transactionTopic;
    private boolean open;

    TransactionBoundaries(String topicPrefix) {
        this.transactionTopic = topicPrefix + ".transaction";
    }

    /** The index of the last record of {@code batch} at which no transaction is open, or -1 if there is none. */
    int lastSafeIndex(List<SourceRecord> batch) {
        int safe = -1;
        for (int i = 0; i < batch.size(); i++) {
            SourceRecord r = batch.get(i);
            if (transactionTopic.equals(r.topic()) && r.value() instanceof Struct marker) {
                String status = marker.getString("status");
                open = "BEGIN".equals(status);
                if (!open) {
                    safe = i;
                }
            } else if (!open && !inTransaction(r)) {
                // Heartbeats, snapshot rows: outside any transaction.
                safe = i;
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
}
