package io.outboxrouter.publish;

import io.outboxrouter.cdc.ChangeHandler;
import io.outboxrouter.cdc.SourcePosition;
import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.RoutingConfig;
import io.outboxrouter.kafka.EventSink;
import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.publish.Outcome.DeadLetter;
import io.outboxrouter.publish.Outcome.Event;
import io.outboxrouter.publish.Outcome.Held;
import io.outboxrouter.publish.Outcome.Marker;
import io.outboxrouter.publish.Outcome.Released;
import io.outboxrouter.retry.Retry;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.Routing;
import io.outboxrouter.routing.RoutingResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One engine batch: route every change (pure), let the dead-letter policy decide the fate of rows that cannot be
 * routed, send the records in source order and return once the sink acknowledged all of them. Each record sent is one
 * {@link Outcome}, which knows what to report once it is acknowledged.
 */
public final class OutboxBatchHandler implements ChangeHandler {
    private static final Logger LOG = LoggerFactory.getLogger(OutboxBatchHandler.class);

    private final Routing routing;
    private final io.outboxrouter.tracing.PublishTracing tracing;
    private final DeadLetterPolicy policy;
    private final EventSink sink;
    private final RouterListener listener;
    private final Set<String> warnedTables = new HashSet<>();
    /** The {@code park-aggregate} policy's state; null under the other policies. */
    private final Parking parking;
    /** How rows that cannot be routed look as dead letters, and held events too large to release. */
    private final DeadLetters deadLetters;
    /** Exactly-once: a release whose Kafka transaction failed; the stream stops at its next batch. */
    private Exception releaseFailed;
    /**
     * Transactional sink: what was sent since the last commit, to report once the next commit acknowledges it. Counts, not
     * the events: a source transaction of any size is one Kafka transaction. Engine thread only.
     */
    private final Uncommitted uncommitted = new Uncommitted();
    /** Where the ids of the rows delivered go, for the self-audit; null when it is off. */
    private volatile io.outboxrouter.audit.DeliveredIds delivered;
    /** The hashes of the ids of the rows handled and not yet acknowledged (exactly-once: until the next commit). Engine thread only. */
    private long[] handledIds = new long[256];
    private int handledCount;

    /**
     * @param policy      what becomes of rows that cannot be routed
     * @param deadLetters how their dead letters look
     */
    public OutboxBatchHandler(Routing routing, RoutingConfig.DeadLetterPolicy policy, DeadLetters deadLetters, EventSink sink,
                              RouterListener listener) {
        this(routing, policy, deadLetters, sink, listener, io.outboxrouter.tracing.PublishTracing.NONE);
    }

    /** @param tracing a span for each event published ({@code tracing.enabled}) */
    public OutboxBatchHandler(Routing routing, RoutingConfig.DeadLetterPolicy policy, DeadLetters deadLetters, EventSink sink,
                              RouterListener listener, io.outboxrouter.tracing.PublishTracing tracing) {
        this(routing, policy, deadLetters, sink, listener, tracing, null, null, new int[] {0, 1});
    }

    /**
     * @param parking where parked aggregates' events are held, under {@code park-aggregate} (null: not parking)
     * @param stream  the stream's name (the router's, or its shard's): whose parks these are
     * @param shard   the stream's shard index and how many there are ({@code {0, 1}} when not sharded)
     */
    public OutboxBatchHandler(Routing routing, RoutingConfig.DeadLetterPolicy policy, DeadLetters deadLetters, EventSink sink,
                              RouterListener listener, io.outboxrouter.tracing.PublishTracing tracing,
                              io.outboxrouter.kafka.ParkingTopic parking, String stream, int[] shard) {
        this.tracing = tracing;
        this.routing = routing;
        this.parking = policy == RoutingConfig.DeadLetterPolicy.PARK_AGGREGATE
                ? new Parking(java.util.Objects.requireNonNull(parking, "parking topic"), stream, shard[0], shard[1]) : null;
        this.policy = new DeadLetterPolicy(policy, deadLetters, listener);
        this.deadLetters = deadLetters;
        this.sink = sink;
        this.listener = listener;
    }

