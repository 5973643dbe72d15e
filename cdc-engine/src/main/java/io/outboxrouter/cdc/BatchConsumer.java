package io.outboxrouter.cdc;

import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.change.ChangeRecords;
import io.outboxrouter.offsets.OffsetStoreStats;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.kafka.connect.source.SourceRecord;
import org.slf4j.MDC;

/**
 * Hands each engine batch to the {@link ChangeHandler} and marks processed only up to the last complete source
 * transaction, and tells the engine when to store what is marked ({@link #storeDue}, its commit policy, which the
 * engine asks at the end of each batch). Runs on the engine's thread: the committer is not thread-safe and stays on it.
 */
final class BatchConsumer implements DebeziumEngine.ChangeConsumer<RecordChangeEvent<SourceRecord>> {
    /** How often a position is stored when no outbox event moved it (heartbeats, other tables' transactions). */
    static final Duration IDLE_STORE_INTERVAL = Duration.ofSeconds(5);
    /**
     * Offset writes that may fail in a row (each after its own retry budget) before the engine stops: events are still
     * published meanwhile, but without a stored position a Postgres slot keeps WAL until the disk fills.
     */
    static final int MAX_FAILED_OFFSET_WRITES = 3;

    private final String routerName;
    private final Supplier<Optional<OffsetStoreStats.Snapshot>> offsetStore;
    private final ChangeHandler handler;
    private final TransactionBoundaries<RecordChangeEvent<SourceRecord>> boundaries;
    private final ChangeRecords changeRecords;
    private final long storeIntervalNanos;
    private final LongSupplier nanoClock;
    final EngineProgress progress = new EngineProgress();
    volatile Drain drain;
    /** Set when the engine is closing: batches that arrive now are left for the next start, not begun. */
    volatile boolean stopping;
    private long lastStored;
    private boolean storedOnce;
    /** A position is marked processed (acknowledged, at a transaction boundary) that the engine has not stored yet. */
    private boolean marked;
    /** What is marked is stored at the end of this batch, whatever the interval: the first position, or a drain's. */
    private boolean storeAtOnce;
    /** The engine stored what was marked during the batch in hand. */
    private boolean storedInBatch;
    /**
     * Events were handled whose transaction's end is not read yet: the next safe position is marked, never skipped. Read
     * by a closing engine, which gives that end a moment to arrive.
     */
    private volatile boolean unstoredEvents;

    /**
     * @param storeInterval how often a marked position is stored ({@code offsets.commit-interval}): the first one after a
     *                      quieter spell at once, then at most this often; what is marked meanwhile is stored by a later
     *                      batch (Debezium 3.5's engine asks its commit policy only after a batch: on Postgres the
     *                      connector's heartbeat makes one every 250 ms while nothing arrives), or when the engine stops.
     *                      A transactional handler's position is stored with every commit: the table mirrors the topic
     */
    BatchConsumer(String routerName, ChangeHandler handler, TransactionBoundaries<RecordChangeEvent<SourceRecord>> boundaries,
                  ChangeRecords changeRecords, Duration storeInterval,
                  Supplier<Optional<OffsetStoreStats.Snapshot>> offsetStore) {
        this(routerName, handler, boundaries, changeRecords, storeInterval, offsetStore, System::nanoTime);
    }

    BatchConsumer(String routerName, ChangeHandler handler, TransactionBoundaries<RecordChangeEvent<SourceRecord>> boundaries,
                  ChangeRecords changeRecords, Duration storeInterval,
                  Supplier<Optional<OffsetStoreStats.Snapshot>> offsetStore, LongSupplier nanoClock) {
        this.routerName = routerName;
        this.offsetStore = offsetStore;
        this.handler = handler;
        this.boundaries = boundaries;
        this.changeRecords = changeRecords;
        this.storeIntervalNanos = storeInterval.toNanos();
        this.nanoClock = nanoClock;
    }

    /**
     * The engine's commit policy, asked at the end of every batch: whether to store what is marked now. Only ever a
     * position whose events Kafka acknowledged, at a transaction boundary; how often only decides how much a crash sends
     * again.
     */
    boolean storeDue() {
        long now = nanoClock.getAsLong();
        if (!marked || !(storeAtOnce || now - lastStored >= storeIntervalNanos)) {
            return false;
        }
        marked = false;
        storeAtOnce = false;
        storedOnce = true;
        storedInBatch = true;
        lastStored = now;
        return true;
    }

