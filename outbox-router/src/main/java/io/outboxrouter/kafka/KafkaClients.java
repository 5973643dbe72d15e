package io.outboxrouter.kafka;

import io.outboxrouter.config.KafkaConfig;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The one place the router makes Kafka clients. Their settings all start from {@link ProducerSettings} (which carries
 * {@code kafka.bootstrap-servers} and every {@code kafka.producer.*} setting, security included); consumers and admin
 * clients take the part of those that applies to them ({@link ClientConfigs}). A test fails when a client is made
 * anywhere else, so that no feature can reach Kafka without the user's security settings.
 */
public final class KafkaClients {
    private KafkaClients() {
    }

    /** A producer of byte keys and values with these settings (made by {@link ProducerSettings}). */
    static Producer<byte[], byte[]> producer(Properties settings) {
        return new KafkaProducer<>(settings, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** A consumer of byte keys and values with these settings (made by {@link ClientConfigs#consumer}). */
    static KafkaConsumer<byte[], byte[]> consumer(Properties settings) {
        return new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** An admin client with these settings (made by {@link ClientConfigs#admin}). */
    static Admin admin(Map<String, Object> settings) {
        return Admin.create(settings);
    }

    /** An admin client with the router's connection and security settings, and {@code overrides} (timeouts) on top. */
    public static Admin admin(KafkaConfig kafka, String clientId, Map<String, Object> overrides) {
        var settings = new HashMap<>(ClientConfigs.admin(ProducerSettings.atLeastOnce(kafka, clientId)));
        settings.putAll(overrides);
        return admin(settings);
    }

    /** A transactional producer with the router's settings and {@code overrides} on top (check's probe of the transactional id). */
    public static Producer<byte[], byte[]> transactionalProducer(KafkaConfig kafka, String clientId, String transactionalId,
                                                                 Map<String, Object> overrides) {
        var settings = ProducerSettings.transactional(kafka, clientId, transactionalId);
        settings.putAll(overrides);
        return producer(settings);
    }
}
