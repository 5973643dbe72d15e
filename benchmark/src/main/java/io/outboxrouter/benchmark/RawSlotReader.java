package io.outboxrouter.benchmark;

import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.replication.PGReplicationStream;

/**
 * The physical limit for one slot: a plain pgjdbc logical-replication client reading pgoutput and counting INSERT
 * messages, confirming its position at every COMMIT. No decoding of the rows, no Kafka; live, it reads each INSERT's
 * first column (the event id) to time it.
 */
final class RawSlotReader implements Contender {
    static final String NAME = "raw pgjdbc slot reader";

    private final BenchDb db;
    private final String slot;
    private final Arrivals arrivals = new Arrivals();
    private Connection connection;
    private PGReplicationStream stream;
    private Thread thread;
    private volatile boolean running = true;
    /** Times each event by its id (the first column of the publication), for the latency ladder. */
    private final boolean live;

    RawSlotReader(BenchDb db, String slot) {
        this(db, slot, false);
    }

    RawSlotReader(BenchDb db, String slot, boolean live) {
        this.db = db;
        this.slot = slot;
        this.live = live;
    }

    String slot() {
        return slot;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Duration start() throws Exception {
        long t0 = System.nanoTime();
        var props = new Properties();
        PGProperty.USER.set(props, db.server.user());
        PGProperty.PASSWORD.set(props, db.server.password());
        PGProperty.ASSUME_MIN_SERVER_VERSION.set(props, "10");
        PGProperty.REPLICATION.set(props, "database");
        PGProperty.PREFER_QUERY_MODE.set(props, "simple");
        connection = DriverManager.getConnection(db.server.jdbcUrl(db.database), props);
        stream = connection.unwrap(PGConnection.class).getReplicationAPI().replicationStream().logical()
                .withSlotName(slot).withSlotOption("proto_version", "1").withSlotOption("publication_names", "bench_pub")
                .withStatusInterval(1, TimeUnit.SECONDS).start();
        thread = new Thread(this::read, "raw-slot-reader");
        thread.setDaemon(true);
        thread.start();
        return Duration.ofNanos(System.nanoTime() - t0);
    }

    private void read() {
        try {
            while (running) {
                ByteBuffer msg = stream.readPending();
                if (msg == null) {
                    TimeUnit.MICROSECONDS.sleep(200);
                    continue;
                }
                byte type = msg.array()[msg.arrayOffset()];
                if (type == 'I') {
                    arrivals.arrived(live ? firstColumn(msg) : null, Load.epochMicros());
                } else if (type == 'C') {
                    stream.setAppliedLSN(stream.getLastReceiveLSN());
                    stream.setFlushedLSN(stream.getLastReceiveLSN());
                }
            }
        } catch (Exception e) {
            if (running) {
                Benchmark.LOG.warn("raw slot reader stopped: {}", e.toString());
            }
        }
    }

    /**
     * The first column of a pgoutput INSERT as text: 'I', the relation's OID, 'N', the column count, then per column
     * its kind ('t' for text) and, for text, a length and the bytes.
     */
    private static String firstColumn(ByteBuffer msg) {
        var b = msg.duplicate();
        b.position(b.position() + 1 + 4 + 1 + 2);
        if (b.get() != 't') {
            return null;
        }
        byte[] value = new byte[b.getInt()];
        b.get(value);
        return new String(value, java.nio.charset.StandardCharsets.UTF_8);
    }

    @Override
    public Arrivals arrivals() {
        return arrivals;
    }

    @Override
    public void close() throws Exception {
        running = false;
        if (thread != null) {
            thread.join(5_000);
        }
        if (stream != null) {
            stream.close();
        }
        if (connection != null) {
            connection.close();
        }
    }
}
