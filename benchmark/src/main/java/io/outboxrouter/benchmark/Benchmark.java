package io.outboxrouter.benchmark;

import io.outboxrouter.testing.KafkaBroker;
import io.outboxrouter.testing.MariaDbServer;
import io.outboxrouter.testing.PostgresServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One command: embedded Postgres, MariaDB and Kafka as the tests start them; a backlog drained by each contender
 * (raw slot reader, bare Debezium engine, outbox-router, Debezium Server); a ladder of fixed rates, single-row and
 * 100-row transactions, for latency (raw slot reader, outbox-router, Debezium Server, polling relays); start and restart
 * times. Prints a Markdown table and
 * writes results.md and results.png under {@code bench.out}.
 *
 * <p>{@code -Dbench.profile=quick} for a short run; {@code -Dbench.only=} a comma list of {@code throughput},
 * {@code latency}, {@code messages}, {@code mariadb}; {@code BENCH_DEBEZIUM_SERVER=false} leaves Debezium Server out.
 */
public final class Benchmark {
    static final Logger LOG = LoggerFactory.getLogger(Benchmark.class);

    private final boolean quick = "quick".equals(System.getProperty("bench.profile"));
    /** {@code BENCH_SHARDS}: the shard counts of the sharded router's drains (2 and 4 by default; empty: none). */
    private static final List<Integer> SHARDS = Arrays.stream(System.getenv().getOrDefault("BENCH_SHARDS", "2,4").split(","))
            .map(String::trim).filter(t -> !t.isEmpty()).map(Integer::parseInt).toList();
    private final Set<String> only = Set.of(System.getProperty("bench.only", "").split(","));
    private final Path out = Path.of(System.getProperty("bench.out", "target/bench"));
    private final int repeat = Integer.getInteger("bench.repeat", quick ? 1 : 3);
    private final Results results = new Results();
    // BENCH_BACKLOG_1 and BENCH_BACKLOG_100: larger backlogs, so that a drain's rate is less its JVM's warm-up.
    private final long backlog1 = backlog("BENCH_BACKLOG_1", quick ? 10_000 : 100_000);
    private final long backlog100 = backlog("BENCH_BACKLOG_100", quick ? 40_000 : 200_000);
    private final Duration window = Duration.ofSeconds(quick ? 8 : 12);
    private final LatencyRuns latencies = new LatencyRuns(results, window);
    private String bootstrap;

