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
    final Map<String, Long> byId = new ConcurrentHashMap<>();

    /** One event arrived; {@code id} may be null when the contender does not decode it. */
    void arrived(String id, long atMicros) {
        if (id != null && byId.putIfAbsent(id, atMicros) != null) {
            return; // a duplicate counts once
        }
        if (count.incrementAndGet() == 1) {
            firstMicros = atMicros;
        }
        lastMicros = atMicros;
    }

    long count() {
        return count.get();
    }

    /** Events per second between the first and the last arrival. */
    double rate() {
        long span = lastMicros - firstMicros;
        return span <= 0 ? Double.NaN : (count.get() - 1) * 1e6 / span;
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
            long c = count.get();
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
