package io.outboxrouter.it;

import io.outboxrouter.testing.TestServers;
import java.sql.SQLException;

/** The outbox contract on a real MariaDB 11.4 with a row-based binlog and a real Kafka broker. */
class MariaDbOutboxIT extends OutboxContract {
    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return BinlogOutbox.mariadb(name);
    }
}
