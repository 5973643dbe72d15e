package io.outboxrouter.offsets;

import io.outboxrouter.retry.Retry;
import java.lang.management.ManagementFactory;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.management.InstanceAlreadyExistsException;
import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts one offset store's writes and retries. Written by the store's thread; read in the process by reference
 * ({@link #lookup}: the engine's check of each write's outcome, the metrics, the status page), and published as a JMX
 * bean for operators, for as long as the store runs.
 */
public final class OffsetStoreStats implements OffsetStoreStatsMBean, Retry.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(OffsetStoreStats.class);

    /** The stores running in this process, by bean name: the engine instantiates its store by class name. */
    private static final java.util.concurrent.ConcurrentHashMap<ObjectName, OffsetStoreStats> RUNNING =
            new java.util.concurrent.ConcurrentHashMap<>();

    private final ObjectName name;
    private final AtomicLong stored = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong retries = new AtomicLong();
    private final AtomicLong consecutiveFailures = new AtomicLong();
    private final AtomicLong lastStored = new AtomicLong();
    private final AtomicReference<String> lastError = new AtomicReference<>("");
    private volatile boolean fenced;

    private OffsetStoreStats(ObjectName name) {
        this.name = name;
    }

    /**
     * The bean's name for one engine of a router: {@code instance} tells apart two engines of the same router in one
     * process (a standby beside the active one, in tests).
     */
    public static ObjectName objectName(String routerName, String instance) {
        try {
            return new ObjectName("io.outboxrouter:type=offset-store,router=" + ObjectName.quote(routerName) + ",instance="
                    + ObjectName.quote(instance));
        } catch (MalformedObjectNameException e) {
            throw new IllegalArgumentException("router name " + routerName + " cannot name a JMX bean", e);
        }
    }

    /**
     * One reading of the counters.
     *
     * @param lastStored when the last write succeeded; null before the first
     * @param lastError  why the last failed write failed; empty when none has
     * @param fenced     a write was refused because another process took the router over: this one must stop
     */
    public record Snapshot(long stored, long failed, long retries, long consecutiveFailures, Instant lastStored, String lastError,
                           boolean fenced) {
    }

    /** An engine's offset store, read now; empty before the engine started it and after it stopped. */
    public static Optional<Snapshot> lookup(String routerName, String instance) {
        return Optional.ofNullable(RUNNING.get(objectName(routerName, instance))).map(OffsetStoreStats::snapshot);
    }

    /** The counters now. */
    Snapshot snapshot() {
        long at = lastStored.get();
        return new Snapshot(stored.get(), failed.get(), retries.get(), consecutiveFailures.get(), at == 0 ? null : Instant.ofEpochMilli(at),
                lastError.get(), fenced);
    }

    /** Creates and publishes the bean; one left by an earlier store of the same router in this process is replaced. */
    static OffsetStoreStats register(String routerName, String instance) {
        var stats = new OffsetStoreStats(objectName(routerName, instance));
        RUNNING.put(stats.name, stats);
        var server = ManagementFactory.getPlatformMBeanServer();
        try {
            try {
                server.registerMBean(stats, stats.name);
            } catch (InstanceAlreadyExistsException e) {
                server.unregisterMBean(stats.name);
                server.registerMBean(stats, stats.name);
            }
        } catch (JMException e) {
            LOG.warn("Cannot publish the offset store's counters of router {} over JMX: {}", routerName, e.getMessage());
        }
        return stats;
    }

    void unregister() {
        RUNNING.remove(name, this);
        try {
            ManagementFactory.getPlatformMBeanServer().unregisterMBean(name);
        } catch (InstanceNotFoundException e) {
            // already gone
        } catch (JMException e) {
            LOG.debug("Cannot unregister {}: {}", name, e.getMessage());
        }
    }

    void stored() {
        stored.incrementAndGet();
        consecutiveFailures.set(0);
        lastStored.set(System.currentTimeMillis());
    }

    void failed(Throwable cause, boolean fencedOut) {
        fenced |= fencedOut;
        failed.incrementAndGet();
        consecutiveFailures.incrementAndGet();
        lastError.set(Retry.describe(cause));
    }

    @Override
    public void retrying(String operation, int attempt, Throwable cause) {
        retries.incrementAndGet();
    }

    @Override
    public long getStoredTotal() {
        return stored.get();
    }

    @Override
    public long getFailedTotal() {
        return failed.get();
    }

    @Override
    public long getRetriesTotal() {
        return retries.get();
    }

    @Override
    public long getConsecutiveFailures() {
        return consecutiveFailures.get();
    }

    @Override
    public long getLastStoredEpochMillis() {
        return lastStored.get();
    }

    @Override
    public String getLastError() {
        return lastError.get();
    }

    @Override
    public boolean isFenced() {
        return fenced;
    }
}
