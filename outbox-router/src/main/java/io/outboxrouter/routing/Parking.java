package io.outboxrouter.routing;

import io.outboxrouter.cdc.ChangeEvent;
import io.outboxrouter.kafka.ParkingRecord;
import io.outboxrouter.kafka.ParkingRecord.Action;
import io.outboxrouter.kafka.ParkingTopic;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code park-aggregate} policy's state on a running stream: which aggregates are parked (read from the parking
 * topic when the stream starts), the records that hold their events and mark what happened, and the operator's
 * requests (followed on a thread of their own, carried out on the engine thread between batches). Engine thread only,
 * but for the request queue.
 */
public final class Parking implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Parking.class);

    /** A release or drop to carry out: what to publish, in order, then the marker that ends the park. */
    record Release(ParkedAggregates.Park park, List<ProducerRecord<byte[], byte[]>> publish, ParkingRecord marker) {
    }

    /** What the status page and the metrics show; read from any thread. */
    public record Summary(int parked, Instant oldest, List<ParkedAggregates.Park> first) {
        static final Summary NONE = new Summary(0, null, List.of());
    }

    private final ParkingTopic topic;
    private final String stream;
    private ParkedAggregates state;
    private String run;
    private volatile ParkingTopic.Follower following;
    /** Set when the stream loses its lock or stops: the next batch (of a later activation) reads the topic again. */
    private volatile boolean stale;
    private final ConcurrentLinkedQueue<ParkingRecord> arrived = new ConcurrentLinkedQueue<>();
    private volatile Summary summary = Summary.NONE;

    Parking(ParkingTopic topic, String stream) {
        this.topic = topic;
        this.stream = stream;
    }

    String topic() {
        return topic.name();
    }

    Summary summary() {
        return summary;
    }

    /** What carries the requests out; returns whether one must wait (tried again a second later). */
    @FunctionalInterface
    interface Requests {
        boolean carryOut() throws Exception;
    }

    /**
     * Reads the parking topic on the first batch of an activation: what is parked, and which requests wait; then
     * follows it on a thread of its own, which carries each request out as it arrives (and those that waited).
     */
    void ensureLoaded(Requests requests) throws InterruptedException {
        if (state != null && !stale) {
            return;
        }
        stopFollowing();
        stale = false;
        arrived.clear();
        var loaded = new ParkedAggregates(stream);
        java.util.Map<org.apache.kafka.common.TopicPartition, Long> ends;
        try {
            topic.ensureExists();
            ends = topic.read(loaded::apply);
        } catch (ExecutionException e) {
            throw new IllegalStateException("cannot read the parking topic " + topic.name() + " (routing.dead-letters.parking-topic): "
                    + e.getCause().getMessage(), e.getCause());
        }
        state = loaded;
        run = UUID.randomUUID().toString();
        var parks = state.parks();
        if (!parks.isEmpty()) {
            LOG.warn("{} aggregate(s) of stream {} are parked: their events are held in {} until released ({}{})", parks.size(), stream,
                    topic.name(), parks.stream().limit(5).map(p -> p.aggregate() + " since " + p.since()).toList(),
                    parks.size() > 5 ? ", ..." : "");
        }
        var follow = topic.follow(ends);
        following = follow;
        boolean waiting = !state.pendingRequests().isEmpty();
        var follower = new Thread(() -> {
            boolean pending = waiting;
            try (follow) {
                while (!follow.stopped()) {
                    for (var r : follow.poll(Duration.ofSeconds(1))) {
                        if (r.action() == Action.RELEASE_REQUEST || r.action() == Action.DROP_REQUEST) {
                            LOG.info("Read a {} of aggregate {} (request {})", r.action().wire(), r.aggregate(), r.request());
                            arrived.add(r);
                            pending = true;
                        }
                    }
                    if (pending && !follow.stopped()) {
                        try {
                            pending = requests.carryOut();
                        } catch (InterruptedException e) {
                            return;
                        } catch (Exception e) {
                            LOG.error("A release or drop of a parked aggregate failed ({}); it is tried again at the next start, "
                                    + "or with the next request (a release's events may then be published twice, in order)", e.toString(), e);
                            pending = false;
                        }
                    }
                }
            } catch (RuntimeException e) {
                LOG.warn("Stopped following the parking topic {} for requests ({}); a release or drop is read at the next start",
                        topic.name(), e.toString());
            }
        }, "parking-" + stream);
        follower.setDaemon(true);
        follower.start();
        summarize();
    }

    /** The park an event of this aggregate is held by, if any. */
    Optional<ParkedAggregates.Park> parkOf(String aggregate) {
        return state.park(aggregate);
    }

    /** Holds an event of a parked aggregate: the record to write to the parking topic in its place. */
    ProducerRecord<byte[], byte[]> hold(ParkedAggregates.Park park, ChangeEvent change, String eventId, ProducerRecord<byte[], byte[]> event) {
        var r = ParkingRecord.hold(park.aggregate(), stream, park.id(), run, eventId, change.position(), event);
        state.apply(r);
        return r.toRecord(topic.name());
    }

    /**
     * A row of this aggregate could not be routed (it is dead-lettered): parks the aggregate, or marks the row's place
     * when it is parked already, or marks that the row that parked it is read again.
     */
    ProducerRecord<byte[], byte[]> poisoned(String aggregate, ChangeEvent change, String eventId, String reason) {
        String id = stream + "@" + change.position() + "#" + (eventId == null ? "" : eventId);
        var park = state.park(aggregate);
        ParkingRecord r;
        if (park.isEmpty()) {
            r = ParkingRecord.marker(Action.PARK, aggregate, stream, id, run, eventId, change.position(), reason, null);
            LOG.warn("Parked aggregate {} of stream {}: the row at {} cannot be routed ({}). Its later events are held in {} until "
                    + "`outbox-router parked release {}` (or drop)", aggregate, stream, change.position(), reason, topic.name(), aggregate);
        } else if (park.get().id().equals(id)) {
            // Read again after a restart before a stored position covered it: what this run held so far came before it.
            r = ParkingRecord.marker(Action.REPARK, aggregate, stream, id, run, eventId, change.position(), reason, null);
        } else {
            r = ParkingRecord.marker(Action.SLOT, aggregate, stream, park.get().id(), run, eventId, change.position(), reason, null);
        }
        state.apply(r);
        summarize();
        return r.toRecord(topic.name());
    }

    /**
     * The releases and drops requested, each read whole from the parking topic: call only when every record written
     * before is readable (acknowledged, or committed under exactly-once), with the handler's lock.
     */
    List<Release> takeRequests() {
        for (ParkingRecord r; (r = arrived.poll()) != null; ) {
            state.apply(r);
        }
        var out = new ArrayList<Release>();
        for (var request : state.pendingRequests()) {
            var park = state.park(request.aggregate());
            if (park.isEmpty()) {
                state.forget(request); // parked by another shard's stream
                continue;
            }
            var records = new ArrayList<ParkingRecord>();
            topic.read(r -> {
                if (r.aggregate().equals(request.aggregate())) {
                    records.add(r);
                }
            });
            var held = ParkedAggregates.releaseOrder(records, park.get().id());
            boolean release = request.action() == Action.RELEASE_REQUEST;
            var marker = ParkingRecord.marker(release ? Action.RELEASED : Action.DROPPED, request.aggregate(), stream, park.get().id(), run,
                    null, null, null, request.id());
            LOG.warn("{} aggregate {} of stream {} (parked since {} at {}): {} held event(s) {}", release ? "Releasing" : "Dropping",
                    request.aggregate(), stream, park.get().since(), park.get().position(), held.size(),
                    release ? "published in order" : "not published (they stay in " + topic.name() + ")");
            out.add(new Release(park.get(), release ? held.stream().map(ParkingRecord::released).toList() : List.of(), marker));
        }
        return out;
    }

    /** The marker of a release that Kafka acknowledged: the aggregate flows again. */
    ProducerRecord<byte[], byte[]> released(Release release) {
        state.apply(release.marker());
        summarize();
        return release.marker().toRecord(topic.name());
    }

    private void summarize() {
        var parks = state.parks();
        summary = new Summary(parks.size(), parks.isEmpty() ? null : parks.get(0).since(), parks.stream().limit(20).toList());
    }

    /** Forgets what was read: the next activation reads the topic again (another process may have changed it). */
    @Override
    public void close() {
        stale = true;
        stopFollowing();
    }

    private void stopFollowing() {
        var f = following;
        following = null;
        if (f != null) {
            f.stop(); // the follower's thread closes its consumer
        }
    }
}
