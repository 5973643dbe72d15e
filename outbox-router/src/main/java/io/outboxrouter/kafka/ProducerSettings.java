package io.outboxrouter.kafka;

import io.outboxrouter.config.KafkaConfig;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The producer settings of the router's streams, replays and commands, and the base its consumers and admin clients
 * take their connection and security settings from ({@link ClientConfigs}).
 */
public final class ProducerSettings {
    /** Kafka's default {@code max.request.size}. */
    static final String DEFAULT_MAX_REQUEST = "1048576";

    /**
     * How long a Kafka transaction may stay open before the coordinator aborts it, unless {@code kafka.producer} says
     * otherwise: a source transaction is one Kafka transaction however long it takes to stream (a COPY of millions of
     * rows, a Kafka outage while one is open), so the brokers' default ceiling ({@code transaction.max.timeout.ms}).
     */
    public static final String DEFAULT_TRANSACTION_TIMEOUT_MS = "900000";

    private ProducerSettings() {
    }

    static Properties atLeastOnce(KafkaConfig kafka, String clientId) {
        return atLeastOnce(kafka, clientId, 1);
    }

    /** @param streams how many streams of the router share this process's heap: each producer takes its share */
    static Properties atLeastOnce(KafkaConfig kafka, String clientId, int streams) {
        var p = new Properties();
        // Every send of a batch ends with a flush (a transaction's commit flushes too), which sends what lingers at once:
        // linger costs no latency, and spares the sender thread from shipping each partition's first records alone
        // while the rest are still being appended, and allocates fewer of lz4's per-batch buffers.
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "262144");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.putAll(kafka.producer());
        // Kafka's default is 32 MB, a quarter of a small heap, and a producer never gives back what it once took; a record
        // larger than the buffer is refused, so it holds at least two of the largest.
        p.putIfAbsent(ProducerConfig.BUFFER_MEMORY_CONFIG, Long.toString(Math.max(defaultBufferMemory(streams), 2L * maxRequestBytes(p))));
        // Not overridable (the config loader refuses other values): the delivery guarantees depend on them.
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.putIfAbsent(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    /** The settings of a transactional stream: the at-least-once ones, with its transactional id. */
    public static Properties transactional(KafkaConfig kafka, String clientId, String transactionalId) {
        return transactional(kafka, clientId, transactionalId, 1);
    }

    static Properties transactional(KafkaConfig kafka, String clientId, String transactionalId, int streams) {
        var p = atLeastOnce(kafka, clientId, streams);
        p.putIfAbsent(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, DEFAULT_TRANSACTION_TIMEOUT_MS);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        return p;
    }

    /** The producer's {@code max.request.size}: a larger record is refused before it is sent. */
    static int maxRequestBytes(Properties producerConfig) {
        return Integer.parseInt(producerConfig.getProperty(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, DEFAULT_MAX_REQUEST));
    }

    /**
     * The producer's buffer unless {@code kafka.producer.buffer.memory} says otherwise: an eighth of the heap, at most
     * 32 MB, shared by the streams of one process.
     */
    static long defaultBufferMemory(int streams) {
        return Math.max(4L << 20, Math.min(32L << 20, Runtime.getRuntime().maxMemory() / 8) / Math.max(1, streams));
    }
}
