package io.outboxrouter.config;

import java.util.Map;

/**
 * How an outbox row is read.
 *
 * @param headers column name to Kafka header name, for extra columns carried as headers
 */
public record OutboxConfig(Columns columns, Map<String, String> headers) {

    public OutboxConfig {
        headers = Map.copyOf(headers);
    }

    /** Column names; the defaults are Debezium EventRouter's, so existing outbox tables work unchanged. */
    public record Columns(String id, String aggregateType, String aggregateId, String type, String payload) {
        public static final Columns DEFAULTS = new Columns("id", "aggregatetype", "aggregateid", "type", "payload");
    }
}
