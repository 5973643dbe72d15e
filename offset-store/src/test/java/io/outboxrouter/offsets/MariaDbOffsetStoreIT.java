package io.outboxrouter.offsets;

import io.outboxrouter.testing.MariaDbServer;
import org.junit.jupiter.api.BeforeAll;

class MariaDbOffsetStoreIT extends OffsetStoreContract {
    @BeforeAll
    static void startServer() {
        start(MariaDbServer.start());
    }
}
