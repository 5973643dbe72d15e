package io.outboxrouter.config;

import java.time.Duration;
import java.util.List;

/**
 * The database whose outbox table(s) the router streams.
 *
 * @param tables       schema-qualified outbox tables, e.g. {@code public.outbox}; empty for a Postgres source that routes
 *                     logical decoding messages only
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

    /** Whether the outbox is split over several Postgres slots (a binlog source is one stream). */
    public boolean sharded() {
        return !kind.isBinlog() && postgres.sharded();
    }

    /** How many shards the outbox is split into: 1 unless a Postgres source is sharded. */
    public int shards() {
        return kind.isBinlog() ? 1 : postgres.shards();
    }

    /** How many streams this process runs: its shards, or the one. */
    public int streamsInProcess() {
        return kind.isBinlog() ? 1 : postgres.runs().size();
    }

    /** The prefix of the logical decoding messages routed as outbox events (Postgres only); empty: none. */
    public java.util.Optional<String> messagePrefix() {
        return kind.isBinlog() ? java.util.Optional.empty() : java.util.Optional.ofNullable(postgres.messagePrefix());
    }

    /** The table the router writes its heartbeat to (Postgres, when on); empty: none. */
    public java.util.Optional<String> heartbeatTable() {
        return !kind.isBinlog() && postgres.heartbeat() ? java.util.Optional.of(postgres.heartbeatTable()) : java.util.Optional.empty();
    }

    /** This configuration with other Postgres settings. */
    public SourceConfig withPostgres(PostgresSource pg) {
        return new SourceConfig(kind, connection, address, tables, pg, binlog, snapshot, pollInterval, maxBatchSize);
    }

    /**
     * Postgres replication settings.
     *
     * @param heartbeatInterval how often the router writes its heartbeat row, so that a quiet outbox on a busy database
     *                          does not pin WAL; zero turns it off
     * @param heartbeatTable    where; it must be in the publication (the router adds it when it creates the publication)
     * @param shards            how many shards the outbox is split into ({@code source.postgres.shards}); 1: not sharded
     * @param runs              the shards this process runs: all, or one ({@code source.postgres.shard: i/N})
     * @param shard             set in a shard's own configuration ({@link RouterConfig#shardConfigs()}), whose slot and
     *                          publication are that shard's; null otherwise
     * @param messagePrefix     route transactional logical decoding messages with this prefix
     *                          ({@code source.postgres.messages.prefix}); null: none
     */
    public record PostgresSource(String slot, String publication, Duration heartbeatInterval, String heartbeatTable,
                                 int shards, List<Integer> runs, Shard shard, String messagePrefix) {
        public PostgresSource {
            runs = List.copyOf(runs);
        }

        public PostgresSource(String slot, String publication, Duration heartbeatInterval, String heartbeatTable) {
            this(slot, publication, heartbeatInterval, heartbeatTable, 1, List.of(0), null, null);
        }

        /** Whether the router routes logical decoding messages (a tableless outbox). */
        public boolean messages() {
            return messagePrefix != null;
        }

        public boolean heartbeat() {
            return !heartbeatInterval.isZero();
        }

        /** Whether the outbox is split over several slots. */
        public boolean sharded() {
            return shards > 1;
        }

        /** The settings of one shard: its own slot and publication; the shards this process runs stay as they are. */
        PostgresSource forShard(Shard s) {
            return new PostgresSource(slot + s.suffix(), publication + s.suffix(), heartbeatInterval, heartbeatTable, shards,
                    runs, s, messagePrefix);
        }
    }

    /** MySQL/MariaDB replication settings. @param serverId the replica id the router uses; unique among replicas */
    public record BinlogSource(long serverId) {
    }
}
