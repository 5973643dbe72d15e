package io.outboxrouter.config;

/**
 * Where events go: the topic template, and what happens to rows that cannot be mapped.
 *
 * @param eventRouter Debezium's EventRouter semantics and Debezium Server's record formats instead of the template; null: off
 */
public record RoutingConfig(TopicTemplate topic, DeadLetters deadLetters, EventRouterMode eventRouter, CloudEvents cloudEvents) {

    public RoutingConfig(TopicTemplate topic, DeadLetters deadLetters, EventRouterMode eventRouter) {
        this(topic, deadLetters, eventRouter, null);
    }

    public RoutingConfig(TopicTemplate topic, DeadLetters deadLetters) {
        this(topic, deadLetters, null, null);
    }

    /**
     * Each event as a CloudEvent 1.0 in the Kafka protocol binding ({@code routing.envelope: cloudevents}).
     *
     * @param mode   binary (the payload as the value, the attributes as {@code ce_*} headers) or structured (one JSON
     *               envelope as the value)
     * @param source the CloudEvents {@code source} attribute, a template of the row's columns
     */
    public record CloudEvents(Mode mode, TopicTemplate source) {
        public enum Mode {
            BINARY,
            STRUCTURED
        }
    }

    /** How events are wrapped: not at all (the payload as the value), or as CloudEvents. */
    public enum Envelope {
        NONE,
        CLOUDEVENTS
    }

    /** What to do with an outbox row that cannot become an event. */
    public enum DeadLetterPolicy {
        /** Publish the row's bytes with the reason to the dead-letter topic, then go on (the default). */
        DEAD_LETTER,
        /** Stop the router with the reason; the row is retried on restart. */
        FAIL,
        /** Log the row and its reason, publish nothing, go on. */
        SKIP,
        /**
         * Dead-letter the row and park its aggregate: the aggregate's later events are held in the parking topic, in order,
         * until an operator releases or drops it; every other aggregate flows.
         */
        PARK_AGGREGATE
    }

    /**
     * @param parkingTopic where a parked aggregate's events are held ({@link DeadLetterPolicy#PARK_AGGREGATE})
     * @param keepEndedParks how long the records of a released or dropped park stay in the parking topic; zero: for good
     */
    public record DeadLetters(DeadLetterPolicy policy, String topic, String parkingTopic, java.time.Duration keepEndedParks) {
        public static final java.time.Duration KEEP_ENDED_PARKS = java.time.Duration.ofHours(1);
    }

    /** How a key, value or header becomes bytes: Debezium Server's {@code debezium.format.*} choices that we offer. */
    public enum Format {
        /** Kafka's JsonConverter with schemas: Debezium Server's default. */
        JSON,
        /** JsonConverter without schemas ({@code debezium.format.*.schemas.enable=false}). */
        SCHEMALESS_JSON,
        /** Kafka's StringConverter ({@code simplestring}). */
        STRING,
        /** The bytes as they are ({@code binary}): bytes columns only. */
        BYTES
    }

    /**
     * Records made as Debezium's outbox EventRouter makes them, under its option names, and serialised as Debezium Server
     * does with the formats given.
     */
    public record EventRouterMode(EventRouterOptions options, Format key, Format value, Format header) {
    }
}
