package io.outboxrouter.kafka;

import io.outboxrouter.config.KafkaConfig;
import io.outboxrouter.offsets.EngineOffsets;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The compacted topic an exactly-once router commits its source positions to, in the same Kafka transaction as the
 * records they cover (as Kafka Connect does for source connectors, KIP-618). A record's key is the engine's key of a
 * source partition ({@code ["<stream name>",{partition}]}, which names the router or shard), its value the offset, both
 * the JSON the offsets table holds; a null value (tombstone) forgets the position.
 */
public final class OffsetsTopic {
    private static final Logger LOG = LoggerFactory.getLogger(OffsetsTopic.class);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final KafkaConfig kafka;
    private final String topic;
    private final Properties clientConfig;

    public OffsetsTopic(KafkaConfig kafka) {
        this.kafka = kafka;
        this.topic = kafka.offsetsTopic();
        this.clientConfig = ProducerSettings.atLeastOnce(kafka, "outbox-router-offsets");
    }

    public String name() {
        return topic;
    }

    /**
     * Creates the topic when missing ({@code partitions}: one per stream of the router, so that each stream commits to a
     * partition of its own; {@code cleanup.policy=compact}; the broker's replication factor); refuses one that exists
     * without compaction, whose old positions would be deleted by retention.
     *
     * @return how many partitions the topic has
     * @throws IllegalStateException with the fix, when the topic exists but is not compacted
     */
    public int ensureExists(int partitions) throws ExecutionException, InterruptedException, java.util.concurrent.TimeoutException {
        try (var admin = KafkaClients.admin(adminConfig())) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, Optional.of(partitions), Optional.empty())
                        .configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT))))
                        .all().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                LOG.info("Created the offsets topic {} (compacted, {} partition(s))", topic, partitions);
                return partitions;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
            var resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            var policy = admin.describeConfigs(List.of(resource)).all().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                    .get(resource).get(TopicConfig.CLEANUP_POLICY_CONFIG);
            if (policy == null || !policy.value().contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
                throw new IllegalStateException("the offsets topic " + topic + " has cleanup.policy="
                        + (policy == null ? "?" : policy.value()) + ": it must be compacted, or retention deletes the router's "
                        + "position. Fix: kafka-configs.sh --alter --entity-type topics --entity-name " + topic
                        + " --add-config cleanup.policy=compact (or set kafka.offsets-topic to another topic)");
            }
            return admin.describeTopics(List.of(topic)).allTopicNames().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).get(topic)
                    .partitions().size();
        }
    }

    /** How many partitions the topic has; 0 when it does not exist. */
    public int partitions() {
        try (var consumer = consumer()) {
            return consumer.partitionsFor(topic, TIMEOUT).size();
        } catch (UnknownTopicOrPartitionException e) {
            return 0;
        }
    }

    /** The positions a stream has in this topic, read from its own partition ({@link #partitionOf}). */
    public Map<String, String> readStream(String streamName, int shardIndex) {
        int partitions = partitions();
        return partitions == 0 ? Map.of() : read(streamName, partitionOf(shardIndex, partitions));
    }

    /**
     * The partition a stream commits its positions to: the shard's index (0 for a router without shards), modulo the
     * topic's partitions. A read_committed reader stops at the first open transaction of its partition, so a stream
     * that shared one with another could read a stale position: the router refuses a topic with fewer partitions than
     * shards.
     */
    public static int partitionOf(int shardIndex, int partitions) {
        return Math.floorMod(shardIndex, Math.max(partitions, 1));
    }

    /**
     * The committed positions of one stream: every key of {@code streamName} with its last value, read with
     * {@code read_committed} up to the end of the topic. Call after the stream's producer initialized its transactions, so
     * that nothing of an earlier process is still open. Empty when the topic holds none (or does not exist).
     */
    public Map<String, String> read(String streamName) {
        return read(streamName, null);
    }

    /** As {@link #read(String)}, from one partition only (the stream's, {@link #partitionOf}), or every one when null. */
    public Map<String, String> read(String streamName, Integer partition) {
        return scan(partition, key -> EngineOffsets.engineOf(key).filter(streamName::equals).isPresent());
    }

    /** The key of a stream's source mark: not an engine key, so {@link #read} leaves it out. */
    public static String sourceKey(String streamName) {
        return "outbox-router.source:" + streamName;
    }

    /**
     * The source mark of a stream ({@link #sourceKey}): which router's offsets table its positions in this topic came
     * from. Empty when none was written (a topic of an earlier build, or a stream's first exactly-once start).
     */
    public Optional<String> readSource(String streamName, int shardIndex) {
        int partitions = partitions();
        String key = sourceKey(streamName);
        return partitions == 0 ? Optional.empty()
                : Optional.ofNullable(scan(partitionOf(shardIndex, partitions), key::equals).get(key));
    }

    /** The last value of each key that {@code keys} takes, read committed up to the end of one partition (every one when null). */
    private Map<String, String> scan(Integer partition, java.util.function.Predicate<String> keys) {
        var positions = new LinkedHashMap<String, String>();
        try (var consumer = consumer()) {
            var partitions = consumer.partitionsFor(topic, TIMEOUT).stream()
                    .filter(p -> partition == null || p.partition() == partition)
                    .map(p -> new TopicPartition(p.topic(), p.partition())).toList();
            if (partitions.isEmpty()) {
                return positions;
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            var end = new HashMap<>(consumer.endOffsets(partitions, TIMEOUT));
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (!end.isEmpty()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("could not read the offsets topic " + topic + " to its end within " + TIMEOUT.toSeconds()
                            + " s");
                }
                for (var r : consumer.poll(Duration.ofMillis(200))) {
                    if (r.key() == null) {
                        continue;
                    }
                    String key = new String(r.key(), StandardCharsets.UTF_8);
                    if (keys.test(key)) {
                        if (r.value() == null) {
                            positions.remove(key);
                        } else {
                            positions.put(key, new String(r.value(), StandardCharsets.UTF_8));
                        }
                    }
                }
                end.entrySet().removeIf(e -> consumer.position(e.getKey(), TIMEOUT) >= e.getValue());
            }
        } catch (UnknownTopicOrPartitionException e) {
            return positions;
        }
        return positions;
    }

    /**
     * Writes positions of one stream ({@code offsets set|reset}; a null value forgets the key) in a Kafka transaction
     * of the stream's own transactional id: a process still streaming it is fenced, and what it left open is aborted.
     */
    public void write(String streamName, int shardIndex, int shards, Map<String, String> entries) throws ExecutionException,
            InterruptedException, java.util.concurrent.TimeoutException {
        int partition = partitionOf(shardIndex, ensureExists(shards));
        var config = ProducerSettings.transactional(kafka, "outbox-router-offsets", KafkaConfig.transactionalId(streamName));
        try (var producer = KafkaClients.producer(config)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (var e : entries.entrySet()) {
                producer.send(new ProducerRecord<>(topic, partition, e.getKey().getBytes(StandardCharsets.UTF_8),
                        e.getValue() == null ? null : e.getValue().getBytes(StandardCharsets.UTF_8)));
            }
            producer.commitTransaction();
        }
    }

    private KafkaConsumer<byte[], byte[]> consumer() {
        return ClientConfigs.consumer(clientConfig, "outbox-router-offsets-", Map.of());
    }

    private Map<String, Object> adminConfig() {
        return ClientConfigs.admin(clientConfig);
    }
}
