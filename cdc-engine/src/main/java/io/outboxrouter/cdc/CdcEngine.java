package io.outboxrouter.cdc;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.outboxrouter.change.ChangeRecords;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.JdbcOffsetBackingStore;
import io.outboxrouter.offsets.OffsetStoreStats;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.ObjectName;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded Debezium engine for one router: reads the replication stream, hands row changes to a
 * {@link ChangeHandler} batch by batch, in source order, and stores the source position only after the handler
 * returned and only at the end of a complete source transaction. What differs per database is in its {@link Source}.
 */
public final class CdcEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CdcEngine.class);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(60);
    /** How long a stop waits for the engine to store its last position before it stops without it. */
    private static final Duration LAST_STORE_WAIT = Duration.ofSeconds(5);
    /**
     * How long a stop waits for the batch in flight before the engine interrupts it (it is then read again on restart):
     * a batch takes milliseconds, unless Kafka is down, and then a stop should not wait for the outage.
     */
    private static final Duration BATCH_FINISH_TIMEOUT = Duration.ofSeconds(5);
    /** How long a stop waits for the end of a transaction whose events are published: a heartbeat, a batch, and room. */
    private static final Duration TRANSACTION_END_WAIT = PostgresSource.TRANSACTION_END_HEARTBEAT.plusSeconds(1);

    /** The key of the tag each engine's metrics beans carry: the engine's own id. */
    static final String RUN_TAG = "run";
    private static final String CUSTOM_METRIC_TAGS = "custom.metric.tags";

    private final String name;
    private final Source source;
    private final ObjectName streamingMetrics;
    private final DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;
    private final ExecutorService thread;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private final BatchConsumer consumer;
    private final String instance = UUID.randomUUID().toString();
    /**
     * How long a stream with a sub-second heartbeat may hand nothing over and still count as streaming; 0: the
     * connector's own connected flag alone says (its heartbeat is too rare to tell a stalled stream quickly).
     */
    private final long quietAtMostNanos;
    /** This run's streaming metrics bean, once the connector registered it. */
    private volatile ObjectName streamingBean;
    /** Set (under this engine's lock) once the connector runs; until then a stop only interrupts the wait before it. */
    private boolean running;

    private CdcEngine(RouterConfig config, Source source, ChangeHandler handler, long fence) {
        this.name = config.name();
        this.source = source;
        this.streamingMetrics = source.streamingMetrics(name, instance);
        var boundaries = new TransactionBoundaries<>(name, source.boundaries(), RecordChangeEvent<SourceRecord>::record);
        this.consumer = new BatchConsumer(name, handler, boundaries, new ChangeRecords(source::position),
                config.offsets().commitInterval(), this::offsetStore);
        var properties = properties(config, source, fence);
        // Only Postgres's connector beats while nothing is committed; the binlog connector beats only when events come.
        this.quietAtMostNanos = source instanceof PostgresSource
                ? quietAtMost(properties.getProperty("heartbeat.interval.ms"), properties.getProperty("poll.interval.ms")) : 0;
        this.engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(properties)
                .using((sinceLastCommit, timeSinceLastCommit) -> consumer.storeDue())
                .using((success, message, error) -> {
                    if (success) {
                        LOG.info("Engine {} stopped: {}", name, message);
                        completion.complete(null);
                    } else {
                        completion.completeExceptionally(error != null ? error : new IllegalStateException(message));
                    }
                })
                .notifying(consumer)
                .build();
        this.thread = Executors.newSingleThreadExecutor(r -> new Thread(r, "cdc-engine-" + name));
    }

    private Properties properties(RouterConfig config, Source source, long fence) {
        var p = ConnectorProperties.of(config, source);
        // Each engine's metrics beans carry its run: a new engine never waits for an old one's beans to go (the connector
        // retries a taken name for a minute per bean), and the streaming state read here is this engine's.
        String tags = p.getProperty(CUSTOM_METRIC_TAGS, "").trim();
        p.setProperty(CUSTOM_METRIC_TAGS, (tags.isEmpty() ? "" : tags + ",") + RUN_TAG + "=" + instance);
        p.setProperty(JdbcOffsetBackingStore.INSTANCE_PROPERTY, instance);
        p.setProperty(JdbcOffsetBackingStore.FENCE_PROPERTY, Long.toString(fence));
        p.setProperty(QuietConnectors.STREAMING_METRICS_PROPERTY, streamingMetrics.getCanonicalName());
        return p;
    }

    /**
     * Checks the source database's prerequisites and that the stored position still adds up with it, then starts
     * streaming on a thread of its own.
     *
     * @param acceptGapGivenAt when the operator said to start even when the stored position was lost ({@link Drift}): forget it
     *                         and log what is skipped; null when not said
     * @param fence     this process's fencing token ({@code OffsetTable.nextFence}): its offset writes fail once another
     *                  process takes a newer one, and the engine stops
     * @throws SourceSetupException when the database is not set up for the router, or the position drifted; the message
     *                              names the fix
     */
    public static CdcEngine start(RouterConfig config, Source source, ChangeHandler handler, java.time.Instant acceptGapGivenAt,
                                  long fence) {
        source.prepare();
        PositionCheck.verify(config, source, acceptGapGivenAt);
        source.afterPositionCheck();
        var engine = new CdcEngine(config, source, handler, fence);
        engine.thread.execute(engine::run);
        return engine;
    }

    /** On the engine's thread: waits until the stream is free to read (unless stopped meanwhile), then runs the connector. */
    private void run() {
        try {
            runConnector();
        } finally {
            JdbcOffsetBackingStore.forget(instance); // an abort before the store started leaves nothing behind
        }
    }

    private void runConnector() {
        try {
            source.awaitStreamFree(name, () -> consumer.stopping);
        } catch (InterruptedException e) {
            completion.complete(null); // stopped while waiting
            return;
        } catch (RuntimeException e) {
            completion.completeExceptionally(e);
            return;
        }
        synchronized (this) {
            if (consumer.stopping) {
                completion.complete(null);
                return;
            }
            running = true;
        }
        try {
            engine.run();
        } finally {
            unregisterLeftovers();
        }
    }

    /** The metrics beans this engine left registered (its task not stopped in time): this run's only, never another's. */
    private void unregisterLeftovers() {
        var server = ManagementFactory.getPlatformMBeanServer();
        try {
            for (var bean : server.queryNames(new ObjectName("debezium.*:" + RUN_TAG + "=" + instance + ",*"), null)) {
                try {
                    server.unregisterMBean(bean);
                    LOG.debug("Engine {}: unregistered its metrics bean {}, which its task left", name, bean);
                } catch (JMException e) {
                    // gone meanwhile
                }
            }
        } catch (javax.management.MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Whether the stream runs: this engine has not ended, its connector says it is connected (this engine's own bean),
     * and, where the connector beats more than once a second, a batch is in hand or one came within a few beats. Only
     * then is a new commit sure to be seen soon.
     */
    public boolean isStreaming() {
        if (completion.isDone()) {
            return false;
        }
        boolean connected;
        var bean = streamingBean;
        if (bean == null) {
            bean = SourceConnector.registered(streamingMetrics); // found once: a run's bean keeps its name
            streamingBean = bean;
        }
        try {
            connected = bean != null && Boolean.TRUE.equals(ManagementFactory.getPlatformMBeanServer().getAttribute(bean, "Connected"));
        } catch (JMException e) {
            streamingBean = null;
            return false; // unregistered meanwhile
        }
        if (!connected || quietAtMostNanos == 0 || !consumer.progress.idle()) {
            return connected;
        }
        long last = consumer.progress.lastActiveNanos().get();
        return last != 0 && System.nanoTime() - last < quietAtMostNanos;
    }

    /**
     * For a heartbeat of a second or less: eight beats, at least two seconds, and more than the two poll intervals a
     * heartbeat may wait (the log reader sleeps one while the log is quiet, and the queue holds a batch up to one);
     * 0 otherwise.
     */
    static long quietAtMost(String heartbeatMillis, String pollIntervalMillis) {
        long every = millis(heartbeatMillis);
        if (every <= 0 || every > 1_000) {
            return 0;
        }
        long poll = Math.max(0, millis(pollIntervalMillis));
        return TimeUnit.MILLISECONDS.toNanos(Math.max(Math.max(2_000, every * 8), 2 * poll + every + 1_000));
    }

    private static long millis(String value) {
        try {
            return value == null ? 0 : Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /**
     * This engine's offset store, while it runs: positions stored (only ever after Kafka acknowledged their events, at a
     * transaction boundary), failed writes, retries.
     */
    public Optional<OffsetStoreStats.Snapshot> offsetStore() {
        return OffsetStoreStats.lookup(name, instance);
    }

    /** Waits until streaming, the engine stops, or the timeout; returns whether it is streaming. */
    public boolean awaitStreaming(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline && !completion.isDone()) {
            if (isStreaming()) {
                return true;
            }
            Thread.sleep(20);
        }
        return isStreaming();
    }

    /**
     * Completes once everything committed on the source before this call has been handed to the handler, acknowledged
     * and its position stored (for {@code run --once}). Call it once streaming.
     */
    public CompletableFuture<Void> drain() {
        var drain = source.newDrain(consumer.progress, streamingMetrics);
        consumer.drain = drain;
        completion.whenComplete((v, e) -> drain.cancel());
        try {
            drain.start();
        } catch (SourceSetupException e) {
            drain.done().completeExceptionally(e);
        } catch (SQLException e) {
            drain.done().completeExceptionally(new IllegalStateException("cannot mark the end of what to drain: " + e.getMessage(), e));
        }
        return drain.done();
    }

    /** Completes when the engine stops: normally after {@link #close()}, exceptionally when it failed. */
    public CompletableFuture<Void> completion() {
        return completion;
    }

    /**
     * Gives the end of a transaction whose events are published a moment to be read (up to {@link #TRANSACTION_END_WAIT}),
     * stops reading, lets the batch in flight finish (its events acknowledged, its position stored, for up to
     * {@link #BATCH_FINISH_TIMEOUT}), lets the engine store the last durable position, and waits for its thread.
     */
    @Override
    public void close() {
        try {
            // Events published whose transaction's end is not read yet (on Postgres, without transaction metadata, the
            // next record or the connector's heartbeat tells it): wait a moment, or a restart sends them again.
            long endDeadline = System.nanoTime() + TRANSACTION_END_WAIT.toNanos();
            while (consumer.unstoredEvents() && isStreaming() && !completion.isDone() && System.nanoTime() < endDeadline) {
                Thread.sleep(10);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        consumer.stopping = true;
        long deadline = System.nanoTime() + BATCH_FINISH_TIMEOUT.toNanos();
        try {
            while (!consumer.progress.idle() && !completion.isDone() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // The engine stores its last position as it stops: given a moment, then given up (the offsets database may be
        // down), so that a stop fits a supervisor's grace period. What is not stored is read again at the next start.
        var stopped = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.CompletableFuture.delayedExecutor(LAST_STORE_WAIT.toMillis(), TimeUnit.MILLISECONDS).execute(() -> {
            if (!stopped.get()) {
                LOG.warn("Engine {}: its last position was not stored within {} s; stopping without it (what it published is read "
                        + "again at the next start)", name, LAST_STORE_WAIT.toSeconds());
                JdbcOffsetBackingStore.abandon(instance);
            }
        });
        try {
            stop();
        } finally {
            stopped.set(true);
        }
    }

    /**
     * Stops at once, without waiting for the batch in flight (it is read again by whoever streams next): for a process
     * that lost the router's lock and must not go on publishing.
     */
    public void abort() {
        consumer.stopping = true;
        if (!completion.isDone()) {
            JdbcOffsetBackingStore.abandon(instance);
        }
        stop();
    }

    private void stop() {
        boolean started;
        synchronized (this) { // with stopping set, run() no longer starts the connector once this says it has not
            started = running;
        }
        if (!started) { // still waiting for the stream to be free
            thread.shutdownNow();
            awaitThread();
            completion.complete(null);
            return;
        }
        if (!completion.isDone()) { // a failed engine has already shut itself down
            try {
                engine.close();
            } catch (IllegalStateException e) {
                if (String.valueOf(e.getMessage()).contains("tasks are starting")) {
                    // Debezium refuses to close while its task starts, which can take long (a connector retrying its
                    // connection): interrupt the start instead, which closes the engine too.
                    LOG.info("Engine {} is still starting; interrupting its start", name);
                    thread.shutdownNow();
                } else {
                    LOG.debug("Engine {} is already stopping: {}", name, e.getMessage()); // it failed on its own meanwhile
                }
            } catch (IOException e) {
                LOG.warn("Engine {} did not close cleanly: {}", name, e.getMessage());
            }
        }
        thread.shutdown();
        awaitThread();
    }

    private void awaitThread() {
        try {
            if (!thread.awaitTermination(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                LOG.warn("Engine {} still running after {} s; interrupting it", name, STOP_TIMEOUT.toSeconds());
                thread.shutdownNow();
            }
        } catch (InterruptedException e) {
            thread.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
