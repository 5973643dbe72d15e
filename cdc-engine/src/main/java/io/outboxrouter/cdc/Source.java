package io.outboxrouter.cdc;

import io.outboxrouter.config.RouterConfig;

/**
 * Everything that differs between kinds of source database, in one place per kind, by role: how the engine reads it
 * ({@link SourceConnector}), its prerequisites and watches ({@link SourcePreflight}), how an operator moves its position
 * ({@link PositionControl}), and its outbox tables as SQL ({@link #outboxSql()}). Adding a source kind means adding one
 * implementation; a caller depends on the role it uses.
 */
public sealed interface Source extends SourceConnector, SourcePreflight, PositionControl permits PostgresSource, BinlogSource {

    /** The source's outbox tables as SQL, for retention, {@code replay} and {@code audit}. */
    OutboxSql outboxSql();

    /** The source of a router's configuration; the one place a kind is mapped to its implementation. */
    static Source of(RouterConfig config) {
        return switch (config.source().kind()) { // exhaustive: a new kind does not compile until it has a Source
            case POSTGRES -> new PostgresSource(config);
            case MYSQL, MARIADB -> new BinlogSource(config);
        };
    }

    /** Whether the router's stored position still adds up with the database, as a check (for {@code check}). */
    default Check positionCheck(RouterConfig config) {
        try {
            return PositionCheck.find(config, this, false).map(d -> Check.fail("stored position", d.problem(),
                            "to accept this and " + d.accepted() + ", start the router once with run --accept-gap"))
                    .orElseGet(() -> Check.pass("stored position", "adds up with the source"));
        } catch (RuntimeException e) {
            return Check.fail("stored position", "cannot compare the stored position with the source: " + e.getMessage(),
                    "check the offsets and source connections");
        }
    }
}
