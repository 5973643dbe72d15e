package io.outboxrouter.testing;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;

/**
 * A real Postgres (embedded binaries from Maven, PG 17) with logical decoding on, on a private port.
 * It can be stopped and started again on the same data directory and port, to simulate an outage.
 */
public final class PostgresServer implements DatabaseServer {
    public static final String USER = "postgres";
    public static final String PASSWORD = "postgres";

    private final Path dataDir;
    private final int port;
    private EmbeddedPostgres pg;

    private PostgresServer(Path dataDir, int port) {
        this.dataDir = dataDir;
        this.port = port;
    }

    public static PostgresServer start() {
        try {
            var server = new PostgresServer(Files.createTempDirectory("outbox-router-pg"), freePort());
            server.startProcess();
            return server;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void startProcess() {
        try {
            pg = EmbeddedPostgres.builder()
                    .setPort(port)
                    .setDataDirectory(dataDir)
                    // Never "clean": zonky deletes a clean data directory on close(), which would lose it across restart().
                    .setCleanDataDirectory(false)
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("wal_level", "logical")
                    .setServerConfig("max_replication_slots", "128")
                    .setServerConfig("max_wal_senders", "64")
                    .setServerConfig("max_connections", "200")
                    // zonky defaults to synchronous_commit=off; then the walsender ships WAL only on the WAL
                    // writer's 200 ms cycle and commit-to-Kafka latency grows by that much. Production runs "on".
                    .setServerConfig("synchronous_commit", "on")
                    .setServerConfig("track_commit_timestamp", "on") // replay in commit order
                    .setServerConfig("fsync", "off")
                    .setServerConfig("full_page_writes", "off")
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start embedded Postgres on port " + port, e);
        }
    }

    /** Stops the server, keeping its data: the next {@link #restart()} brings the same database back. */
    @Override
    public void stop() {
        if (pg != null) {
            try {
                pg.close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            pg = null;
        }
    }

    /**
     * Stops the server at once, as a crash would (an immediate shutdown): a fast shutdown waits for logical walsenders to
     * be acknowledged, up to a minute, while a router streams.
     */
    private void crash() {
        try {
            long pid = Long.parseLong(Files.readAllLines(dataDir.resolve("postmaster.pid")).get(0).trim());
            new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
            var postmaster = ProcessHandle.of(pid);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (postmaster.map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            pg.close(); // releases zonky's lock on the data directory; its pg_ctl stop finds nothing left to stop
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        pg = null;
    }

    @Override
    public void restart() {
        if (pg != null) {
            crash();
        }
        startProcess();
    }

    @Override
    public String user() {
        return USER;
    }

    @Override
    public String password() {
        return PASSWORD;
    }

    public int port() {
        return port;
    }

    /** A JDBC URL for a database on this server (created with {@link #createDatabase} first, or "postgres"). */
    @Override
    public String jdbcUrl(String database) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
    }

    public Connection connect(String database) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), USER, PASSWORD);
    }

    /** A fresh database, so that tests never share tables, slots or publications. */
    @Override
    public String createDatabase(String name) {
        try (var c = connect("postgres"); var st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
            return name;
        } catch (SQLException e) {
            throw new IllegalStateException("could not create database " + name, e);
        }
    }

    static int freePort() throws IOException {
        try (var s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        stop();
        try (var files = Files.walk(dataDir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // A temp directory left behind is harmless.
        }
    }
}
