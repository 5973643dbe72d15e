package io.outboxrouter.metrics;

import java.time.Duration;
import java.time.Instant;

/**
 * What happens to a router's events, told as it happens: the seam for metrics and anything else that wants to watch
 * (every method does nothing by default). Called from the engine's thread; an implementation must not block or throw.
 */
public interface RouterListener {
    RouterListener NONE = new RouterListener() {
    };

    /** An outbox event was acknowledged by Kafka. */
    default void published(String topic, Instant commitTime, Instant ackTime) {
    }

    /** A row that could not be routed was acknowledged on the dead-letter topic; {@code reason} is a short fixed kind. */
    default void deadLettered(String reason) {
    }

    /** A row that could not be routed was skipped ({@code routing.dead-letters.policy: skip}). */
    default void skipped(String reason) {
    }

    /** An event of a parked aggregate was acknowledged on the parking topic ({@code routing.dead-letters.policy: park-aggregate}). */
    default void held() {
    }

    /** A held event was published to its topic by a release. */
    default void released() {
    }

    /** A change arrived from a captured table that is not an outbox table the router routes: nothing is published for it. */
    default void unrouted(String table) {
    }

    /** A batch was published: its records, and the time from sending the first to the last acknowledgement. */
    default void batchPublished(int records, Duration took) {
    }

    /** Exactly-once: a Kafka transaction was committed, or aborted (to be sent again in a new one, or on a stop). */
    default void kafkaTransaction(boolean committed) {
    }

    /** A failed attempt is retried with backoff; {@code operation} is a short fixed name such as {@code kafka_publish}. */
    default void retrying(String operation, Throwable cause) {
    }
}
