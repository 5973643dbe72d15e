package io.outboxrouter.it;

import java.sql.SQLException;

/**
 * The outbox contract on a real MariaDB 11.4 with a row-based binlog and a real Kafka broker, with the exactly-once
 * crash tier for the binlog path; the Kafka outage tier runs on Postgres (it sits after the connector).
 */
class MariaDbOutboxIT extends OutboxContract implements StopAndRestartTier, ExactlyOnceCrashTier {
    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return BinlogOutbox.mariadb(name);
    }
}
