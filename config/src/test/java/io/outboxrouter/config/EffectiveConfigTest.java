package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Driven from the model's keys ({@link ConfigReference}, which {@link ConfigReferenceTest} holds to the keys the loader
 * reads): every key gets a value other than its default, and the printed effective configuration must carry each key with
 * that value (secrets masked) and load back to the same configuration. A key added to the model but forgotten here, or in
 * {@link EffectiveConfig}, fails this test.
 */
class EffectiveConfigTest {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    /** The secret values given below: each must print as {@link Secret#MASK}, and never as itself. */
    private static final Set<String> SECRETS = Set.of("src-pw", "off-pw", "jaas-secret", "dbz-pw");

    /** A non-default value for every key, by source kind where a key belongs to one kind. */
    private static final Map<String, Object> COMMON = ordered(
            "name", "orders-x",
            "source.user", "router_u",
            "source.password", "src-pw",
            "source.snapshot", "initial",
            "source.poll-interval", "25ms",
            "source.max-batch-size", 999,
            "outbox.columns.id", "event_id",
            "outbox.columns.aggregate-type", "kind",
            "outbox.columns.aggregate-id", "entity",
            "outbox.columns.type", "event",
            "outbox.columns.payload", "body",
            "outbox.payload-format", "json",
            "outbox.headers.*", Map.of("tracing", "traceparent"),
            "outbox.retention-time-column", "inserted_at",
            "outbox.audit.interval", "30s",
            "outbox.audit.lag", "5m",
            "outbox.audit.on-loss", "replay",
            "routing.topic", "events.${kind}",
            "routing.dead-letters.policy", "skip",
            "routing.dead-letters.topic", "orders.dlq",
            "routing.dead-letters.parking-topic", "orders.parked",
            "routing.dead-letters.keep-ended-parks", "2h",
            "kafka.bootstrap-servers", "k1:9092,k2:9092",
            // "2.10" would read back as 2.1 if printed unquoted
            "kafka.producer.*", ordered("linger.ms", "7", "client.id", "2.10", "sasl.jaas.config", "jaas-secret"),
            "kafka.give-up-after", "2m",
            "kafka.offsets-topic", "orders.positions",
            "delivery", "exactly-once",
            "offsets.table", "router_positions",
            "offsets.schema-history-table", "router_history",
            "offsets.commit-interval", "1s",
            "offsets.give-up-after", "3m",
            "offsets.url", "jdbc:postgresql://offsets:5432/meta",
            "offsets.user", "offsets_u",
            "offsets.password", "off-pw",
            "http.enabled", false,
            "http.listen", "0.0.0.0:9090",
            "tracing.enabled", true,
            "debezium.*", ordered("slot.max.retries", "3", "database.password", "dbz-pw"));
    private static final Map<String, Object> POSTGRES = ordered(
            "outbox.retention", "7d",
            "outbox.retention-batch-size", 250,
            "source.kind", "postgres",
            "source.url", "jdbc:postgresql://db:6543/shop",
            "source.tables", List.of("sales.outbox", "billing.outbox"),
            "source.postgres.slot", "orders_slot",
            "source.postgres.publication", "orders_pub",
            "source.postgres.heartbeat-interval", "10s",
            "source.postgres.heartbeat-table", "sales.beat",
            "source.postgres.shards", 4,
            "source.postgres.shard", "1/4");
    private static final Map<String, Object> MARIADB = ordered(
            "outbox.retention", "7d",
            "outbox.retention-batch-size", 250,
            "source.kind", "mariadb",
            "source.url", "jdbc:mariadb://db:3307/shop",
            "source.tables", List.of("shop.events"),
            "source.binlog.server-id", 4242L,
            "routing.envelope", "cloudevents",
            "routing.cloudevents.mode", "structured",
            "routing.cloudevents.source", "https://shop.example/${aggregatetype}");
    /** Logical decoding messages beside a table: not with shards, so a kind of its own here. */
    private static final Map<String, Object> POSTGRES_MESSAGES = ordered(
            "source.kind", "postgres",
            "source.url", "jdbc:postgresql://db:6543/shop",
            "source.tables", List.of("sales.outbox"),
            "source.postgres.messages.prefix", "orders-events",
            // Retention deletes only rows the audit proved published: not given here.
            "outbox.audit.enabled", false);
    /** Debezium's EventRouter options in place of the outbox columns, headers and topic template. */
    private static final Map<String, Object> EVENT_ROUTER = ordered(
            "source.kind", "postgres",
            "source.url", "jdbc:postgresql://db:6543/shop",
            "source.tables", List.of("sales.outbox"),
            "outbox.retention", "7d",
            "routing.event-router.*", ordered("route.topic.replacement", "shop.${routedByValue}", "table.field.event.key", "entity"),
            "routing.format.key", "string",
            "routing.format.value", "schemaless-json",
            "routing.format.header", "bytes");
    /** The keys routing.event-router replaces: not given with it. */
    private static final Set<String> REPLACED_BY_EVENT_ROUTER = Set.of("routing.topic", "outbox.columns.id", "outbox.columns.aggregate-type",
            "outbox.columns.aggregate-id", "outbox.columns.type", "outbox.columns.payload", "outbox.headers.*", "outbox.payload-format");
    private static final List<Map<String, Object>> KINDS = List.of(POSTGRES, MARIADB, POSTGRES_MESSAGES, EVENT_ROUTER);
    /** Keys that are another way to give a value printed under its main key (a password read from a file). */
    private static final Map<String, String> ALTERNATIVES = Map.of(
            "source.password-file", "source.password", "offsets.password-file", "offsets.password");

