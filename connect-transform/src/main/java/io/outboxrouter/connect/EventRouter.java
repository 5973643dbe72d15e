package io.outboxrouter.connect;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import io.outboxrouter.config.EventRouterOptions;
import io.outboxrouter.config.EventRouterOptions.Additional;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.components.Versioned;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.transforms.Transformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A drop-in for Debezium's outbox {@code io.debezium.transforms.outbox.EventRouter}: the same options under the same
 * names and defaults, and the same records out of the same records in, so that switching changes the class name only.
 * Written here from Debezium's documented and observed behaviour (a test runs both on the same records); where it
 * deliberately differs, {@code docs/event-router.md} says how and why.
 *
 * <p>An outbox INSERT (or snapshot read) becomes a record on the topic {@code route.topic.replacement} makes of the
 * {@code route.by.field} column (through {@code route.topic.regex}), keyed by {@code table.field.event.key}, with the
 * payload column as its value and the event id as the {@code id} header. Deletes are dropped, updates dropped with a
 * warning (or an error), tombstones dropped, and records that are not Debezium change events pass through unchanged.
 */
public final class EventRouter<R extends ConnectRecord<R>> implements Transformation<R>, Versioned {
    static final String OP_INVALID = EventRouterOptions.OP_INVALID;
    static final String ID = EventRouterOptions.ID;
    static final String KEY = EventRouterOptions.KEY;
    static final String TYPE = EventRouterOptions.TYPE;
    static final String TIMESTAMP = EventRouterOptions.TIMESTAMP;
    static final String PAYLOAD = EventRouterOptions.PAYLOAD;
    static final String ADDITIONAL = EventRouterOptions.ADDITIONAL;
    static final String ERROR_ON_MISSING = EventRouterOptions.ERROR_ON_MISSING;
    static final String ADDITIONAL_MISSING = EventRouterOptions.ADDITIONAL_MISSING;
    static final String SCHEMA_VERSION = EventRouterOptions.SCHEMA_VERSION;
    static final String ROUTE_BY = EventRouterOptions.ROUTE_BY;
    static final String ROUTE_REGEX = EventRouterOptions.ROUTE_REGEX;
    static final String ROUTE_REPLACEMENT = EventRouterOptions.ROUTE_REPLACEMENT;
    static final String TOMBSTONE_ON_EMPTY = EventRouterOptions.TOMBSTONE_ON_EMPTY;
    static final String EXPAND_JSON = EventRouterOptions.EXPAND_JSON;
    static final String JSON_NULLS = EventRouterOptions.JSON_NULLS;
    static final String JSON_EMPTY_ARRAYS = EventRouterOptions.JSON_EMPTY_ARRAYS;
    static final String NAME_ADJUSTMENT = EventRouterOptions.NAME_ADJUSTMENT;
    static final String TRACING_FIELD = EventRouterOptions.TRACING_FIELD;
    static final String TRACING_OPERATION = EventRouterOptions.TRACING_OPERATION;
    static final String TRACING_CONTEXT_ONLY = EventRouterOptions.TRACING_CONTEXT_ONLY;
    private static final Logger LOG = LoggerFactory.getLogger(EventRouter.class);


