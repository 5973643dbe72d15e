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

    /**
     * Postgres replication settings.
     *
     * @param heartbeatInterval how often the router writes its heartbeat row, so that a quiet outbox on a busy database
     *                          does not pin WAL; zero turns it off
     * @param heartbeatTable    where; it must be in the publication (the router adds it when it creates the publication)
     */
    public record PostgresSource(String slot, String publication, Duration heartbeatInterval, String heartbeatTable) {
        public boolean heartbeat() {
            return !heartbeatInterval.isZero();
        }
    }

    /** MySQL/MariaDB replication settings. @param serverId the replica id the router uses; unique among replicas */
    public record BinlogSource(long serverId) {
    }
}
