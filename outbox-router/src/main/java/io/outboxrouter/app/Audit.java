package io.outboxrouter.app;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.TopicScan;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * Whether every outbox row still in the table reached Kafka, once and in order per aggregate: the rows are read in commit
 * order, the router's topics and its dead-letter topic from the time of the first row, and matched by event id. Memory
 * stays bounded on large ranges: the aggregates are split into passes (by a hash of their id), each reading the rows and
 * the topics again for its share.
 */
public final class Audit {
    /** Rows held at once; more make more passes. */
    static final long ROWS_PER_PASS = 500_000;
    /** Missing events kept for the report and a repair; more are counted. */
    static final int MISSING_KEPT = 100_000;
    static final int OUT_OF_ORDER_KEPT = 1_000;
    /** Records are stamped when published, after their commit: read from this long before the first row's time. */
    static final Duration CLOCK_MARGIN = Duration.ofMinutes(10);

    /** A row with no record in Kafka. */
    public record Missing(String table, String id, String aggregateType, String aggregateId) {
    }

    /** Two events of one aggregate that reached a partition in the opposite order of their commits. */
    public record OutOfOrder(String aggregateType, String aggregateId, String committedFirst, String committedSecond, String partition) {
    }

    /**
     * @param published      rows with a record (not counting dead letters and replayed copies)
     * @param deadLettered   rows that went to the dead-letter topic
     * @param onlyReplayed   rows whose only records are replayed copies (published again by replay or offsets recover)
     * @param held           rows held in the parking topic (their aggregate is parked) and not published yet
     * @param dropped        rows held by a park that was dropped ({@code parked drop}): not published, and held no more
     * @param duplicates     records beyond the first of a row, replayed copies apart
     * @param replayedCopies replayed copies of rows that have a record of their own
     * @param missingCount   rows with no record at all; {@code missing} keeps the first {@link #MISSING_KEPT}
     * @param orderChecked   the order of commits was known (Postgres with track_commit_timestamp), so order was checked
     */
    public record Report(List<String> topics, int passes, long rows, long records, long published, long deadLettered, long onlyReplayed,
                         long held, long dropped, long duplicates, long replayedCopies, long missingCount, List<Missing> missing, long outOfOrderCount,
                         List<OutOfOrder> outOfOrder, boolean orderChecked) {
        /** Nothing missing, nothing out of order (duplicates are what at-least-once delivery allows). */
        public boolean clean() {
            return missingCount == 0 && outOfOrderCount == 0;
        }
    }

    private final RouterConfig config;
    private final Replay rows;
    private final TopicScan kafka;
    private final List<String> earlierTopics;

    public Audit(RouterConfig config) {
        this(config, List.of());
    }

    /** @param earlierTopics patterns of the topics earlier runs published to under another routing, read as well */
    public Audit(RouterConfig config, List<String> earlierTopics) {
        this.config = config;
        this.rows = new Replay(config);
        this.kafka = new TopicScan(config.kafka());
        this.earlierTopics = List.copyOf(earlierTopics);
    }

    /**
     * The topics the router publishes to (its template, as a pattern), its dead-letter topic, under {@code park-aggregate}
     * its parking topic, and those of the earlier routings given.
     */
    public List<String> topics() throws ExecutionException, InterruptedException {
        var pattern = new StringBuilder(io.outboxrouter.audit.RecordedIds.topicPattern(config));
        earlierTopics.forEach(p -> pattern.append("|(").append(p).append(')'));
        return kafka.topics(Pattern.compile(pattern.toString()));
    }

    /**
     * The event id of every record in the router's topics (events, replayed copies, dead letters, held events) written at
     * or after {@code from}: what the running self-audit matches a start's unproven rows with.
     */
    public void recordedIds(Instant from, Consumer<String> each) throws ExecutionException, InterruptedException {
        kafka.scan(topics(), from, s -> {
            if (s.id() != null) {
                each.accept(s.id());
            }
        });
    }

    /**
     * @param filter   which rows (their time, like replay's --since)
     * @param progress told after each pass
     */
    public Report run(ReplayFilter filter, Consumer<String> progress) throws SQLException, ExecutionException, InterruptedException {
        var topics = topics();
        long total = rows.count(filter);
        int passes = (int) Math.max(1, (total + ROWS_PER_PASS - 1) / ROWS_PER_PASS);
        var t = new Totals();
        String parking = config.routing().deadLetters().parkingTopic();
        var dropped = droppedHolds();
        for (int pass = 0; pass < passes; pass++) {
            int share = pass;
            // Each aggregate's rows in commit order, and which aggregate each event id belongs to: this pass's share only.
            var byAggregate = new LinkedHashMap<String, List<Replay.RowKey>>();
            var rowById = new HashMap<String, Replay.RowKey>();
            rows.forEachRow(filter, r -> {
                if (r.id() != null && r.aggregateId() != null && share(r.aggregateId(), passes) == share) {
                    byAggregate.computeIfAbsent(r.aggregateType() + '\u0000' + r.aggregateId(), k -> new ArrayList<>()).add(r);
                    rowById.put(r.id(), r);
                }
            });
            var seen = new HashMap<String, Occurrences>();
            Instant from = filter.since() == null ? null : filter.since().minus(CLOCK_MARGIN);
            long read = kafka.scan(topics, from, s -> {
                if (s.id() == null || !rowById.containsKey(s.id())) {
                    return;
                }
                seen.computeIfAbsent(s.id(), k -> new Occurrences()).add(s, parking, dropped);
            });
            t.records += read;
            compare(byAggregate, seen, t);
            progress.accept("pass " + (pass + 1) + "/" + passes + ": " + rowById.size() + " row(s) of "
                    + byAggregate.size() + " aggregate(s), " + read + " record(s) read");
        }
        return new Report(topics, passes, total, t.records, t.published, t.deadLettered, t.onlyReplayed, t.held, t.dropped, t.duplicates, t.replayedCopies,
                t.missingCount, t.missing, t.outOfOrderCount, t.outOfOrder, !t.orderUnknown);
    }

