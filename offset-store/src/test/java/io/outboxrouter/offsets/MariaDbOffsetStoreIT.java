package io.outboxrouter.offsets;

import io.outboxrouter.testing.MariaDbServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class MariaDbOffsetStoreIT extends OffsetStoreContract {
    private static MariaDbServer server;
    private static String url;

    @BeforeAll
    static void start() {
        server = MariaDbServer.start();
        url = server.jdbcUrl(server.createDatabase("offsets_it"));
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Override
    String url() {
        return url;
    }

    @Override
    String user() {
        return MariaDbServer.USER;
    }

    @Override
    String password() {
        return MariaDbServer.PASSWORD;
    }

    @Override
    void stopServer() {
        server.stop();
    }

    @Override
    void restartServer() {
        server.restart();
    }
}
