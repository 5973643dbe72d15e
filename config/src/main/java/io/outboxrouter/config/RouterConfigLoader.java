package io.outboxrouter.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.outboxrouter.config.OutboxConfig.Columns;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Loads a {@link RouterConfig} from YAML and the environment. Every problem is collected and thrown at once
 * as a {@link ConfigException}, each naming its full key and the bad value (never a secret's value).
 */
public final class RouterConfigLoader {
    public static final String DEFAULT_TOPIC = "outbox.event.${aggregatetype}";
    public static final String DEFAULT_DEAD_LETTER_TOPIC = "outbox.dead-letters";
    public static final String DEFAULT_PARKING_TOPIC = "outbox.parked";
    public static final String DEFAULT_OFFSETS_TABLE = "outbox_router_offsets";
    /**
     * On Postgres, at least once: at most five offset writes a second. Each is a transaction on the offsets database (by
     * default the source, whose log reader then decodes it too), and storing after every batch (up to 200 a second at
     * the 5 ms poll interval) costs latency under a steady load; a crash sends up to the interval's events again. What
     * is deferred is stored by the next batch, and there the connector's heartbeat (every 250 ms while nothing arrives)
     * makes one. Debezium 3.5's engine asks its commit policy only after a
     * batch, so where no such heartbeat runs (the binlog's comes with binlog events; exactly-once runs without one) the
     * default stays after every batch: {@link #DEFAULT_COMMIT_INTERVAL_WITHOUT_HEARTBEAT}.
     */
    public static final Duration DEFAULT_COMMIT_INTERVAL = Duration.ofMillis(200);
    /** MySQL/MariaDB, and exactly-once delivery: see {@link #DEFAULT_COMMIT_INTERVAL}. */
    public static final Duration DEFAULT_COMMIT_INTERVAL_WITHOUT_HEARTBEAT = Duration.ZERO;
    /**
     * {@code source.poll-interval} on Postgres at least once: the longest an event waits in Debezium's queue for a batch to
     * fill while events trickle in. A shorter one costs the polling thread a few more polls a second and, while the
     * log is quiet, Debezium's Postgres reader a few more checks of the replication stream.
     */
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(5);
    /**
     * Where every batch also stores a position (MySQL/MariaDB, whose offsets are written after each batch) or commits a
     * Kafka transaction (exactly-once): a longer wait makes fewer of those writes a second.
     */
    public static final Duration DEFAULT_POLL_INTERVAL_STORING_EVERY_BATCH = Duration.ofMillis(10);

    /**
     * Whether each batch also writes a position (the binlog's offsets, stored after every batch) or commits a Kafka
     * transaction (exactly-once); only Postgres at least once stores by time. Sets the defaults of the commit and poll
     * intervals.
     */
    static boolean storesEveryBatch(SourceKind kind, Delivery delivery) {
        return kind != SourceKind.POSTGRES || delivery == Delivery.EXACTLY_ONCE;
    }
    public static final String DEFAULT_SCHEMA_HISTORY_TABLE = "outbox_router_schema_history";

    private static final Pattern ROUTER_NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Pattern SHARD_NAME = Pattern.compile("-shard-\\d+-of-\\d+$");
    static final Pattern SHARD_SUFFIX = Pattern.compile("_shard_\\d+_of_\\d+$");
    static final Pattern SHARD = Pattern.compile("(\\d{1,3})\\s*/\\s*(\\d{1,3})");
    private static final Pattern MESSAGE_PREFIX = Pattern.compile("[A-Za-z0-9_.:/-]{1,64}");
    static final Pattern SLOT_NAME = Pattern.compile("[a-z0-9_]{1,63}");
    static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*");
    static final Pattern QUALIFIED_TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*\\.[A-Za-z_][A-Za-z0-9_$]*");
    private static final Pattern OPTIONALLY_QUALIFIED = Pattern.compile("([A-Za-z_][A-Za-z0-9_$]*\\.)?[A-Za-z_][A-Za-z0-9_$]*");
    /** Producer settings the delivery guarantees depend on: not overridable. */
    private static final Map<String, String> FIXED_PRODUCER = Map.of(
            "acks", "all", "enable.idempotence", "true");
    private static final Pattern TOPIC_NAME = Pattern.compile("[A-Za-z0-9._-]{1,249}");
    private static final Set<String> OWNED_PRODUCER = Set.of("key.serializer", "value.serializer", "bootstrap.servers");

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private RouterConfigLoader() {
    }

    public static RouterConfig load(Path file, Map<String, String> env) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw new ConfigException(List.of("cannot read configuration file " + file + " (" + e.getClass().getSimpleName() + ")"));
        }
        return parse(text, env);
    }

    public static RouterConfig parse(String yaml, Map<String, String> env) {
        JsonNode root;
        try {
            root = yaml.isBlank() ? MissingNode.getInstance() : YAML.readTree(yaml);
        } catch (JacksonException e) {
            var loc = e.getLocation();
            throw new ConfigException(List.of("not valid YAML" + (loc == null ? "" : " at line " + loc.getLineNr())
                    + ": " + e.getOriginalMessage()));
        }
        var problems = new ArrayList<String>();
        var top = new ConfigNode("", root, env, problems);
        var config = build(top);
        top.rejectUnknown();
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return config;
    }

    /**
     * The routing part of a router's configuration alone, for the Kafka Connect transformation: what is routed and how.
     *
     * @param tables        the outbox tables; empty: every table the connector captures
     * @param messagePrefix the prefix of the logical decoding messages routed as events; null: none
     */
    public record Routing(List<String> tables, String messagePrefix, OutboxConfig outbox, RoutingConfig routing) {
    }

    /** The router writes messages of its own under {@code outbox-router.} (drain markers, heartbeats): never events. */
    static void checkMessagePrefix(ConfigNode messages, String prefix) {
        if (prefix == null) {
            return;
        }
        if (!MESSAGE_PREFIX.matcher(prefix).matches()) {
            messages.problem(messages.key("prefix"), "must be 1 to 64 letters, digits or any of _.:/- (was \"" + prefix + "\")");
        } else if (prefix.startsWith("outbox-router.")) {
            messages.problem(messages.key("prefix"), "must not begin with outbox-router., the prefix of the router's own messages "
                    + "(was \"" + prefix + "\")");
        }
    }

    /**
     * Reads {@code source.tables}, {@code source.postgres.messages.prefix}, {@code outbox.*} and {@code routing.*} as the router
     * reads them (same keys, defaults and messages), from a tree of maps, lists and strings; any other key is unknown.
     *
     * @throws ConfigException with every problem, each naming its key and value
     */
    public static Routing routing(Map<String, Object> tree) {
        var problems = new ArrayList<String>();
        var top = new ConfigNode("", YAML.valueToTree(tree), Map.of(), problems);
        var source = top.child("source");
        var tables = source.stringList("tables", List.of());
        for (String t : tables) {
            if (!QUALIFIED_TABLE.matcher(t).matches()) {
                source.problem(source.key("tables"), "must be qualified table names like public.outbox (was \"" + t + "\")");
            }
        }
        var messages = source.child("postgres").child("messages");
        String prefix = messages.optionalString("prefix").orElse(null);
        checkMessagePrefix(messages, prefix);
        var outbox = RoutingConfigLoader.outbox(top.child("outbox"), null);
        var routing = RoutingConfigLoader.routing(top.child("routing"), outbox, null, DEFAULT_PARKING_TOPIC);
        top.rejectUnknown();
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return new Routing(tables, prefix, outbox, routing);
    }

    /** Every key of the configuration model, as the loader reads them (maps such as {@code kafka.producer} as one key). */
    static SortedSet<String> modelKeys() {
        var top = new ConfigNode("", MissingNode.getInstance(), Map.of(), new ArrayList<>());
        build(top);
        var keys = new TreeSet<String>();
        top.collectLeafKeys(keys);
        return keys;
    }

    private static RouterConfig build(ConfigNode top) {
        String name = top.requiredString("name", "it names this router's offsets and replication slot, e.g. name: orders-router");
        if (name != null && !ROUTER_NAME.matcher(name).matches()) {
            top.problem("name", "must be lower-case letters, digits, '-' or '_', at most 63 (was \"" + name + "\")");
        } else if (name != null && SHARD_NAME.matcher(name).find()) {
            top.problem("name", "must not end like a shard's name, -shard-<i>-of-<N>: the shards of another router are called so "
                    + "(was \"" + name + "\")");
        }
        var delivery = top.choice("delivery", Delivery.class, Delivery.AT_LEAST_ONCE);
        var source = SourceConfigLoader.source(top.child("source"), name == null ? "outbox_router" : name, delivery);
        var routingNode = top.child("routing");
        var eventRouter = RoutingConfigLoader.eventRouter(routingNode);
        var outbox = RoutingConfigLoader.outbox(top.child("outbox"), eventRouter);
        var routing = RoutingConfigLoader.routing(routingNode, outbox, eventRouter, parkingTopicOf(name == null ? "outbox_router" : name));
        if (eventRouter != null && source.postgres().messagePrefix() != null) {
            top.problem("routing.event-router", "routes outbox table rows; a tableless outbox (source.postgres.messages) is routed "
                    + "by outbox.columns: remove one of them");
        }
        var kafka = kafka(top.child("kafka"), delivery, name == null ? "outbox_router" : name);
        var offsets = offsets(top.child("offsets"), storesEveryBatch(source.kind(), delivery)
                ? DEFAULT_COMMIT_INTERVAL_WITHOUT_HEARTBEAT : DEFAULT_COMMIT_INTERVAL);
        var http = http(top.child("http"));
        var tracing = new RouterConfig.TracingConfig(top.child("tracing").bool("enabled", false));
        var debezium = top.stringMap("debezium");
        debezium.keySet().forEach(k -> PassThroughKeys.refusedDebezium(k).ifPresent(why -> top.problem(top.key("debezium." + k), why)));
        if (source.kind() == SourceKind.POSTGRES) {
            debezium.keySet().forEach(k -> PassThroughKeys.refusedPostgres(k).ifPresent(why -> top.problem(top.key("debezium." + k), why)));
        }
        if (source.kind() == SourceKind.MARIADB) {
            debezium.keySet().forEach(k -> PassThroughKeys.refusedMariaDb(k).ifPresent(why -> top.problem(top.key("debezium." + k), why)));
        }
        if (source.postgres().sharded()) {
            debezium.keySet().forEach(k -> PassThroughKeys.refusedSharded(k)
                    .ifPresent(why -> top.problem(top.key("debezium." + k), why + " (source.postgres.shards)")));
        }
        if (outbox.retention().on() && source.tables().isEmpty()) {
            top.problem("outbox.retention", "deletes published rows of the outbox tables, and this router has none "
                    + "(logical decoding messages leave nothing to delete): remove it");
        }
        if (outbox.retention().on() && !outbox.audit().enabled()) {
            top.problem("outbox.retention", "deletes only rows the self-audit proved published, and outbox.audit.enabled is false: "
                    + "turn the audit on, or retention off");
        }
        return new RouterConfig(name, source, outbox, routing, kafka, offsets, http, debezium, tracing);
    }

    static final String DEFAULT_CLOUDEVENTS_SOURCE = "/outbox/${aggregatetype}";

    /** A router's own parking topic by default: shared, another router's open Kafka transactions would hide its held events. */
    public static String parkingTopicOf(String routerName) {
        return DEFAULT_PARKING_TOPIC + "." + routerName;
    }

    /** Placeholders a template may use: the logical field names and every column the config names. */
    public static Set<String> knownPlaceholders(OutboxConfig outbox) {
        var known = new LinkedHashSet<String>(Columns.LOGICAL_FIELDS);
        Columns.LOGICAL_FIELDS.stream().map(outbox.columns()::column).forEach(known::add);
        known.addAll(outbox.headers().keySet());
        return known;
    }

    private static KafkaConfig kafka(ConfigNode n, Delivery delivery, String routerName) {
        String servers = n.requiredString("bootstrap-servers", "e.g. kafka:9092");
        var producer = n.stringMap("producer");
        producer.forEach((k, v) -> {
            String fixed = FIXED_PRODUCER.get(k);
            if (fixed != null && !fixed.equals(v.trim().toLowerCase(Locale.ROOT))) {
                n.problem(n.key("producer." + k), "must be " + fixed
                        + ": ordered at-least-once delivery depends on it (was \"" + v + "\")");
            }
            PassThroughKeys.refusedProducer(k).ifPresent(why -> n.problem(n.key("producer." + k), why));
            if (OWNED_PRODUCER.contains(k)) {
                n.problem(n.key("producer." + k), "is set by the router; remove it"
                        + (k.equals("bootstrap.servers") ? " and use kafka.bootstrap-servers" : ""));
            }
        });
        if (delivery == Delivery.EXACTLY_ONCE) {
            producer.forEach((k, v) -> PassThroughKeys.refusedExactlyOnce(k, v)
                    .ifPresent(why -> n.problem(n.key("producer." + k), why + " (delivery: exactly-once; was \"" + v + "\")")));
        }
        var giveUp = n.duration("give-up-after", Duration.ofMinutes(5));
        String offsetsTopic = n.string("offsets-topic", KafkaConfig.defaultOffsetsTopic(routerName));
        if (!TOPIC_NAME.matcher(offsetsTopic).matches()) {
            n.problem(n.key("offsets-topic"), "must be a Kafka topic name: letters, digits, '.', '_' or '-', at most 249 (was \""
                    + offsetsTopic + "\")");
        }
        return new KafkaConfig(servers, producer, giveUp, delivery, offsetsTopic);
    }

    private static OffsetsConfig offsets(ConfigNode n, Duration defaultCommitInterval) {
        String table = n.string("table", DEFAULT_OFFSETS_TABLE);
        String historyTable = n.string("schema-history-table", DEFAULT_SCHEMA_HISTORY_TABLE);
        for (var t : List.of(Map.entry("table", table), Map.entry("schema-history-table", historyTable))) {
            if (!OPTIONALLY_QUALIFIED.matcher(t.getValue()).matches()) {
                n.problem(n.key(t.getKey()), "must be a table name, optionally schema-qualified (was \"" + t.getValue() + "\")");
            }
        }
        Optional<String> url = n.optionalString("url");
        Optional<String> user = n.optionalString("user");
        Optional<Secret> password = n.secret("password");
        if (url.isEmpty() && (user.isPresent() || password.isPresent())) {
            n.problem(n.key("url"), "required when offsets.user or offsets.password is given (without it the source database is used)");
        }
        url.filter(u -> !u.startsWith("jdbc:")).ifPresent(u ->
                n.problem(n.key("url"), "must be a JDBC URL (was \"" + u + "\")"));
        var connection = url.map(u -> new JdbcConnection(u, user.orElse(null), password.orElse(Secret.of(""))));
        var commitInterval = n.duration("commit-interval", defaultCommitInterval);
        if (commitInterval.isNegative()) {
            n.problem(n.key("commit-interval"), "must not be negative (was " + commitInterval + ")");
        }
        var giveUp = n.duration("give-up-after", Duration.ofMinutes(10));
        if (giveUp.isNegative()) {
            n.problem(n.key("give-up-after"), "must not be negative (was " + giveUp + ")");
        }
        return new OffsetsConfig(table, historyTable, connection, commitInterval, giveUp);
    }

    private static HttpConfig http(ConfigNode n) {
        boolean enabled = n.bool("enabled", true);
        String listen = n.string("listen", "127.0.0.1:8080");
        int colon = listen.lastIndexOf(':');
        int port = -1;
        if (colon > 0) {
            try {
                port = Integer.parseInt(listen.substring(colon + 1));
            } catch (NumberFormatException e) {
                port = -1;
            }
        }
        if (port < 0 || port > 65535) {
            n.problem(n.key("listen"), "must be host:port, e.g. 127.0.0.1:8080 (was \"" + listen + "\")");
            return new HttpConfig(enabled, "127.0.0.1", 8080);
        }
        return new HttpConfig(enabled, listen.substring(0, colon), port);
    }
}