    @Override
    public void handleBatch(List<RecordChangeEvent<SourceRecord>> records,
                            DebeziumEngine.RecordCommitter<RecordChangeEvent<SourceRecord>> committer) throws InterruptedException {
        if (stopping) {
            return; // nothing is marked processed: read again on the next start
        }
        progress.batchesStarted().incrementAndGet();
        progress.lastActiveNanos().set(System.nanoTime());
        MDC.put("router", routerName); // what the handler logs belongs to this router (its status page lists it)
        var events = new ArrayList<ChangeEvent>(records.size());
        var eventRecords = new ArrayList<Integer>(records.size()); // the record index of each event
        var pendingDrain = drain;
        int marker = -1;
        for (int i = 0; i < records.size(); i++) {
            var r = records.get(i);
            if (pendingDrain != null && marker < 0 && pendingDrain.isMarker(r.record())) {
                marker = i;
            }
            int index = i;
            changeRecords.toEvent(r.record()).ifPresent(e -> {
                events.add(e);
                eventRecords.add(index);
            });
        }
        boolean transactional = handler.transactional();
        if (!transactional && !events.isEmpty()) {
            handle(events);
        }
        var safe = boundaries.lastSafe(records);
        // A position that covers no new outbox event (other tables' transactions, heartbeats, the heartbeat table) is
        // stored at most every IDLE_STORE_INTERVAL: when the offsets live on the source server, each write is itself a
        // transaction the reader sees, and storing it at once would keep the router busy writing about its own writes.
        // One that covers events is always marked, even when their transaction's END came in a batch without events; and
        // while a marked position waits for its store, a newer one is marked too, so that the store carries the newest.
        long now = nanoClock.getAsLong();
        boolean prompt = pendingDrain != null && pendingDrain.needsPromptStore();
        unstoredEvents |= !events.isEmpty();
        if (safe != null && storedOnce && !marked && !unstoredEvents && !prompt && now - lastStored < IDLE_STORE_INTERVAL.toNanos()) {
            safe = null;
        }
        if (transactional) {
            // The events of complete transactions, their position committed with them, then those of the one still open.
            int complete = 0;
            while (safe != null && complete < events.size() && eventRecords.get(complete) <= safe.index()) {
                complete++;
            }
            if (complete > 0) {
                handle(events.subList(0, complete));
            }
            if (safe != null) {
                commit(safe.record().record());
            }
            if (complete < events.size()) {
                handle(events.subList(complete, events.size()));
            }
        }
        if (safe != null) {
            committer.markProcessed(safe.record());
            marked = true;
            storeAtOnce |= !storedOnce || prompt || transactional;
            // Events of a transaction still open stay unstored: its END (maybe in a batch without events) marks them.
            unstoredEvents = !events.isEmpty() && safe.index() < records.size() - 1 && boundaries.open();
        }
        storedInBatch = false;
        committer.markBatchFinished(); // asks storeDue()
        if (storedInBatch) {
            requireStoredPosition(); // the store's outcome: only a write changes what it checks
        }
        if (pendingDrain != null) {
            pendingDrain.batchStored(marker, safe != null && storedInBatch ? safe.index() : -1);
        }
        progress.lastActiveNanos().set(System.nanoTime()); // a long batch counts from its end
        progress.batchesFinished().incrementAndGet();
    }

    /** The engine only logs a failed offset write; stop after a few in a row rather than publish for days without a position. */
    private void requireStoredPosition() {
        var store = offsetStore.get();
        if (store.isPresent() && store.get().fenced()) {
            throw new IllegalStateException("another process took router " + routerName + " over (it holds a newer fencing "
                    + "token, and this one's offset write was refused): stopping so that only one process streams");
        }
        if (store.isPresent() && store.get().consecutiveFailures() >= MAX_FAILED_OFFSET_WRITES) {
            throw new IllegalStateException("cannot store router " + routerName + "'s position: " + store.get().consecutiveFailures()
                    + " offset writes failed in a row, the last with " + store.get().lastError() + ". The events are published, "
                    + "but without a stored position the source keeps its log and a restart sends them again. Fix the offsets "
                    + "database (offsets.url and its credentials, or the source's) and start the router again");
        }
    }

    /** A failed batch stops the engine without storing its position: it is read again on restart. */
    private void handle(List<ChangeEvent> events) throws InterruptedException {
        try {
            handler.handle(events);
        } catch (InterruptedException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** Commits what the transactional handler was given since its last commit, with the position after {@code record}. */
    private void commit(SourceRecord record) throws InterruptedException {
        try {
            handler.commit(new SourcePosition(record.sourcePartition(), record.sourceOffset()));
        } catch (InterruptedException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /** Whether events were handed over whose transaction's end is not read yet (so their position is not marked). */
    boolean unstoredEvents() {
        return unstoredEvents;
    }

    @Override
    public boolean supportsTombstoneEvents() {
        return false;
    }
}
