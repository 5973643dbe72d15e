package io.outboxrouter.app;

import io.outboxrouter.cdc.CdcEngine;
import io.outboxrouter.cdc.SlotMonitor;
import io.outboxrouter.cdc.Source;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.EventSink;
import io.outboxrouter.kafka.KafkaPublisher;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.RouterLock;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.OutboxBatchHandler;
import io.outboxrouter.routing.OutboxRouting;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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

    private final RouterConfig config;
    private final Source source;
    private final EventSink sink;
    private final OutboxBatchHandler handler;
    private final RouterMetrics metrics;
    private final ScheduledExecutorService timer;
    private final Leadership leadership;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private final CompletableFuture<Void> active = new CompletableFuture<>();
    private volatile CdcEngine engine;
    private volatile boolean closed;
    private Optional<SlotMonitor> monitor = Optional.empty();
    private RecentProblems problems;
    private StatusReport status;
    private HealthServer http;

    private Router(RouterConfig config, Source source, EventSink sink, OutboxBatchHandler handler, RouterMetrics metrics) {
        this.config = config;
        this.source = source;
        this.sink = sink;
        this.handler = handler;
        this.metrics = metrics;
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            var t = new Thread(r, "router-" + config.name());
            t.setDaemon(true);
            return t;
        });
        this.leadership = new Leadership(OffsetTableSettings.offsets(config), timer);
    }

    /**
     * Starts streaming, or, when another process with the same router name holds the lock, stands by and starts as
     * soon as it is released. Fails fast, with the fix in the message, when the source is not set up.
     */
    public static Router start(RouterConfig config) {
        var metrics = new RouterMetrics(config.name());
        var sink = new KafkaPublisher(config.kafka(), config.name(), Duration.ofMillis(200), metrics);
        var routing = new OutboxRouting(config.source().tables(), config.outbox(), config.routing().topic());
        var deadLetters = new DeadLetters(config.routing().deadLetters().topic(), config.outbox().columns());
        var handler = new OutboxBatchHandler(routing, config.routing().deadLetters().policy(), deadLetters, sink, metrics);
        var router = new Router(config, Source.of(config), sink, handler, metrics);
        try {
            router.observe();
            router.leadership.start(router::activate, router.completion::completeExceptionally);
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
            http = HealthServer.start(config.http(), config.name(), () -> !completion.isDone(), this::isStreaming,
                    () -> status.read(state()), metrics);
        }
    }

    /** Holds the lock: checks the source and starts the engine. */
    private void activate(RouterLock lock) {
        var started = CdcEngine.start(config, source, handler);
        this.engine = started;
        started.completion().whenComplete((v, e) -> {
            if (e == null) {
                completion.complete(null);
            } else {
                completion.completeExceptionally(e);
            }
        });
        active.complete(null);
        LOG.info("Router {} started: {} -> {} ({}, topic {}){}", config.name(), config.source().tables(), config.kafka().bootstrapServers(),
                source.describe(), config.routing().topic(),
                http == null ? "" : ", health on http://" + config.http().host() + ":" + http.port() + "/health/ready");
    }

    private RouterState state() {
        return completion.isDone() ? RouterState.STOPPED : !isActive() ? RouterState.STANDBY
                : isStreaming() ? RouterState.STREAMING : RouterState.CONNECTING;
    }

    /** Whether this process reads the replication stream (from memory: the connector's own state, no query). */
    public boolean isStreaming() {
        var e = engine;
        return e != null && !completion.isDone() && e.isStreaming();
    }

    /** Waits until streaming, the router stops, or the timeout; returns whether it is streaming. */
    public boolean awaitStreaming(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            active.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            return false;
        }
        boolean streaming = engine.awaitStreaming(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
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
        try {
            if (engine != null) {
                engine.close();
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
