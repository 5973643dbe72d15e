package io.outboxrouter.publish;

import io.outboxrouter.kafka.ParkingRecord.Action;
import io.outboxrouter.kafka.ParkingRecord;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Which aggregates are parked, folded from the parking topic's records in order, and the order a release publishes a
 * park's held events in. No I/O: the router feeds it what it reads and what it writes, {@code parked list} what it reads.
 */
public final class ParkedAggregates {

    /**
     * @param id       the park's id: the stream, position and event id of the row that parked it
     * @param event    the event id of that row (its fixed copy, inserted again with this id, is released first); may be null
     * @param held     events held so far (a crash may count some twice; a release sends each once)
     * @param offset   where its park marker is in the topic's partition; -1 when written since the topic was read
     */
    public record Park(String stream, String aggregate, String id, String reason, String position, String event, Instant since,
                       long held, long offset) {
        Park withHeld(long n) {
            return new Park(stream, aggregate, id, reason, position, event, since, n, offset);
        }
    }

    /**
     * A park as the offsets table keeps it beside the stream's position ({@link ParkLedger}), so that a parking topic that
     * lost it is found.
     */
    public record Kept(String aggregate, String park, String position, Instant since) {
        static Kept of(Park p) {
            return new Kept(p.aggregate(), p.id(), p.position(), p.since());
        }
    }

    /** An operator's request not carried out yet. */
    public record Request(Action action, String aggregate, String id, Instant at) {
    }

    private record Key(String stream, String aggregate) {
    }

    /** Only this stream's parks; null: every stream's. */
    private final String stream;
    private final Map<Key, Park> parked = new LinkedHashMap<>();
    private final Map<String, Request> requests = new LinkedHashMap<>();
    /** Every stream that wrote to the topic. */
    private final Set<String> streams = new java.util.TreeSet<>();
    /** Parks released or dropped: their row, read again after a crash, parks nothing. */
    private final Set<String> finished = new HashSet<>();

    public ParkedAggregates(String stream) {
        this.stream = stream;
    }

    public void apply(ParkingRecord r) {
        Instant time = r.time() == null ? Instant.now() : r.time();
        if (r.stream() != null) {
            streams.add(r.stream());
        }
        if (r.action() == Action.RELEASE_REQUEST || r.action() == Action.DROP_REQUEST) {
            // A request is for the park it was made under: one for an aggregate not parked then applies to no later park.
            if (parked.keySet().stream().anyMatch(k -> k.aggregate().equals(r.aggregate()))) {
                requests.put(r.aggregate(), new Request(r.action(), r.aggregate(), r.request(), time));
            }
            return;
        }
        if (r.stream() == null || (stream != null && !stream.equals(r.stream()))) {
            return;
        }
        var key = new Key(r.stream(), r.aggregate());
        var park = parked.get(key);
        switch (r.action()) {
            case PARK -> {
                if (park == null && !finished(r.aggregate(), r.park())) {
                    requests.remove(r.aggregate());
                    parked.put(key, new Park(r.stream(), r.aggregate(), r.park(), r.reason(), r.position(), r.event(), time, 0, r.offset()));
                }
            }
            case HOLD -> {
                if (park != null && park.id().equals(r.park())) {
                    parked.put(key, park.withHeld(park.held() + 1));
                }
            }
            case RELEASED, DROPPED -> {
                finished.add(r.aggregate() + '\u0000' + r.park());
                if (park != null && park.id().equals(r.park())) {
                    parked.remove(key);
                }
                var request = requests.get(r.aggregate());
                if (request != null && request.id().equals(r.request())) {
                    requests.remove(r.aggregate());
                }
            }
            default -> {
                // SLOT and REPARK change nothing here: they matter to the release order
            }
        }
    }

    /** This stream's park of an aggregate. */
    public Optional<Park> park(String aggregate) {
        return Optional.ofNullable(parked.get(new Key(stream, aggregate)));
    }

    /** The streams (routers and shards) whose records the topic holds. */
    public Set<String> streams() {
        return streams;
    }

    /** Whether this aggregate's park of this id was released or dropped. */
    public boolean finished(String aggregate, String parkId) {
        return finished.contains(aggregate + '\u0000' + parkId);
    }

