package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.connector.base.ChangeEventQueue;
import io.debezium.pipeline.DataChangeEvent;
import io.debezium.util.LoggingContext;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

class QueuedSizeTest {
    private static final Schema ROW = SchemaBuilder.struct().field("id", Schema.STRING_SCHEMA).field("payload", Schema.OPTIONAL_STRING_SCHEMA)
            .field("blob", Schema.OPTIONAL_BYTES_SCHEMA).build();
    private static final Schema SOURCE = SchemaBuilder.struct().field("sequence", Schema.STRING_SCHEMA).build();
    private static final Schema ENVELOPE = SchemaBuilder.struct().field("after", ROW).field("source", SOURCE).field("op", Schema.STRING_SCHEMA)
            .build();

    private static DataChangeEvent change(String payload, byte[] blob) {
        var row = new Struct(ROW).put("id", "e-1").put("payload", payload).put("blob", blob);
        var value = new Struct(ENVELOPE).put("after", row).put("source", new Struct(SOURCE).put("sequence", "x".repeat(500))).put("op", "c");
        return new DataChangeEvent(new SourceRecord(Map.of(), Map.of(), "t", ENVELOPE, value));
    }

    @Test
    void theRowsStringsAndBytesCountTheEnvelopeIsAnAllowance() {
        long rest = QueuedSize.ENVELOPE_BYTES + 2 * 3 + 2 * 500; // the id and the source block's sequence
        assertThat(QueuedSize.of(change(null, null))).isEqualTo(rest);
        assertThat(QueuedSize.of(change("p".repeat(100_000), new byte[5000]))).as("a string at two bytes a character, bytes as they are")
                .isEqualTo(rest + 200_000 + 5000);
    }

    @Test
    void aQueueBoundInBytesHoldsTheReaderBackWhenRowsAreLarge() throws Exception {
        var queue = new ChangeEventQueue.Builder<DataChangeEvent>().pollInterval(Duration.ofMillis(10)).maxBatchSize(2048).maxQueueSize(8192)
                .maxQueueSizeInBytes(1_000_000).loggingContextSupplier(() -> LoggingContext.forConnector("test", "test", "test")).build();
        var large = change("p".repeat(200_000), null); // about 400 KB each
        queue.enqueue(large);
        queue.enqueue(large);
        queue.enqueue(large); // 1.2 MB: the limit is reached
        var fourth = CompletableFuture.runAsync(() -> {
            try {
                queue.enqueue(large);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(200);
        assertThat(fourth).as("the reader waits for room").isNotDone();
        int polled = queue.poll().size(); // frees the room: the fourth comes in, maybe within this poll
        fourth.get(5, TimeUnit.SECONDS);
        assertThat(polled + queue.poll().size()).isEqualTo(4);
        assertThat(queue.currentQueueSizeInBytes()).isZero();
    }

    @Test
    void aBatchEndsOnceItsOwnRowsReachTheBoundEvenWithinALongPollInterval() throws Exception {
        var queue = new ChangeEventQueue.Builder<DataChangeEvent>().pollInterval(Duration.ofSeconds(5)).maxBatchSize(2048).maxQueueSize(8192)
                .maxQueueSizeInBytes(1_000_000).loggingContextSupplier(() -> LoggingContext.forConnector("test", "test", "test")).build();
        var large = change("p".repeat(200_000), null); // about 400 KB each
        var reader = CompletableFuture.runAsync(() -> {
            try {
                for (int i = 0; i < 12; i++) {
                    queue.enqueue(large); // as fast as the bound lets it
                }
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        int total = 0;
        while (total < 12) {
            var batch = queue.poll();
            assertThat(batch.size()).as("a batch of at most the bound and the row that crossed it").isLessThanOrEqualTo(3);
            total += batch.size();
        }
        reader.get(5, TimeUnit.SECONDS);
    }
}
