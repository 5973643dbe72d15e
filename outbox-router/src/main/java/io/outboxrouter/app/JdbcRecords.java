package io.outboxrouter.app;

import io.outboxrouter.config.SourceKind;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * A replayed outbox row as the connector would have read it, for {@code routing.event-router}: a change envelope whose
 * row carries each column with the Connect schema Debezium gives its type (by default settings: UUID, JSON, text, bytes,
 * integers, booleans, floats, dates and timestamps), so that the EventRouter and the converters make the same bytes as for
 * the streamed row. A column of another type is refused by name: its replayed bytes could differ.
 */
final class JdbcRecords {
    private final String routerName;
    private final String table;
    private final Schema rowSchema;
    private final Schema envelopeSchema;
    private final List<Column> columns;

    /** @param compactJson MySQL's JSON: JDBC reads it spaced, Debezium renders the binlog's binary JSON without spaces */
    private record Column(String name, int precision, Schema schema, boolean compactJson) {
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

    private JdbcRecords(String routerName, String table, List<Column> columns) {
        this.routerName = routerName;
        this.table = table;
        this.columns = columns;
        var row = SchemaBuilder.struct().name(routerName + "." + table + ".Value").optional();
        columns.forEach(c -> row.field(c.name(), c.schema()));
        this.rowSchema = row.build();
        this.envelopeSchema = SchemaBuilder.struct().name(routerName + "." + table + ".Envelope")
                .field("after", rowSchema).field("op", Schema.STRING_SCHEMA).field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA).build();
    }

    /** The schemas of a result set's columns; throws naming a column whose type is not mapped. */
    /**
     * @param read the columns the connector decodes (its column include list): the record carries those only, as the
     *             streamed one does
     */
    static JdbcRecords of(String routerName, String table, ResultSetMetaData meta, java.sql.Connection c, SourceKind kind,
                          java.util.Collection<String> read) throws SQLException {
        boolean binlog = kind.isBinlog();
        var defaults = new java.util.HashMap<String, String>();
        var fractions = new java.util.HashMap<String, Integer>();
        describe(c, table, binlog, defaults, fractions);
        var columns = new ArrayList<Column>();
        for (int i = 1; i <= meta.getColumnCount(); i++) {
            String name = meta.getColumnLabel(i);
            if (!read.contains(name)) {
                continue;
            }
            String type = meta.getColumnTypeName(i).toLowerCase(Locale.ROOT);
            boolean optional = meta.isNullable(i) != ResultSetMetaData.columnNoNulls;
            // MySQL's driver gives no scale for time types: the fraction digits come from the table's description
            // (nor a DECIMAL_DIGITS): a timestamp's display width, 19 and a point, tells them; MariaDB's gives the scale
            int scale = binlog ? Math.max(Math.max(fractions.getOrDefault(name, 0), meta.getScale(i)),
                    (type.equals("timestamp") || type.equals("datetime")) && meta.getPrecision(i) > 20 ? meta.getPrecision(i) - 20 : 0)
                    : meta.getScale(i);
            // A MySQL timestamp is zoned; MariaDB's json is longtext to the binlog, so Debezium types it as text.
            var schema = binlog && type.equals("timestamp") ? schema("timestamptz", scale)
                    : kind == SourceKind.MARIADB && type.equals("json") ? SchemaBuilder.string() : schema(type, scale);
            if (schema == null) {
                throw new IllegalStateException("column " + name + " of " + table + " is of type " + type + ", which a replay under "
                        + "routing.event-router does not type as Debezium does; leave it out of the outbox table, or replay without "
                        + "routing.event-router");
            }
            if (optional) {
                schema.optional();
            }
            // The binlog connectors give a zoned default no fraction digits, whatever the column's
            Object defaultValue = defaultValue(schema, defaults.get(name), optional, binlog ? 0 : scale);
            if (defaultValue != null) {
                schema.defaultValue(defaultValue);
            }
            columns.add(new Column(name, scale, schema.build(), kind == SourceKind.MYSQL && type.equals("json")));
        }
        return new JdbcRecords(routerName, table, columns);
    }

    /**
     * Debezium's type for a column, by its database type name (Postgres and MySQL/MariaDB; a MySQL {@code timestamp} is
     * passed as {@code timestamptz}); null: not mapped. Timestamps as Debezium's adaptive precision mode types them.
     */
    private static SchemaBuilder schema(String type, int scale) {
        return switch (type) {
            case "uuid" -> SchemaBuilder.string().name("io.debezium.data.Uuid").version(1);
            case "json", "jsonb" -> SchemaBuilder.string().name("io.debezium.data.Json").version(1);
            case "text", "varchar", "bpchar", "char", "character varying", "character", "tinytext", "mediumtext", "longtext", "name" ->
                    SchemaBuilder.string();
            case "bytea", "binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob" -> SchemaBuilder.bytes();
            case "int2", "smallint" -> SchemaBuilder.int16();
            case "int4", "int", "integer", "mediumint" -> SchemaBuilder.int32();
            case "int8", "bigint" -> SchemaBuilder.int64();
            case "float4", "float" -> SchemaBuilder.float32();
            case "float8", "double" -> SchemaBuilder.float64();
            case "bool", "boolean" -> SchemaBuilder.bool();
            case "date" -> SchemaBuilder.int32().name("io.debezium.time.Date").version(1);
            case "timestamp", "datetime" -> scale <= 3 ? SchemaBuilder.int64().name("io.debezium.time.Timestamp").version(1)
                    : SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").version(1);
            case "timestamptz" -> SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").version(1);
            default -> null;
        };
    }

