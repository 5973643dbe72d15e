package io.outboxrouter.metrics;

import java.time.Clock;
import java.util.concurrent.atomic.AtomicLongArray;

/** Events per minute over the last hour, for the status page: a ring of 60 one-minute buckets. */
public final class Throughput {
    public static final int MINUTES = 60;
    private final Clock clock;
    private final AtomicLongArray counts = new AtomicLongArray(MINUTES);
    private final AtomicLongArray bucketMinute = new AtomicLongArray(MINUTES);

    public Throughput(Clock clock) {
        this.clock = clock;
    }

    public void add(long events) {
        long minute = clock.millis() / 60_000;
        int slot = (int) (minute % MINUTES);
        synchronized (this) {
            if (bucketMinute.get(slot) != minute) {
                bucketMinute.set(slot, minute);
                counts.set(slot, 0);
            }
            counts.addAndGet(slot, events);
        }
    }

    /** Events per minute, the oldest minute first and the current (partial) minute last. */
    public synchronized long[] perMinute() {
        long now = clock.millis() / 60_000;
        var out = new long[MINUTES];
        for (int i = 0; i < MINUTES; i++) {
            long minute = now - (MINUTES - 1) + i;
            int slot = (int) (minute % MINUTES);
            out[i] = bucketMinute.get(slot) == minute ? counts.get(slot) : 0;
        }
        return out;
    }
}
