package io.outboxrouter.audit;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;

/**
 * The event ids a stream delivered (published and acknowledged, dead-lettered, held for a parked aggregate, or skipped by
 * policy), kept as 64-bit hashes in generations by the time they were delivered, until the self-audit has read every
 * row that could be theirs. A hash stands for its id: two ids would share one about once in 2^64 pairs, far below any
 * other cause of error. Written by the engine's thread, read by the audit's.
 */
public final class DeliveredIds {
    /** More ids than this and the oldest generation is dropped: the audit has fallen too far behind the stream. */
    static final int MOST_KEPT = 1_000_000;

    private record Generation(long startedMillis, LongSet ids) {
    }

    private final long generationMillis;
    private final ArrayDeque<Generation> generations = new ArrayDeque<>();
    private long kept;
    /** The end of the newest generation dropped while the audit still needed it (ms since the epoch), or 0. */
    private long droppedThrough;

    /** @param generationMillis how long one generation takes ids in: the audit's interval */
    public DeliveredIds(long generationMillis) {
        this.generationMillis = Math.max(100, generationMillis);
    }

    /** The hash an id is kept under. */
    public static long hash(String id) {
        long h = 0xcbf29ce484222325L;
        for (byte b : id.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        // A final mix, so that ids differing in their last characters spread over every bit.
        h = (h ^ (h >>> 33)) * 0xff51afd7ed558ccdL;
        h = (h ^ (h >>> 33)) * 0xc4ceb9fe1a85ec53L;
        return h ^ (h >>> 33);
    }

    /** Ids delivered at {@code nowMillis}, by their {@link #hash}: the first {@code n} of {@code hashes}. */
    public synchronized void addAll(long[] hashes, int n, long nowMillis) {
        if (n == 0) {
            return;
        }
        var current = generations.peekLast();
        if (current == null || nowMillis - current.startedMillis() >= generationMillis) {
            current = new Generation(nowMillis, new LongSet(n));
            generations.addLast(current);
        }
        for (int i = 0; i < n; i++) {
            if (current.ids().add(hashes[i])) {
                kept++;
            }
        }
        while (kept > MOST_KEPT && generations.size() > 1) {
            var dropped = generations.removeFirst();
            kept -= dropped.ids().size();
            droppedThrough = Math.max(droppedThrough, generations.peekFirst().startedMillis());
        }
    }

    public synchronized boolean contains(long hash) {
        for (var g : generations) {
            if (g.ids().contains(hash)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Forgets the generations that ended before {@code millis}: every row delivered in them is dated before that, and the
     * audit has read every row dated before it.
     */
    public synchronized void forgetBefore(long millis) {
        while (generations.size() > 1) {
            var first = generations.peekFirst();
            var second = generations.stream().skip(1).findFirst().orElseThrow();
            if (second.startedMillis() >= millis) { // the first generation took ids until the second started
                return;
            }
            generations.removeFirst();
            kept -= first.ids().size();
        }
        var only = generations.peekFirst();
        if (only != null && only.startedMillis() + generationMillis < millis) {
            generations.clear();
            kept = 0;
        }
    }

    /**
     * When ids were dropped before the audit could match them (it fell too far behind): the time through which the ids
     * delivered are incomplete, and then 0 until it happens again.
     */
    public synchronized long takeDroppedThrough() {
        long d = droppedThrough;
        droppedThrough = 0;
        return d;
    }

    public synchronized long size() {
        return kept;
    }
}
