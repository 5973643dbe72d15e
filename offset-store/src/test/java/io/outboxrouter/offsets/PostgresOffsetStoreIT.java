package io.outboxrouter.offsets;

import io.outboxrouter.testing.PostgresServer;
import org.junit.jupiter.api.BeforeAll;

class PostgresOffsetStoreIT extends OffsetStoreContract {
    @BeforeAll
    static void startServer() {
        start(PostgresServer.start());
    }
}
