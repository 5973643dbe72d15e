package io.outboxrouter.publish;

import io.outboxrouter.kafka.ParkingTopic;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the parking topic still holds what one stream's parks depend on: the topic's id, and the first offset kept of
 * the stream's partition, against the earliest park marker. Looked at by the follower every little while, and before
 * every release.
 */
final class ParkingWatch {
    private static final Logger LOG = LoggerFactory.getLogger(ParkingWatch.class);

    /** What one look at the topic found. */
    enum Look {
        /** Nothing lost (or the topic could not be looked at): look again later. */
        FINE,
        /** The topic went away while nothing was parked: read it again (creating it) before the next batch. */
        GONE_WITH_NOTHING_PARKED,
        /** Held events are gone, seen twice in a row: reported through the loss handler. */
        LOST,
        /** The stream stopped, or the look was interrupted: stop looking. */
        STOPPED
    }

    private final ParkingTopic topic;
    private final String stream;
    private final int partition;
    /** Where each partition ended when the topic was read: a park written since has its marker after it. */
    private volatile Map<TopicPartition, Long> loadEnds = Map.of();
    /** The topic's id when it was read: another one means it was deleted and created again. */
    private volatile Uuid loadedId;
    /** Where the follower saw this stream's park markers written since the topic was read, by park id. */
    private final Map<String, Long> markerOffsets = new ConcurrentHashMap<>();
    /**
     * Looks that failed in a row (an outage), and whether the last look found a loss, to be confirmed. Reset by each
     * activation's thread while a stopping follower may still be finishing a look.
     */
    private volatile int failedLooks;
    private volatile boolean suspected;
    /** One admin client for every look while the stream runs, rather than one per look; null until the first. */
    private Admin admin;

    ParkingWatch(ParkingTopic topic, String stream, int partition) {
        this.topic = topic;
        this.stream = stream;
        this.partition = partition;
    }

    /** The topic was read whole: its id (null when not known yet) and where each partition ended. */
    void loaded(Uuid id, Map<TopicPartition, Long> ends) {
        loadedId = id;
        loadEnds = Map.copyOf(ends);
        markerOffsets.clear();
        failedLooks = 0;
        suspected = false;
    }

    /** The follower read the marker of a park this stream made since the topic was read. */
    void markerSeen(String park, long offset) {
        markerOffsets.put(park, offset);
    }

    /**
     * One look, from the follower. A topic deleted (or deleted and created again) while nothing is parked loses nothing.
     * Held events gone (the topic deleted, or records deleted by retention or by hand) count only when seen on two looks
     * in a row: a broker's metadata may lag a moment.
     *
     * @param stopped   whether the stream stopped meanwhile: what this process saw is then not its to report
     * @param onLoss    told what was lost, on the second look that finds it
     */
    Look look(Parking.Summary s, BooleanSupplier stopped, Consumer<String> onLoss) {
        if (stopped.getAsBoolean()) {
            return Look.STOPPED;
        }
        Optional<ParkingTopic.Kept> kept;
        try {
            kept = topic.kept(admin());
            failedLooks = 0;
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            if (++failedLooks == 3) {
                LOG.warn("Cannot look at the parking topic {} ({}): a deletion of held events is not noticed until it can", topic.name(),
                        e.getCause() == null ? e.toString() : e.getCause().toString());
            }
            return Look.FINE;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Look.STOPPED;
        }
        if (stopped.getAsBoolean()) {
            return Look.STOPPED;
        }
        if (loadedId == null && kept.isPresent()) {
            loadedId = kept.get().id(); // created just as it was read
        }
        var lost = lossIn(kept, s);
        if (lost.isEmpty()) {
            suspected = false;
            return Look.FINE;
        }
        if (s.parked() == 0) {
            LOG.warn("The parking topic {} {} while nothing of stream {} was parked: nothing is lost; it is read again (and created "
                    + "when missing) before the next batch", topic.name(), kept.isEmpty() ? "was deleted" : "was deleted and created again",
                    stream);
            return Look.GONE_WITH_NOTHING_PARKED;
        }
        if (!suspected) {
            suspected = true;
            return Look.FINE;
        }
        onLoss.accept(lost.get());
        return Look.LOST;
    }

