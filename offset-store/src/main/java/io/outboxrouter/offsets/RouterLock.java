package io.outboxrouter.offsets;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.HexFormat;
import java.util.Optional;

/**
 * One router name, one active process: a session lock in the database that holds the offsets (Postgres advisory lock,
 * MySQL/MariaDB {@code GET_LOCK}), held on a connection of its own for as long as the router runs. The database
 * releases it when that session ends, including when the process is killed, so nothing has to expire. A second router
 * with the same name waits for it (a standby), and {@code offsets set|reset} refuse while it is held.
 */
public final class RouterLock implements HeldLock {
    /** How long the server keeps a lock whose client went silent (a lost host, a paused VM) before a standby may take it. */
    public static final int DEAD_SESSION_SECONDS = 15;
    private static final int CHECK_TIMEOUT_SECONDS = 2;

    private final Connection connection;
    private final String description;
    private final SqlDialect dialect;
    private final String routerName;
    private final long session;
    /** The MySQL/MariaDB lock name (it holds the lock session's database); null on Postgres. */
    private final String mysqlLockName;

    private RouterLock(Connection connection, String description, SqlDialect dialect, String routerName, long session,
                       String mysqlLockName) {
        this.mysqlLockName = mysqlLockName;
        this.session = session;
        this.connection = connection;
        this.description = description;
        this.dialect = dialect;
        this.routerName = routerName;
    }

    /**
     * Takes the lock if it is free.
     *
     * @return empty when another session holds it
     * @throws SQLException when the database cannot be reached or refuses the statement
     */
    public static Optional<RouterLock> tryAcquire(OffsetTableSettings settings) throws SQLException {
        SqlDialect dialect = SqlDialect.of(settings.url());
        var c = settings.connection().open(dialect.timeouts());
        try {
            String name = dialect == SqlDialect.POSTGRES ? null : mysqlName(c, settings.routerName());
            if (dialect == SqlDialect.POSTGRES ? query(c, "SELECT pg_try_advisory_lock(?)", postgresKey(settings.routerName()))
                    : query(c, "SELECT GET_LOCK(?, 0)", name)) {
                if (name != null && !query(c, "SELECT GET_LOCK(?, 0)", legacyMysqlName(settings.routerName()))) {
                    // A process of a build before locks named their database holds the old name: it streams; stand by.
                    query(c, "SELECT RELEASE_LOCK(?)", name);
                    c.close();
                    return Optional.empty();
                }
                if (name != null) {
                    query(c, "SELECT RELEASE_LOCK(?)", legacyMysqlName(settings.routerName())); // only a check, not kept
                }
                dialect.expireDeadSession(c, DEAD_SESSION_SECONDS);
                return Optional.of(new RouterLock(c, describe(settings), dialect, settings.routerName(), sessionId(c, dialect), name));
            }
        } catch (SQLException | RuntimeException e) {
            c.close();
            throw e;
        }
        c.close();
        return Optional.empty();
    }

    /** Runs a one-parameter lock function; Postgres answers a boolean, MySQL/MariaDB 1, 0, or NULL on an error. */
    private static boolean query(Connection c, String sql, Object parameter) throws SQLException {
        try (var ps = c.prepareStatement(sql)) {
            ps.setObject(1, parameter);
            try (var rs = ps.executeQuery()) {
                Object got = rs.next() ? rs.getObject(1) : null;
                return Boolean.TRUE.equals(got) || got instanceof Number n && n.intValue() == 1;
            }
        }
    }

    /** Where the lock lives, for messages: {@code router orders (lock in jdbc:postgresql://db:5432/shop)}. */
    public static String describe(OffsetTableSettings settings) {
        return "router " + settings.routerName() + " (lock in " + settings.connection().displayUrl() + ")";
    }

    /** What the server says about this process's lock. */
    public enum LockState {
        /** This session holds it. */
        HELD,
        /** This session does not hold it any more, or the session itself is gone (killed, the database restarted). */
        LOST,
        /** The server did not answer in time: ask again (the session may be fine under load). */
        UNKNOWN
    }

