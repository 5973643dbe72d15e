package io.outboxrouter.benchmark;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.ChangeEventFormat;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.connect.data.Struct;

/**
 * The ceiling of anything built on Debezium: the Postgres connector in the embedded engine, with the router's connector
 * settings (poll, batch, column filter, no tombstones or context headers, transaction metadata off and a heartbeat every
 * 250 ms on Postgres; or with transaction metadata on, as the router runs under exactly-once delivery) on the router's
 * publication, and a consumer that only counts the rows and marks them processed (offsets in memory). It runs in a JVM
 * of its own started for each drain, as the router does (the router's JVM options): a drain after a restart includes the
 * JIT compiler's work. The child writes its progress (count, first and last arrival) to a file the benchmark polls.
 */
final class BareDebezium implements Contender {
    private final BenchDb db;
    private final String slot;
    private final Arrivals arrivals = new Arrivals();
    private ChildProcess process;
    private Thread poller;
    private volatile boolean closed;

    /** The name of the variant with the router's connector settings exactly: the reference of the share goal. */
    static final String ROUTER_SETTINGS = "bare Debezium engine, router's connector settings";

    private final boolean transactionMetadata;

    BareDebezium(BenchDb db, String slot, boolean transactionMetadata) {
        this.db = db;
        this.slot = slot;
        this.transactionMetadata = transactionMetadata;
    }

    @Override
    public String name() {
        return transactionMetadata ? "bare Debezium engine, transaction metadata on" : ROUTER_SETTINGS;
    }

    @Override
    public Duration start() throws Exception {
        long t0 = System.nanoTime();
        Path dir = Path.of(System.getProperty("bench.out", "target/bench")).toAbsolutePath();
        Files.createDirectories(dir);
        Path progress = dir.resolve(slot + ".progress");
        Files.deleteIfExists(progress);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // The router's JVM options too: what differs from the router is its own work, not the JVM's.
        var command = new java.util.ArrayList<>(List.of(java));
        command.addAll(RouterContender.RECOMMENDED_JVM_OPTIONS);
        command.addAll(RouterContender.jvmOptions("BENCH_BARE_JVM_OPTS", slot)); // e.g. a JFR recording, for profiling beside the router
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), BareDebezium.class.getName(),
                Integer.toString(db.server.port()), db.server.user(), db.server.password(), db.database, slot,
                Boolean.toString(transactionMetadata), progress.toString()));
        process = ChildProcess.start(command, dir, Map.of(), dir.resolve(slot + ".log"));
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!Files.exists(progress)) {
            if (!process.process.isAlive() || System.nanoTime() > deadline) {
                throw new IllegalStateException("the bare engine did not start:\n" + process.tail());
            }
            Thread.sleep(20);
        }
        Duration started = Duration.ofNanos(System.nanoTime() - t0);
        poller = new Thread(() -> poll(progress), "bare-progress-" + slot);
        poller.setDaemon(true);
        poller.start();
        return started;
    }

    private void poll(Path progress) {
        while (!closed) {
            try {
                var f = Files.readString(progress).trim().split(" ");
                if (f.length == 3) {
                    arrivals.progress(Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2]));
                }
                Thread.sleep(20);
            } catch (IOException | NumberFormatException e) {
                // being replaced: read it again
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    @Override
    public Arrivals arrivals() {
        return arrivals;
    }

    @Override
    public ProcessStats stats() {
        return process.stats();
    }

    @Override
    public boolean alive() {
        return process == null || process.process.isAlive();
    }

    @Override
    public void close() throws Exception {
        closed = true;
        if (poller != null) {
            poller.join(1_000);
        }
        if (process != null) {
            process.close();
        }
    }

    /** The child: port user password database slot transaction-metadata progress-file. */
    public static void main(String[] args) throws Exception {
        var p = new Properties();
        String slot = args[4];
        p.setProperty("name", "bare-" + slot);
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
        p.setProperty("offset.flush.interval.ms", "0");
        p.setProperty("topic.prefix", "bare");
        p.setProperty("database.hostname", "127.0.0.1");
        p.setProperty("database.port", args[0]);
        p.setProperty("database.user", args[1]);
        p.setProperty("database.password", args[2]);
        p.setProperty("database.dbname", args[3]);
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", slot);
        p.setProperty("publication.name", "bench_pub");
        p.setProperty("publication.autocreate.mode", "disabled");
        p.setProperty("snapshot.mode", "no_data");
        p.setProperty("table.include.list", "public\\.outbox");
        p.setProperty("poll.interval.ms", Long.toString(io.outboxrouter.config.RouterConfigLoader.DEFAULT_POLL_INTERVAL.toMillis()));
        p.setProperty("max.batch.size", "2048");
        p.setProperty("max.queue.size", "4096");
        p.setProperty("column.include.list", "public\\.outbox\\.(id|aggregatetype|aggregateid|type|payload)");
        p.setProperty("tombstones.on.delete", "false");
        p.setProperty("extended.headers.enabled", "false");
        p.setProperty("decimal.handling.mode", "string");
        p.setProperty("binary.handling.mode", "bytes");
        p.setProperty("include.unknown.datatypes", "true");
        p.setProperty("provide.transaction.metadata", args[5]);
        if (!Boolean.parseBoolean(args[5])) {
            p.setProperty("heartbeat.interval.ms", "250"); // the router's, for the ends of transactions before a quiet spell
        }
        Path progress = Path.of(args[6]);
        Path tmp = Path.of(args[6] + ".tmp");
        long[] seen = new long[3]; // count, first and last arrival (epoch micros)
        var stopped = new CountDownLatch(1);
        try (var engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class)).using(p)
                .using(new DebeziumEngine.ConnectorCallback() {
                    @Override
                    public void taskStarted() {
                        write(progress, tmp, seen);
                    }
                })
                .using((success, message, error) -> stopped.countDown())
                .notifying((records, committer) -> {
                    long at = Load.epochMicros();
                    long before = seen[0];
                    for (var r : records) {
                        if (r.record().value() instanceof Struct v && v.schema().field("op") != null) {
                            seen[0]++;
                        }
                        committer.markProcessed(r);
                    }
                    committer.markBatchFinished();
                    if (seen[0] > before) {
                        seen[1] = before == 0 ? at : seen[1];
                        seen[2] = at;
                        write(progress, tmp, seen);
                    }
                }).build()) {
            var thread = Executors.newSingleThreadExecutor();
            thread.execute(engine);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    engine.close();
                    stopped.await(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    // exiting anyway
                }
            }));
            stopped.await();
            thread.shutdown();
        }
    }

    private static void write(Path progress, Path tmp, long[] seen) {
        try {
            Files.writeString(tmp, seen[0] + " " + seen[1] + " " + seen[2]);
            Files.move(tmp, progress, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
