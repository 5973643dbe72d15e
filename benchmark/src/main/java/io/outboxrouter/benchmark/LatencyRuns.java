package io.outboxrouter.benchmark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Map;
import java.util.Set;

/** Latency at fixed rates, and CPU while idle, of one contender. */
final class LatencyRuns {
    private final Results results;
    /** How long each rate is written. */
    private final Duration window;

    LatencyRuns(Results results, Duration window) {
        this.results = results;
        this.window = window;
    }

    /** What a streaming router costs while nothing is written: its polling of the replication stream. */
    void idleCpu(Contender c) throws InterruptedException {
        // Past the start's JIT work, which would otherwise dominate the figure.
        Thread.sleep(30_000);
        double cpu0 = c.stats().cpuSeconds();
        var threads0 = c.stats().threadCpuSeconds();
        Thread.sleep(20_000);
        double percent = (c.stats().cpuSeconds() - cpu0) / 20 * 100;
        String byThread = ProcessStats.threadShares(threads0, c.stats().threadCpuSeconds(), 20);
        Benchmark.LOG.info("{}: {}% of a core while idle; by thread: {}", c.name(), Results.fmt1(percent), byThread);
        results.notes.add(String.format("%s, streaming with nothing to publish: %.1f%% of one core; by thread: %s.", c.name(), percent,
                byThread));
        results.idleCpuPercent.put(c.name(), percent);
    }

    /**
     * The ladder of fixed rates every contender is measured at, single-row commits each: {@code BENCH_RATES} (a comma
     * list) or 100, 1,000, 2,000, 3,000, 5,000 and 8,000 a second.
     */
    static final int[] RATES = java.util.Arrays.stream(System.getenv().getOrDefault("BENCH_RATES", "100,1000,2000,3000,5000,8000")
            .split(",")).map(String::trim).filter(r -> !r.isEmpty()).mapToInt(Integer::parseInt).toArray();

    /**
     * The ladder of 100-row transactions, in events a second: {@code BENCH_RATES_100} (a comma list; empty: none) or
     * 5,000, 10,000 and 20,000 (50 to 200 transactions a second).
     */
    static final int[] RATES_100 = java.util.Arrays.stream(System.getenv().getOrDefault("BENCH_RATES_100", "5000,10000,20000")
            .split(",")).map(String::trim).filter(r -> !r.isEmpty()).mapToInt(Integer::parseInt).toArray();

    /**
     * Single-row transactions at each rate of the ladder after a warm-up, then 100-row transactions at each of
     * {@link #RATES_100}: latency percentiles, where the time went, and CPU.
     */
    void measure(BenchDb db, Contender c) throws Exception {
        // Warm-up at the rates measured: topic creation, and the JIT of the contender, the load, the broker and the consumer
        // (a JVM's compilers are still busy tens of seconds after the first events; a rung should not measure them).
        Load.fixedRate(db, 1000, window.multipliedBy(2).dividedBy(3));
        Load.fixedRate(db, 3000, window.multipliedBy(2).dividedBy(3));
        Load.fixedRate(db, 5000, window.dividedBy(3));
        c.arrivals().await(Long.MAX_VALUE, Duration.ofSeconds(3), Duration.ofSeconds(3));
        // 100/s too: a quiet outbox is the common case, and there every change comes after a pause of the log reader's,
        // which higher rates do not show.
        for (int rate : RATES) {
            rung(db, c, 1, rate);
        }
        for (int rate : db.postgres ? RATES_100 : new int[0]) {
            rung(db, c, 100, rate);
        }
        loneEvents(db, c);
    }

    /** The pause before each lone event: longer than any contender takes to settle into a quiet stream. */
    static final Duration LONE_EVENT_PAUSE = Duration.ofSeconds(2);

    /**
     * Single events, each committed after {@link #LONE_EVENT_PAUSE} with nothing written: what an event of a quiet outbox
     * waits, which the ladder's rates never show (at 100/s the stream is never quiet for long).
     */
    private void loneEvents(BenchDb db, Contender c) throws Exception {
        int events = window.toSeconds() < 10 ? 6 : 12; // fewer in the quick profile's shorter window
        var commits = new java.util.HashMap<String, Long>();
        for (int i = 0; i < events; i++) {
            Thread.sleep(LONE_EVENT_PAUSE.toMillis());
            commits.putAll(Load.fixedRate(db, 1, Duration.ofSeconds(1)).commitMicros());
        }
        waitFor(commits.keySet(), c.arrivals().byId, Duration.ofSeconds(30));
        var lone = results.loneEventMillis.computeIfAbsent(c.name(), k -> new ArrayList<>());
        commits.forEach((id, at) -> {
            Long arrived = c.arrivals().byId.get(id);
            lone.add(arrived == null ? Double.NaN : (arrived - at) / 1000.0);
        });
        Benchmark.LOG.info("{}: lone events after {} s of quiet, ms: {}", c.name(), LONE_EVENT_PAUSE.toSeconds(),
                lone.subList(lone.size() - commits.size(), lone.size()).stream().map(Results::fmt1).toList());
    }

