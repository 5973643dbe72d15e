package io.outboxrouter.connect;

import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.change.ChangeRecords;
import io.outboxrouter.change.SourcePositions;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.config.RoutingConfig;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.OutboxRouting;
import io.outboxrouter.routing.RoutingResult;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.components.Versioned;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.DataException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * outbox-router's routing as a Kafka Connect transformation, for Debezium's own connectors on a Connect cluster: the same
 * pure mapping the router runs ({@link OutboxRouting}), so an outbox row gives the same record here as from the jar.
 *
 * <ul>
 *   <li>An outbox INSERT (or snapshot row, or a transactional logical decoding message with the configured prefix)
 *       becomes a record on the topic the template renders, keyed by the aggregate id (a string: use
 *       {@code key.converter=org.apache.kafka.connect.storage.StringConverter}), the payload bytes as stored as the value
 *       (bytes: use {@code value.converter=org.apache.kafka.connect.converters.ByteArrayConverter}), and the router's
 *       headers ({@code id}, {@code type}, {@code aggregatetype}, {@code source.position}, {@code source.table},
 *       {@code source.commit.time}, and the columns of {@code outbox.headers}) as strings.</li>
 *   <li>UPDATEs and DELETEs of outbox rows, tombstones, heartbeats and transaction markers give nothing (the record is
 *       dropped).</li>
 *   <li>A change of a table that is not named in {@code source.tables} (when it is set) is dropped with a warning, once a
 *       minute per table: the router too publishes nothing for it and says so.</li>
 *   <li>A row that cannot be routed is handled by {@code routing.dead-letters.policy}: {@code dead-letter} (default)
 *       re-addresses it to {@code routing.dead-letters.topic} with the reason in headers (Connect has no dead-letter queue
 *       for source connectors, so the transformation does it: the record the router would send); {@code fail} fails the
 *       task (with {@code errors.tolerance=all} Connect then drops and logs it); {@code skip} drops it with a log line.</li>
 * </ul>
 * Configuration keys are the router's YAML keys, with the same defaults and the same validation messages.
 */
public final class OutboxEventRouter<R extends ConnectRecord<R>> implements Transformation<R>, Versioned {
    private static final Logger LOG = LoggerFactory.getLogger(OutboxEventRouter.class);

    public static final String TABLES = "source.tables";
    public static final String MESSAGE_PREFIX = "source.postgres.messages.prefix";
    public static final String HEADERS = "outbox.headers";
    private static final List<String> COLUMNS = List.of("id", "aggregate-type", "aggregate-id", "type", "payload");
    private static final List<String> SCALARS = List.of("outbox.payload-format", "routing.topic", "routing.dead-letters.policy",
            "routing.dead-letters.topic");

    public static final ConfigDef CONFIG_DEF = configDef();

    private OutboxRouting routing;
    private DeadLetters deadLetters;
    private RoutingConfig.DeadLetterPolicy policy;
    /** Per instance: Connect runs one transformation instance per task, on the task's thread. */
    private final ChangeRecords changeRecords = new ChangeRecords(SourcePositions::of);
    /** When a not-routed table was last logged, so that it is logged once a minute. Task thread only. */
    private final Map<String, Long> unroutedLogged = new java.util.HashMap<>();

    /**
     * Each key is checked alone by the router's own loader (its message names the key and the value), so that Connect's
     * validate endpoint and {@code POST /connectors} refuse a bad setting; what depends on several keys (a template's
     * placeholder that is a header column) is checked again, together, when the task starts.
     */
    private static ConfigDef configDef() {
        var d = io.outboxrouter.config.OutboxConfig.Columns.DEFAULTS;
        var def = new ConfigDef()
                .define(TABLES, ConfigDef.Type.LIST, "", RouterKey.INSTANCE, ConfigDef.Importance.HIGH,
                        "Qualified outbox tables (public.outbox); empty: every table the connector captures is an outbox")
                .define(MESSAGE_PREFIX, ConfigDef.Type.STRING, null, RouterKey.INSTANCE, ConfigDef.Importance.MEDIUM,
                        "Postgres: also route transactional logical decoding messages with this prefix (set the connector's "
                                + "message.prefix.include.list to it, a regular expression: escape its dots)");
        for (String column : COLUMNS) {
            def.define("outbox.columns." + column, ConfigDef.Type.STRING, defaultColumn(d, column), RouterKey.INSTANCE, ConfigDef.Importance.MEDIUM,
                    "the outbox table's " + column + " column");
        }
        return def
                .define(HEADERS, ConfigDef.Type.LIST, "", RouterKey.INSTANCE, ConfigDef.Importance.MEDIUM,
                        "column:header pairs: more columns sent as Kafka headers, e.g. tracingspancontext:traceparent")
                .define("outbox.payload-format", ConfigDef.Type.STRING, "bytes", RouterKey.INSTANCE, ConfigDef.Importance.LOW,
                        "bytes: payloads as stored, unchecked; json: a payload that is not one JSON document is a dead letter")
                .define("routing.topic", ConfigDef.Type.STRING, RouterConfigLoader.DEFAULT_TOPIC, RouterKey.TEMPLATE, ConfigDef.Importance.HIGH,
                        "topic template: ${id}, ${aggregatetype}, ${aggregateid}, ${type}, or a column named under outbox.columns or outbox.headers")
                .define("routing.dead-letters.policy", ConfigDef.Type.STRING, "dead-letter", RouterKey.INSTANCE, ConfigDef.Importance.MEDIUM,
                        "rows that cannot be routed: dead-letter (re-addressed to routing.dead-letters.topic), fail (the task fails) or skip")
                .define("routing.dead-letters.topic", ConfigDef.Type.STRING, RouterConfigLoader.DEFAULT_DEAD_LETTER_TOPIC,
                        RouterKey.INSTANCE, ConfigDef.Importance.MEDIUM, "the dead-letter topic");
    }

