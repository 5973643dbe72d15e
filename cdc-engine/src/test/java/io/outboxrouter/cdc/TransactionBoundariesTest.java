package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

class TransactionBoundariesTest {
    private static final Schema MARKER = SchemaBuilder.struct().field("status", Schema.STRING_SCHEMA).field("id", Schema.STRING_SCHEMA).build();
    private static final Schema TX = SchemaBuilder.struct().optional().field("id", Schema.STRING_SCHEMA).build();
    private static final Schema CHANGE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA).field("transaction", TX).build();

    private static SourceRecord marker(String status) {
        return new SourceRecord(Map.of(), Map.of(), "router.transaction", MARKER, new Struct(MARKER).put("status", status).put("id", "771"));
    }

    private static SourceRecord row(boolean inTransaction) {
        var value = new Struct(CHANGE).put("op", "c");
        if (inTransaction) {
            value.put("transaction", new Struct(TX).put("id", "771:123"));
        }
        return new SourceRecord(Map.of(), Map.of(), "router.public.outbox", CHANGE, value);
    }

    @Test
    void theSafePlaceIsTheLastTransactionEnd() {
        var b = new TransactionBoundaries("router");
        var batch = List.of(marker("BEGIN"), row(true), row(true), marker("END"), marker("BEGIN"), row(true));
        assertThat(b.lastSafeIndex(batch)).isEqualTo(3);
        // Still inside the open transaction: the next batch has no safe place until its END.
        assertThat(b.lastSafeIndex(List.of(row(true)))).isEqualTo(-1);
    }

    @Test
    void aTransactionSpanningBatchesIsSafeOnlyAtItsEnd() {
        var b = new TransactionBoundaries("router");
        assertThat(b.lastSafeIndex(List.of(marker("BEGIN"), row(true)))).isEqualTo(-1);
        assertThat(b.lastSafeIndex(List.of(row(true), row(true)))).isEqualTo(-1);
        assertThat(b.lastSafeIndex(List.of(row(true), marker("END")))).isEqualTo(1);
        // Closed: a record outside any transaction is safe again.
        assertThat(b.lastSafeIndex(List.of(row(false)))).isZero();
    }

    @Test
    void recordsOutsideAnyTransactionAreSafeButNotInsideOne() {
        var b = new TransactionBoundaries("router");
        // Snapshot rows and heartbeats carry no transaction.
        assertThat(b.lastSafeIndex(List.of(row(false), row(false)))).isEqualTo(1);
        assertThat(b.lastSafeIndex(List.of(marker("BEGIN"), row(false)))).isEqualTo(-1);
    }
}
