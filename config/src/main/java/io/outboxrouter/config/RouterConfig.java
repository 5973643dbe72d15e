package io.outboxrouter.config;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The whole, validated configuration of one router. Built once at startup by {@link RouterConfigLoader}.
 *
 * @param name      names the offset rows, the default slot and publication, and the engine
 * @param debezium  raw Debezium connector properties for the rare setting we do not model
 * @param tracing   OpenTelemetry spans for the router's publish
 */
public record RouterConfig(
        String name,
        SourceConfig source,
        OutboxConfig outbox,
        RoutingConfig routing,
        KafkaConfig kafka,
        OffsetsConfig offsets,
        HttpConfig http,
        Map<String, String> debezium,
        TracingConfig tracing) {

    public RouterConfig {
        debezium = Map.copyOf(debezium);
    }

    public RouterConfig(String name, SourceConfig source, OutboxConfig outbox, RoutingConfig routing, KafkaConfig kafka,
                        OffsetsConfig offsets, HttpConfig http, Map<String, String> debezium) {
        this(name, source, outbox, routing, kafka, offsets, http, debezium, TracingConfig.OFF);
    }

    /** @param enabled whether the router starts a span for each event it publishes, exported as OTEL_* settings say */
    public record TracingConfig(boolean enabled) {
        public static final TracingConfig OFF = new TracingConfig(false);
    }

    /**
     * The configuration of each stream this process runs: itself, unless the outbox is sharded; then one per shard it
     * runs, each under its shard's name ({@code orders-shard-0-of-4}) with that shard's slot and publication.
     */
    public List<RouterConfig> shardConfigs() {
        var pg = source.postgres();
        if (!pg.sharded() || pg.shard() != null) {
            return List.of(this);
        }
        return pg.runs().stream().map(i -> forShard(new Shard(i, pg.shards()))).toList();
    }

    /** The configuration of one shard of this router. */
    public RouterConfig forShard(Shard shard) {
        return new RouterConfig(shard.routerName(name), source.withPostgres(source.postgres().forShard(shard)), outbox, routing,
                kafka, offsets, http, debezium, tracing);
    }

    /**
     * This router with another shard layout ({@code n} shards, 1: not sharded), all run by this process, without its HTTP
     * port: the earlier layout that a re-shard drains.
     */
    public RouterConfig withShards(int n) {
        var pg = source.postgres();
        var layout = new SourceConfig.PostgresSource(pg.slot(), pg.publication(), pg.heartbeatInterval(), pg.heartbeatTable(), n,
                Shard.all(n), null, pg.messagePrefix());
        return new RouterConfig(name, source.withPostgres(layout), outbox, routing, kafka, offsets, new HttpConfig(false, http.host(),
                http.port()), debezium, tracing);
    }

    /** The shard this configuration streams, when it is one shard's ({@link #shardConfigs()}). */
    public Optional<Shard> shard() {
        return Optional.ofNullable(source.postgres().shard());
    }

    /** The connection of the offset store: its own when configured, else the source database's. */
    public JdbcConnection offsetsConnection() {
        return offsets.connection().orElse(source.connection());
    }
}
