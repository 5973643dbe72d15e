package io.outboxrouter.offsets;

import io.outboxrouter.testing.PostgresServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class PostgresOffsetStoreIT extends OffsetStoreContract {
    private static PostgresServer server;
    private static String url;

    @BeforeAll
    static void start() {
        server = PostgresServer.start();
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
        return PostgresServer.USER;
    }

    @Override
    String password() {
        return PostgresServer.PASSWORD;
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
