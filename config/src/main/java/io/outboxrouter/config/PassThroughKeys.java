package io.outboxrouter.config;

import java.util.Map;
import java.util.Optional;

/** The pass-through keys ({@code debezium.*}, {@code kafka.producer.*}) the router refuses, each with why. */
final class PassThroughKeys {
    /**
     * Pass-through keys that would break a guarantee, with why (a key ending in '*' covers every key it starts). Refused,
     * never quietly overridden: the user must learn that the setting has no effect.
     */
    private static final Map<String, String> DEBEZIUM = Map.of(
            "provide.transaction.metadata", "is set by the router: offsets are stored only at transaction ends, which it needs",
            "topic.prefix", "is set by the router to its name, which names the offsets and the connector's metrics",
            "offset.storage*", "is set by the router: offsets live in its offsets table (offsets.table, offsets.url)",
            "snapshot.mode", "conflicts with source.snapshot; set that instead",
            "name", "is set by the router to its name",
            "connector.class", "follows source.kind");
    /** Refused for a sharded router: each shard's slot, publication, snapshot and heartbeat are what make it that shard. */
    private static final Map<String, String> SHARDED = Map.of(
            "slot.name", "is set per shard from source.postgres.slot",
            "publication.name", "is set per shard from source.postgres.publication",
            "publication.autocreate.mode", "is set by the router: it creates each shard's publication with its row filter",
            "snapshot.select.statement.overrides*", "is set per shard: a shard's snapshot reads only its rows");
    /** Refused on Postgres: the connector's heartbeat tells the router where a transaction ended (see source.postgres). */
    private static final Map<String, String> POSTGRES = Map.of(
            "heartbeat.interval.ms", "is set by the router on Postgres: its heartbeats tell where the last transaction before a quiet "
                    + "spell ended; for a heartbeat row set source.postgres.heartbeat-interval",
            "heartbeat.action.query", "is set by the router on Postgres from source.postgres.heartbeat-interval and heartbeat-table "
                    + "(a shard's: its publication carries inserts only)");
    private static final Map<String, String> MARIADB = Map.of(
            "internal.log.position.check.enable", "is set by the router on MariaDB: it checks the stored GTIDs itself before "
                    + "every start, where the connector's check refuses a promoted replica's",
            "errors.max.retries", "is set by the router on MariaDB: an error ends the engine, and the router checks the stored "
                    + "position before it starts again",
            "custom.retriable.exception", "would restart the connector inside the engine, past the router's check of the stored "
                    + "position");
    private static final Map<String, String> PRODUCER = Map.of(
            "partitioner.class", "would break order per aggregate: records are keyed by aggregate id and partitioned by key",
            "partitioner.ignore.keys", "would break order per aggregate: records are partitioned by their aggregate id key",
            "transactional.id", "is set by the router from its name when delivery is exactly-once (outbox-router.<name>)");

    private PassThroughKeys() {
    }

    /** Why a {@code debezium.*} key is refused, or empty when it may be set. */
    static Optional<String> refusedDebezium(String key) {
        return refused(key, DEBEZIUM);
    }

    /** Why a {@code debezium.*} key is refused for a Postgres source, or empty when it may be set. */
    static Optional<String> refusedPostgres(String key) {
        return refused(key, POSTGRES);
    }

    /** Why a {@code debezium.*} key is refused for a MariaDB source, or empty when it may be set. */
    static Optional<String> refusedMariaDb(String key) {
        return refused(key, MARIADB);
    }

    /** Why a {@code debezium.*} key is refused for a sharded router, or empty when it may be set. */
    static Optional<String> refusedSharded(String key) {
        return refused(key, SHARDED);
    }

    /**
     * Why a {@code kafka.producer.*} key with this value is refused under {@code delivery: exactly-once}, or empty. More
     * than five requests in flight per connection is refused by the idempotent producer a transactional one is.
     */
    static Optional<String> refusedExactlyOnce(String key, String value) {
        if (key.equals("max.in.flight.requests.per.connection")) {
            try {
                int n = Integer.parseInt(value.trim());
                return n >= 1 && n <= 5 ? Optional.empty() : Optional.of("must be 1 to 5 for a transactional producer");
            } catch (NumberFormatException e) {
                return Optional.of("must be a number from 1 to 5");
            }
        }
        if (key.equals("transaction.timeout.ms")) {
            try {
                return Integer.parseInt(value.trim()) >= 1_000 ? Optional.empty()
                        : Optional.of("must be at least 1000: a shorter timeout aborts transactions while they are being sent");
            } catch (NumberFormatException e) {
                return Optional.of("must be a number of milliseconds");
            }
        }
        return Optional.empty();
    }

    /** Why a {@code kafka.producer.*} key is refused, or empty when it may be set. */
    static Optional<String> refusedProducer(String key) {
        return refused(key, PRODUCER);
    }

    /** Why a pass-through key is refused, or empty when it may be set. */
    private static Optional<String> refused(String key, Map<String, String> refused) {
        for (var e : refused.entrySet()) {
            boolean prefix = e.getKey().endsWith("*");
            String k = prefix ? e.getKey().substring(0, e.getKey().length() - 1) : e.getKey();
            if (prefix ? key.startsWith(k) : key.equals(k)) {
                return Optional.of(e.getValue() + "; remove it");
            }
        }
        return Optional.empty();
    }
}
