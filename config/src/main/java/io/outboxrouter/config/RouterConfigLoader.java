package io.outboxrouter.config;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.outboxrouter.config.OutboxConfig.Columns;
import io.outboxrouter.config.OutboxConfig.PayloadFormat;
import io.outboxrouter.config.RoutingConfig.DeadLetterPolicy;
import io.outboxrouter.config.RoutingConfig.DeadLetters;
import io.outboxrouter.config.SourceConfig.BinlogSource;
import io.outboxrouter.config.SourceConfig.PostgresSource;
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
     * default the source, whose log reader then decodes it too), and storing after every batch (up to 100 a second at
     * the 10 ms poll interval) costs latency under a steady load; a crash sends up to the interval's events again. What
     * is deferred is stored by the next batch, and there the connector's heartbeat (every 250 ms while nothing arrives)
     * makes one. Debezium 3.5's engine asks its commit policy only after a
     * batch, so where no such heartbeat runs (the binlog's comes with binlog events; exactly-once runs without one) the
     * default stays after every batch: {@link #DEFAULT_COMMIT_INTERVAL_WITHOUT_HEARTBEAT}.
     */
    public static final Duration DEFAULT_COMMIT_INTERVAL = Duration.ofMillis(200);
    /** MySQL/MariaDB, and exactly-once delivery: see {@link #DEFAULT_COMMIT_INTERVAL}. */
    public static final Duration DEFAULT_COMMIT_INTERVAL_WITHOUT_HEARTBEAT = Duration.ZERO;
    public static final String DEFAULT_SCHEMA_HISTORY_TABLE = "outbox_router_schema_history";

    private static final Pattern ROUTER_NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Pattern SHARD_NAME = Pattern.compile("-shard-\\d+-of-\\d+$");
    private static final Pattern SHARD_SUFFIX = Pattern.compile("_shard_\\d+_of_\\d+$");
    private static final Pattern SHARD = Pattern.compile("(\\d{1,3})\\s*/\\s*(\\d{1,3})");
    private static final Pattern MESSAGE_PREFIX = Pattern.compile("[A-Za-z0-9_.:/-]{1,64}");
    private static final Pattern SLOT_NAME = Pattern.compile("[a-z0-9_]{1,63}");
    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*");
    private static final Pattern QUALIFIED_TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*\\.[A-Za-z_][A-Za-z0-9_$]*");
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
    private static void checkMessagePrefix(ConfigNode messages, String prefix) {
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
        var outbox = outbox(top.child("outbox"), null);
        var routing = routing(top.child("routing"), outbox, null, DEFAULT_PARKING_TOPIC);
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
        var source = source(top.child("source"), name == null ? "outbox_router" : name);
        var routingNode = top.child("routing");
        var eventRouter = eventRouter(routingNode);
        var outbox = outbox(top.child("outbox"), eventRouter);
        var routing = routing(routingNode, outbox, eventRouter, parkingTopicOf(name == null ? "outbox_router" : name));
        if (eventRouter != null && source.postgres().messagePrefix() != null) {
            top.problem("routing.event-router", "routes outbox table rows; a tableless outbox (source.postgres.messages) is routed "
                    + "by outbox.columns: remove one of them");
        }
        var delivery = top.choice("delivery", Delivery.class, Delivery.AT_LEAST_ONCE);
        var kafka = kafka(top.child("kafka"), delivery, name == null ? "outbox_router" : name);
        var offsets = offsets(top.child("offsets"), source.kind() == SourceKind.POSTGRES && delivery == Delivery.AT_LEAST_ONCE
                ? DEFAULT_COMMIT_INTERVAL : DEFAULT_COMMIT_INTERVAL_WITHOUT_HEARTBEAT);
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
        return new RouterConfig(name, source, outbox, routing, kafka, offsets, http, debezium, tracing);
    }

    private static SourceConfig source(ConfigNode n, String routerName) {
        var kind = n.choice("kind", SourceKind.class, SourceKind.POSTGRES);
        String example = "jdbc:" + kind.jdbcScheme() + "://host:" + (kind.isBinlog() ? 3306 : 5432) + "/database";
        String url = n.requiredString("url", "the JDBC URL of the database holding the outbox, e.g. " + example);
        JdbcUrl address = null;
        if (url != null) {
            address = JdbcUrl.parse(url).filter(u -> u.scheme().equals(kind.jdbcScheme())).orElse(null);
            if (address == null) {
                n.problem(n.key("url"), "must look like " + example + " for source.kind " + ConfigNode.lower(kind)
                        + " (was \"" + url + "\")");
            } else if (address.multiHost() && kind.isBinlog()) {
                n.problem(n.key("url"), "names " + address.hosts().size() + " hosts; a " + ConfigNode.lower(kind) + " source takes one: "
                        + "give the address that moves to the primary in a failover (docs/failover.md) (was \"" + url + "\")");
            } else if (address.multiHost()) {
                // The router writes (its lock, its offsets) and reads its slot on the primary: of several hosts, that one.
                var target = address.parameter("targetServerType");
                if (target.isEmpty()) {
                    url = url + (url.contains("?") ? "&" : "?") + "targetServerType=primary";
                    address = JdbcUrl.parse(url).orElseThrow();
                } else if (!target.get().equalsIgnoreCase("primary") && !target.get().equalsIgnoreCase("master")) {
                    n.problem(n.key("url"), "names several hosts with targetServerType=" + target.get() + "; the router reads its slot "
                            + "and writes its offsets on the primary: use targetServerType=primary, or leave it out (was \"" + url + "\")");
                }
            }
        }
        String user = n.requiredString("user", kind.isBinlog()
                ? "a user with REPLICATION SLAVE, REPLICATION CLIENT and SELECT" : "a role with REPLICATION LOGIN");
        var password = n.secret("password").orElse(Secret.of(""));
        var pg = n.child("postgres");
        var messages = pg.child("messages");
        String messagePrefix = messages.optionalString("prefix").orElse(null);
        checkMessagePrefix(messages, messagePrefix);
        if (messagePrefix != null && kind.isBinlog()) {
            messages.problem(messages.key("prefix"), "logical decoding messages are Postgres's (pg_logical_emit_message); a "
                    + ConfigNode.lower(kind) + " source has none (remove it)");
        }
        // With messages, the outbox tables are optional: a tableless outbox names none.
        var defaultTables = messagePrefix != null ? List.<String>of()
                : kind.isBinlog() && address != null ? List.of(address.database() + ".outbox") : List.of("public.outbox");
        var tables = n.stringList("tables", defaultTables);
        if (tables.isEmpty() && messagePrefix == null) {
            n.problem(n.key("tables"), "must name at least one outbox table (or, on Postgres, set source.postgres.messages.prefix "
                    + "for a tableless outbox)");
        }
        for (String t : tables) {
            if (!QUALIFIED_TABLE.matcher(t).matches()) {
                n.problem(n.key("tables"), "must be qualified table names like " + (kind.isBinlog() ? "app.outbox" : "public.outbox")
                        + " (was \"" + t + "\")");
            }
        }
        String defaultName = routerName.replaceAll("[^a-z0-9_]", "_");
        String slot = pg.string("slot", defaultName);
        if (!SLOT_NAME.matcher(slot).matches()) {
            pg.problem(pg.key("slot"), "must be lower-case letters, digits or '_', at most 63 (was \"" + slot + "\")");
        }
        String publication = pg.string("publication", defaultName);
        if (!IDENTIFIER.matcher(publication).matches()) {
            pg.problem(pg.key("publication"), "must be a plain SQL identifier (was \"" + publication + "\")");
        }
        for (var named : Map.of("slot", slot, "publication", publication).entrySet()) {
            if (SHARD_SUFFIX.matcher(named.getValue()).find()) {
                pg.problem(pg.key(named.getKey()), "must not end like a shard's, _shard_<i>_of_<N>: another router's shards are "
                        + "called so (was \"" + named.getValue() + "\"" + (pg.raw(named.getKey()).isPresent() ? "" : ", from the name") + ")");
            }
        }
        Duration heartbeat = pg.duration("heartbeat-interval", Duration.ZERO);
        String heartbeatTable = pg.string("heartbeat-table", "public.outbox_router_heartbeat");
        if (!QUALIFIED_TABLE.matcher(heartbeatTable).matches()) {
            pg.problem(pg.key("heartbeat-table"), "must be a schema-qualified table name (was \"" + heartbeatTable + "\")");
        }
        int count = pg.integer("shards", 1, 1, Shard.MAX_COUNT);
        List<Integer> runs = Shard.all(count);
        var only = pg.optionalString("shard");
        if (only.isPresent()) {
            var m = SHARD.matcher(only.get().trim());
            int i = m.matches() ? Integer.parseInt(m.group(1)) : -1;
            int of = m.matches() ? Integer.parseInt(m.group(2)) : -1;
            if (i < 0 || of < 2 || of > Shard.MAX_COUNT || i >= of) {
                pg.problem(pg.key("shard"), "must be i/N, this process's shard of N (2 to " + Shard.MAX_COUNT
                        + "), numbered from 0: 0/4 to 3/4 (was \"" + only.get() + "\")");
            } else if (pg.raw("shards").isPresent() && count != of) {
                pg.problem(pg.key("shard"), "says " + of + " shards but source.postgres.shards says " + count + " (set one of them)");
            } else {
                count = of;
                runs = List.of(i);
            }
        }
        if (count > 1) {
            String key = pg.key(only.isPresent() ? "shard" : "shards");
            if (kind.isBinlog()) {
                pg.problem(key, "shards split a Postgres outbox over several replication slots; a " + ConfigNode.lower(kind)
                        + " source reads one binlog stream (remove it)");
            }
            if (messagePrefix != null) {
                // A publication's row filter splits table rows; every slot receives every logical decoding message.
                pg.problem(key, "shards split outbox tables by a publication row filter, which logical decoding messages do not "
                        + "pass through (every shard would receive every message): run messages unsharded (remove it, or "
                        + "source.postgres.messages.prefix)");
            }
            var longest = List.of(Shard.routerName(routerName, count - 1, count), slot + Shard.suffix(count - 1, count),
                    publication + Shard.suffix(count - 1, count));
            if (longest.stream().anyMatch(l -> l.length() > 63)) {
                pg.problem(key, "with " + count + " shards the names grow past Postgres's 63 characters (" + String.join(", ", longest)
                        + "): choose a shorter name, source.postgres.slot or source.postgres.publication");
            }
        }
        var binlog = n.child("binlog");
        // A stable id per router name, in a range replicas rarely use; configurable when it collides.
        long defaultServerId = 184_000 + Math.floorMod(routerName.hashCode(), 100_000);
        long serverId = binlog.integer("server-id", (int) defaultServerId, 1, Integer.MAX_VALUE);
        var snapshot = n.choice("snapshot", SnapshotMode.class, SnapshotMode.NONE);
        Duration poll = n.duration("poll-interval", Duration.ofMillis(10));
        if (poll.toMillis() < 1 || poll.toMinutes() > 1) {
            n.problem(n.key("poll-interval"), "must be between 1ms and 1m (was \"" + Durations.format(poll) + "\")");
        }
        int batch = n.integer("max-batch-size", 2048, 1, 65536);
        return new SourceConfig(kind, new JdbcConnection(url, user, password), address, tables,
                new PostgresSource(slot, publication, heartbeat, heartbeatTable, count, runs, null, messagePrefix),
                new BinlogSource(serverId), snapshot, poll, batch);
    }

    /**
     * {@code routing.event-router}: Debezium's EventRouter options under Debezium's names (read without {@code ${...}}
     * substitution: {@code ${routedByValue}} is Debezium's), and {@code routing.format}; null when not given.
     */
    private static RoutingConfig.EventRouterMode eventRouter(ConfigNode routing) {
        var format = routing.child("format");
        var key = format.choice("key", RoutingConfig.Format.class, RoutingConfig.Format.JSON);
        var value = format.choice("value", RoutingConfig.Format.class, RoutingConfig.Format.JSON);
        var header = format.choice("header", RoutingConfig.Format.class, RoutingConfig.Format.JSON);
        var given = routing.rawStringMap("event-router");
        if (!routing.has("event-router")) {
            if (routing.has("format")) {
                routing.problem(routing.key("format"), "applies to records made by routing.event-router; set that too, or remove it");
            }
            return null;
        }
        var options = EventRouterOptions.of(given, (option, problem) -> routing.problem(routing.key("event-router." + option), problem));
        return new RoutingConfig.EventRouterMode(options, key, value, header);
    }

    private static OutboxConfig outbox(ConfigNode n, RoutingConfig.EventRouterMode eventRouter) {
        if (eventRouter != null) {
            for (String field : List.of("columns", "headers", "payload-format")) {
                if (n.has(field)) {
                    n.problem(n.key(field), "is set by routing.event-router's options (" + EventRouterOptions.ID + ", "
                            + EventRouterOptions.KEY + ", " + EventRouterOptions.PAYLOAD + ", " + EventRouterOptions.ADDITIONAL
                            + ", ...): remove it");
                }
            }
        }
        var c = n.child("columns");
        var d = Columns.DEFAULTS;
        if (eventRouter != null) {
            var o = eventRouter.options();
            d = new Columns(o.get(EventRouterOptions.ID), o.get(EventRouterOptions.ROUTE_BY), o.get(EventRouterOptions.KEY),
                    o.get(EventRouterOptions.TYPE), o.get(EventRouterOptions.PAYLOAD));
        }
        var columns = new Columns(
                column(c, "id", d.id()), column(c, "aggregate-type", d.aggregateType()),
                column(c, "aggregate-id", d.aggregateId()), column(c, "type", d.type()),
                column(c, "payload", d.payload()));
        var headers = n.stringMap("headers");
        headers.forEach((col, header) -> {
            if (!IDENTIFIER.matcher(col).matches()) {
                n.problem(n.key("headers"), "\"" + col + "\" is not a column name");
            }
            if (header.isBlank()) {
                n.problem(n.key("headers." + col), "must name the Kafka header");
            }
        });
        var format = n.choice("payload-format", PayloadFormat.class, PayloadFormat.BYTES);
        var off = OutboxConfig.Retention.OFF;
        Duration after = n.duration("retention", off.after());
        if (!after.isZero() && after.toMillis() < 1000) {
            n.problem(n.key("retention"), "must be at least 1s, or 0 for off (was \"" + Durations.format(after) + "\")");
        }
        String timeColumn = column(n, "retention-time-column", off.timeColumn());
        int batchSize = n.integer("retention-batch-size", off.batchSize(), 1, 100_000);
        return new OutboxConfig(columns, headers, format, new OutboxConfig.Retention(after, timeColumn, batchSize));
    }

    private static String column(ConfigNode n, String field, String defaultName) {
        String v = n.string(field, defaultName);
        if (!IDENTIFIER.matcher(v).matches()) {
            n.problem(n.key(field), "must be a column name (was \"" + v + "\")");
        }
        return v;
    }

    static final String DEFAULT_CLOUDEVENTS_SOURCE = "/outbox/${aggregatetype}";

    /** A router's own parking topic by default: shared, another router's open Kafka transactions would hide its held events. */
    public static String parkingTopicOf(String routerName) {
        return DEFAULT_PARKING_TOPIC + "." + routerName;
    }

    private static RoutingConfig routing(ConfigNode n, OutboxConfig outbox, RoutingConfig.EventRouterMode eventRouter,
                                         String defaultParkingTopic) {
        if (eventRouter != null && n.has("topic")) {
            n.problem(n.key("topic"), "is set by routing.event-router's " + EventRouterOptions.ROUTE_REPLACEMENT + " and "
                    + EventRouterOptions.ROUTE_REGEX + ": remove it");
        }
        // ${...} in the template are columns, not environment variables: read it without substitution.
        String text = n.rawText("topic").map(String::trim).filter(s -> !s.isEmpty()).orElse(DEFAULT_TOPIC);
        TopicTemplate topic;
        try {
            topic = TopicTemplate.parse(text);
            var known = knownPlaceholders(outbox);
            for (String p : topic.placeholders()) {
                if (!known.contains(p)) {
                    n.problem(n.key("topic"), "unknown placeholder ${" + p + "} in \"" + text + "\"; known: "
                            + String.join(", ", known.stream().map(k -> "${" + k + "}").toList())
                            + " (name another column under outbox.headers to use it)");
                }
            }
        } catch (IllegalArgumentException e) {
            n.problem(n.key("topic"), e.getMessage() + " (was \"" + text + "\")");
            topic = TopicTemplate.parse(DEFAULT_TOPIC);
        }
        var dl = n.child("dead-letters");
        var policy = dl.choice("policy", DeadLetterPolicy.class, DeadLetterPolicy.DEAD_LETTER);
        String dlTopic = dl.string("topic", DEFAULT_DEAD_LETTER_TOPIC);
        if (!TopicTemplate.isLegalTopic(dlTopic)) {
            dl.problem(dl.key("topic"), "must be a Kafka topic name: letters, digits, '.', '_', '-' (was \"" + dlTopic + "\")");
        }
        String parkingTopic = dl.string("parking-topic", defaultParkingTopic);
        if (!TopicTemplate.isLegalTopic(parkingTopic)) {
            dl.problem(dl.key("parking-topic"), "must be a Kafka topic name: letters, digits, '.', '_', '-' (was \"" + parkingTopic + "\")");
        } else if (parkingTopic.equals(dlTopic)) {
            dl.problem(dl.key("parking-topic"), "must not be the dead-letter topic (both are \"" + parkingTopic + "\"): held events "
                    + "are released from it, dead letters are not");
        }
        return new RoutingConfig(topic, new DeadLetters(policy, dlTopic, parkingTopic), eventRouter, cloudEvents(n, outbox, eventRouter));
    }

    /** {@code routing.envelope} and {@code routing.cloudevents.*}; null when events are not wrapped. */
    private static RoutingConfig.CloudEvents cloudEvents(ConfigNode n, OutboxConfig outbox, RoutingConfig.EventRouterMode eventRouter) {
        var envelope = n.choice("envelope", RoutingConfig.Envelope.class, RoutingConfig.Envelope.NONE);
        var ce = n.child("cloudevents");
        var mode = ce.choice("mode", RoutingConfig.CloudEvents.Mode.class, RoutingConfig.CloudEvents.Mode.BINARY);
        String text = ce.rawText("source").map(String::trim).filter(s -> !s.isEmpty()).orElse(DEFAULT_CLOUDEVENTS_SOURCE);
        TopicTemplate source = TopicTemplate.parseText(DEFAULT_CLOUDEVENTS_SOURCE);
        try {
            source = TopicTemplate.parseText(text);
            var known = knownPlaceholders(outbox);
            for (String p : source.placeholders()) {
                if (!known.contains(p)) {
                    ce.problem(ce.key("source"), "unknown placeholder ${" + p + "} in \"" + text + "\"; known: "
                            + String.join(", ", known.stream().map(k -> "${" + k + "}").toList()));
                }
            }
        } catch (IllegalArgumentException e) {
            ce.problem(ce.key("source"), e.getMessage() + " (was \"" + text + "\")");
        }
        if (envelope == RoutingConfig.Envelope.NONE) {
            if (ce.has("mode") || ce.has("source")) {
                ce.problem(ce.key(ce.has("mode") ? "mode" : "source"), "is read only with routing.envelope: cloudevents (set it, or remove this)");
            }
            return null;
        }
        if (eventRouter != null) {
            n.problem(n.key("envelope"), "wraps the router's own records; with routing.event-router the records are Debezium's "
                    + "EventRouter's: remove one of them");
        }
        for (String header : outbox.headers().values()) {
            String lower = header.toLowerCase(java.util.Locale.ROOT);
            if (lower.equals("content-type") || lower.startsWith("ce_")) {
                n.problem(n.key("envelope"), "puts the CloudEvents attributes in the " + header + " header, which outbox.headers also "
                        + "names: a consumer would read the wrong one; rename that header");
            }
        }
        return new RoutingConfig.CloudEvents(mode, source);
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
