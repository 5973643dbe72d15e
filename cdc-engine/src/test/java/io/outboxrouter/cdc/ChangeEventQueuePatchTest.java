package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.connector.base.ChangeEventQueue;
import io.debezium.util.LoggingContext;
import io.debezium.pipeline.Sizeable;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The queue between Debezium's reader and the engine is this module's copy, which does not spin (see its header). */
class ChangeEventQueuePatchTest {
    private record Item(String name) implements Sizeable {
        @Override
        public long objectSize() {
            return 1;
        }
    }

    private static ChangeEventQueue<Item> queue() {
        return new ChangeEventQueue.Builder<Item>().pollInterval(Duration.ofMillis(10)).maxBatchSize(100).maxQueueSize(400)
                .loggingContextSupplier(() -> LoggingContext.forConnector("test", "test", "test")).build();
    }

    @Test
    void thePatchedCopyIsLoadedAheadOfDebeziums() {
        String from = ChangeEventQueue.class.getProtectionDomain().getCodeSource().getLocation().toString();
        assertThat(from).as("loaded from").doesNotContain("debezium-connector-common");
        assertThat(ChangeEventQueue.NO_SPIN).isTrue();
    }

    @Test
    void anEmptyPollWaitsAtLeastThePollIntervalAndARecordEnqueuedMeanwhileIsReturned() throws Exception {
        var q = queue();
        long start = System.nanoTime();
        assertThat(q.poll()).isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("waited the poll interval").isGreaterThanOrEqualTo(Duration.ofMillis(10));

        var polled = CompletableFuture.supplyAsync(() -> {
            try {
                return q.poll();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        q.enqueue(new Item("a"));
        assertThat(polled.get()).extracting(Item::name).containsExactly("a");
    }

    @Test
    void anEmptyQueueIsSleptOnNotPolledEveryIntervalAndTheFirstRecordEndsTheSleep() throws Exception {
        var q = queue();
        long start = System.nanoTime();
        assertThat(q.poll()).isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("one sleep, not one poll interval")
                .isGreaterThanOrEqualTo(Duration.ofMillis(150));

        var polled = CompletableFuture.supplyAsync(() -> {
            try {
                return q.poll();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(50);
        long enqueued = System.nanoTime();
        q.enqueue(new Item("a"));
        q.enqueue(new Item("b"));
        assertThat(polled.get()).as("both, in the batch of the interval they came in").extracting(Item::name).containsExactly("a", "b");
        // Woken by the first record (at the end of its 10 ms interval), not by the end of the 200 ms sleep.
        assertThat(Duration.ofNanos(System.nanoTime() - enqueued)).isLessThan(Duration.ofMillis(140));
    }

    @Test
    void aProducerExceptionWakesASleepingPoll() throws Exception {
        var q = queue();
        var polled = CompletableFuture.supplyAsync(() -> {
            try {
                return q.poll();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(20);
        long failed = System.nanoTime();
        q.producerException(new IllegalStateException("reader failed"));
        assertThat(org.assertj.core.api.Assertions.catchThrowable(polled::join)).hasRootCauseMessage("reader failed");
        assertThat(Duration.ofNanos(System.nanoTime() - failed)).as("woken, not at the end of the sleep").isLessThan(Duration.ofMillis(150));
    }
}
