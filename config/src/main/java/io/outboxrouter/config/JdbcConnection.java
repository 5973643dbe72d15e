package io.outboxrouter.config;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;

/** A JDBC URL with its credentials. The password is a {@link Secret}, so printing this record is safe. */
public record JdbcConnection(String url, String user, Secret password) {

    /** Opens a new connection; the one way the router connects to a database outside its pools. */
    public Connection open() throws SQLException {
        return DriverManager.getConnection(url, user, password.reveal());
    }

    /** Opens a new connection with extra driver properties (timeouts, keepalive). */
    public Connection open(Properties driverProperties) throws SQLException {
        var p = new Properties();
        p.putAll(driverProperties);
        if (user != null) {
            p.setProperty("user", user);
        }
        p.setProperty("password", password.reveal());
        return DriverManager.getConnection(url, p);
    }

    /**
     * The URL with the value of every parameter that may be a secret (a name with {@code password} or {@code secret} in
     * it, and {@code user}) shown as {@code …}, for messages and {@code config}: TLS settings stay readable.
     */
    public String redactedUrl() {
        return redact(url);
    }

    /** As {@link #redactedUrl()}, for a URL held on its own. */
    public static String redact(String url) {
        return url.replaceAll("(?i)([?&;](?:[^=&;]*(?:password|secret)[^=&;]*|user)=)[^&;]*", "$1…");
    }

    /**
     * Whether the server refused this connection for not using TLS (Postgres's pg_hba "no encryption", MySQL's and
     * MariaDB's require_secure_transport): the URL must change, so trying again cannot help.
     */
    public static boolean refusedWithoutTls(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String m = String.valueOf(t.getMessage());
            if (m.contains("no encryption") || m.contains("require_secure_transport") || m.contains("require-secure-transport")
                    || m.contains("insecure transport")) {
                return true;
            }
        }
        return false;
    }

    /** The URL without its query string (which may carry credentials), for messages. */
    public String displayUrl() {
        return url.replaceAll("\\?.*", "");
    }
}
