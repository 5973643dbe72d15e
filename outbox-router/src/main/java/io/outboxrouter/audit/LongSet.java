package io.outboxrouter.audit;

/**
 * A set of longs in one array, open addressing with linear probing, at most half full: a few times smaller than a
 * {@code HashSet<Long>}. Zero is kept apart, since it marks a free slot. Not thread-safe.
 */
public final class LongSet {
    private long[] slots;
    private int size;
    private boolean hasZero;

    public LongSet(int expected) {
        slots = new long[capacityFor(Math.max(16, expected))];
    }

    private static int capacityFor(int n) {
        return Integer.highestOneBit(Math.max(16, n * 2 - 1)) << 1;
    }

    public boolean add(long value) {
        if (value == 0) {
            boolean added = !hasZero;
            hasZero = true;
            size += added ? 1 : 0;
            return added;
        }
        if ((size + 1) * 2 > slots.length) {
            grow();
        }
        int mask = slots.length - 1;
        for (int i = spread(value) & mask; ; i = (i + 1) & mask) {
            if (slots[i] == value) {
                return false;
            }
            if (slots[i] == 0) {
                slots[i] = value;
                size++;
                return true;
            }
        }
    }

    public boolean contains(long value) {
        if (value == 0) {
            return hasZero;
        }
        int mask = slots.length - 1;
        for (int i = spread(value) & mask; ; i = (i + 1) & mask) {
            if (slots[i] == value) {
                return true;
            }
            if (slots[i] == 0) {
                return false;
            }
        }
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** The members for which {@code keep} holds, as a new set. */
    LongSet filter(java.util.function.LongPredicate keep) {
        var out = new LongSet(16);
        if (hasZero && keep.test(0)) {
            out.add(0);
        }
        for (long v : slots) {
            if (v != 0 && keep.test(v)) {
                out.add(v);
            }
        }
        return out;
    }

    private void grow() {
        long[] old = slots;
        slots = new long[old.length * 2];
        size = hasZero ? 1 : 0;
        for (long v : old) {
            if (v != 0) {
                add(v);
            }
        }
    }

    private static int spread(long v) {
        long h = v * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32));
    }

    @Override
    public String toString() {
        return "LongSet[" + size + " of " + slots.length + "]";
    }
}
