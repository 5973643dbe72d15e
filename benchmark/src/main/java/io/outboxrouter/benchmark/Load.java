package io.outboxrouter.benchmark;

import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/** Writer threads inserting outbox rows with about 500-byte JSON payloads; each commit's wall-clock time is kept per event id. */
final class Load {
    static final int WRITERS = 8;
    private static final String FILLER = "x".repeat(380);

    /** What a load wrote: event id -> epoch microseconds when its COMMIT returned. */
    record Written(Map<String, Long> commitMicros, long events, Duration elapsed) {
        double perSecond() {
            return events / Math.max(1e-9, elapsed.toNanos() / 1e9);
        }
    }

    static long epochMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
    }

    static String payload(String id, String aggregateId, long seq) {
        return "{\"orderId\":\"" + aggregateId + "\",\"eventId\":\"" + id + "\",\"seq\":" + seq
                + ",\"customer\":{\"id\":\"c-" + (seq % 977) + "\",\"tier\":\"gold\"},\"lines\":[{\"sku\":\"A-1\",\"qty\":2,\"price\":\"19.90\"}],"
                + "\"note\":\"" + FILLER + "\"}";
    }

    /** Flat out: {@code events} rows in transactions of {@code txnSize} rows, spread over the writer threads. */
    static Written flatOut(BenchDb db, long events, int txnSize) throws Exception {
        var commits = new ConcurrentHashMap<String, Long>((int) Math.min(events * 2, Integer.MAX_VALUE / 2));
        long txns = events / txnSize;
        var next = new AtomicLong();
        long start = System.nanoTime();
        run(WRITERS, () -> {
            try (var c = db.connect(); var ps = c.prepareStatement(db.insertSql())) {
                for (long t = next.getAndIncrement(); t < txns; t = next.getAndIncrement()) {
                    var ids = new ArrayList<String>(txnSize);
                    for (int i = 0; i < txnSize; i++) {
                        String id = UUID.randomUUID().toString();
                        String agg = "o-" + ThreadLocalRandom.current().nextInt(10_000);
                        ps.setString(1, id);
                        ps.setString(2, agg);
                        ps.setString(3, payload(id, agg, t));
                        if (txnSize == 1) {
                            ps.executeUpdate();
                        } else {
                            ps.addBatch();
                        }
                        ids.add(id);
                    }
                    if (txnSize > 1) {
                        ps.executeBatch();
                    }
                    c.commit();
                    long at = epochMicros();
                    ids.forEach(id -> commits.put(id, at));
                }
            }
            return null;
        });
        return new Written(commits, txns * txnSize, Duration.ofNanos(System.nanoTime() - start));
    }

    /**
     * Single-row transactions at a fixed rate, open loop: event i is due at start + i/rate, whatever happened to the
     * ones before it; a writer that falls behind writes at once.
     */
    static Written fixedRate(BenchDb db, int perSecond, Duration duration) throws Exception {
        return fixedRate(db, perSecond, duration, 1);
    }

    /**
     * {@code perSecond} events in transactions of {@code txnSize} rows, open loop: transaction i is due at start +
     * i * txnSize / rate; its events' commit time is when its COMMIT returned.
     */
    static Written fixedRate(BenchDb db, int perSecond, Duration duration, int txnSize) throws Exception {
        var commits = new ConcurrentHashMap<String, Long>();
        long txns = perSecond * duration.toSeconds() / txnSize;
        long periodNanos = 1_000_000_000L * txnSize / perSecond;
        var next = new AtomicLong();
        long start = System.nanoTime();
        run(WRITERS, () -> {
            try (var c = db.connect(); var ps = c.prepareStatement(db.insertSql())) {
                var ids = new ArrayList<String>(txnSize);
                for (long t = next.getAndIncrement(); t < txns; t = next.getAndIncrement()) {
                    long due = start + t * periodNanos;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                    ids.clear();
                    for (int k = 0; k < txnSize; k++) {
                        long i = t * txnSize + k;
                        String id = UUID.randomUUID().toString();
                        String agg = "o-" + (i % 1000);
                        ps.setString(1, id);
                        ps.setString(2, agg);
                        ps.setString(3, payload(id, agg, i));
                        if (txnSize == 1) {
                            ps.executeUpdate();
                        } else {
                            ps.addBatch();
                        }
                        ids.add(id);
                    }
                    if (txnSize > 1) {
                        ps.executeBatch();
                    }
                    c.commit();
                    long at = epochMicros();
                    ids.forEach(id -> commits.put(id, at));
                }
            }
            return null;
        });
        return new Written(commits, txns * txnSize, Duration.ofNanos(System.nanoTime() - start));
    }

    @FunctionalInterface
    interface Work {
        Void call() throws SQLException;
    }

    private static void run(int threads, Work work) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            var futures = new ArrayList<Future<Void>>();
            for (int i = 0; i < threads; i++) {
                futures.add(pool.submit(work::call));
            }
            for (var f : futures) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private Load() {
    }
}
