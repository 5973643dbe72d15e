package io.outboxrouter.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * One record of the parking topic, keyed by aggregate id: a held event (its record as it would have been published, with
 * its topic and key in headers), a marker of what happened to a parked aggregate, or an operator's request. What the
 * router does with each is in {@code ParkedAggregates}; the format is documented in docs/parking.md.
 *
 * @param stream   the router (or shard) stream that parked the aggregate; null for a request (any stream)
 * @param park     the park this belongs to: the stream, position and event id of the row that parked it
 * @param run      the router process that wrote a held event or a re-park marker
 * @param event    the outbox event id of a held event or of a row that could not be routed; null when it has none
 * @param position the source position of that row
 * @param request  a request's id, echoed by the marker that carries it out
 * @param topic    a held event's topic; {@code key}, {@code value} and {@code headers} are its record's
 * @param offset   where the record is in its partition; -1 before it is written
 */
public record ParkingRecord(Action action, String aggregate, String stream, String park, String run, String event, String position,
                            String reason, String request, String topic, byte[] key, byte[] value, List<Header> headers,
                            Instant time, long offset) {

    public enum Action {
        /** The aggregate is parked: the row at this position could not be routed (it was dead-lettered). */
        PARK,
        /** Another row of a parked aggregate could not be routed (dead-lettered): its place among the held events. */
        SLOT,
        /** An event of a parked aggregate, held. */
        HOLD,
        /**
         * The parking row was read again after a crash, before the stored position covered it: the events of this run held
         * before this marker came before that row and were published already.
         */
        REPARK,
        RELEASE_REQUEST,
        DROP_REQUEST,
        /** The held events were published, and the aggregate flows again. */
        RELEASED,
        /** The held events were dropped (they stay in this topic), and the aggregate flows again. */
        DROPPED;

        public String wire() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        static Optional<Action> of(String wire) {
            for (Action a : values()) {
                if (a.wire().equals(wire)) {
                    return Optional.of(a);
                }
            }
            return Optional.empty();
        }
    }

    static final String PREFIX = "outbox-router.parking.";
    private static final String ACTION = PREFIX + "action";
    private static final String STREAM = PREFIX + "stream";
    private static final String PARK = PREFIX + "park";
    private static final String RUN = PREFIX + "run";
    private static final String EVENT = PREFIX + "event";
    private static final String POSITION = PREFIX + "position";
    private static final String REASON = PREFIX + "reason";
    private static final String REQUEST = PREFIX + "request";
    private static final String TOPIC = PREFIX + "topic";
    private static final String KEY = PREFIX + "key";

    /** A marker or request (no event record). */
    public static ParkingRecord marker(Action action, String aggregate, String stream, String park, String run, String event,
                                       String position, String reason, String request) {
        return new ParkingRecord(action, aggregate, stream, park, run, event, position, reason, request, null, null, null, List.of(),
                null, -1);
    }

    /** A held event: the record it would have been, kept whole. */
    public static ParkingRecord hold(String aggregate, String stream, String park, String run, String event, String position,
                                     ProducerRecord<byte[], byte[]> held) {
        var headers = new ArrayList<Header>();
        held.headers().forEach(headers::add);
        return new ParkingRecord(Action.HOLD, aggregate, stream, park, run, event, position, null, null, held.topic(), held.key(),
                held.value(), List.copyOf(headers), null, -1);
    }

    /** The record to write to the parking topic, in the partition of the aggregate id's hash. */
    public ProducerRecord<byte[], byte[]> toRecord(String parkingTopic) {
        return toRecord(parkingTopic, null);
    }

    /** The record to write to the parking topic, in {@code partition} (null: by the aggregate id's hash). */
    public ProducerRecord<byte[], byte[]> toRecord(String parkingTopic, Integer partition) {
        var out = new ProducerRecord<byte[], byte[]>(parkingTopic, partition, aggregate.getBytes(StandardCharsets.UTF_8), value);
        headers.forEach(h -> out.headers().add(h));
        add(out, ACTION, action.wire());
        add(out, STREAM, stream);
        add(out, PARK, park);
        add(out, RUN, run);
        add(out, EVENT, event);
        add(out, POSITION, position);
        add(out, REASON, reason);
        add(out, REQUEST, request);
        add(out, TOPIC, topic);
        if (key != null) {
            out.headers().add(KEY, key);
        }
        return out;
    }

    /** The held event as it is published on release: its topic, key, value and headers, without the parking headers. */
    public ProducerRecord<byte[], byte[]> released() {
        var out = new ProducerRecord<byte[], byte[]>(topic, null, key, value);
        headers.forEach(h -> out.headers().add(h));
        return out;
    }

    /** A record read from the parking topic; empty when it is not one the router wrote (no action header it knows). */
    public static Optional<ParkingRecord> of(ConsumerRecord<byte[], byte[]> r) {
        var action = text(r, ACTION).flatMap(Action::of);
        if (action.isEmpty() || r.key() == null) {
            return Optional.empty();
        }
        var original = new ArrayList<Header>();
        r.headers().forEach(h -> {
            if (!h.key().startsWith(PREFIX)) {
                original.add(new RecordHeader(h.key(), h.value()));
            }
        });
        var key = r.headers().lastHeader(KEY);
        return Optional.of(new ParkingRecord(action.get(), new String(r.key(), StandardCharsets.UTF_8), text(r, STREAM).orElse(null),
                text(r, PARK).orElse(null), text(r, RUN).orElse(null), text(r, EVENT).orElse(null), text(r, POSITION).orElse(null),
                text(r, REASON).orElse(null), text(r, REQUEST).orElse(null), text(r, TOPIC).orElse(null),
                key == null ? null : key.value(), r.value(), List.copyOf(original), Instant.ofEpochMilli(r.timestamp()), r.offset()));
    }

    private static Optional<String> text(ConsumerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null || h.value() == null ? Optional.empty() : Optional.of(new String(h.value(), StandardCharsets.UTF_8));
    }

    private static void add(ProducerRecord<byte[], byte[]> r, String name, String value) {
        if (value != null) {
            r.headers().add(name, value.getBytes(StandardCharsets.UTF_8));
        }
    }
}
