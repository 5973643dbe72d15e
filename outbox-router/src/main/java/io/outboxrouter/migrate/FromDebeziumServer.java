package io.outboxrouter.migrate;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import io.outboxrouter.config.ConfigException;
import io.outboxrouter.config.EventRouterOptions;
import io.outboxrouter.config.RouterConfigLoader;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Debezium Server {@code application.properties} (a Postgres, MySQL or MariaDB source, the outbox EventRouter, the Kafka
 * sink) turned into the router's YAML: the same database, tables, slot and publication, the EventRouter's options as
 * {@code routing.event-router} and the formats as {@code routing.format}, so that consumers get the same bytes. A property
 * with no equivalent is refused with the reason; one the router makes unnecessary is left out with the reason. The YAML is
 * checked by the router's own loader before it is returned.
 */
public final class FromDebeziumServer {
    /** What became of one property that is not carried over. */
    public record Dropped(String property, String reason, boolean refused) {
    }

    /** The YAML, and the properties not carried over. */
    public record Result(String yaml, List<Dropped> dropped) {
        public boolean anyRefused() {
            return dropped.stream().anyMatch(Dropped::refused);
        }
    }

    private static final Map<String, String> CONNECTORS = Map.of(
            "io.debezium.connector.postgresql.PostgresConnector", "postgres",
            "io.debezium.connector.mysql.MySqlConnector", "mysql",
            "io.debezium.connector.mariadb.MariaDbConnector", "mariadb");
    private static final String EVENT_ROUTER = "io.debezium.transforms.outbox.EventRouter";
    private static final Pattern ROUTER_NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Pattern QUARKUS_DEFAULT = Pattern.compile("\\$\\{([A-Za-z_][A-Za-z0-9_.-]*)(?::([^}]*))?}");
    private static final Pattern LITERAL_TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*\\\\?\\.[A-Za-z_][A-Za-z0-9_$]*");

    private FromDebeziumServer() {
    }

    public static Result convert(Properties properties) {
        var props = new TreeMap<String, String>();
        // Quarkus expressions in any value become the router's: ${VAR:default} -> ${VAR:-default}.
        properties.stringPropertyNames().forEach(k -> props.put(k, quarkus(properties.getProperty(k).trim())));
        var dropped = new ArrayList<Dropped>();
        var tree = new LinkedHashMap<String, Object>();
        var source = new LinkedHashMap<String, Object>();
        var postgres = new LinkedHashMap<String, Object>();
        var eventRouter = new LinkedHashMap<String, Object>();
        var format = new LinkedHashMap<String, Object>();
        var kafka = new LinkedHashMap<String, Object>();
        var producer = new LinkedHashMap<String, Object>();
        var debezium = new LinkedHashMap<String, Object>();
        var http = new LinkedHashMap<String, Object>();

        String connector = props.get("debezium.source.connector.class");
        String kind = connector == null ? null : CONNECTORS.get(connector);
        if (kind == null) {
            dropped.add(new Dropped("debezium.source.connector.class", connector == null ? "missing: the source connector is needed"
                    : "not a Postgres, MySQL or MariaDB connector (was " + connector + ")", true));
            kind = "postgres";
        }
        boolean binlog = !kind.equals("postgres");
        String prefix = props.getOrDefault("debezium.source.topic.prefix", "");
        String name = prefix.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_-]", "-");
        if (!ROUTER_NAME.matcher(name).matches()) {
            dropped.add(new Dropped("debezium.source.topic.prefix", "the router's name comes from it and must be lower-case letters, "
                    + "digits, '-' or '_' (was \"" + prefix + "\")", true));
        } else if (!name.equals(prefix)) {
            dropped.add(new Dropped("debezium.source.topic.prefix", "the router's name is \"" + name + "\"; with an envelope placement "
                    + "the value schema's name, which holds the prefix, differs from Debezium Server's", false));
        }
        tree.put("name", name);

