package io.outboxrouter.benchmark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What the benchmark measured, and the numbers derived from it. */
final class Results {
    /** A backlog drained by one contender. */
    record Throughput(String database, String contender, int txnSize, long events, double eventsPerSecond, double fromStart, double cpuSeconds,
                      double peakRssMiB, double machineCpuSeconds) {
        double cpuPer100k() {
            return Double.isNaN(cpuSeconds) ? Double.NaN : cpuSeconds / events * 100_000;
        }

        /** Everything the machine spent: the contender, the database's decoding, Kafka and the benchmark's consumer. */
        double machineCpuPer100k() {
            return Double.isNaN(machineCpuSeconds) ? Double.NaN : machineCpuSeconds / events * 100_000;
        }
    }

    /**
     * Commit-to-consumer latency at one rate of transactions of {@code rowsPerTxn} rows, and where it went: COMMIT to the
     * contender's send (its producer's timestamp on the record: the log read, the decoding and the contender's own work) and
     * send to the consumer's read (the producer's batching, the broker's append and ack, the consumer's fetch); NaN where
     * the contender does not publish to Kafka.
     */
    record Latency(String database, String contender, int rowsPerTxn, int targetRate, double achievedRate, long events, long missing,
                   double p50, double p90, double p99, double max, double cpuPercent, double toSendP50, double toSendP99,
                   double sendToReadP50, double sendToReadP99, double machinePercent) {
        String rung() {
            return database + "|" + contender + "|" + rowsPerTxn + "|" + targetRate;
        }

        /** Whether the load reached the rate (95% of the target written) and every event arrived. */
        boolean keptUp() {
            return achievedRate >= 0.95 * targetRate && missing == 0;
        }
    }

    /** The lone events' table: each contender's events committed one at a time into a quiet stream. */
    private String loneEvents() {
        if (loneEventMillis.isEmpty()) {
            return "";
        }
        var s = new StringBuilder("\n### A quiet outbox: single events, each after " + LatencyRuns.LONE_EVENT_PAUSE.toSeconds()
                + " s with nothing written, COMMIT returned -> record read (ms)\n\n| contender | events | p50 | max | missing |\n|---|---:|---:|---:|---:|\n");
        loneEventMillis.forEach((contender, millis) -> {
            double[] arrived = millis.stream().filter(m -> !Double.isNaN(m)).mapToDouble(Double::doubleValue).sorted().toArray();
            s.append("| ").append(contender).append(" | ").append(millis.size()).append(" | ")
                    .append(arrived.length == 0 ? "" : fmt1(arrived[(arrived.length - 1) / 2])).append(" | ")
                    .append(arrived.length == 0 ? "" : fmt1(arrived[arrived.length - 1])).append(" | ")
                    .append(millis.size() - arrived.length).append(" |\n");
        });
        return s.toString();
    }

    /** How long until streaming. */
    record Startup(String database, String contender, Duration start, Duration restart) {
    }

    final List<Throughput> throughput = new ArrayList<>();
    final List<Latency> latency = new ArrayList<>();
    /** Per rung ({@link Latency#rung}), the p99 of each round in the order run, when the ladder ran more than once. */
    final Map<String, List<Double>> p99ByRound = new LinkedHashMap<>();
    final List<Startup> startup = new ArrayList<>();
    final List<String> notes = new ArrayList<>();
    /** Per contender: CPU while streaming with nothing to publish, % of one core. */
    final Map<String, Double> idleCpuPercent = new LinkedHashMap<>();
    /** Per contender: each lone event's latency in ms (NaN: it never arrived), every round's together. */
    final Map<String, List<Double>> loneEventMillis = new LinkedHashMap<>();

