package io.outboxrouter.change;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Date;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * Turns Debezium change records into {@link ChangeEvent}s; everything else (markers, heartbeats) is not one. One instance
 * per thread (it caches per schema).
 */
public final class ChangeRecords {
    private final Function<Struct, String> position;

    /** @param position renders the {@code source} block of a record as a readable position */
    public ChangeRecords(Function<Struct, String> position) {
        this.position = position;
    }

    /**
     * The fields of one envelope schema, looked up once: Debezium reuses one schema object per table, so a lookup by
     * name per record and field, on the engine's thread, is not needed.
     */
    private record Envelope(Field op, Field source, Field before, Field after, Field namespace, Field table, Field tsMs) {
        static Envelope of(Schema value) {
            Field op = value.field("op");
            Field source = value.field("source");
            if (op == null || source == null) {
                return null; // transaction markers, heartbeats, schema changes
            }
            Schema s = source.schema();
            // Postgres names schema.table; MySQL/MariaDB database.table, with no schema field at all.
            Field namespace = s.field("schema") != null ? s.field("schema") : s.field("db");
            return new Envelope(op, source, value.field("before"), value.field("after"), namespace, s.field("table"), s.field("ts_ms"));
        }
    }

    /** A marker for schemas that are not change envelopes (the map cannot hold null). */
    private static final Envelope NOT_A_CHANGE = new Envelope(null, null, null, null, null, null, null);
    private static final int MAX_CACHED_SCHEMAS = 1_000;
    /** Engine thread only. Keyed by identity: a schema's equals compares every field, which is what this avoids. */
    private final Map<Schema, Envelope> envelopes = new IdentityHashMap<>();

    public Optional<ChangeEvent> toEvent(SourceRecord record) {
        if (!(record.value() instanceof Struct value)) {
            return Optional.empty();
        }
        Envelope e = envelope(value.schema());
        if (e == NOT_A_CHANGE) {
            return Optional.empty();
        }
        if (!(value.get(e.op()) instanceof String code)) {
            return Optional.empty();
        }
        ChangeEvent.Operation op = switch (code) {
            case "c" -> ChangeEvent.Operation.INSERT;
            case "r" -> ChangeEvent.Operation.SNAPSHOT;
            case "u" -> ChangeEvent.Operation.UPDATE;
            case "d" -> ChangeEvent.Operation.DELETE;
            case "m" -> ChangeEvent.Operation.MESSAGE;
            default -> null; // truncate
        };
        if (op == null) {
            return Optional.empty();
        }
        Struct source = (Struct) value.get(e.source());
        if (op == ChangeEvent.Operation.MESSAGE) {
            return Optional.ofNullable(message(value, source));
        }
        Field rowField = op == ChangeEvent.Operation.DELETE ? e.before() : e.after();
        Struct row = rowField == null ? null : (Struct) value.get(rowField);
        var columns = new LinkedHashMap<String, Object>();
        if (row != null) {
            for (Field f : row.schema().fields()) {
                columns.put(f.name(), plain(f.schema(), row.get(f)));
            }
        }
        String table = tableName(e.namespace() == null ? null : source.get(e.namespace()), source.get(e.table()));
        Long tsMs = e.tsMs() == null ? null : (Long) source.get(e.tsMs());
        return Optional.of(new ChangeEvent(table, op, columns, position.apply(source),
                tsMs == null ? null : Instant.ofEpochMilli(tsMs), record));
    }

    /**
     * A logical decoding message: prefix and content. One written outside a transaction has no transaction id (Debezium
     * clears it), whatever transaction the router saw last.
     */
    private ChangeEvent message(Struct value, Struct source) {
        if (value.schema().field("message") == null || !(value.get("message") instanceof Struct message)) {
            return null;
        }
        String prefix = message.getString(ChangeEvent.MESSAGE_PREFIX);
        Object content = plain(message.schema().field(ChangeEvent.MESSAGE_CONTENT).schema(), message.get(ChangeEvent.MESSAGE_CONTENT));
        var row = new LinkedHashMap<String, Object>();
        row.put(ChangeEvent.MESSAGE_PREFIX, prefix);
        row.put(ChangeEvent.MESSAGE_CONTENT, content);
        boolean transactional = source.schema().field("txId") != null && source.get("txId") != null;
        Long tsMs = source.schema().field("ts_ms") == null ? null : source.getInt64("ts_ms");
        return new ChangeEvent(ChangeEvent.messageSource(prefix),
                transactional ? ChangeEvent.Operation.MESSAGE : ChangeEvent.Operation.NON_TRANSACTIONAL_MESSAGE, row,
                position.apply(source), tsMs == null ? null : Instant.ofEpochMilli(tsMs));
    }

    private Object lastNamespace;
    private Object lastTable;
    private String lastTableName;

    /**
     * {@code namespace.table}, built again only when it changes: a new string per record would have its hash computed
     * again by every lookup of the table.
     */
    private String tableName(Object namespace, Object table) {
        if (lastTableName == null || !Objects.equals(namespace, lastNamespace) || !Objects.equals(table, lastTable)) {
            lastNamespace = namespace;
            lastTable = table;
            lastTableName = namespace + "." + table;
        }
        return lastTableName;
    }

    private Envelope envelope(Schema schema) {
        Envelope e = envelopes.get(schema);
        if (e == null) {
            e = Envelope.of(schema);
            e = e == null ? NOT_A_CHANGE : e;
            if (envelopes.size() >= MAX_CACHED_SCHEMAS) {
                envelopes.clear(); // schemas change with DDL only: a bound, not an eviction policy
            }
            envelopes.put(schema, e);
        }
        return e;
    }

    private static Object plain(Schema schema, Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof ByteBuffer b) {
            if (b.hasArray() && b.arrayOffset() == 0 && b.position() == 0 && b.remaining() == b.array().length) {
                // Shared, not copied (nothing writes a row's bytes): a batch of large rows is then not held twice.
                return b.array();
            }
            var bytes = new byte[b.remaining()];
            b.duplicate().get(bytes);
            return bytes;
        }
        String logical = schema.name();
        if (logical != null && v instanceof Long n) {
            switch (logical) {
                case "io.debezium.time.Timestamp":
                    return Instant.ofEpochMilli(n).toString();
                case "io.debezium.time.MicroTimestamp":
                    return Instant.EPOCH.plusNanos(n * 1_000).toString();
                case "io.debezium.time.NanoTimestamp":
                    return Instant.EPOCH.plusNanos(n).toString();
                default:
                    return v;
            }
        }
        if (v instanceof Date d) {
            return d.toInstant().toString();
        }
        if (v instanceof Struct || v instanceof Map || v instanceof List) {
            return v.toString();
        }
        return v;
    }
}