    /** The parked aggregates, for the status page and the metrics; empty under other policies. */
    public Optional<java.util.function.Supplier<Parking.Summary>> parked() {
        return parking == null ? Optional.empty() : Optional.of(parking::summary);
    }

    /**
     * Carries out the releases and drops requested, between batches (called by the thread that follows the parking
     * topic). Exactly-once, only between Kafka transactions, in one of its own: the release reads every held event
     * committed. A release that fails is tried again with the next request or at the next start; its events may then
     * be published twice, in order.
     *
     * @return whether a request is still waiting (a Kafka transaction was open)
     */
    synchronized boolean carryOutRequests() throws Retry.GaveUpException, InterruptedException {
        if (parking.stale() || releaseFailed != null) {
            return false; // the stream lost its lock or stops: the next activation carries it out
        }
        if (sink.transactional() && uncommitted.total > 0) {
            return true;
        }
        var releases = parking.takeRequests();
        if (releases.isEmpty()) {
            return false;
        }
        // Exactly-once, what the transaction sent counts once it commits: its reasons only, not its records.
        var committing = new ArrayList<Runnable>();
        boolean[] sent = {false};
        try {
            // Each release's held events are read again and sent a chunk at a time; its marker only after them.
            for (var release : releases) {
                parking.publish(release, chunk -> {
                    sent[0] = true;
                    sendReleased(releasedOutcomes(chunk), committing);
                });
                sent[0] = true;
                sendReleased(List.of(new Marker(parking.marker(release))), committing);
                if (!sink.transactional()) {
                    // Its marker is acknowledged: it is over, whatever becomes of the next release.
                    parking.done(release);
                    parking.keep();
                }
            }
            if (sink.transactional()) {
                sink.commit(null);
                committing.forEach(Runnable::run);
                releases.forEach(parking::done); // only once committed: a release that failed leaves its aggregate parked
                parking.keep();
            }
        } catch (Retry.GaveUpException | InterruptedException | RuntimeException e) {
            failedRelease(e, sent[0]);
            throw e;
        } catch (Exception e) {
            failedRelease(e, sent[0]);
            throw new IllegalStateException("a release of a parked aggregate failed: " + e.getMessage(), e);
        }
        return false;
    }

    /**
     * Exactly-once: the transaction's records stay with the producer, which would commit them with the next position, so
     * a release that sent anything stops this stream, and its next start carries the request out again. A release that
     * failed before sending (reading the parking topic) is tried again later, as at least once.
     */
    private void failedRelease(Exception e, boolean sentAny) {
        if (sink.transactional() && sentAny) {
            releaseFailed = e;
        }
    }

    /** A chunk of released events; one Kafka would refuse is dead-lettered in its place, so that a release never fails for good. */
    private List<Outcome> releasedOutcomes(List<org.apache.kafka.clients.producer.ProducerRecord<byte[], byte[]>> chunk) {
        var outcomes = new ArrayList<Outcome>(chunk.size());
        for (var r : chunk) {
            var tooLarge = sink.refusesForSize(r);
            outcomes.add(tooLarge.isEmpty() ? new Released(r) : new DeadLetter("too_large", deadLetters.withoutPayload(r,
                    "too_large: a held event Kafka refuses: " + tooLarge.get())));
        }
        return outcomes;
    }

