package io.outboxrouter.publish;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.kafka.ParkingRecord.Action;
import io.outboxrouter.kafka.ParkingRecord;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/** Which aggregates the parking topic's records leave parked, and the order a release publishes a park's events in. */
class ParkedAggregatesTest {
    private static final String PARK = "orders@lsn:0/10#e2";

    private static ParkingRecord park(String aggregate, String parkId, String event) {
        return ParkingRecord.marker(Action.PARK, aggregate, "orders", parkId, "run1", event, "lsn:0/10", "null_event_id: bad", null);
    }

    private static ParkingRecord hold(String event, String position, String run) {
        var record = new ProducerRecord<byte[], byte[]>("outbox.event.order", null, "A".getBytes(StandardCharsets.UTF_8),
                event.getBytes(StandardCharsets.UTF_8));
        return ParkingRecord.hold("A", "orders", PARK, run, event, position, record);
    }

    private static ParkingRecord marker(Action action, String run, String event, String request) {
        return ParkingRecord.marker(action, "A", action.name().endsWith("REQUEST") ? null : "orders",
                action.name().endsWith("REQUEST") ? null : PARK, run, event, null, null, request);
    }

    private static List<String> events(List<ParkingRecord> records) {
        return records.stream().map(ParkingRecord::event).toList();
    }

    @Test
    void anAggregateIsParkedUntilItsParkIsReleasedOrDropped() {
        var state = new ParkedAggregates("orders");
        state.apply(park("A", PARK, "e2"));
        state.apply(hold("e3", "lsn:0/20", "run1"));
        state.apply(hold("e4", "lsn:0/30", "run1"));
        assertThat(state.park("A")).hasValueSatisfying(p -> {
            assertThat(p.held()).isEqualTo(2);
            assertThat(p.event()).isEqualTo("e2");
        });
        assertThat(state.park("B")).isEmpty();

        state.apply(marker(Action.RELEASE_REQUEST, null, null, "r1"));
        assertThat(state.pendingRequests()).extracting(ParkedAggregates.Request::id).containsExactly("r1");
        state.apply(marker(Action.RELEASED, "run1", null, "r1"));
        assertThat(state.park("A")).isEmpty();
        assertThat(state.pendingRequests()).isEmpty();

        // Parked again later: a new park, with no request carried over.
        state.apply(park("A", "orders@lsn:0/90#e9", "e9"));
        assertThat(state.park("A")).hasValueSatisfying(p -> assertThat(p.id()).isEqualTo("orders@lsn:0/90#e9"));
        assertThat(state.pendingRequests()).isEmpty();
    }

    @Test
    void anotherStreamsParksAndRequestsForWhatIsNotParkedAreNotThisStreams() {
        var state = new ParkedAggregates("orders-shard-1");
        state.apply(park("A", PARK, "e2"));
        assertThat(state.park("A")).isEmpty();
        state.apply(marker(Action.DROP_REQUEST, null, null, "r1"));
        assertThat(state.pendingRequests()).isEmpty();

        var all = new ParkedAggregates(null);
        all.apply(park("A", PARK, "e2"));
        assertThat(all.parks()).extracting(ParkedAggregates.Park::aggregate).containsExactly("A");
    }

    @Test
    void aReleasePublishesEachHeldEventOnceInTheOrderHeld() {
        var records = new ArrayList<ParkingRecord>();
        records.add(park("A", PARK, null));
        records.add(hold("e3", "lsn:0/20", "run1"));
        records.add(hold("e4", "lsn:0/30", "run1"));
        // A restart after the crash of run1 holds e4 again (its position was not stored), then e5.
        records.add(hold("e4", "lsn:0/30", "run2"));
        records.add(hold("e5", "lsn:0/40", "run2"));
        records.add(park("B", "orders@lsn:0/25#b1", "b1")); // another aggregate's park is not this one's
        assertThat(events(ParkedAggregates.releaseOrder(records, PARK))).containsExactly("e3", "e4", "e5");
    }

    @Test
    void theFixedCopyOfTheBadRowTakesItsPlace() {
        var records = new ArrayList<ParkingRecord>();
        records.add(park("A", PARK, "e2"));
        records.add(hold("e3", "lsn:0/20", "run1"));
        records.add(ParkingRecord.marker(Action.SLOT, "A", "orders", PARK, "run1", "e4", "lsn:0/30", "missing_column", null));
        records.add(hold("e5", "lsn:0/40", "run1"));
        records.add(hold("e2", "lsn:0/50", "run1")); // e2 fixed and inserted again
        records.add(hold("e4", "lsn:0/60", "run1")); // e4 too
        assertThat(events(ParkedAggregates.releaseOrder(records, PARK))).containsExactly("e2", "e3", "e4", "e5");
    }

