package io.outboxrouter.app;

import io.outboxrouter.cdc.CdcEngine;
import io.outboxrouter.cdc.SlotMonitor;
import io.outboxrouter.cdc.Source;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.EventSink;
import io.outboxrouter.kafka.KafkaPublisher;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.RouterLock;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.OutboxBatchHandler;
import io.outboxrouter.routing.OutboxRouting;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The composition root: wires config -> metrics -> Kafka sink -> routing -> status and HTTP -> leadership -> engine
 * (with its offset store), with plain constructors, and stops them in the reverse order. One process per router name
 * streams ({@link Leadership}); another started with the same name stands by until the lock is free.
 *
 * <p>One record's way: {@link CdcEngine} (Debezium, source order, per-kind details in {@link Source}) ->
 * {@link OutboxBatchHandler} -> {@link OutboxRouting} (pure: change in, Kafka record or rejection out) ->
 * {@link EventSink} (Kafka acks) -> back in the engine, the position is stored at the last complete transaction.
 */
public final class Router implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Router.class);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(60);

    private final RouterConfig config;
    private final Source source;
    private final EventSink sink;
    private final OutboxBatchHandler handler;
    private final RouterMetrics metrics;
    private final ScheduledExecutorService timer;
    private final Leadership leadership;
    private final boolean acceptGap;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private volatile CdcEngine engine;
    private volatile boolean activatedBefore;
    private volatile boolean closed;
    private Optional<SlotMonitor> monitor = Optional.empty();
    private RecentProblems problems;
    private StatusReport status;
    private HealthServer http;

    private Router(RouterConfig config, Source source, EventSink sink, OutboxBatchHandler handler, RouterMetrics metrics,
                   boolean acceptGap) {
        this.config = config;
        this.acceptGap = acceptGap;
        this.source = source;
        this.sink = sink;
        this.handler = handler;
        this.metrics = metrics;
        var lockTimer = new ScheduledThreadPoolExecutor(1, r -> {
            var t = new Thread(r, "router-" + config.name());
            t.setDaemon(true);
            return t;
        });
        // On shutdown, a scheduled retry of the lock is dropped; only a task already running is waited for.
        lockTimer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        this.timer = lockTimer;
        this.leadership = new Leadership(OffsetTableSettings.offsets(config), timer, config.offsets().giveUpAfter());
    }

    /**
     * Starts streaming, or, when another process with the same router name holds the lock, stands by and starts as
     * soon as it is released. Fails fast, with the fix in the message, when the source is not set up.
     */
    public static Router start(RouterConfig config) {
        return start(config, false);
    }

    /**
     * As {@link #start(RouterConfig)}; with {@code acceptGap}, a stored position that no longer adds up with the source
     * (a dropped slot, deleted offsets, an expired binlog) is forgotten, and what is skipped is logged, instead of refused.
     */
    public static Router start(RouterConfig config, boolean acceptGap) {
        var metrics = new RouterMetrics(config.name());
        var sink = new KafkaPublisher(config.kafka(), config.name(), Duration.ofMillis(200), metrics);
        var pg = config.source().postgres();
        var quiet = !config.source().kind().isBinlog() && pg.heartbeat() ? List.of(pg.heartbeatTable()) : List.<String>of();
        var routing = new OutboxRouting(config.source().tables(), quiet, config.outbox(), config.routing().topic());
        var deadLetters = new DeadLetters(config.routing().deadLetters().topic(), config.outbox().columns());
        var handler = new OutboxBatchHandler(routing, config.routing().deadLetters().policy(), deadLetters, sink, metrics);
        var router = new Router(config, Source.of(config), sink, handler, metrics, acceptGap);
        try {
            router.observe();
            router.leadership.start(router.new LeadershipListener());
            return router;
        } catch (RuntimeException e) {
            router.close();
            throw e;
        }
    }

    /** Metrics, the status report and the HTTP endpoints: up while standing by too. */
    private void observe() {
        monitor = source.monitor();
        monitor.ifPresent(m -> metrics.retainedWal(m::retainedBytes));
        metrics.streaming(this::isStreaming);
        metrics.offsetStore(() -> engine == null ? Optional.empty() : engine.offsetStore());
        problems = RecentProblems.attach(config.name());
        if (config.http().enabled()) {
            status = new StatusReport(config, metrics, monitor, problems);
            http = HealthServer.start(config.http(), config.name(), () -> !completion.isDone(), this::isReady,
                    () -> status.read(state()), metrics);
        }
    }

    /** What the router does as its lock comes and goes. */
    private final class LeadershipListener implements Leadership.Listener {
        /** Holds the lock: takes a new fencing token, checks the source and starts the engine. */
        @Override
        public void activated(RouterLock lock) {
            long fence;
            try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
                table.createIfMissing();
                fence = table.nextFence(config.name());
            }
            // --accept-gap is for the start it was given to, not for a later take-over.
            var started = CdcEngine.start(config, source, handler, acceptGap && !activatedBefore, fence);
            activatedBefore = true;
            engine = started;
            started.completion().whenComplete((v, e) -> {
                if (engine != started || closed) {
                    return; // stopped because the lock was lost (the router goes on), or because the router stops
                }
                if (e == null) {
                    completion.complete(null);
                } else {
                    completion.completeExceptionally(e);
                }
            });
            LOG.info("Router {} started: {} -> {} ({}, topic {}, fencing token {}){}", config.name(), config.source().tables(),
                    config.kafka().bootstrapServers(), source.describe(), config.routing().topic(), fence,
                    http == null ? "" : ", health on http://" + config.http().host() + ":" + http.port() + "/health/ready");
        }

        @Override
        public void lost(String why) {
            var stopping = engine;
            engine = null;
            if (stopping != null) {
                stopping.abort();
            }
        }

        @Override
        public void failed(Throwable error) {
            completion.completeExceptionally(error);
        }
    }

    private RouterState state() {
        return completion.isDone() ? RouterState.STOPPED
                : !isActive() ? ("the database".equals(leadership.waitingFor()) ? RouterState.WAITING : RouterState.STANDBY)
                : isStreaming() ? RouterState.STREAMING : RouterState.CONNECTING;
    }

    /** Whether this process reads the replication stream (from memory: the connector's own state, no query). */
    public boolean isStreaming() {
        var e = engine;
        return e != null && !completion.isDone() && e.isStreaming();
    }

    /**
     * Ready: streaming, and the last offset write did not fail. A router whose position cannot be stored publishes, but a
     * restart would send everything since again and a Postgres slot keeps its WAL: not ready, and it stops after a few.
     */
    public boolean isReady() {
        var e = engine;
        return isStreaming() && e.offsetStore().map(s -> s.consecutiveFailures() == 0).orElse(true);
    }

    /** Waits until streaming, the router stops, or the timeout; returns whether it is streaming. */
    public boolean awaitStreaming(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!isStreaming() && !completion.isDone() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        boolean streaming = isStreaming();
        if (streaming) {
            LOG.info("Router {} is streaming ({})", config.name(), source.describe());
        }
        return streaming;
    }

    /**
     * Completes once every outbox row committed before this call is published and its position stored
     * ({@code run --once}). Call it once streaming.
     */
    public CompletableFuture<Void> drain() {
        var e = engine;
        if (e == null) {
            return CompletableFuture.failedFuture(new IllegalStateException("router " + config.name() + " is not active"));
        }
        return e.drain();
    }

    /** Whether this process holds the router's lock (false while standing by or waiting for the database). */
    public boolean isActive() {
        return leadership.isActive();
    }

    /** While not active, what this process waits for ({@code the database}, {@code the other process}); null while active. */
    public String waitingFor() {
        return leadership.waitingFor();
    }

    /** Completes when the router stops; exceptionally when it failed. */
    public CompletableFuture<Void> completion() {
        return completion;
    }

    public RouterMetrics metrics() {
        return metrics;
    }

    /** Ordered shutdown: engine (stores the last durable offset) -> Kafka sink -> lock -> HTTP and status -> timers. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        LOG.info("Stopping router {}", config.name());
        leadership.stopWatching(); // a lock check must not restart the stream while it stops
        timer.shutdown(); // lets an activation already under way finish, so that its engine is the one closed below
        try {
            if (!timer.awaitTermination(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                LOG.warn("Router {}: the lock timer is still busy after {} s", config.name(), STOP_TIMEOUT.toSeconds());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            var e = engine;
            if (e != null) {
                e.close();
            }
        } finally {
            try {
                sink.close();
            } finally {
                leadership.close();
                if (http != null) {
                    http.close();
                }
                if (status != null) {
                    status.close();
                }
                if (problems != null) {
                    problems.detach();
                }
                monitor.ifPresent(SlotMonitor::close);
                timer.shutdownNow();
                metrics.close();
                completion.complete(null);
            }
        }
        LOG.info("Router {} stopped after publishing {} events ({} dead letters, {} skipped)", config.name(),
                metrics.publishedTotal(), metrics.deadLetteredTotal(), metrics.skippedTotal());
    }
}