    @Test
    void everyKeyOfTheReferenceHasANonDefaultValueHere() {
        var referenceKeys = ConfigReference.ENTRIES.stream().map(ConfigReference.Entry::key).toList();
        for (String key : referenceKeys) {
            if (!ALTERNATIVES.containsKey(key)) {
                assertThat(COMMON.containsKey(key) || KINDS.stream().anyMatch(k -> k.containsKey(key)))
                        .as("a non-default value for " + key + " in this test").isTrue();
            }
        }
        var givenHere = new ArrayList<>(COMMON.keySet());
        KINDS.forEach(k -> givenHere.addAll(k.keySet()));
        givenHere.addAll(ALTERNATIVES.keySet());
        assertThat(referenceKeys).as("keys of this test that the model no longer has").containsAll(givenHere);
    }

    @Test
    void everyKeyIsPrintedWithItsNonDefaultValueAndReadsBackToTheSameConfig() throws Exception {
        for (var kind : KINDS) {
            var values = new LinkedHashMap<>(COMMON);
            values.putAll(kind);
            if (kind == EVENT_ROUTER) {
                values.keySet().removeAll(REPLACED_BY_EVENT_ROUTER);
            }
            var config = RouterConfigLoader.parse(yaml(values), Map.of());
            String printed = EffectiveConfig.toYaml(config);
            JsonNode tree = YAML.readTree(printed);
            // The defaults that follow from the same required keys and kind (the slot from the name, the tables from the URL).
            var required = required(values);
            JsonNode defaults = YAML.readTree(EffectiveConfig.toYaml(RouterConfigLoader.parse(yaml(required), Map.of())));

            for (var entry : ConfigReference.ENTRIES) {
                String key = entry.key();
                if (ALTERNATIVES.containsKey(key) || !values.containsKey(key) && otherKindsOnly(key, kind)) {
                    continue;
                }
                Object expected = plain(YAML.valueToTree(masked(values.get(key))));
                assertThat(plain(at(tree, key))).as(key + " printed with its value, secrets masked, in\n" + printed)
                        .isEqualTo(expected);
                if (!required.containsKey(key)) {
                    assertThat(plain(at(defaults, key))).as("the value this test gives " + key + " is not its default")
                            .isNotEqualTo(expected);
                }
            }
            assertThat(printed).doesNotContain(SECRETS);

            // Round trip: the printed YAML loads as the configuration did, with each secret as the mask it printed.
            var withMaskedSecrets = new LinkedHashMap<String, Object>();
            values.forEach((key, value) -> withMaskedSecrets.put(key, masked(value)));
            assertThat(RouterConfigLoader.parse(printed, Map.of())).as("printed config reads back the same, in\n" + printed)
                    .isEqualTo(RouterConfigLoader.parse(yaml(withMaskedSecrets), Map.of()));
        }
    }

