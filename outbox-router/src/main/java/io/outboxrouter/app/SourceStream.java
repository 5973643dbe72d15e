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
import io.outboxrouter.publish.OutboxBatchHandler;
import io.outboxrouter.publish.Routings;
import io.outboxrouter.retention.Retention;
import io.outboxrouter.retention.RetentionChecks;
import io.outboxrouter.routing.DeadLetters;
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
 * One replication stream of a router and everything that is its own: the source (a slot, or the binlog), the Kafka
 * producer, routing, metrics, the lock (one process per stream streams, another stands by) and the engine with its
 * offsets. A router runs one; a sharded one runs one per shard ({@link RouterConfig#shardConfigs()}).
 */
final class SourceStream implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SourceStream.class);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(60);

    private final RouterConfig config;
    private final Source source;
    /** Makes a handler with its sink: once for at-least-once; per activation for exactly-once (a producer per take-over). */
    private final java.util.function.Function<EventSink, OutboxBatchHandler> handlers;
    /** The stream's sink; an exactly-once one is replaced at each activation. */
    private volatile EventSink sink;
    private volatile OutboxBatchHandler handler;
    private final RouterMetrics metrics;
    private final ScheduledExecutorService timer;
    private final Leadership<RouterLock> leadership;
    /** When the operator said {@code --accept-gap}; null when not said. */
    private final java.time.Instant acceptGapGivenAt;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private final Optional<SlotMonitor> monitor;
    private final Optional<StatementInsertWatch> statementInserts;
    private final Optional<Retention> retention;
    /** The ids the stream delivered and the self-audit that matches them with the rows committed; empty when it is off. */
    private final io.outboxrouter.audit.DeliveredIds delivered;
    private final Optional<io.outboxrouter.audit.SelfAudit> audit;
    private volatile CdcEngine engine;
    /** Where the handler keeps its parks, written under the activation's fencing token. */
    private final KeptParks parks;
    private volatile boolean activatedBefore;
    private volatile boolean closed;
    /** Written to the log once streaming: how to reach the health endpoint. */
    private volatile String healthUrl = "";

    private SourceStream(RouterConfig config, Source source, java.util.function.Function<EventSink, OutboxBatchHandler> handlers,
                         RouterMetrics metrics, boolean acceptGap) {
        this.config = config;
        this.acceptGapGivenAt = acceptGap ? java.time.Instant.now() : null;
        this.source = source;
        var auditing = config.outbox().audit();
        this.delivered = auditing.enabled() && !config.source().tables().isEmpty()
                ? new io.outboxrouter.audit.DeliveredIds(auditing.interval().toMillis()) : null;
        this.parks = new KeptParks(config);
        // Held events lost from the parking topic stop the stream as a change of the source does, kept for the next start.
        this.handlers = sink -> {
            var h = handlers.apply(sink);
            h.whenParkingLost(problem -> sourceChanged(new io.outboxrouter.cdc.SourceSetupException(problem)));
            h.recordDeliveriesIn(delivered);
            h.keepParksIn(parks);
            return h;
        };
        if (!config.kafka().exactlyOnce()) {
            this.sink = new KafkaPublisher(config.kafka(), config.name(), streamsInProcess(config), Duration.ofMillis(200), metrics);
            this.handler = this.handlers.apply(sink);
        }
        this.metrics = metrics;
        var lockTimer = new ScheduledThreadPoolExecutor(1, r -> {
            var t = new Thread(r, "router-" + config.name());
            t.setDaemon(true);
            return t;
        });
        // On shutdown, a scheduled retry of the lock is dropped; only a task already running is waited for.
        lockTimer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        this.timer = lockTimer;
        this.leadership = Leadership.of(OffsetTableSettings.offsets(config), timer, config.offsets().giveUpAfter());
        this.monitor = source.monitor(this::sourceChanged);
        this.statementInserts = config.source().kind().canLogStatements() ? StatementInsertWatch.attach(config.name(), config.source().tables(),
                problem -> sourceChanged(new io.outboxrouter.cdc.SourceSetupException(problem))) : Optional.empty();
        monitor.ifPresent(m -> metrics.retainedWal(m::retainedBytes));
        metrics.streaming(this::isStreaming);
        metrics.offsetStore(() -> engine == null ? Optional.empty() : engine.offsetStore());
        this.retention = config.outbox().retention().on()
                ? Optional.of(new Retention(config, source.outboxSql(), metrics.retentionListener())) : Optional.empty();
        this.audit = delivered == null ? Optional.empty() : Optional.of(new io.outboxrouter.audit.SelfAudit(config, source.outboxSql(), delivered,
                (table, ids) -> Replay.republish(config, ids, config.outbox().retention().timeColumn(), reason -> LOG.error("Router {}: a lost row cannot be routed: {}", config.name(), reason)),
                (from, earlier, each) -> new Audit(config, earlier).recordedIds(from, each),
                problem -> sourceChanged(new io.outboxrouter.cdc.SourceSetupException(problem))));
        audit.ifPresent(a -> metrics.audit(a::status));
    }

    /** Builds the stream's parts; {@link #start()} then takes its lock (or stands by) and streams. */
    static SourceStream create(RouterConfig config, RouterMetrics metrics, boolean acceptGap) {
        var quiet = config.source().heartbeatTable().map(List::of).orElse(List.of());
        var routing = Routings.of(config, quiet, config.source().messagePrefix().orElse(null));
        var deadLetters = new DeadLetters(config.routing().deadLetters().topic(), config.outbox().columns());
        var parking = new io.outboxrouter.kafka.ParkingTopic(config.kafka(), config.routing().deadLetters().parkingTopic(),
                config.routing().deadLetters().keepEndedParks());
        return new SourceStream(config, Source.of(config),
                sink -> {
                    var handler = new OutboxBatchHandler(routing, config.routing().deadLetters().policy(), deadLetters, sink, metrics,
                            io.outboxrouter.tracing.PublishTracing.of(config), parking, config.name(),
                            new int[] {config.shard().map(io.outboxrouter.config.Shard::index).orElse(0),
                                    config.shard().map(io.outboxrouter.config.Shard::count).orElse(1)});
                    handler.parked().ifPresent(parked -> metrics.parked(() -> parked.get().parked(), () -> parked.get().first().stream()
                            .map(p -> new RouterMetrics.ParkedAggregate(p.aggregate(), p.since(), p.position(), p.reason(), p.held())).toList()));
                    return handler;
                }, metrics,
                acceptGap);
    }

    void start(String healthUrl) {
        this.healthUrl = healthUrl;
        leadership.start(new LeadershipListener());
        // Only while this process streams: a standby deletes nothing, and audits nothing.
        retention.ifPresent(r -> r.start(this::isStreaming));
        audit.ifPresent(a -> a.start(this::isStreaming));
    }

    RouterConfig config() {
        return config;
    }

    RouterMetrics metrics() {
        return metrics;
    }

    Optional<SlotMonitor> monitor() {
        return monitor;
    }

    Optional<Retention> retention() {
        return retention;
    }

    /** What the stream does as its lock comes and goes. */
    private final class LeadershipListener implements Leadership.Listener<RouterLock> {
        /** Holds the lock: takes a new fencing token, checks the source and starts the engine. */
        @Override
        public void activated(RouterLock lock) {
            long fence;
            // One connection pool for everything this activation reads and writes in the table before the engine starts.
            try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
                table.createIfMissing();
                // A write the previous process left open holds the token's row until the database ends its session; the
                // lock is not checked meanwhile, so its own session (MySQL ends idle ones) must not end first.
                stayAlive(lock, RouterLock.longestFencingWaitSeconds());
                try {
                    fence = table.nextFence(config.name());
                } finally {
                    stayAlive(lock, 0);
                }
                parks.fence(fence);
                if (config.kafka().exactlyOnce()) {
                    resumeFromCommitted(table, fence, !activatedBefore && acceptGapGivenAt != null);
                } else if (table.authority(config.name()).filter(OffsetTable.TABLE::equals).isEmpty()) { // once, or after exactly-once
                    // Whatever an offsets topic of an earlier exactly-once run says, from now on this table is the position.
                    table.write(config.name(), java.util.Map.of(OffsetTable.AUTHORITY_KEY, OffsetTable.TABLE), fence);
                }
                if (config.routing().deadLetters().policy() != io.outboxrouter.config.RoutingConfig.DeadLetterPolicy.PARK_AGGREGATE) {
                    KeptParks.refuseUnderAnotherPolicy(config, table, !activatedBefore && acceptGapGivenAt != null);
                }
            }
            if (config.routing().deadLetters().policy() == io.outboxrouter.config.RoutingConfig.DeadLetterPolicy.PARK_AGGREGATE) {
                // The parked aggregates, read before the first event; the lock's session must outlive the retries (MySQL ends
                // sessions that stay silent).
                var patience = config.kafka().giveUpAfter().isZero() ? Duration.ofHours(1) : config.kafka().giveUpAfter().plusMinutes(1);
                stayAlive(lock, (int) Math.min(Integer.MAX_VALUE, patience.toSeconds()));
                try {
                    handler.activate(!activatedBefore && acceptGapGivenAt != null);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while reading the parking topic", e);
                } finally {
                    stayAlive(lock, 0);
                }
            }
            // What outbox.retention needs of the outbox tables, refused before the source is prepared.
            RetentionChecks.refuseUnless(RetentionChecks.checks(config, source.outboxSql()));
            // The audit starts afresh with this stream, from the position it starts at.
            boolean acceptGap = !activatedBefore && acceptGapGivenAt != null;
            audit.ifPresent(a -> a.activated(acceptGap));
            // --accept-gap is for the start it was given to, not for a later take-over.
            var started = CdcEngine.start(config, source, handler, activatedBefore ? null : acceptGapGivenAt, fence);
            activatedBefore = true;
            engine = started;
            monitor.ifPresent(SlotMonitor::watchFromNow); // the publication as the engine starts with it, to tell if it changes
            started.completion().whenComplete((v, e) -> {
                if (engine != started || closed) {
                    return; // stopped because the lock was lost (the stream goes on), or because the router stops
                }
                if (e == null) {
                    completion.complete(null);
                } else {
                    monitor.ifPresent(SlotMonitor::measureNow); // a dropped publication is explained as such, with the fix
                    completion.completeExceptionally(e);
                }
            });
            var prefix = config.source().messagePrefix();
            String from = prefix.isEmpty() ? config.source().tables().toString()
                    : (config.source().tables().isEmpty() ? "" : config.source().tables() + " and ") + "messages with prefix " + prefix.get();
            LOG.info("Router {} started: {} -> {} ({}, topic {}, fencing token {}){}", config.name(), from,
                    config.kafka().bootstrapServers(), source.describe(), config.routing().topic(), fence, healthUrl);
        }

        /** Exactly-once: a new producer and handler for this activation ({@link ExactlyOnceResume}). */
        private void resumeFromCommitted(OffsetTable table, long fence, boolean acceptForeign) {
            var previous = sink;
            if (previous != null) {
                previous.close(); // a batch of the previous activation still under way fails, and cannot touch the new one
            }
            ExactlyOnceResume.resume(config, metrics, table, fence, acceptForeign, shardIndex(), transactional -> {
                sink = transactional;
                var previousHandler = handler;
                if (previousHandler != null) {
                    previousHandler.close();
                }
                handler = handlers.apply(transactional);
            });
        }

        private int shardIndex() {
            return config.shard().map(io.outboxrouter.config.Shard::index).orElse(0);
        }

        /** {@code seconds} 0: back to ending within {@link RouterLock#DEAD_SESSION_SECONDS} when silent. */
        private void stayAlive(RouterLock lock, int seconds) {
            try {
                if (seconds > 0) {
                    lock.stayAliveFor(seconds);
                } else {
                    lock.expireWhenSilent();
                }
            } catch (java.sql.SQLException e) {
                LOG.warn("Router {}: could not set how long the lock's session lives when silent: {}", config.name(), e.getMessage());
            }
        }

        @Override
        public void lost(String why) {
            var h = handler;
            if (h != null) {
                h.close(); // first: a release or batch under way acts on nothing more; the next activation reads the topic again
            }
            monitor.ifPresent(SlotMonitor::stopWatching); // a standby's publication may change under the process that streams
            var stopping = engine;
            engine = null;
            if (stopping != null) {
                stopping.abort();
            }
            if (config.kafka().exactlyOnce() && sink != null) {
                sink.close(); // its open transaction is aborted; the next activation makes a new producer
            }
        }

        @Override
        public void failed(Throwable error) {
            completion.completeExceptionally(error);
        }
    }

    /** The streams of the router in this process (a sharded router's), which share its heap. */
    private static int streamsInProcess(RouterConfig config) {
        return config.source().streamsInProcess();
    }

    /** The source changed under the stream so that it cannot go on (a dropped publication): the router stops, saying how to fix it. */
    private void sourceChanged(io.outboxrouter.cdc.SourceSetupException e) {
        LOG.error("Router {}: {}", config.name(), e.getMessage());
        LostEvents.record(config, e.getMessage());
        completion.completeExceptionally(e);
    }

    RouterState state() {
        return completion.isDone() ? RouterState.STOPPED
                : !isActive() ? ("the database".equals(leadership.waitingFor()) ? RouterState.WAITING : RouterState.STANDBY)
                : isStreaming() ? RouterState.STREAMING : RouterState.CONNECTING;
    }

    /** Whether this process reads the replication stream (from memory: the connector's own state, no query). */
    boolean isStreaming() {
        var e = engine;
        return e != null && !completion.isDone() && e.isStreaming();
    }

    /** Streaming, and the last offset write did not fail. */
    boolean isReady() {
        var e = engine;
        return isStreaming() && e.offsetStore().map(s -> s.consecutiveFailures() == 0).orElse(true)
                && audit.map(a -> !a.foundLoss()).orElse(true);
    }

    String describe() {
        return source.describe() + (config.kafka().exactlyOnce() ? "; exactly-once, positions committed to "
                + config.kafka().offsetsTopic() : "");
    }

    /** Completes once every outbox row committed before this call is published and its position stored. */
    CompletableFuture<Void> drain() {
        var e = engine;
        if (e == null) {
            return CompletableFuture.failedFuture(new IllegalStateException("router " + config.name() + " is not active"));
        }
        return e.drain();
    }

    boolean isActive() {
        return leadership.isActive();
    }

    String waitingFor() {
        return leadership.waitingFor();
    }

    CompletableFuture<Void> completion() {
        return completion;
    }

    /** Ordered shutdown: engine (stores the last durable offset) -> Kafka sink -> lock -> monitor -> timer. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        leadership.stopWatching(); // a lock check must not restart the stream while it stops
        var parked = handler;
        if (parked != null) {
            parked.cancelActivation(); // a parking read under way in an activation gives up: the router stops
        }
        retention.ifPresent(Retention::close); // off the publishing path: stops first, mid-batch if need be
        audit.ifPresent(io.outboxrouter.audit.SelfAudit::close);
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
                var s = sink;
                if (s != null) {
                    s.close();
                }
            } finally {
                var h = handler;
                if (h != null) {
                    h.close();
                }
                leadership.close();
                monitor.ifPresent(SlotMonitor::close);
                statementInserts.ifPresent(StatementInsertWatch::detach);
                timer.shutdownNow();
                completion.complete(null);
            }
        }
    }
}
