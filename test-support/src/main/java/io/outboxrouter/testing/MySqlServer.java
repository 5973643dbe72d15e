package io.outboxrouter.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * A MySQL server given to the tests, not started by them: {@code OUTBOX_IT_MYSQL_URL}, {@code OUTBOX_IT_MYSQL_USER} and
 * {@code OUTBOX_IT_MYSQL_PASSWORD} (or the system properties {@code outbox.it.mysql.url}, {@code .user}, {@code .password}),
 * as {@code scripts/mysql-server.sh start} prints them. The user needs every privilege (it creates databases and users).
 * It can be crashed and restarted only when it was started by that script ({@link #stop()}, {@link #restart()}).
 */
public final class MySqlServer implements DatabaseServer {
    private static final Pattern URL = Pattern.compile("jdbc:mysql://([^:/]+):(\\d+)(/.*)?");

    private final String host;
    private final int port;
    private final String user;
    private final String password;

    private MySqlServer(String host, int port, String user, String password) {
        this.host = host;
        this.port = port;
        this.user = user;
        this.password = password;
    }

    /** The server named by the environment or system properties; empty when none is. */
    public static Optional<MySqlServer> given() {
        String url = setting("url");
        if (url == null || url.isBlank()) {
            return Optional.empty();
        }
        var m = URL.matcher(url.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("OUTBOX_IT_MYSQL_URL must look like jdbc:mysql://HOST:PORT[/DB] (was " + url + ")");
        }
        String user = setting("user");
        String password = setting("password");
        return Optional.of(new MySqlServer(m.group(1), Integer.parseInt(m.group(2)), user == null ? "root" : user,
                password == null ? "" : password));
    }

    /** For JUnit's {@code @EnabledIf}: whether a MySQL was given. */
    public static boolean isGiven() {
        return given().isPresent();
    }

    private static String setting(String name) {
        String property = System.getProperty("outbox.it.mysql." + name);
        return property != null ? property : System.getenv("OUTBOX_IT_MYSQL_" + name.toUpperCase());
    }

    @Override
    public String user() {
        return user;
    }

    @Override
    public String password() {
        return password;
    }

    @Override
    public int port() {
        return port;
    }

    /** Over TLS (Connector/J's default), which MySQL 9's caching_sha2_password accepts without the server's RSA key. */
    @Override
    public String jdbcUrl(String database) {
        return "jdbc:mysql://" + host + ":" + port + "/" + database;
    }

    public Connection connect(String database) throws SQLException {
        return DriverManager.getConnection(jdbcUrl(database), user, password);
    }

    @Override
    public String createDatabase(String name) {
        try (var c = connect(""); var st = c.createStatement()) {
            st.execute("CREATE DATABASE " + name);
            return name;
        } catch (SQLException e) {
            throw new IllegalStateException("could not create database " + name + " on " + jdbcUrl(""), e);
        }
    }

    /** Crashes the server (SIGKILL), keeping its data; only for a server that {@code scripts/mysql-server.sh} started. */
    @Override
    public void stop() {
        script("kill");
    }

    @Override
    public void restart() {
        script("restart");
    }

    private void script(String command) {
        Path script = script();
        try {
            var p = new ProcessBuilder("bash", script.toString(), command, Integer.toString(port)).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(script + " " + command + " " + port + " failed");
            }
        } catch (IOException e) {
            throw new IllegalStateException("could not run " + script, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The repository's script, found from the working directory (a module of the build, or the root). */
    private static Path script() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("scripts/mysql-server.sh");
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new IllegalStateException("this MySQL can only be crashed and restarted when scripts/mysql-server.sh started it");
    }

    /** The server is not the tests' to stop: whoever started it stops it. */
    @Override
    public void close() {
    }
}
