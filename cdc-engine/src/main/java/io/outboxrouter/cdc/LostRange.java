package io.outboxrouter.cdc;

import io.outboxrouter.change.SourcePositions;
import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * The looks that found everything in order, kept to name what a later change may have lost: the last two minutes in full,
 * older ones one per minute for a day (a slot invalidated because its router fell far behind lost WAL from long ago).
 */
final class LostRange {
    private static final int RECENT = 60;
    private static final int SPARSE = 24 * 60;
    private static final long SPARSE_NANOS = 60_000_000_000L;

    private final ArrayDeque<PublicationWatch.Look> recent = new ArrayDeque<>();
    private final ArrayDeque<PublicationWatch.Look> sparse = new ArrayDeque<>();

    void clear() {
        recent.clear();
        sparse.clear();
    }

    void add(PublicationWatch.Look look) {
        if (!recent.isEmpty() && recent.getLast().walLsn() == look.walLsn()) {
            return;
        }
        recent.addLast(look);
        if (recent.size() > RECENT) {
            var old = recent.removeFirst();
            if (sparse.isEmpty() || old.atNanos() - sparse.getLast().atNanos() >= SPARSE_NANOS) {
                sparse.addLast(old);
                if (sparse.size() > SPARSE) {
                    sparse.removeFirst();
                }
            }
        }
    }

    /**
     * The rows that may not be published, as a replay: those written by transactions from the oldest one running at the
     * last look that found everything in order; with {@code lostAfterLsn} (a slot that lost what followed that position),
     * the last such look at or before it, since the changes after it are gone from the slot whenever they were written.
     */
    String describe(Long lostAfterLsn) {
        PublicationWatch.Look from = lostAfterLsn == null ? recent.peekLast() : lastAtOrBefore(lostAfterLsn);
        if (from == null) {
            return "Rows that may not be published: those committed after the router's stored position (`offsets show` prints it; "
                    + "its ts_usec is the source commit time of the last event it covers); publish the rows still in the outbox "
                    + "table again with replay --since <that time, less the longest transaction your writers run>.";
        }
        return "Rows that may not be published: those written by transactions from xid " + from.oldestXid() + " on (the oldest "
                + "transaction running when the router last found everything in order, at WAL position "
                + SourcePositions.formatLsn(from.walLsn()) + "); publish the ones still in the outbox table again with: java -jar "
                + "outbox-router.jar replay --config <file> --from-xid " + from.oldestXid() + " (rows published already may come "
                + "again, and consumers drop them by the id header; rows deleted since cannot be published again).";
    }

    private PublicationWatch.Look lastAtOrBefore(long lsn) {
        if (lsn < 0) {
            return null;
        }
        for (var deque : java.util.List.of(recent, sparse)) {
            for (Iterator<PublicationWatch.Look> it = deque.descendingIterator(); it.hasNext(); ) {
                var look = it.next();
                if (Long.compareUnsigned(look.walLsn(), lsn) <= 0) {
                    return look;
                }
            }
        }
        return null;
    }
}
