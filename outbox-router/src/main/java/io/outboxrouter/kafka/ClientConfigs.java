package io.outboxrouter.kafka;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/** Consumers and admin clients with the router's connection and security settings (its producer's, filtered). */
final class ClientConfigs {
    private ClientConfigs() {
    }

    /** A consumer that reads committed transactions only, commits nothing and creates no topic. */
    static KafkaConsumer<byte[], byte[]> consumer(Properties producerConfig, String clientIdPrefix, Map<String, Object> more) {
        var props = new Properties();
        producerConfig.forEach((k, v) -> {
            if (applies((String) k, ConsumerConfig.configNames()) && !k.equals(ConsumerConfig.CLIENT_ID_CONFIG)) {
                props.put(k, v);
            }
        });
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        props.putAll(more);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientIdPrefix + UUID.randomUUID());
        return KafkaClients.consumer(props);
    }

    /**
     * Whether a producer setting applies to a client with these settings: one of its own, or a config provider's
     * ({@code config.providers.*}), without which a {@code ${dir:...}} or {@code ${file:...}} value stays unresolved.
     */
    static boolean applies(String key, java.util.Set<String> clientSettings) {
        return clientSettings.contains(key) || key.equals("config.providers") || key.startsWith("config.providers.");
    }

    static Map<String, Object> admin(Properties producerConfig) {
        var props = new HashMap<String, Object>();
        producerConfig.forEach((k, v) -> {
            if (applies((String) k, AdminClientConfig.configNames()) && !k.equals(AdminClientConfig.CLIENT_ID_CONFIG)) {
                props.put((String) k, v);
            }
        });
        return props;
    }
}
