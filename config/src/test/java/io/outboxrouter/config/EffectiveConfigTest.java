package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Driven from the model's keys ({@link ConfigReference}): every key gets a value other than its default, and the printed
 * effective configuration must carry it and read back to the same configuration. A key added to the model but forgotten
 * here, or in {@link EffectiveConfig}, fails this test.
 */
class EffectiveConfigTest {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

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
            "routing.topic", "events.${kind}",
            "routing.dead-letters.policy", "skip",
            "routing.dead-letters.topic", "orders.dlq",
            "kafka.bootstrap-servers", "k1:9092,k2:9092",
            "kafka.producer.*", Map.of("linger.ms", "7"),
            "kafka.give-up-after", "2m",
            "offsets.table", "router_positions",
            "offsets.schema-history-table", "router_history",
            "offsets.commit-interval", "1s",
            "offsets.url", "jdbc:postgresql://offsets:5432/meta",
            "offsets.user", "offsets_u",
            "offsets.password", "off-pw",
            "http.enabled", false,
            "http.listen", "0.0.0.0:9090",
            "debezium.*", Map.of("slot.max.retries", "3"));
    private static final Map<String, Object> POSTGRES = ordered(
            "source.kind", "postgres",
            "source.url", "jdbc:postgresql://db:6543/shop",
            "source.tables", List.of("sales.outbox"),
            "source.postgres.slot", "orders_slot",
            "source.postgres.publication", "orders_pub",
            "source.postgres.heartbeat-interval", "10s",
            "source.postgres.heartbeat-table", "sales.beat");
    private static final Map<String, Object> MARIADB = ordered(
            "source.kind", "mariadb",
            "source.url", "jdbc:mariadb://db:3307/shop",
            "source.tables", List.of("shop.outbox"),
            "source.binlog.server-id", 4242L);
    /** Keys that are another way to give a value printed under its main key (a password read from a file). */
    private static final List<String> ALTERNATIVES = List.of("source.password-file", "offsets.password-file");

    @Test
    void everyKeyOfTheModelHasANonDefaultValueHere() {
        for (var e : ConfigReference.ENTRIES) {
            if (!ALTERNATIVES.contains(e.key())) {
                assertThat(COMMON.containsKey(e.key()) || POSTGRES.containsKey(e.key()) || MARIADB.containsKey(e.key()))
                        .as("a non-default value for " + e.key() + " in this test").isTrue();
            }
        }
    }

    @Test
    void everyNonDefaultValueIsPrintedAndReadsBackToTheSameConfig() throws Exception {
        for (var kind : List.of(POSTGRES, MARIADB)) {
            var values = new LinkedHashMap<>(COMMON);
            values.putAll(kind);
            var config = RouterConfigLoader.parse(YAML.writeValueAsString(nest(values)), Map.of());
            String printed = EffectiveConfig.toYaml(config);
            JsonNode tree = YAML.readTree(printed);
            for (String key : values.keySet()) {
                JsonNode node = tree;
                for (String part : key.replace(".*", "").split("\\.")) {
                    node = node.path(part);
                }
                assertThat(node.isMissingNode() || node.isNull()).as(key + " is printed").isFalse();
            }
            assertThat(printed).doesNotContain("src-pw", "off-pw");
            String readable = printed.replace("password: '" + Secret.MASK + "'", "password: MASKED");
            var again = RouterConfigLoader.parse(readable.replaceFirst("password: MASKED", "password: src-pw")
                    .replaceFirst("password: MASKED", "password: off-pw"), Map.of());
            assertThat(again).as("printed config reads back the same").isEqualTo(config);
        }
    }

    private static Map<String, Object> nest(Map<String, Object> flat) {
        var root = new LinkedHashMap<String, Object>();
        flat.forEach((key, value) -> {
            String[] parts = key.replace(".*", "").split("\\.");
            Map<String, Object> node = root;
            for (int i = 0; i < parts.length - 1; i++) {
                @SuppressWarnings("unchecked")
                var child = (Map<String, Object>) node.computeIfAbsent(parts[i], k -> new LinkedHashMap<String, Object>());
                node = child;
            }
            node.put(parts[parts.length - 1], value);
        });
        return root;
    }

    private static Map<String, Object> ordered(Object... kv) {
        var m = new LinkedHashMap<String, Object>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}
