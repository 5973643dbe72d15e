package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.management.ObjectName;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The gate against a stand-in for the connector's queue metrics, registered the way the connector registers its own. */
class IdleGateTest {
    private static final long DEADLINE_MILLIS = IdleGate.POLL_AT_LEAST_EVERY.toMillis();
    /** Far below the wait's deadline, far above what a return without waiting takes. */
    private static final long AT_ONCE_MILLIS = DEADLINE_MILLIS - 100;

    public interface QueueMetricsMXBean {
        int getQueueTotalCapacity();

        int getQueueRemainingCapacity();
    }

    public static final class Queue implements QueueMetricsMXBean {
        volatile int queued;

        @Override
        public int getQueueTotalCapacity() {
            return 8192;
        }

        @Override
        public int getQueueRemainingCapacity() {
            return 8192 - queued;
        }
    }

    private final Queue queue = new Queue();
    private final String run = UUID.randomUUID().toString();
    private ObjectName bean;
    private ObjectName pattern;

    @BeforeEach
    void register() throws Exception {
        bean = new ObjectName("debezium.gatetest:type=connector-metrics,context=streaming,server=orders," + CdcEngine.RUN_TAG + "=" + run);
        pattern = new ObjectName("debezium.gatetest:type=connector-metrics,context=streaming," + CdcEngine.RUN_TAG + "=" + run + ",*");
        ManagementFactory.getPlatformMBeanServer().registerMBean(queue, bean);
    }

    @AfterEach
    void unregister() throws Exception {
        if (ManagementFactory.getPlatformMBeanServer().isRegistered(bean)) {
            ManagementFactory.getPlatformMBeanServer().unregisterMBean(bean);
        }
    }

    @Test
    void whileChangesComeItPollsAtOnceEvenOnAnEmptyQueue() throws Exception {
        var gate = new IdleGate(pattern);
        gate.polled(List.of(change()));
        assertThat(millisToAwait(gate)).isLessThan(AT_ONCE_MILLIS);
    }

    @Test
    void quietWithAnEmptyQueueItWaitsUpToItsDeadlineThenPolls() throws Exception {
        var gate = quietGate();
        assertThat(millisToAwait(gate)).isGreaterThanOrEqualTo(DEADLINE_MILLIS).isLessThan(10_000);
    }

    @Test
    void quietItPollsOnceARecordIsQueued() throws Exception {
        var gate = quietGate();
        var waiting = CompletableFuture.runAsync(() -> await(gate));
        Thread.sleep(20);
        queue.queued = 1;
        waiting.get(10, TimeUnit.SECONDS);
        assertThat(millisToAwait(gate)).isLessThan(AT_ONCE_MILLIS);
    }

    @Test
    void aPositionToConfirmIsPolledForAtOnce() throws Exception {
        var gate = quietGate();
        gate.commitRequested();
        assertThat(millisToAwait(gate)).isLessThan(AT_ONCE_MILLIS);
        assertThat(millisToAwait(gate)).as("the request is used up by the poll that follows").isGreaterThanOrEqualTo(DEADLINE_MILLIS);
    }

    @Test
    void heartbeatsKeepTheStreamQuietAndAChangeEndsIt() throws Exception {
        var gate = quietGate();
        gate.polled(List.of(heartbeat(), heartbeat()));
        assertThat(millisToAwait(gate)).isGreaterThanOrEqualTo(DEADLINE_MILLIS);
        gate.polled(List.of(heartbeat(), change()));
        assertThat(millisToAwait(gate)).isLessThan(AT_ONCE_MILLIS);
    }

    @Test
    void withoutTheConnectorsMetricsItNeverWaits() throws Exception {
        unregister();
        var gate = quietGate();
        assertThat(millisToAwait(gate)).isLessThan(AT_ONCE_MILLIS);
        assertThat(millisToAwait(new IdleGate(null))).isLessThan(AT_ONCE_MILLIS);
    }

    public interface CapacityOnlyMXBean {
        int getQueueTotalCapacity();
    }

    /** A connector release whose metrics say how large the queue is but not how full. */
    public static final class CapacityOnly implements CapacityOnlyMXBean {
        @Override
        public int getQueueTotalCapacity() {
            return 8192;
        }
    }

    @Test
    void metricsThatDoNotSayHowFullTheQueueIsMeanPollingAtOnceEveryTime() throws Exception {
        unregister();
        ManagementFactory.getPlatformMBeanServer().registerMBean(new CapacityOnly(), bean);
        var gate = quietGate();
        for (int i = 0; i < 3; i++) {
            assertThat(millisToAwait(gate)).as("wait %d", i).isLessThan(AT_ONCE_MILLIS);
        }
    }

    @Test
    void aPositionToConfirmAskedForDuringTheWaitEndsIt() throws Exception {
        var gate = quietGate();
        long start = System.nanoTime();
        var waiting = CompletableFuture.runAsync(() -> await(gate));
        Thread.sleep(20);
        gate.commitRequested();
        waiting.get(10, TimeUnit.SECONDS);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(AT_ONCE_MILLIS);
        assertThat(millisToAwait(gate)).as("the request is used up by the wait it ended").isGreaterThanOrEqualTo(DEADLINE_MILLIS);
    }

    @Test
    void anInterruptEndsTheWait() throws Exception {
        var gate = quietGate();
        Thread.currentThread().interrupt();
        assertThatThrownBy(gate::awaitWork).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
    }

    private IdleGate quietGate() throws InterruptedException {
        var gate = new IdleGate(pattern);
        Thread.sleep(IdleGate.QUIET_BEFORE_WAITING.plus(Duration.ofMillis(50)).toMillis());
        return gate;
    }

    private static long millisToAwait(IdleGate gate) throws InterruptedException {
        long start = System.nanoTime();
        gate.awaitWork();
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    private static void await(IdleGate gate) {
        try {
            gate.awaitWork();
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static SourceRecord change() {
        Schema value = SchemaBuilder.struct().name("orders.Envelope").field("op", Schema.STRING_SCHEMA).build();
        return new SourceRecord(null, null, "orders", value, new org.apache.kafka.connect.data.Struct(value).put("op", "c"));
    }

    private static SourceRecord heartbeat() {
        Schema value = SchemaBuilder.struct().name(TransactionBoundaries.HEARTBEAT_SCHEMA).field("ts_ms", Schema.INT64_SCHEMA).build();
        return new SourceRecord(null, null, "__debezium-heartbeat.orders", value,
                new org.apache.kafka.connect.data.Struct(value).put("ts_ms", 1L));
    }
}
