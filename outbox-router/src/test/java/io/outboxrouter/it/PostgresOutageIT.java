package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Outages and fencing on Postgres: a killed lock session, a database restart, a database that is down at start, and
 * a killed active process with a standby. The router rides them out with nothing lost, and only one process streams.
 * Takeover times are printed (measured, not asserted).
 */
class PostgresOutageIT {
    @TempDir
    Path dir;

    private String yaml(PostgresOutbox db, String name, String topics, int port) {
        return "name: " + name + "\n" + db.sourceYaml() + """
                routing: { topic: "%s.${aggregatetype}" }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: %s, listen: "127.0.0.1:%d" }
                """.formatted(topics, OutboxContract.kafka(), port > 0, Math.max(port, 0));
    }

    private static void publishOne(PostgresOutbox db, KafkaEvents kafka, TestEvent e) throws Exception {
        try (var c = db.connect()) {
            db.insert(c, e);
            c.commit();
        }
        kafka.awaitIds(Set.of(e.id()), Duration.ofSeconds(60));
    }

    /** Terminates the sessions that hold advisory locks in the router's database: its lock session. */
    private static int killLockSessions(PostgresOutbox db) throws Exception {
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT count(pg_terminate_backend(l.pid)) "
                + "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
                + "AND a.datname = current_database()")) {
            rs.next();
            c.commit();
            return rs.getInt(1);
        }
    }

    @Test
    void aKilledLockSessionStopsTheStreamThenTheRouterTakesItsLockAgainAndLosesNothing() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("lockkill"));
        String topics = OutboxContract.unique("lockkill");
        var config = RouterConfigLoader.parse(yaml(db, OutboxContract.unique("lockkill-router").replace('_', '-'), topics, 0), Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var published = java.time.Instant.now();
            publishOne(db, kafka, TestEvent.of("Order", "o-1", 1));
            // Its position is stored once its transaction's end is read (the connector's next heartbeat); a lock lost before
            // that sends it again, which is at least once, but not what this test is about.
            Awaitility.await().atMost(Duration.ofSeconds(10))
                    .until(() -> router.metrics().lastOffsetStored() != null && router.metrics().lastOffsetStored().isAfter(published));
            long killed = System.nanoTime();
            assertThat(killLockSessions(db)).isEqualTo(1);
            Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> !router.isStreaming());
            long stopped = System.nanoTime();
            var during = TestEvent.of("Order", "o-1", 2); // committed while nobody streams
            try (var c = db.connect()) {
                db.insert(c, during);
                c.commit();
            }
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).as("took its lock again").isTrue();
            System.out.printf("lock session killed: stream stopped after %d ms, streaming again after %d ms%n",
                    (stopped - killed) / 1_000_000, (System.nanoTime() - killed) / 1_000_000);
            kafka.awaitIds(Set.of(during.id()), Duration.ofSeconds(60));
            publishOne(db, kafka, TestEvent.of("Order", "o-1", 3));
            assertThat(router.completion()).isNotDone();
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotHaveDuplicates();
        }
    }

    @Test
    void aDatabaseRestartMidStreamIsRiddenOutAndADatabaseDownAtStartIsWaitedFor() throws Exception {
        var server = TestServers.postgres();
        var db = new PostgresOutbox(server, OutboxContract.unique("dbrestart"));
        String topics = OutboxContract.unique("dbrestart");
        var config = RouterConfigLoader.parse(yaml(db, OutboxContract.unique("dbrestart-router").replace('_', '-'), topics, 0), Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                publishOne(db, kafka, TestEvent.of("Order", "o-1", 1));
                long restart = System.nanoTime();
                server.restart();
                var after = TestEvent.of("Order", "o-1", 2);
                try (var c = db.connect()) {
                    db.insert(c, after);
                    c.commit();
                }
                kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(90));
                System.out.printf("database restart: first event after it published %d ms after the restart began%n",
                        (System.nanoTime() - restart) / 1_000_000);
                assertThat(router.completion()).as("rode it out, in-process").isNotDone();
            }

            server.stop();
            try (var router = Router.start(config)) {
                assertThat(router.isActive()).isFalse();
                assertThat(router.waitingFor()).isEqualTo("the database");
                assertThat(router.completion()).isNotDone();
                server.restart();
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).as("streams once the database answers").isTrue();
                publishOne(db, kafka, TestEvent.of("Order", "o-1", 3));
            } finally {
                server.restart(); // in any case, for the tests after this one
            }
        }
    }

    @Test
    void aStandbyTakesOverFromAKilledActiveProcessAndTheNumbersArePrinted() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("takeover"));
        String topics = OutboxContract.unique("takeover");
        int port = OutboxContract.freePort();
        var file = Files.writeString(dir.resolve("router.yml"),
                yaml(db, OutboxContract.unique("takeover-router").replace('_', '-'), topics, port));
        var config = RouterConfigLoader.load(file, Map.of());
        var standbyConfig = RouterConfigLoader.parse(Files.readString(file).replace("enabled: true", "enabled: false"), Map.of());
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var active = RouterProcess.start(file, port, dir.resolve("active.log")).awaitReady(Duration.ofSeconds(90));
             var standby = Router.start(standbyConfig)) {
            assertThat(standby.isActive()).isFalse();
            publishOne(db, kafka, TestEvent.of("Order", "o-1", 1));
            long kill = System.nanoTime();
            active.kill();
            assertThat(standby.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            System.out.printf("SIGKILL of the active process: standby streaming after %d ms%n", (System.nanoTime() - kill) / 1_000_000);
            publishOne(db, kafka, TestEvent.of("Order", "o-1", 2));

            long killed = System.nanoTime();
            assertThat(killLockSessions(db)).isEqualTo(1);
            Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> !standby.isStreaming());
            assertThat(standby.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            System.out.printf("lock session of the new active killed: streaming again after %d ms%n", (System.nanoTime() - killed) / 1_000_000);
            publishOne(db, kafka, TestEvent.of("Order", "o-1", 3));
            assertThat(config.name()).isEqualTo(standbyConfig.name());
        }
    }

    /** Another reader of the router's slot, as a replication connection streaming from it; closing it frees the slot. */
    private static java.sql.Connection holdSlot(io.outboxrouter.config.RouterConfig config) throws Exception {
        var props = new java.util.Properties();
        props.setProperty("user", io.outboxrouter.testing.PostgresServer.USER);
        props.setProperty("password", io.outboxrouter.testing.PostgresServer.PASSWORD);
        props.setProperty("replication", "database");
        props.setProperty("assumeMinServerVersion", "10");
        props.setProperty("preferQueryMode", "simple");
        var holder = java.sql.DriverManager.getConnection(config.source().connection().url(), props);
        holder.unwrap(org.postgresql.PGConnection.class).getReplicationAPI().replicationStream().logical()
                .withSlotName(config.source().postgres().slot()).withSlotOption("proto_version", "1")
                .withSlotOption("publication_names", config.source().postgres().publication()).start();
        return holder; // the stream ends with its connection
    }

    @Test
    void aStopWhileTheEngineWaitsForItsSlotDoesNotWaitOutTheRetriesNorLeaveAReaderBehind() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("stopstart"));
        String topics = OutboxContract.unique("stopstart");
        var config = RouterConfigLoader.parse(yaml(db, OutboxContract.unique("stopstart-router").replace('_', '-'), topics, 0), Map.of());
        String slot = config.source().postgres().slot();
        try (var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
        }
        long stopTook;
        // Another reader holds the slot: the connector's task retries for a minute (slot.max.retries) while starting.
        try (var holder = holdSlot(config)) {
            var router = Router.start(config);
            Thread.sleep(2000);
            assertThat(router.isStreaming()).isFalse();
            long stop = System.nanoTime();
            router.close();
            stopTook = (System.nanoTime() - stop) / 1_000_000;
        }
        System.out.printf("stop while the engine waited for its slot: %d ms%n", stopTook);
        // Nothing of the stopped router keeps retrying: once the other reader is gone, the slot stays free ...
        Thread.sleep(3000);
        try (var c = db.connect(); var ps = c.prepareStatement("SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
            ps.setString(1, slot);
            try (var rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getBoolean(1)).as("slot taken by a reader left behind").isFalse();
            }
        }
        // ... and a router that waits for another reader streams once that reader is gone.
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            Router router;
            try (var holder = holdSlot(config)) {
                router = Router.start(config);
                Thread.sleep(1000);
                assertThat(router.isStreaming()).as("ready only once it reads the slot").isFalse();
            }
            try (router) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                publishOne(db, kafka, TestEvent.of("Order", "o-1", 1));
            }
        }
    }

    /**
     * A transaction open across another's commit, whose next row lands right after that commit in the WAL: a position
     * stored at the other's END (a COMMIT-typed offset) matched that row's LSN on restart, and Debezium 3.5 skipped the
     * open transaction's rows (upstream dbz#76). The router stores the last row of a complete transaction instead.
     */
    @Test
    void aTransactionOpenAcrossAStoredCommitIsPublishedWholeAfterARestart() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("interleave"));
        String topics = OutboxContract.unique("interleave");
        var config = RouterConfigLoader.parse(yaml(db, OutboxContract.unique("interleave-router").replace('_', '-'), topics, 0), Map.of());
        var a1 = TestEvent.of("Order", "a", 1);
        var b1 = TestEvent.of("Order", "b", 1);
        var a2 = TestEvent.of("Order", "a", 2);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            try (var router = Router.start(config); var a = db.connect(); var b = db.connect()) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(a, a1); // A stays open
                db.insert(b, b1);
                b.commit();
                db.insert(a, a2); // the next WAL record after B's commit
                kafka.awaitIds(Set.of(b1.id()), Duration.ofSeconds(60));
                Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> router.metrics().lastOffsetStored() != null);
                router.close();
                a.commit();
            }
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                kafka.awaitIds(Set.of(a1.id(), a2.id()), Duration.ofSeconds(30));
            }
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).containsExactlyInAnyOrder(b1.id(), a1.id(), a2.id());
        }
    }
}
