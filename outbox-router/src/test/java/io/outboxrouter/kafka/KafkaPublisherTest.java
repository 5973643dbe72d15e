package io.outboxrouter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.config.KafkaConfig;
import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.retry.Retry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
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
}
