package io.outboxrouter.app;

import io.outboxrouter.cdc.CdcEngine;
import io.outboxrouter.cdc.Source;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.EventSink;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.offsets.RouterLock;
import io.outboxrouter.publish.OutboxBatchHandler;
import io.outboxrouter.routing.OutboxRouting;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The composition root: wires config -> metrics -> one {@link SourceStream} per replication stream (Kafka sink ->
 * routing -> leadership -> engine with its offset store) -> status and HTTP, with plain constructors, and stops them in
 * the reverse order. A router reads one stream; a sharded Postgres router ({@code source.postgres.shards}) one per
 * shard, each with its own slot, offsets, lock and producer, behind one health endpoint, one status page and one set of
 * metrics (labelled by shard). One process per stream streams; another started with the same name stands by.
 *
 * <p>One record's way: {@link CdcEngine} (Debezium, source order, per-kind details in {@link Source}) ->
 * {@link OutboxBatchHandler} -> {@link OutboxRouting} (pure: change in, Kafka record or rejection out) ->
 * {@link EventSink} (Kafka acks) -> back in the engine, the position is stored at the last complete transaction.
 */
public final class Router implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Router.class);

    private final RouterConfig config;
    private final List<SourceStream> streams;
    private final RouterMetrics metrics;
    private final boolean sharded;
    private final CompletableFuture<Void> completion = new CompletableFuture<>();
    private final List<RecentProblems> problems = new ArrayList<>();
    private final List<StatusReport> status = new ArrayList<>();
    private volatile boolean closed;
    private HealthServer http;
    /**
     * A router that runs every shard in one process ({@code shards: N}) holds a lock under its own name too, and starts
     * its shards only with it: two such processes started together would otherwise each take some of the shards' locks,
     * and neither would ever be ready. Null for one stream, and for one shard per process ({@code shard: i/N}).
     */
    private final Leadership<RouterLock> group;
    private final ScheduledThreadPoolExecutor groupTimer;
    private volatile boolean streamsStarted;

    private Router(RouterConfig config, List<SourceStream> streams, RouterMetrics metrics, boolean sharded) {
        this.config = config;
        this.streams = List.copyOf(streams);
        this.metrics = metrics;
        this.sharded = sharded;
        if (streams.size() > 1) {
            groupTimer = new ScheduledThreadPoolExecutor(1, r -> {
                var t = new Thread(r, "router-" + config.name());
                t.setDaemon(true);
                return t;
            });
            groupTimer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
            group = Leadership.of(OffsetTableSettings.offsets(config), groupTimer, config.offsets().giveUpAfter());
        } else {
            groupTimer = null;
            group = null;
        }
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
        LOG.info("Router {} starting: outbox-router {} on {}", config.name(), BuildInfo.current().describe(), JvmSettings.describe());
        boolean sharded = config.source().sharded();
        var metrics = sharded ? RouterMetrics.sharded(config.name()) : new RouterMetrics(config.name());
        var streams = new ArrayList<SourceStream>();
        try {
            for (var c : config.shardConfigs()) {
                streams.add(SourceStream.create(c, sharded ? metrics.shard(c.shard().orElseThrow().index()) : metrics, acceptGap));
            }
        } catch (RuntimeException e) {
            streams.forEach(SourceStream::close);
            metrics.close();
            throw e;
        }
        var router = new Router(config, streams, metrics, sharded);
        try {
            router.observe();
            String health = router.http == null ? ""
                    : ", health on http://" + config.http().host() + ":" + router.http.port() + "/health/ready";
            if (router.group == null) {
                router.startStreams(health);
            } else {
                router.group.start(router.new GroupListener(health));
            }
            return router;
        } catch (RuntimeException e) {
            router.close();
            throw e;
        }
    }

    private synchronized void startStreams(String health) {
        if (streamsStarted || closed) {
            return;
        }
        streamsStarted = true;
        for (var s : streams) {
            s.start(health); // each takes its shard's lock, or stands by for it
        }
    }

    /** The lock under the router's own name, for a process that runs every shard: it starts them all, or stands by. */
    private final class GroupListener implements Leadership.Listener<RouterLock> {
        private final String health;

        GroupListener(String health) {
            this.health = health;
        }

        @Override
        public void activated(RouterLock lock) {
            startStreams(health);
        }

        @Override
        public void lost(String why) {
            // Each shard's own lock fences its stream; this one is taken again, or the router stops (failed).
            LOG.warn("Router {}: {}; its shards keep their own locks", config.name(), why);
        }

        @Override
        public void failed(Throwable error) {
            completion.completeExceptionally(error);
        }
    }

    /** The status reports and the HTTP endpoints (up while standing by too); the router's completion. */
    private void observe() {
        for (var s : streams) {
            var recent = RecentProblems.attach(s.config().name());
            problems.add(recent);
            if (config.http().enabled()) {
                status.add(new StatusReport(s.config(), s.metrics(), s.monitor(), s.retention(), recent));
            }
            s.completion().whenComplete((v, e) -> {
                if (e == null) {
                    completion.complete(null);
                } else {
                    completion.completeExceptionally(e);
                }
            });
        }
        if (config.http().enabled()) {
            http = HealthServer.start(config.http(), config.name(), () -> !completion.isDone(), this::isReady,
                    () -> state() == RouterState.STANDBY, this::statusJson, this::statusPage, metrics);
        }
    }

    private String statusJson() {
        return sharded ? RouterStatus.toJson(config.name(), state(), statuses()) : statuses().get(0).toJson();
    }

    private String statusPage() {
        return sharded ? StatusPage.render(config.name(), state(), statuses()) : StatusPage.render(statuses().get(0));
    }

    private List<RouterStatus> statuses() {
        var list = new ArrayList<RouterStatus>();
        for (int i = 0; i < streams.size(); i++) {
            list.add(status.get(i).read(streamsStarted || group == null ? streams.get(i).state() : state()));
        }
        return list;
    }

    /** The state of the whole router: the furthest from streaming among its streams. */
    private RouterState state() {
        if (completion.isDone()) {
            return RouterState.STOPPED;
        }
        if (group != null && !group.isActive() && !streamsStarted) {
            return "the database".equals(group.waitingFor()) ? RouterState.WAITING : RouterState.STANDBY;
        }
        return streams.stream().map(SourceStream::state).max(Comparator.naturalOrder()).orElse(RouterState.STOPPED);
    }

    /** Whether this process reads every one of its replication streams (from memory, no query). */
    public boolean isStreaming() {
        return !completion.isDone() && streams.stream().allMatch(SourceStream::isStreaming);
    }

    /**
     * Ready: streaming, and the last offset write did not fail, on every stream. A router whose position cannot be
     * stored publishes, but a restart would send everything since again and a Postgres slot keeps its WAL: not ready, and
     * it stops after a few.
     */
    public boolean isReady() {
        return !completion.isDone() && streams.stream().allMatch(SourceStream::isReady);
    }

    /** Waits until streaming, the router stops, or the timeout; returns whether it is streaming. */
    public boolean awaitStreaming(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!isStreaming() && !completion.isDone() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        boolean streaming = isStreaming();
        if (streaming) {
            LOG.info("Router {} is streaming ({})", config.name(),
                    String.join(", ", streams.stream().map(SourceStream::describe).toList()));
        }
        return streaming;
    }

    /**
     * Completes once every outbox row committed before this call is published and its position stored, on every stream
     * ({@code run --once}). Call it once streaming.
     */
    public CompletableFuture<Void> drain() {
        return CompletableFuture.allOf(streams.stream().map(SourceStream::drain).toArray(CompletableFuture[]::new));
    }

    /** Whether this process holds the lock of every one of its streams (false while one stands by or waits for the database). */
    public boolean isActive() {
        return (group == null || group.isActive()) && streams.stream().allMatch(SourceStream::isActive);
    }

    /**
     * While not active, what this process waits for ({@code the database}, {@code the other process}: another process
     * streams one of its streams); null while active.
     */
    public String waitingFor() {
        if (group != null && !group.isActive()) {
            return group.waitingFor();
        }
        var waiting = streams.stream().map(SourceStream::waitingFor).filter(w -> w != null).toList();
        return waiting.isEmpty() ? null : waiting.stream().filter(w -> !"the database".equals(w)).findFirst().orElse(waiting.get(0));
    }

    /** Completes when the router stops; exceptionally when a stream failed. */
    public CompletableFuture<Void> completion() {
        return completion;
    }

    /** The router's metrics; a sharded router's add up its shards'. */
    public RouterMetrics metrics() {
        return metrics;
    }

    /** Ordered shutdown: streams (each stores its last durable offset), at once -> HTTP and status -> metrics. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        LOG.info("Stopping router {}", config.name());
        if (group != null) {
            group.stopWatching();
            groupTimer.shutdown();
            try {
                groupTimer.awaitTermination(60, TimeUnit.SECONDS); // a start of the shards under way finishes first
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            if (streams.size() == 1) {
                streams.get(0).close();
            } else {
                // Each waits up to a few seconds for its batch in flight: in parallel, a stop takes as long as one.
                CompletableFuture.allOf(streams.stream().map(s -> CompletableFuture.runAsync(s::close, r -> {
                    var t = new Thread(r, "stop-" + s.config().name());
                    t.start();
                })).toArray(CompletableFuture[]::new)).join();
            }
        } finally {
            if (group != null) {
                group.close(); // after the shards stopped: a standby takes over only then
                groupTimer.shutdownNow();
            }
            if (http != null) {
                http.close();
            }
            status.forEach(StatusReport::close);
            problems.stream().filter(p -> p != null).forEach(RecentProblems::detach);
            metrics.close();
            completion.complete(null);
        }
        LOG.info("Router {} stopped after publishing {} events ({} dead letters, {} skipped)", config.name(),
                metrics.publishedTotal(), metrics.deadLetteredTotal(), metrics.skippedTotal());
    }
}