    private void rung(BenchDb db, Contender c, int txnSize, int rate) throws Exception {
        var stats = c.stats();
        double cpu0 = stats == null ? Double.NaN : stats.cpuSeconds();
        var threads0 = stats == null ? null : stats.threadCpuSeconds();
        var waits0 = stats == null ? null : stats.threadRunQueueSeconds();
        double machine0 = ProcessStats.machineBusySeconds();
        long pid = stats == null ? -1 : stats.pid();
        var kinds0 = ProcessStats.machineCpuByKind(pid);
        var wal0 = db.walStats();
        long t0 = System.nanoTime();
        var written = Load.fixedRate(db, rate, window, txnSize);
        String rung = rate + "/s" + (txnSize > 1 ? " in " + txnSize + "-row transactions" : "");
        if (wal0 != null) {
            Benchmark.LOG.info("{} at {}: {}", c.name(), rung, db.walStats().since(wal0, written.events()));
        }
        c.arrivals().await(Long.MAX_VALUE, Duration.ofSeconds(2), Duration.ofSeconds(2)); // let the tail arrive
        waitFor(written.commitMicros().keySet(), c.arrivals().byId, Duration.ofSeconds(30));
        double wall = (System.nanoTime() - t0) / 1e9;
        double cpu = stats == null ? Double.NaN : (stats.cpuSeconds() - cpu0) / wall * 100;
        double machine = (ProcessStats.machineBusySeconds() - machine0) / wall / Runtime.getRuntime().availableProcessors() * 100;
        if (threads0 != null) {
            Benchmark.LOG.info("{} at {}: {}% of a core (the machine: {}% of its cores); by thread: {}", c.name(), rung,
                    Results.fmt1(cpu), Results.fmt1(machine), ProcessStats.threadShares(threads0, stats.threadCpuSeconds(), wall));
            Benchmark.LOG.info("{} at {}: runnable but waiting for a core, share of the time by thread: {}", c.name(), rung,
                    ProcessStats.threadShares(waits0, stats.threadRunQueueSeconds(), wall));
        }
        Benchmark.LOG.info("{} at {}: the machine by process: {}", c.name(), rung,
                ProcessStats.threadShares(kinds0, ProcessStats.machineCpuByKind(pid), wall));
        double[] p = Results.percentiles(written.commitMicros(), c.arrivals().byId, Duration.ofSeconds(1));
        double[] split = Results.split(written.commitMicros(), c.arrivals().producedById, c.arrivals().byId, Duration.ofSeconds(1));
        Benchmark.LOG.info("{} at {} (achieved {}): p50 {} p90 {} p99 {} max {} ms, {} missing; COMMIT to send p50 {} p99 {}, "
                + "send to read p50 {} p99 {}", c.name(), rung, Results.fmt0(written.perSecond()), p[0], p[1], p[2], p[3], (long) p[5],
                split[0], split[1], split[2], split[3]);
        results.latency.add(new Results.Latency(db.postgres ? "Postgres" : "MariaDB", c.name(), txnSize, rate, written.perSecond(),
                (long) p[4], (long) p[5], p[0], p[1], p[2], p[3], cpu, split[0], split[1], split[2], split[3], machine));
        dumpLatencies(c.name() + "-" + rate + (txnSize > 1 ? "x" + txnSize : ""), written.commitMicros(), c.arrivals().byId);
    }

    /**
     * {@code BENCH_LATENCY_DUMP}: a directory that gets one CSV per contender and rate, each event's commit and arrival
     * (epoch microseconds) in commit order, to see when in the window a tail arose and whether it comes in bursts.
     */
    private static void dumpLatencies(String name, Map<String, Long> written, Map<String, Long> arrived) throws IOException {
        String dir = System.getenv("BENCH_LATENCY_DUMP");
        if (dir == null || dir.isBlank()) {
            return;
        }
        Files.createDirectories(Path.of(dir));
        var lines = new ArrayList<String>(written.size() + 1);
        lines.add("commit_us,arrival_us");
        written.entrySet().stream().sorted(Map.Entry.comparingByValue())
                .forEach(e -> lines.add(e.getValue() + "," + arrived.getOrDefault(e.getKey(), -1L)));
        Files.write(Path.of(dir, name + ".csv"), lines);
    }

    private static void waitFor(Set<String> ids, Map<String, Long> arrived, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline && !arrived.keySet().containsAll(ids)) {
            Thread.sleep(50);
        }
    }
}
