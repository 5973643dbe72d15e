package io.outboxrouter.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.outboxrouter.offsets.OffsetStoreStats;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * The router's metrics, in one Prometheus registry: events per topic, dead letters per reason, skipped rows, batch
 * sizes, publish time, commit-to-ack latency, source lag, retries, offset writes and their age, log events by level,
 * streaming. Fed as a {@link RouterListener} by the engine's thread; read by the HTTP threads.
 */
public final class RouterMetrics implements RouterListener, AutoCloseable {
    private static final String RETRIES = "outbox.router.retries";

    private final PrometheusMeterRegistry prometheus;
    /** Where this router's (or this shard's) meters are registered: the Prometheus registry, or a shard's view of it. */
    private final MeterRegistry registry;
    private final DistributionSummary batchSize;
    private final Timer publishTime;
    private final Timer commitToAck;
    private final AtomicReference<Instant> lastCommitTime = new AtomicReference<>();
    private final ConcurrentHashMap<String, Counter> publishedByTopic = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, AtomicLong> retentionOldest = new ConcurrentHashMap<>();
    private volatile Supplier<io.outboxrouter.audit.SelfAudit.Status> audit;
    private final ConcurrentHashMap<String, AtomicLong> retries = new ConcurrentHashMap<>();
    private final Throughput throughput = new Throughput(Clock.systemUTC());
    private final LogEventCounter logEvents;
    /** A sharded router's: one per shard, whose meters carry a {@code shard} label; empty otherwise. */
    private final List<RouterMetrics> shards = new CopyOnWriteArrayList<>();
    private volatile Supplier<Optional<OffsetStoreStats.Snapshot>> offsetStore = Optional::empty;

    public RouterMetrics(String routerName) {
        this(newRegistry(routerName), null, true);
    }

    /**
     * The metrics of a sharded router: the log events of the process, and one set of the router's meters per shard
     * ({@link #shard}), all in one registry under the router's name; the totals add the shards up.
     */
    public static RouterMetrics sharded(String routerName) {
        return new RouterMetrics(newRegistry(routerName), null, false);
    }

    private static PrometheusMeterRegistry newRegistry(String routerName) {
        var registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("router", routerName);
        return registry;
    }

