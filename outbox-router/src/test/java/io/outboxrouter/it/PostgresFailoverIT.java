package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TcpProxy;
import java.sql.SQLException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
                    var writer = load.submit(() -> new FailoverWriter(url, PostgresServer.USER, PostgresServer.PASSWORD,
                            "INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?::uuid, ?, ?, ?, ?::jsonb)",
                            "SELECT 1 FROM public.outbox WHERE id = ?::uuid").write(written, stop));
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

    /**
     * The same failover to a standby that keeps no copy of the slot (as before Postgres 17), with both servers named in the
     * source URL instead of an address that moves: the router refuses to start
     * from a new slot on its own and names {@code offsets recover}, which publishes the outbox rows committed since its
     * last published transaction and creates the slot where they end. Then every committed event has reached Kafka, in
     * order per aggregate.
     */
    @Test
    void withoutACopyOfTheSlotOffsetsRecoverPublishesWhatWasCommittedSince(@TempDir Path dir) throws Exception {
        PostgresServer standby = null;
        try (var primary = PostgresServer.start()) {
            var db = new PostgresOutbox(primary, OutboxContract.unique("recover"));
            int standbyPort = PostgresServer.freePort();
            {
                // Both servers in the URL: the router and the writer connect to whichever is the primary.
                String url = "jdbc:postgresql://127.0.0.1:" + primary.port() + ",127.0.0.1:" + standbyPort + "/" + db.database();
                String writerUrl = url + "?targetServerType=primary";
                String topics = OutboxContract.unique("recover");
                String name = OutboxContract.unique("recover-router").replace('_', '-');
                String yaml = "name: " + name + "\n" + db.sourceYaml().replace(primary.jdbcUrl(db.database()), url)
                        + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\nkafka:\n  bootstrap-servers: " + OutboxContract.kafka()
                        + "\nhttp:\n  enabled: false\n";
                var file = Files.writeString(dir.resolve("router.yml"), yaml);
                var config = RouterConfigLoader.load(file, Map.of());
                var written = Collections.synchronizedList(new ArrayList<TestEvent>());
                var lost = Collections.synchronizedList(new ArrayList<TestEvent>());
                try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
                    try (var router = Router.start(config)) {
                        assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                        standby = primary.startStandby(false, standbyPort);
                        var copy = standby;
                        var stop = new AtomicBoolean();
                        var load = Executors.newSingleThreadExecutor();
                        var writer = load.submit(() -> new FailoverWriter(writerUrl, PostgresServer.USER, PostgresServer.PASSWORD,
                                "INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?::uuid, ?, ?, ?, ?::jsonb)",
                                "SELECT 1 FROM public.outbox WHERE id = ?::uuid").write(written, lost, stop));
                        try {
                            Thread.sleep(3_000);
                            primary.kill();
                            int before = written.size();
                            copy.promote();
                            Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> written.size() > before + 200);
                            stop.set(true);
                            writer.get();
                        } finally {
                            stop.set(true);
                            load.shutdownNow();
                        }
                        String refused;
                        try {
                            router.completion().get(120, java.util.concurrent.TimeUnit.SECONDS);
                            refused = "(ended without an error)";
                        } catch (java.util.concurrent.ExecutionException e) {
                            refused = String.valueOf(e.getCause().getMessage());
                        }
                        assertThat(refused).contains("replication slot " + config.source().postgres().slot() + " does not exist")
                                .contains("offsets recover");
                    }
                    String dryRun = RouterStops.cli("offsets", "recover", "--config", file.toString(), "--dry-run");
                    assertThat(dryRun).contains("would be published again").contains("Nothing was changed (--dry-run)");
                    String recovered = RouterStops.cli("offsets", "recover", "--config", file.toString());
                    System.out.printf("recover test: %s%n", recovered.replace('\n', ' '));
                    assertThat(recovered).contains("event(s) published again").contains("Created slot");

                    try (var router = Router.start(config)) {
                        assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                        var after = TestEvent.of("Account", "acct-after", 1);
                        try (var c = java.sql.DriverManager.getConnection(writerUrl, PostgresServer.USER, PostgresServer.PASSWORD)) {
                            db.insert(c, after);
                        }
                        written.add(after);
                        var ids = new java.util.HashSet<UUID>();
                        written.forEach(e -> ids.add(e.id()));
                        kafka.awaitIds(ids, Duration.ofSeconds(120));
                        var received = kafka.settle(Duration.ofSeconds(1));
                        System.out.printf("recover test: %d events committed, %d records read, %d duplicates%n", ids.size(),
                                received.size(), received.size() - kafka.receivedIds().size());
                        assertThat(kafka.receivedIds()).containsAll(ids);
                        // Without synchronized_standby_slots (as before Postgres 17) the slot may hand out a commit before the
                        // standby has it: an event whose commit the failover hid from its writer may have reached Kafka.
                        var extra = new java.util.HashSet<>(kafka.receivedIds());
                        extra.removeAll(ids);
                        assertThat(extra).isSubsetOf(lost.stream().map(TestEvent::id).toList());
                        // Such an event took a place in its aggregate's sequence that the writer, seeing it lost, gave again.
                        OutboxContract.assertOrderPerAggregate(received.stream().filter(r -> !extra.contains(r.id())).toList());
                    }
                }
            }
        } finally {
            if (standby != null) {
                standby.close();
            }
        }
    }

    /**
     * A standby promoted before it received the router's last transactions, under exactly-once delivery (the positions
     * live in the offsets topic, so the standby's copy of the offsets table does not hold them back). The new primary
     * writes on past the stored position: resuming there would skip what it wrote since its promotion. The router
     * refuses to start and names the branch point; with --accept-gap it goes on from the slot, and the new primary's
     * events are published.
     */
    @Test
    void aStandbyPromotedBeforeItHadTheRoutersLastTransactionsIsRefused() throws Exception {
        PostgresServer standby = null;
        try (var primary = PostgresServer.start()) {
            var db = new PostgresOutbox(primary, OutboxContract.unique("fork"));
            try (var address = TcpProxy.to(primary.port())) {
                String url = "jdbc:postgresql://127.0.0.1:" + address.port() + "/" + db.database();
                String topics = OutboxContract.unique("fork");
                String name = OutboxContract.unique("fork-router").replace('_', '-');
                var config = RouterConfigLoader.parse("name: " + name + "\n" + db.sourceYaml().replace(primary.jdbcUrl(db.database()), url)
                        + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\nkafka:\n  bootstrap-servers: " + OutboxContract.kafka()
                        + "\ndelivery: exactly-once\nhttp:\n  enabled: false\n", Map.of());
                String slot = config.source().postgres().slot();
                var published = new java.util.HashSet<UUID>();
                String formerEnd;
                try (var kafka = KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*")) {
                    try (var router = Router.start(config)) {
                        assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                        standby = primary.startStandby();
                        var copy = standby;
                        Awaitility.await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> {
                            try (var c = primary.connect("postgres"); var st = c.createStatement()) {
                                st.execute("SELECT pg_log_standby_snapshot()");
                            }
                            return syncedCopy(copy, db.database(), slot);
                        });
                        // Replication becomes asynchronous and then stops: what the router reads from now on, the standby never gets.
                        try (var c = primary.connect("postgres"); var st = c.createStatement()) {
                            st.execute("ALTER SYSTEM RESET synchronized_standby_slots");
                            st.execute("ALTER SYSTEM RESET synchronous_standby_names");
                            st.execute("SELECT pg_reload_conf()");
                        }
                        try (var c = copy.connect("postgres"); var st = c.createStatement()) {
                            st.execute("ALTER SYSTEM SET primary_conninfo = ''");
                            st.execute("SELECT pg_reload_conf()");
                        }
                        try (var c = db.connect()) {
                            for (int i = 0; i < 30; i++) {
                                var e = TestEvent.of("Order", "order-" + (i % 3), i / 3 + 1);
                                db.insert(c, e);
                                c.commit();
                                published.add(e.id());
                            }
                        }
                        kafka.awaitIds(published, Duration.ofSeconds(60));
                    }
                    try (var c = primary.connect("postgres"); var st = c.createStatement(); var rs = st.executeQuery(
                            "SELECT pg_current_wal_lsn()::text")) {
                        rs.next();
                        formerEnd = rs.getString(1);
                    }
                    primary.kill();
                    standby.promote();
                    address.switchTo(standby.port());
                    // The new primary's own events, at LSNs the former primary had used for the router's last transactions.
                    var onTheNewPrimary = new java.util.HashSet<UUID>();
                    try (var c = java.sql.DriverManager.getConnection(standby.jdbcUrl(db.database()), PostgresServer.USER,
                            PostgresServer.PASSWORD)) {
                        for (int i = 0; i < 5; i++) {
                            var e = TestEvent.of("Invoice", "invoice-" + i, 1);
                            db.insert(c, e);
                            onTheNewPrimary.add(e.id());
                        }
                        try (var st = c.createStatement()) {
                            st.execute("SELECT pg_switch_wal()");
                            st.execute("CREATE TABLE past_the_switch (x int)"); // some WAL in the next segment
                        }
                        try (var ps = c.prepareStatement("SELECT pg_current_wal_lsn() > ?::pg_lsn")) {
                            ps.setString(1, formerEnd);
                            try (var rs = ps.executeQuery()) {
                                rs.next();
                                assertThat(rs.getBoolean(1)).as("the new primary's WAL passed the former primary's end").isTrue();
                            }
                        }
                    }
                    org.assertj.core.api.Assertions.assertThatThrownBy(() -> Router.start(config).close())
                            .isInstanceOf(io.outboxrouter.cdc.SourceSetupException.class)
                            .hasMessageContaining("is not in this server's history")
                            .hasMessageContaining("which this server left at")
                            .hasMessageContaining("--accept-gap");
                    try (var router = Router.start(config, true)) {
                        assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                        kafka.awaitIds(onTheNewPrimary, Duration.ofSeconds(60));
                    }
                    System.out.printf("fork test: %d events published from the former primary (to %s), %d from the new one%n",
                            published.size(), formerEnd, onTheNewPrimary.size());
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
}