    private static long backlog(String variable, long otherwise) {
        String value = System.getenv(variable);
        if (value == null || value.isBlank()) {
            return otherwise;
        }
        try {
            long events = Long.parseLong(value.trim().replace("_", ""));
            if (events > 0) {
                return events;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(variable + " must be a positive number of events, not '" + value + "'");
    }

    public static void main(String[] args) throws Exception {
        new Benchmark().run();
        System.exit(0);
    }

    static Path routerJar() {
        var jar = Path.of(System.getProperty("router.jar", "outbox-router/target/outbox-router.jar"));
        if (!Files.exists(jar)) {
            throw new IllegalStateException(jar + " is missing: build it first (the command in docs/performance.md does)");
        }
        return jar;
    }

    /**
     * {@code BENCH_CONTENDERS}: a comma list of raw, bare, router, router-plain, exactly-once, messages, shards,
     * debezium-server, relay; all when unset.
     */
    private static boolean wanted(Contender c) {
        return wanted(c instanceof RawSlotReader ? "raw" : c instanceof BareDebezium ? "bare"
                : c instanceof RouterContender r ? (r.isPlain() ? "router-plain" : r.shards() > 1 ? "shards" : r.exactlyOnce() ? "exactly-once" : r.messages() ? "messages" : "router")
                : c instanceof DebeziumServerContender ? "debezium-server" : "relay");
    }

    private static boolean wanted(String key) {
        String list = System.getenv("BENCH_CONTENDERS");
        return list == null || list.isBlank() || List.of(list.split(",")).contains(key);
    }

    private boolean section(String name) {
        return only.contains("") || only.contains(name);
    }

    private void run() throws Exception {
        Files.createDirectories(out);
        String machine = Machine.describe();
        LOG.info("Machine: {}", machine);
        try (var kafka = KafkaBroker.start()) {
            bootstrap = kafka.bootstrapServers();
            try (var pg = PostgresServer.start()) {
                var db = BenchDb.postgres(pg);
                if (section("throughput")) {
                    for (int round = 1; round <= repeat; round++) {
                        throughput(db, 1, backlog1, round);
                        throughput(db, 100, backlog100, round);
                    }
                }
                if (section("latency")) {
                    latency(db);
                }
                if (section("messages")) {
                    messages(db.withMessages());
                }
            }
            if (section("mariadb")) {
                try (var maria = MariaDbServer.start()) {
                    mariadb(BenchDb.mariadb(maria));
                }
            }
        }
        String md = RunHeader.markdown() + "Machine: " + machine + "\n\n" + results.markdown();
        Files.writeString(out.resolve("results.md"), md);
        Plots.write(results, out.resolve("results.png"), machine.replaceAll(",.*", ""));
        System.out.println();
        System.out.println(md);
        System.out.println("Written: " + out.resolve("results.md") + " and " + out.resolve("results.png"));
    }

    /**
     * Every contender drains the same backlog from a slot of its own, created before the backlog was written; repeated
     * {@code bench.repeat} times (3 by default, 1 in the quick profile), each time in another order, so that no contender
     * always goes first (cold caches) or last (a bigger benchmark heap); the tables report the median.
     */
    private void throughput(BenchDb db, int txnSize, long events, int round) throws Exception {
        var contenders = new ArrayList<Contender>();
        var slots = new ArrayList<List<String>>();
        contenders.add(new RawSlotReader(db, "raw_t" + txnSize));
        slots.add(List.of("raw_t" + txnSize));
        contenders.add(new BareDebezium(db, "bare_t" + txnSize, true));
        slots.add(List.of("bare_t" + txnSize));
        contenders.add(new BareDebezium(db, "barenotx_t" + txnSize, false));
        slots.add(List.of("barenotx_t" + txnSize));
        var router = new RouterContender(db, "router-t" + txnSize + "-" + round, "bench-router-t" + txnSize + "-" + round, bootstrap,
                out, freePort());
        contenders.add(router);
        slots.add(router.slots());
        var plain = new RouterContender(db, "routerplain-t" + txnSize + "-" + round, "bench-routerplain-t" + txnSize + "-" + round,
                bootstrap, out, freePort()).plain();
        contenders.add(plain);
        slots.add(plain.slots());
        var exactlyOnce = new RouterContender(db, "routereos-t" + txnSize + "-" + round, "bench-routereos-t" + txnSize + "-" + round,
                bootstrap, out, freePort(), 1, true);
        contenders.add(exactlyOnce);
        slots.add(exactlyOnce.slots());
        for (int shards : SHARDS) {
            var sharded = new RouterContender(db, "router" + shards + "s-t" + txnSize + "-" + round,
                    "bench-router" + shards + "s-t" + txnSize + "-" + round, bootstrap, out, freePort(), shards);
            if (wanted(sharded)) {
                db.createShardPublications(shards);
            }
            contenders.add(sharded);
            slots.add(sharded.slots());
        }
        // Its slot names its topics: a name per round, or a round's consumer would count an earlier round's records.
        var dbz = debeziumServer(db, "dbzs_t" + txnSize + "_" + round);
        if (dbz.isPresent()) {
            contenders.add(dbz.get());
            slots.add(List.of("dbzs_t" + txnSize + "_" + round));
        }
        for (int i = 0; i < contenders.size(); i++) {
            if (wanted(contenders.get(i))) {
                for (String slot : slots.get(i)) {
                    db.createSlot(slot);
                }
            }
        }
        LOG.info("Round {}: writing a backlog of {} events in {}-row transactions", round, events, txnSize);
        var written = Load.flatOut(db, events, txnSize);
        LOG.info("Written in {} s: {} events/s", written.elapsed().toMillis() / 1000.0, Results.fmt0(written.perSecond()));
        if (round == 1) {
            results.notes.add(String.format("Postgres backlog of %,d events in %d-row transactions written by %d threads at %s events/s.",
                    events, txnSize, Load.WRITERS, Results.fmt0(written.perSecond())));
        }
        db.vacuum(); // autovacuum of the fresh rows would otherwise land in a random contender's drain
        int n = contenders.size();
        for (int k = 0; k < n; k++) {
            int i = (k + round - 1) % n; // round 1: raw first; round 2: bare first; ...
            var c = contenders.get(i);
            if (!wanted(c)) {
                continue;
            }
            try (c) {
                drain(db, c, txnSize, events);
            } catch (Exception e) {
                LOG.warn("{} failed: {}", c.name(), e.toString());
                results.notes.add(c.name() + " (" + txnSize + "-row, round " + round + "): failed: "
                        + e.getMessage().lines().findFirst().orElse(""));
            }
            slots.get(i).forEach(db::dropSlot);
        }
    }

    private void drain(BenchDb db, Contender c, int txnSize, long events) throws Exception {
        LOG.info("{}: draining {} events", c.name(), events);
        c.readBackAfter(events);
        long startedMicros = Load.epochMicros();
        c.start();
        var stats = c.stats();
        double cpu0 = stats == null ? Double.NaN : stats.cpuSeconds();
        var threads0 = stats == null ? null : stats.threadCpuSeconds();
        long pid = stats == null ? -1 : stats.pid();
        var kinds0 = ProcessStats.machineCpuByKind(pid);
        double machine0 = ProcessStats.machineBusySeconds();
        long t0 = System.nanoTime();
        boolean all = c.arrivals().await(events, Duration.ofMinutes(10), Duration.ofSeconds(90), c::alive);
        double machine = ProcessStats.machineBusySeconds() - machine0;
        double cpu = stats == null ? Double.NaN : stats.cpuSeconds() - cpu0;
        double wall = (System.nanoTime() - t0) / 1e9;
        // Where the cores went while it drained: its threads (the JIT compilers of a fresh JVM among them), and the machine's
        // processes (the broker in this JVM, Postgres).
        if (threads0 != null && c.alive()) {
            LOG.info("{} ({}-row): drained on {}% of a core; by thread: {}", c.name(), txnSize, Results.fmt1(cpu / wall * 100),
                    ProcessStats.threadShares(threads0, stats.threadCpuSeconds(), wall));
        }
        LOG.info("{} ({}-row): the machine by process while it drained: {}", c.name(), txnSize,
                ProcessStats.threadShares(kinds0, ProcessStats.machineCpuByKind(pid), wall));
        double rss = stats == null ? Double.NaN : stats.peakRssMiB();
        LOG.info("{}: {} of {} events, {} events/s ({} from the start command)", c.name(), c.arrivals().count(), events,
                Results.fmt0(c.arrivals().rate()), Results.fmt0(c.arrivals().rateSince(startedMicros)));
        if (!all) {
            results.notes.add(c.name() + " (" + txnSize + "-row): only " + c.arrivals().count() + " of " + events + " events arrived"
                    + (c.alive() ? "" : " (its process exited)"));
        }
        results.throughput.add(new Results.Throughput(db.postgres ? "Postgres" : "MariaDB", c.name(), txnSize, c.arrivals().count(),
                c.arrivals().rate(), c.arrivals().rateSince(startedMicros), cpu, rss, machine));
    }

    /** One contender's pass over the ladder, in round {@code round} (from 0: idle CPU and start-up times only in the first). */
    @FunctionalInterface
    private interface LadderPass {
        void run(int round) throws Exception;
    }

    /**
     * The rate ladder ({@link LatencyRuns}); each contender on a fresh slot and an empty outbox ({@link BenchDb#reset}).
     * The contenders the goals compare (the raw slot reader, the router, Debezium Server, the 10 ms relay) run the ladder
     * {@code bench.latency.rounds} times (3 by default, 1 in the quick profile), in a rotating order, and each rung keeps
     * its median round: the machine's hour moves a rung more than a contender does. The others run it once.
     */
    private void latency(BenchDb db) throws Exception {
        // What Debezium's queue alone costs while idle, in this JVM, for the router's default poll interval and longer ones.
        var queue = QueueIdleProbe.measure(List.of(10, 25, 50, 100), Duration.ofSeconds(quick ? 3 : 5));
        var probe = new StringBuilder();
        queue.forEach((interval, percent) -> probe.append(probe.isEmpty() ? "" : ", ").append(interval).append(" ms: ")
                .append(Results.fmt1(percent)).append('%'));
        results.notes.add("Debezium's change event queue polled empty by one thread, by poll interval (the router's idle floor at each "
                + "`source.poll-interval`): " + probe + " of a core.");
        var compared = new ArrayList<LadderPass>();
        var once = new ArrayList<LadderPass>();
        // The limit: a plain replication client timing each INSERT it receives.
        if (wanted("raw")) {
            compared.add(round -> {
                db.reset();
                db.createSlot("raw_latency");
                try (var reader = new RawSlotReader(db, "raw_latency", true)) {
                    reader.start();
                    latencies.measure(db, reader);
                }
                db.dropSlot("raw_latency");
            });
        }
        // Each round's router has a name of its own, so its own slot, stored position and topics: a fresh start, as the first.
        if (wanted("router")) {
            compared.add(round -> {
                boolean first = round == 0;
                db.reset();
                try (var router = new RouterContender(db, "router-latency" + suffix(round), "bench-router-latency" + suffix(round), bootstrap,
                        out, freePort())) {
                    db.createSlot(router.slot());
                    Duration start = router.start();
                    if (first) {
                        latencies.idleCpu(router);
                    }
                    latencies.measure(db, router);
                    if (first) {
                        Duration restart = router.restart();
                        results.startup.add(new Results.Startup("Postgres", router.name(), start, restart));
                    }
                    db.dropSlot(router.slot());
                }
            });
        }
        // An A/B of one setting (BENCH_ROUTER_PLAIN_*), only when asked for: compared with the router round by round.
        if (System.getenv("BENCH_CONTENDERS") != null && wanted("router-plain")) {
            compared.add(round -> {
                db.reset();
                try (var plain = new RouterContender(db, "routerplain-latency" + suffix(round), "bench-routerplain-latency" + suffix(round),
                        bootstrap, out, freePort()).plain()) {
                    db.createSlot(plain.slot());
                    plain.start();
                    if (round == 0) {
                        latencies.idleCpu(plain);
                    }
                    latencies.measure(db, plain);
                    db.dropSlot(plain.slot());
                }
            });
        }
        // Commit to a read_committed consumer: a record is visible once its Kafka transaction committed.
        if (wanted("exactly-once")) {
            once.add(round -> {
                db.reset();
                try (var exactlyOnce = new RouterContender(db, "routereos-latency", "bench-routereos-latency", bootstrap, out, freePort(), 1,
                        true)) {
                    db.createSlot(exactlyOnce.slot());
                    Duration start = exactlyOnce.start();
                    latencies.measure(db, exactlyOnce);
                    Duration restart = exactlyOnce.restart();
                    results.startup.add(new Results.Startup("Postgres", exactlyOnce.name(), start, restart));
                    db.dropSlot(exactlyOnce.slot());
                }
            });
        }
        if (debeziumServer(db, "dbzs_latency").isPresent()) {
            compared.add(round -> {
                var dbz = debeziumServer(db, "dbzs_latency").orElseThrow();
                db.reset();
                db.createSlot("dbzs_latency");
                try (var c = dbz) {
                    Duration start = c.start();
                    latencies.measure(db, c);
                    if (round == 0) {
                        results.startup.add(new Results.Startup("Postgres", c.name(), start, null));
                    }
                } catch (Exception e) {
                    results.notes.add(dbz.name() + " latency: failed: " + e.getMessage().lines().findFirst().orElse(""));
                }
                db.dropSlot("dbzs_latency");
            });
        }
        if (wanted("relay")) {
            once.add(round -> relay(db, Duration.ofMillis(250)));
            compared.add(round -> relay(db, Duration.ofMillis(10)));
        }
        int rounds = compared.size() < 2 ? 1 : Integer.getInteger("bench.latency.rounds", quick ? 1 : 3);
        for (int round = 0; round < rounds; round++) {
            Benchmark.LOG.info("Latency, round {} of {}", round + 1, rounds);
            for (int i = 0; i < compared.size(); i++) {
                compared.get((i + round) % compared.size()).run(round);
            }
        }
        for (var pass : once) {
            pass.run(0);
        }
        results.collapseLatencyRounds();
    }

    private static String suffix(int round) {
        return round == 0 ? "" : "-r" + (round + 1);
    }

    private void relay(BenchDb db, Duration interval) throws Exception {
        db.reset();
        try (var relay = new PollingRelay(db, interval, bootstrap)) {
            relay.start();
            latencies.measure(db, relay);
        }
    }

    /**
     * A tableless outbox: the same backlogs and fixed rates written as logical decoding messages, drained and delivered by
     * the router in message mode, for its figures beside the table's (one round: each drain reads a backlog of its own).
     */
    private void messages(BenchDb db) throws Exception {
        for (int txnSize : new int[] {1, 100}) {
            long events = txnSize == 1 ? backlog1 : backlog100;
            var router = new RouterContender(db, "routermsg-t" + txnSize, "bench-routermsg-t" + txnSize, bootstrap, out, freePort());
            if (!wanted(router)) {
                return;
            }
            db.createSlot(router.slot());
            LOG.info("Messages: writing a backlog of {} events in {}-event transactions", events, txnSize);
            var written = Load.flatOut(db, events, txnSize);
            results.notes.add(String.format("Message backlog of %,d events in %d-event transactions (outbox_emit, no table) written by %d "
                    + "threads at %s events/s; drained once.", events, txnSize, Load.WRITERS, Results.fmt0(written.perSecond())));
            try (router) {
                drain(db, router, txnSize, events);
            }
            db.dropSlot(router.slot());
        }
        var router = new RouterContender(db, "routermsg-latency", "bench-routermsg-latency", bootstrap, out, freePort());
        db.reset(); // the outbox table is not written here, but its WAL and vacuums are what the others met
        db.createSlot(router.slot());
        try (router) {
            router.start();
            latencies.measure(db, router);
        }
        db.dropSlot(router.slot());
    }

    /** The router on MariaDB: backlogs drained (a first start stores a position, so later starts resume before them), then latency. */
    private void mariadb(BenchDb db) throws Exception {
        String name = "router-mariadb";
        Duration start;
        try (var first = new RouterContender(db, name, "bench-mariadb-warmup", bootstrap, out, freePort())) {
            start = first.start();
            Load.fixedRate(db, 100, Duration.ofSeconds(2));
            first.arrivals().await(200, Duration.ofSeconds(30), Duration.ofSeconds(30));
        }
        for (int txnSize : new int[] {1, 100}) {
            long events = txnSize == 1 ? backlog1 : backlog100;
            LOG.info("MariaDB: writing a backlog of {} events in {}-row transactions", events, txnSize);
            var written = Load.flatOut(db, events, txnSize);
            results.notes.add(String.format("MariaDB backlog of %,d events in %d-row transactions written by %d threads at %s events/s.",
                    events, txnSize, Load.WRITERS, Results.fmt0(written.perSecond())));
            try (var router = new RouterContender(db, name, "bench-mariadb-t" + txnSize, bootstrap, out, freePort())) {
                drain(db, router, txnSize, events);
            }
        }
        try (var router = new RouterContender(db, name, "bench-mariadb-latency", bootstrap, out, freePort())) {
            router.start();
            latencies.measure(db, router);
            results.startup.add(new Results.Startup("MariaDB", router.name(), start, router.restart()));
        }
    }

    private Optional<DebeziumServerContender> debeziumServer(BenchDb db, String slot) throws Exception {
        return DebeziumServerContender.ifWanted(db, slot, bootstrap, this::note);
    }

    private void note(String n) {
        if (!results.notes.contains(n)) {
            results.notes.add(n);
            LOG.info(n);
        }
    }

    static int freePort() throws IOException {
        try (var s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private Benchmark() {
    }
}
