package io.outboxrouter.connect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.config.RouterConfigLoader;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

class OutboxEventRouterTest {
    private static OutboxEventRouter<SourceRecord> configured(Map<String, String> props) {
        var t = new OutboxEventRouter<SourceRecord>();
        t.configure(props);
        return t;
    }

    /**
     * The transformation's options are the router's keys, not a copy that can drift: each one, given its declared default
     * as Connect passes it (a string), is a key the router's loader knows (it refuses others) and gives the router's own
     * default configuration.
     */
    @Test
    void everyOptionIsARouterKeyWithTheRoutersDefault() {
        var routerDefaults = RouterConfigLoader.routing(Map.of());
        var keys = OutboxEventRouter.CONFIG_DEF.configKeys();
        assertThat(keys).isNotEmpty();
        var all = new LinkedHashMap<String, String>();
        keys.forEach((name, key) -> {
            if (key.defaultValue != null) {
                String asConnectPassesIt = key.defaultValue instanceof List<?> l ? String.join(",", l.stream().map(Object::toString).toList())
                        : key.defaultValue.toString();
                all.put(name, asConnectPassesIt);
                assertThat(RouterConfigLoader.routing(OutboxEventRouter.tree(Map.of(name, asConnectPassesIt))))
                        .as("%s=%s, the transformation's default", name, asConnectPassesIt).isEqualTo(routerDefaults);
            } else {
                // A key without a default: the router's loader must know it too.
                assertThatCode(() -> RouterConfigLoader.routing(OutboxEventRouter.tree(Map.of(name, "outbox."))))
                        .as(name).doesNotThrowAnyException();
            }
        });
        assertThat(RouterConfigLoader.routing(OutboxEventRouter.tree(all))).isEqualTo(routerDefaults);
    }

    @Test
    void badSettingsAreRefusedWithTheRoutersMessagesNamingKeyAndValue() {
        assertThatThrownBy(() -> configured(Map.of("routing.topic", "events.${tenant}")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("routing.topic: unknown placeholder ${tenant} in \"events.${tenant}\"");
        assertThatThrownBy(() -> configured(Map.of("outbox.columns.payload", "pay load")))
                .hasMessageContaining("outbox.columns.payload: must be a column name (was \"pay load\")");
        assertThatThrownBy(() -> configured(Map.of("routing.dead-letters.policy", "drop")))
                .hasMessageContaining("routing.dead-letters.policy");
        assertThatThrownBy(() -> configured(Map.of("source.tables", "outbox")))
                .hasMessageContaining("source.tables: must be qualified table names like public.outbox (was \"outbox\")");
        assertThatThrownBy(() -> configured(Map.of("outbox.headers", "tracingspancontext")))
                .hasMessageContaining("must be column:header pairs");
        // Connect's validate endpoint (and POST /connectors) refuses them too, key by key, with the same messages.
        var validated = new OutboxEventRouter<SourceRecord>().config().validate(Map.of("routing.dead-letters.policy", "drop",
                "outbox.columns.id", "event id", "routing.topic", "events.${"));
        assertThat(validated).filteredOn(v -> !v.errorMessages().isEmpty()).extracting(v -> v.name())
                .containsExactlyInAnyOrder("routing.dead-letters.policy", "outbox.columns.id", "routing.topic");
        assertThat(validated).filteredOn(v -> v.name().equals("outbox.columns.id")).singleElement()
                .satisfies(v -> assertThat(v.errorMessages()).anySatisfy(m -> assertThat(m).contains("must be a column name (was \"event id\")")));
        // a header column is a template placeholder, as in the router
        configured(Map.of("outbox.headers", "tenant:x-tenant", "routing.topic", "${tenant}.${aggregatetype}"));
    }

    @Test
    void recordsThatAreNotChangesAndChangesOfOtherTablesAreDropped() {
        var t = configured(Map.of("source.tables", "public.outbox"));
        var heartbeatSchema = SchemaBuilder.struct().field("ts_ms", Schema.INT64_SCHEMA).build();
        var heartbeat = new SourceRecord(Map.of(), Map.of(), "__debezium-heartbeat.shop", heartbeatSchema,
                new Struct(heartbeatSchema).put("ts_ms", 1L));
        assertThat(t.apply(heartbeat)).isNull();
        assertThat(t.apply(new SourceRecord(Map.of(), Map.of(), "shop.public.outbox", null, null))).as("a tombstone").isNull();

        var source = SchemaBuilder.struct().field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA)
                .field("lsn", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA).build();
        var row = SchemaBuilder.struct().optional().field("id", Schema.STRING_SCHEMA).build();
        var envelope = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA).field("source", source)
                .field("before", row).field("after", row).build();
        var other = new SourceRecord(Map.of(), Map.of(), "shop.public.orders", envelope, new Struct(envelope).put("op", "c")
                .put("source", new Struct(source).put("schema", "public").put("table", "orders").put("lsn", 10L).put("ts_ms", 1L))
                .put("after", new Struct(row).put("id", "o-1")));
        assertThat(t.apply(other)).as("a change of a table source.tables does not name (the router publishes nothing either)").isNull();
    }
}
