package io.outboxrouter.testing;

import java.util.Map;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;

/** A real single-node KRaft Kafka broker in the test JVM (Kafka's own test kit), on a loopback port. */
public final class KafkaBroker implements AutoCloseable {
    private final KafkaClusterTestKit cluster;

    private KafkaBroker(KafkaClusterTestKit cluster) {
        this.cluster = cluster;
    }

    public static KafkaBroker start() {
        try {
            var builder = new KafkaClusterTestKit.Builder(new TestKitNodes.Builder()
                    .setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build());
            // Single-node settings, or consumer groups and transactions hang on INVALID_REPLICATION_FACTOR.
            Map.of("offsets.topic.replication.factor", "1",
                    "offsets.topic.num.partitions", "1",
                    "transaction.state.log.replication.factor", "1",
                    "transaction.state.log.min.isr", "1",
                    "share.coordinator.state.topic.replication.factor", "1",
                    "share.coordinator.state.topic.min.isr", "1",
                    "group.initial.rebalance.delay.ms", "0",
                    "num.partitions", "4",
                    "auto.create.topics.enable", "true").forEach(builder::setConfigProp);
            var cluster = builder.build();
            cluster.format();
            cluster.startup();
            cluster.waitForReadyBrokers();
            warmUp(cluster.bootstrapServers());
            return new KafkaBroker(cluster);
        } catch (Exception e) {
            throw new IllegalStateException("could not start the test Kafka broker", e);
        }
    }

    /**
     * One idempotent send before any test: on a fresh test-kit broker, the first producers of a test (a router stopped
     * and started again at once) can share producer id 0, after which every send fails with
     * OutOfOrderSequenceException; taking the first id here avoids it.
     */
    private static void warmUp(String bootstrap) throws Exception {
        var p = new java.util.Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        try (var producer = new org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]>(p)) {
            producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>("test-broker-warm-up", new byte[0])).get();
        }
    }

    public String bootstrapServers() {
        return cluster.bootstrapServers();
    }

    @Override
    public void close() {
        try {
            cluster.close();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
