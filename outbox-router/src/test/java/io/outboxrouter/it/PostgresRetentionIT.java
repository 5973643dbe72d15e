package io.outboxrouter.it;

import io.outboxrouter.testing.TestServers;
import java.sql.SQLException;

/** Outbox retention on a real Postgres 17: the slot's confirmed position says what is published. */
class PostgresRetentionIT extends RetentionContract implements ScheduledRetentionTier {
    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return new PostgresOutbox(TestServers.postgres(), name);
    }

    @Override
    String sourceYaml(OutboxDatabase db) {
        return db.sourceYaml().replace("[public.outbox, public.outbox_binary]", "[public.outbox]")
                + "  postgres: { heartbeat-interval: 1s }\n";
    }

    @Override
    String payloadParameter() {
        return "?::jsonb";
    }

    @Override
    String hoursAgo(int hours) {
        return "now() - interval '" + hours + " hours'";
    }
}
