package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.change.ChangeRecords;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

/**
 * The order in which a batch reaches a transactional (exactly-once) handler: the events of complete source transactions,
 * then the commit with the position after them, and only then the events of a transaction still open, which the next
 * commit covers; the engine is told to store only the committed position, and when ({@code offsets.commit-interval}).
 */
class BatchConsumerTest {
    private static final Schema MARKER = SchemaBuilder.struct().field("status", Schema.STRING_SCHEMA).field("id", Schema.STRING_SCHEMA).build();
    private static final Schema TX = SchemaBuilder.struct().optional().field("id", Schema.STRING_SCHEMA).build();
    private static final Schema SOURCE = SchemaBuilder.struct().field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA).build();
    private static final Schema ROW = SchemaBuilder.struct().optional().field("id", Schema.STRING_SCHEMA).build();
    private static final Schema CHANGE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA).field("source", SOURCE)
            .field("after", ROW).field("transaction", TX).build();

    private final List<String> calls = new ArrayList<>();
    private long nanos;
    private BatchConsumer consumer;
    /** What the engine's offset writer holds: the last position marked processed. */
    private Object markedLsn;

    private static RecordChangeEvent<SourceRecord> marker(String status) {
        var r = new SourceRecord(Map.of("server", "router"), Map.of("lsn", 0L), "router.transaction", MARKER,
                new Struct(MARKER).put("status", status).put("id", "1"));
        return () -> r;
    }

    private static RecordChangeEvent<SourceRecord> row(String id, long lsn) {
        var value = new Struct(CHANGE).put("op", "c").put("source", new Struct(SOURCE).put("schema", "public").put("table", "outbox"))
                .put("after", new Struct(ROW).put("id", id)).put("transaction", new Struct(TX).put("id", "1"));
        var r = new SourceRecord(Map.of("server", "router"), Map.of("lsn", lsn), "router.public.outbox", CHANGE, value);
        return () -> r;
    }

    private final ChangeHandler handler = new ChangeHandler() {
        @Override
        public void handle(List<ChangeEvent> batch) {
            calls.add("handle " + String.join(",", batch.stream().map(e -> (String) e.row().get("id")).toList()));
        }

        @Override
        public boolean transactional() {
            return true;
        }

        @Override
        public void commit(SourcePosition position) {
            calls.add("commit lsn " + position.offset().get("lsn"));
        }
    };

    private final DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer = new DebeziumEngine.RecordCommitter<>() {
        @Override
        public void markProcessed(RecordChangeEvent<SourceRecord> record) {
            markedLsn = record.record().sourceOffset().get("lsn");
        }

        @Override
        public void markBatchFinished() {
            // As the engine does: its commit policy decides, and it stores what the offset writer holds.
            if (consumer.storeDue()) {
                calls.add("stored lsn " + markedLsn);
            }
        }

        @Override
        public void markProcessed(RecordChangeEvent<SourceRecord> record, DebeziumEngine.Offsets offsets) {
            markProcessed(record);
        }

        @Override
        public DebeziumEngine.Offsets buildOffsets() {
            return (key, value) -> { };
        }
    };

    private BatchConsumer consumer(Duration storeInterval) {
        return consumer(storeInterval, handler);
    }

    private BatchConsumer consumer(Duration storeInterval, ChangeHandler handler) {
        consumer = new BatchConsumer("router", handler,
                new TransactionBoundaries<>("router", TransactionBoundaries.Mode.POSTGRES_MARKERS, RecordChangeEvent<SourceRecord>::record),
                new ChangeRecords(s -> "pos"), storeInterval, Optional::empty, () -> nanos);
        return consumer;
    }

    private void at(long millis) {
        nanos = Duration.ofMillis(millis).toNanos();
    }

    @Test
    void completeTransactionsAreCommittedWithTheirPositionBeforeTheOpenOnesEventsAreHandedOver() throws Exception {
        // Postgres: the position stored is the last change of the complete transaction, never its END.
        var consumer = consumer(Duration.ZERO);
        consumer.handleBatch(List.of(marker("BEGIN"), row("a1", 10), row("a2", 11), marker("END"), marker("BEGIN"), row("b1", 20)),
                committer);
        assertThat(calls).containsExactly("handle a1,a2", "commit lsn 11", "handle b1", "stored lsn 11");
        calls.clear();
        // The open transaction's END comes in the next batch, with a whole transaction after it.
        consumer.handleBatch(List.of(row("b2", 21), marker("END"), marker("BEGIN"), row("c1", 30), marker("END")), committer);
        assertThat(calls).containsExactly("handle b2,c1", "commit lsn 30", "stored lsn 30");
        calls.clear();
        // A batch inside one long transaction (a COPY): handed over, neither committed nor stored.
        consumer.handleBatch(List.of(marker("BEGIN"), row("d1", 40), row("d2", 41)), committer);
        consumer.handleBatch(List.of(row("d3", 42)), committer);
        assertThat(calls).containsExactly("handle d1,d2", "handle d3");
        calls.clear();
        consumer.handleBatch(List.of(marker("END")), committer);
        assertThat(calls).as("its END alone commits it, at its last change").containsExactly("commit lsn 42", "stored lsn 42");
    }

    /** An at-least-once handler: events handed over, acknowledged, no commit of its own. */
    private final ChangeHandler atLeastOnce = batch -> calls.add("handle " + String.join(",", batch.stream().map(e -> (String) e.row().get("id")).toList()));

    @Test
    void withACommitIntervalTheFirstPositionAfterAQuietSpellIsStoredAtOnceThenAtMostThatOften() throws Exception {
        var consumer = consumer(Duration.ofSeconds(1), atLeastOnce);
        at(10_000);
        consumer.handleBatch(List.of(marker("BEGIN"), row("a1", 10), marker("END")), committer);
        assertThat(calls).as("the first position").containsExactly("handle a1", "stored lsn 10");
        calls.clear();
        at(10_200);
        consumer.handleBatch(List.of(marker("BEGIN"), row("b1", 20), marker("END")), committer);
        at(10_300);
        consumer.handleBatch(List.of(marker("BEGIN"), row("c1", 30), marker("END")), committer);
        assertThat(calls).as("marked, not stored, within the interval").containsExactly("handle b1", "handle c1");
        calls.clear();
        at(11_000);
        consumer.handleBatch(List.of(marker("BEGIN"), row("d1", 40)), committer);
        assertThat(calls).as("the interval is over: the next batch stores what was marked, never a transaction still open")
                .containsExactly("handle d1", "stored lsn 30");
        calls.clear();
        at(13_000);
        consumer.handleBatch(List.of(row("d2", 41), marker("END")), committer);
        assertThat(calls).as("its END after a quiet spell: stored at once").containsExactly("handle d2", "stored lsn 41");
    }

    @Test
    void aTransactionalHandlersPositionIsStoredWithEveryCommitWhateverTheInterval() throws Exception {
        var consumer = consumer(Duration.ofSeconds(1));
        at(10_000);
        consumer.handleBatch(List.of(marker("BEGIN"), row("a1", 10), marker("END")), committer);
        at(10_100);
        consumer.handleBatch(List.of(marker("BEGIN"), row("b1", 20), marker("END")), committer);
        assertThat(calls).as("the offsets table mirrors the offsets topic").containsExactly("handle a1", "commit lsn 10",
                "stored lsn 10", "handle b1", "commit lsn 20", "stored lsn 20");
    }

    @Test
    void aDrainThatWaitsForTheStoredPositionHasEveryPositionStoredAtOnce() throws Exception {
        var consumer = consumer(Duration.ofSeconds(1), atLeastOnce);
        var storedIndexes = new ArrayList<Integer>();
        at(10_000);
        consumer.handleBatch(List.of(marker("BEGIN"), row("a1", 10), marker("END")), committer);
        consumer.drain = new Drain() {
            @Override
            void start() {
            }

            @Override
            boolean needsPromptStore() {
                return true;
            }

            @Override
            void batchStored(int markerIndex, int safeIndex) {
                storedIndexes.add(safeIndex);
            }
        };
        calls.clear();
        at(10_100);
        consumer.handleBatch(List.of(marker("BEGIN"), row("b1", 20), marker("END"), marker("BEGIN"), row("c1", 30)), committer);
        assertThat(calls).containsExactly("handle b1,c1", "stored lsn 20");
        assertThat(storedIndexes).containsExactly(2);
        consumer.drain = null;
        calls.clear();
        at(10_200);
        consumer.handleBatch(List.of(marker("END")), committer);
        assertThat(calls).as("the drain over, the interval again").isEmpty();
    }
}
