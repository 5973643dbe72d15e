package io.outboxrouter.cdc;

import io.outboxrouter.config.JdbcConnection;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.UUID;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * A transactional logical decoding message ({@code pg_logical_emit_message}) is committed now; the WAL hands it over
 * after every transaction committed before it, so once the batch holding its transaction's END is acknowledged and
 * stored, nothing committed earlier is left. Nothing is written to any table.
 */
final class PostgresDrain extends Drain {
    static final String MESSAGE_PREFIX = "outbox-router.drain";

    private final JdbcConnection connection;
    private final String token = UUID.randomUUID().toString();
    private volatile boolean markerSeen;

    PostgresDrain(JdbcConnection connection) {
        this.connection = connection;
    }

    @Override
    void start() throws SQLException {
        try (var c = connection.open(); var ps = c.prepareStatement("SELECT pg_logical_emit_message(true, ?, ?)")) {
            if (!PostgresVersion.atLeast(c, PostgresVersion.MESSAGES)) {
                // pgoutput hands messages over from Postgres 14 on: the marker would never arrive, and the run never end.
                throw new SourceSetupException("run --once needs Postgres 14 or later, whose pgoutput carries the logical "
                        + "decoding message that tells it everything committed before it is published; this server is "
                        + c.getMetaData().getDatabaseProductVersion() + ". Run the router without --once");
            }
            ps.setString(1, MESSAGE_PREFIX);
            ps.setString(2, token);
            ps.execute();
            // A second transaction after it: without transaction metadata, its arrival tells at once that the marker's
            // transaction has ended (else the next heartbeat does).
            ps.setString(2, token + ".after");
            ps.execute();
        }
    }

    @Override
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

    @Override
    boolean needsPromptStore() {
        return true; // done only once the marker's transaction END is stored
    }

    @Override
    void batchStored(int markerIndex, int safeIndex) {
        if (markerIndex >= 0) {
            markerSeen = true;
        }
        if (markerSeen && safeIndex >= Math.max(markerIndex, 0)) {
            done().complete(null);
        }
    }
}