    public static final ConfigDef CONFIG_DEF = new ConfigDef()
            .define(OP_INVALID, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(OP_INVALID), oneOf("warn", "error", "fatal"), ConfigDef.Importance.MEDIUM,
                    "What an UPDATE of an outbox row does: warn (dropped, a warning), error (dropped, an error logged), fatal (the task fails)")
            .define(ID, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(ID), ConfigDef.Importance.LOW, "The event id column: the id header")
            .define(KEY, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(KEY), ConfigDef.Importance.LOW, "The record key column")
            .define(TYPE, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(TYPE), ConfigDef.Importance.LOW,
                    "The event type column (as in Debezium, not read: place it with " + ADDITIONAL + ", e.g. type:header)")
            .define(TIMESTAMP, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(TIMESTAMP), ConfigDef.Importance.LOW,
                    "A column of Debezium's Timestamp, MicroTimestamp or NanoTimestamp type for the record timestamp; unset: the change's ts_ms")
            .define(PAYLOAD, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(PAYLOAD), ConfigDef.Importance.LOW, "The payload column: the record value")
            .define(ADDITIONAL, ConfigDef.Type.LIST, EventRouterOptions.DEFAULTS.get(ADDITIONAL), ConfigDef.Importance.MEDIUM,
                    "column:placement[:alias] entries, placement header, envelope or partition")
            .define(ERROR_ON_MISSING, ConfigDef.Type.BOOLEAN, Boolean.parseBoolean(EventRouterOptions.DEFAULTS.get(ERROR_ON_MISSING)), ConfigDef.Importance.LOW,
                    "Whether an additional column missing from the row fails the record (else it is left out); Debezium 3.5's name for "
                            + ADDITIONAL_MISSING)
            .define(ADDITIONAL_MISSING, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(ADDITIONAL_MISSING), oneOf("error", "ignore"),
                    ConfigDef.Importance.LOW, "An additional column missing from the row: the record fails (error) or the column is left out "
                            + "(ignore); Debezium 3.6's name for " + ERROR_ON_MISSING + " (error is true), which must not say otherwise")
            .define(SCHEMA_VERSION, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(SCHEMA_VERSION), ConfigDef.Importance.LOW,
                    "An INT32 column: the version of the value schema (with an envelope placement)")
            .define(ROUTE_BY, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(ROUTE_BY), ConfigDef.Importance.LOW, "The column whose value routes the record")
            .define(ROUTE_REGEX, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(ROUTE_REGEX), regex(), ConfigDef.Importance.LOW,
                    "The regular expression matched against the whole routing value")
            .define(ROUTE_REPLACEMENT, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(ROUTE_REPLACEMENT), ConfigDef.Importance.HIGH,
                    "The topic: the routing value with the regular expression's match replaced by this")
            .define(TOMBSTONE_ON_EMPTY, ConfigDef.Type.BOOLEAN, Boolean.parseBoolean(EventRouterOptions.DEFAULTS.get(TOMBSTONE_ON_EMPTY)), ConfigDef.Importance.LOW,
                    "Whether an empty payload gives a tombstone (null value and schema)")
            .define(EXPAND_JSON, ConfigDef.Type.BOOLEAN, Boolean.parseBoolean(EventRouterOptions.DEFAULTS.get(EXPAND_JSON)), ConfigDef.Importance.LOW,
                    "Whether a JSON text payload becomes a struct with a schema inferred from it")
            .define(JSON_NULLS, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(JSON_NULLS), oneOf("ignore", "optional_bytes"), ConfigDef.Importance.LOW,
                    "In an expanded payload, a null field: left out (ignore) or typed optional bytes")
            .define(JSON_EMPTY_ARRAYS, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(JSON_EMPTY_ARRAYS), oneOf("ignore", "optional_string"),
                    ConfigDef.Importance.LOW, "In an expanded payload, an empty array: left out (ignore) or typed an optional array of optional "
                            + "strings (optional_string)")
            .define(NAME_ADJUSTMENT, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(NAME_ADJUSTMENT), oneOf("none", "avro", "avro_unicode"), ConfigDef.Importance.LOW,
                    "In an expanded payload, how JSON keys become field names")
            .define(TRACING_FIELD, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(TRACING_FIELD), ConfigDef.Importance.LOW,
                    "Accepted for Debezium's configurations; tracing spans need OpenTelemetry, which this transformation does not run")
            .define(TRACING_OPERATION, ConfigDef.Type.STRING, EventRouterOptions.DEFAULTS.get(TRACING_OPERATION), ConfigDef.Importance.LOW, "Accepted, as " + TRACING_FIELD)
            .define(TRACING_CONTEXT_ONLY, ConfigDef.Type.BOOLEAN, Boolean.parseBoolean(EventRouterOptions.DEFAULTS.get(TRACING_CONTEXT_ONLY)), ConfigDef.Importance.LOW, "Accepted, as " + TRACING_FIELD);

    private String opInvalid;
    private String idColumn;
    private String keyColumn;
    private String timestampColumn;
    private String payloadColumn;
    private List<Additional> additional;
    private boolean errorOnMissing;
    private String versionColumn;
    private String routeBy;
    private Pattern routeRegex;
    private String replacement;
    private boolean tombstoneOnEmpty;
    private ExpandedJson expander;