    /**
     * @param shardView   a shard's view of {@code prometheus} (its meters labelled with the shard), or null: its own meters
     * @param routerMeters whether to register the meters of one stream (not for a sharded router's parent)
     */
    private RouterMetrics(PrometheusMeterRegistry prometheus, MeterRegistry shardView, boolean routerMeters) {
        this.prometheus = prometheus;
        this.registry = shardView != null ? shardView : prometheus;
        if (!routerMeters) {
            batchSize = null;
            publishTime = null;
            commitToAck = null;
            logEvents = LogEventCounter.bindTo(prometheus);
            return;
        }
        batchSize = DistributionSummary.builder("outbox.router.batch.size").description("records (events and dead letters) per engine batch; per Kafka transaction under exactly-once")
                .publishPercentileHistogram().register(registry);
        publishTime = Timer.builder("outbox.router.publish").description("time from sending a batch to Kafka to its last ack")
                .publishPercentileHistogram().register(registry);
        commitToAck = Timer.builder("outbox.router.commit.to.ack")
                .description("time from the source transaction's COMMIT to Kafka's ack of its event")
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(5))
                .register(registry);
        Gauge.builder("outbox.router.source.lag.seconds", this, m -> ageSeconds(m.lastCommitTime.get()))
                .description("age of the last published event's source COMMIT (NaN before the first)").strongReference(true).register(registry);
        // Warnings and errors of every component (Debezium's and Kafka's included), by level: logback_events_total.
        logEvents = shardView == null ? LogEventCounter.bindTo(registry) : null;
    }

    private final java.util.concurrent.atomic.AtomicReference<java.util.function.IntSupplier> parkedCount = new java.util.concurrent.atomic.AtomicReference<>();
    private final java.util.concurrent.atomic.AtomicReference<Supplier<List<ParkedAggregate>>> parkedList = new java.util.concurrent.atomic.AtomicReference<>();

    /** The meters of one shard of a {@link #sharded} router, in its registry, labelled {@code shard="index"}. */
    public RouterMetrics shard(int index) {
        var view = new CompositeMeterRegistry();
        view.config().commonTags("shard", Integer.toString(index));
        view.add(prometheus);
        var shard = new RouterMetrics(prometheus, view, true);
        shards.add(shard);
        return shard;
    }

    /**
     * Registers the offset store's counters, read from the running engine's store (empty while there is none): the age
     * of the last stored position, failed writes, and its retries under {@code outbox_router_retries_total}.
     */
    public void offsetStore(Supplier<Optional<OffsetStoreStats.Snapshot>> store) {
        this.offsetStore = store;
        Gauge.builder("outbox.router.offset.age.seconds", store, s -> ageSeconds(s.get().map(OffsetStoreStats.Snapshot::lastStored).orElse(null)))
                .description("time since the router last stored its source position (NaN before the first)").strongReference(true)
                .register(registry);
        FunctionCounter.builder("outbox.router.offset.writes.failed", store, s -> read(s, OffsetStoreStats.Snapshot::failed))
                .description("offset writes that failed after their retry budget").register(registry);
        FunctionCounter.builder(RETRIES, store, s -> read(s, OffsetStoreStats.Snapshot::retries))
                .description("failed attempts retried with backoff, by operation").tag("operation", "offset_store").register(registry);
    }

    /** Registers the WAL a Postgres slot retains, as last measured (negative until the first measurement). */
    public void retainedWal(LongSupplier bytes) {
        Gauge.builder("outbox.router.slot.retained.wal.bytes", bytes, b -> b.getAsLong() < 0 ? Double.NaN : b.getAsLong())
                .description("WAL the replication slot keeps on the server (Postgres), measured every 15 s")
                .strongReference(true).register(registry);
    }

    /** Registers what the self-audit knows: rows matched, lost, published again, and those waiting for the stream. */
    public void audit(Supplier<io.outboxrouter.audit.SelfAudit.Status> status) {
        this.audit = status;
        FunctionCounter.builder("outbox.router.audit.matched.rows", status, s -> s.get().matched())
                .description("outbox rows the self-audit matched with an event the stream delivered (or a record in Kafka)").register(registry);
        FunctionCounter.builder("outbox.router.audit.lost.rows", status, s -> s.get().lost())
                .description("outbox rows that committed and that the stream passed without delivering, found by the self-audit")
                .register(registry);
        FunctionCounter.builder("outbox.router.audit.replayed.rows", status, s -> s.get().replayed())
                .description("records of lost rows published again by the self-audit (outbox.audit.on-loss: replay)").register(registry);
        Gauge.builder("outbox.router.audit.waiting.rows", status, s -> s.get().waiting())
                .description("outbox rows the self-audit read that the stream has not delivered yet").strongReference(true).register(registry);
        Gauge.builder("outbox.router.audit.oldest.waiting.age.seconds", status,
                        s -> s.get().oldestWaiting() == null ? 0 : s.get().oldestWaiting().toMillis() / 1000.0)
                .description("age of the oldest outbox row the stream has not delivered yet, as the self-audit last looked (0: none)")
                .strongReference(true).register(registry);
        Gauge.builder("outbox.router.audit.blind.tables", status, s -> s.get().blind().size())
                .description("outbox tables the self-audit cannot read (no time column)").strongReference(true).register(registry);
    }

    /** What the self-audit knows, or null when it is off. */
    public io.outboxrouter.audit.SelfAudit.Status auditStatus() {
        var a = audit;
        return a == null ? null : a.get();
    }

    /** Registers the streaming state. */
    public void streaming(BooleanSupplier streaming) {
        Gauge.builder("outbox.router.streaming", streaming, s -> s.getAsBoolean() ? 1 : 0)
                .description("1 while connected to the source's replication stream")
                // Micrometer holds gauge state weakly; a method reference would be collected and read NaN.
                .strongReference(true).register(registry);
    }

    @Override
    public void published(String topic, Instant commitTime, Instant ackTime) {
        // Looked up once per topic: building and registering a meter per event would cost the engine thread on every event.
        publishedByTopic.computeIfAbsent(topic, t -> Counter.builder("outbox.router.events.published").tag("topic", t).register(registry))
                .increment();
        throughput.add(1);
        if (commitTime != null) {
            var latency = Duration.between(commitTime, ackTime);
            commitToAck.record(latency.isNegative() ? Duration.ZERO : latency);
            lastCommitTime.accumulateAndGet(commitTime, (a, b) -> a == null || b.isAfter(a) ? b : a);
        }
    }

    /** A parked aggregate as the status page shows it. */
    public record ParkedAggregate(String aggregate, Instant since, String position, String reason, long held) {
    }

    /**
     * The parked aggregates ({@code park-aggregate}): how many, and the oldest first (at most a few). Each activation's
     * handler gives its own; the gauges and the status page read the latest.
     */
    public void parked(java.util.function.IntSupplier count, Supplier<List<ParkedAggregate>> oldestFirst) {
        boolean first = parkedCount.getAndSet(count) == null;
        parkedList.set(oldestFirst);
        if (first) {
            Gauge.builder("outbox.router.parked.aggregates", parkedCount, c -> c.get().getAsInt())
                    .description("aggregates parked: their events are held until released").strongReference(true).register(registry);
            Gauge.builder("outbox.router.parked.oldest.age.seconds", parkedList,
                            l -> ageSeconds(l.get().get().isEmpty() ? null : l.get().get().get(0).since()))
                    .description("age of the oldest park (NaN when none)").strongReference(true).register(registry);
        }
    }

    /** How many aggregates are parked (0 when the policy does not park), and the oldest of them. */
    public int parkedCount() {
        var c = parkedCount.get();
        return shards.isEmpty() ? (c == null ? 0 : c.getAsInt()) : shards.stream().mapToInt(RouterMetrics::parkedCount).sum();
    }

    public List<ParkedAggregate> parkedOldestFirst() {
        var l = parkedList.get();
        return l == null ? List.of() : l.get();
    }

    @Override
    public void held() {
        Counter.builder("outbox.router.held.events").description("events of parked aggregates held on the parking topic")
                .register(registry).increment();
    }

    @Override
    public void released() {
        Counter.builder("outbox.router.released.events").description("held events published by a release")
                .register(registry).increment();
    }

    @Override
    public void deadLettered(String reason) {
        Counter.builder("outbox.router.dead.letters").tag("reason", reason).register(registry).increment();
    }

    @Override
    public void skipped(String reason) {
        Counter.builder("outbox.router.skipped").tag("reason", reason).register(registry).increment();
    }

    @Override
    public void unrouted(String table) {
        Counter.builder("outbox.router.unrouted.changes").description("changes from captured tables that are not routed outbox tables")
                .tag("table", table).register(registry).increment();
    }

    @Override
    public void batchPublished(int records, Duration took) {
        batchSize.record(records);
        publishTime.record(took);
    }

    /** What outbox retention reports, counted here. */
    public io.outboxrouter.retention.Retention.Listener retentionListener() {
        return new io.outboxrouter.retention.Retention.Listener() {
            @Override
            public void deleted(String table, int rows) {
                retentionDeleted(table, rows);
            }

            @Override
            public void oldest(String table, Duration age) {
                retentionOldest(table, age);
            }
        };
    }

    /** Outbox retention: rows deleted, by table. */
    public void retentionDeleted(String table, int rows) {
        Counter.builder("outbox.router.retention.deleted.rows").description("published outbox rows deleted by outbox.retention")
                .tag("table", table).register(registry).increment(rows);
    }

    /** Outbox retention: the age of the oldest row kept, by table (NaN for an empty table). */
    public void retentionOldest(String table, Duration age) {
        retentionOldest.computeIfAbsent(table, t -> {
            var holder = new AtomicLong(-1);
            Gauge.builder("outbox.router.retention.oldest.row.age.seconds", holder, h -> h.get() < 0 ? Double.NaN : h.get() / 1000.0)
                    .description("age of the oldest outbox row kept, measured by outbox.retention").tag("table", t).register(registry);
            return holder;
        }).set(age == null ? -1 : age.toMillis());
    }

    @Override
    public void kafkaTransaction(boolean committed) {
        Counter.builder("outbox.router.kafka.transactions").description("exactly-once: Kafka transactions, by outcome")
                .tag("outcome", committed ? "committed" : "aborted").register(registry).increment();
    }

    @Override
    public void retrying(String operation, Throwable cause) {
        retries.computeIfAbsent(operation, op -> {
            var count = new AtomicLong();
            FunctionCounter.builder(RETRIES, count, AtomicLong::doubleValue).description("failed attempts retried with backoff, by operation")
                    .tag("operation", op).register(registry);
            return count;
        }).incrementAndGet();
    }

    public long retriesTotal() {
        return shards.isEmpty() ? (long) registry.find(RETRIES).functionCounters().stream().mapToDouble(FunctionCounter::count).sum()
                : shards.stream().mapToLong(RouterMetrics::retriesTotal).sum();
    }

    public long publishedTotal() {
        return shards.isEmpty() ? count("outbox.router.events.published") : shards.stream().mapToLong(RouterMetrics::publishedTotal).sum();
    }

    public long deadLetteredTotal() {
        return shards.isEmpty() ? count("outbox.router.dead.letters") : shards.stream().mapToLong(RouterMetrics::deadLetteredTotal).sum();
    }

    public long skippedTotal() {
        return shards.isEmpty() ? count("outbox.router.skipped") : shards.stream().mapToLong(RouterMetrics::skippedTotal).sum();
    }

    /** Exactly-once: Kafka transactions aborted (each sent again in a new one, or dropped on a stop). */
    public long kafkaTransactionsAborted() {
        return shards.isEmpty() ? (long) registry.find("outbox.router.kafka.transactions").tag("outcome", "aborted").counters().stream()
                .mapToDouble(Counter::count).sum() : shards.stream().mapToLong(RouterMetrics::kafkaTransactionsAborted).sum();
    }

    private long count(String counter) {
        return (long) registry.find(counter).counters().stream().mapToDouble(Counter::count).sum();
    }

    /** Events published per minute over the last hour, oldest first. */
    public long[] publishedPerMinute() {
        return throughput.perMinute();
    }

    /**
     * When the offset store last stored a position (only ever after Kafka acknowledged its events); null before the first.
     * A sharded router's: the longest ago among its shards (null until every shard stored one).
     */
    public Instant lastOffsetStored() {
        if (!shards.isEmpty()) {
            var each = shards.stream().map(RouterMetrics::lastOffsetStored).toList();
            return each.contains(null) ? null : each.stream().min(Instant::compareTo).orElse(null);
        }
        return offsetStore.get().map(OffsetStoreStats.Snapshot::lastStored).orElse(null);
    }

    /** The offset store's counters, read now; empty while no engine runs. */
    public Optional<OffsetStoreStats.Snapshot> offsetStoreStats() {
        return offsetStore.get();
    }

    /** The Prometheus text exposition. */
    public String scrape() {
        return prometheus.scrape();
    }

    /** Detaches the log-event counter from the logging system; the counters stay readable. */
    @Override
    public void close() {
        if (logEvents != null) {
            logEvents.detach();
        }
    }

    private static double read(Supplier<Optional<OffsetStoreStats.Snapshot>> store, ToLongFunction<OffsetStoreStats.Snapshot> value) {
        return store.get().map(value::applyAsLong).orElse(0L);
    }

    private static double ageSeconds(Instant t) {
        return t == null ? Double.NaN : Duration.between(t, Instant.now()).toMillis() / 1000.0;
    }
}