    /**
     * Sends part of a release: at least once, acknowledged before the next part; exactly-once, into the open Kafka
     * transaction, counted once it commits.
     */
    private void sendReleased(List<Outcome> outcomes, List<Runnable> committing) throws Retry.GaveUpException, InterruptedException {
        List<EventSink.Refused> refused = sink.transactional() ? sink.send(records(outcomes)) : sendInOrder(outcomes);
        if (!refused.isEmpty()) {
            throw new UnroutableEventException("a released event for topic " + outcomes.get(refused.get(0).index()).record().topic()
                    + " is refused by Kafka: " + refused.get(0).error().getMessage());
        }
        if (sink.transactional()) {
            long released = outcomes.stream().filter(o -> o instanceof Released).count();
            committing.add(() -> {
                for (long i = 0; i < released; i++) {
                    listener.released();
                }
            });
            outcomes.stream().filter(o -> o instanceof DeadLetter).map(o -> ((DeadLetter) o).reason())
                    .forEach(reason -> committing.add(() -> listener.deadLettered(reason)));
            return;
        }
        var ackTime = Instant.now();
        outcomes.forEach(o -> o.acknowledged(listener, ackTime));
    }

    /**
     * Before the engine starts: under {@code park-aggregate}, reads the parking topic (what is parked, which requests
     * wait) and follows it for requests, so that a release is carried out also while no event arrives.
     */
    public synchronized void activate(boolean acceptLoss) throws InterruptedException {
        if (parking != null) {
            parking.load(this::carryOutRequests, acceptLoss);
        }
    }

    /** Where the parks are kept beside the stream's position, under {@code park-aggregate} ({@link ParkLedger}). */
    public void keepParksIn(ParkLedger ledger) {
        if (parking != null) {
            parking.keepParksIn(ledger);
        }
    }

    /** Synchronized with {@link #carryOutRequests}, which runs between batches on another thread. */
    @Override
    public synchronized void handle(List<ChangeEvent> batch) throws Retry.GaveUpException, InterruptedException {
        var outcomes = new ArrayList<Outcome>(batch.size());
        if (!sink.transactional()) {
            handledCount = 0; // a batch that failed before its acknowledgements delivered nothing
        }
        requireUsable();
        if (parking != null) {
            parking.reloadIfNeeded(this::carryOutRequests);
        }
        for (ChangeEvent change : batch) {
            RoutingResult result = routing.route(change);
            if (result instanceof RoutingResult.Publish || result instanceof RoutingResult.Reject) {
                handled(change);
            }
            if (result instanceof RoutingResult.Publish p) {
                var tooLarge = sink.refusesForSize(p.record());
                var park = parking == null ? Optional.<ParkedAggregates.Park>empty() : routing.aggregateOf(change).flatMap(parking::parkOf);
                ProducerRecord<byte[], byte[]> held = null;
                String eventId = park.isPresent() ? routing.eventIdOf(change).orElse(null) : null;
                if (park.isPresent() && park.get().id().equals(parking.parkId(change, eventId))) {
                    // The row that parked the aggregate, read again: Kafka refused it once sent (its topic's limit), so it is
                    // treated as then, and the re-read is marked.
                    tooLarge = Optional.of("Kafka refused it when it was first sent");
                }
                if (tooLarge.isEmpty() && park.isPresent()) {
                    var hold = parking.hold(park.get(), change, eventId, p.record());
                    held = hold.toRecord(parking.topic());
                    // Held whole with its headers, it is larger than the event: too large held is too large sent.
                    tooLarge = sink.refusesForSize(held);
                    held = tooLarge.isEmpty() ? parking.held(hold) : null;
                }
                if (held != null) {
                    outcomes.add(new Held(held));
                } else if (tooLarge.isEmpty()) {
                    outcomes.add(new Event(change, p.record()));
                } else {
                    // Decided before anything is sent: its dead letter keeps its place, and under the fail policy nothing
                    // after it is published.
                    policy.tooLarge(change, p.record(), new RecordTooLargeException(tooLarge.get()))
                            .ifPresent(letter -> outcomes.add(new DeadLetter("too_large", letter)));
                    park(change, "too_large", outcomes);
                }
            } else if (result instanceof RoutingResult.Reject reject) {
                policy.decide(reject).ifPresent(letter -> outcomes.add(new DeadLetter(reject.kind(), letter)));
                park(change, reject.kind() + ": " + reject.reason(), outcomes);
            } else if (result instanceof RoutingResult.Unrouted unrouted) {
                unrouted(unrouted.table(), change);
            }
        }
        long start = System.nanoTime();
        var spans = new ArrayList<io.opentelemetry.api.trace.Span>(tracing.enabled() ? outcomes.size() : 0);
        if (tracing.enabled()) {
            for (var outcome : outcomes) {
                spans.add(outcome instanceof Event e ? tracing.start(e.record()) : null);
            }
        }
        if (sink.transactional()) {
            try {
                sink.send(records(outcomes)); // acknowledged at commit, with the source position
            } catch (Retry.GaveUpException | InterruptedException | RuntimeException e) {
                handledCount = 0; // the open transaction is aborted with it: its rows are read again
                throw e;
            }
            uncommitted.add(outcomes, start);
            uncommitted.spans.addAll(spans);
            return;
        }
        var refused = sendInOrder(outcomes);
        var ackTime = Instant.now();
        var refusedIndexes = new HashSet<Integer>();
        var letters = new ArrayList<Outcome>();
        for (var r : refused) {
            refusedIndexes.add(r.index());
            if (!spans.isEmpty()) {
                tracing.refused(spans.set(r.index(), null), r.error());
            }
            // Everything else was acknowledged; dead letters go to another topic, so no aggregate's order changes.
            if (!(outcomes.get(r.index()) instanceof Event event)) {
                throw new UnroutableEventException("a record for topic " + outcomes.get(r.index()).record().topic()
                        + " (a dead letter, or a parked aggregate's) is refused by Kafka: " + r.error().getMessage());
            }
            policy.tooLarge(event.change(), event.record(), r.error()).ifPresent(letter -> letters.add(new DeadLetter("too_large", letter)));
            if (parking != null) {
                // Kafka refused it after the batch was sent: the aggregate's later events in this batch are published already.
                var marker = new ArrayList<Outcome>();
                park(event.change(), "too_large", marker);
                letters.addAll(marker);
            }
        }
        if (!sink.send(records(letters)).isEmpty()) {
            throw new UnroutableEventException("dead letters without payload were refused by Kafka too; check the dead-letter topic");
        }
        for (int i = 0; i < outcomes.size(); i++) {
            if (!refusedIndexes.contains(i)) {
                outcomes.get(i).acknowledged(listener, ackTime);
            }
        }
        letters.forEach(letter -> letter.acknowledged(listener, ackTime));
        deliveredHandled();
        tracing.acknowledged(spans);
        listener.batchPublished(outcomes.size(), Duration.ofNanos(System.nanoTime() - start));
    }

