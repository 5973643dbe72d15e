package io.outboxrouter.config;

import java.time.Duration;
import java.util.Optional;

/**
 * Where the router keeps its source position.
 *
 * @param schemaHistoryTable for MySQL/MariaDB: the table shapes at each binlog position, beside the offsets
 * @param connection empty to use the source database
 * @param commitInterval how often, at most, the acknowledged position is stored; {@link Duration#ZERO} after every batch
 * @param giveUpAfter    how long the router waits for the database of its lock and offsets (at start, after a restart)
 *                       before it stops; {@link Duration#ZERO} waits forever
 */
public record OffsetsConfig(String table, String schemaHistoryTable, Optional<JdbcConnection> connection,
                            Duration commitInterval, Duration giveUpAfter) {
}
