package io.outboxrouter.app;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * One snapshot of a router for {@code /status} (JSON) and the HTML status page: state, counters, throughput over the
 * last hour, the stored offsets, the slot and the last problems logged.
 *
 * @param state          {@code streaming}, {@code connecting}, {@code standby} or {@code stopped}
 * @param storedOffsets  the rows of the offsets table for this router (key -> value); empty when unreadable
 * @param offsetsError   why the offsets could not be read, or null
 * @param slot           the Postgres slot as last measured; null for binlog sources or before the first measurement
 * @param perMinute      events published per minute, oldest first, the current minute last
 */
record RouterStatus(String router, String state, String source, Instant startedAt, long published, long deadLetters, long skipped,
                    long retries, Instant offsetStoredAt, Map<String, String> storedOffsets, String offsetsError,
                    SlotMonitor.SlotState slot, List<ProblemLog.Problem> problems, long[] perMinute) {
    private static final ObjectMapper JSON = new ObjectMapper();

    boolean streaming() {
        return "streaming".equals(state);
    }

    String toJson() {
        ObjectNode o = JSON.createObjectNode();
        o.put("router", router).put("state", state).put("streaming", streaming()).put("source", source)
                .put("started_at", startedAt.toString()).put("published", published).put("dead_letters", deadLetters)
                .put("skipped", skipped).put("retries", retries)
                .put("offset_stored_at", offsetStoredAt == null ? null : offsetStoredAt.toString());
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
        var minutes = o.putArray("published_per_minute");
        for (long n : perMinute) {
            minutes.add(n);
        }
        var recent = o.putArray("recent_problems");
        problems.forEach(p -> recent.addObject().put("at", p.at().toString()).put("level", p.level()).put("logger", p.logger())
                .put("message", p.message()));
        return o.toString();
    }

    /** A page that refreshes itself every 10 s; no scripts, no external resources. */
    String toHtml() {
        var h = new StringBuilder(8_000);
        h.append("<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"10\">")
                .append("<title>outbox-router ").append(esc(router)).append("</title><style>")
                .append("body{font:14px system-ui,sans-serif;margin:24px;color:#222}h1{font-size:20px}h2{font-size:15px;margin-top:24px}")
                .append("table{border-collapse:collapse}td,th{padding:3px 10px 3px 0;text-align:left;vertical-align:top}")
                .append("code{font-size:12px;word-break:break-all}.ok{color:#18794e}.bad{color:#c4320a}.warn{color:#a05a00}")
                .append("</style></head><body>");
        String css = streaming() ? "ok" : "standby".equals(state) || "connecting".equals(state) ? "warn" : "bad";
        h.append("<h1>outbox-router <code>").append(esc(router)).append("</code>: <span class=\"").append(css).append("\">")
                .append(esc(state)).append("</span></h1>");
        h.append("<table><tr><th>source</th><td>").append(esc(source)).append("</td></tr>")
                .append("<tr><th>started</th><td>").append(startedAt).append(" (").append(human(Duration.between(startedAt, Instant.now())))
                .append(" ago)</td></tr>")
                .append("<tr><th>published</th><td>").append(published).append("</td></tr>")
                .append("<tr><th>dead letters</th><td>").append(deadLetters).append("</td></tr>")
                .append("<tr><th>skipped</th><td>").append(skipped).append("</td></tr>")
                .append("<tr><th>retries</th><td>").append(retries).append("</td></tr></table>");

        long total = 0;
        long max = 1;
        for (long n : perMinute) {
            total += n;
            max = Math.max(max, n);
        }
        h.append("<h2>Events published per minute, last 60 minutes (").append(total).append(" in all, peak ").append(max == 1 && total == 0 ? 0 : max)
                .append("/min)</h2>");
        int w = 600;
        int ht = 120;
        h.append("<svg width=\"").append(w + 40).append("\" height=\"").append(ht + 20).append("\" role=\"img\" aria-label=\"events per minute\">")
                .append("<line x1=\"0\" y1=\"").append(ht).append("\" x2=\"").append(w).append("\" y2=\"").append(ht).append("\" stroke=\"#999\"/>");
        for (int i = 0; i < perMinute.length; i++) {
            long n = perMinute[i];
            int bar = (int) Math.round((double) n / max * (ht - 4));
            h.append("<rect x=\"").append(i * 10).append("\" y=\"").append(ht - bar).append("\" width=\"8\" height=\"").append(bar)
                    .append("\" fill=\"#3b6fb6\"><title>").append(perMinute.length - 1 - i).append(" min ago: ").append(n)
                    .append("</title></rect>");
        }
        h.append("<text x=\"0\" y=\"").append(ht + 15).append("\" font-size=\"11\">-60 min</text><text x=\"").append(w - 20).append("\" y=\"")
                .append(ht + 15).append("\" font-size=\"11\">now</text></svg>");

        h.append("<h2>Stored offsets</h2>");
        if (offsetsError != null) {
            h.append("<p class=\"bad\">").append(esc(offsetsError)).append("</p>");
        } else if (storedOffsets.isEmpty()) {
            h.append("<p>none stored yet</p>");
        } else {
            h.append("<table>");
            storedOffsets.forEach((k, v) -> h.append("<tr><td><code>").append(esc(k)).append("</code></td><td><code>").append(esc(v))
                    .append("</code></td></tr>"));
            h.append("</table>");
        }
        h.append("<p>last stored: ").append(offsetStoredAt == null ? "not by this process yet" : offsetStoredAt.toString()).append("</p>");

        if (slot != null) {
            h.append("<h2>Replication slot <code>").append(esc(slot.slot())).append("</code></h2>");
            if (!slot.exists()) {
                h.append("<p class=\"bad\">the server has no such slot</p>");
            } else {
                h.append("<table><tr><th>active</th><td>").append(slot.active()).append("</td></tr><tr><th>confirmed flush LSN</th><td>")
                        .append(esc(slot.confirmedFlushLsn())).append("</td></tr><tr><th>WAL status</th><td>").append(esc(slot.walStatus()))
                        .append("</td></tr><tr><th>retained WAL</th><td>").append(bytes(slot.retainedBytes()))
                        .append("</td></tr><tr><th>measured</th><td>").append(slot.measuredAt()).append("</td></tr></table>");
            }
        }

        h.append("<h2>Last problems logged</h2>");
        if (problems.isEmpty()) {
            h.append("<p class=\"ok\">none</p>");
        } else {
            h.append("<table>");
            for (var p : problems) {
                h.append("<tr><td>").append(p.at()).append("</td><td class=\"").append("ERROR".equals(p.level()) ? "bad" : "warn").append("\">")
                        .append(p.level()).append("</td><td>").append(esc(p.logger())).append("</td><td>").append(esc(p.message()))
                        .append("</td></tr>");
            }
            h.append("</table>");
        }
        h.append("<p><a href=\"/status\">/status</a> (JSON) &middot; <a href=\"/metrics\">/metrics</a> &middot; ")
                .append("<a href=\"/health/ready\">/health/ready</a></p></body></html>");
        return h.toString();
    }

    private static String bytes(long n) {
        if (n < 0) {
            return "unknown";
        }
        return n >= 1L << 30 ? String.format("%.1f GiB", n / (double) (1L << 30)) : n >= 1L << 20
                ? String.format("%.1f MiB", n / (double) (1L << 20)) : n >= 1024 ? String.format("%.1f KiB", n / 1024.0) : n + " B";
    }

    private static String human(Duration d) {
        long s = d.toSeconds();
        return s >= 7200 ? d.toHours() + " h" : s >= 120 ? d.toMinutes() + " min" : s + " s";
    }

    static String esc(String s) {
        if (s == null) {
            return "";
        }
        var out = new StringBuilder(s.length());
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '&' -> out.append("&amp;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> out.append(ch);
            }
        }
        return out.toString();
    }
}
