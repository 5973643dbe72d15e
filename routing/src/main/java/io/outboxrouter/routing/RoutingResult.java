package io.outboxrouter.routing;

import io.outboxrouter.change.ChangeEvent;
import org.apache.kafka.clients.producer.ProducerRecord;

/** What becomes of one row change: a Kafka record, nothing, or a rejection with its reason. */
public sealed interface RoutingResult {

    /** An outbox INSERT that becomes this record. */
    record Publish(ProducerRecord<byte[], byte[]> record) implements RoutingResult {
    }

    /** A change that publishes nothing by design (UPDATE and DELETE of outbox rows, the heartbeat table). */
    record Ignore(String why) implements RoutingResult {
    }

    /**
     * A change from a table that is neither an outbox nor expected: the configuration and the database disagree on a
     * table's name. Never passed over silently: counted and logged.
     */
    record Unrouted(String table) implements RoutingResult {
    }

    /**
     * An outbox INSERT that cannot become an event; handled by the dead-letter policy.
     *
     * @param kind a short, fixed category for metrics: null_event_id, null_aggregate_id, missing_column, illegal_topic, too_large
     */
    record Reject(String kind, String reason, ChangeEvent change) implements RoutingResult {
    }
}