    @Override
    public boolean transactional() {
        return sink.transactional();
    }

    /**
     * Where a loss of held events is reported (the parking topic deleted, or its records, while aggregates were parked):
     * the stream is to stop and keep the loss for its next start.
     */
    public void whenParkingLost(java.util.function.Consumer<String> onLoss) {
        if (parking != null) {
            parking.onLoss(onLoss);
        }
    }

    /** Makes an {@link #activate} under way give up (the stream stops); what is loaded stays until {@link #close}. */
    public void cancelActivation() {
        if (parking != null) {
            parking.cancelLoad();
        }
    }

    /**
     * Where the ids of the outbox rows this handler delivered go (published and acknowledged, dead-lettered, held or skipped
     * by policy: each accounted for), once acknowledged, for the self-audit.
     */
    public void recordDeliveriesIn(io.outboxrouter.audit.DeliveredIds ids) {
        this.delivered = ids;
    }

    /** A row of an outbox table (not a message: messages have no row to audit) that this batch accounts for. */
    private void handled(ChangeEvent change) {
        if (delivered == null || change.operation().isMessage()) {
            return;
        }
        var id = routing.eventIdOf(change);
        if (id.isEmpty()) {
            return;
        }
        if (handledCount == handledIds.length) {
            handledIds = java.util.Arrays.copyOf(handledIds, handledIds.length * 2);
        }
        handledIds[handledCount++] = io.outboxrouter.audit.DeliveredIds.hash(id.get());
    }

