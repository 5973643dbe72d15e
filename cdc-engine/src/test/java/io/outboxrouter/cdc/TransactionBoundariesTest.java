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
        return new TransactionBoundaries<>("router", TransactionBoundaries.Mode.BINLOG, r -> r);
    }

    private static TransactionBoundaries<SourceRecord> postgres() {
        return new TransactionBoundaries<>("router", TransactionBoundaries.Mode.POSTGRES_MARKERS, r -> r);
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

    // --- Postgres without transaction metadata ------------------------------------------------------------------------
    // Offsets as Debezium writes them: txId, and lsn_commit, the end of the last COMMIT read before the record.

    private static final Schema PG_CHANGE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA).build();
    private static final Schema PG_HEARTBEAT = SchemaBuilder.struct().name(TransactionBoundaries.HEARTBEAT_SCHEMA)
            .field("ts_ms", Schema.INT64_SCHEMA).build();

    /** A change of transaction {@code txId}, read after the COMMIT that ended at {@code lastCommit}. */
    private static SourceRecord change(long txId, long lastCommit) {
        return new SourceRecord(Map.of(), Map.of("txId", txId, "lsn", lastCommit + 10, "lsn_commit", lastCommit), "router.public.outbox",
                PG_CHANGE, new Struct(PG_CHANGE).put("op", "c"));
    }

    /** A non-transactional logical decoding message: no txId, a COMMIT-typed position (its own LSN is the last commit). */
    private static SourceRecord nonTransactionalMessage(long lsn) {
        return new SourceRecord(Map.of(), Map.of("lsn", lsn, "lsn_commit", lsn), "router.message", PG_CHANGE,
                new Struct(PG_CHANGE).put("op", "m"));
    }

    private static SourceRecord pgHeartbeat(long txId, long lastCommit) {
        return new SourceRecord(Map.of(), Map.of("txId", txId, "lsn", lastCommit, "lsn_commit", lastCommit), "__debezium-heartbeat.router",
                PG_HEARTBEAT, new Struct(PG_HEARTBEAT).put("ts_ms", 1L));
    }

    private static TransactionBoundaries<SourceRecord> postgresWithoutMarkers() {
        return new TransactionBoundaries<>("router", TransactionBoundaries.Mode.POSTGRES, r -> r);
    }

    @Test
    void withoutMarkersATransactionEndsWhereTheNextBegins() {
        var b = postgresWithoutMarkers();
        var batch = List.of(change(7, 100), change(7, 100), change(8, 200), change(9, 300), change(9, 300));
        var safe = b.lastSafe(batch);
        assertThat(safe.record()).as("the last change of transaction 8, the last one known to have ended").isSameAs(batch.get(2));
        assertThat(safe.index()).isEqualTo(2);
        assertThat(b.open()).as("transaction 9 may have more rows").isTrue();
    }

    @Test
    void withoutMarkersATransactionSpanningBatchesEndsInALaterOne() {
        var b = postgresWithoutMarkers();
        var last = change(7, 100);
        assertThat(b.lastSafe(List.of(change(7, 100), change(7, 100)))).isNull();
        assertThat(b.lastSafe(List.of(last))).as("still transaction 7").isNull();
        var safe = b.lastSafe(List.of(change(8, 200)));
        assertThat(safe.record()).as("the last change of 7, from the previous batch").isSameAs(last);
        assertThat(safe.index()).as("nothing of this batch is covered").isEqualTo(-1);
    }

    @Test
    void withoutMarkersAHeartbeatAfterTheCommitEndsTheTransactionOneBeforeItDoesNot() {
        var b = postgresWithoutMarkers();
        var last = change(7, 100);
        assertThat(b.lastSafe(List.of(change(7, 100), last, pgHeartbeat(7, 100)))).as("read between two rows of 7").isNull();
        var safe = b.lastSafe(List.of(pgHeartbeat(7, 200)));
        assertThat(safe.record()).as("the change's position, never the heartbeat's").isSameAs(last);
        assertThat(safe.index()).isZero();
        assertThat(b.open()).isFalse();
        assertThat(b.lastSafe(List.of(pgHeartbeat(7, 200)))).as("already stored").isNull();
        // transaction 8 touched no captured table: its COMMIT moved lsn_commit, no record came
        b.lastSafe(List.of(change(9, 300)));
        assertThat(b.lastSafe(List.of(pgHeartbeat(8, 400)))).isNotNull();
    }

    @Test
    void withoutMarkersANonTransactionalMessageEndsTheTransactionAndIsNeverStored() {
        var b = postgresWithoutMarkers();
        var last = change(7, 100);
        var safe = b.lastSafe(List.of(last, nonTransactionalMessage(200), nonTransactionalMessage(210)));
        assertThat(safe.record()).isSameAs(last);
        assertThat(safe.index()).as("covers only what came before the message").isZero();
        assertThat(b.lastSafe(List.of(nonTransactionalMessage(220)))).as("a message alone has no position to store").isNull();
        assertThat(b.open()).isFalse();
    }

    @Test
    void withoutMarkersWhatIsReadAgainAfterTheTaskRestartedInTheProcessEndsNothing() {
        // Transaction 7 is open (its rows after the COMMIT at 100) when the connector's task restarts and resumes from the
        // stored position, the last change of transaction 5 (read after the COMMIT at 50).
        var b = postgresWithoutMarkers();
        assertThat(b.lastSafe(List.of(change(7, 100), change(7, 100)))).isNull();
        assertThat(b.lastSafe(List.of(pgHeartbeat(5, 50)))).as("a heartbeat at the resumed position").isNull();
        assertThat(b.open()).isFalse();
        assertThat(b.lastSafe(List.of(change(6, 60), change(6, 60)))).as("transaction 6 read again").isNull();
        var last = change(7, 100);
        assertThat(b.lastSafe(List.of(change(7, 100), last))).as("6 ended; 7 read again from its start").isNotNull();
        assertThat(b.lastSafe(List.of(pgHeartbeat(7, 200))).record()).isSameAs(last);

        var replayOfAnother = postgresWithoutMarkers();
        replayOfAnother.lastSafe(List.of(change(7, 100)));
        assertThat(replayOfAnother.lastSafe(List.of(change(9, 100)))).as("another transaction after the same COMMIT: read again").isNull();
    }

    @Test
    void withoutMarkersSnapshotRowsOutsideAnyTransactionAreSafe() {
        var b = postgresWithoutMarkers();
        assertThat(index(b.lastSafe(List.of(snapshotRow(), snapshotRow())))).isEqualTo(1);
        assertThat(b.lastSafe(List.of(change(7, 100), snapshotRow()))).isNull();
        assertThat(postgresWithoutMarkers().lastSafe(List.of(heartbeat(), pgHeartbeat(3, 100)))).as("nothing open: nothing to store")
                .isNull();
    }
}