    /** The router's default for {@code outbox.columns.<key>}. */
    private static String defaultColumn(io.outboxrouter.config.OutboxConfig.Columns d, String key) {
        return switch (key) {
            case "id" -> d.id();
            case "aggregate-type" -> d.aggregateType();
            case "aggregate-id" -> d.aggregateId();
            case "type" -> d.type();
            default -> d.payload();
        };
    }

    /** Checks one key's value with the router's loader; {@link #TEMPLATE} checks a topic template's syntax only. */
    private enum RouterKey implements ConfigDef.Validator {
        INSTANCE, TEMPLATE;

        @Override
        public void ensureValid(String name, Object value) {
            if (value == null) {
                return;
            }
            if (this == TEMPLATE) {
                try {
                    io.outboxrouter.config.TopicTemplate.parse(value.toString());
                } catch (IllegalArgumentException e) {
                    throw new ConfigException(name, value, e.getMessage());
                }
                return;
            }
            var props = new LinkedHashMap<String, Object>();
            props.put(name, value instanceof List<?> l ? String.join(",", l.stream().map(Object::toString).toList()) : value);
            var problems = problems(props);
            if (!problems.isEmpty()) {
                throw new ConfigException(name, value, String.join("; ", problems));
            }
        }
    }

    /** The router's messages for these settings; empty when they are good. */
    private static List<String> problems(Map<String, ?> props) {
        try {
            RouterConfigLoader.routing(tree(props));
            return List.of();
        } catch (io.outboxrouter.config.ConfigException e) {
            return e.problems();
        } catch (ConfigException e) {
            return List.of(e.getMessage());
        }
    }

    @Override
    public void configure(Map<String, ?> props) {
        RouterConfigLoader.Routing config;
        try {
            config = RouterConfigLoader.routing(tree(props));
        } catch (io.outboxrouter.config.ConfigException e) {
            // The router's own messages, each naming its key and the value.
            throw new ConfigException(String.join("; ", e.problems()));
        }
        this.routing = config.tables().isEmpty()
                ? OutboxRouting.anyTable(config.messagePrefix(), config.outbox(), config.routing().topic(), config.routing().cloudEvents())
                : new OutboxRouting(config.tables(), List.of(), config.messagePrefix(), config.outbox(), config.routing().topic(),
                        config.routing().cloudEvents());
        this.deadLetters = new DeadLetters(config.routing().deadLetters().topic(), config.outbox().columns());
        this.policy = config.routing().deadLetters().policy();
        if (policy == RoutingConfig.DeadLetterPolicy.PARK_AGGREGATE) {
            throw new ConfigException("routing.dead-letters.policy: park-aggregate is the router's, not the transformation's: a "
                    + "transformation cannot hold back an aggregate's later records (Kafka Connect sends every record it returns); "
                    + "use dead-letter, skip or fail here");
        }
    }

    /** Connect's flat keys as the router's YAML tree. */
    static Map<String, Object> tree(Map<String, ?> props) {
        var tree = new LinkedHashMap<String, Object>();
        Object tables = props.get(TABLES);
        if (tables != null && !tables.toString().isBlank()) {
            put(tree, TABLES, list(tables));
        }
        Object prefix = props.get(MESSAGE_PREFIX);
        if (prefix != null) {
            put(tree, MESSAGE_PREFIX, prefix.toString());
        }
        for (String column : COLUMNS) {
            Object v = props.get("outbox.columns." + column);
            if (v != null) {
                put(tree, "outbox.columns." + column, v.toString());
            }
        }
        Object headers = props.get(HEADERS);
        if (headers != null && !headers.toString().isBlank()) {
            var map = new LinkedHashMap<String, String>();
            for (String pair : list(headers)) {
                int colon = pair.indexOf(':');
                if (colon <= 0 || colon == pair.length() - 1) {
                    throw new ConfigException(HEADERS, headers, "must be column:header pairs separated by commas, e.g. "
                            + "tracingspancontext:traceparent (was \"" + pair + "\")");
                }
                map.put(pair.substring(0, colon).trim(), pair.substring(colon + 1).trim());
            }
            put(tree, HEADERS, map);
        }
        for (String key : SCALARS) {
            Object v = props.get(key);
            if (v != null) {
                put(tree, key, v.toString());
            }
        }
        return tree;
    }