    /**
     * Latency percentiles in ms for the events of {@code written} that arrived, leaving out the first {@code warmup}
     * of the window (topic creation, JIT); returns {p50, p90, p99, max, counted, missing}.
     */
    static double[] percentiles(Map<String, Long> written, Map<String, Long> arrived, Duration warmup) {
        long first = written.values().stream().mapToLong(Long::longValue).min().orElse(0);
        long from = first + warmup.toNanos() / 1_000;
        var lat = new ArrayList<Long>(written.size());
        long missing = 0;
        for (var e : written.entrySet()) {
            Long at = arrived.get(e.getKey());
            if (at == null) {
                missing++;
            } else if (e.getValue() >= from) {
                lat.add(at - e.getValue());
            }
        }
        long[] sorted = lat.stream().mapToLong(Long::longValue).sorted().toArray();
        if (sorted.length == 0) {
            return new double[] {Double.NaN, Double.NaN, Double.NaN, Double.NaN, 0, missing};
        }
        return new double[] {pct(sorted, 50), pct(sorted, 90), pct(sorted, 99), sorted[sorted.length - 1] / 1000.0, sorted.length, missing};
    }

    /**
     * Where the latency went, over the events {@link #percentiles} counts: {p50, p99} of COMMIT to the producer's record
     * timestamp, then {p50, p99} of that timestamp to the read; NaN when no record carried its producer's timestamp.
     */
    static double[] split(Map<String, Long> written, Map<String, Long> produced, Map<String, Long> arrived, Duration warmup) {
        long first = written.values().stream().mapToLong(Long::longValue).min().orElse(0);
        long from = first + warmup.toNanos() / 1_000;
        var toSend = new ArrayList<Long>(written.size());
        var afterSend = new ArrayList<Long>(written.size());
        for (var e : written.entrySet()) {
            Long sent = produced.get(e.getKey());
            Long at = arrived.get(e.getKey());
            if (sent != null && at != null && e.getValue() >= from) {
                toSend.add(sent * 1000 - e.getValue());
                afterSend.add(at - sent * 1000);
            }
        }
        if (toSend.isEmpty()) {
            return new double[] {Double.NaN, Double.NaN, Double.NaN, Double.NaN};
        }
        long[] a = toSend.stream().mapToLong(Long::longValue).sorted().toArray();
        long[] b = afterSend.stream().mapToLong(Long::longValue).sorted().toArray();
        return new double[] {pct(a, 50), pct(a, 99), pct(b, 50), pct(b, 99)};
    }

    private static double pct(long[] sorted, double p) {
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1000.0;
    }

    /** The rounds of one contender on one backlog, reduced to their median (CPU and RSS too), with the spread of the rate. */
    record Median(Throughput median, double min, double max, int rounds) {
    }

    List<Median> medians() {
        var groups = new LinkedHashMap<String, List<Throughput>>();
        for (var t : throughput) {
            groups.computeIfAbsent(t.database() + "|" + t.contender() + "|" + t.txnSize(), k -> new ArrayList<>()).add(t);
        }
        var out = new ArrayList<Median>();
        for (var g : groups.values()) {
            var t = g.get(0);
            double rate = median(g.stream().mapToDouble(Throughput::eventsPerSecond).toArray());
            out.add(new Median(new Throughput(t.database(), t.contender(), t.txnSize(), t.events(), rate,
                    median(g.stream().mapToDouble(Throughput::fromStart).toArray()),
                    median(g.stream().mapToDouble(Throughput::cpuSeconds).toArray()),
                    g.stream().mapToDouble(Throughput::peakRssMiB).max().orElse(Double.NaN),
                    median(g.stream().mapToDouble(Throughput::machineCpuSeconds).toArray())),
                    g.stream().mapToDouble(Throughput::eventsPerSecond).min().orElse(Double.NaN),
                    g.stream().mapToDouble(Throughput::eventsPerSecond).max().orElse(Double.NaN), g.size()));
        }
        return out;
    }

