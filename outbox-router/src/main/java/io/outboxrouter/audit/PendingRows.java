package io.outboxrouter.audit;

import io.outboxrouter.audit.AuditReads.Bound;
import io.outboxrouter.audit.AuditReads.Window;
import io.outboxrouter.cdc.OutboxSql;
import io.outboxrouter.offsets.OffsetTable;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.function.Supplier;

/**
 * The rows the self-audit read that the stream had not delivered yet, by window, and their judgement at each look:
 * delivered since, still waiting, or lost (unmatched at two looks after the stream stored a position past the window's
 * mark). Only the audit's thread uses it, apart from the counts.
 */
final class PendingRows {
    /**
     * Rows of a window not delivered yet; {@code suspect}: the stream was past the mark at the last look; {@code why}: how
     * a lost row came to be lost; {@code accepted}: a loss the operator accepted at this start is logged, not acted on.
     */
    record Pending(Window window, LongSet remaining, boolean suspect, int looks, String why, boolean accepted) {
    }

    /** What a look found: the rows lost (and lost but accepted), and whether the stream must be moved on to tell about the others. */
    record Judgement(List<Pending> lost, List<Pending> accepted, boolean nudge) {
    }

    static final String PASSED = "committed, and the stream passed them without delivering them";

    private final DeliveredIds delivered;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private volatile long waiting;
    private volatile Long oldestMicros;

    PendingRows(DeliveredIds delivered) {
        this.delivered = delivered;
    }

    /** A window read: its rows not delivered yet wait; returns how many were delivered already. */
    int add(Window w) {
        var remaining = w.ids().filter(h -> !delivered.contains(h));
        if (!remaining.isEmpty()) {
            pending.addLast(new Pending(w, remaining, false, 0, PASSED, false));
            waiting += remaining.size();
        }
        return w.ids().size() - remaining.size();
    }

    /** Rows of a range whose deliveries this process did not see, without a record in Kafka: they wait like any others. */
    void add(Window w, LongSet unpublished, String why, boolean accepted) {
        pending.addLast(new Pending(w, unpublished, false, 0, why, accepted));
        waiting += unpublished.size();
    }

    /**
     * Matches again what waits, and judges it by whether the stream stored a position past each window's mark.
     *
     * @param matched told how many rows were delivered since the last look
     */
    Judgement judge(Connection c, OutboxSql sql, Supplier<OffsetTable> offsets, LongConsumer matched) throws SQLException {
        var lost = new ArrayList<Pending>();
        var accepted = new ArrayList<Pending>();
        var next = new ArrayDeque<Pending>();
        long count = 0;
        Long oldest = null;
        boolean nudge = false;
        boolean behind = false;
        for (var p : pending) {
            var remaining = p.remaining().filter(h -> !delivered.contains(h));
            matched.accept(p.remaining().size() - remaining.size());
            if (remaining.isEmpty()) {
                continue;
            }
            // Windows wait oldest first, their marks in log order: behind one mark, the stream is behind every later one.
            boolean past = !behind && sql.publishedPast(p.window().mark(), c, offsets);
            behind = !past;
            if (past && p.suspect()) {
                (p.accepted() ? accepted : lost).add(new Pending(p.window(), remaining, true, p.looks() + 1, p.why(), p.accepted()));
                continue;
            }
            // Rows still undelivered at a second look, and the stream not past them: on a quiet database only the next
            // write moves it on, so the audit writes one.
            nudge |= !past && p.looks() >= 1;
            next.addLast(new Pending(p.window(), remaining, past, p.looks() + 1, p.why(), p.accepted()));
            count += remaining.size();
            oldest = oldest == null ? p.window().lower().micros() : Math.min(oldest, p.window().lower().micros());
        }
        pending.clear();
        pending.addAll(next);
        waiting = count;
        oldestMicros = oldest;
        return new Judgement(lost, accepted, nudge);
    }

    /** Puts back windows a judgement took out, when what was to be done with them failed: the next look judges them again. */
    void putBack(List<Pending> windows) {
        for (var p : windows) {
            pending.addFirst(new Pending(p.window(), p.remaining(), false, p.looks(), p.why(), p.accepted()));
            waiting += p.remaining().size();
        }
    }

    /** Whether a window waits that was read before {@code millis} (the router's clock). */
    boolean readBefore(long millis) {
        return pending.stream().anyMatch(p -> p.window().readAtMillis() < millis);
    }

    /** The lower of {@code b} and the start of the table's oldest waiting window. */
    Bound lowest(String table, Bound b) {
        for (var p : pending) {
            if (p.window().table().equals(table) && p.window().lower().micros() < b.micros()) {
                b = p.window().lower();
            }
        }
        return b;
    }

    /** Rows waiting, as of the last look. */
    long waiting() {
        return waiting;
    }

    /** The time of the oldest window waiting (microseconds since the epoch, the database's clock), or null. */
    Long oldestMicros() {
        return oldestMicros;
    }

    void clear() {
        pending.clear();
        waiting = 0;
        oldestMicros = null;
    }
}