        String host = props.getOrDefault("debezium.source.database.hostname", "localhost");
        String port = props.getOrDefault("debezium.source.database.port", binlog ? "3306" : "5432");
        var tables = new ArrayList<String>();
        String include = props.get("debezium.source.table.include.list");
        if (include == null) {
            dropped.add(new Dropped("debezium.source.table.include.list", "missing: the router publishes the outbox tables it names "
                    + "(e.g. public.outbox)", true));
        } else {
            for (String t : include.split(",")) {
                t = t.trim();
                if (!LITERAL_TABLE.matcher(t).matches()) {
                    dropped.add(new Dropped("debezium.source.table.include.list", "the router names tables, not patterns: \"" + t
                            + "\" is not schema.table", true));
                } else {
                    tables.add(t.replace("\\.", "."));
                }
            }
        }
        String database = binlog ? (tables.isEmpty() ? "" : tables.get(0).substring(0, tables.get(0).indexOf('.')))
                : props.getOrDefault("debezium.source.database.dbname", "postgres");
        source.put("kind", kind);
        source.put("url", "jdbc:" + (kind.equals("postgres") ? "postgresql" : kind) + "://" + host + ":" + port + "/" + database);
        source.put("user", quarkus(props.getOrDefault("debezium.source.database.user", "")));
        source.put("password", quarkus(props.getOrDefault("debezium.source.database.password", "")));
        source.put("tables", tables);
        String snapshot = props.getOrDefault("debezium.source.snapshot.mode", "initial");
        switch (snapshot.toLowerCase(Locale.ROOT)) {
            case "initial" -> source.put("snapshot", "initial");
            case "no_data", "never", "schema_only" -> source.put("snapshot", "none");
            default -> dropped.add(new Dropped("debezium.source.snapshot.mode", "the router takes initial or none (no_data); \""
                    + snapshot + "\" has no equivalent", true));
        }

