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
    /** Settings beyond the test defaults, e.g. TLS and an {@code hba_file} of the test's own. */
    private final java.util.Map<String, String> extraConfig;
    private EmbeddedPostgres pg;

    private PostgresServer(Path dataDir, int port) {
        this(dataDir, port, java.util.Map.of());
    }

    private PostgresServer(Path dataDir, int port, java.util.Map<String, String> extraConfig) {
        this.dataDir = dataDir;
        this.port = port;
        this.extraConfig = extraConfig;
    }

    public static PostgresServer start() {
        return start(java.util.Map.of());
    }

    /** A server of its own with these {@code postgresql.conf} settings on top of the test defaults. */
    public static PostgresServer start(java.util.Map<String, String> extraConfig) {
        try {
            var server = new PostgresServer(Files.createTempDirectory("outbox-router-pg"), freePort(), extraConfig);
            server.startProcess();
            return server;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void startProcess() {
        try {
            var builder = EmbeddedPostgres.builder()
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
                    .setServerConfig("full_page_writes", "off");
            extraConfig.forEach(builder::setServerConfig);
            pg = builder.start();
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
     * A streaming standby of this server, made as an operator would without pg_basebackup (the embedded binaries have
     * none): a physical slot, a base backup by {@code pg_backup_start}/{@code pg_backup_stop} and a file copy, then
     * {@code standby.signal}. It replicates synchronously (every acknowledged commit is on it), and keeps copies of the
     * primary's failover slots ({@code sync_replication_slots}), which the primary does not run ahead of
     * ({@code synchronized_standby_slots}).
     */
    public PostgresServer startStandby() {
        return startStandby(true);
    }

    /**
     * @param copySlots whether the standby keeps copies of the primary's failover slots; without, a promotion loses every
     *                  logical slot, as before Postgres 17
     */
    public PostgresServer startStandby(boolean copySlots) {
        try {
            return startStandby(copySlots, freePort());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** @param standbyPort the standby's port, known before it starts (for a URL that names both servers) */
    public PostgresServer startStandby(boolean copySlots, int standbyPort) {
        try {
            var standby = new PostgresServer(Files.createTempDirectory("outbox-router-pg-standby"), standbyPort);
            String slot = "standby_" + standby.port;
            try (var c = connect("postgres"); var st = c.createStatement()) {
                st.execute("SELECT pg_create_physical_replication_slot('" + slot + "', true)");
                st.execute("SELECT pg_backup_start('standby', true)");
                copyForBackup(dataDir, standby.dataDir);
                try (var rs = st.executeQuery("SELECT labelfile, spcmapfile FROM pg_backup_stop(false)")) {
                    rs.next();
                    Files.writeString(standby.dataDir.resolve("backup_label"), rs.getString(1));
                    if (rs.getString(2) != null && !rs.getString(2).isEmpty()) {
                        Files.writeString(standby.dataDir.resolve("tablespace_map"), rs.getString(2));
                    }
                }
            }
            Files.writeString(standby.dataDir.resolve("standby.signal"), "");
            Files.writeString(standby.dataDir.resolve("postgresql.auto.conf"), """
                    primary_conninfo = 'host=127.0.0.1 port=%d user=%s password=%s dbname=postgres application_name=standby'
                    primary_slot_name = '%s'
                    hot_standby_feedback = on
                    sync_replication_slots = %s
                    """.formatted(port, USER, PASSWORD, slot, copySlots ? "on" : "off"));
            standby.startProcess();
            // Only once the standby runs: a primary waiting for a standby that failed to start would hang every commit.
            try (var c = connect("postgres"); var st = c.createStatement()) {
                if (copySlots) {
                    st.execute("ALTER SYSTEM SET synchronized_standby_slots = '" + slot + "'");
                }
                st.execute("ALTER SYSTEM SET synchronous_standby_names = 'standby'");
                st.execute("SELECT pg_reload_conf()");
            }
            return standby;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (SQLException e) {
            throw new IllegalStateException("could not make a standby of the Postgres on port " + port, e);
        }
    }

    /** The data directory as a base backup takes it: without the running server's own files, WAL and slots. */
    private static void copyForBackup(Path from, Path to) throws IOException {
        var skip = java.util.Set.of("postmaster.pid", "postmaster.opts", "epg-lock", "backup_label", "tablespace_map",
                "postgresql.auto.conf");
        try (var files = Files.walk(from)) {
            for (Path f : files.toList()) {
                Path rel = from.relativize(f);
                Path target = to.resolve(rel.toString());
                if (Files.isDirectory(f)) {
                    if (!(rel.startsWith("pg_replslot") && rel.getNameCount() > 1)) {
                        Files.createDirectories(target);
                    }
                } else if (!skip.contains(rel.toString()) && !rel.startsWith("pg_wal") && !rel.startsWith("pg_replslot")
                        && !rel.startsWith("pg_stat_tmp") && Files.exists(f)) {
                    try {
                        Files.copy(f, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                    } catch (java.nio.file.NoSuchFileException gone) {
                        // a temporary file removed while copying: a base backup leaves those out anyway
                    }
                }
            }
        }
    }

    /** Promotes this standby to a primary, and waits until it takes writes. */
    public void promote() {
        try (var c = connect("postgres"); var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_promote(true, 60)")) {
            rs.next();
            if (!rs.getBoolean(1)) {
                throw new IllegalStateException("the standby on port " + port + " was not promoted within 60 s");
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not promote the standby on port " + port, e);
        }
    }

    /** Stops the server as a crash would (an immediate shutdown), keeping its data. */
    public void kill() {
        if (pg != null) {
            crash();
        }
    }

    /**
     * Stops the server as {@code pg_ctl stop -m fast} does (SIGINT to the postmaster), keeping its data, and waits up to
     * {@code patience} for it to exit; the next {@link #restart()} brings it back.
     *
     * @return how long the shutdown took; null when the server still ran after {@code patience} (then it is crashed)
     */
    public Duration shutDownFast(Duration patience) {
        if (pg == null) {
            return Duration.ZERO;
        }
        long started = System.nanoTime();
        boolean exited = signal("-INT", patience);
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        crash(); // releases zonky's lock (and ends the server if it is still up)
        return exited ? took : null;
    }

    /**
     * Stops the server at once, as a crash would (an immediate shutdown): a fast shutdown waits for logical walsenders to
     * be acknowledged, up to a minute, while a router streams.
     */
    private void crash() {
        signal("-QUIT", Duration.ofSeconds(30));
        try {
            pg.close(); // releases zonky's lock on the data directory; its pg_ctl stop finds nothing left to stop
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        pg = null;
    }

    /** Sends the postmaster a signal and waits up to {@code patience} for it to exit; whether it did. */
    private boolean signal(String signal, Duration patience) {
        try {
            var pidFile = dataDir.resolve("postmaster.pid");
            if (!Files.exists(pidFile)) {
                return true;
            }
            long pid = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
            new ProcessBuilder("kill", signal, Long.toString(pid)).inheritIO().start().waitFor();
            var postmaster = ProcessHandle.of(pid);
            long deadline = System.nanoTime() + patience.toNanos();
            while (postmaster.map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            return !postmaster.map(ProcessHandle::isAlive).orElse(false);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
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

    public static int freePort() throws IOException {
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
