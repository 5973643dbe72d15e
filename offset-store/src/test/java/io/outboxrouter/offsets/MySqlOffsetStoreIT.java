package io.outboxrouter.offsets;

import io.outboxrouter.testing.MySqlServer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.condition.EnabledIf;

/** The offsets contract on the MySQL given by {@code OUTBOX_IT_MYSQL_URL} ({@code scripts/mysql-server.sh start}); skipped without. */
@EnabledIf("io.outboxrouter.testing.MySqlServer#isGiven")
class MySqlOffsetStoreIT extends OffsetStoreContract {
    @BeforeAll
    static void startServer() {
        start(MySqlServer.given().orElseThrow());
    }
}
