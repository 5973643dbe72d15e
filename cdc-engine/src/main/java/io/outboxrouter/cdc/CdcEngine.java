package io.outboxrouter.cdc;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.engine.spi.OffsetCommitPolicy;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.JdbcOffsetBackingStore;
import io.outboxrouter.offsets.OffsetStoreStats;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
import org.slf4j.MDC;

/**
 * The embedded Debezium engine for one router: reads the replication stream, hands row changes to a
 * {@link ChangeHandler} batch by batch, in source order, and stores the source position only after the handler
 * returned and only at the end of a complete source transaction. What differs per database is in its {@link Source}.
 */
public final class CdcEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CdcEngine.class);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(60);
    /** How long a stop waits for the batch in flight before the engine interrupts it (it is then read again on restart). */
    private static final Duration BATCH_FINISH_TIMEOUT = Duration.ofSeconds(30);
    /** How often a position is stored when no outbox event moved it (heartbeats, other tables' transactions). */
    static final Duration IDLE_STORE_INTERVAL = Duration.ofSeconds(5);

    private final String name;
    private final Source source;
    private final ObjectName streamingMetrics;
    private final DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;
    private final ExecutorService thread;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private final BatchConsumer consumer;
    private final String instance = UUID.randomUUID().toString();

    private CdcEngine(RouterConfig config, Source source, ChangeHandler handler) {
        this.name = config.name();
        this.source = source;
        this.streamingMetrics = source.streamingMetrics(name);
        this.consumer = new BatchConsumer(name, handler, new TransactionBoundaries(name), new ChangeRecords(source::position));
        this.engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(properties(config, source))
                .using(commitPolicy(config.offsets().commitInterval()))
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

    private Properties properties(RouterConfig config, Source source) {
        var p = ConnectorProperties.of(config, source);
        p.setProperty(JdbcOffsetBackingStore.INSTANCE_PROPERTY, instance);
        return p;
    }

    /** What is staged is only ever up to a transaction END whose events Kafka acknowledged; store it at most this often. */
    private static OffsetCommitPolicy commitPolicy(Duration interval) {
        return (sinceLastCommit, timeSinceLastCommit) -> interval.isZero() || timeSinceLastCommit.compareTo(interval) >= 0;
    }

    /**
     * Checks the source database's prerequisites, then starts streaming on a thread of its own.
     *
     * @throws SourceSetupException when the database is not set up for the router; the message names the fix
     */
    public static CdcEngine start(RouterConfig config, Source source, ChangeHandler handler) {
        source.prepare();
        var engine = new CdcEngine(config, source, handler);
        engine.thread.execute(engine.engine);
        return engine;
    }

    /** Whether the connector is connected to the replication stream: only then is a new commit sure to be seen. */
    public boolean isStreaming() {
        try {
            return Boolean.TRUE.equals(ManagementFactory.getPlatformMBeanServer().getAttribute(streamingMetrics, "Connected"));
        } catch (JMException e) {
            return false; // not registered yet
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
        var drain = source.newDrain(consumer.progress);
        consumer.drain = drain;
        completion.whenComplete((v, e) -> drain.cancel());
        try {
            drain.start();
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
     * Stops reading, lets the batch in flight finish (its events acknowledged, its position stored, for up to
     * {@link #BATCH_FINISH_TIMEOUT}), lets the engine store the last durable position, and waits for its thread.
     */
    @Override
    public void close() {
        consumer.stopping = true;
        long deadline = System.nanoTime() + BATCH_FINISH_TIMEOUT.toNanos();
        try {
            while (!consumer.progress.idle() && !completion.isDone() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!completion.isDone()) { // a failed engine has already shut itself down
            try {
                engine.close();
            } catch (IOException | IllegalStateException e) {
                LOG.warn("Engine {} did not close cleanly: {}", name, e.getMessage());
            }
        }
        thread.shutdown();
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

    /** Runs on the engine's thread: the committer is not thread-safe and stays on it. */
    private static final class BatchConsumer implements DebeziumEngine.ChangeConsumer<RecordChangeEvent<SourceRecord>> {
        private final String routerName;
        private final ChangeHandler handler;
        private final TransactionBoundaries boundaries;
        private final ChangeRecords changeRecords;
        private final EngineProgress progress = new EngineProgress();
        private volatile Drain drain;
        /** Set when the engine is closing: batches that arrive now are left for the next start, not begun. */
        private volatile boolean stopping;
        private long lastStored;
        private boolean storedOnce;

        BatchConsumer(String routerName, ChangeHandler handler, TransactionBoundaries boundaries, ChangeRecords changeRecords) {
            this.routerName = routerName;
            this.handler = handler;
            this.boundaries = boundaries;
            this.changeRecords = changeRecords;
        }

        @Override
        public void handleBatch(List<RecordChangeEvent<SourceRecord>> records,
                                DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer) throws InterruptedException {
            if (stopping) {
                return; // nothing is marked processed: read again on the next start
            }
            progress.batchesStarted().incrementAndGet();
            MDC.put("router", routerName); // what the handler logs belongs to this router (its status page lists it)
            var raw = new ArrayList<SourceRecord>(records.size());
            var events = new ArrayList<ChangeEvent>(records.size());
            var pendingDrain = drain;
            int marker = -1;
            for (var r : records) {
                if (pendingDrain != null && marker < 0 && pendingDrain.isMarker(r.record())) {
                    marker = raw.size();
                }
                raw.add(r.record());
                changeRecords.toEvent(r.record()).ifPresent(events::add);
            }
            if (!events.isEmpty()) {
                handle(events);
            }
            int safe = boundaries.lastSafeIndex(raw);
            // A batch with only other tables' transaction markers or heartbeats stores its position at most every
            // IDLE_STORE_INTERVAL: when the offsets live on the source server, each write is itself a transaction the
            // reader sees, and storing it at once would keep the router busy writing about its own writes.
            long now = System.nanoTime();
            boolean prompt = pendingDrain != null && pendingDrain.needsPromptStore();
            if (safe >= 0 && storedOnce && events.isEmpty() && !prompt && now - lastStored < IDLE_STORE_INTERVAL.toNanos()) {
                safe = -1;
            }
            if (safe >= 0) {
                committer.markProcessed(records.get(safe));
                lastStored = now;
                storedOnce = true;
            }
            committer.markBatchFinished();
            if (pendingDrain != null) {
                pendingDrain.batchStored(marker, safe);
            }
            progress.batchesFinished().incrementAndGet();
        }

        /** A failed batch stops the engine without storing its position: it is read again on restart. */
        private void handle(List<ChangeEvent> events) throws InterruptedException {
            try {
                handler.handle(events);
            } catch (InterruptedException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        }

        @Override
        public boolean supportsTombstoneEvents() {
            return false;
        }
    }
}