    @Test
    void whatARunHeldBeforeReadingTheBadRowAgainWasPublishedAndIsLeftOut() {
        var records = new ArrayList<ParkingRecord>();
        records.add(park("A", PARK, "e2"));
        records.add(hold("e3", "lsn:0/20", "run1"));
        // run1 crashed before storing a position past the bad row: run2 reads e1 (before it) again, holds it, then the row.
        records.add(hold("e1", "lsn:0/05", "run2"));
        records.add(marker(Action.REPARK, "run2", "e2", null));
        records.add(hold("e3", "lsn:0/20", "run2"));
        records.add(hold("e4", "lsn:0/30", "run2"));
        assertThat(events(ParkedAggregates.releaseOrder(records, PARK))).containsExactly("e3", "e4");
    }

    @Test
    void aReparkVoidsWhatEveryEarlierRunHeld() {
        var records = new ArrayList<ParkingRecord>();
        records.add(park("A", PARK, "e2"));
        records.add(hold("e3", "lsn:0/20", "run1"));
        // run2 starts before the bad row, holds e1 (published before the park) and crashes before reading the row again;
        // run3 does the same, reads the row again, and holds what follows it once more.
        records.add(hold("e1", "lsn:0/05", "run2"));
        records.add(hold("e1", "lsn:0/05", "run3"));
        records.add(marker(Action.REPARK, "run3", "e2", null));
        records.add(hold("e3", "lsn:0/20", "run3"));
        assertThat(events(ParkedAggregates.releaseOrder(records, PARK))).containsExactly("e3");
    }

    @Test
    void aSlotBeforeAReparkIsMarkedAgainAfterIt() {
        var records = new ArrayList<ParkingRecord>();
        records.add(park("A", PARK, "e2"));
        records.add(hold("e3", "lsn:0/20", "run1"));
        records.add(ParkingRecord.marker(Action.SLOT, "A", "orders", PARK, "run1", "e4", "lsn:0/30", "missing_column", null));
        records.add(marker(Action.REPARK, "run2", "e2", null));
        records.add(hold("e3", "lsn:0/20", "run2"));
        records.add(ParkingRecord.marker(Action.SLOT, "A", "orders", PARK, "run2", "e4", "lsn:0/30", "missing_column", null));
        records.add(hold("e5", "lsn:0/40", "run2"));
        records.add(hold("e4", "lsn:0/50", "run2")); // the fixed e4
        assertThat(events(ParkedAggregates.releaseOrder(records, PARK))).containsExactly("e3", "e4", "e5");
    }

    @Test
    void theRowOfAFinishedParkParksNothingWhenReadAgain() {
        var state = new ParkedAggregates("orders");
        state.apply(park("A", PARK, "e2"));
        state.apply(marker(Action.RELEASE_REQUEST, null, null, "r1"));
        state.apply(marker(Action.RELEASED, "run1", null, "r1"));
        assertThat(state.finished("A", PARK)).isTrue();
        assertThat(state.finished("B", PARK)).isFalse();
        state.apply(park("A", PARK, "e2")); // written by a run that read the row again before it knew
        assertThat(state.park("A")).isEmpty();
    }

    @Test
    void recordsRoundTripThroughKafkasShape() {
        var held = hold("e3", "lsn:0/20", "run1");
        var produced = held.toRecord("outbox.parked");
        produced.headers().add("traceparent", "00-abc".getBytes(StandardCharsets.UTF_8));
        var consumed = new org.apache.kafka.clients.consumer.ConsumerRecord<>("outbox.parked", 0, 7L, 1_000L,
                org.apache.kafka.common.record.TimestampType.CREATE_TIME, 0, 0, produced.key(), produced.value(), produced.headers(),
                java.util.Optional.empty());
        var read = ParkingRecord.of(consumed).orElseThrow();
        assertThat(read.action()).isEqualTo(Action.HOLD);
        assertThat(read.aggregate()).isEqualTo("A");
        assertThat(read.park()).isEqualTo(PARK);
        assertThat(read.time()).isEqualTo(Instant.ofEpochMilli(1_000));
        var released = read.released();
        assertThat(released.topic()).isEqualTo("outbox.event.order");
        assertThat(new String(released.key(), StandardCharsets.UTF_8)).isEqualTo("A");
        assertThat(new String(released.value(), StandardCharsets.UTF_8)).isEqualTo("e3");
        assertThat(released.headers().toArray()).extracting(h -> h.key()).containsExactly("traceparent");
    }
}
