package io.outboxrouter.cdc;

import io.outboxrouter.config.JdbcConnection;
import java.lang.management.ManagementFactory;
import java.sql.SQLException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.management.JMException;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * MySQL/MariaDB have no logical message to mark the end with. The binlog's end is read now; the drain is complete when
 * the binlog reader has read up to it, the engine's queue is empty and no batch is in flight, on two checks in a row.
 */
final class BinlogDrain extends Drain {
    private static final Logger LOG = LoggerFactory.getLogger(BinlogDrain.class);

    private final JdbcConnection connection;
    private final ObjectName streamingMetrics;
    private final EngineProgress progress;
    private final ScheduledExecutorService poller;
    private BinlogPosition end;
    private long idleChecks;
    private long lastFinished = -1;
    private long checks;

    BinlogDrain(JdbcConnection connection, ObjectName streamingMetrics, EngineProgress progress, String routerName) {
        this.connection = connection;
        this.streamingMetrics = streamingMetrics;
        this.progress = progress;
        this.poller = Executors.newSingleThreadScheduledExecutor(r -> {
            var t = new Thread(r, "drain-" + routerName);
            t.setDaemon(true);
            return t;
        });
        done().whenComplete((v, e) -> poller.shutdownNow());
    }

    @Override
    void start() throws SQLException {
        end = BinlogPosition.end(connection);
        poller.scheduleWithFixedDelay(() -> {
            if (check()) {
                done().complete(null);
            }
        }, 100, 200, TimeUnit.MILLISECONDS);
    }

    @Override
    void cancel() {
        poller.shutdownNow();
    }

    /** One check; true once the drain is complete. */
    private boolean check() {
        var server = ManagementFactory.getPlatformMBeanServer();
        try {
            var bean = SourceConnector.registered(streamingMetrics);
            if (bean == null) {
                idleChecks = 0;
                return false; // not registered yet
            }
            String file = (String) server.getAttribute(bean, "BinlogFilename");
            long pos = (Long) server.getAttribute(bean, "BinlogPosition");
            int remaining = (Integer) server.getAttribute(bean, "QueueRemainingCapacity");
            int total = (Integer) server.getAttribute(bean, "QueueTotalCapacity");
            long finished = progress.batchesFinished().get();
            boolean idle = file != null && new BinlogPosition(file, pos).compareTo(end) >= 0 && remaining == total
                    && progress.idle() && finished == lastFinished;
            lastFinished = finished;
            idleChecks = idle ? idleChecks + 1 : 0;
            if (++checks % 25 == 0) {
                LOG.info("Draining: binlog reader at {}:{}, end to reach {}:{}, queue {}/{} free, batches {}/{}", file, pos, end.file(),
                        end.position(), remaining, total, finished, progress.batchesStarted().get());
            }
            return idleChecks >= 2;
        } catch (JMException | RuntimeException e) {
            if (++checks % 25 == 0) {
                LOG.info("Draining: cannot read the binlog reader's metrics yet: {}", e.toString());
            }
            idleChecks = 0;
            return false;
        }
    }
}
