package io.outboxrouter.publish;

import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.kafka.ParkingRecord.Action;
import io.outboxrouter.kafka.ParkingRecord;
import io.outboxrouter.kafka.ParkingTopic;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code park-aggregate} policy's state on a running stream: which aggregates are parked (read from the parking
 * topic as the stream is activated), the records that hold their events and mark what happened, and the operator's
 * requests (followed on a thread of their own, carried out between batches under the handler's lock). The handler's
 * lock guards everything but the request queue and the flags.
 */
public final class Parking implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Parking.class);
    /** How long a failed release waits before it is tried again. */
    private static final Duration RETRY_AFTER = Duration.ofSeconds(30);

    /**
     * A release or drop to carry out: the offsets of the held events to publish, in order (read again as they are
     * published, {@link #publish}), then the marker that ends the park.
     */
    record Release(ParkedAggregates.Park park, long[] publish, ParkingRecord marker) {
    }

    /** Takes the held events of a release, in order, a chunk at a time. */
    @FunctionalInterface
    interface Chunk {
        void accept(List<ProducerRecord<byte[], byte[]>> records) throws Exception;
    }

    /** How many held events a release reads and sends at once. */
    static final int RELEASE_CHUNK = 500;

    /** What the status page and the metrics show; read from any thread. */
    /** @param offsets every park's id, with its marker's offset (-1: written since the topic was read) */
    public record Summary(int parked, Instant oldest, List<ParkedAggregates.Park> first, Map<String, Long> offsets) {
        static final Summary NONE = new Summary(0, null, List.of(), Map.of());
    }

    /** What carries the requests out; returns whether one must wait (tried again a second later). */
    @FunctionalInterface
    interface Requests {
        boolean carryOut() throws Exception;
    }

    private final ParkingTopic topic;
    private final String stream;
    /** The partition this stream writes to: its own when shards share the topic, so that no other's transaction hides it. */
    private final int partition;
    private final int shards;
    private ParkedAggregates state;
    private String run;
    private volatile ParkingTopic.Follower following;
    /** Set when the stream loses its lock or stops: nothing more is held, released or read until the next activation. */
    private volatile boolean stale = true;
    /** Counts {@link #close} calls: a load that a close overtook does not bring the state back. */
    private final java.util.concurrent.atomic.AtomicLong closes = new java.util.concurrent.atomic.AtomicLong();
    private final ConcurrentLinkedQueue<ParkingRecord> arrived = new ConcurrentLinkedQueue<>();
    private volatile Summary summary = Summary.NONE;
    private final ParkingWatch watch;
    /** The topic went away while nothing was parked: read it again (creating it) before the next batch. */
    private volatile boolean reload;
    /** Told when held events are lost from the topic: the stream stops, and the loss is kept for the next start. */
    private volatile java.util.function.Consumer<String> onLoss = problem -> LOG.error("{}", problem);
    /** Where the parks are kept beside the stream's position; what was written there last. */
    private volatile ParkLedger ledger = ParkLedger.NONE;
    private List<ParkedAggregates.Kept> written = List.of();
    /** How often the follower looks at the topic's id and first offsets. */
    private static final Duration WATCH_EVERY = Duration.ofSeconds(10);

    /** @param shard the stream's shard index (0 for a router that is not sharded), and how many there are */
    Parking(ParkingTopic topic, String stream, int shard, int shards) {
        this.topic = topic;
        this.stream = stream;
        this.partition = shard;
        this.shards = Math.max(1, shards);
        this.watch = new ParkingWatch(topic, stream, shard);
    }

    String topic() {
        return topic.name();
    }

    Summary summary() {
        return summary;
    }

    /** Whether the stream was closed since it was activated: a batch still under way must not act on the old state. */
    boolean stale() {
        return stale;
    }

    /** Where the parks are kept beside the stream's position ({@link ParkLedger}). */
    void keepParksIn(ParkLedger ledger) {
        this.ledger = ledger;
    }

    /**
     * Reads the parking topic as the stream is activated: what is parked, and which requests wait; refuses when the
     * offsets table keeps parks the topic lost. Then follows it on a thread of its own, which carries each request out
     * as it arrives (and those that waited).
     *
     * @param acceptLoss the operator started with --accept-gap: parks the topic lost are forgotten (logged), and their
     *                   aggregates flow
     */
    void load(Requests requests, boolean acceptLoss) throws InterruptedException {
        stopFollowing();
        arrived.clear();
        long generation = closes.get();
        var loaded = ParkingLoad.read(topic, stream, shards, () -> closes.get() != generation);
        var ends = loaded.ends();
        state = loaded.parked();
        written = ledger.read();
        var missing = state.missing(written);
        if (!missing.isEmpty()) {
            String problem = missingText(missing);
            if (!acceptLoss) {
                throw new io.outboxrouter.cdc.SourceSetupException(problem);
            }
            LOG.error("{}. Accepted (--accept-gap): they flow again", problem);
        }
        watch.loaded(loaded.id(), ends);
        reload = false;
        run = UUID.randomUUID().toString();
        var parks = state.parks();
        if (!parks.isEmpty()) {
            LOG.warn("{} aggregate(s) of stream {} are parked: their events are held in {} until released ({}{})", parks.size(), stream,
                    topic.name(), parks.stream().limit(5).map(p -> p.aggregate() + " since " + p.since()).toList(),
                    parks.size() > 5 ? ", ..." : "");
        }
        var follow = topic.follow(ends);
        following = follow;
        synchronized (this) { // with close: a close from another thread is never undone here
            if (closes.get() != generation) {
                stopFollowing();
                throw new IllegalStateException("the stream stopped while reading the parking topic " + topic.name());
            }
            stale = false;
        }
        keepNow(); // only once this activation's: a load a close overtook writes nothing
        boolean waiting = !state.pendingRequests().isEmpty();
        var follower = new Thread(() -> follow(follow, requests, waiting), "parking-" + stream);
        follower.setDaemon(true);
        follower.start();
        summarize();
    }

    /** The follower's loop: requests as they arrive; a failed release again after a while; a failed read from where it was. */
    private void follow(ParkingTopic.Follower follow, Requests requests, boolean waiting) {
        boolean pending = waiting;
        long notBefore = 0;
        long nextWatch = System.nanoTime() + WATCH_EVERY.toNanos();
        long nextTrim = System.nanoTime() + trimEvery().toNanos();
        try (follow) {
            while (!follow.stopped()) {
                if (System.nanoTime() - nextWatch >= 0) {
                    nextWatch = System.nanoTime() + WATCH_EVERY.toNanos();
                    var look = watch.look(summary, () -> follow.stopped() || stale, onLoss);
                    if (look == ParkingWatch.Look.GONE_WITH_NOTHING_PARKED) {
                        reload = true;
                    }
                    if (look != ParkingWatch.Look.FINE) {
                        return;
                    }
                }
                if (!topic.keepEnded().isZero() && System.nanoTime() - nextTrim >= 0) {
                    nextTrim = System.nanoTime() + trimEvery().toNanos();
                    watch.trim(summary);
                }
                try {
                    for (var r : follow.poll(Duration.ofSeconds(1))) {
                        if (r.action() == Action.PARK && stream.equals(r.stream()) && r.offset() >= 0) {
                            watch.markerSeen(r.park(), r.offset());
                        }
                        if (r.action() == Action.RELEASE_REQUEST || r.action() == Action.DROP_REQUEST) {
                            LOG.info("Read a {} of aggregate {} (request {})", r.action().wire(), r.aggregate(), r.request());
                            arrived.add(r);
                            pending = true;
                            notBefore = 0;
                        }
                    }
                } catch (RuntimeException e) {
                    LOG.warn("Reading the parking topic {} for requests failed ({}); reading on in 5 s", topic.name(), e.toString());
                    sleep(Duration.ofSeconds(5));
                    continue;
                }
                if (pending && !follow.stopped() && System.nanoTime() - notBefore >= 0) {
                    try {
                        pending = requests.carryOut();
                    } catch (InterruptedException e) {
                        return;
                    } catch (Exception e) {
                        LOG.error("A release or drop of a parked aggregate failed ({}); it is tried again in {} s (a release's events may "
                                + "then be published twice, in order)", e.toString(), RETRY_AFTER.toSeconds(), e);
                        notBefore = System.nanoTime() + RETRY_AFTER.toNanos();
                    }
                }
            }
        }
    }

    private String missingText(List<ParkedAggregates.Kept> missing) {
        var aggregates = missing.stream().map(ParkedAggregates.Kept::aggregate).toList();
        return "the offsets table keeps " + missing.size() + " parked aggregate(s) of stream " + stream + " that the parking topic "
                + topic.name() + " knows nothing of: " + missing.stream().limit(5).map(k -> k.aggregate() + " (since " + k.since()
                + ", at " + k.position() + ")").toList() + (missing.size() > 5 ? " and " + (missing.size() - 5) + " more" : "")
                + ". The topic was deleted, or its records, while the router was stopped, and their held events are gone from it. "
                + ParkingWatch.publishAgain(aggregates);
    }

    /**
     * Keeps the parks beside the stream's position when they changed: after their markers are acknowledged (committed),
     * with the handler's lock. A failed write fails the batch, which is sent again.
     */
    void keep() {
        if (!stale) {
            keepNow();
        }
    }

    private void keepNow() {
        var now = state.kept();
        if (!sameParks(now, written)) {
            ledger.write(now);
            written = now;
        }
    }

    private static boolean sameParks(List<ParkedAggregates.Kept> a, List<ParkedAggregates.Kept> b) {
        return a.size() == b.size() && a.stream().map(ParkedAggregates.Kept::park).collect(java.util.stream.Collectors.toSet())
                .equals(b.stream().map(ParkedAggregates.Kept::park).collect(java.util.stream.Collectors.toSet()));
    }

    /** How often the follower deletes the records of ended parks: a tenth of how long they are kept, from 1 s to 10 min. */
    private Duration trimEvery() {
        long tenth = topic.keepEnded().toMillis() / 10;
        return Duration.ofMillis(Math.max(1_000, Math.min(Duration.ofMinutes(10).toMillis(), tenth)));
    }

    /** Where held events that are lost are reported: the stream stops, and the loss is kept for the next start. */
    void onLoss(java.util.function.Consumer<String> onLoss) {
        this.onLoss = onLoss;
    }

    /**
     * Before a batch, with the handler's lock: the topic went away while nothing was parked, so it is read (and created)
     * again. A park made since went to the topic that went away: that stops the stream as a loss does.
     */
    void reloadIfNeeded(Requests requests) throws InterruptedException {
        if (!reload) {
            return;
        }
        if (summary.parked() > 0) {
            var aggregates = summary.first().stream().map(ParkedAggregates.Park::aggregate).toList();
            String problem = "the parking topic " + topic.name() + " went away while aggregate(s) of stream " + stream + " were being "
                    + "parked (" + aggregates + "): their held events may be gone. " + ParkingWatch.publishAgain(aggregates);
            onLoss.accept(problem);
            throw new IllegalStateException(problem);
        }
        load(requests, false);
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The park an event of this aggregate is held by, if any. */
    Optional<ParkedAggregates.Park> parkOf(String aggregate) {
        return state.park(aggregate);
    }

    /** The parking record that holds an event of a parked aggregate; {@link #held} once it is to be sent. */
    ParkingRecord hold(ParkedAggregates.Park park, ChangeEvent change, String eventId, ProducerRecord<byte[], byte[]> event) {
        return ParkingRecord.hold(park.aggregate(), stream, park.id(), run, eventId, change.rowPosition(), event);
    }

    /** The id a park made by this row has: its stream, position and event id. */
    String parkId(ChangeEvent change, String eventId) {
        return stream + "@" + change.rowPosition() + "#" + (eventId == null ? "" : eventId);
    }

    /** A held event goes out: counted, and the record to send. */
    ProducerRecord<byte[], byte[]> held(ParkingRecord hold) {
        state.apply(hold);
        return hold.toRecord(topic.name(), partition);
    }

    /**
     * A row of this aggregate could not be routed (it is dead-lettered): parks the aggregate, or marks the row's place
     * when it is parked already, or marks that the row that parked it is read again. Empty when the row's park was
     * released or dropped already (read again after a crash): its aggregate flows.
     */
    Optional<ProducerRecord<byte[], byte[]>> poisoned(String aggregate, ChangeEvent change, String eventId, String reason) {
        String id = parkId(change, eventId);
        if (state.finished(aggregate, id)) {
            LOG.warn("The row at {} that parked aggregate {} is read again after its park ended: dead-lettered again, and the "
                    + "aggregate flows", change.position(), aggregate);
            return Optional.empty();
        }
        var park = state.park(aggregate);
        ParkingRecord r;
        if (park.isEmpty()) {
            r = ParkingRecord.marker(Action.PARK, aggregate, stream, id, run, eventId, change.rowPosition(), reason, null);
            LOG.warn("Parked aggregate {} of stream {}: the row at {} cannot be routed ({}). Its later events are held in {} until "
                    + "`outbox-router parked release {}` (or drop)", aggregate, stream, change.rowPosition(), reason, topic.name(), aggregate);
        } else if (park.get().id().equals(id)) {
            // Read again (a restart, or the connector's own restart) before a stored position covered it: what was held
            // before came before it.
            r = ParkingRecord.marker(Action.REPARK, aggregate, stream, id, run, eventId, change.rowPosition(), reason, null);
        } else {
            r = ParkingRecord.marker(Action.SLOT, aggregate, stream, park.get().id(), run, eventId, change.rowPosition(), reason, null);
        }
        state.apply(r);
        summarize();
        return Optional.of(r.toRecord(topic.name(), partition));
    }

    /**
     * The releases and drops requested, each read whole from the parking topic: call only when every record written
     * before is readable (acknowledged, or committed under exactly-once), with the handler's lock. Nothing changes
     * until {@link #done} says the release went out.
     */
    List<Release> takeRequests() {
        for (ParkingRecord r; (r = arrived.poll()) != null; ) {
            state.apply(r);
        }
        if (!state.pendingRequests().isEmpty()) {
            // A release publishes what the topic holds: not when held events are gone from it.
            var lost = watch.lossBeforeRelease(summary);
            if (lost.isPresent()) {
                onLoss.accept(lost.get());
                throw new IllegalStateException(lost.get());
            }
        }
        var requests = new ArrayList<ParkedAggregates.Request>();
        for (var request : state.pendingRequests()) {
            if (state.park(request.aggregate()).isEmpty()) {
                state.forget(request); // parked by another shard's stream
            } else {
                requests.add(request);
            }
        }
        // One read of the topic for every request taken now, each park's steps kept apart (not its held records).
        var stepsOf = new java.util.HashMap<String, List<ParkedAggregates.Step>>();
        requests.forEach(request -> stepsOf.put(state.park(request.aggregate()).get().id(), new ArrayList<>()));
        if (!requests.isEmpty()) {
            topic.read(r -> {
                var steps = r.park() == null || !stream.equals(r.stream()) ? null : stepsOf.get(r.park());
                if (steps != null) {
                    steps.add(ParkedAggregates.Step.of(r));
                }
            });
        }
        var out = new ArrayList<Release>();
        for (var request : requests) {
            var park = state.park(request.aggregate());
            var steps = stepsOf.get(park.get().id());
            var order = ParkedAggregates.releaseIndices(steps);
            var held = new long[order.length];
            for (int i = 0; i < order.length; i++) {
                held[i] = steps.get(order[i]).offset();
            }
            boolean release = request.action() == Action.RELEASE_REQUEST;
            var marker = ParkingRecord.marker(release ? Action.RELEASED : Action.DROPPED, request.aggregate(), stream, park.get().id(), run,
                    null, null, null, request.id());
            LOG.warn("{} aggregate {} of stream {} (parked since {} at {}): {} held event(s) {}", release ? "Releasing" : "Dropping",
                    request.aggregate(), stream, park.get().since(), park.get().position(), held.length,
                    release ? "to be published in order" : "not published (they stay in " + topic.name() + ")");
            out.add(new Release(park.get(), release ? held : new long[0], marker));
        }
        return out;
    }

    /** Reads the release's held events again, in order, and hands them on as the records to publish, a chunk at a time. */
    void publish(Release release, Chunk each) throws Exception {
        topic.fetch(partition, release.publish(), RELEASE_CHUNK, records -> each.accept(records.stream().map(ParkingRecord::released).toList()));
    }

    /** The marker of a release, to send once its events are acknowledged. */
    ProducerRecord<byte[], byte[]> marker(Release release) {
        return release.marker().toRecord(topic.name(), partition);
    }

    /** The release's events and marker are acknowledged (committed): the aggregate flows again. */
    void done(Release release) {
        state.apply(release.marker());
        LOG.warn("Aggregate {} of stream {} flows again ({})", release.park().aggregate(), stream,
                release.marker().action() == Action.RELEASED ? release.publish().length + " held event(s) published" : "dropped");
        summarize();
    }

    private void summarize() {
        var parks = state.parks();
        var offsets = new java.util.HashMap<String, Long>();
        parks.forEach(p -> offsets.put(p.id(), p.offset()));
        summary = new Summary(parks.size(), parks.isEmpty() ? null : parks.get(0).since(), parks.stream().limit(20).toList(),
                Map.copyOf(offsets));
    }

    /** Stops following the topic; the next activation reads it again (another process may have changed it). */
    @Override
    public void close() {
        synchronized (this) {
            stale = true;
            closes.incrementAndGet();
        }
        stopFollowing();
        watch.close();
    }

    /** Makes a {@link #load} under way give up, and leaves what is loaded as it is. */
    void cancelLoad() {
        closes.incrementAndGet();
    }

    private void stopFollowing() {
        var f = following;
        following = null;
        if (f != null) {
            f.stop(); // the follower's thread closes its consumer
        }
    }
}
