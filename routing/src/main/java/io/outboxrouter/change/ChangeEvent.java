package io.outboxrouter.change;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * One committed row change, as the router sees it: no Debezium or database types. Column values are
 * {@code String} (text, json, jsonb, uuid, numerics, timestamps as ISO-8601), {@code byte[]} (bytea, blobs),
 * {@code Long}/{@code Integer}/{@code Short}/{@code Double}/{@code Float}/{@code Boolean}, or null.
 *
 * @param table      schema-qualified table name, e.g. {@code public.outbox}; for a logical decoding message
 *                   {@link #messageSource(String) message:<prefix>}
 * @param row        the row after the change (before it, for a delete); column order as in the table
 * @param position   the source position, readable by people, e.g. {@code lsn:0/1A2B3C8}
 * @param commitTime when the source transaction committed; null when the source does not say
 * @param record     the connector's record it was read from, for a routing that reads Debezium's shapes; null when none
 */
public record ChangeEvent(String table, Operation operation, Map<String, Object> row, String position, Instant commitTime,
                          SourceRecord record) {

    public ChangeEvent(String table, Operation operation, Map<String, Object> row, String position, Instant commitTime) {
        this(table, operation, row, position, commitTime, null);
    }

    public enum Operation {
        INSERT,
        /** A row read by an initial snapshot: treated like an insert. */
        SNAPSHOT,
        UPDATE,
        DELETE,
        /**
         * A transactional logical decoding message (Postgres {@code pg_logical_emit_message(true, ...)}): committed with its
         * transaction, delivered in its place. The row holds {@link #MESSAGE_PREFIX} and {@link #MESSAGE_CONTENT} (bytes).
         */
        MESSAGE,
        /** A logical decoding message written outside any transaction: not atomic with the business transaction. */
        NON_TRANSACTIONAL_MESSAGE;

        public boolean isMessage() {
            return this == MESSAGE || this == NON_TRANSACTIONAL_MESSAGE;
        }
    }

    /** A message's row: its prefix (text) and content (bytes, as written). */
    public static final String MESSAGE_PREFIX = "prefix";
    public static final String MESSAGE_CONTENT = "content";

    /** What a logical decoding message names in place of a table: {@code message:<prefix>}. */
    public static String messageSource(String prefix) {
        return "message:" + prefix;
    }

    public ChangeEvent {
        row = Collections.unmodifiableMap(new LinkedHashMap<>(row));
    }

    /**
     * The row's own position: a binlog position names a row event, which may hold several rows (a multi-row INSERT), so
     * the row's index in it (the connector's {@code source.row}) is added.
     */
    public String rowPosition() {
        if (record != null && record.value() instanceof Struct value && value.schema().field("source") != null
                && value.get("source") instanceof Struct source && source.schema().field("row") != null && source.get("row") != null) {
            return position + ",row:" + source.get("row");
        }
        return position;
    }
}