    /**
     * The parks the offsets table keeps that this topic knows nothing of: neither parked nor ended here. Their markers
     * and held events are gone from the topic (deleted, or its records, while the router was stopped).
     */
    public List<Kept> missing(List<Kept> kept) {
        return kept.stream().filter(k -> !finished(k.aggregate(), k.park())
                && park(k.aggregate()).filter(p -> p.id().equals(k.park())).isEmpty()).toList();
    }

    /** The parks to keep in the offsets table: every one of this stream's, oldest first. */
    public List<Kept> kept() {
        return parks().stream().map(Kept::of).toList();
    }

    /** Every park, oldest first. */
    public List<Park> parks() {
        var out = new ArrayList<>(parked.values());
        out.sort(Comparator.comparing(Park::since));
        return out;
    }

    /** The requests for aggregates parked now, oldest first; a request for one that is not parked is passed over. */
    public List<Request> pendingRequests() {
        var out = new ArrayList<Request>();
        for (var r : requests.values()) {
            boolean parkedHere = parked.keySet().stream().anyMatch(k -> k.aggregate().equals(r.aggregate()));
            if (parkedHere) {
                out.add(r);
            }
        }
        return out;
    }

    /** Forgets a request that applies to nothing parked. */
    public void forget(Request request) {
        requests.remove(request.aggregate(), request);
    }

    /**
     * What a release needs of one record of a park, without the held event's record: a park of any size is planned in a
     * few dozen bytes per held event, and the records are read again, in the planned order, as they are published.
     *
     * @param event    a hash of the record's event id ({@link #NO_EVENT} when it has none)
     * @param identity a hash of a held event's id and position: a crash may have held the same row twice
     * @param offset   where the record is in its partition
     */
    public record Step(Action action, long event, long identity, long offset) {
        static final long NO_EVENT = 0;

        public static Step of(ParkingRecord r) {
            long event = r.event() == null ? NO_EVENT : io.outboxrouter.audit.DeliveredIds.hash(r.event()) | 1; // never NO_EVENT
            return new Step(r.action(), event, r.action() == Action.HOLD ? io.outboxrouter.audit.DeliveredIds.hash(ParkedAggregates.identity(r)) : 0,
                    r.offset());
        }
    }

    /**
     * The held events of a park, in the order a release publishes them: as they were held, each once; a held event
     * whose id is that of a row that could not be routed (its fixed copy) takes that row's place. A re-park (the row
     * that parked the aggregate read again, after a crash before a stored position covered it) voids what came before
     * it: the held events before it were published already or are held again after it, in order.
     *
     * @param records the aggregate's records of the parking topic, in order
     */
    public static List<ParkingRecord> releaseOrder(List<ParkingRecord> records, String parkId) {
        var ofPark = records.stream().filter(r -> parkId.equals(r.park())).toList();
        var out = new ArrayList<ParkingRecord>();
        for (int i : releaseIndices(ofPark.stream().map(Step::of).toList())) {
            out.add(ofPark.get(i));
        }
        return out;
    }

    /** {@link #releaseOrder} on a park's steps, in order: the indexes of the held events to publish, in the order to publish them. */
    public static int[] releaseIndices(List<Step> ofPark) {
        int lastRepark = -1;
        for (int i = 0; i < ofPark.size(); i++) {
            if (ofPark.get(i).action() == Action.REPARK) {
                lastRepark = i;
            }
        }
        var out = new int[ofPark.size()];
        int n = 0;
        var used = new java.util.BitSet(ofPark.size());
        var sent = new io.outboxrouter.audit.LongSet(16);
        for (int i = 0; i < ofPark.size(); i++) {
            var r = ofPark.get(i);
            boolean place = r.action() == Action.PARK || r.action() == Action.REPARK || (r.action() == Action.SLOT && i > lastRepark);
            if (place && r.event() != Step.NO_EVENT) {
                for (int j = Math.max(0, lastRepark); j < ofPark.size(); j++) {
                    var fix = ofPark.get(j);
                    if (fix.action() == Action.HOLD && j > lastRepark && !used.get(j) && r.event() == fix.event()) {
                        used.set(j);
                        if (sent.add(fix.identity())) {
                            out[n++] = j;
                        }
                        break;
                    }
                }
            } else if (r.action() == Action.HOLD && i > lastRepark && !used.get(i) && sent.add(r.identity())) {
                out[n++] = i;
            }
        }
        return java.util.Arrays.copyOf(out, n);
    }

    private static String identity(ParkingRecord held) {
        return held.event() + "@" + held.position();
    }
}