        for (var e : props.entrySet()) {
            String key = e.getKey();
            String value = e.getValue();
            if (key.startsWith("%")) {
                dropped.add(new Dropped(key, "a Quarkus profile's value: convert the file with that profile's values in place", true));
            } else if (key.startsWith("debezium.source.")) {
                DebeziumServerSource.map(key.substring("debezium.source.".length()), key, value, binlog, source, postgres, debezium,
                        dropped);
            } else if (key.equals("debezium.sink.type")) {
                if (!value.equals("kafka")) {
                    dropped.add(new Dropped(key, "the router publishes to Kafka only (was " + value + ")", true));
                }
            } else if (key.equals("debezium.sink.kafka.producer.bootstrap.servers")) {
                kafka.put("bootstrap-servers", quarkus(value));
            } else if (key.equals("debezium.sink.kafka.producer.key.serializer") || key.equals("debezium.sink.kafka.producer.value.serializer")) {
                dropped.add(new Dropped(key, "the router sends the bytes routing.format makes", false));
            } else if (key.startsWith("debezium.sink.kafka.producer.")) {
                producer.put(key.substring("debezium.sink.kafka.producer.".length()), quarkus(value));
            } else if (key.startsWith("debezium.sink.kafka.")) {
                dropped.add(new Dropped(key, "the router waits for Kafka's acknowledgement of every record before it stores a position, "
                        + "and retries with backoff (kafka.give-up-after)", false));
            } else if (key.equals("debezium.transforms") || key.startsWith("debezium.transforms.")) {
                transform(key, value, props, eventRouter, dropped);
            } else if (key.startsWith("debezium.predicates")) {
                dropped.add(new Dropped(key, "predicates have no equivalent: the router routes the outbox tables' inserts", true));
            } else if (key.startsWith("debezium.format.")) {
                format(key.substring("debezium.format.".length()), key, value, props, format, dropped);
            } else if (key.equals("quarkus.http.port")) {
                http.put("listen", "0.0.0.0:" + value);
            } else if (key.startsWith("quarkus.")) {
                dropped.add(new Dropped(key, "a Quarkus setting: the router logs with logback (logback.xml) and serves health on http.listen",
                        false));
            } else {
                dropped.add(new Dropped(key, "not a Debezium Server property the router knows", true));
            }
        }
        for (String part : List.of("key", "value", "header")) { // json by default; schemas.enable alone turns schemas off
            if (!props.containsKey("debezium.format." + part)
                    && "false".equalsIgnoreCase(props.getOrDefault("debezium.format." + part + ".schemas.enable", "true"))) {
                format.put(part, "schemaless-json");
            }
        }
        if (!props.containsKey("debezium.transforms")) {
            dropped.add(new Dropped("debezium.transforms", "missing: the router converts configurations that route with Debezium's "
                    + "outbox EventRouter", true));
        } else {
            for (String t : props.get("debezium.transforms").split("\\s*,\\s*")) {
                if (!t.isBlank() && !props.containsKey("debezium.transforms." + t + ".type")) {
                    dropped.add(new Dropped("debezium.transforms." + t + ".type", "missing: the transformation's class", true));
                }
            }
        }
        if (binlog && !props.containsKey("debezium.source.snapshot.mode")) {
            dropped.add(new Dropped("debezium.source.snapshot.mode", "not set: Debezium's default, initial, is kept; a first start "
                    + "then publishes every row still in the outbox tables again. To go on from where Debezium Server stopped, see "
                    + "docs/migrating-from-debezium.md", false));
        }
        if (!binlog) {
            // Debezium's own names when the file gives none: the slot to hand over is the one Debezium Server used.
            postgres.putIfAbsent("slot", "debezium");
            postgres.putIfAbsent("publication", "dbz_publication");
            source.put("postgres", postgres);
        }
        tree.put("source", source);
        var routing = new LinkedHashMap<String, Object>();
        routing.put("event-router", eventRouter);
        if (!format.isEmpty()) {
            routing.put("format", format);
        }
        tree.put("routing", routing);
        if (!producer.isEmpty()) {
            kafka.put("producer", producer);
        }
        tree.put("kafka", kafka);
        if (!http.isEmpty()) {
            tree.put("http", http);
        }
        if (!debezium.isEmpty()) {
            tree.put("debezium", debezium);
        }
        String yaml = yaml(tree);
        try {
            RouterConfigLoader.parse(yaml, Map.of());
        } catch (ConfigException e) {
            e.problems().stream().filter(p -> !p.contains("environment variable"))
                    .forEach(p -> dropped.add(new Dropped(p.substring(0, Math.max(0, p.indexOf(':'))), p.substring(p.indexOf(':') + 1).trim(), true)));
        }
        return new Result(yaml, List.copyOf(dropped));
    }

    private static void transform(String key, String value, Map<String, String> props, Map<String, Object> eventRouter,
                                  List<Dropped> dropped) {
        String names = props.getOrDefault("debezium.transforms", "");
        var list = List.of(names.split("\\s*,\\s*"));
        if (key.equals("debezium.transforms")) {
            if (list.size() != 1 || list.get(0).isBlank()) {
                dropped.add(new Dropped(key, "the router runs the outbox EventRouter alone; other transformations have no equivalent (was "
                        + value + ")", true));
            }
            return;
        }
        String rest = key.substring("debezium.transforms.".length());
        int dot = rest.indexOf('.');
        String transform = dot < 0 ? rest : rest.substring(0, dot);
        String option = dot < 0 ? "" : rest.substring(dot + 1);
        if (!list.contains(transform)) {
            dropped.add(new Dropped(key, "belongs to no transformation listed in debezium.transforms", false));
        } else if (option.equals("type")) {
            if (!value.equals(EVENT_ROUTER)) {
                dropped.add(new Dropped(key, "the router runs Debezium's outbox EventRouter only (was " + value + ")", true));
            }
        } else if (option.equals("predicate") || option.equals("negate")) {
            dropped.add(new Dropped(key, "predicates have no equivalent: the router routes the outbox tables' inserts", true));
        } else if (!EventRouterOptions.DEFAULTS.containsKey(option)) {
            dropped.add(new Dropped(key, "not an option of Debezium's outbox EventRouter", true));
        } else {
            eventRouter.put(option, value);
        }
    }

    private static void format(String property, String key, String value, Map<String, String> props, Map<String, Object> format,
                               List<Dropped> dropped) {
        int dot = property.indexOf('.');
        String part = dot < 0 ? property : property.substring(0, dot);
        if (!List.of("key", "value", "header").contains(part)) {
            dropped.add(new Dropped(key, "not a Debezium Server format property", true));
            return;
        }
        if (dot >= 0) {
            if (!property.substring(dot + 1).equals("schemas.enable")) {
                dropped.add(new Dropped(key, "a converter setting the router does not offer; it offers schemas.enable", true));
            }
            return; // read with the format
        }
        boolean schemas = !"false".equalsIgnoreCase(props.getOrDefault("debezium.format." + part + ".schemas.enable", "true"));
        switch (value.toLowerCase(Locale.ROOT)) {
            case "json", "jsonbytearray" -> format.put(part, schemas ? "json" : "schemaless-json");
            case "simplestring" -> format.put(part, "string");
            case "binary" -> format.put(part, "bytes");
            default -> dropped.add(new Dropped(key, "the router writes json, schemaless json, simplestring or binary; \"" + value
                    + "\" has no equivalent", true));
        }
    }

    /**
     * Quarkus's {@code ${name:default}} is the router's {@code ${NAME:-default}}: Quarkus reads {@code db.password} from the
     * environment as {@code DB_PASSWORD}. {@code ${routedByValue}} (Debezium's own placeholder, escaped in the file) is left.
     */
    static String quarkus(String value) {
        Matcher m = QUARKUS_DEFAULT.matcher(value);
        return m.replaceAll(r -> r.group(1).equals("routedByValue") ? Matcher.quoteReplacement(r.group())
                : Matcher.quoteReplacement("${" + r.group(1).replace('.', '_').replace('-', '_').toUpperCase(Locale.ROOT)
                + (r.group(2) == null ? "" : ":-" + r.group(2)) + "}"));
    }

    private static String yaml(Map<String, Object> tree) {
        try {
            var mapper = new ObjectMapper(new YAMLFactory().disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
                    .enable(YAMLGenerator.Feature.ALWAYS_QUOTE_NUMBERS_AS_STRINGS));
            return mapper.writeValueAsString(tree);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
