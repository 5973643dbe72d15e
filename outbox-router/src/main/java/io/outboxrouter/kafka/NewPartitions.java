package io.outboxrouter.kafka;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Utils;

/**
 * The topics and partitions a producer has had a record acknowledged on. A partition that is not among them may be new:
 * its first record is sent alone and acknowledged before any other, so that it never has two produce requests in flight.
 * A broker that has not yet applied a topic's creation refuses the first with NOT_LEADER_OR_FOLLOWER, may append the
 * second, and then refuses every retry of the first as out of sequence until the delivery timeout (KAFKA-15591).
 * One producer's thread only.
 */
final class NewPartitions {
    private final Set<String> topics = new HashSet<>();
    private final Set<TopicPartition> partitions = new HashSet<>();

    /**
     * Where a record goes as the default partitioner places it ({@link TopicPartition}), or its topic (a {@code String})
     * while no record of the topic was acknowledged (its partitions are not known without waiting).
     *
     * @param partitionCounts partition counts asked of the producer, kept by the caller for one batch
     */
    Object where(Producer<byte[], byte[]> producer, ProducerRecord<byte[], byte[]> record, Map<String, Integer> partitionCounts) {
        if (!topics.contains(record.topic())) {
            return record.topic();
        }
        if (record.partition() != null) {
            return new TopicPartition(record.topic(), record.partition());
        }
        int count = partitionCounts.computeIfAbsent(record.topic(), t -> producer.partitionsFor(t).size());
        if (record.key() == null || count == 0) {
            return record.topic(); // spread by the producer: nothing to warm up per partition
        }
        return new TopicPartition(record.topic(), Utils.toPositive(Utils.murmur2(record.key())) % count);
    }

    /** Whether {@code where} (from {@link #where}) has not had a record acknowledged yet. */
    boolean isNew(Object where) {
        return where instanceof TopicPartition tp ? !partitions.contains(tp) : !topics.contains(where);
    }

    void written(RecordMetadata metadata) {
        topics.add(metadata.topic());
        partitions.add(new TopicPartition(metadata.topic(), metadata.partition()));
    }
}
