package io.outboxrouter.it;

import io.outboxrouter.testing.TestServers;
import java.sql.SQLException;

/** The outbox contract on a real Postgres 17 with logical decoding (pgoutput) and a real Kafka broker. */
class PostgresOutboxIT extends OutboxContract implements StopAndRestartTier, KafkaOutageTier, ExactlyOnceCrashTier, LatencyProbeTier {
    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return new PostgresOutbox(TestServers.postgres(), name);
    }
}
