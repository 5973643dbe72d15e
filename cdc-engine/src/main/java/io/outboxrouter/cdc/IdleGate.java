package io.outboxrouter.cdc;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import javax.management.AttributeNotFoundException;
import javax.management.JMException;
import javax.management.JMRuntimeException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a connector task's polling thread out of Debezium's queue while the stream is quiet. The queue's poll waits on
 * a millisecond timer and spins through the last millisecond of every poll interval, so a router that polls an empty
 * queue keeps its polling thread busy for a millisecond in every interval. Once the stream has handed over nothing but
 * heartbeats for {@link #QUIET_BEFORE_WAITING}, the task waits here instead: it looks at the queue's fill (the connector's own
 * {@code QueueRemainingCapacity} metric) every {@link #LOOK_EVERY} and polls as soon as a record is queued, the
 * connector has a position to confirm to the database, or {@link #POLL_AT_LEAST_EVERY} has passed (a poll is how the
 * connector's own errors surface). While records flow, polls go on exactly as without it. The price: the first event
 * after a quiet spell waits out a whole poll interval in the queue, where it would otherwise wait out what was left of one.
 *
 * <p>Used by the polling thread alone, apart from {@link #commitRequested()}.
 */
final class IdleGate {
    private static final Logger LOG = LoggerFactory.getLogger(IdleGate.class);
    /** How long only heartbeats (or nothing) must come before the task waits here rather than in the queue. */
    static final Duration QUIET_BEFORE_WAITING = Duration.ofSeconds(1);
    /** How often a waiting task looks at the queue: each look wakes the thread, and a first event waits up to this to be seen. */
    static final Duration LOOK_EVERY = Duration.ofMillis(2);
    /** The longest a waiting task goes without polling: the connector's errors and restarts surface in a poll. */
    static final Duration POLL_AT_LEAST_EVERY = Duration.ofMillis(250);

    private final MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    private final ObjectName streamingMetrics;
    private ObjectName bean;
    /** The queue's capacity, read once its bean is found. */
    private int capacity;
    /** When the last poll that handed over a change (not only heartbeats) returned; 0 before the first. */
    private long lastChangeNanos;
    private volatile boolean commitRequested;
    private boolean toldUnreadable;

    /** @param streamingMetrics the pattern that finds this task's streaming metrics bean, or null to never wait */
    IdleGate(ObjectName streamingMetrics) {
        this.streamingMetrics = streamingMetrics;
        this.lastChangeNanos = System.nanoTime();
    }

    /** The connector has a position to confirm: it does so in its next poll, which should not wait. */
    void commitRequested() {
        commitRequested = true;
    }

    /**
     * Returns at once unless the stream has been quiet for {@link #QUIET_BEFORE_WAITING}; then waits until the queue
     * holds a record, a commit is requested, {@link #POLL_AT_LEAST_EVERY} passes, or the queue's fill cannot be read.
     */
    void awaitWork() throws InterruptedException {
        boolean confirm = commitRequested;
        commitRequested = false; // the poll that follows confirms it
        long start = System.nanoTime();
        if (confirm || streamingMetrics == null || start - lastChangeNanos < QUIET_BEFORE_WAITING.toNanos()) {
            return;
        }
        long deadline = start + POLL_AT_LEAST_EVERY.toNanos();
        while (!commitRequested && queueEmpty() && System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(LOOK_EVERY.toNanos());
            if (Thread.interrupted()) {
                throw new InterruptedException("stopped while waiting for the change event queue");
            }
        }
        commitRequested = false;
    }

    /** Notes what a poll handed over. */
    void polled(List<SourceRecord> records) {
        if (records == null) {
            return;
        }
        for (var r : records) {
            if (r.valueSchema() == null || !TransactionBoundaries.HEARTBEAT_SCHEMA.equals(r.valueSchema().name())) {
                lastChangeNanos = System.nanoTime();
                return;
            }
        }
    }

    /** Whether the queue is known to be empty; false when its fill cannot be read (then the task polls as usual). */
    private boolean queueEmpty() {
        try {
            if (bean == null) {
                var found = SourceConnector.registered(streamingMetrics);
                if (found == null) {
                    return false; // not registered yet, or the task restarts
                }
                if (!(server.getAttribute(found, "QueueTotalCapacity") instanceof Integer total)) {
                    unreadable(found, "QueueTotalCapacity is not a number");
                    return false;
                }
                bean = found;
                capacity = total;
            }
            if (!(server.getAttribute(bean, "QueueRemainingCapacity") instanceof Integer remaining)) {
                unreadable(bean, "QueueRemainingCapacity is not a number");
                return false;
            }
            return remaining >= capacity;
        } catch (AttributeNotFoundException e) {
            unreadable(bean, e.getMessage());
            bean = null;
            return false;
        } catch (JMException | JMRuntimeException e) {
            bean = null; // unregistered meanwhile: the task restarts or stops
            return false;
        }
    }

    /** A connector whose metrics no longer say how full its queue is: polled as Debezium polls, said once. */
    private void unreadable(ObjectName at, String why) {
        if (!toldUnreadable) {
            toldUnreadable = true;
            LOG.info("The engine's polling thread cannot read the queue's fill from {} ({}); it polls the queue without waiting first, "
                    + "which costs idle CPU", at, why);
        }
    }
}
