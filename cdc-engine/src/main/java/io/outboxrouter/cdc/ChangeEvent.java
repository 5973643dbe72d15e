package io.outboxrouter.cdc;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One committed row change, as the router sees it: no Debezium or database types. Column values are
 * {@code String} (text, json, jsonb, uuid, numerics, timestamps as ISO-8601), {@code byte[]} (bytea, blobs),
 * {@code Long}/{@code Integer}/{@code Short}/{@code Double}/{@code Float}/{@code Boolean}, or null.
 *
 * @param table      schema-qualified table name, e.g. {@code public.outbox}
 * @param row        the row after the change (before it, for a delete); column order as in the table
 * @param position   the source position, readable by people, e.g. {@code lsn:0/1A2B3C8}
 * @param commitTime when the source transaction committed; null when the source does not say
 */
public record ChangeEvent(String table, Operation operation, Map<String, Object> row, String position, Instant commitTime) {

    public enum Operation {
        INSERT,
        /** A row read by an initial snapshot: treated like an insert. */
        SNAPSHOT,
        UPDATE,
        DELETE
    }

    public ChangeEvent {
        row = Collections.unmodifiableMap(new LinkedHashMap<>(row));
    }
}
