package io.outboxrouter.cdc;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.engine.spi.OffsetCommitPolicy;
import io.outboxrouter.config.RouterConfig;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.management.ObjectName;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded Debezium engine for one router: reads the replication stream, hands row changes to a
 * {@link ChangeHandler} batch by batch, in source order, and stores the source position only after the handler
 * returned and only at the end of a complete source transaction.
 */
public final class CdcEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CdcEngine.class);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(60);
    /** How often a position is stored when no outbox event moved it (heartbeats, other tables' transactions). */
    static final Duration IDLE_STORE_INTERVAL = Duration.ofSeconds(5);

    private final String name;
    private final ObjectName streamingMetrics;
    private final DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;
    private final ExecutorService thread;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private final RouterConfig config;
    private final BatchConsumer consumer;

    private CdcEngine(RouterConfig config, ChangeHandler handler) {
        this.name = config.name();
        this.config = config;
        try {
            String domain = switch (config.source().kind()) {
                case POSTGRES -> "debezium.postgres";
                case MYSQL -> "debezium.mysql";
                case MARIADB -> "debezium.mariadb";
            };
            this.streamingMetrics = new ObjectName(domain + ":type=connector-metrics,context=streaming,server=" + name);
        } catch (javax.management.MalformedObjectNameException e) {
            throw new IllegalArgumentException("router name " + name + " cannot name a metrics bean", e);
        }
        this.consumer = new BatchConsumer(handler, new TransactionBoundaries(name), new ChangeRecords(config.source().kind().isBinlog() ? ChangeRecords::binlogPosition : ChangeRecords::postgresPosition));
        this.engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(ConnectorProperties.of(config))
                // What is staged is only ever up to a transaction END whose events Kafka acknowledged; storing it on
                // every batch would put a database round trip in each batch's path.
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

    private OffsetCommitPolicy commitPolicy(Duration interval) {
        return (sinceLastCommit, timeSinceLastCommit) -> {
            boolean commit = interval.isZero() || timeSinceLastCommit.compareTo(interval) >= 0;
            if (commit && sinceLastCommit > 0) {
                consumer.handler.positionStored();
            }
            return commit;
        };
    }

    /**
     * Checks the source database's prerequisites, then starts streaming on a thread of its own.
     *
     * @throws SourceSetupException when the database is not set up for the router; the message names the fix
     */
    public static CdcEngine start(RouterConfig config, ChangeHandler handler) {
        if (config.source().kind().isBinlog()) {
            BinlogPreflight.run(config.source());
        } else {
            PostgresPreflight.run(config.source());
        }
        var engine = new CdcEngine(config, handler);
        engine.thread.execute(engine.engine);
        return engine;
    }

    /** Every prerequisite of the source database, checked without changing anything (for {@code check}). */
    public static List<Check> checkSource(io.outboxrouter.config.SourceConfig source) {
        return source.kind().isBinlog() ? BinlogPreflight.checks(source) : PostgresPreflight.checks(source);
    }

    /** Whether the connector is connected to the replication stream: only then is a new commit sure to be seen. */
    public boolean isStreaming() {
        try {
            return Boolean.TRUE.equals(ManagementFactory.getPlatformMBeanServer().getAttribute(streamingMetrics, "Connected"));
        } catch (javax.management.JMException e) {
            return false; // not registered yet
        }
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
        var drain = new Drain();
        try {
            if (config.source().kind().isBinlog()) {
                var watch = new Drain.BinlogWatch(Drain.binlogEnd(config.source()), streamingMetrics, consumer.batchesStarted,
                        consumer.batchesFinished);
                var poller = Executors.newSingleThreadScheduledExecutor(r -> {
                    var t = new Thread(r, "drain-" + name);
                    t.setDaemon(true);
                    return t;
                });
                poller.scheduleWithFixedDelay(() -> {
                    if (watch.check()) {
                        drain.done().complete(null);
                    }
                }, 100, 200, TimeUnit.MILLISECONDS);
                drain.done().whenComplete((v, e) -> poller.shutdownNow());
                completion.whenComplete((v, e) -> poller.shutdownNow());
            } else {
                consumer.drain = drain;
                drain.emitPostgresMarker(config.source());
            }
        } catch (java.sql.SQLException e) {
            drain.done().completeExceptionally(new IllegalStateException("cannot mark the end of what to drain: " + e.getMessage(), e));
        }
        return drain.done();
    }

    /** Completes when the engine stops: normally after {@link #close()}, exceptionally when it failed. */
    public CompletableFuture<Void> completion() {
        return completion;
    }

    /** Stops reading, lets the engine store the last durable position, and waits for its thread. */
    @Override
    public void close() {
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
        private final ChangeHandler handler;
        private final TransactionBoundaries boundaries;
        private final ChangeRecords changeRecords;
        private final java.util.concurrent.atomic.AtomicLong batchesStarted = new java.util.concurrent.atomic.AtomicLong();
        private final java.util.concurrent.atomic.AtomicLong batchesFinished = new java.util.concurrent.atomic.AtomicLong();
        private volatile Drain drain;
        private long lastStored;
        private boolean storedOnce;

        BatchConsumer(ChangeHandler handler, TransactionBoundaries boundaries, ChangeRecords changeRecords) {
            this.handler = handler;
            this.boundaries = boundaries;
            this.changeRecords = changeRecords;
        }

        @Override
        public void handleBatch(List<RecordChangeEvent<SourceRecord>> records,
                                DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer) throws InterruptedException {
            batchesStarted.incrementAndGet();
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
                try {
                    handler.handle(events);
                } catch (InterruptedException e) {
                    throw e;
                } catch (RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new IllegalStateException(e.getMessage(), e);
                }
            }
            int safe = boundaries.lastSafeIndex(raw);
            // A batch with only other tables' transaction markers or heartbeats stores its position at most every
            // IDLE_STORE_INTERVAL: when the offsets live on the source server, each write is itself a transaction the
            // reader sees, and storing it at once would keep the router busy writing about its own writes.
            long now = System.nanoTime();
            if (safe >= 0 && storedOnce && events.isEmpty() && pendingDrain == null && now - lastStored < IDLE_STORE_INTERVAL.toNanos()) {
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
            batchesFinished.incrementAndGet();
        }

        @Override
        public boolean supportsTombstoneEvents() {
            return false;
        }
    }
}
