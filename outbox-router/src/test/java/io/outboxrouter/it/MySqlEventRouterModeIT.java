package io.outboxrouter.it;

import io.outboxrouter.testing.MySqlServer;
import org.junit.jupiter.api.condition.EnabledIf;

/** {@link MariaDbEventRouterModeIT} on MySQL, where one is given ({@code .ci/run} gives one). */
@EnabledIf("enabled")
class MySqlEventRouterModeIT extends MariaDbEventRouterModeIT {
    static boolean enabled() {
        return MySqlServer.isGiven();
    }

    @Override
    BinlogOutbox.Server server() {
        var given = MySqlServer.given().orElseThrow();
        return new BinlogOutbox.Server("mysql", given.jdbcUrl(""), given.user(), given.password());
    }

    @Override
    String connector() {
        return "io.debezium.connector.mysql.MySqlConnector";
    }
}