    @Override
    public R apply(R record) {
        if (!(record instanceof SourceRecord source)) {
            return record;
        }
        Optional<ChangeEvent> change = changeRecords.toEvent(source);
        if (change.isEmpty()) {
            return null; // a tombstone, heartbeat, transaction marker or schema change: not an outbox event
        }
        RoutingResult result = routing.route(change.get());
        if (result instanceof RoutingResult.Publish publish) {
            return rebuild(record, publish.record());
        }
        if (result instanceof RoutingResult.Unrouted unrouted) {
            // A captured table that source.tables does not name (often a name spelled otherwise than the database does, or
            // a heartbeat table): its raw change record could not pass the value converter either. Dropped, and said.
            if (firstThisMinute("table " + unrouted.table())) {
                LOG.warn("A change from table {} at {} is not routed: the connector captures it, but {} does not name it (as the "
                        + "database spells it); dropped. Fix {} or the connector's table.include.list", unrouted.table(),
                        change.get().position(), TABLES, TABLES);
            }
            return null;
        }
        if (result instanceof RoutingResult.Ignore ignore) {
            // An UPDATE or DELETE of an outbox row publishes nothing by design; a message of a prefix not configured here
            // reached the transform because the connector lets it through, which is worth a line.
            var prefix = change.get().row().get(ChangeEvent.MESSAGE_PREFIX);
            if (prefix != null && firstThisMinute("prefix " + prefix)) {
                LOG.warn("A logical decoding message at {} is not routed: {}; dropped. Set {} to route it, or leave its prefix out "
                        + "of the connector's message.prefix.include.list", change.get().position(), ignore.why(), MESSAGE_PREFIX);
            } else {
                LOG.debug("Not routed at {}: {}", change.get().position(), ignore.why());
            }
            return null;
        }
        if (!(result instanceof RoutingResult.Reject reject)) {
            return null;
        }
        var rejected = reject.change();
        switch (policy) {
            case DEAD_LETTER:
                LOG.warn("Dead-lettering row at {} of {}: {}", rejected.position(), rejected.table(), reject.reason());
                return rebuild(record, deadLetters.record(reject));
            case SKIP:
                LOG.warn("Skipping row at {} of {} (routing.dead-letters.policy=skip): {}", rejected.position(), rejected.table(),
                        reject.reason());
                return null;
            default:
                throw new DataException("row at " + rejected.position() + " of " + rejected.table()
                        + " cannot be routed (routing.dead-letters.policy=fail): " + reject.reason());
        }
    }

    /** Whether a line about {@code what} was not logged in the last minute; notes that it is now. */
    private boolean firstThisMinute(String what) {
        long now = System.nanoTime();
        Long last = unroutedLogged.get(what);
        if (last != null && now - last <= java.util.concurrent.TimeUnit.MINUTES.toNanos(1)) {
            return false;
        }
        unroutedLogged.put(what, now);
        return true;
    }

    /** The router's record as a Connect record: a string key, a bytes value, the headers as strings. */
    private R rebuild(R original, ProducerRecord<byte[], byte[]> routed) {
        var headers = new ConnectHeaders();
        routed.headers().forEach(h -> headers.addString(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8)));
        return original.newRecord(routed.topic(), null,
                Schema.OPTIONAL_STRING_SCHEMA, routed.key() == null ? null : new String(routed.key(), StandardCharsets.UTF_8),
                Schema.OPTIONAL_BYTES_SCHEMA, routed.value(), original.timestamp(), headers);
    }

    @SuppressWarnings("unchecked")
    private static void put(Map<String, Object> tree, String dotted, Object value) {
        String[] parts = dotted.split("\\.");
        Map<String, Object> node = tree;
        for (int i = 0; i < parts.length - 1; i++) {
            node = (Map<String, Object>) node.computeIfAbsent(parts[i], k -> new LinkedHashMap<String, Object>());
        }
        node.put(parts[parts.length - 1], value);
    }

    private static List<String> list(Object value) {
        if (value instanceof List<?> l) {
            return l.stream().map(Object::toString).map(String::trim).filter(s -> !s.isEmpty()).toList();
        }
        return java.util.Arrays.stream(value.toString().split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    }

    @Override
    public ConfigDef config() {
        return CONFIG_DEF;
    }

    @Override
    public String version() {
        String v = OutboxEventRouter.class.getPackage().getImplementationVersion();
        return v == null ? "unknown" : v;
    }

    @Override
    public void close() {
    }
}
