package io.outboxrouter.app;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * The HTML status page at {@code /}: a router's state, counters, throughput, offsets, slot and last problems; for a sharded
 * router, each shard's.
 */
final class StatusPage {
    private StatusPage() {
    }

    /** A page that refreshes itself every 10 s; no scripts, no external resources. */
    static String render(RouterStatus s) {
        var h = head(s.router(), s.state());
        body(h, s);
        return tail(h);
    }

    /** The page of a sharded router: a line per shard, then each shard as the page of an unsharded router shows it. */
    static String render(String router, RouterState state, List<RouterStatus> shards) {
        var h = head(router, state);
        h.append("<table><tr><th>shard</th><th>state</th><th>published</th><th>dead letters</th><th>offset stored</th>")
                .append("<th>retained WAL</th></tr>");
        for (var s : shards) {
            h.append("<tr><td><a href=\"#").append(esc(s.router())).append("\"><code>").append(esc(s.router())).append("</code></a></td><td class=\"")
                    .append(css(s.state())).append("\">").append(s.state().label()).append("</td><td>").append(s.published())
                    .append("</td><td>").append(s.deadLetters()).append("</td><td>")
                    .append(s.offsetStoredAt() == null ? "not by this process yet" : s.offsetStoredAt().toString()).append("</td><td>")
                    .append(s.slot() == null ? "" : bytes(s.slot().retainedBytes())).append("</td></tr>");
        }
        h.append("</table>");
        for (var s : shards) {
            h.append("<h2 id=\"").append(esc(s.router())).append("\" style=\"font-size:18px;margin-top:40px\"><code>").append(esc(s.router()))
                    .append("</code>: <span class=\"").append(css(s.state())).append("\">").append(s.state().label()).append("</span></h2>");
            body(h, s);
        }
        return tail(h);
    }

    private static String css(RouterState state) {
        return state == RouterState.STREAMING ? "ok" : state == RouterState.STANDBY || state == RouterState.CONNECTING
                || state == RouterState.WAITING ? "warn" : "bad";
    }

    private static StringBuilder head(String router, RouterState state) {
        var h = new StringBuilder(8_000);
        h.append("<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"10\">")
                .append("<title>outbox-router ").append(esc(router)).append("</title><style>")
                .append("body{font:14px system-ui,sans-serif;margin:24px;color:#222}h1{font-size:20px}h2{font-size:15px;margin-top:24px}")
                .append("table{border-collapse:collapse}td,th{padding:3px 10px 3px 0;text-align:left;vertical-align:top}")
                .append("code{font-size:12px;word-break:break-all}.ok{color:#18794e}.bad{color:#c4320a}.warn{color:#a05a00}")
                .append("</style></head><body>");
        h.append("<h1>outbox-router <code>").append(esc(router)).append("</code>: <span class=\"").append(css(state)).append("\">")
                .append(state.label()).append("</span></h1>");
        return h;
    }

    private static String tail(StringBuilder h) {
        h.append("<p><a href=\"/status\">/status</a> (JSON) &middot; <a href=\"/metrics\">/metrics</a> &middot; ")
                .append("<a href=\"/health/ready\">/health/ready</a></p></body></html>");
        return h.toString();
    }

