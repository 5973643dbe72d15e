package io.outboxrouter.config;

import java.util.Optional;

/**
 * Where the router keeps its source position.
 *
 * @param schemaHistoryTable for MySQL/MariaDB: the table shapes at each binlog position, beside the offsets
 * @param connection empty to use the source database
 */
public record OffsetsConfig(String table, String schemaHistoryTable, Optional<JdbcConnection> connection) {
}
