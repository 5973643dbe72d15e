package io.outboxrouter.app;

import io.outboxrouter.cdc.CdcEngine;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.KafkaPublisher;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.OutboxBatchHandler;
import io.outboxrouter.routing.OutboxRouting;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The composition root: wires config -> Kafka publisher -> routing -> engine (with its offset store) -> HTTP,
 * with plain constructors, and stops them in the reverse order.
 */
public final class Router implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Router.class);

    private final RouterConfig config;
    private final KafkaPublisher publisher;
    private final CdcEngine engine;
    private final HealthServer http;
    private final RouterMetrics metrics;
    private final SlotMonitor slotMonitor;

    private Router(RouterConfig config, KafkaPublisher publisher, CdcEngine engine, HealthServer http, RouterMetrics metrics,
                   SlotMonitor slotMonitor) {
        this.slotMonitor = slotMonitor;
        this.config = config;
        this.publisher = publisher;
        this.engine = engine;
        this.http = http;
        this.metrics = metrics;
    }

    /** Starts streaming. Fails fast, with the fix in the message, when the source is not set up. */
    public static Router start(RouterConfig config) {
        var publisher = new KafkaPublisher(config.kafka(), config.name(), Duration.ofMillis(200));
        CdcEngine engine = null;
        try {
            var metrics = new RouterMetrics(config.name());
            var routing = new OutboxRouting(config.source().tables(), config.outbox(), config.routing().topic());
            var deadLetters = new DeadLetters(config.routing().deadLetters().topic(), config.outbox().columns());
            var handler = new OutboxBatchHandler(routing, config.routing().deadLetters().policy(), deadLetters, publisher, metrics);
            engine = CdcEngine.start(config, handler);
            var started = engine;
            metrics.streaming(started::isStreaming);
            SlotMonitor slotMonitor = config.source().kind().isBinlog() ? null : new SlotMonitor(config.source(), config.name());
            if (slotMonitor != null) {
                metrics.retainedWal(slotMonitor::retainedBytes);
            }
            HealthServer http = config.http().enabled()
                    ? HealthServer.start(config.http(), config.name(), () -> !started.completion().isDone(), started::isStreaming, metrics)
                    : null;
            LOG.info("Router {} started: {} -> {} (slot {}, topic {}){}", config.name(), config.source().tables(),
                    config.kafka().bootstrapServers(), config.source().postgres().slot(), config.routing().topic(),
                    http == null ? "" : ", health on http://" + config.http().host() + ":" + http.port() + "/health/ready");
            return new Router(config, publisher, engine, http, metrics, slotMonitor);
        } catch (RuntimeException e) {
            if (engine != null) {
                engine.close();
            }
            publisher.close();
            throw e;
        }
    }

    public boolean isStreaming() {
        return engine.isStreaming();
    }

    public boolean awaitStreaming(Duration timeout) throws InterruptedException {
        boolean streaming = engine.awaitStreaming(timeout);
        if (streaming) {
            LOG.info("Router {} is streaming from slot {}", config.name(), config.source().postgres().slot());
        }
        return streaming;
    }

    /** Completes when the engine stops; exceptionally when it failed. */
    public CompletableFuture<Void> completion() {
        return engine.completion();
    }

    public RouterMetrics metrics() {
        return metrics;
    }

    /** Ordered shutdown: engine (stores the last durable offset) -> producer -> HTTP -> slot monitor. */
    @Override
    public void close() {
        LOG.info("Stopping router {}", config.name());
        try {
            engine.close();
        } finally {
            try {
                publisher.close();
            } finally {
                if (http != null) {
                    http.close();
                }
                if (slotMonitor != null) {
                    slotMonitor.close();
                }
            }
        }
        LOG.info("Router {} stopped after publishing {} events ({} dead letters, {} skipped)", config.name(),
                metrics.publishedTotal(), metrics.deadLetteredTotal(), metrics.skippedTotal());
    }
}
