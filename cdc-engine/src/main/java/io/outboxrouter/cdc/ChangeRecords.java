package io.outboxrouter.cdc;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/** Turns Debezium change records into {@link ChangeEvent}s; everything else (markers, heartbeats) is not one. */
final class ChangeRecords {
    private final Function<Struct, String> position;

    /** @param position renders the {@code source} block of a record as a readable position */
    ChangeRecords(Function<Struct, String> position) {
        this.position = position;
    }

    Optional<ChangeEvent> toEvent(SourceRecord record) {
        if (!(record.value() instanceof Struct value) || value.schema().field("op") == null) {
            return Optional.empty();
        }
        ChangeEvent.Operation op = switch (value.getString("op")) {
            case "c" -> ChangeEvent.Operation.INSERT;
            case "r" -> ChangeEvent.Operation.SNAPSHOT;
            case "u" -> ChangeEvent.Operation.UPDATE;
            case "d" -> ChangeEvent.Operation.DELETE;
            default -> null; // truncate, logical decoding messages
        };
        if (op == null) {
            return Optional.empty();
        }
        Struct source = value.getStruct("source");
        Struct row = value.getStruct(op == ChangeEvent.Operation.DELETE ? "before" : "after");
        var columns = new LinkedHashMap<String, Object>();
        if (row != null) {
            for (Field f : row.schema().fields()) {
                columns.put(f.name(), plain(f.schema(), row.get(f)));
            }
        }
        // Postgres names schema.table; MySQL/MariaDB database.table, with no schema field at all.
        String namespace = source.schema().field("schema") != null ? source.getString("schema") : source.getString("db");
        String table = namespace + "." + source.getString("table");
        Long tsMs = source.getInt64("ts_ms");
        return Optional.of(new ChangeEvent(table, op, columns, position.apply(source),
                tsMs == null ? null : Instant.ofEpochMilli(tsMs)));
    }

    private static Object plain(Schema schema, Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof ByteBuffer b) {
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
