package io.outboxrouter.it;

import java.sql.SQLException;

/** Outbox retention on a real MariaDB: the router's stored binlog position says what is published. */
class MariaDbRetentionIT extends RetentionContract implements ScheduledRetentionTier {
    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return BinlogOutbox.mariadb(name);
    }

    @Override
    String sourceYaml(OutboxDatabase db) {
        // On a quiet binlog the stored position follows the server's heartbeats (0.8 x the keep-alive interval, about 48 s by
        // default) with the connector's heartbeat records: here about once a second.
        return db.sourceYaml().replaceAll("tables: \\[([^,]+), [^\\]]+]", "tables: [$1]")
                + "debezium: { heartbeat.interval.ms: \"1000\", connect.keep.alive.interval.ms: \"1000\" }\n";
    }

    @Override
    String payloadParameter() {
        return "?";
    }

    @Override
    String hoursAgo(int hours) {
        return "NOW(6) - INTERVAL " + hours + " HOUR";
    }
}