    /**
     * Deletes the stream's partition's records that no park needs any more (those of ended parks, and requests carried
     * out) once they are older than {@code keep-ended-parks}; never from the first record an active park needs. From the
     * follower; a failure is logged and tried again at the next trim.
     */
    void trim(Parking.Summary s) {
        try {
            topic.trim(admin(), partition, neededFrom(s)).ifPresent(from -> LOG.info("Deleted the records of ended parks of stream {} from "
                    + "the parking topic {} (partition {} now starts at offset {}): older than routing.dead-letters.keep-ended-parks", stream,
                    topic.name(), partition, from));
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            LOG.warn("Could not delete the records of ended parks from the parking topic {} ({}); tried again later", topic.name(),
                    e.getCause() == null ? e.toString() : e.getCause().toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private synchronized Admin admin() {
        if (admin == null) {
            admin = topic.admin();
        }
        return admin;
    }

    /** Closes the admin client, if any: the stream stopped (the next activation makes another at its first look). */
    synchronized void close() {
        if (admin != null) {
            admin.close(Duration.ZERO); // a look under way fails, and counts as one that could not be made
            admin = null;
        }
    }

    /** Before a release, which publishes what the topic holds: the loss, if held events are gone from it now. */
    Optional<String> lossBeforeRelease(Parking.Summary s) {
        if (s.parked() == 0) {
            return Optional.empty();
        }
        try {
            return lossIn(topic.kept(admin()), s);
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            return Optional.empty(); // cannot look: the release's read fails the same way, or finds what there is
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while looking at the parking topic " + topic.name(), e);
        }
    }

    /** What the parks lost, if anything, when the topic is as {@code kept} says. */
    private Optional<String> lossIn(Optional<ParkingTopic.Kept> kept, Parking.Summary s) {
        String lost;
        if (kept.isEmpty() || (loadedId != null && !loadedId.equals(kept.get().id()))) {
            lost = "the parking topic " + topic.name() + " " + (kept.isEmpty() ? "was deleted" : "was deleted and created again") + " while "
                    + s.parked() + " aggregate(s) of stream " + stream + " were parked: their held events are gone from it";
        } else {
            long neededFrom = neededFrom(s);
            long first = kept.get().firstOffsets().getOrDefault(partition, 0L);
            if (neededFrom < 0 || first <= neededFrom) {
                return Optional.empty();
            }
            lost = "the parking topic " + topic.name() + " no longer holds partition " + partition + " from offset " + neededFrom
                    + " (it starts at " + first + ": records deleted by retention.ms, retention.bytes or by hand) while " + s.parked()
                    + " aggregate(s) of stream " + stream + " were parked: held events are gone";
        }
        if (s.parked() == 0) {
            return Optional.of(lost);
        }
        return Optional.of(lost + ". Parked: " + s.first().stream().map(p -> p.aggregate() + " (since " + p.since() + ", at "
                + p.position() + ")").toList() + (s.parked() > s.first().size() ? " and " + (s.parked() - s.first().size())
                + " more" : "") + ". " + publishAgain(s.first().stream().map(ParkedAggregates.Park::aggregate).toList()));
    }

    /** How to make up for parked aggregates whose held events are gone: the same advice wherever a loss is found. */
    static String publishAgain(List<String> aggregates) {
        return "Publish each one's events again from the outbox table, in order, before starting again: "
                + aggregates.stream().limit(3).map(a -> "outbox-router replay --aggregate-id " + a).toList()
                + (aggregates.size() > 3 ? " and so on" : "") + " (every row of the aggregate still in the table: the events before "
                + "the park are published again too, and rows older than outbox.retention may be gone); fix its bad row first, then "
                + "start with --accept-gap";
    }

    /**
     * The first offset of the stream's partition the parks depend on (their markers, and the events held after them); -1
     * when nothing is parked. A park written since the topic was read is where the follower saw its marker, or at least
     * where the partition ended when the topic was read.
     */
    private long neededFrom(Parking.Summary s) {
        long loadEnd = loadEnds.getOrDefault(new TopicPartition(topic.name(), partition), 0L);
        return s.offsets().entrySet().stream()
                .mapToLong(e -> e.getValue() >= 0 ? e.getValue() : markerOffsets.getOrDefault(e.getKey(), loadEnd)).min().orElse(-1);
    }
}