    @Override
    public void configure(Map<String, ?> props) {
        var c = new AbstractConfig(CONFIG_DEF, props);
        opInvalid = c.getString(OP_INVALID).trim().toLowerCase(Locale.ROOT);
        idColumn = c.getString(ID);
        keyColumn = c.getString(KEY);
        timestampColumn = c.getString(TIMESTAMP);
        payloadColumn = c.getString(PAYLOAD);
        additional = placements(c.getList(ADDITIONAL));
        // Both of Debezium's names are taken; given both, they must agree (the router's own options pass both, in step).
        errorOnMissing = EventRouterOptions.errorOnMissing(
                props.get(ERROR_ON_MISSING) == null ? null : c.getBoolean(ERROR_ON_MISSING).toString(),
                props.get(ADDITIONAL_MISSING) == null ? null : c.getString(ADDITIONAL_MISSING),
                conflict -> {
                    throw new ConfigException(ADDITIONAL_MISSING, c.getString(ADDITIONAL_MISSING), conflict);
                });
        versionColumn = c.getString(SCHEMA_VERSION);
        routeBy = c.getString(ROUTE_BY);
        routeRegex = Pattern.compile(c.getString(ROUTE_REGEX));
        replacement = c.getString(ROUTE_REPLACEMENT);
        tombstoneOnEmpty = c.getBoolean(TOMBSTONE_ON_EMPTY);
        expander = c.getBoolean(EXPAND_JSON) ? new ExpandedJson(
                ExpandedJson.NullBehavior.valueOf(c.getString(JSON_NULLS).trim().toUpperCase(Locale.ROOT)),
                ExpandedJson.EmptyArrayBehavior.valueOf(c.getString(JSON_EMPTY_ARRAYS).trim().toUpperCase(Locale.ROOT)),
                ExpandedJson.NameAdjustment.valueOf(c.getString(NAME_ADJUSTMENT).trim().toUpperCase(Locale.ROOT))) : null;
    }

    /** {@code column:placement[:alias]} entries; an unknown placement is refused here rather than on the first record. */
    static List<Additional> placements(List<String> entries) {
        try {
            return EventRouterOptions.placements(String.join(",", entries));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(ADDITIONAL, entries, e.getMessage());
        }
    }

    @Override
    public R apply(R record) {
        if (record.value() == null) {
            LOG.debug("Tombstone dropped: {}", record);
            return null;
        }
        Schema envelopeSchema = record.valueSchema();
        if (envelopeSchema == null || envelopeSchema.name() == null || !envelopeSchema.name().endsWith(".Envelope")
                || !(record.value() instanceof Struct envelope)) {
            return record; // not a change event (a heartbeat, a transaction marker, a schema change, a message): as it is
        }
        if (envelopeSchema.field("op") == null) {
            throw new DataException("op is not a valid field name");
        }
        String op = envelope.getString("op");
        if ("d".equals(op)) {
            LOG.debug("Delete of an outbox row dropped: {}", record.key());
            return null;
        }
        if ("u".equals(op)) {
            switch (opInvalid) {
                case "fatal" -> throw new IllegalStateException("Unexpected update message received " + record.key() + ", fail.");
                case "error" -> LOG.error("Unexpected update message received {} and ignored", record.key());
                default -> LOG.warn("Unexpected update message received {} and ignored", record.key());
            }
            return null;
        }
        Object afterValue = envelopeSchema.field("after") == null ? null : envelope.get("after");
        if (!(afterValue instanceof Struct row)) {
            throw new DataException("an outbox change of op '" + op + "' carries no row ('after' is "
                    + (afterValue == null ? "null" : afterValue.getClass().getSimpleName()) + ")");
        }
        Schema rowSchema = row.schema();
        Field payloadField = rowSchema.field(payloadColumn);
        if (payloadField == null) {
            throw new ConnectException("Unable to find payload field " + payloadColumn + " in event");
        }
        Long timestamp = timestamp(envelope, row);
        var headers = record.headers().duplicate();
        Field idField = field(rowSchema, idColumn);
        headers.add("id", row.get(idField), idField.schema());

        Schema payloadSchema = payloadField.schema();
        Object payload = row.get(payloadField);
        if (expander != null) {
            if (payload instanceof String text) {
                try {
                    var expanded = expander.expand(text, payloadColumn);
                    payloadSchema = expanded.schema();
                    payload = expanded.value();
                } catch (IllegalArgumentException e) {
                    LOG.warn("JSON expansion failed; the payload is sent as it is: {}", e.getMessage());
                }
            } else {
                LOG.warn("Expand JSON payload is turned on but payload is not a string in {}", record.key());
            }
        }

        Integer partition = null;
        var envelopeFields = new ArrayList<Additional>();
        for (var a : additional) {
            Field f = rowSchema.field(a.column());
            if (f == null) {
                if (errorOnMissing) {
                    throw new DataException(a.column() + " is not a valid field name");
                }
                continue;
            }
            switch (a.placement()) {
                case HEADER -> headers.add(a.alias(), row.get(f), f.schema());
                case PARTITION -> partition = row.getInt32(a.column());
                case ENVELOPE -> envelopeFields.add(a);
            }
        }

        Object routeValue = row.get(field(rowSchema, routeBy));
        if (routeValue != null && !(routeValue instanceof String)) {
            throw new DataException("Field '" + routeBy + "' is not of type STRING");
        }
        if (routeValue == null) {
            throw new DataException("the routing column " + routeBy + " is null: no topic for event " + row.get(idField));
        }
        var matcher = routeRegex.matcher((String) routeValue);
        String topic = matcher.matches() ? matcher.replaceFirst(replacement) : (String) routeValue;

        Schema valueSchema = payloadSchema;
        Object value = payload;
        if (!envelopeFields.isEmpty()) {
            var sb = SchemaBuilder.struct().name(envelopeName(row.schema().name(), (String) routeValue)).field("payload", payloadSchema);
            if (versionColumn != null) {
                Integer version = row.getInt32(versionColumn);
                if (version != null) {
                    sb.version(version);
                }
            }
            for (var a : envelopeFields) {
                sb.field(a.alias(), rowSchema.field(a.column()).schema());
            }
            valueSchema = sb.build();
            var struct = new Struct(valueSchema).put("payload", payload);
            for (var a : envelopeFields) {
                struct.put(a.alias(), row.get(a.column()));
            }
            value = struct;
        }
        if (tombstoneOnEmpty && (payload == null || (payload instanceof String s && s.trim().isEmpty()))) {
            valueSchema = null;
            value = null;
        }
        Field keyField = field(rowSchema, keyColumn);
        return record.newRecord(topic, partition, keyField.schema(), row.get(keyField), valueSchema, value, timestamp, headers);
    }

