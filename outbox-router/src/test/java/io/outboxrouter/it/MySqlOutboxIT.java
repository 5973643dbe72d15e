package io.outboxrouter.it;

import java.sql.SQLException;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.testcontainers.mysql.MySQLContainer;

/**
 * The outbox contract on a real MySQL 8.4, through Testcontainers: only where a Docker engine runs, switched on with
 * {@code -Doutbox.it.mysql=true} (see the README). No MySQL server can be had on the machines this project is built on.
 */
@EnabledIfSystemProperty(named = "outbox.it.mysql", matches = "true")
class MySqlOutboxIT extends OutboxContract {
    private static MySQLContainer mysql;

    private static synchronized BinlogOutbox.Server server() {
        if (mysql == null) {
            mysql = new MySQLContainer("mysql:8.4")
                    .withUsername("root")
                    .withPassword("outbox-router")
                    .withCommand("--server-id=1", "--log-bin=mysql-bin", "--binlog-format=ROW", "--binlog-row-image=FULL");
            mysql.start();
            Runtime.getRuntime().addShutdownHook(new Thread(mysql::stop));
        }
        return new BinlogOutbox.Server("mysql", "jdbc:mysql://" + mysql.getHost() + ":" + mysql.getMappedPort(3306) + "/",
                "root", "outbox-router");
    }

    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return new BinlogOutbox(server(), name);
    }
}
