package io.outboxrouter.it;

import java.sql.SQLException;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * Outbox retention on a real MySQL (what {@code OUTBOX_IT_MYSQL_URL} names; {@code .ci/run} starts MySQL 9.7): its own
 * spellings of the consistent snapshot and the binlog position. The scheduled path is the same as MariaDB's.
 */
@EnabledIf("io.outboxrouter.it.MySqlOutboxIT#enabled")
class MySqlRetentionIT extends RetentionContract {
    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return new BinlogOutbox(MySqlOutboxIT.server(), name);
    }

    @Override
    String sourceYaml(OutboxDatabase db) {
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