    private static double median(double[] values) {
        double[] v = java.util.Arrays.stream(values).filter(d -> !Double.isNaN(d)).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    String markdown() {
        var s = new StringBuilder();
        var medians = medians();
        s.append("### Throughput: a backlog drained (events/s from the first to the last event delivered, and from the start command to the last; median of the rounds)\n\n")
                .append("| database | contender | rows per transaction | events | events/s | from the start command, events/s | rounds: min-max | vs. raw slot | vs. bare Debezium 3.5 (router's settings) | its CPU s per 100k events | machine CPU s per 100k events | peak RSS MiB |\n")
                .append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (var m : medians) {
            var t = m.median();
            double raw = reference(medians, t, RawSlotReader.NAME);
            double bare = reference(medians, t, BareDebezium.ROUTER_SETTINGS);
            s.append("| ").append(t.database()).append(" | ").append(t.contender()).append(" | ").append(t.txnSize()).append(" | ")
                    .append(t.events()).append(" | ").append(fmt0(t.eventsPerSecond())).append(" | ")
                    .append(fmt0(t.fromStart())).append(" | ").append(m.rounds() > 1 ? fmt0(m.min()) + "-" + fmt0(m.max()) : "").append(" | ").append(ratio(t.eventsPerSecond(), raw))
                    .append(" | ").append(ratio(t.eventsPerSecond(), bare)).append(" | ").append(fmt1(t.cpuPer100k())).append(" | ")
                    .append(fmt1(t.machineCpuPer100k())).append(" | ").append(fmt0(t.peakRssMiB())).append(" |\n");
        }
        s.append("\n### Latency: transactions at a fixed rate of events, COMMIT returned -> record read by a Kafka consumer (ms)\n\n")
                .append("The raw slot reader's figure is COMMIT returned -> INSERT received by a plain replication client: the limit for any "
                        + "log reader. For those that publish, the time splits at the record's producer timestamp (when the contender "
                        + "called send, millisecond precision): COMMIT -> send is the log read, the decoding and the contender's work; "
                        + "send -> read is the producer's batching, the broker's append and ack, and the consumer's fetch.\n\n")
                .append(p99ByRound.isEmpty() ? "" : "Each rate was run in several rounds, the contenders in a rotating order; the row is "
                        + "the round with the median p99, and the last column lists every round's p99.\n\n")
                .append("| database | contender | rows per transaction | target events/s | achieved/s | events | p50 | p90 | p99 | max | missing | CPU % "
                        + "| machine busy % | COMMIT -> send p50 / p99 | send -> read p50 / p99 |").append(p99ByRound.isEmpty() ? "" : " p99 by round |")
                .append("\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|").append(p99ByRound.isEmpty() ? "" : "---|")
                .append("\n");
        for (var l : latency) {
            s.append("| ").append(l.database()).append(" | ").append(l.contender()).append(" | ").append(l.rowsPerTxn()).append(" | ")
                    .append(l.targetRate()).append(" | ")
                    .append(fmt0(l.achievedRate())).append(" | ").append(l.events()).append(" | ").append(fmt1(l.p50())).append(" | ")
                    .append(fmt1(l.p90())).append(" | ").append(fmt1(l.p99())).append(" | ").append(fmt1(l.max())).append(" | ")
                    .append(l.missing()).append(" | ").append(fmt0(l.cpuPercent())).append(" | ").append(fmt0(l.machinePercent())).append(" | ")
                    .append(Double.isNaN(l.toSendP50()) ? "" : fmt1(l.toSendP50()) + " / " + fmt1(l.toSendP99())).append(" | ")
                    .append(Double.isNaN(l.sendToReadP50()) ? "" : fmt1(l.sendToReadP50()) + " / " + fmt1(l.sendToReadP99())).append(" |");
            if (!p99ByRound.isEmpty()) {
                s.append(" ").append(String.join(", ", p99ByRound.getOrDefault(l.rung(), List.of()).stream().map(Results::fmt1).toList()))
                        .append(" |");
            }
            s.append("\n");
        }
        s.append(ladder());
        s.append(loneEvents());
        s.append("\n### Start to streaming\n\n| database | contender | start (s) | restart (s) |\n|---|---|---:|---:|\n");
        for (var st : startup) {
            s.append("| ").append(st.database()).append(" | ").append(st.contender()).append(" | ").append(secs(st.start())).append(" | ")
                    .append(secs(st.restart())).append(" |\n");
        }
        s.append(goals(medians));
        if (!notes.isEmpty()) {
            s.append("\n");
            notes.forEach(n -> s.append("- ").append(n).append("\n"));
        }
        return s.toString();
    }

    private static double reference(List<Median> medians, Throughput t, String contender) {
        return medians.stream().map(Median::median).filter(o -> o.database().equals(t.database()) && o.txnSize() == t.txnSize()
                && o.contender().equals(contender)).mapToDouble(Throughput::eventsPerSecond).findFirst().orElse(Double.NaN);
    }

    /**
     * Keeps one row per rung of the ladder: of the rounds run, the one whose p99 is the median (the lower middle of an
     * even count; a round that did not keep up counts as the slowest), so that its columns belong together; every
     * round's p99 is kept for the table.
     */
    void collapseLatencyRounds() {
        var byRung = new LinkedHashMap<String, List<Latency>>();
        latency.forEach(l -> byRung.computeIfAbsent(l.rung(), k -> new ArrayList<>()).add(l));
        if (byRung.values().stream().allMatch(rounds -> rounds.size() == 1)) {
            return;
        }
        latency.clear();
        byRung.forEach((rung, rounds) -> {
            p99ByRound.put(rung, rounds.stream().map(Latency::p99).toList());
            var sorted = rounds.stream().sorted(java.util.Comparator.comparingDouble(l -> Double.isNaN(l.p99()) ? Double.MAX_VALUE
                    : l.p99() + (l.keptUp() ? 0 : 1e12))).toList();
            latency.add(sorted.get((sorted.size() - 1) / 2));
        });
    }

    /** The p99 a rate of the ladder must keep to count as held. */
    static final double HELD_P99_MS = 100;

    /**
     * The highest rate of the ladder a contender held: that rate and every one below it achieved (95% of the target
     * written), every event arrived, and the p99 stayed at or under {@link #HELD_P99_MS}; 0 when not even the lowest did.
     */
    int highestHeld(String contender) {
        return highestHeld(contender, 1);
    }

    /** As {@link #highestHeld(String)}, on the ladder of transactions of {@code rowsPerTxn} rows. */
    int highestHeld(String contender, int rowsPerTxn) {
        int held = 0;
        for (var l : latency.stream().filter(l -> l.database().equals("Postgres") && l.contender().equals(contender)
                        && l.rowsPerTxn() == rowsPerTxn)
                .sorted(java.util.Comparator.comparingInt(Latency::targetRate)).toList()) {
            if (!l.keptUp() || !(l.p99() <= HELD_P99_MS)) {
                break;
            }
            held = l.targetRate();
        }
        return held;
    }

    /** Per contender: the highest rate held, and the CPU it spends per 1,000 events at 1,000 a second. */
    private String ladder() {
        var s = new StringBuilder("\n### Rate ladder: the highest rate of events held with p99 <= ")
                .append(fmt0(HELD_P99_MS)).append(" ms (every lower rate held too)\n\n")
                .append("| contender | single-row commits: highest rate held, events/s | p50 / p99 ms there | CPU ms per 1,000 events at 1,000/s "
                        + "| 100-row transactions: highest rate held, events/s | p50 / p99 ms there |\n|---|---:|---|---:|---:|---|\n");
        latency.stream().filter(l -> l.database().equals("Postgres")).map(Latency::contender).distinct().forEach(c -> {
            int held = highestHeld(c);
            var at = latency(c, held);
            var at1k = latency(c, 1000);
            boolean hundreds = latency.stream().anyMatch(l -> l.contender().equals(c) && l.rowsPerTxn() == 100);
            int held100 = highestHeld(c, 100);
            var at100 = latency(c, 100, held100);
            s.append("| ").append(c).append(" | ").append(held == 0 ? "none" : String.format("%,d", held)).append(" | ")
                    .append(at == null ? "" : fmt1(at.p50()) + " / " + fmt1(at.p99())).append(" | ")
                    .append(at1k == null || Double.isNaN(at1k.cpuPercent()) ? "" : fmt1(at1k.cpuPercent() * 10 / (at1k.achievedRate() / 1000)))
                    .append(" | ").append(!hundreds ? "" : held100 == 0 ? "none" : String.format("%,d", held100)).append(" | ")
                    .append(at100 == null ? "" : fmt1(at100.p50()) + " / " + fmt1(at100.p99())).append(" |\n");
        });
        return s.toString();
    }

    /** The throughput and latency goals, each with its figure from this run and whether it is met. */
    private String goals(List<Median> medians) {
        var s = new StringBuilder("\n### Goals: outbox-router on Postgres in this run\n\n| goal | figure | met? |\n|---|---:|---|\n");
        for (int size : new int[] {1, 100}) {
            double router = drain(medians, RouterContender.NAME, size);
            goal(s, "drain, " + size + "-row transactions: >= 1.5x Debezium Server", router / drain(medians, DebeziumServerContender.NAME, size),
                    "%.2fx", r -> r >= 1.5);
            goal(s, "drain, " + size + "-row transactions, from the start command (cold JVM, as a restart is waited for): >= 1.5x Debezium Server",
                    drainFromStart(medians, RouterContender.NAME, size) / drainFromStart(medians, DebeziumServerContender.NAME, size),
                    "%.2fx", r -> r >= 1.5);
            goal(s, "drain, " + size + "-row transactions: >= 80% of the stock bare Debezium 3.5 connector on the router's publication "
                    + "and settings", 100 * router / drain(medians, BareDebezium.ROUTER_SETTINGS, size), "%.0f%%", r -> r >= 80);
        }
        var at1k = latency(1000);
        goal(s, "commit to Kafka at 1,000 events/s: p99 <= 25 ms", at1k == null ? Double.NaN : at1k.p99(), "%.1f ms", p -> p <= 25);
        var server1k = latency(DebeziumServerContender.NAME, 1000);
        goal(s, "at 1,000 events/s: p50 <= half of Debezium Server's", at1k == null || server1k == null ? Double.NaN
                : at1k.p50() / server1k.p50(), "%.2fx its p50", r -> r <= 0.5);
        goal(s, "at 1,000 events/s: p99 <= Debezium Server's", at1k == null || server1k == null ? Double.NaN
                : at1k.p99() / server1k.p99(), "%.2fx its p99", r -> r <= 1);
        int held = highestHeld(RouterContender.NAME);
        int serverHeld = highestHeld(DebeziumServerContender.NAME);
        int relayHeld = highestHeld("polling relay, every 10 ms");
        goal(s, "highest rate held at p99 <= 100 ms: >= 1.5x Debezium Server's", latency(DebeziumServerContender.NAME, 1000) == null
                ? Double.NaN : serverHeld == 0 ? (held > 0 ? Double.POSITIVE_INFINITY : Double.NaN) : held / (double) serverHeld,
                "%.2fx", r -> r >= 1.5);
        goal(s, "highest rate held at p99 <= 100 ms: >= the 10 ms polling relay's", latency("polling relay, every 10 ms", 1000) == null
                ? Double.NaN : held - relayHeld, "%+.0f events/s", d -> d >= 0);
        var at5k = latency(5000);
        goal(s, "at 5,000 events/s: keeps up (p50 <= 100 ms, no growing lag)", at5k == null ? Double.NaN : at5k.p50(), "p50 %.1f ms",
                p -> p <= 100);
        goal(s, "at 5,000 events/s: p99 <= 100 ms", at5k == null ? Double.NaN : at5k.p99(), "%.1f ms", p -> p <= 100);
        double restart = startup.stream().filter(st -> st.database().equals("Postgres") && st.contender().equals(RouterContender.NAME)
                && st.restart() != null).mapToDouble(st -> st.restart().toMillis() / 1000.0).findFirst().orElse(Double.NaN);
        goal(s, "restart to streaming <= 2 s", restart, "%.2f s", r -> r <= 2);
        double rss = throughput.stream().filter(t -> t.database().equals("Postgres") && t.contender().equals(RouterContender.NAME))
                .mapToDouble(Throughput::peakRssMiB).filter(r -> !Double.isNaN(r)).max().orElse(Double.NaN);
        goal(s, "RSS under load <= 256 MB (peak of the drains, " + String.join(" ", RouterContender.RECOMMENDED_JVM_OPTIONS) + ")", rss, "%.0f MiB", r -> r <= 256);
        goal(s, "idle CPU while streaming with nothing to publish <= 2% of a core",
                idleCpuPercent.getOrDefault(RouterContender.NAME, Double.NaN), "%.1f%%", p -> p <= 2);
        s.append("\n### A tableless outbox (logical decoding messages) beside the table, in this run\n\n")
                .append("| | table | messages |\n|---|---:|---:|\n");
        for (int size : new int[] {1, 100}) {
            s.append("| drain, ").append(size).append("-event transactions, events/s | ").append(fmt0(drain(medians, RouterContender.NAME, size)))
                    .append(" | ").append(fmt0(drain(medians, RouterContender.MESSAGES, size))).append(" |\n");
        }
        for (int rate : new int[] {1000, 5000}) {
            var table = latency(RouterContender.NAME, rate);
            var messages = latency(RouterContender.MESSAGES, rate);
            s.append("| commit to Kafka at ").append(String.format("%,d", rate)).append(" events/s, p50 / p99 ms | ")
                    .append(table == null ? "" : fmt1(table.p50()) + " / " + fmt1(table.p99())).append(" | ")
                    .append(messages == null ? "" : fmt1(messages.p50()) + " / " + fmt1(messages.p99())).append(" |\n");
        }
        s.append("\n### Goals: exactly-once beside at-least-once in this run\n\n| goal | figure | met? |\n|---|---:|---|\n");
        for (int size : new int[] {1, 100}) {
            goal(s, "drain, " + size + "-row transactions: exactly-once costs <= 15% of throughput",
                    100 * (1 - drain(medians, RouterContender.EXACTLY_ONCE, size) / drain(medians, RouterContender.NAME, size)), "%.0f%% less",
                    c -> c <= 15);
        }
        for (int rate : new int[] {1000, 5000}) {
            var alo = latency(RouterContender.NAME, rate);
            var eos = latency(RouterContender.EXACTLY_ONCE, rate);
            goal(s, "commit to a read_committed consumer at " + String.format("%,d", rate) + " events/s: p99 <= at-least-once's + 10 ms",
                    alo == null || eos == null ? Double.NaN : eos.p99() - alo.p99(), "%+.1f ms", d -> d <= 10);
        }
        return s.toString();
    }

    private static double drain(List<Median> medians, String contender, int size) {
        return medians.stream().map(Median::median).filter(t -> t.database().equals("Postgres") && t.txnSize() == size
                && t.contender().equals(contender)).mapToDouble(Throughput::eventsPerSecond).findFirst().orElse(Double.NaN);
    }

    private static double drainFromStart(List<Median> medians, String contender, int size) {
        return medians.stream().map(Median::median).filter(t -> t.database().equals("Postgres") && t.txnSize() == size
                && t.contender().equals(contender)).mapToDouble(Throughput::fromStart).findFirst().orElse(Double.NaN);
    }

    private Latency latency(int rate) {
        return latency(RouterContender.NAME, rate);
    }

    private Latency latency(String contender, int rate) {
        return latency(contender, 1, rate);
    }

    private Latency latency(String contender, int rowsPerTxn, int rate) {
        return latency.stream().filter(l -> l.database().equals("Postgres") && l.contender().equals(contender)
                && l.rowsPerTxn() == rowsPerTxn && l.targetRate() == rate).findFirst().orElse(null);
    }

    private static void goal(StringBuilder s, String goal, double figure, String format, java.util.function.DoublePredicate met) {
        s.append("| ").append(goal).append(" | ").append(Double.isNaN(figure) ? "not measured" : String.format(format, figure))
                .append(" | ").append(Double.isNaN(figure) ? "" : met.test(figure) ? "met" : "not met").append(" |\n");
    }

    private static String ratio(double a, double b) {
        return Double.isNaN(a) || Double.isNaN(b) || b == 0 ? "" : String.format("%.0f%%", 100 * a / b);
    }

    private static String secs(Duration d) {
        return d == null ? "" : String.format("%.2f", d.toMillis() / 1000.0);
    }

    static String fmt0(double v) {
        return Double.isNaN(v) ? "" : String.format("%,.0f", v);
    }

    static String fmt1(double v) {
        return Double.isNaN(v) ? "" : String.format("%.1f", v);
    }

}
