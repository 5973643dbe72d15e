package io.outboxrouter.kafka;

import io.outboxrouter.config.KafkaConfig;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
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

    /**
     * A client that could not be made: its settings are wrong (a keystore that does not open, a JAAS line that does not
     * parse, a config provider that cannot be found). Making a client connects to nothing, so trying again cannot help.
     */
    public static final class SetupException extends IllegalStateException {
        SetupException(String kind, KafkaException e) {
            super("cannot make a Kafka " + kind + " with the kafka.producer settings: " + causes(e), e);
        }

        private static String causes(Throwable e) {
            var text = new StringBuilder();
            for (Throwable t = e; t != null && t != t.getCause(); t = t.getCause()) {
                if (t.getMessage() != null && !text.toString().contains(t.getMessage())) {
                    text.append(text.length() == 0 ? "" : ": ").append(t.getMessage());
                }
            }
            return text.toString();
        }
    }

    /**
     * A client's construction failed: for its settings (a {@link SetupException}), or for the network (no bootstrap
     * host resolves yet, a login that fetches a token), which an outage explains and a later try may pass.
     */
    static RuntimeException failed(String kind, KafkaException e) {
        for (Throwable t = e; t != null && t != t.getCause(); t = t.getCause()) {
            if (t instanceof java.net.UnknownHostException || t instanceof java.net.SocketException
                    || t instanceof java.net.SocketTimeoutException || t instanceof java.net.http.HttpTimeoutException
                    || t instanceof org.apache.kafka.common.config.ConfigException && String.valueOf(t.getMessage()).contains("resolvable")) {
                return e;
            }
        }
        return new SetupException(kind, e);
    }

    /** A producer of byte keys and values with these settings (made by {@link ProducerSettings}). */
    static Producer<byte[], byte[]> producer(Properties settings) {
        try {
            return new KafkaProducer<>(settings, new ByteArraySerializer(), new ByteArraySerializer());
        } catch (KafkaException e) {
            throw failed("producer", e);
        }
    }

    /** A consumer of byte keys and values with these settings (made by {@link ClientConfigs#consumer}). */
    static KafkaConsumer<byte[], byte[]> consumer(Properties settings) {
        try {
            return new KafkaConsumer<>(settings, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        } catch (KafkaException e) {
            throw failed("consumer", e);
        }
    }

    /** An admin client with these settings (made by {@link ClientConfigs#admin}). */
    static Admin admin(Map<String, Object> settings) {
        try {
            return Admin.create(settings);
        } catch (KafkaException e) {
            throw failed("admin client", e);
        }
    }

    /** An admin client with the part of these producer settings that applies to it ({@link ClientConfigs#admin}). */
    static Admin admin(Properties producerSettings) {
        return admin(ClientConfigs.admin(producerSettings));
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
