package io.outboxrouter.app;

import io.outboxrouter.offsets.HeldLock;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.RouterLock;
import io.outboxrouter.retry.Retry;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns "am I the active process?" for one router name: takes the router's lock, or stands by and takes it as soon as it
 * is free; asks the server every second whether it still holds it. A process that loses it (its session killed, the
 * database restarted) stops streaming at once, then takes the lock again if it is free and goes on from the stored
 * offset; if another process holds it now, this one gives up. A database that cannot be reached is waited for.
 */
final class Leadership<L extends HeldLock> implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Leadership.class);
    private static final Duration TICK = Duration.ofSeconds(1);
    /** Unanswered lock checks (one a second) before the lock counts as lost: well before the server drops a silent session. */
    private static final int MAX_UNANSWERED = 3;

    /** What the router does as the lock comes and goes; called on the router's timer thread (the first take on the caller's). */
    interface Listener<L> {
        /** This process holds the lock: start streaming. An exception stops the router. */
        void activated(L lock);

        /** The lock is gone: stop streaming now. */
        void lost(String why);

        /** Give up: the router stops with this error. */
        void failed(Throwable error);
    }

    /** Where the lock is taken, and asked who holds it. */
    interface Locks<L> {
        /** Takes the lock if it is free; empty when another session holds it. */
        Optional<L> tryAcquire() throws SQLException;

        /** The server's id of the session that holds the lock now; 0 when none does. */
        long holder() throws SQLException;

        /** Whether a failure to reach the lock's database is an outage worth waiting out (not bad credentials or SQL). */
        boolean isOutage(SQLException e);

        /** The lock in words, for the log and errors. */
        String describe();
    }

    private final Locks<L> locks;
    private final ScheduledExecutorService timer;
    /** How often the lock is checked, and a standby asks for it; ten of them are the longest wait between tries in an outage. */
    private final Duration tick;
    /** How long the server takes to drop a silent session, and with it a lost lock. */
    private final Duration deadSession;
    /** How long the lock's database may stay unreachable, at start or after a lost lock, before giving up; zero: forever. */
    private final Duration outageBudget;
    private Listener<L> listener;
    private volatile L lock;
    private volatile boolean closed;
    /** False once the router is stopping: the lock is kept until the end, but no longer watched or taken again. */
    private volatile boolean watching = true;
    /** Lock checks in a row that got no answer; a few in a row count as a lost lock. */
    private int unanswered;
    /** After a lost lock: the server's id of the lost session, and when it was lost. */
    private long lostSession;
    private long lostAt;
    private volatile String waitingFor;
    private ScheduledFuture<?> check;
    private long outageSince;
    private long backoffMillis;
    /** When an outage was last logged; 0 when none is under way. */
    private long lastOutageLog;
    private static final Duration OUTAGE_LOG_EVERY = Duration.ofSeconds(30);

    /** The lock of a router (or of a sharded router's group) on its offsets database. */
    static Leadership<RouterLock> of(OffsetTableSettings settings, ScheduledExecutorService timer, Duration outageBudget) {
        return new Leadership<>(new Locks<>() {
            @Override
            public Optional<RouterLock> tryAcquire() throws SQLException {
                return RouterLock.tryAcquire(settings);
            }

            @Override
            public long holder() throws SQLException {
                return RouterLock.holder(settings);
            }

            @Override
            public boolean isOutage(SQLException e) {
                return RouterLock.isOutage(e);
            }

            @Override
            public String describe() {
                return RouterLock.describe(settings);
            }
        }, timer, outageBudget, TICK, Duration.ofSeconds(RouterLock.DEAD_SESSION_SECONDS + 15L));
    }

    /**
     * @param tick        how often the lock is checked and a standby asks for it
     * @param deadSession how long a lost lock may still be held by this process's own old session
     */
    Leadership(Locks<L> locks, ScheduledExecutorService timer, Duration outageBudget, Duration tick, Duration deadSession) {
        this.locks = locks;
        this.timer = timer;
        this.outageBudget = outageBudget;
        this.tick = tick;
        this.deadSession = deadSession;
        this.backoffMillis = tick.toMillis();
    }

    /**
     * Takes the lock now and activates, or stands by (another process holds it), or waits for the database.
     *
     * @throws RuntimeException when the lock's database refuses for a reason waiting cannot fix (credentials), or the
     *                          first activation fails (a setup error)
     */
    void start(Listener<L> listener) {
        this.listener = listener;
        try {
            var acquired = locks.tryAcquire();
            if (acquired.isPresent()) {
                activate(acquired.get());
                return;
            }
            standingBy();
        } catch (SQLException e) {
            if (!locks.isOutage(e)) {
                throw new IllegalStateException("cannot take the lock of " + locks.describe() + ": " + e.getMessage()
                        + " (offsets.connection, or the source's connection when that is not set)", e);
            }
            unreachable(e);
        }
        schedule(false);
    }

    /** Whether this process holds the lock (false while standing by or waiting). */
    boolean isActive() {
        return lock != null;
    }

    /** What the process waits for while not active: the database, or the other process; null while active. */
    String waitingFor() {
        return lock != null ? null : waitingFor;
    }

    private void activate(L acquired) {
        lock = acquired;
        waitingFor = null;
        outageSince = 0;
        lastOutageLog = 0;
        backoffMillis = tick.toMillis();
        try {
            listener.activated(acquired);
        } catch (RuntimeException e) {
            lock = null;
            acquired.close();
            throw e;
        }
        try {
            check = timer.scheduleWithFixedDelay(this::checkLock, tick.toMillis(), tick.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // the router is stopping: it closes the engine just started
        }
    }

    private void schedule(boolean afterLoss) {
        if (closed || !watching) {
            return;
        }
        try {
            timer.schedule(() -> retake(afterLoss), backoffMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // the router is stopping
        }
    }

    /** One try at the lock, while standing by or after losing it. */
    private void retake(boolean afterLoss) {
        if (closed || !watching) {
            return;
        }
        Optional<L> acquired;
        try {
            acquired = locks.tryAcquire();
        } catch (SQLException e) {
            if (!locks.isOutage(e) || outageBudgetSpent()) {
                listener.failed(new IllegalStateException("cannot take the lock of " + locks.describe()
                        + (locks.isOutage(e) ? " after waiting " + outageBudget + " (offsets.give-up-after)" : "") + ": "
                        + Retry.describe(e), e));
                return;
            }
            unreachable(e);
            schedule(afterLoss);
            return;
        }
        if (acquired.isEmpty()) {
            if (afterLoss && oldSessionStillHolds()) {
                schedule(true); // the server has not dropped our own silent session yet: it will
                return;
            }
            if (afterLoss) {
                listener.failed(new IllegalStateException("another process took " + locks.describe()
                        + " over while this one had lost its lock; this one stops"));
                return;
            }
            standingBy();
            schedule(false);
            return;
        }
        synchronized (this) {
            if (closed) {
                acquired.get().close();
                return;
            }
            LOG.info("{}: {}, taking over", locks.describe(), afterLoss ? "took the lock again" : "the lock is free");
            try {
                activate(acquired.get());
            } catch (RuntimeException e) {
                listener.failed(e); // a setup error stops a standby as it stops a router at start
            }
        }
    }

    /** Whether the lock is still held by this process's lost session, within the time the server takes to drop it. */
    private boolean oldSessionStillHolds() {
        if (System.nanoTime() - lostAt > deadSession.toNanos()) {
            return false;
        }
        try {
            long holder = locks.holder();
            if (holder == lostSession) {
                LOG.info("{}: the lock is still held by this process's lost session {}; waiting for the server to drop it",
                        locks.describe(), holder);
                return true;
            }
            return false;
        } catch (SQLException e) {
            return true; // cannot tell yet: ask again
        }
    }

    private void standingBy() {
        if (!"the other process".equals(waitingFor)) {
            LOG.info("Another process runs {}: standing by until it stops", locks.describe());
        }
        waitingFor = "the other process";
        outageSince = 0;
        lastOutageLog = 0;
        backoffMillis = tick.toMillis();
    }

    private void unreachable(SQLException e) {
        if (outageSince == 0) {
            outageSince = System.nanoTime();
        }
        waitingFor = "the database";
        // Tried again every couple of ticks at most, so that the stream is back within seconds of the database; said
        // at the first failure and every half minute after.
        long now = System.nanoTime();
        if (lastOutageLog == 0 || now - lastOutageLog > OUTAGE_LOG_EVERY.toNanos()) {
            lastOutageLog = now;
            LOG.warn("Cannot reach the database of {} ({}); trying again every {} ms at most, {}", locks.describe(), Retry.describe(e),
                    tick.toMillis() * 2, outageBudget.isZero() ? "until it answers" : "for up to " + outageBudget + " in all (offsets.give-up-after)");
        }
        backoffMillis = Math.min(backoffMillis * 2, tick.toMillis() * 2);
    }

    private boolean outageBudgetSpent() {
        return !outageBudget.isZero() && outageSince != 0 && System.nanoTime() - outageSince > outageBudget.toNanos();
    }

    /** Asks the server whether this session still holds the lock; without it a standby may already be streaming. */
    private void checkLock() {
        var held = lock;
        if (held == null || closed || !watching) {
            return;
        }
        var state = held.check();
        unanswered = state == RouterLock.LockState.UNKNOWN ? unanswered + 1 : 0;
        if (state == RouterLock.LockState.HELD || (state == RouterLock.LockState.UNKNOWN && unanswered < MAX_UNANSWERED)) {
            if (state == RouterLock.LockState.UNKNOWN) {
                LOG.warn("The lock check of {} got no answer ({} in a row); asking again", held.description(), unanswered);
            }
            return;
        }
        synchronized (this) {
            lock = null;
            check.cancel(false);
        }
        lostSession = held.session();
        lostAt = System.nanoTime();
        held.close();
        LOG.warn("Lost the lock of {} (its database session ended or was killed): stopping the stream at once", held.description());
        listener.lost("lost the lock of " + held.description());
        retake(true);
    }

    /** The router is stopping: keep the lock until {@link #close()}, but stop watching it and never take it again. */
    void stopWatching() {
        watching = false;
        var scheduled = check;
        if (scheduled != null) {
            scheduled.cancel(false);
        }
    }

    /** Releases the lock (a standby, if any, takes over). */
    @Override
    public synchronized void close() {
        closed = true;
        if (check != null) {
            check.cancel(false);
        }
        if (lock != null) {
            lock.close();
        }
    }
}
