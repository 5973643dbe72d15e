package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.config.Shard;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The shard layout's names, row filters and positions, without a server. */
class PostgresShardsTest {

    @Test
    void aRowFilterPrintedBackByPostgresComparesEqualToTheOneTheRouterWrites() {
        String written = PostgresDdl.shardFilter(PostgresDdl.aggregateHash("aggregateid", "character varying"), new Shard(1, 4));
        // As pg_publication_tables shows it: parenthesised, spaced, the column cast spelled out.
        String printedBack = "(((COALESCE(hashtext((aggregateid)::text), 0) & 2147483647) % 4) = 1)";
        assertThat(PostgresShards.normalized(printedBack)).isEqualTo(PostgresShards.normalized(written));
        String otherShard = PostgresDdl.shardFilter(PostgresDdl.aggregateHash("aggregateid", "character varying"), new Shard(2, 4));
        assertThat(PostgresShards.normalized(otherShard)).isNotEqualTo(PostgresShards.normalized(written));
        // On a text column Postgres drops the cast the router writes.
        String writtenForText = PostgresDdl.shardFilter(PostgresDdl.aggregateHash("aggregateid", "text"), new Shard(1, 4));
        assertThat(PostgresShards.normalized("(((COALESCE(hashtext(aggregateid), 0) & 2147483647) % 4) = 1)"))
                .isEqualTo(PostgresShards.normalized(writtenForText));
        assertThat(PostgresShards.normalized(null)).as("no filter").isEmpty();
    }

    @Test
    void everyHashableAggregateIdTypeHasAHashAndOthersNone() {
        assertThat(PostgresDdl.aggregateHash("a", "uuid")).isEqualTo("uuid_hash(a)");
        assertThat(PostgresDdl.aggregateHash("a", "bigint")).isEqualTo("hashint8(a)");
        assertThat(PostgresDdl.aggregateHash("a", "text")).isEqualTo("hashtext(a::text)");
        assertThat(PostgresDdl.aggregateHash("a", "jsonb")).as("a row filter cannot hash it").isNull();
    }

    @Test
    void positionsCompareAsUnsignedLogSequenceNumbers() {
        assertThat(PostgresShards.compareLsn("0/FFFFFFFF", "1/0")).isNegative();
        assertThat(PostgresShards.compareLsn("A/10", "A/10")).isZero();
        assertThat(PostgresShards.compareLsn("FFFFFFFF/0", "1/0")).as("past the signed range").isPositive();
    }

    @Test
    void aShardsLayoutNamesEveryShardsSlotPublicationAndRouter() {
        var config = RouterConfigLoader.parse("""
                name: orders
                source:
                  url: jdbc:postgresql://db:5432/app
                  user: u
                  password: p
                  postgres: { shards: 3 }
                kafka: { bootstrap-servers: "k:9092" }
                """, Map.of());
        var shards = config.shardConfigs();
        assertThat(shards).hasSize(3);
        var second = shards.get(1);
        var layout = PostgresShards.Layout.of(second.source(), second.name());
        assertThat(layout.count()).isEqualTo(3);
        assertThat(layout.routerName(1)).isEqualTo(second.name()).isEqualTo("orders-shard-1-of-3");
        assertThat(layout.slot(1)).isEqualTo(second.source().postgres().slot());
        assertThat(layout.publication(1)).isEqualTo(second.source().postgres().publication());
        for (int i = 0; i < 3; i++) {
            var shard = shards.get(i);
            assertThat(PostgresShards.Layout.of(shard.source(), shard.name())).as("the same layout from every shard").isEqualTo(layout);
        }
    }
}
