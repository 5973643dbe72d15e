package io.outboxrouter.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/**
 * The router's metrics, in one Prometheus registry: events per topic, dead letters per reason, skipped rows, batch
 * sizes, publish time, commit-to-ack latency, source lag, age of the last stored offset, streaming. Written by the
 * engine's thread; read by the HTTP thread.
 */
public final class RouterMetrics {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final DistributionSummary batchSize;
    private final Timer publishTime;
    private final Timer commitToAck;
    private final AtomicReference<Instant> lastCommitTime = new AtomicReference<>();
    private final AtomicReference<Instant> lastOffsetStored = new AtomicReference<>();
    private final java.util.concurrent.ConcurrentHashMap<String, Counter> publishedByTopic = new java.util.concurrent.ConcurrentHashMap<>();
    private final Throughput throughput = new Throughput(java.time.Clock.systemUTC());

    public RouterMetrics(String routerName) {
        registry.config().commonTags("router", routerName);
        batchSize = DistributionSummary.builder("outbox.router.batch.size").description("outbox events per engine batch")
                .publishPercentileHistogram().register(registry);
        publishTime = Timer.builder("outbox.router.publish").description("time from sending a batch to Kafka to its last ack")
                .publishPercentileHistogram().register(registry);
        commitToAck = Timer.builder("outbox.router.commit.to.ack")
                .description("time from the source transaction's COMMIT to Kafka's ack of its event")
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(5))
                .register(registry);
        Gauge.builder("outbox.router.source.lag.seconds", this, m -> ageSeconds(m.lastCommitTime.get()))
                .description("age of the last published event's source COMMIT (NaN before the first)").strongReference(true).register(registry);
        Gauge.builder("outbox.router.offset.age.seconds", this, m -> ageSeconds(m.lastOffsetStored.get()))
                .description("time since the router last stored its source position (NaN before the first)").strongReference(true)
                .register(registry);
    }

    /** Registers the WAL a Postgres slot retains, as last measured (negative until the first measurement). */
    public void retainedWal(java.util.function.LongSupplier bytes) {
        Gauge.builder("outbox.router.slot.retained.wal.bytes", bytes, b -> b.getAsLong() < 0 ? Double.NaN : b.getAsLong())
                .description("WAL the replication slot keeps on the server (Postgres), measured every 15 s")
                .strongReference(true).register(registry);
    }

    /** Registers the streaming state, once the engine exists. */
    public void streaming(BooleanSupplier streaming) {
        Gauge.builder("outbox.router.streaming", streaming, s -> s.getAsBoolean() ? 1 : 0)
                .description("1 while connected to the source's replication stream")
                // Micrometer holds gauge state weakly; a method reference would be collected and read NaN.
                .strongReference(true).register(registry);
    }

    public void published(String topic, Instant commitTime, Instant ackTime) {
        // Looked up once per topic: building and registering a meter per event showed in the profile.
        publishedByTopic.computeIfAbsent(topic, t -> Counter.builder("outbox.router.events.published").tag("topic", t).register(registry))
                .increment();
        throughput.add(1);
        if (commitTime != null) {
            commitToAck.record(Duration.between(commitTime, ackTime).isNegative() ? Duration.ZERO : Duration.between(commitTime, ackTime));
            lastCommitTime.accumulateAndGet(commitTime, (a, b) -> a == null || b.isAfter(a) ? b : a);
        }
    }

    public void deadLettered(String kind) {
        Counter.builder("outbox.router.dead.letters").tag("reason", kind).register(registry).increment();
    }

    public void skipped(String kind) {
        Counter.builder("outbox.router.skipped").tag("reason", kind).register(registry).increment();
    }

    public void batch(int events, Duration publish) {
        batchSize.record(events);
        publishTime.record(publish);
    }

    public void offsetStored() {
        lastOffsetStored.set(Instant.now());
    }

    /** One failed attempt that is retried: {@code kafka_publish} or {@code offset_store}. */
    public void retry(String operation) {
        Counter.builder("outbox.router.retries").description("failed attempts retried with backoff, by operation")
                .tag("operation", operation).register(registry).increment();
    }

    /** A WARN or ERROR logged by any component (retries apart), by level and logging class. */
    public void problem(String level, String logger) {
        Counter.builder("outbox.router.log.problems").description("warnings and errors logged, by level and class")
                .tag("level", level).tag("logger", logger).register(registry).increment();
    }

    public long retriesTotal() {
        return (long) registry.find("outbox.router.retries").counters().stream().mapToDouble(Counter::count).sum();
    }

    public long publishedTotal() {
        return (long) registry.find("outbox.router.events.published").counters().stream().mapToDouble(Counter::count).sum();
    }

    public long deadLetteredTotal() {
        return (long) registry.find("outbox.router.dead.letters").counters().stream().mapToDouble(Counter::count).sum();
    }

    public long skippedTotal() {
        return (long) registry.find("outbox.router.skipped").counters().stream().mapToDouble(Counter::count).sum();
    }

    /** Events published per minute over the last hour, oldest first. */
    public long[] publishedPerMinute() {
        return throughput.perMinute();
    }

    public Instant lastOffsetStored() {
        return lastOffsetStored.get();
    }

    /** The Prometheus text exposition. */
    public String scrape() {
        return registry.scrape();
    }

    public MeterRegistry registry() {
        return registry;
    }

    private static double ageSeconds(Instant t) {
        return t == null ? Double.NaN : Duration.between(t, Instant.now()).toMillis() / 1000.0;
    }
}
