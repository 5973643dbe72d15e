package io.outboxrouter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.config.Delivery;
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
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

class KafkaPublisherTest {

    @Test
    void anUnreachableBrokerIsRetriedThenGivenUpWithTheReasonNeverSkipped() {
        // Nothing listens on port 1: every attempt times out waiting for metadata.
        var kafka = new KafkaConfig("127.0.0.1:1", Map.of("max.block.ms", "300", "delivery.timeout.ms", "600",
                "request.timeout.ms", "300"), Duration.ofSeconds(2), Delivery.AT_LEAST_ONCE, "offsets");
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
        var config = ProducerSettings.atLeastOnce(new KafkaConfig("k:9092", Map.of("compression.type", "zstd", "linger.ms", "7"),
                Duration.ofMinutes(5), Delivery.AT_LEAST_ONCE, "offsets"), "orders-router");
        assertThat(config).containsEntry("acks", "all").containsEntry("enable.idempotence", "true")
                .containsEntry("compression.type", "zstd").containsEntry("linger.ms", "7")
                .containsEntry("client.id", "orders-router").containsEntry("bootstrap.servers", "k:9092");
    }

    /** The shards of one process share its heap: each producer's default buffer is a share of the one-stream default. */
    @Test
    void theStreamsOfOneProcessShareTheDefaultProducerBuffer() {
        var kafka = new KafkaConfig("k:9092", Map.of(), Duration.ofMinutes(5), Delivery.AT_LEAST_ONCE, "offsets");
        long one = Long.parseLong(ProducerSettings.atLeastOnce(kafka, "r", 1).getProperty("buffer.memory"));
        long ofFour = Long.parseLong(ProducerSettings.atLeastOnce(kafka, "r", 4).getProperty("buffer.memory"));
        assertThat(ofFour).isEqualTo(Math.max(4L << 20, one / 4));
        var set = new KafkaConfig("k:9092", Map.of("buffer.memory", "50000000"), Duration.ofMinutes(5), Delivery.AT_LEAST_ONCE, "offsets");
        assertThat(ProducerSettings.atLeastOnce(set, "r", 4).getProperty("buffer.memory")).as("as the user set it").isEqualTo("50000000");
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

    @Test
    void theFirstRecordOfEachNewPartitionIsAcknowledgedBeforeAnyOtherIsSentToIt() throws Exception {
        // KAFKA-15591: two requests in flight to a partition the broker is still creating can lose or stall the first.
        var partitions = List.of(new PartitionInfo("orders.Order", 0, null, null, null), new PartitionInfo("orders.Order", 1, null, null, null));
        var cluster = new Cluster("c", List.of(), partitions, java.util.Set.of(), java.util.Set.of());
        var log = new java.util.ArrayList<String>();
        // As KafkaProducer places a keyed record without a custom partitioner (MockProducer's own default differs).
        var builtIn = new org.apache.kafka.clients.producer.Partitioner() {
            @Override
            public int partition(String topic, Object key, byte[] keyBytes, Object value, byte[] valueBytes, Cluster c) {
                return org.apache.kafka.common.utils.Utils.toPositive(org.apache.kafka.common.utils.Utils.murmur2(keyBytes))
                        % c.partitionsForTopic(topic).size();
            }

            @Override
            public void close() {
            }

            @Override
            public void configure(Map<String, ?> configs) {
            }
        };
        var producer = new MockProducer<>(cluster, true, builtIn, new ByteArraySerializer(), new ByteArraySerializer()) {
            @Override
            public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
                log.add("send " + new String(record.key()));
                return super.send(record, callback);
            }

            @Override
            public synchronized void flush() {
                log.add("flush");
                super.flush();
            }
        };
        // Keys by partition, as the default partitioner places them (murmur2 of the key, modulo 2).
        var byPartition = new java.util.TreeMap<Integer, List<String>>();
        for (int i = 0; byPartition.values().stream().mapToInt(List::size).min().orElse(0) < 2 || byPartition.size() < 2; i++) {
            String key = "agg-" + i;
            int p = org.apache.kafka.common.utils.Utils.toPositive(org.apache.kafka.common.utils.Utils.murmur2(key.getBytes())) % 2;
            byPartition.computeIfAbsent(p, x -> new java.util.ArrayList<>()).add(key);
        }
        String a1 = byPartition.get(0).get(0);
        String a2 = byPartition.get(0).get(1);
        String b1 = byPartition.get(1).get(0);
        String b2 = byPartition.get(1).get(1);
        try (var publisher = new KafkaPublisher(() -> producer, FAST, RouterListener.NONE, TopicProbe.NONE)) {
            publisher.send(List.of(record(a1), record(a2), record(b1), record(b2)));
            assertThat(log).containsExactly("send " + a1, "flush", "send " + b1, "flush", "send " + a2, "send " + b2, "flush");

            log.clear();
            publisher.send(List.of(record(a1), record(b1)));
            assertThat(log).as("partitions written before are not new").containsExactly("send " + a1, "send " + b1, "flush");
        }
        assertThat(producer.history()).extracting(r -> new String(r.key())).containsExactly(a1, b1, a2, b2, a1, b1);
    }

    private static ProducerRecord<byte[], byte[]> record(String key) {
        return new ProducerRecord<>("orders.Order", key.getBytes(), "{}".getBytes());
    }
}
