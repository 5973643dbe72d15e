package io.outboxrouter.config;

import java.util.Map;

/**
 * The whole, validated configuration of one router. Built once at startup by {@link RouterConfigLoader}.
 *
 * @param name      names the offset rows, the default slot and publication, and the engine
 * @param debezium  raw Debezium connector properties for the rare setting we do not model
 */
public record RouterConfig(
        String name,
        SourceConfig source,
        OutboxConfig outbox,
        RoutingConfig routing,
        KafkaConfig kafka,
        OffsetsConfig offsets,
        HttpConfig http,
        Map<String, String> debezium) {

    public RouterConfig {
        debezium = Map.copyOf(debezium);
    }

    /** The connection of the offset store: its own when configured, else the source database's. */
    public JdbcConnection offsetsConnection() {
        return offsets.connection().orElse(source.connection());
    }
}
