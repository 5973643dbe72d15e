package io.outboxrouter.config;

import java.time.Duration;
import java.util.Map;

/**
 * The Kafka cluster events are published to.
 *
 * @param producer    raw producer properties, passed through (security, compression, ...)
 * @param giveUpAfter how long a failing batch is retried before the router stops; zero retries forever
 */
public record KafkaConfig(String bootstrapServers, Map<String, String> producer, Duration giveUpAfter) {

    public KafkaConfig {
        producer = Map.copyOf(producer);
    }
}
