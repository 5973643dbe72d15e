package io.outboxrouter.config;

import java.time.Duration;
import java.util.List;

/**
 * The database whose outbox table(s) the router streams.
 *
 * @param tables       schema-qualified outbox tables, e.g. {@code public.outbox}
 * @param pollInterval how long the connector waits for more changes before handing over a batch
 */
public record SourceConfig(
        SourceKind kind,
        JdbcConnection connection,
        JdbcUrl address,
        List<String> tables,
        PostgresSource postgres,
        BinlogSource binlog,
        SnapshotMode snapshot,
        Duration pollInterval,
        int maxBatchSize) {

    public SourceConfig {
        tables = List.copyOf(tables);
    }

    /** Postgres replication settings. */
    public record PostgresSource(String slot, String publication) {
    }

    /** MySQL/MariaDB replication settings. @param serverId the replica id the router uses; unique among replicas */
    public record BinlogSource(long serverId) {
    }
}
