package io.outboxrouter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.config.KafkaConfig;
import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.retry.Retry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

class KafkaPublisherTest {

    @Test
    void anUnreachableBrokerIsRetriedThenGivenUpWithTheReasonNeverSkipped() {
        // Nothing listens on port 1: every attempt times out waiting for metadata.
        var kafka = new KafkaConfig("127.0.0.1:1", Map.of("max.block.ms", "300", "delivery.timeout.ms", "600",
                "request.timeout.ms", "300"), Duration.ofSeconds(2));
        long start = System.nanoTime();
        try (var publisher = new KafkaPublisher(kafka, "test", Duration.ofMillis(100), RouterListener.NONE)) {
            assertThatThrownBy(() -> publisher.send(List.of(new ProducerRecord<>("t", "k".getBytes(), "v".getBytes()))))
                    .isInstanceOf(Retry.GaveUpException.class)
                    .hasMessageStartingWith("publish 1 records to Kafka: giving up after ")
                    .hasMessageContaining("TimeoutException");
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
    }

    @Test
    void deliveryGuaranteeSettingsCannotBeOverridden() {
        var config = KafkaPublisher.producerConfig(new KafkaConfig("k:9092", Map.of("compression.type", "zstd", "linger.ms", "7"),
                Duration.ofMinutes(5)), "orders-router");
        assertThat(config).containsEntry("acks", "all").containsEntry("enable.idempotence", "true")
                .containsEntry("compression.type", "zstd").containsEntry("linger.ms", "7")
                .containsEntry("client.id", "orders-router").containsEntry("bootstrap.servers", "k:9092");
    }

    /** A producer whose every send fails through its callback with the given error. */
    private static MockProducer<byte[], byte[]> failing(RuntimeException error, AtomicInteger made) {
        made.incrementAndGet();
        return new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer()) {
            @Override
            public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
                callback.onCompletion(null, error);
                return CompletableFuture.failedFuture(error);
            }
        };
    }

    private static final Retry FAST = new Retry(Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofSeconds(5));

    @Test
    void aTopicThatDoesNotExistAndIsNotCreatedStopsAtOnceNamingTheTopicAndTheFix() {
        var made = new AtomicInteger();
        var asked = new java.util.ArrayList<java.util.Set<String>>();
        TopicProbe probe = topics -> {
            asked.add(topics);
            return java.util.Optional.of("topic(s) " + String.join(", ", topics) + " do not exist and the broker does not create topics");
        };
        try (var publisher = new KafkaPublisher(() -> failing(new TimeoutException("Topic orders.Order not present in metadata after 100 ms."), made),
                FAST, RouterListener.NONE, probe)) {
            assertThatThrownBy(() -> publisher.send(List.of(new ProducerRecord<>("orders.Order", "k".getBytes(), "v".getBytes()))))
                    .isInstanceOf(Retry.GaveUpException.class).hasMessageContaining("topic(s) orders.Order do not exist")
                    .satisfies(e -> assertThat(((Retry.GaveUpException) e).wasRetryable()).as("not an outage").isFalse());
        }
        assertThat(asked).containsExactly(java.util.Set.of("orders.Order"));
        assertThat(made.get()).as("no retry on a new producer").isLessThanOrEqualTo(2);
    }

    @Test
    void anOutageWithTheSameSymptomIsRetried() {
        var made = new AtomicInteger();
        try (var publisher = new KafkaPublisher(() -> failing(new TimeoutException("Topic orders.Order not present in metadata after 100 ms."), made),
                new Retry(Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(200)), RouterListener.NONE, TopicProbe.NONE)) {
            assertThatThrownBy(() -> publisher.send(List.of(new ProducerRecord<>("orders.Order", "k".getBytes(), "v".getBytes()))))
                    .isInstanceOf(Retry.GaveUpException.class).hasMessageContaining("giving up after");
        }
        assertThat(made.get()).as("retried on new producers").isGreaterThan(2);
    }

    @Test
    void aTopicThePrincipalMayNotWriteStopsAtOnceWithTheGrantToAdd() {
        var made = new AtomicInteger();
        try (var publisher = new KafkaPublisher(() -> failing(new TopicAuthorizationException(java.util.Set.of("orders.Order")), made),
                FAST, RouterListener.NONE, TopicProbe.NONE)) {
            assertThatThrownBy(() -> publisher.send(List.of(new ProducerRecord<>("orders.Order", "k".getBytes(), "v".getBytes()))))
                    .isInstanceOf(Retry.GaveUpException.class).hasMessageContaining("not authorized to write to [orders.Order]")
                    .hasMessageContaining("grant WRITE and DESCRIBE");
        }
    }
}
