package io.outboxrouter.app;

import io.outboxrouter.cdc.SlotMonitor;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.offsets.OffsetStoreStats;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.retention.Retention;
import io.outboxrouter.retry.Retry;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Assembles a {@link RouterStatus} for {@code /status} and the status page: counters from the metrics, the stored offsets
 * read from the table (the only part that queries a database, with a short retry budget), the slot as last measured,
 * and the router's last problems.
 */
final class StatusReport implements AutoCloseable {
    /** The status page must answer quickly during an outage: a short retry budget, not the engine's 30 s. */
    private static final Retry QUICK = new Retry(Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(2));

    private final RouterConfig config;
    private final RouterMetrics metrics;
    private final Optional<SlotMonitor> slot;
    private final Optional<Retention> retention;
    private final RecentProblems problems;
    private final OffsetTable offsets;
    private final Instant startedAt = Instant.now();

    StatusReport(RouterConfig config, RouterMetrics metrics, Optional<SlotMonitor> slot, Optional<Retention> retention,
                 RecentProblems problems) {
        this.config = config;
        this.retention = retention;
        this.metrics = metrics;
        this.slot = slot;
        this.problems = problems;
        var s = OffsetTableSettings.offsets(config);
        this.offsets = OffsetTable.open(new OffsetTableSettings(s.routerName(), s.url(), s.user(), s.password(), s.table(), QUICK));
        this.reader = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            var t = new Thread(r, "status-offsets-" + config.name());
            t.setDaemon(true);
            return t;
        });
    }

    /** How long a request waits for the offsets table before it answers with what was read last. */
    private static final Duration READ_WAIT = Duration.ofMillis(100);
    /** Reads the offsets table off the request's thread: one read at a time, whatever the number of requests. */
    private final java.util.concurrent.ExecutorService reader;
    private java.util.concurrent.CompletableFuture<Map<String, String>> reading;
    private Map<String, String> lastRead = Map.of();
    private Instant lastReadAt;
    private Instant readingSince;
    /** Why the last finished read failed, while no read has succeeded since. */
    private String lastError;

    RouterStatus read(RouterState state) {
        java.util.concurrent.CompletableFuture<Map<String, String>> read;
        boolean fresh = false;
        synchronized (this) {
            if (reading == null || reading.isDone()) {
                readingSince = Instant.now();
                // The read keeps what it found, also when it finishes after the request that began it has answered.
                reading = java.util.concurrent.CompletableFuture.supplyAsync(() -> offsets.read(config.name()), reader)
                        .whenComplete((found, error) -> {
                            synchronized (this) {
                                if (found != null) {
                                    lastRead = found;
                                    lastReadAt = Instant.now();
                                    lastError = null;
                                } else if (error != null) {
                                    lastError = (error.getCause() == null ? error : error.getCause()).getMessage();
                                }
                            }
                        });
                fresh = true;
            }
            read = reading;
        }
        Map<String, String> stored;
        String offsetsError = null;
        try {
            // A read an earlier request began is still under way (the database is slow or down): this one answers at once.
            stored = read.get(fresh ? READ_WAIT.toMillis() : 0, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
            synchronized (this) {
                stored = lastRead;
                offsetsError = (e instanceof java.util.concurrent.TimeoutException ? "reading " + config.offsets().table()
                        + " takes long (under way since " + readingSince + ")" + (lastError == null ? "" : "; the last read failed: "
                        + lastError) : "cannot read " + config.offsets().table() + ": "
                        + (e.getCause() == null ? e.getMessage() : e.getCause().getMessage()))
                        + (lastReadAt == null ? "" : "; the positions shown were read at " + lastReadAt);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stored = Map.of();
            offsetsError = "interrupted";
        }
        var source = config.source();
        String describe = source.kind().toString().toLowerCase() + " " + source.connection().displayUrl() + " " + source.tables();
        var store = metrics.offsetStoreStats();
        return new RouterStatus(config.name(), state, describe, startedAt, metrics.publishedTotal(), metrics.deadLetteredTotal(),
                metrics.skippedTotal(), metrics.retriesTotal(), store.map(OffsetStoreStats.Snapshot::lastStored).orElse(null),
                store.map(OffsetStoreStats.Snapshot::failed).orElse(0L), stored, offsetsError, slot.map(SlotMonitor::state).orElse(null),
                retention.map(Retention::status).orElse(null), problems == null ? List.of() : problems.newestFirst(),
                metrics.publishedPerMinute(), metrics.parkedCount(), metrics.parkedOldestFirst(), metrics.auditStatus());
    }

    @Override
    public void close() {
        reader.shutdownNow();
        offsets.close();
    }
}