    @Test
    void aPasswordReadFromAFileIsPrintedMaskedUnderItsKey(@TempDir Path dir) throws Exception {
        var file = Files.writeString(dir.resolve("pw"), "file-pw\n");
        var values = new LinkedHashMap<>(required(POSTGRES));
        values.put("offsets.url", "jdbc:postgresql://offsets:5432/meta");
        for (var alternative : ALTERNATIVES.keySet()) {
            values.put(alternative, file.toString());
        }
        String printed = EffectiveConfig.toYaml(RouterConfigLoader.parse(yaml(values), Map.of()));
        JsonNode tree = YAML.readTree(printed);
        for (var mainKey : ALTERNATIVES.values()) {
            assertThat(plain(at(tree, mainKey))).as(mainKey).isEqualTo(Secret.MASK);
        }
        assertThat(printed).doesNotContain("file-pw").doesNotContain("password-file");
    }

    /**
     * The keys without a default (name, source.url, ...) and source.kind, with this test's values: the smallest
     * configuration of that kind. (source.kind is postgres by default; the MariaDB run gives it a non-default value.)
     */
    private static Map<String, Object> required(Map<String, Object> values) {
        var out = new LinkedHashMap<String, Object>();
        for (var e : ConfigReference.ENTRIES) {
            if (e.defaultValue().equals("required") || e.key().equals("source.kind")) {
                out.put(e.key(), values.containsKey(e.key()) ? values.get(e.key()) : COMMON.get(e.key()));
            }
        }
        return out;
    }

    /** Whether a key is given only for another source kind (say {@code source.binlog.server-id} for Postgres). */
    private static boolean otherKindsOnly(String key, Map<String, Object> kind) {
        return !COMMON.containsKey(key) && !kind.containsKey(key) && KINDS.stream().anyMatch(k -> k.containsKey(key));
    }

    private static Object masked(Object value) {
        if (value instanceof String s && SECRETS.contains(s)) {
            return Secret.MASK;
        }
        if (value instanceof Map<?, ?> m) {
            var out = new LinkedHashMap<Object, Object>();
            m.forEach((k, v) -> out.put(k, masked(v)));
            return out;
        }
        return value;
    }

    /** The node at a reference key ({@code kafka.producer.*} is the map at {@code kafka.producer}). */
    private static JsonNode at(JsonNode tree, String key) {
        JsonNode node = tree;
        for (String part : key.replaceAll("\\.\\*$", "").split("\\.")) {
            node = node.path(part);
        }
        return node;
    }

    /** Values as the loader reads them (every scalar as text), so that {@code 999} and {@code "999"} compare equal. */
    private static Object plain(JsonNode node) {
        if (node.isMissingNode() || node.isNull()) {
            return null;
        }
        if (node.isArray()) {
            var out = new ArrayList<>();
            node.forEach(item -> out.add(plain(item)));
            return out;
        }
        if (node.isObject()) {
            var out = new HashMap<String, Object>();
            node.properties().forEach(e -> out.put(e.getKey(), plain(e.getValue())));
            return out;
        }
        return node.asText();
    }

    private static String yaml(Map<String, Object> flat) throws Exception {
        var root = new LinkedHashMap<String, Object>();
        flat.forEach((key, value) -> {
            String[] parts = key.replaceAll("\\.\\*$", "").split("\\.");
            Map<String, Object> node = root;
            for (int i = 0; i < parts.length - 1; i++) {
                @SuppressWarnings("unchecked")
                var child = (Map<String, Object>) node.computeIfAbsent(parts[i], k -> new LinkedHashMap<String, Object>());
                node = child;
            }
            node.put(parts[parts.length - 1], value);
        });
        return YAML.writeValueAsString(root);
    }

    private static Map<String, Object> ordered(Object... kv) {
        var m = new LinkedHashMap<String, Object>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}
