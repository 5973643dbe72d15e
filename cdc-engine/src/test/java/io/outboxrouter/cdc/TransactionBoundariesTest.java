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

    private static SourceRecord snapshotRow() {
        return new SourceRecord(Map.of(), Map.of(), "router.public.outbox", CHANGE, new Struct(CHANGE).put("op", "r"));
    }

    private static final Schema HEARTBEAT = SchemaBuilder.struct().field("ts_ms", Schema.INT64_SCHEMA).build();

    private static SourceRecord heartbeat() {
        return new SourceRecord(Map.of(), Map.of(), "__debezium-heartbeat.router", HEARTBEAT, new Struct(HEARTBEAT).put("ts_ms", 1L));
    }

    private static TransactionBoundaries<SourceRecord> binlog() {
        return new TransactionBoundaries<>("router", false, r -> r);
    }

    private static TransactionBoundaries<SourceRecord> postgres() {
        return new TransactionBoundaries<>("router", true, r -> r);
    }

    private static int index(TransactionBoundaries.Safe<SourceRecord> safe) {
        return safe == null ? -1 : safe.index();
    }

    @Test
    void onTheBinlogTheSafePlaceIsTheLastTransactionEnd() {
        var b = binlog();
        var batch = List.of(marker("BEGIN"), row(true), row(true), marker("END"), marker("BEGIN"), row(true));
        var safe = b.lastSafe(batch);
        assertThat(safe.index()).isEqualTo(3);
        assertThat(safe.record()).isSameAs(batch.get(3));
        // Still inside the open transaction: the next batch has no safe place until its END.
        assertThat(b.lastSafe(List.of(row(true)))).isNull();
    }

    @Test
    void onPostgresThePositionIsTheLastChangeOfTheCompletedTransactionNeverItsEnd() {
        var b = postgres();
        var batch = List.of(marker("BEGIN"), row(true), row(true), marker("END"), marker("BEGIN"), row(true));
        var safe = b.lastSafe(batch);
        assertThat(safe.record()).as("the last row, not the END marker").isSameAs(batch.get(2));
        assertThat(safe.index()).as("covers up to the END").isEqualTo(3);
    }

    @Test
    void onPostgresATransactionsLastChangeFromAnEarlierBatchIsStoredAtItsEnd() {
        var b = postgres();
        var last = row(true);
        assertThat(b.lastSafe(List.of(marker("BEGIN"), row(true), last))).isNull();
        var safe = b.lastSafe(List.of(marker("END"), marker("BEGIN")));
        assertThat(safe.record()).isSameAs(last);
        assertThat(safe.index()).isZero();
    }

    @Test
    void onPostgresHeartbeatsAreNeverStoredOnTheBinlogTheyAre() {
        assertThat(postgres().lastSafe(List.of(heartbeat(), heartbeat()))).isNull();
        assertThat(index(binlog().lastSafe(List.of(heartbeat(), heartbeat())))).isEqualTo(1);
    }

    @Test
    void aTransactionSpanningBatchesIsSafeOnlyAtItsEnd() {
        var b = binlog();
        assertThat(b.lastSafe(List.of(marker("BEGIN"), row(true)))).isNull();
        assertThat(b.lastSafe(List.of(row(true), row(true)))).isNull();
        assertThat(index(b.lastSafe(List.of(row(true), marker("END"))))).isEqualTo(1);
        // Closed: a record outside any transaction is safe again.
        assertThat(index(b.lastSafe(List.of(snapshotRow())))).isZero();
    }

    @Test
    void snapshotRowsOutsideAnyTransactionAreSafeButNotInsideOne() {
        for (var b : List.of(binlog(), postgres())) {
            assertThat(index(b.lastSafe(List.of(snapshotRow(), snapshotRow())))).isEqualTo(1);
            assertThat(b.lastSafe(List.of(marker("BEGIN"), snapshotRow()))).isNull();
        }
    }

    @Test
    void onPostgresOtherRecordsOutsideATransactionAreNeverStored() {
        // e.g. a non-transactional logical decoding message: its position is COMMIT-typed
        assertThat(postgres().lastSafe(List.of(row(false)))).isNull();
    }
}
