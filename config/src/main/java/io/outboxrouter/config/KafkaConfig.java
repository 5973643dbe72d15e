package io.outboxrouter.config;

import java.time.Duration;
import java.util.Map;

/**
 * The Kafka cluster events are published to.
 *
 * @param producer    raw producer properties, passed through (security, compression, ...)
 * @param giveUpAfter  how long a failing batch is retried before the router stops; zero retries forever
 * @param delivery     at-least-once, or exactly-once through Kafka transactions
 * @param offsetsTopic where an exactly-once router commits its source position with its records (compacted)
 */
public record KafkaConfig(String bootstrapServers, Map<String, String> producer, Duration giveUpAfter, Delivery delivery,
                          String offsetsTopic) {

    public KafkaConfig {
        producer = Map.copyOf(producer);
    }

    /** The default offsets topic of a router: {@code outbox-router.<name>.offsets}, shared by its shards. */
    public static String defaultOffsetsTopic(String routerName) {
        return "outbox-router." + routerName + ".offsets";
    }

    public boolean exactlyOnce() {
        return delivery == Delivery.EXACTLY_ONCE;
    }

    /**
     * The transactional id of one stream's producer (exactly-once): from the stream's name, so that a process that
     * starts the same stream fences the one before it.
     */
    public static String transactionalId(String streamName) {
        return "outbox-router." + streamName;
    }
}
