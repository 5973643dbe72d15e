package io.outboxrouter.app;

import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.RouterLock;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns "am I the active process?" for one router name: takes the router's lock, or stands by and takes it as soon as it
 * is free, then watches it; a process that loses it is told to stop, so that only one process streams.
 */
final class Leadership implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Leadership.class);
    private static final Duration STANDBY_POLL = Duration.ofSeconds(1);
    private static final Duration LOCK_CHECK = Duration.ofSeconds(5);

    private final OffsetTableSettings settings;
    private final ScheduledExecutorService timer;
    private Consumer<RouterLock> onActive;
    private Consumer<Throwable> onFailure;
    private volatile RouterLock lock;
    private volatile boolean closed;

    Leadership(OffsetTableSettings settings, ScheduledExecutorService timer) {
        this.settings = settings;
        this.timer = timer;
    }

    /**
     * Takes the lock now and calls {@code onActive}, or stands by and calls it once the lock is free. {@code onFailure}
     * hears of a lock that was lost, or of an activation that failed while standing by.
     *
     * @throws IllegalStateException when the database that holds the lock cannot be reached at start
     */
    void start(Consumer<RouterLock> onActive, Consumer<Throwable> onFailure) {
        this.onActive = onActive;
        this.onFailure = onFailure;
        var acquired = tryLock();
        if (acquired.isPresent()) {
            activate(acquired.get());
        } else {
            LOG.info("Another process runs {}: standing by until it stops", RouterLock.describe(settings));
            timer.schedule(this::standBy, STANDBY_POLL.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** Whether this process holds the lock (false while standing by). */
    boolean isActive() {
        return lock != null;
    }

    private Optional<RouterLock> tryLock() {
        try {
            return RouterLock.tryAcquire(settings);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot take the lock of " + RouterLock.describe(settings) + ": " + e.getMessage()
                    + " (offsets.connection, or the source's connection when that is not set)", e);
        }
    }

    private void activate(RouterLock acquired) {
        lock = acquired;
        try {
            onActive.accept(acquired);
        } catch (RuntimeException e) {
            lock = null;
            acquired.close();
            throw e;
        }
        timer.scheduleWithFixedDelay(this::checkLock, LOCK_CHECK.toMillis(), LOCK_CHECK.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void standBy() {
        if (closed) {
            return;
        }
        Optional<RouterLock> acquired;
        try {
            acquired = tryLock();
        } catch (RuntimeException e) {
            LOG.warn("Standing by: {}", e.getMessage());
            acquired = Optional.empty();
        }
        if (acquired.isEmpty()) {
            timer.schedule(this::standBy, STANDBY_POLL.toMillis(), TimeUnit.MILLISECONDS);
            return;
        }
        LOG.info("{}: the lock is free, taking over", RouterLock.describe(settings));
        synchronized (this) {
            if (closed) {
                acquired.get().close();
                return;
            }
            try {
                activate(acquired.get());
            } catch (RuntimeException e) {
                onFailure.accept(e); // a setup error stops a standby as it stops a router at start
            }
        }
    }

    /** Without the lock a standby may already be streaming: stop rather than publish twice. */
    private void checkLock() {
        var held = lock;
        if (held != null && !closed && !held.isHeld()) {
            onFailure.accept(new IllegalStateException("lost the lock of " + held.description()
                    + ": its database session ended. Stopping so that only one process streams; start it again"));
        }
    }

    /** Releases the lock (a standby, if any, takes over). */
    @Override
    public synchronized void close() {
        closed = true;
        if (lock != null) {
            lock.close();
        }
    }
}