    private static void body(StringBuilder h, RouterStatus s) {
        h.append("<table><tr><th>source</th><td>").append(esc(s.source())).append("</td></tr>")
                .append("<tr><th>started</th><td>").append(s.startedAt()).append(" (").append(human(Duration.between(s.startedAt(), Instant.now())))
                .append(" ago)</td></tr>")
                .append("<tr><th>published</th><td>").append(s.published()).append("</td></tr>")
                .append("<tr><th>dead letters</th><td>").append(s.deadLetters()).append("</td></tr>")
                .append("<tr><th>skipped</th><td>").append(s.skipped()).append("</td></tr>")
                .append("<tr><th>retries</th><td>").append(s.retries()).append("</td></tr>")
                .append("<tr><th>failed offset writes</th><td>").append(s.offsetWritesFailed()).append("</td></tr></table>");

        long total = 0;
        long max = 1;
        for (long n : s.perMinute()) {
            total += n;
            max = Math.max(max, n);
        }
        h.append("<h2>Events published per minute, last 60 minutes (").append(total).append(" in all, peak ").append(max == 1 && total == 0 ? 0 : max)
                .append("/min)</h2>");
        int w = 600;
        int ht = 120;
        h.append("<svg width=\"").append(w + 40).append("\" height=\"").append(ht + 20).append("\" role=\"img\" aria-label=\"events per minute\">")
                .append("<line x1=\"0\" y1=\"").append(ht).append("\" x2=\"").append(w).append("\" y2=\"").append(ht).append("\" stroke=\"#999\"/>");
        for (int i = 0; i < s.perMinute().length; i++) {
            long n = s.perMinute()[i];
            int bar = (int) Math.round((double) n / max * (ht - 4));
            h.append("<rect x=\"").append(i * 10).append("\" y=\"").append(ht - bar).append("\" width=\"8\" height=\"").append(bar)
                    .append("\" fill=\"#3b6fb6\"><title>").append(s.perMinute().length - 1 - i).append(" min ago: ").append(n)
                    .append("</title></rect>");
        }
        h.append("<text x=\"0\" y=\"").append(ht + 15).append("\" font-size=\"11\">-60 min</text><text x=\"").append(w - 20).append("\" y=\"")
                .append(ht + 15).append("\" font-size=\"11\">now</text></svg>");

        if (s.parkedCount() > 0) {
            h.append("<h2 class=\"bad\">Parked aggregates: ").append(s.parkedCount()).append("</h2><p>Their events are held until "
                    + "<code>outbox-router parked release</code> (or <code>drop</code>); oldest first.</p><table><tr><th>aggregate</th>"
                    + "<th>parked</th><th>by the row at</th><th>reason</th><th>held</th></tr>");
            s.parked().forEach(p -> h.append("<tr><td><code>").append(esc(p.aggregate())).append("</code></td><td>")
                    .append(human(Duration.between(p.since(), Instant.now()))).append(" ago</td><td>").append(esc(p.position()))
                    .append("</td><td>").append(esc(p.reason())).append("</td><td>").append(p.held()).append("</td></tr>"));
            h.append("</table>");
        }
        h.append("<h2>Stored offsets</h2>");
        if (s.offsetsError() != null) {
            h.append("<p class=\"bad\">").append(esc(s.offsetsError())).append("</p>");
        } else if (s.storedOffsets().isEmpty()) {
            h.append("<p>none stored yet</p>");
        } else {
            h.append("<table>");
            s.storedOffsets().forEach((k, v) -> h.append("<tr><td><code>").append(esc(k)).append("</code></td><td><code>").append(esc(v))
                    .append("</code></td></tr>"));
            h.append("</table>");
        }
        h.append("<p>last stored: ").append(s.offsetStoredAt() == null ? "not by this process yet" : s.offsetStoredAt().toString()).append("</p>");

        if (s.slot() != null) {
            h.append("<h2>Replication slot <code>").append(esc(s.slot().slot())).append("</code></h2>");
            if (!s.slot().exists()) {
                h.append("<p class=\"bad\">the server has no such slot</p>");
            } else {
                h.append("<table><tr><th>active</th><td>").append(s.slot().active()).append("</td></tr><tr><th>confirmed flush LSN</th><td>")
                        .append(esc(s.slot().confirmedFlushLsn())).append("</td></tr><tr><th>WAL status</th><td>").append(esc(s.slot().walStatus()))
                        .append("</td></tr><tr><th>retained WAL</th><td>").append(bytes(s.slot().retainedBytes()))
                        .append("</td></tr><tr><th>measured</th><td>").append(s.slot().measuredAt()).append("</td></tr></table>");
            }
        }

        if (s.audit() != null) {
            var a = s.audit();
            h.append("<h2>Self-audit</h2><table><tr><th>rows matched with what the stream delivered</th><td>").append(a.matched())
                    .append("</td></tr><tr><th>rows lost</th><td class=\"").append(a.lost() > 0 ? "bad" : "ok").append("\">").append(a.lost())
                    .append(a.replayed() > 0 ? " (" + a.replayed() + " published again)" : "").append("</td></tr><tr><th>rows not delivered yet</th><td>")
                    .append(a.waiting()).append(a.oldestWaiting() == null ? "" : ", the oldest " + human(a.oldestWaiting()) + " old").append("</td></tr>");
            a.provenThrough().forEach((table, through) -> h.append("<tr><th>every row of <code>").append(esc(table))
                    .append("</code> proven published through</th><td>").append(esc(through)).append("</td></tr>"));
            a.blind().forEach(b -> h.append("<tr><th>cannot see</th><td class=\"warn\">").append(esc(b)).append("</td></tr>"));
            if (a.lastError() != null) {
                h.append("<tr><th>last error</th><td class=\"bad\">").append(esc(a.lastError())).append("</td></tr>");
            }
            h.append("<tr><th>last look</th><td>").append(a.lastRun() == null ? "not yet" : a.lastRun().toString()).append("</td></tr></table>");
        }

        if (s.retention() != null) {
            var r = s.retention();
            h.append("<h2>Outbox retention</h2><table><tr><th>deletes published rows older than</th><td>")
                    .append(esc(io.outboxrouter.config.Durations.format(r.after()))).append("</td></tr><tr><th>rows deleted</th><td>")
                    .append(r.deletedTotal()).append("</td></tr>");
            r.oldestKept().forEach((table, age) -> h.append("<tr><th>oldest row kept in <code>").append(esc(table)).append("</code></th><td>")
                    .append(esc(io.outboxrouter.config.Durations.format(java.time.Duration.ofSeconds(age.toSeconds())))).append(" old</td></tr>"));
            if (r.waitingFor() != null) {
                h.append("<tr><th>waiting</th><td>old rows kept until the router stores a position past ").append(esc(r.waitingFor()))
                        .append("</td></tr>");
            }
            if (r.lastError() != null) {
                h.append("<tr><th>last error</th><td class=\"bad\">").append(esc(r.lastError())).append("</td></tr>");
            }
            h.append("<tr><th>last run</th><td>").append(r.lastRun() == null ? "not yet" : r.lastRun().toString()).append("</td></tr></table>");
        }

        h.append("<h2>Last problems logged</h2>");
        if (s.problems().isEmpty()) {
            h.append("<p class=\"ok\">none</p>");
        } else {
            h.append("<table>");
            for (var p : s.problems()) {
                h.append("<tr><td>").append(p.at()).append("</td><td class=\"").append("ERROR".equals(p.level()) ? "bad" : "warn").append("\">")
                        .append(p.level()).append("</td><td>").append(esc(p.logger())).append("</td><td>").append(esc(p.message()))
                        .append("</td></tr>");
            }
            h.append("</table>");
        }
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
