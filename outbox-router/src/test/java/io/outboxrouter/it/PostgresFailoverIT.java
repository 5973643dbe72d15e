package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TcpProxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * A Postgres 17 primary fails over to its standby while the router streams under load. The router reaches the database
 * through one address that moves to the new primary (as a virtual IP or a Kubernetes service does), and its slot is a
 * failover slot the standby keeps a copy of: after the promotion it goes on from that copy, in the same process, with
 * nothing lost and the order per aggregate kept.
 */
class PostgresFailoverIT {

    @Test
    void aPromotedStandbyTakesOverWithNothingLostAndOrderKept() throws Exception {
        PostgresServer standby = null;
        try (var primary = PostgresServer.start()) {
            var db = new PostgresOutbox(primary, OutboxContract.unique("failover"));
            try (var address = TcpProxy.to(primary.port())) {
                String url = "jdbc:postgresql://127.0.0.1:" + address.port() + "/" + db.database();
                String topics = OutboxContract.unique("failover");
                String name = OutboxContract.unique("failover-router").replace('_', '-');
                var config = RouterConfigLoader.parse("name: " + name + "\n" + db.sourceYaml().replace(primary.jdbcUrl(db.database()), url)
                        + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\nkafka:\n  bootstrap-servers: " + OutboxContract.kafka() + "\n",
                        Map.of());
                String slot = config.source().postgres().slot();
                try (var router = Router.start(config); var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
                    assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                    // The standby is made once the router's slot exists: its slot sync worker copies the slot at its start.
                    standby = primary.startStandby();
                    var copy = standby;
                    var written = Collections.synchronizedList(new ArrayList<TestEvent>());
                    var stop = new AtomicBoolean();
                    var load = Executors.newSingleThreadExecutor();
                    var writer = load.submit(() -> write(url, written, stop));
                    try {
                        // The standby holds a copy of the slot once its slot sync worker has made one it can decode from, which
                        // needs a record of the running transactions after the slot's start: the primary logs one every 15 s,
                        // and here on demand, so that the test does not wait for it.
                        Awaitility.await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> {
                            try (var c = primary.connect("postgres"); var st = c.createStatement()) {
                                st.execute("SELECT pg_log_standby_snapshot()");
                            }
                            return syncedCopy(copy, db.database(), slot);
                        });
                        Thread.sleep(2_000);

                        primary.kill();
                        int before = written.size();
                        copy.promote();
                        address.switchTo(copy.port());
                        System.out.printf("failover test: primary killed after %d events, standby promoted%n", before);
                        Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> written.size() > before + 200);
                        stop.set(true);
                        writer.get();

                        var ids = new java.util.HashSet<UUID>();
                        written.forEach(e -> ids.add(e.id()));
                        kafka.awaitIds(ids, Duration.ofSeconds(120));
                        var received = kafka.settle(Duration.ofSeconds(1));
                        System.out.printf("failover test: %d events committed, %d records read, %d duplicates%n", ids.size(),
                                received.size(), received.size() - kafka.receivedIds().size());
                        assertThat(kafka.receivedIds()).containsExactlyInAnyOrderElementsOf(ids);
                        OutboxContract.assertOrderPerAggregate(received);
                        assertThat(router.isStreaming()).as("the same process streams from the new primary").isTrue();
                    } finally {
                        stop.set(true);
                        load.shutdownNow();
                    }
                }
            }
        } finally {
            if (standby != null) {
                standby.close();
            }
        }
    }

    private static boolean syncedCopy(PostgresServer standby, String database, String slot) throws SQLException {
        try (var c = standby.connect(database); var ps = c.prepareStatement(
                "SELECT 1 FROM pg_replication_slots WHERE slot_name = ? AND synced AND NOT temporary")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /**
     * Single-row transactions through the moving address, as an application writes them. A commit whose outcome the
     * failover hid (the connection broke) is looked up on the new primary: an event counts as written only once it is
     * known committed, so that each aggregate's sequence has no gap.
     */
    private static Void write(String url, List<TestEvent> written, AtomicBoolean stop) throws InterruptedException {
        var seq = new HashMap<String, Integer>();
        Connection c = null;
        int n = 0;
        TestEvent pending = null;
        while (!stop.get()) {
            try {
                if (c == null) {
                    c = DriverManager.getConnection(url, PostgresServer.USER, PostgresServer.PASSWORD);
                    c.setAutoCommit(false);
                }
                if (pending != null) {
                    if (exists(c, pending.id())) {
                        written.add(pending);
                        seq.merge(pending.aggregateId(), 1, Integer::sum);
                    }
                    pending = null;
                }
                String aggregate = "acct-" + (n++ % 20);
                var e = TestEvent.of("Account", aggregate, seq.getOrDefault(aggregate, 0) + 1);
                pending = e;
                try (var ps = c.prepareStatement("INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) "
                        + "VALUES (?::uuid, ?, ?, ?, ?::jsonb)")) {
                    ps.setString(1, e.id().toString());
                    ps.setString(2, e.aggregateType());
                    ps.setString(3, e.aggregateId());
                    ps.setString(4, e.type());
                    ps.setString(5, e.payload());
                    ps.executeUpdate();
                }
                c.commit();
                pending = null;
                written.add(e);
                seq.merge(aggregate, 1, Integer::sum);
                Thread.sleep(5);
            } catch (SQLException broken) {
                if (c != null) {
                    try {
                        c.close();
                    } catch (SQLException ignored) {
                        // gone with the server
                    }
                }
                c = null;
                Thread.sleep(200);
            }
        }
        if (pending != null) { // a commit whose outcome is unknown when the writing stops: looked up once more
            try (var last = DriverManager.getConnection(url, PostgresServer.USER, PostgresServer.PASSWORD)) {
                last.setAutoCommit(false);
                if (exists(last, pending.id())) {
                    written.add(pending);
                }
            } catch (SQLException e) {
                throw new IllegalStateException("cannot tell whether the last event was committed", e);
            }
        }
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // done
            }
        }
        return null;
    }

    private static boolean exists(Connection c, UUID id) throws SQLException {
        try (var ps = c.prepareStatement("SELECT 1 FROM public.outbox WHERE id = ?::uuid")) {
            ps.setString(1, id.toString());
            try (var rs = ps.executeQuery()) {
                boolean found = rs.next();
                c.commit();
                return found;
            }
        }
    }
}
