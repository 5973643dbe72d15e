package io.outboxrouter.app;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.util.List;
import io.outboxrouter.cdc.SlotMonitor;
import io.outboxrouter.retention.Retention;
import java.util.Map;

/**
 * One snapshot of a router for {@code /status} (JSON) and the HTML status page: state, counters, throughput over the
 * last hour, the stored offsets, the slot and the last problems logged.
 *
 * @param offsetWritesFailed offset writes that failed after their retry budget
 * @param storedOffsets  the rows of the offsets table for this router (key -> value); empty when unreadable
 * @param offsetsError   why the offsets could not be read, or null
 * @param slot           the Postgres slot as last measured; null for binlog sources or before the first measurement
 * @param retention      what outbox retention has done; null when it is off
 * @param perMinute      events published per minute, oldest first, the current minute last
 * @param parkedCount    aggregates parked ({@code park-aggregate}); {@code parked} lists the oldest of them
 * @param audit          what the self-audit knows; null when it is off
 */
record RouterStatus(String router, RouterState state, String source, Instant startedAt, long published, long deadLetters, long skipped,
                    long retries, Instant offsetStoredAt, long offsetWritesFailed, Map<String, String> storedOffsets, String offsetsError,
                    SlotMonitor.SlotState slot, Retention.Status retention, List<RecentProblems.Problem> problems, long[] perMinute,
                    int parkedCount, List<io.outboxrouter.metrics.RouterMetrics.ParkedAggregate> parked,
                    io.outboxrouter.audit.SelfAudit.Status audit) {
    private static final ObjectMapper JSON = new ObjectMapper();

    boolean streaming() {
        return state == RouterState.STREAMING;
    }

    String toJson() {
        return node().toString();
    }

    /** A sharded router: its state (streaming only when every shard streams) and each shard's status. */
    static String toJson(String router, RouterState state, List<RouterStatus> shards) {
        ObjectNode o = JSON.createObjectNode();
        o.put("router", router).put("state", state.label()).put("streaming", state == RouterState.STREAMING)
                .put("published", shards.stream().mapToLong(RouterStatus::published).sum())
                .put("dead_letters", shards.stream().mapToLong(RouterStatus::deadLetters).sum());
        var array = o.putArray("shards");
        shards.forEach(s -> array.add(s.node()));
        return o.toString();
    }

    private ObjectNode node() {
        ObjectNode o = JSON.createObjectNode();
        o.put("router", router).put("state", state.label()).put("streaming", streaming()).put("source", source)
                .put("started_at", startedAt.toString()).put("published", published).put("dead_letters", deadLetters)
                .put("skipped", skipped).put("retries", retries)
                .put("offset_stored_at", offsetStoredAt == null ? null : offsetStoredAt.toString())
                .put("offset_writes_failed", offsetWritesFailed);
        var offsets = o.putObject("offsets");
        storedOffsets.forEach(offsets::put);
        if (offsetsError != null) {
            o.put("offsets_error", offsetsError);
        }
        if (slot != null) {
            o.putObject("slot").put("name", slot.slot()).put("exists", slot.exists()).put("active", slot.active())
                    .put("confirmed_flush_lsn", slot.confirmedFlushLsn()).put("wal_status", slot.walStatus())
                    .put("retained_wal_bytes", slot.retainedBytes()).put("measured_at", slot.measuredAt().toString());
        }
        if (retention != null) {
            var r = o.putObject("retention");
            r.put("after", io.outboxrouter.config.Durations.format(retention.after())).put("deleted_rows", retention.deletedTotal())
                    .put("waiting_for", retention.waitingFor()).put("last_run", retention.lastRun() == null ? null : retention.lastRun().toString())
                    .put("last_error", retention.lastError());
            var oldest = r.putObject("oldest_row_age_seconds");
            retention.oldestKept().forEach((table, age) -> oldest.put(table, age.toMillis() / 1000.0));
        }
        if (audit != null) {
            var a = o.putObject("audit");
            a.put("matched_rows", audit.matched()).put("lost_rows", audit.lost()).put("replayed_rows", audit.replayed())
                    .put("waiting_rows", audit.waiting())
                    .put("oldest_waiting_age_seconds", audit.oldestWaiting() == null ? null : audit.oldestWaiting().toMillis() / 1000.0)
                    .put("last_run", audit.lastRun() == null ? null : audit.lastRun().toString()).put("last_error", audit.lastError());
            var through = a.putObject("proven_through");
            audit.provenThrough().forEach(through::put);
            var blind = a.putArray("blind");
            audit.blind().forEach(blind::add);
        }
        if (parkedCount > 0) {
            var p = o.putObject("parked");
            p.put("count", parkedCount);
            var oldest = p.putArray("oldest");
            parked.forEach(a -> oldest.addObject().put("aggregate", a.aggregate()).put("since", a.since().toString())
                    .put("position", a.position()).put("reason", a.reason()).put("held", a.held()));
        }
        var minutes = o.putArray("published_per_minute");
        for (long n : perMinute) {
            minutes.add(n);
        }
        var recent = o.putArray("recent_problems");
        problems.forEach(p -> recent.addObject().put("at", p.at().toString()).put("level", p.level()).put("logger", p.logger())
                .put("message", p.message()));
        return o;
    }
}
