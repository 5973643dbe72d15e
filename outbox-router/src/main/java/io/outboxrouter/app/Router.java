package io.outboxrouter.app;

import io.outboxrouter.cdc.CdcEngine;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.KafkaPublisher;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.OutboxBatchHandler;
import io.outboxrouter.routing.OutboxRouting;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.RouterLock;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The composition root: wires config -> Kafka publisher -> routing -> HTTP -> router lock -> engine (with its offset
 * store), with plain constructors, and stops them in the reverse order. One process per router name streams; another
 * started with the same name stands by until the lock is free.
 */
public final class Router implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Router.class);
    private static final Duration STANDBY_POLL = Duration.ofSeconds(1);
    private static final Duration LOCK_CHECK = Duration.ofSeconds(5);

    private final RouterConfig config;
    private final KafkaPublisher publisher;
    private final OutboxBatchHandler handler;
    private final RouterMetrics metrics;
    private final ScheduledExecutorService timer;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private final CompletableFuture<Void> active = new CompletableFuture<>();
    private volatile CdcEngine engine;
    private volatile RouterLock lock;
    private volatile boolean closed;
    private final java.time.Instant startedAt = java.time.Instant.now();
    private HealthServer http;
    private SlotMonitor slotMonitor;
    private ProblemLog problems;
    private OffsetTable statusOffsets;

    private Router(RouterConfig config, KafkaPublisher publisher, OutboxBatchHandler handler, RouterMetrics metrics) {
        this.config = config;
        this.publisher = publisher;
        this.handler = handler;
        this.metrics = metrics;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            var t = new Thread(r, "router-" + config.name());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Starts streaming, or, when another process with the same router name holds the lock, stands by and starts as
     * soon as it is released. Fails fast, with the fix in the message, when the source is not set up.
     */
    public static Router start(RouterConfig config) {
        var publisher = new KafkaPublisher(config.kafka(), config.name(), Duration.ofMillis(200));
        var metrics = new RouterMetrics(config.name());
        var routing = new OutboxRouting(config.source().tables(), config.outbox(), config.routing().topic());
        var deadLetters = new DeadLetters(config.routing().deadLetters().topic(), config.outbox().columns());
        var handler = new OutboxBatchHandler(routing, config.routing().deadLetters().policy(), deadLetters, publisher, metrics);
        var router = new Router(config, publisher, handler, metrics);
        try {
            router.startHttp();
            var lock = router.tryLock();
            if (lock.isPresent()) {
                router.activate(lock.get());
            } else {
                LOG.info("Another process runs {}: standing by until it stops", RouterLock.describe(OffsetTableSettings.offsets(config)));
                router.timer.schedule(router::standBy, STANDBY_POLL.toMillis(), TimeUnit.MILLISECONDS);
            }
            return router;
        } catch (RuntimeException e) {
            router.close();
            throw e;
        }
    }

    private void startHttp() {
        if (config.source().kind().isBinlog()) {
            slotMonitor = null;
        } else {
            slotMonitor = new SlotMonitor(config.source(), config.name());
            metrics.retainedWal(slotMonitor::retainedBytes);
        }
        metrics.streaming(this::isStreaming);
        problems = ProblemLog.attach(metrics);
        if (config.http().enabled()) {
            var s = OffsetTableSettings.offsets(config);
            // The status page must answer quickly during an outage: a short retry budget, not the engine's 30 s.
            statusOffsets = OffsetTable.open(new OffsetTableSettings(s.routerName(), s.url(), s.user(), s.password(), s.table(),
                    new io.outboxrouter.retry.Retry(Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(2))));
            http = HealthServer.start(config.http(), config.name(), () -> !completion.isDone(), this::status, metrics);
        }
    }

    private Optional<RouterLock> tryLock() {
        try {
            return RouterLock.tryAcquire(OffsetTableSettings.offsets(config));
        } catch (SQLException e) {
            throw new IllegalStateException("cannot take the lock of " + RouterLock.describe(OffsetTableSettings.offsets(config))
                    + ": " + e.getMessage() + " (offsets.connection, or the source's connection when that is not set)", e);
        }
    }

    /** Holds the lock: checks the source, starts the engine and watches the lock's session. */
    private void activate(RouterLock acquired) {
        this.lock = acquired;
        var started = CdcEngine.start(config, handler);
        this.engine = started;
        started.completion().whenComplete((v, e) -> {
            if (e == null) {
                completion.complete(null);
            } else {
                completion.completeExceptionally(e);
            }
        });
        timer.scheduleWithFixedDelay(this::checkLock, LOCK_CHECK.toMillis(), LOCK_CHECK.toMillis(), TimeUnit.MILLISECONDS);
        active.complete(null);
        LOG.info("Router {} started: {} -> {} ({}, topic {}){}", config.name(), config.source().tables(), config.kafka().bootstrapServers(),
                config.source().kind().isBinlog() ? "binlog" : "slot " + config.source().postgres().slot(), config.routing().topic(),
                http == null ? "" : ", health on http://" + config.http().host() + ":" + http.port() + "/health/ready");
    }

    private void standBy() {
        if (closed || completion.isDone()) {
            return;
        }
        Optional<RouterLock> acquired;
        try {
            acquired = tryLock();
        } catch (RuntimeException e) {
            LOG.warn("Router {} standing by: {}", config.name(), e.getMessage());
            acquired = Optional.empty();
        }
        if (acquired.isEmpty()) {
            timer.schedule(this::standBy, STANDBY_POLL.toMillis(), TimeUnit.MILLISECONDS);
            return;
        }
        LOG.info("Router {}: the lock is free, taking over", config.name());
        synchronized (this) {
            if (closed) {
                acquired.get().close();
                return;
            }
            try {
                activate(acquired.get());
            } catch (RuntimeException e) {
                // A setup error stops a standby as it stops a router at start.
                lock = null;
                acquired.get().close();
                completion.completeExceptionally(e);
            }
        }
    }

    /** Without the lock a standby may already be streaming: stop rather than publish twice. */
    private void checkLock() {
        var held = lock;
        if (held != null && !closed && !held.isHeld()) {
            completion.completeExceptionally(new IllegalStateException("lost the lock of " + held.description()
                    + ": its database session ended. Stopping so that only one process streams; start it again"));
        }
    }

    /** A snapshot for {@code /status} and the status page. */
    RouterStatus status() {
        String state = completion.isDone() ? "stopped" : !isActive() ? "standby" : isStreaming() ? "streaming" : "connecting";
        java.util.Map<String, String> offsets = java.util.Map.of();
        String offsetsError = null;
        if (statusOffsets != null) {
            try {
                offsets = statusOffsets.read(config.name());
            } catch (RuntimeException e) {
                offsetsError = "cannot read " + config.offsets().table() + ": " + e.getMessage();
            }
        }
        String source = config.source().kind().toString().toLowerCase() + " " + config.source().connection().url().replaceAll("\\?.*", "")
                + " " + config.source().tables();
        return new RouterStatus(config.name(), state, source, startedAt, metrics.publishedTotal(), metrics.deadLetteredTotal(),
                metrics.skippedTotal(), metrics.retriesTotal(), metrics.lastOffsetStored(), offsets, offsetsError,
                slotMonitor == null ? null : slotMonitor.state(), problems == null ? java.util.List.of() : problems.recent(),
                metrics.publishedPerMinute());
    }

    public boolean isStreaming() {
        var e = engine;
        return e != null && e.isStreaming();
    }

    /** Waits until streaming, the router stops, or the timeout; returns whether it is streaming. */
    public boolean awaitStreaming(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            active.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
            return false;
        }
        boolean streaming = engine.awaitStreaming(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
        if (streaming) {
            LOG.info("Router {} is streaming ({})", config.name(),
                    config.source().kind().isBinlog() ? "binlog" : "slot " + config.source().postgres().slot());
        }
        return streaming;
    }

    /**
     * Completes once every outbox row committed before this call is published and its position stored
     * ({@code run --once}). Call it once streaming.
     */
    public CompletableFuture<Void> drain() {
        if (engine == null) {
            return CompletableFuture.failedFuture(new IllegalStateException("router " + config.name() + " is not active"));
        }
        return engine.drain();
    }

    /** Whether this process holds the router's lock (false while standing by). */
    public boolean isActive() {
        return active.isDone();
    }

    /** Completes when the router stops; exceptionally when it failed. */
    public CompletableFuture<Void> completion() {
        return completion;
    }

    public RouterMetrics metrics() {
        return metrics;
    }

    /** Ordered shutdown: engine (stores the last durable offset) -> producer -> lock -> HTTP -> timers. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        LOG.info("Stopping router {}", config.name());
        try {
            if (engine != null) {
                engine.close();
            }
        } finally {
            try {
                publisher.close();
            } finally {
                if (lock != null) {
                    lock.close();
                }
                if (http != null) {
                    http.close();
                }
                if (statusOffsets != null) {
                    statusOffsets.close();
                }
                if (problems != null) {
                    problems.detach();
                }
                if (slotMonitor != null) {
                    slotMonitor.close();
                }
                timer.shutdownNow();
                completion.complete(null);
            }
        }
        LOG.info("Router {} stopped after publishing {} events ({} dead letters, {} skipped)", config.name(),
                metrics.publishedTotal(), metrics.deadLetteredTotal(), metrics.skippedTotal());
    }
}