    private static Field field(Schema schema, String name) {
        Field f = schema.field(name);
        if (f == null) {
            throw new DataException(name + " is not a valid field name");
        }
        return f;
    }

    /** The envelope's schema name: the row schema's name with the routing value before its last part. */
    private static String envelopeName(String rowName, String route) {
        if (rowName == null) {
            return route;
        }
        int dot = rowName.lastIndexOf('.');
        return dot < 0 ? route + "." + rowName : rowName.substring(0, dot) + "." + route + rowName.substring(dot);
    }

    /** The record timestamp: the timestamp column's, in milliseconds, or the change's {@code ts_ms}. */
    private Long timestamp(Struct envelope, Struct row) {
        Long changeTs = envelope.schema().field("ts_ms") == null ? null : envelope.getInt64("ts_ms");
        if (timestampColumn == null) {
            return changeTs;
        }
        Field f = row.schema().field(timestampColumn);
        if (f == null) {
            throw new ConnectException("Unable to find timestamp field " + timestampColumn + " in event");
        }
        Long raw = row.getInt64(timestampColumn);
        if (raw == null) {
            return changeTs;
        }
        String name = f.schema().name();
        if (name == null) {
            throw new ConnectException("Unsupported field type INT64 (without logical schema name) for event timestamp");
        }
        return switch (name) {
            case "io.debezium.time.Timestamp" -> raw;
            case "io.debezium.time.MicroTimestamp" -> raw / 1_000;
            case "io.debezium.time.NanoTimestamp" -> raw / 1_000_000;
            default -> throw new ConnectException("Unsupported field type " + name + " for event timestamp");
        };
    }

    @Override
    public ConfigDef config() {
        return CONFIG_DEF;
    }

    @Override
    public String version() {
        return EventRouter.class.getPackage().getImplementationVersion() == null ? "dev"
                : EventRouter.class.getPackage().getImplementationVersion();
    }

    @Override
    public void close() {
    }

    private static ConfigDef.Validator oneOf(String... values) {
        var allowed = List.of(values);
        return (name, value) -> {
            if (value != null && !allowed.contains(value.toString().trim().toLowerCase(Locale.ROOT))) {
                throw new ConfigException(name, value, "one of " + String.join(", ", allowed));
            }
        };
    }

    private static ConfigDef.Validator regex() {
        return (name, value) -> {
            try {
                Pattern.compile(String.valueOf(value));
            } catch (PatternSyntaxException e) {
                throw new ConfigException(name, value, "not a regular expression: " + e.getDescription());
            }
        };
    }
}
