package io.outboxrouter.offsets;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.outboxrouter.retry.Retry;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JDBC plumbing the router's tables share: a small pool, one transaction per unit of work, transient failures
 * retried with backoff and then surfaced as {@link OffsetStoreException} (never a hang).
 */
final class JdbcStore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(JdbcStore.class);
    static final int QUERY_TIMEOUT_SECONDS = 30;

    @FunctionalInterface
    interface Work<T> {
        T apply(Connection c) throws SQLException;
    }

    private final HikariDataSource dataSource;
    private final String table;
    private final SqlDialect dialect;
    private final Retry retry;
    private final Retry.Listener retries;

    private JdbcStore(HikariDataSource dataSource, String table, SqlDialect dialect, Retry retry, Retry.Listener retries) {
        this.dataSource = dataSource;
        this.table = table;
        this.dialect = dialect;
        this.retry = retry;
        this.retries = retries;
    }

    /** Connections are made lazily: an unreachable database fails the first call, not this one. */
    static JdbcStore open(OffsetTableSettings settings, String poolName) {
        return open(settings, poolName, Retry.Listener.NONE);
    }

    /** @param retries told about each retried failure */
    static JdbcStore open(OffsetTableSettings settings, String poolName, Retry.Listener retries) {
        var dialect = SqlDialect.of(settings.url());
        var hc = new HikariConfig();
        hc.setPoolName(poolName);
        hc.setJdbcUrl(settings.url());
        if (settings.user() != null) {
            hc.setUsername(settings.user());
        }
        hc.setPassword(settings.password().reveal());
        hc.setMaximumPoolSize(2);
        hc.setMinimumIdle(0);
        hc.setConnectionTimeout(5_000);
        hc.setValidationTimeout(2_000);
        hc.setInitializationFailTimeout(-1);
        hc.setAutoCommit(false);
        // A write to a database that went silent (a lost host, a network partition) fails in seconds and is retried,
        // instead of hanging the engine's commit until TCP gives up.
        hc.setDataSourceProperties(dialect.timeouts());
        // Every unit of work here is a few statements sent back to back: a transaction left open longer belongs to a
        // process that was paused or cut off inside a write, and must not keep a standby from its fencing token.
        hc.setConnectionInitSql(dialect.endIdleTransactions(RouterLock.DEAD_SESSION_SECONDS));
        // Committed on its own: a SET inside the first unit of work's transaction would be undone by its rollback.
        hc.setIsolateInternalQueries(true);
        if (dialect.maxConnectionLifetimeMillis() > 0) {
            hc.setMaxLifetime(dialect.maxConnectionLifetimeMillis());
            hc.setIdleTimeout(10_000);
            hc.setKeepaliveTime(0); // no pings: a connection is retired before the server would end it
        }
        return new JdbcStore(new HikariDataSource(hc), settings.table(), dialect, settings.retry(), retries);
    }

    String table() {
        return table;
    }

    SqlDialect dialect() {
        return dialect;
    }

    /** Runs one unit of work in its own transaction, retrying transient failures. */
    <T> T run(String operation, Work<T> work) {
        try {
            return retry.call(operation, JdbcStore::isTransient, LOG, retries, () -> {
                try (var c = dataSource.getConnection()) {
                    try {
                        T result = work.apply(c);
                        c.commit();
                        return result;
                    } catch (SQLException | RuntimeException e) {
                        rollbackQuietly(c);
                        throw e;
                    }
                }
            });
        } catch (Retry.GaveUpException e) {
            throw new OffsetStoreException("table " + table + ": " + e.getMessage(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new OffsetStoreException("table " + table + ": " + operation + " interrupted", e);
        }
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // The connection is likely gone; the pool discards it.
        }
    }

    /**
     * Lost connections (also one the server ended after a pause inside a transaction), timeouts and serialization
     * conflicts are worth another try; bad credentials, a missing
     * database or table, bad SQL and a server certificate that does not verify are not, even when the pool wraps them
     * in a "transient" exception.
     */
    static boolean isTransient(Throwable e) {
        if (io.outboxrouter.config.JdbcConnection.refusedWithoutTls(e)) {
            return false;
        }
        boolean transientSeen = false;
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.security.GeneralSecurityException) {
                return false; // the TLS handshake's verdict on a certificate or key: the same on every try
            }
            if (t instanceof SQLException s && s.getSQLState() != null) {
                String state = s.getSQLState();
                if (state.startsWith("28") || state.startsWith("42") || state.startsWith("3D") || state.startsWith("3F")) {
                    return false;
                }
                transientSeen |= state.startsWith("08") || state.startsWith("57P") || state.equals("40001")
                        || state.equals("40P01") || state.equals("53300") || state.equals("HYT00")
                        || state.equals("25P03"); // the session ended by idle_in_transaction_session_timeout
            }
            transientSeen |= t instanceof SQLTransientException || t instanceof SQLRecoverableException;
            if (t.getCause() == t) {
                break;
            }
        }
        return transientSeen;
    }

    @Override
    public void close() {
        dataSource.close();
    }
}