    /**
     * The event ids held in the parking topic only by parks that were dropped: neither published nor held any more. Empty
     * unless the router parks.
     */
    private java.util.Set<String> droppedHolds() throws ExecutionException, InterruptedException {
        var deadLetters = config.routing().deadLetters();
        if (deadLetters.policy() != io.outboxrouter.config.RoutingConfig.DeadLetterPolicy.PARK_AGGREGATE) {
            return java.util.Set.of();
        }
        var topic = new io.outboxrouter.kafka.ParkingTopic(config.kafka(), deadLetters.parkingTopic());
        if (!topic.exists()) {
            return java.util.Set.of();
        }
        var droppedParks = new HashSet<String>();
        var heldBy = new HashMap<String, List<String>>();
        topic.read(r -> {
            if (r.action() == io.outboxrouter.kafka.ParkingRecord.Action.DROPPED) {
                droppedParks.add(r.aggregate() + '\u0000' + r.park());
            } else if (r.action() == io.outboxrouter.kafka.ParkingRecord.Action.HOLD && r.event() != null) {
                heldBy.computeIfAbsent(r.event(), k -> new ArrayList<>(1)).add(r.aggregate() + '\u0000' + r.park());
            }
        });
        var out = new HashSet<String>();
        heldBy.forEach((event, parks) -> {
            if (droppedParks.containsAll(parks)) {
                out.add(event);
            }
        });
        return out;
    }

    private static int share(String aggregateId, int passes) {
        return Math.floorMod(aggregateId.hashCode(), passes);
    }

    private static void compare(Map<String, List<Replay.RowKey>> byAggregate, Map<String, Occurrences> seen, Totals t) {
        for (var rowsOfAggregate : byAggregate.values()) {
            // Order is judged only where the order of commits is known, between rows of different transactions (the rows of
            // one transaction have no order among them): per partition, an event that reached Kafka before an event of an
            // earlier transaction is out of order, once (an event put back late is not counted again for each one after it).
            var previousTx = new HashMap<String, long[]>();
            var previousTxLastId = new HashMap<String, String>();
            var currentTx = new HashMap<String, String>();
            var currentTxMax = new HashMap<String, long[]>();
            var currentTxLastId = new HashMap<String, String>();
            for (var row : rowsOfAggregate) {
                var o = seen.get(row.id());
                if (o == null) {
                    t.missingCount++;
                    if (t.missing.size() < MISSING_KEPT) {
                        t.missing.add(new Missing(row.table(), row.id(), row.aggregateType(), row.aggregateId()));
                    }
                    continue;
                }
                if (o.records == 0) {
                    if (o.held > 0) {
                        t.held++;
                    } else if (o.dropped > 0) {
                        t.dropped++;
                    } else if (o.deadLetters > 0) {
                        t.deadLettered++;
                    } else {
                        t.onlyReplayed++;
                    }
                    continue;
                }
                t.published++;
                t.duplicates += o.records - 1;
                t.replayedCopies += o.replayed;
                if (row.transaction() == null) {
                    t.orderUnknown = true;
                    continue;
                }
                String p = o.partition;
                if (!row.transaction().equals(currentTx.get(p))) {
                    if (currentTx.containsKey(p)) {
                        previousTx.put(p, currentTxMax.get(p));
                        previousTxLastId.put(p, currentTxLastId.get(p));
                    }
                    currentTx.put(p, row.transaction());
                    currentTxMax.put(p, new long[] {-1});
                }
                long[] before = previousTx.get(p);
                if (before != null && o.offset < before[0]) {
                    t.outOfOrderCount++;
                    if (t.outOfOrder.size() < OUT_OF_ORDER_KEPT) {
                        t.outOfOrder.add(new OutOfOrder(row.aggregateType(), row.aggregateId(), previousTxLastId.get(p), row.id(), p));
                    }
                }
                long[] max = currentTxMax.get(p);
                if (o.offset > max[0]) {
                    max[0] = o.offset;
                    currentTxLastId.put(p, row.id());
                }
            }
        }
    }

    /** The records of one event: its own (the first fixes its place), replayed copies, dead letters. */
    private static final class Occurrences {
        long records;
        long replayed;
        long deadLetters;
        long held;
        long dropped;
        String partition;
        long offset;

        /**
         * @param parking the parking topic: a record there is held, not published
         * @param dropped the events held only by parks that were dropped
         */
        void add(TopicScan.Seen s, String parking, java.util.Set<String> dropped) {
            if (s.topic().equals(parking)) {
                if (dropped.contains(s.id())) {
                    this.dropped++;
                } else {
                    held++;
                }
            } else if (s.deadLetter()) {
                deadLetters++;
            } else if (s.replayed()) {
                replayed++;
            } else {
                if (records == 0) {
                    partition = s.topic() + "-" + s.partition();
                    offset = s.offset();
                }
                records++;
            }
        }
    }

    private static final class Totals {
        long records;
        long published;
        long deadLettered;
        long onlyReplayed;
        long held;
        long dropped;
        long duplicates;
        long replayedCopies;
        long missingCount;
        final List<Missing> missing = new ArrayList<>();
        long outOfOrderCount;
        final List<OutOfOrder> outOfOrder = new ArrayList<>();
        boolean orderUnknown;
    }
}
