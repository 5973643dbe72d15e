package io.outboxrouter.testing;

/** A real database server for tests, which can be stopped and restarted on the same data to simulate an outage. */
public interface DatabaseServer extends AutoCloseable {

    String user();

    String password();

    /** The TCP port on 127.0.0.1. */
    int port();

    /** A JDBC URL for a database on this server. */
    String jdbcUrl(String database);

    /** A fresh database, so that tests never share tables, slots or publications; returns its name. */
    String createDatabase(String name);

    /** Stops the server, keeping its data. */
    void stop();

    /** Starts it again on the same data and port; a running server is first stopped the way a crash would stop it. */
    void restart();

    @Override
    void close();
}
