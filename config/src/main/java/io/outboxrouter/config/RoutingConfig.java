package io.outboxrouter.config;

/** Where events go: the topic template, and what happens to rows that cannot be mapped. */
public record RoutingConfig(TopicTemplate topic, DeadLetters deadLetters) {

    /** What to do with an outbox row that cannot become an event. */
    public enum DeadLetterPolicy {
        /** Publish the row's bytes with the reason to the dead-letter topic, then go on (the default). */
        DEAD_LETTER,
        /** Stop the router with the reason; the row is retried on restart. */
        FAIL,
        /** Log the row and its reason, publish nothing, go on. */
        SKIP
    }

    public record DeadLetters(DeadLetterPolicy policy, String topic) {
    }
}
