package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.config.RouterConfigLoader;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ConnectorPropertiesTest {
    @Test
    void onlyTheColumnsTheRouterReadsAreCapturedAndAnOverrideWins() {
        var config = RouterConfigLoader.parse("""
                name: orders
                source:
                  url: jdbc:postgresql://db:5432/app
                  user: u
                  password: p
                  tables: [public.outbox, sales.outbox]
                  postgres: { heartbeat-interval: 10s }
                outbox:
                  columns: { payload: body }
                  headers: { tracingspancontext: traceparent }
                kafka: { bootstrap-servers: "k:9092" }
                """, Map.of());
        var list = ConnectorProperties.of(config).getProperty("column.include.list");
        var patterns = java.util.Arrays.stream(list.split(",")).map(Pattern::compile).toList();
        java.util.function.Predicate<String> captured = column -> patterns.stream().anyMatch(p -> p.matcher(column).matches());
        for (String column : new String[] {"id", "aggregatetype", "aggregateid", "type", "body", "tracingspancontext"}) {
            assertThat(captured).as(column).accepts("public.outbox." + column, "sales.outbox." + column);
        }
        assertThat(captured).rejects("public.outbox.created_at", "public.outbox.payload", "public.outboxes.id", "public.outbox.idx",
                "other.outbox.id");
        assertThat(captured).as("the heartbeat table, whole").accepts("public.outbox_router_heartbeat.beat_at");

        var overridden = RouterConfigLoader.parse("""
                name: orders
                source: { url: "jdbc:postgresql://db:5432/app", user: u, password: p, tables: [public.outbox] }
                kafka: { bootstrap-servers: "k:9092" }
                debezium: { column.include.list: "public\\\\.outbox\\\\..*" }
                """, Map.of());
        assertThat(ConnectorProperties.of(overridden).getProperty("column.include.list")).isEqualTo("public\\.outbox\\..*");
    }
}
