package io.outboxrouter.benchmark;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** Events as a contender delivers them: how many, the first and the last arrival, and per event id when known. */
final class Arrivals {
    private final AtomicLong count = new AtomicLong();
    private volatile long firstMicros;
    private volatile long lastMicros;
    /** Kafka's record timestamps (set by the contender's producer), when the events come from Kafka; 0 when unknown. */
    private final AtomicLong firstProducedMillis = new AtomicLong(Long.MAX_VALUE);
    private final AtomicLong lastProducedMillis = new AtomicLong();
    final Map<String, Long> byId = new ConcurrentHashMap<>();
    /** Per event id, the timestamp its producer gave the Kafka record (when the contender called send), when known. */
    final Map<String, Long> producedById = new ConcurrentHashMap<>();
    /** Records the topics hold while their reading waits for the drain to end ({@link Contender#readBackAfter}). */
    private volatile long written;

    /** One event arrived; {@code id} may be null when the contender does not decode it. */
    void arrived(String id, long atMicros) {
        arrived(id, atMicros, 0);
    }

    /** One event read from Kafka, with the timestamp its producer gave it. */
    void arrived(String id, long atMicros, long producedMillis) {
        if (id != null && byId.putIfAbsent(id, atMicros) != null) {
            return; // a duplicate counts once
        }
        if (producedMillis > 0) {
            if (id != null) {
                producedById.put(id, producedMillis);
            }
            firstProducedMillis.accumulateAndGet(producedMillis, Math::min);
            lastProducedMillis.accumulateAndGet(producedMillis, Math::max);
        }
        if (count.incrementAndGet() == 1) {
            firstMicros = atMicros;
        }
        lastMicros = atMicros;
    }

    /** A contender in another process reports what it counted so far, with its first and last arrival. */
    void progress(long total, long firstAtMicros, long lastAtMicros) {
        firstMicros = firstAtMicros;
        lastMicros = lastAtMicros;
        count.set(total);
    }

    long count() {
        return count.get();
    }

    /**
     * Events per second: for events read from Kafka, between the first and the last record's producer timestamp (when
     * the contender produced them, not when a consumer poll happened to return, which counted records produced before
     * the consumer's first poll without their time); otherwise between the first and the last arrival.
     */
    double rate() {
        long produced = lastProducedMillis.get() - firstProducedMillis.get();
        if (lastProducedMillis.get() > 0 && produced > 0) {
            return (count.get() - 1) * 1e3 / produced;
        }
        long span = lastMicros - firstMicros;
        return span <= 0 ? Double.NaN : (count.get() - 1) * 1e6 / span;
    }

    /**
     * Events per second as the one who restarted it waits for them: from {@code startedMicros} (the start command, the
     * JVM cold) to the last record on Kafka (its producer timestamp) or the last arrival.
     */
    double rateSince(long startedMicros) {
        long last = lastProducedMillis.get() > 0 ? lastProducedMillis.get() * 1000 : lastMicros;
        long span = last - startedMicros;
        return count.get() == 0 || span <= 0 ? Double.NaN : count.get() * 1e6 / span;
    }

    /** While the reading back waits: how many records the topics hold, which counts as progress. */
    void written(long records) {
        written = records;
    }

    /** Waits until {@code n} events arrived; false on timeout or when no event arrived for {@code stall}. */
    boolean await(long n, Duration timeout, Duration stall) throws InterruptedException {
        return await(n, timeout, stall, () -> true);
    }

    /** As above, and false as soon as {@code alive} says the contender is gone. */
    boolean await(long n, Duration timeout, Duration stall, java.util.function.BooleanSupplier alive) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        long lastCount = -1;
        long lastChange = System.nanoTime();
        while (count.get() < n) {
            long now = System.nanoTime();
            if (now > deadline || !alive.getAsBoolean()) {
                return false;
            }
            long c = count.get() + written;
            if (c != lastCount) {
                lastCount = c;
                lastChange = now;
            } else if (now - lastChange > stall.toNanos()) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }
}
