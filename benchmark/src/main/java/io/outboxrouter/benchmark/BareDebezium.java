package io.outboxrouter.benchmark;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * The ceiling of anything built on Debezium: the Postgres connector in the embedded engine, with the router's connector
 * settings (poll, batch, column filter, no tombstones or context headers; transaction metadata on, as the router needs
 * it today, or off), and a consumer that only counts the rows and marks them processed (offsets in memory). It runs in
 * the benchmark's JVM, so with the same Debezium classes as the router (including its SchemaUtil backport).
 */
final class BareDebezium implements Contender {
    private final BenchDb db;
    private final String slot;
    private final Arrivals arrivals = new Arrivals();
    private DebeziumEngine<RecordChangeEvent<SourceRecord>> engine;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> new Thread(r, "bare-debezium"));

    /** The name of the variant with the router's connector settings exactly: the reference of the 85% goal. */
    static final String ROUTER_SETTINGS = "bare Debezium engine, router's connector settings";

    private final boolean transactionMetadata;

    BareDebezium(BenchDb db, String slot, boolean transactionMetadata) {
        this.db = db;
        this.slot = slot;
        this.transactionMetadata = transactionMetadata;
    }

    @Override
    public String name() {
        return transactionMetadata ? ROUTER_SETTINGS : "bare Debezium engine, transaction metadata off";
    }

    @Override
    public Duration start() throws Exception {
        long t0 = System.nanoTime();
        var p = new Properties();
        p.setProperty("name", "bare-" + slot);
        p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
        p.setProperty("offset.flush.interval.ms", "0");
        p.setProperty("topic.prefix", "bare");
        p.setProperty("database.hostname", "127.0.0.1");
        p.setProperty("database.port", Integer.toString(db.server.port()));
        p.setProperty("database.user", db.server.user());
        p.setProperty("database.password", db.server.password());
        p.setProperty("database.dbname", db.database);
        p.setProperty("plugin.name", "pgoutput");
        p.setProperty("slot.name", slot);
        p.setProperty("publication.name", "bench_pub");
        p.setProperty("publication.autocreate.mode", "disabled");
        p.setProperty("snapshot.mode", "no_data");
        p.setProperty("table.include.list", "public\\.outbox");
        p.setProperty("poll.interval.ms", "10");
        p.setProperty("max.batch.size", "2048");
        p.setProperty("max.queue.size", "8192");
        p.setProperty("column.include.list", "public\\.outbox\\.(id|aggregatetype|aggregateid|type|payload)");
        p.setProperty("tombstones.on.delete", "false");
        p.setProperty("extended.headers.enabled", "false");
        p.setProperty("decimal.handling.mode", "string");
        p.setProperty("binary.handling.mode", "bytes");
        p.setProperty("include.unknown.datatypes", "true");
        p.setProperty("provide.transaction.metadata", Boolean.toString(transactionMetadata));
        var ready = new java.util.concurrent.CountDownLatch(1);
        engine = DebeziumEngine.create(ChangeEventFormat.of(Connect.class)).using(p)
                .using(new DebeziumEngine.ConnectorCallback() {
                    @Override
                    public void taskStarted() {
                        ready.countDown();
                    }
                })
                .notifying((records, committer) -> {
                    long at = Load.epochMicros();
                    for (var r : records) {
                        if (r.record().value() instanceof Struct v && v.schema().field("op") != null) {
                            arrivals.arrived(null, at);
                        }
                        committer.markProcessed(r);
                    }
                    committer.markBatchFinished();
                }).build();
        thread.execute(engine);
        ready.await();
        return Duration.ofNanos(System.nanoTime() - t0);
    }

    @Override
    public Arrivals arrivals() {
        return arrivals;
    }

    @Override
    public void close() throws Exception {
        if (engine != null) {
            engine.close();
        }
        thread.shutdown();
        thread.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS);
    }
}
