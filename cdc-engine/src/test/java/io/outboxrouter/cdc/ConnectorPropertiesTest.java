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

    private static java.util.Properties properties(String yaml) {
        return ConnectorProperties.of(RouterConfigLoader.parse("name: orders\n" + yaml + "kafka: { bootstrap-servers: \"k:9092\" }\n", Map.of()));
    }

    @Test
    void onPostgresTransactionEndsComeFromHeartbeatsNotMetadataExceptForExactlyOnce() {
        String pg = "source: { url: \"jdbc:postgresql://db:5432/app\", user: u, password: p, tables: [public.outbox] }\n";
        var atLeastOnce = properties(pg);
        assertThat(atLeastOnce.getProperty("provide.transaction.metadata")).isEqualTo("false");
        assertThat(atLeastOnce.getProperty("heartbeat.interval.ms")).isEqualTo("250");
        assertThat(atLeastOnce.getProperty("heartbeat.action.query")).isNull();

        assertThat(atLeastOnce.getProperty("topic.cache.size")).as("a short LRU queue per topic name lookup").isEqualTo("32");
        assertThat(properties(pg + "debezium: { topic.cache.size: \"10000\" }\n").getProperty("topic.cache.size")).isEqualTo("10000");

        var exactlyOnce = properties(pg + "delivery: exactly-once\n");
        assertThat(exactlyOnce.getProperty("provide.transaction.metadata")).isEqualTo("true");
        assertThat(exactlyOnce.getProperty("heartbeat.interval.ms")).as("no heartbeat row, no heartbeat").isNull();

        var binlog = properties("source: { kind: mariadb, url: \"jdbc:mariadb://db:3306/app\", user: u, password: p, tables: [app.outbox] }\n");
        assertThat(binlog.getProperty("provide.transaction.metadata")).isEqualTo("true");
    }

    @Test
    void theQueueHoldsASixteenthOfTheHeapSharedByTheShardsAndAnOverrideWins() {
        String pg = "source: { url: \"jdbc:postgresql://db:5432/app\", user: u, password: p, tables: [public.outbox]";
        var one = RouterConfigLoader.parse("name: orders\n" + pg + " }\nkafka: { bootstrap-servers: \"k:9092\" }\n", Map.of());
        var four = RouterConfigLoader.parse("name: orders\n" + pg + ", postgres: { shards: 4 } }\nkafka: { bootstrap-servers: \"k:9092\" }\n",
                Map.of()).shardConfigs().get(2);
        var oneOfFour = RouterConfigLoader.parse("name: orders\n" + pg + ", postgres: { shards: 4, shard: 2/4 } }\n"
                + "kafka: { bootstrap-servers: \"k:9092\" }\n", Map.of()).shardConfigs().get(0);
        long heap = 128L << 20;
        assertThat(ConnectorProperties.queueBytes(one, heap)).isEqualTo(heap / 16);
        assertThat(ConnectorProperties.queueBytes(four, heap)).as("four engines in one heap").isEqualTo(heap / 64);
        assertThat(ConnectorProperties.queueBytes(oneOfFour, heap)).as("one shard in a process of its own").isEqualTo(heap / 16);
        assertThat(ConnectorProperties.queueBytes(four, 32L << 20)).as("never less than a large row or two")
                .isEqualTo(ConnectorProperties.MIN_QUEUE_BYTES);
        assertThat(ConnectorProperties.queueBytes(one, Long.MAX_VALUE)).as("no heap limit, no queue limit").isZero();
        assertThat(properties(pg + " }\n").getProperty("max.queue.size.in.bytes"))
                .isEqualTo(Long.toString(Runtime.getRuntime().maxMemory() / 16));
        assertThat(properties(pg + " }\ndebezium: { max.queue.size.in.bytes: \"0\" }\n").getProperty("max.queue.size.in.bytes"))
                .isEqualTo("0");
    }

    @Test
    void aHeartbeatRowIsWrittenAtItsOwnIntervalWhileTheConnectorBeatsMoreOften() {
        String pg = "source: { url: \"jdbc:postgresql://db:5432/app\", user: u, password: p, tables: [public.outbox], "
                + "postgres: { heartbeat-interval: 10s } }\n";
        var p = properties(pg);
        assertThat(p.getProperty("heartbeat.interval.ms")).isEqualTo("250");
        assertThat(p.getProperty("heartbeat.action.query")).isEqualTo("INSERT INTO public.outbox_router_heartbeat (router_name, beat_at) "
                + "SELECT 'orders', now() WHERE NOT EXISTS (SELECT 1 FROM public.outbox_router_heartbeat WHERE router_name = 'orders' "
                + "AND beat_at > now() - interval '9875 milliseconds') ON CONFLICT (router_name) DO UPDATE SET beat_at = EXCLUDED.beat_at");

        var exactlyOnce = properties(pg + "delivery: exactly-once\n");
        assertThat(exactlyOnce.getProperty("heartbeat.interval.ms")).isEqualTo("10000");
        assertThat(exactlyOnce.getProperty("heartbeat.action.query")).as("every beat writes").doesNotContain("NOT EXISTS");

        var fast = properties(pg.replace("10s", "200ms"));
        assertThat(fast.getProperty("heartbeat.interval.ms")).isEqualTo("200");
        assertThat(fast.getProperty("heartbeat.action.query")).doesNotContain("NOT EXISTS");
    }

    @Test
    void aShardsHeartbeatRowIsReplacedOnlyOnceItIsAsOldAsTheInterval() {
        assertThat(PostgresDdl.shardHeartbeat("hb", "orders-shard-0-of-2", java.time.Duration.ofSeconds(10), java.time.Duration.ofMillis(250)))
                .isEqualTo("DELETE FROM hb WHERE router_name = 'orders-shard-0-of-2' AND beat_at <= now() - interval '9875 milliseconds'; "
                        + "INSERT INTO hb (router_name, beat_at) SELECT 'orders-shard-0-of-2', now() WHERE NOT EXISTS (SELECT 1 FROM hb "
                        + "WHERE router_name = 'orders-shard-0-of-2')");
        assertThat(PostgresDdl.shardHeartbeat("hb", "s", java.time.Duration.ofMillis(200), java.time.Duration.ofMillis(200)))
                .as("every beat").startsWith("DELETE FROM hb WHERE router_name = 's'; INSERT");
    }
}
