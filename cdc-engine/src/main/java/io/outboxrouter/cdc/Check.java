package io.outboxrouter.cdc;

import java.util.Collection;
import java.util.Set;

/**
 * One prerequisite, checked: what, whether it holds, what was seen, and the fix when it does not.
 *
 * @param fix empty when it passed, unless it is a warning: passed, with something worth changing
 */
public record Check(String name, boolean ok, String detail, String fix) {

    public static Check pass(String name, String detail) {
        return new Check(name, true, detail, "");
    }

    public static Check fail(String name, String detail, String fix) {
        return new Check(name, false, detail, fix);
    }

    /** Holds for running the router, with something worth changing: {@code check} prints it as WARN with the fix. */
    public static Check warn(String name, String detail, String fix) {
        return new Check(name, true, detail, fix);
    }

    /** Passed, with a fix worth applying. */
    public boolean warning() {
        return ok && !fix.isEmpty();
    }

    /** A failed connection to the source, with the fix its SQLState points to. */
    static Check connectionFailed(String url, java.sql.SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        String tls = tlsHint(e);
        String hint = tls != null ? tls
                : state.startsWith("28") ? "check source.user and source.password"
                : state.startsWith("08") ? "check that the database at " + url + " is running and reachable"
                : state.startsWith("3D") || state.startsWith("42000") ? "check the database name in source.url"
                : "check the source settings";
        return fail("source connection", "cannot use the source database " + url + ": " + e.getMessage(), hint);
    }

    /**
     * The fix for a connection refused over TLS, from the server's refusal or the handshake's failure; null when TLS is
     * not what failed. Each driver words these its own way, so the texts of all three are matched.
     */
    static String tlsHint(Throwable e) {
        if (io.outboxrouter.config.JdbcConnection.refusedWithoutTls(e)) {
            return "the server accepts TLS connections only: set TLS in source.url (Postgres: sslmode=verify-full&sslrootcert=<CA file>; "
                    + "MySQL: sslMode=VERIFY_IDENTITY; MariaDB: sslMode=verify-full), see docs/security.md";
        }
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String m = String.valueOf(t.getMessage());
            if (m.contains("client certificate") || m.contains("certificate authentication failed")) {
                return "the server asks for a client certificate: name it in source.url (Postgres: sslcert=<cert PEM>&sslkey=<key .pk8 or .p12>; "
                        + "MySQL/MariaDB: a client keystore), its common name the user's, see docs/security.md";
            }
            if (t instanceof javax.net.ssl.SSLException || t instanceof java.security.cert.CertificateException
                    || t instanceof java.security.cert.CertPathValidatorException || m.contains("PKIX") || m.contains("SSL error")) {
                return "the TLS handshake failed: the server's certificate must be signed by the authority source.url trusts (Postgres: "
                        + "sslrootcert; MySQL/MariaDB: the truststore or serverSslCert), and under verify-full name the host in source.url; "
                        + "see docs/security.md";
            }
        }
        return null;
    }

    /** Whether a table has every column the router reads; checked at start, not discovered row by row in the dead letters. */
    static Check columns(String table, Set<String> present, Collection<String> required) {
        var missing = required.stream().filter(c -> !present.contains(c)).toList();
        return missing.isEmpty() ? pass("columns of " + table, "has " + String.join(", ", required))
                : fail("columns of " + table, "table " + table + " has no column " + String.join(", ", missing)
                        + " (named under outbox.columns or outbox.headers, or by routing.event-router's options); every row would go "
                        + "to the dead-letter topic",
                "add the column(s), or name the table's own columns there (with routing.event-router, "
                        + "table.field.additional.missing: ignore, or its older name table.fields.additional.error.on.missing: false, "
                        + "lets a table lack a placed column)");
    }

    /** This check under the name of the part it is about, e.g. {@code shard 0 of 4: publication}. */
    public Check of(String part) {
        return new Check(part + ": " + name, ok, detail, fix);
    }

    /** One line for an operator: the failed check, what was seen, and the fix. */
    public String problem() {
        return name + ": " + detail + (fix.isEmpty() ? "" : "; fix: " + fix);
    }
}