    /** Each column's default expression and fraction digits, as the database describes the table. */
    private static void describe(java.sql.Connection c, String table, boolean binlog, Map<String, String> defaults,
                                 Map<String, Integer> fractions) throws SQLException {
        String schema = table.substring(0, table.indexOf('.'));
        String name = table.substring(table.indexOf('.') + 1);
        try (var rs = binlog ? c.getMetaData().getColumns(schema, null, name, null) : c.getMetaData().getColumns(null, schema, name, null)) {
            while (rs.next()) {
                if (rs.getString("COLUMN_DEF") != null) {
                    defaults.put(rs.getString("COLUMN_NAME"), rs.getString("COLUMN_DEF"));
                }
                int digits = rs.getInt("DECIMAL_DIGITS");
                if (!rs.wasNull()) {
                    fractions.put(rs.getString("COLUMN_NAME"), digits);
                }
            }
        }
    }

    private static final java.util.regex.Pattern QUOTED = java.util.regex.Pattern.compile("'((?:[^']|'')*)'(::.*)?");

    /**
     * The default Debezium gives a column's schema: a quoted literal's text; for a NOT NULL time or UUID column whose default
     * is an expression it cannot evaluate (now(), gen_random_uuid()), the epoch or the nil UUID. Null: none, or one not
     * worked out here.
     */
    private static Object defaultValue(SchemaBuilder schema, String expression, boolean optional, int precision) {
        if (expression == null) {
            return null;
        }
        var quoted = QUOTED.matcher(expression.trim());
        if (quoted.matches() && schema.type() == Schema.Type.STRING && schema.name() == null) {
            return quoted.group(1).replace("''", "'");
        }
        if (optional || !expression.contains("(")) {
            return null;
        }
        String name = schema.name();
        if ("io.debezium.time.ZonedTimestamp".equals(name)) {
            return zoned(OffsetDateTime.of(1970, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC), precision);
        }
        if ("io.debezium.time.Timestamp".equals(name) || "io.debezium.time.MicroTimestamp".equals(name)) {
            return 0L;
        }
        if ("io.debezium.data.Uuid".equals(name)) {
            return "00000000-0000-0000-0000-000000000000"; // gen_random_uuid() and the like
        }
        return null;
    }

    /** The current row of {@code rs} as the connector's record of its insert. */
    SourceRecord record(ResultSet rs) throws SQLException {
        var row = new Struct(rowSchema);
        for (var c : columns) {
            row.put(c.name(), value(rs, rs.findColumn(c.name()), c));
        }
        var envelope = new Struct(envelopeSchema).put("after", row).put("op", "c").put("ts_ms", System.currentTimeMillis());
        return new SourceRecord(Map.of(), Map.of(), routerName + "." + table, null, null, null, envelopeSchema, envelope);
    }

    private static Object value(ResultSet rs, int i, Column c) throws SQLException {
        String name = c.schema().name();
        Object v = switch (c.schema().type()) {
            case STRING -> "io.debezium.time.ZonedTimestamp".equals(name) ? zoned(rs.getObject(i, OffsetDateTime.class), c.precision())
                    : rs.getString(i);
            case BYTES -> rs.getBytes(i);
            case INT16 -> rs.getShort(i);
            case INT32 -> "io.debezium.time.Date".equals(name) ? days(rs.getObject(i, LocalDate.class)) : (Object) rs.getInt(i);
            case INT64 -> name == null ? (Object) rs.getLong(i) : epoch(rs.getObject(i, LocalDateTime.class), name);
            case FLOAT32 -> rs.getFloat(i);
            case FLOAT64 -> rs.getDouble(i);
            case BOOLEAN -> rs.getBoolean(i);
            default -> rs.getObject(i);
        };
        if (rs.wasNull()) {
            return null;
        }
        return c.compactJson() && v instanceof String text ? compactJson(text) : v;
    }

    /** MySQL's JSON text as the binlog gives it to the connector: no spaces, MySQL's key order kept. */
    static String compactJson(String text) {
        try {
            return JSON.writeValueAsString(JSON.readTree(text));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            return text;
        }
    }

    private static Integer days(LocalDate d) {
        return d == null ? null : (int) d.toEpochDay();
    }

    private static Long epoch(LocalDateTime t, String name) {
        if (t == null) {
            return null;
        }
        long micros = ChronoUnit.MICROS.between(LocalDateTime.of(1970, 1, 1, 0, 0), t);
        return name.equals("io.debezium.time.Timestamp") ? Math.floorDiv(micros, 1000) : micros;
    }

    /** As Debezium renders a zoned timestamp: in UTC, with as many fraction digits as the column's precision. */
    private static String zoned(OffsetDateTime t, int precision) {
        if (t == null) {
            return null;
        }
        var pattern = "yyyy-MM-dd'T'HH:mm:ss" + (precision > 0 ? "." + "S".repeat(Math.min(precision, 9)) : "") + "XXX";
        return t.withOffsetSameInstant(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern(pattern));
    }
}
