package io.outboxrouter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.cdc.SourcePosition;
import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.retry.Retry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

class TransactionalPublisherTest {
    private static final SourcePosition POSITION = new SourcePosition(Map.of("server", "orders"), Map.of("lsn", 42L));

    /** A MockProducer whose commitTransaction fails the first {@code failures} times with what {@code failure} makes. */
    static final class FlakyProducer extends MockProducer<byte[], byte[]> {
        int commitFailures;
        RuntimeException commitFailure;
        int aborts;
        int commits;

        FlakyProducer() {
            super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        }

        @Override
        public void commitTransaction() {
            if (commitFailures > 0) {
                commitFailures--;
                throw commitFailure;
            }
            super.commitTransaction();
            commits++;
        }

        @Override
        public void abortTransaction() {
            aborts++;
            super.abortTransaction();
        }
    }

    private final List<FlakyProducer> made = new ArrayList<>();
    private final AtomicInteger retries = new AtomicInteger();

    private TransactionalPublisher publisher(FlakyProducer producer) {
        return new TransactionalPublisher("orders", "outbox-router.orders", "offsets", () -> {
            made.add(producer);
            return producer;
        }, new Retry(Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofSeconds(5)), new RouterListener() {
            @Override
            public void retrying(String operation, Throwable cause) {
                retries.incrementAndGet();
            }
        }, TopicProbe.NONE, 1_048_576);
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, String key) {
        return new ProducerRecord<>(topic, key.getBytes(StandardCharsets.UTF_8), "{}".getBytes(StandardCharsets.UTF_8));
    }

    private static List<String> topicsAndKeys(List<ProducerRecord<byte[], byte[]>> records) {
        return records.stream().map(r -> r.topic() + ":" + new String(r.key(), StandardCharsets.UTF_8)).toList();
    }

    @Test
    void theRecordsAndThePositionAfterThemAreCommittedInOneTransaction() throws Exception {
        var producer = new FlakyProducer();
        try (var p = publisher(producer)) {
            p.activate();
            assertThat(p.send(List.of(record("t", "a-1"), record("t", "a-2")))).isEmpty();
            assertThat(producer.transactionInFlight()).isTrue();
            assertThat(producer.history()).as("nothing visible before the commit").isEmpty();
            p.commit(POSITION);
            assertThat(producer.transactionCommitted()).isTrue();
            assertThat(topicsAndKeys(producer.history())).containsExactly("t:a-1", "t:a-2",
                    "offsets:[\"orders\",{\"server\":\"orders\"}]");
            assertThat(new String(producer.history().get(2).value(), StandardCharsets.UTF_8)).isEqualTo("{\"lsn\":42}");
        }
    }

    @Test
    void aFailedTransactionIsAbortedAndSentAgainWholeAndInOrderInANewOne() throws Exception {
        var producer = new FlakyProducer();
        producer.commitFailures = 2;
        producer.commitFailure = new KafkaException("the broker went away");
        try (var p = publisher(producer)) {
            p.activate();
            p.send(List.of(record("t", "a-1")));
            p.send(List.of(record("t", "b-1"), record("t", "a-2")));
            p.commit(POSITION);
            assertThat(producer.aborts).isEqualTo(2);
            assertThat(producer.commits).isEqualTo(1);
            assertThat(retries).hasValue(2);
            assertThat(topicsAndKeys(producer.history())).as("committed once, in order, the position last")
                    .containsExactly("t:a-1", "t:b-1", "t:a-2", "offsets:[\"orders\",{\"server\":\"orders\"}]");
            p.send(List.of(record("t", "a-3")));
            p.commit(POSITION);
            assertThat(producer.history()).hasSize(6);
        }
        assertThat(made).as("the same producer throughout: a new one would need initTransactions").hasSize(1);
    }

    @Test
    void aTimedOutCommitIsRetriedAsACommitNotAbortedAndSentTwice() throws Exception {
        var producer = new FlakyProducer();
        producer.commitFailures = 1;
        producer.commitFailure = new TimeoutException("commit timed out");
        try (var p = publisher(producer)) {
            p.activate();
            p.send(List.of(record("t", "a-1")));
            p.commit(POSITION);
            assertThat(producer.aborts).isZero();
            assertThat(topicsAndKeys(producer.history())).containsExactly("t:a-1", "offsets:[\"orders\",{\"server\":\"orders\"}]");
        }
    }

    @Test
    void aFencedProducerStopsTheStreamWithOneClearReasonAndIsNeverMadeAgain() throws Exception {
        var producer = new FlakyProducer();
        try (var p = publisher(producer)) {
            p.activate();
            p.send(List.of(record("t", "a-1")));
            producer.fenceProducer(); // another process called initTransactions with the same transactional.id
            assertThatThrownBy(() -> {
                p.send(List.of(record("t", "a-2")));
                p.commit(POSITION);
            }).isInstanceOf(Retry.GaveUpException.class)
                    .hasRootCauseInstanceOf(org.apache.kafka.common.errors.ProducerFencedException.class)
                    .hasMessageContaining("fenced: another process started router stream orders")
                    .hasMessageContaining("transactional.id outbox-router.orders");
        }
        assertThat(made).hasSize(1);
        assertThat(retries).as("fencing is not retried").hasValue(0);
    }

    @Test
    void anOldEpochOnceIsRecoveredFromButTwiceInARowIsAFencing() throws Exception {
        var timedOut = new FlakyProducer();
        timedOut.commitFailures = 1; // the coordinator aborted a transaction that outlived transaction.timeout.ms
        timedOut.commitFailure = new org.apache.kafka.common.errors.InvalidProducerEpochException("old epoch");
        try (var p = publisher(timedOut)) {
            p.activate();
            p.send(List.of(record("t", "a-1")));
            p.commit(POSITION);
            assertThat(timedOut.aborts).isEqualTo(1);
            assertThat(topicsAndKeys(timedOut.history())).containsExactly("t:a-1", "offsets:[\"orders\",{\"server\":\"orders\"}]");
        }
        var zombie = new FlakyProducer();
        zombie.commitFailures = Integer.MAX_VALUE; // another producer of the id initialized: every commit is refused
        zombie.commitFailure = new org.apache.kafka.common.errors.InvalidProducerEpochException("old epoch");
        try (var p = publisher(zombie)) {
            p.activate();
            p.send(List.of(record("t", "a-1")));
            assertThatThrownBy(() -> p.commit(POSITION)).isInstanceOf(Retry.GaveUpException.class)
                    .hasMessageContaining("fenced: another process started router stream orders");
            assertThat(zombie.aborts).isEqualTo(1);
        }
    }

    @Test
    void closingAbortsTheOpenTransactionSoThatReadCommittedConsumersAreNotHeldUp() throws Exception {
        var producer = new FlakyProducer();
        var p = publisher(producer);
        p.activate();
        p.send(List.of(record("t", "a-1")));
        p.close();
        assertThat(producer.transactionAborted()).isTrue();
        assertThat(producer.closed()).isTrue();
    }
}
