package io.outboxrouter.app;

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
final class Leadership implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Leadership.class);
    private static final Duration STANDBY_POLL = Duration.ofSeconds(1);
    private static final Duration LOCK_CHECK = Duration.ofSeconds(1);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(10);
    /** Unanswered lock checks (one a second) before the lock counts as lost: well before the server drops a silent session. */
    private static final int MAX_UNANSWERED = 3;

    /** What the router does as the lock comes and goes; called on the router's timer thread (the first take on the caller's). */
    interface Listener {
        /** This process holds the lock: start streaming. An exception stops the router. */
        void activated(RouterLock lock);

        /** The lock is gone: stop streaming now. */
        void lost(String why);

        /** Give up: the router stops with this error. */
        void failed(Throwable error);
    }

    private final OffsetTableSettings settings;
    private final ScheduledExecutorService timer;
    /** How long the lock's database may stay unreachable, at start or after a lost lock, before giving up; zero: forever. */
    private final Duration outageBudget;
    private Listener listener;
    private volatile RouterLock lock;
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
    private long backoffMillis = STANDBY_POLL.toMillis();

    Leadership(OffsetTableSettings settings, ScheduledExecutorService timer, Duration outageBudget) {
        this.settings = settings;
        this.timer = timer;
        this.outageBudget = outageBudget;
    }

    /**
     * Takes the lock now and activates, or stands by (another process holds it), or waits for the database.
     *
     * @throws RuntimeException when the lock's database refuses for a reason waiting cannot fix (credentials), or the
     *                          first activation fails (a setup error)
     */
    void start(Listener listener) {
        this.listener = listener;
        try {
            var acquired = RouterLock.tryAcquire(settings);
            if (acquired.isPresent()) {
                activate(acquired.get());
                return;
            }
            standingBy();
        } catch (SQLException e) {
            if (!RouterLock.isOutage(e)) {
                throw new IllegalStateException("cannot take the lock of " + RouterLock.describe(settings) + ": " + e.getMessage()
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

    private void activate(RouterLock acquired) {
        lock = acquired;
        waitingFor = null;
        outageSince = 0;
        backoffMillis = STANDBY_POLL.toMillis();
        try {
            listener.activated(acquired);
        } catch (RuntimeException e) {
            lock = null;
            acquired.close();
            throw e;
        }
        try {
            check = timer.scheduleWithFixedDelay(this::checkLock, LOCK_CHECK.toMillis(), LOCK_CHECK.toMillis(), TimeUnit.MILLISECONDS);
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
        Optional<RouterLock> acquired;
        try {
            acquired = RouterLock.tryAcquire(settings);
        } catch (SQLException e) {
            if (!RouterLock.isOutage(e) || outageBudgetSpent()) {
                listener.failed(new IllegalStateException("cannot take the lock of " + RouterLock.describe(settings)
                        + (RouterLock.isOutage(e) ? " after waiting " + outageBudget + " (offsets.give-up-after)" : "") + ": "
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
                listener.failed(new IllegalStateException("another process took " + RouterLock.describe(settings)
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
            LOG.info("{}: {}, taking over", RouterLock.describe(settings), afterLoss ? "took the lock again" : "the lock is free");
            try {
                activate(acquired.get());
            } catch (RuntimeException e) {
                listener.failed(e); // a setup error stops a standby as it stops a router at start
            }
        }
    }

    /** Whether the lock is still held by this process's lost session, within the time the server takes to drop it. */
    private boolean oldSessionStillHolds() {
        if (System.nanoTime() - lostAt > Duration.ofSeconds(RouterLock.DEAD_SESSION_SECONDS + 15L).toNanos()) {
            return false;
        }
        try {
            long holder = RouterLock.holder(settings);
            if (holder == lostSession) {
                LOG.info("{}: the lock is still held by this process's lost session {}; waiting for the server to drop it",
                        RouterLock.describe(settings), holder);
                return true;
            }
            return false;
        } catch (SQLException e) {
            return true; // cannot tell yet: ask again
        }
    }

    private void standingBy() {
        if (!"the other process".equals(waitingFor)) {
            LOG.info("Another process runs {}: standing by until it stops", RouterLock.describe(settings));
        }
        waitingFor = "the other process";
        outageSince = 0;
        backoffMillis = STANDBY_POLL.toMillis();
    }

    private void unreachable(SQLException e) {
        if (outageSince == 0) {
            outageSince = System.nanoTime();
        }
        waitingFor = "the database";
        LOG.warn("Cannot reach the database of {} ({}); trying again in {} ms, {}", RouterLock.describe(settings), Retry.describe(e),
                backoffMillis, outageBudget.isZero() ? "until it answers" : "for up to " + outageBudget + " in all (offsets.give-up-after)");
        backoffMillis = Math.min(backoffMillis * 2, MAX_BACKOFF.toMillis());
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
