package io.outboxrouter.config;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * How an outbox row is read.
 *
 * @param headers       column name to Kafka header name, for extra columns carried as headers
 * @param payloadFormat whether payloads are checked before publishing
 * @param retention     whether, and when, the router deletes published rows
 * @param audit         the running self-audit: every outbox row committed is matched with what the stream delivered
 */
public record OutboxConfig(Columns columns, Map<String, String> headers, PayloadFormat payloadFormat, Retention retention, Audit audit) {

    /** What the payload column holds. */
    public enum PayloadFormat {
        /** Anything: the bytes are published as stored, unchecked (the default). */
        BYTES,
        /** One JSON document: a payload that does not parse is dead-lettered (reason {@code invalid_json}). */
        JSON
    }

    public OutboxConfig {
        headers = Map.copyOf(headers);
    }

    public OutboxConfig(Columns columns, Map<String, String> headers) {
        this(columns, headers, PayloadFormat.BYTES);
    }

    public OutboxConfig(Columns columns, Map<String, String> headers, PayloadFormat payloadFormat) {
        this(columns, headers, payloadFormat, Retention.OFF, Audit.DEFAULT);
    }

    public OutboxConfig(Columns columns, Map<String, String> headers, PayloadFormat payloadFormat, Retention retention) {
        this(columns, headers, payloadFormat, retention, Audit.DEFAULT);
    }

    /** What the running self-audit does with a row the stream passed without delivering it. */
    public enum OnLoss {
        /** Stop the router, naming the rows and how to publish them again (the default). */
        STOP,
        /** Publish the rows again at once from the table (header {@code replayed=true}), count them and log an error. */
        REPLAY
    }

    /**
     * The running self-audit: every {@code interval}, the ids of the outbox rows dated (by the retention time column)
     * before {@code lag} ago are read and matched with the events the stream delivered; a row the stream passed without
     * delivering it is a loss, whatever its cause.
     *
     * @param lag how old a row must be before it is read: a transaction open longer than this between its row's time and its
     *            commit is not seen by the audit
     */
    public record Audit(boolean enabled, Duration interval, Duration lag, OnLoss onLoss) {
        public static final Audit DEFAULT = new Audit(true, Duration.ofSeconds(10), Duration.ofMinutes(1), OnLoss.STOP);
        public static final Audit OFF = new Audit(false, DEFAULT.interval, DEFAULT.lag, DEFAULT.onLoss);
    }

    /**
     * Outbox retention: rows older than {@code after} (by {@code timeColumn}) that the router has published are deleted,
     * {@code batchSize} at a time.
     *
     * @param after zero: off (the default)
     */
    public record Retention(Duration after, String timeColumn, int batchSize) {
        public static final Retention OFF = new Retention(Duration.ZERO, "created_at", 1000);

        public boolean on() {
            return !after.isZero();
        }
    }

    /** Column names; the defaults are Debezium EventRouter's, so existing outbox tables work unchanged. */
    public record Columns(String id, String aggregateType, String aggregateId, String type, String payload) {
        public static final Columns DEFAULTS = new Columns("id", "aggregatetype", "aggregateid", "type", "payload");
        /** The logical field names a topic template may use whatever the columns are called. */
        public static final List<String> LOGICAL_FIELDS = List.of("id", "aggregatetype", "aggregateid", "type");

        /** The column a template placeholder reads: a logical field name maps to its configured column, anything else is a column. */
        public String column(String placeholder) {
            return switch (placeholder) {
                case "id" -> id;
                case "aggregatetype" -> aggregateType;
                case "aggregateid" -> aggregateId;
                case "type" -> type;
                default -> placeholder;
            };
        }
    }
}