    /**
     * Whether this session still holds the lock, asked of the server (not only whether the connection looks alive): a
     * session killed by an operator, or ended by a database restart, has lost it, and a standby may hold it now.
     */
    @Override
    public LockState check() {
        String sql = dialect == SqlDialect.POSTGRES
                ? "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid() "
                        + "AND ((classid::bigint << 32) | objid::bigint) = ?)"
                : "SELECT IS_USED_LOCK(?) = CONNECTION_ID()";
        try (var ps = connection.prepareStatement(sql)) {
            ps.setQueryTimeout(CHECK_TIMEOUT_SECONDS);
            if (dialect == SqlDialect.POSTGRES) {
                ps.setLong(1, postgresKey(routerName));
            } else {
                ps.setString(1, mysqlLockName);
            }
            try (var rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1) ? LockState.HELD : LockState.LOST;
            }
        } catch (SQLException e) {
            return sessionGone(e) ? LockState.LOST : LockState.UNKNOWN;
        }
    }

    /**
     * Keeps this lock's session alive through a long wait of the process's own (taking the fencing token may wait as
     * long as the offset store lets an abandoned write hold its row: {@link SqlDialect#MYSQL_IDLE_SECONDS} on MySQL,
     * while the lock is not checked), then {@link #expireWhenSilent()} again. On Postgres the session has no idle limit.
     */
    public void stayAliveFor(int seconds) throws SQLException {
        if (dialect == SqlDialect.MYSQL) {
            dialect.expireDeadSession(connection, seconds);
        }
    }

    /** The lock's session ends again within {@link #DEAD_SESSION_SECONDS} when this process goes silent. */
    public void expireWhenSilent() throws SQLException {
        stayAliveFor(DEAD_SESSION_SECONDS);
    }

    /** How long a take-over may wait for the fencing token's row before the lock session must be told to stay. */
    public static int longestFencingWaitSeconds() {
        return SqlDialect.MYSQL_IDLE_SECONDS + 30;
    }

    /** The server's id of the session that holds the lock (a backend pid, a connection id). */
    @Override
    public long session() {
        return session;
    }

    /**
     * The server's id of the session that holds a router's lock now, or 0 when none does: after a lost lock, tells the
     * process's own old session (not yet dropped by the server) from another process.
     */
    public static long holder(OffsetTableSettings settings) throws SQLException {
        SqlDialect dialect = SqlDialect.of(settings.url());
        String sql = dialect == SqlDialect.POSTGRES
                ? "SELECT COALESCE(MIN(pid), 0) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "
                        + "(SELECT oid FROM pg_database WHERE datname = current_database()) AND ((classid::bigint << 32) | objid::bigint) = ?"
                : "SELECT COALESCE(IS_USED_LOCK(?), 0)";
        try (var c = settings.connection().open(dialect.timeouts()); var ps = c.prepareStatement(sql)) {
            if (dialect == SqlDialect.POSTGRES) {
                ps.setLong(1, postgresKey(settings.routerName()));
            } else {
                ps.setString(1, mysqlName(c, settings.routerName()));
            }
            try (var rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : 0;
            }
        }
    }

    private static long sessionId(Connection c, SqlDialect dialect) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery(dialect == SqlDialect.POSTGRES ? "SELECT pg_backend_pid()" : "SELECT CONNECTION_ID()")) {
            return rs.next() ? rs.getLong(1) : 0;
        }
    }

    /** Whether the server says this session holds the lock now. */
    public boolean isHeld() {
        return check() == LockState.HELD;
    }

    /** A broken connection, a terminated session or a server shutting down: the lock went with the session. */
    private boolean sessionGone(SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        try {
            return state.startsWith("08") || state.startsWith("57P") || connection.isClosed();
        } catch (SQLException closed) {
            return true;
        }
    }

    /** Whether a failure to reach the lock's database is an outage worth waiting out (not bad credentials or SQL). */
    public static boolean isOutage(SQLException e) {
        return JdbcStore.isTransient(e);
    }

    @Override
    public String description() {
        return description;
    }

    /** Ends the session, which releases the lock. */
    @Override
    public void close() {
        try {
            connection.close();
        } catch (SQLException ignored) {
            // The session is gone either way, and the lock with it.
        }
    }

    /** A stable 64-bit key for the advisory lock, from the router name. */
    static long postgresKey(String routerName) {
        return ByteBuffer.wrap(sha256("outbox-router:" + routerName)).getLong();
    }

    /**
     * The MySQL/MariaDB lock name: {@code GET_LOCK} names are server-wide, while router names are unique per offsets
     * database (Postgres advisory locks are per database), so the name holds the connection's database too. At most 64
     * characters: longer names are shortened to a digest.
     */
    static String mysqlName(Connection c, String routerName) throws SQLException {
        String database;
        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT DATABASE()")) {
            database = rs.next() && rs.getString(1) != null ? rs.getString(1) : "";
        }
        return mysqlName(database, routerName);
    }

    /**
     * The name that earlier builds locked (without the database). Checked, not held, at acquisition, so that a
     * rolling upgrade never has an old and a new process streaming together; kept for one release.
     */
    static String legacyMysqlName(String routerName) {
        return shortened("outbox-router:" + routerName);
    }

    static String mysqlName(String database, String routerName) {
        return shortened("outbox-router:" + database + "/" + routerName);
    }

    /** MySQL lock names are at most 64 characters: a longer one becomes a digest of itself. */
    private static String shortened(String name) {
        return name.length() <= 64 ? name : "outbox-router:" + HexFormat.of().formatHex(sha256(name), 0, 24);
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
