package io.outboxrouter.config;

import java.util.Optional;

/**
 * Where the router keeps its source position.
 *
 * @param connection empty to use the source database
 */
public record OffsetsConfig(String table, Optional<JdbcConnection> connection) {
}
