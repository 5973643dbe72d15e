package io.outboxrouter.audit;

import io.outboxrouter.audit.AuditReads.Bound;
import io.outboxrouter.audit.AuditReads.Window;
import io.outboxrouter.cdc.OutboxSql;
import io.outboxrouter.config.Durations;
import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running self-audit ({@code outbox.audit}): whatever the cause, an outbox row that committed and that the stream
 * passed without delivering is found. Every interval, in one snapshot, it reads the ids of the rows dated (by the time
 * column) since its last read and at least the lag ago, with the log mark that every transaction visible there committed
 * before, and matches them with {@link DeliveredIds}. A row still unmatched once the stream has stored a position past
 * the mark, at two looks in a row, was never delivered: the router stops naming it, or publishes it again.
 *
 * <p>The rows dated before this process's stream began (its stored position's commit time) were delivered by an earlier
 * process: those after what an earlier audit proved are matched with the records in Kafka instead, once, at the start.
 * How far every row is proven published is kept per table in the offsets table; retention deletes nothing dated after it.
 */
public final class SelfAudit implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SelfAudit.class);
    /** Rows read from one table per query; a tick reads again while a window is full, up to {@link #READS_PER_TICK}. */
    static final int MOST_PER_READ = 100_000;
    static final int READS_PER_TICK = 5;
    /** Rows waiting for their delivery, over every table: more, and no new window is read until some are matched. */
    static final int MOST_PENDING = 500_000;
    /** Ids named in a report of lost rows; the rest are counted. */
    static final int NAMED = 20;
    /** How many looks pass between two writes of how far rows are proven published. */
    private static final int PERSIST_EVERY = 10;
    /** Allowed between the router's clock and the database's, beyond the skew measured. */
    private static final long CLOCK_SLACK_MILLIS = 2_000;
    /** How soon after the stream connects the audit begins. */
    private static final Duration STARTING_LOOK = Duration.ofMillis(100);

    /**
     * What the audit knows, for the status page and the metrics.
     *
     * @param blind         tables it cannot audit, with why
     * @param provenThrough per table, the time through which every row is proven published
     * @param waiting       rows read that the stream has not delivered yet
     * @param oldestWaiting the age of the oldest of them, or null
     */
    public record Status(List<String> blind, Map<String, String> provenThrough, long waiting, Duration oldestWaiting, long matched,
                         long lost, long replayed, Instant lastRun, String lastError) {
    }

    private final RouterConfig config;
    private final OutboxConfig.Audit settings;
    private final AuditReads reads;
    private final OutboxSql sql;
    private final DeliveredIds delivered;
    private final ScheduledExecutorService timer;
    private final AuditLosses losses;
    private final AtomicLong matched = new AtomicLong();
    private final PendingRows pending;
    private final Map<String, Bound> cursor = new LinkedHashMap<>();
    private final AuditGaps gaps;
    private final Map<String, String> proven = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile List<String> audited = List.of();
    private volatile List<String> blind = List.of();
    /** A new stream began: the next look starts the audit afresh. */
    private volatile boolean restart;
    private volatile boolean acceptGap;
    private volatile boolean started;
    private volatile boolean stopped;
    private volatile Instant lastRun;
    private volatile String lastError;
    private volatile long skewMillis;
    private long lastTick;
    private final AuditedThrough.Keeper keeper;
    private Connection connection;
    private OffsetTable offsets;
    private volatile boolean closed;

    /**
     * @param stop told the reason, when a loss stops the router
     */
    public SelfAudit(RouterConfig config, OutboxSql sql, DeliveredIds delivered, Republish republish, RecordedIds recorded,
                     Consumer<String> stop) {
        this.config = config;
        this.settings = config.outbox().audit();
        this.sql = sql;
        this.reads = new AuditReads(sql, config.outbox().columns(), config.outbox().retention().timeColumn());
        this.delivered = delivered;
        this.losses = new AuditLosses(config, republish, stop);
        this.pending = new PendingRows(delivered);
        this.keeper = new AuditedThrough.Keeper(config.name(), settings.interval().multipliedBy(PERSIST_EVERY));
        this.gaps = new AuditGaps(config.name(), reads, recorded, delivered);
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            var t = new Thread(r, "audit-" + config.name());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * A new stream begins (this process took the lock): the next look starts afresh from the position it stored. Does not
     * wait for a look under way.
     *
     * @param acceptGap the operator accepted a gap at this start: rows an earlier process left unpublished are logged, not refused
     */
    public void activated(boolean acceptGap) {
        this.acceptGap = acceptGap;
        this.restart = true;
    }

    /** Runs a look every interval while {@code active} (this process streams); never on a standby. */
    public void start(BooleanSupplier active) {
        LOG.info("Router {}: self-audit on: every {}, the outbox rows dated {} ago and older are matched with what the stream delivered; "
                + "a row it passed without delivering {}", config.name(), Durations.format(settings.interval()),
                Durations.format(settings.lag()), settings.onLoss() == OutboxConfig.OnLoss.STOP ? "stops the router" : "is published again");
        long ms = settings.interval().toMillis();
        // Often, so that a first start (no stored position) begins its audit as soon as the stream is connected; a look
        // only every interval.
        timer.scheduleWithFixedDelay(() -> {
            if (closed || stopped || !active.getAsBoolean()) {
                return;
            }
            long now = System.nanoTime();
            boolean starting = (!started || restart) && lastError == null; // after a failed look, the interval
            if (starting || now - lastTick >= TimeUnit.MILLISECONDS.toNanos(ms)) {
                lastTick = now;
                try {
                    tick();
                } catch (Throwable t) { // an Error would cancel the schedule for good, silently
                    lastError = String.valueOf(t);
                    LOG.error("Router {}: the self-audit's look failed: {}", config.name(), t.toString());
                }
            }
        }, STARTING_LOOK.toMillis(), STARTING_LOOK.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** One look: read what is new, match, judge, keep how far everything is proven. */
    synchronized void tick() {
        try {
            var c = connection();
            if (restart) {
                restart = false;
                started = false;
                pending.clear();
                cursor.clear();
                gaps.clear();
            }
            if (!started) {
                begin(c);
            }
            long dropped = delivered.takeDroppedThrough();
            if (dropped > 0) {
                fellBehind(c, dropped);
            }
            proveGaps(c);
            readNew(c);
            judge(c);
            if (stopped) {
                return; // a loss: nothing after the rows lost counts as proven
            }
            keepProven();
            forgetDelivered();
            lastError = null;
        } catch (SQLException | RuntimeException e) {
            if (closed) {
                return; // interrupted by the router's stop
            }
            lastError = e.getMessage();
            LOG.warn("Router {}: the self-audit's look failed, tried again in {}: {}", config.name(), Durations.format(settings.interval()),
                    e.getMessage());
            closeConnection();
        } finally {
            lastRun = Instant.now();
        }
    }

    /** The rows this stream must deliver begin after its stored position's commit; those between the last proof and it are a gap. */
    private void begin(Connection c) throws SQLException {
        var coverage = AuditChecks.coverage(config, sql);
        audited = coverage.audited();
        if (!coverage.blind().isEmpty() && !coverage.blind().equals(blind)) {
            LOG.warn("Router {}: the self-audit cannot see {}: it reads rows by outbox.retention-time-column. Add the column and an index "
                    + "(created_at timestamptz NOT NULL DEFAULT now(); `schema` prints both), or set outbox.audit.enabled: false",
                    config.name(), coverage.blind());
        }
        blind = coverage.blind();
        // The position the stream started from, as stored now (after a start's checks, which may reset it): the rows
        // dated after its commit are this stream's. A lag past it, since a MySQL/MariaDB offset dates its last statement's
        // start, not its commit; the rows between are matched with Kafka as an earlier process's.
        var commit = StartingPoint.commitMicros(offsets().read(config.name()));
        var stored = offsets().audited(config.name()).orElse(null);
        var earlier = AuditedThrough.parse(stored);
        // The rows an earlier run published are in the topics of its routing, which may not be this run's.
        var own = RecordedIds.topicPattern(config);
        var earlierTopics = AuditedThrough.topics(stored);
        if (!earlierTopics.isEmpty() && !earlierTopics.get(0).equals(own)) {
            LOG.info("Router {}: its topics changed since its last run ({} then, {} now): the rows an earlier run may have published "
                    + "are matched with the records of both", config.name(), earlierTopics.get(0), own);
        }
        var topics = AuditedThrough.withTopics(own, earlierTopics);
        keeper.topics(topics);
        gaps.earlierTopics(topics.subList(1, topics.size()));
        // Rows skipped by routing.dead-letters.policy: skip leave no record in Kafka: an earlier process's cannot be told
        // from lost ones.
        boolean accept = acceptGap || config.routing().deadLetters().policy() == io.outboxrouter.config.RoutingConfig.DeadLetterPolicy.SKIP;
        for (String table : audited) {
            var lower = commit.isPresent() ? reads.at(c, commit.getAsLong() + settings.lag().toNanos() / 1000 + 1_000_000)
                    : reads.now(c, Duration.ZERO);
            cursor.put(table, lower);
            // Before the audit's first proof, the rows up to the stored position's commit count as proven by the position.
            var before = earlier.containsKey(table) ? earlier.get(table) : commit.isPresent() ? reads.at(c, commit.getAsLong()) : null;
            if (before != null && before.micros() < lower.micros()) {
                gaps.add(table, new AuditGaps.Gap(before, lower, "committed before this stream began, or just after the position it "
                        + "began from", accept));
            }
        }
        started = true;
    }

    /** Ranges whose deliveries this process cannot know: matched with the records in Kafka; what has none waits. */
    private void proveGaps(Connection c) throws SQLException {
        gaps.prove(c, reads.now(c, settings.lag()), matched::addAndGet,
                (window, ids, why, accepted) -> pending.add(window, ids, why + " and have no record in Kafka", accepted));
    }

    private void readNew(Connection c) throws SQLException {
        for (String table : audited) {
            for (int i = 0; i < READS_PER_TICK && pending.waiting() < MOST_PENDING; i++) {
                var next = reads.next(c, table, cursor.get(table), settings.lag(), MOST_PER_READ);
                if (next.isEmpty()) {
                    break;
                }
                var w = next.get();
                skewMillis = w.skewMillis();
                cursor.put(table, w.upper());
                matched.addAndGet(pending.add(w));
                if (w.ids().size() < MOST_PER_READ) {
                    break;
                }
            }
        }
    }

    /** Matches again what waits; a row still unmatched after the stream stored a position past its mark, twice, is lost. */
    private void judge(Connection c) throws SQLException {
        var judgement = pending.judge(c, sql, this::offsets, matched::addAndGet);
        try {
            for (var p : judgement.accepted()) {
                LOG.warn("Router {}: {} row(s) of {} {}; not published (the gap was accepted at this start with --accept-gap, or the "
                        + "rows were skipped by routing.dead-letters.policy: skip, which leaves no record). First: {}", config.name(),
                        p.remaining().size(), p.window().table(), p.why(), reads.rows(c, p.window(), p.remaining(), NAMED));
            }
            if (!judgement.lost().isEmpty()) {
                lost(c, judgement.lost().stream().map(PendingRows.Pending::window).toList(),
                        judgement.lost().stream().map(PendingRows.Pending::remaining).toList(), judgement.lost().get(0).why());
            }
        } catch (SQLException | RuntimeException e) {
            if (!stopped) {
                pending.putBack(judgement.lost()); // judged again at the next look: a loss is never dropped unreported
                pending.putBack(judgement.accepted());
            }
            throw e;
        }
        if (judgement.nudge() && !stopped) {
            try {
                sql.nudge(c);
            } catch (SQLException e) {
                LOG.debug("Router {}: the self-audit's heartbeat message failed: {}", config.name(), e.getMessage());
            }
        }
    }

    private void lost(Connection c, List<Window> windows, List<LongSet> ids, String how) throws SQLException {
        if (!losses.handle(c, reads, windows, ids, how)) {
            stopped = true;
        }
    }

    /**
     * The stream ran too far ahead of the audit, and ids it delivered before {@code droppedThroughMillis} were forgotten.
     * Harmless when every row they could be was read and matched already; else the rows from the oldest waiting window
     * through that time are matched with the records in Kafka instead, once their transactions have committed.
     */
    private void fellBehind(Connection c, long droppedThroughMillis) throws SQLException {
        long readThrough = cursor.values().stream().mapToLong(b -> b.micros() / 1000 + skewMillis).min().orElse(Long.MAX_VALUE);
        if (droppedThroughMillis + CLOCK_SLACK_MILLIS < readThrough && !pending.readBefore(droppedThroughMillis + CLOCK_SLACK_MILLIS)) {
            return;
        }
        LOG.warn("Router {}: the self-audit fell more than {} events behind the stream; the rows it has not matched yet are matched with "
                + "the records in Kafka instead", config.name(), DeliveredIds.MOST_KEPT);
        var through = reads.at(c, (droppedThroughMillis - skewMillis + CLOCK_SLACK_MILLIS) * 1000);
        for (String table : audited) {
            var upper = through.micros() > cursor.get(table).micros() ? through : cursor.get(table);
            gaps.add(table, new AuditGaps.Gap(pending.lowest(table, cursor.get(table)), upper, "committed while the audit was behind the stream",
                    false));
            cursor.put(table, upper);
        }
        pending.clear();
    }

    /** Through when every row of each table is proven: before the oldest gap or waiting window, else the cursor. */
    private void keepProven() {
        var through = new LinkedHashMap<String, Bound>();
        for (String table : audited) {
            Bound b = pending.lowest(table, gaps.lowest(table, cursor.get(table)));
            through.put(table, b);
            proven.put(table, b.text());
        }
        keeper.keep(through, this::offsets);
    }

    /** Ids delivered before every table's cursor (on the router's clock, with a margin) can no longer be asked for. */
    private void forgetDelivered() {
        // The lag too: a row dated a little ahead of its commit (a writer's clock) is read that much later.
        long margin = settings.interval().toMillis() + CLOCK_SLACK_MILLIS + settings.lag().toMillis();
        long before = audited.isEmpty() ? System.currentTimeMillis() - 2 * margin
                : cursor.values().stream().mapToLong(b -> b.micros() / 1000 + skewMillis).min().orElse(0) - margin;
        delivered.forgetBefore(before);
    }

    public Status status() {
        Long oldest = pending.oldestMicros();
        return new Status(blind, Map.copyOf(proven), pending.waiting(), oldest == null ? null
                : Duration.ofMillis(Math.max(0, System.currentTimeMillis() - (oldest / 1000 + skewMillis))), matched.get(), losses.lost(),
                losses.replayed(), lastRun, lastError);
    }

    /** Whether the audit found rows it could not publish again: the router is then stopping. */
    public boolean foundLoss() {
        return stopped;
    }

    private Connection connection() throws SQLException {
        if (connection == null) {
            connection = config.source().connection().open();
        }
        return connection;
    }

    private OffsetTable offsets() {
        if (offsets == null) {
            offsets = OffsetTable.open(OffsetTableSettings.offsets(config));
        }
        return offsets;
    }

    private void closeConnection() {
        try {
            if (connection != null) {
                connection.close();
            }
        } catch (SQLException e) {
            LOG.debug("Router {}: closing the audit's connection: {}", config.name(), e.getMessage());
        }
        connection = null;
    }

    @Override
    public void close() {
        closed = true;
        timer.shutdownNow();
        try {
            timer.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) {
            closeConnection();
            if (offsets != null) {
                offsets.close();
            }
        }
    }
}
