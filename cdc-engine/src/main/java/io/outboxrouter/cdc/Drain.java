package io.outboxrouter.cdc;

import io.outboxrouter.config.SourceConfig;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.ObjectName;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * "Everything committed before now is published and its position stored": how {@code run --once} knows it is done.
 *
 * <p>Postgres: a transactional logical decoding message ({@code pg_logical_emit_message}) is committed now; the WAL
 * hands it over after every transaction committed before it, so once the batch holding its transaction's END is
 * acknowledged and stored, nothing committed earlier is left. Nothing is written to any table.
 *
 * <p>MySQL/MariaDB have no such message. The binlog's end is read now ({@code SHOW BINARY LOG STATUS}); the drain is
 * complete when the binlog reader has read up to it, the engine's queue is empty and no batch is in flight, on two
 * checks in a row.
 */
final class Drain {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Drain.class);
    static final String MESSAGE_PREFIX = "outbox-router.drain";

    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private final String token = UUID.randomUUID().toString();
    private volatile boolean markerSeen;

    CompletableFuture<Void> done() {
        return done;
    }

    /** Commits the marker message on the source. */
    void emitPostgresMarker(SourceConfig source) throws SQLException {
        var conn = source.connection();
        try (var c = DriverManager.getConnection(conn.url(), conn.user(), conn.password().reveal());
             var ps = c.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?)")) {
            ps.setString(1, MESSAGE_PREFIX);
            ps.setString(2, token);
            ps.execute();
        }
    }

    /** Called for every record of a batch, in order; returns whether it is this drain's marker. */
    boolean isMarker(SourceRecord record) {
        if (!(record.value() instanceof Struct v) || v.schema().field("message") == null || !(v.get("message") instanceof Struct m)) {
            return false;
        }
        if (!MESSAGE_PREFIX.equals(m.getString("prefix"))) {
            return false;
        }
        Object content = m.get("content");
        String text = content instanceof byte[] b ? new String(b, StandardCharsets.UTF_8)
                : content instanceof ByteBuffer bb ? StandardCharsets.UTF_8.decode(bb.duplicate()).toString()
                : String.valueOf(content);
        return token.equals(text);
    }

    /**
     * After a batch was handled and its position stored.
     *
     * @param markerIndex the marker's index in this batch, or -1
     * @param safeIndex   the last index of this batch whose position was stored, or -1
     */
    void batchStored(int markerIndex, int safeIndex) {
        if (markerIndex >= 0) {
            markerSeen = true;
        }
        if (markerSeen && safeIndex >= Math.max(markerIndex, 0)) {
            done.complete(null);
        }
    }

    /** A binlog position, comparable across files of one server. */
    record BinlogPosition(String file, long position) implements Comparable<BinlogPosition> {
        @Override
        public int compareTo(BinlogPosition o) {
            int byFile = Long.compare(sequence(file), sequence(o.file));
            return byFile != 0 ? byFile : Long.compare(position, o.position);
        }

        private static long sequence(String file) {
            int dot = file.lastIndexOf('.');
            try {
                return Long.parseLong(file.substring(dot + 1));
            } catch (NumberFormatException e) {
                return 0;
            }
        }
    }

    /** Where the server will write its next binlog event (the three spellings of MySQL 8.4, MariaDB and older). */
    static BinlogPosition binlogEnd(SourceConfig source) throws SQLException {
        var conn = source.connection();
        try (var c = DriverManager.getConnection(conn.url(), conn.user(), conn.password().reveal())) {
            SQLException last = null;
            for (String sql : new String[] {"SHOW BINARY LOG STATUS", "SHOW BINLOG STATUS", "SHOW MASTER STATUS"}) {
                try (var st = c.createStatement(); var rs = st.executeQuery(sql)) {
                    if (rs.next()) {
                        return new BinlogPosition(rs.getString(1), rs.getLong(2));
                    }
                    throw new SQLException(sql + " returned no row: is log_bin on?");
                } catch (java.sql.SQLSyntaxErrorException e) {
                    last = e;
                }
            }
            throw last;
        }
    }

    /** Polls the binlog reader's metrics until it has read up to {@code end} and the engine is idle. */
    static final class BinlogWatch {
        private final BinlogPosition end;
        private final ObjectName streamingMetrics;
        private final AtomicLong batchesStarted;
        private final AtomicLong batchesFinished;
        private long idleChecks;
        private long lastFinished = -1;
        private long checks;

        BinlogWatch(BinlogPosition end, ObjectName streamingMetrics, AtomicLong batchesStarted, AtomicLong batchesFinished) {
            this.end = end;
            this.streamingMetrics = streamingMetrics;
            this.batchesStarted = batchesStarted;
            this.batchesFinished = batchesFinished;
        }

        /** One check; true once the drain is complete. */
        boolean check() {
            var server = ManagementFactory.getPlatformMBeanServer();
            try {
                String file = (String) server.getAttribute(streamingMetrics, "BinlogFilename");
                long pos = (Long) server.getAttribute(streamingMetrics, "BinlogPosition");
                int remaining = (Integer) server.getAttribute(streamingMetrics, "QueueRemainingCapacity");
                int total = (Integer) server.getAttribute(streamingMetrics, "QueueTotalCapacity");
                long finished = batchesFinished.get();
                boolean idle = file != null && new BinlogPosition(file, pos).compareTo(end) >= 0 && remaining == total
                        && batchesStarted.get() == finished && finished == lastFinished;
                lastFinished = finished;
                idleChecks = idle ? idleChecks + 1 : 0;
                if (++checks % 25 == 0) {
                    LOG.info("Draining: binlog reader at {}:{}, end to reach {}:{}, queue {}/{} free, batches {}/{}", file, pos, end.file(),
                            end.position(), remaining, total, finished, batchesStarted.get());
                }
                return idleChecks >= 2;
            } catch (javax.management.JMException | RuntimeException e) {
                if (++checks % 25 == 0) {
                    LOG.info("Draining: cannot read the binlog reader's metrics yet: {}", e.toString());
                }
                idleChecks = 0;
                return false;
            }
        }
    }
}