    private void deliveredHandled() {
        if (parking != null) {
            parking.keep(); // parks made in what was just acknowledged (committed) are kept before a position passes them
        }
        var d = delivered;
        if (d != null) {
            d.addAll(handledIds, handledCount, System.currentTimeMillis());
        }
        handledCount = 0;
        if (handledIds.length > 4096) {
            handledIds = new long[256]; // a large transaction's array is not kept
        }
    }

    /** Stops following the parking topic; a later activation reads it again. */
    public void close() {
        if (parking != null) {
            parking.close();
        }
    }

    /** Under {@code park-aggregate}: a batch of a stream that stopped, or whose release failed under exactly-once, goes no further. */
    private void requireUsable() {
        if (parking != null && parking.stale()) {
            // A batch of an engine being stopped (the lock was lost): what it read of the parking topic may be old.
            throw new IllegalStateException("the stream was stopped (its lock lost, or the router stopping) while this batch waited");
        }
        if (releaseFailed != null) {
            throw new IllegalStateException("a release of a parked aggregate failed in a Kafka transaction (" + releaseFailed.getMessage()
                    + "): the stream stops rather than commit it with its next position; started again, it carries the release out "
                    + "again", releaseFailed);
        }
    }

    /** Commits the records handled since the last commit with the position after them; then they count as published. */
    @Override
    public synchronized void commit(SourcePosition position) throws Retry.GaveUpException, InterruptedException {
        requireUsable();
        try {
            sink.commit(position);
        } catch (Retry.GaveUpException | InterruptedException | RuntimeException e) {
            handledCount = 0; // the transaction is aborted: its rows are read again
            throw e;
        }
        deliveredHandled();
        tracing.acknowledged(uncommitted.spans);
        uncommitted.spans.clear();
        uncommitted.acknowledged(listener, Instant.now());
    }

    /**
     * Under {@code park-aggregate}: parks the aggregate of a row that could not be routed (its dead letter is in
     * {@code outcomes} already). A row that names no aggregate is only dead-lettered.
     */
    private void park(ChangeEvent change, String reason, List<Outcome> outcomes) {
        if (parking == null) {
            return;
        }
        var aggregate = routing.aggregateOf(change);
        if (aggregate.isEmpty()) {
            LOG.warn("The row at {} of {} names no aggregate: it is dead-lettered, and nothing is parked", change.position(), change.table());
            return;
        }
        parking.poisoned(aggregate.get(), change, routing.eventIdOf(change).orElse(null), reason)
                .ifPresent(marker -> outcomes.add(new Marker(marker)));
    }

    /**
     * Sends at least once, every marker only after what comes before it is acknowledged.
     *
     * @return what Kafka refused, by index in {@code outcomes}
     */
    private List<EventSink.Refused> sendInOrder(List<Outcome> outcomes) throws Retry.GaveUpException, InterruptedException {
        var refused = new ArrayList<EventSink.Refused>();
        int from = 0;
        for (int i = 1; i <= outcomes.size(); i++) {
            if (i == outcomes.size() || outcomes.get(i) instanceof Marker) {
                int offset = from;
                sink.send(records(outcomes.subList(from, i))).forEach(r -> refused.add(r.shifted(offset)));
                from = i;
            }
        }
        return refused;
    }

    /** A change no outbox table explains: the configuration names a table the database calls otherwise. */
    private void unrouted(String table, ChangeEvent change) {
        if (warnedTables.add(table)) {
            LOG.warn("A change from table {} at {} is not routed: it is captured, but source.tables does not name it (as the database "
                    + "spells it). Fix source.tables; counted in outbox_router_unrouted_changes_total", table, change.position());
        }
        listener.unrouted(table);
    }

    private static List<ProducerRecord<byte[], byte[]>> records(List<Outcome> outcomes) {
        return outcomes.stream().map(Outcome::record).toList();
    }
}
