package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.PostgresServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The source database (Postgres, in both delivery modes, and MariaDB) stopped under load and started again, as an
 * operator's maintenance would, with a fast shutdown on Postgres: the router's probes
 * follow the stream (unready while it is down, ready again once it streams), the database's shutdown is not held up
 * by the router, and publishing goes on within seconds of the database's return, with nothing lost. The times are
 * printed; the bounds asserted are loose.
 */
class OutageReturnIT {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();

    /** A source database the test stops and starts: its outbox, its writer's statements, and how it is stopped. */
    private record Source(String kind, OutboxDatabase db, String writerUrl, String user, String password, String insert, String check,
                          java.util.function.Supplier<Duration> shutDown, Runnable startAgain) {
    }

    @ParameterizedTest
    @ValueSource(strings = {"at-least-once", "exactly-once", "at-least-once, 2 shards"})
    void aPostgresStoppedAndStartedAgainIsFollowedWithinSeconds(String mode) throws Exception {
        try (var server = PostgresServer.start()) {
            var db = new PostgresOutbox(server, OutboxContract.unique("outage"));
            outage(mode, new Source("postgres", db, server.jdbcUrl(db.database()), PostgresServer.USER, PostgresServer.PASSWORD,
                    "INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?::uuid, ?, ?, ?, ?::jsonb)",
                    "SELECT 1 FROM public.outbox WHERE id = ?::uuid", () -> server.shutDownFast(Duration.ofSeconds(90)), server::restart));
        }
    }

    @org.junit.jupiter.api.Test
    void aMariaDbStoppedAndStartedAgainIsFollowedWithinSeconds() throws Exception {
        try (var server = io.outboxrouter.testing.MariaDbServer.start()) {
            String database = OutboxContract.unique("outage");
            var db = new BinlogOutbox(new BinlogOutbox.Server("mariadb", server.jdbcUrl(""), server.user(), server.password()), database);
            outage("at-least-once", new Source("mariadb", db, server.jdbcUrl(database), server.user(), server.password(),
                    "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?, ?, ?, ?, ?)",
                    "SELECT 1 FROM outbox WHERE id = ?", () -> {
                        long started = System.nanoTime();
                        server.stop();
                        return Duration.ofNanos(System.nanoTime() - started);
                    }, server::restart));
        }
    }

    /** {@code mode}: the delivery, and {@code ", N shards"} to split the Postgres outbox over N slots. */
    private void outage(String mode, Source source) throws Exception {
        String label = source.kind() + ", " + mode;
        String delivery = mode.split(",")[0];
        var db = source.db();
        String sourceYaml = mode.endsWith(" shards")
                ? db.sourceYaml() + "  postgres: { shards: " + mode.replaceAll(".*, (\\d+) shards", "$1") + " }\n" : db.sourceYaml();
        {
            String topics = OutboxContract.unique("outage");
            int port = OutboxContract.freePort();
            var config = RouterConfigLoader.parse("name: " + OutboxContract.unique("outage-router").replace('_', '-') + "\n"
                    + sourceYaml + """
                    delivery: %s
                    routing: { topic: "%s.${aggregatetype}" }
                    kafka: { bootstrap-servers: "%s" }
                    http: { listen: "127.0.0.1:%d" }
                    """.formatted(delivery, topics, OutboxContract.kafka(), port), Map.of());
            var written = Collections.synchronizedList(new ArrayList<TestEvent>());
            var stop = new AtomicBoolean();
            var load = Executors.newSingleThreadExecutor();
            try (var kafka = delivery.equals("exactly-once") ? KafkaEvents.readCommitted(OutboxContract.kafka(), topics + "\\..*")
                    : new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
                 var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> status(port, "/health/ready") == 200);
                var writer = load.submit(() -> new FailoverWriter(source.writerUrl(), source.user(), source.password(), source.insert(),
                        source.check()).write(written, stop));
                Thread.sleep(2_000);

                long stopping = System.nanoTime();
                var shutdown = source.shutDown().get();
                System.out.printf("outage (%s): the database's shutdown took %s%n", label,
                        shutdown == null ? "over 90 s" : shutdown.toMillis() + " ms");
                Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
                        .until(() -> status(port, "/health/ready") != 200);
                long unready = System.nanoTime();
                System.out.printf("outage (%s): unready %d ms after the shutdown began%n", label, ms(unready - stopping));
                long slowestStatus = 0;
                for (int i = 0; i < 10; i++) {
                    long asked = System.nanoTime();
                    assertThat(status(port, "/status")).isEqualTo(200);
                    slowestStatus = Math.max(slowestStatus, System.nanoTime() - asked);
                    Thread.sleep(500);
                }
                int before = written.size();
                long restarting = System.nanoTime();
                source.startAgain().run();
                long back = System.nanoTime();
                System.out.printf("outage (%s): /status answered within %d ms during the outage; the database restarted in %d ms%n",
                        label, ms(slowestStatus), ms(back - restarting));
                Awaitility.await().atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofMillis(50))
                        .until(() -> status(port, "/health/ready") == 200);
                long ready = System.nanoTime();
                System.out.printf("outage (%s): ready %d ms after the database was back%n", label, ms(ready - back));
                Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> written.size() > before + 20);
                var sinceBack = new HashSet<UUID>();
                synchronized (written) { // the writer goes on appending: a view taken outside the lock is stale at once
                    written.subList(before, written.size()).forEach(e -> sinceBack.add(e.id()));
                }
                kafka.awaitIds(sinceBack, Duration.ofSeconds(180));
                long publishing = System.nanoTime();
                stop.set(true);
                writer.get();
                var ids = new HashSet<UUID>();
                written.forEach(e -> ids.add(e.id()));
                kafka.awaitIds(ids, Duration.ofSeconds(60));
                System.out.printf("outage (%s): events written since the database's return published %d ms after it was back%n",
                        label, ms(publishing - back));
                assertThat(kafka.receivedIds()).containsAll(ids);
                assertThat(router.completion()).as("rode it out, in-process").isNotDone();
                // Loose bounds, far above what the router takes and far below what it took when a stopped engine held on.
                assertThat(shutdown).as("the database's shutdown, with the router attached").isNotNull()
                        .isLessThan(Duration.ofSeconds(20));
                assertThat(Duration.ofNanos(slowestStatus)).as("/status during the outage").isLessThan(Duration.ofSeconds(3));
                assertThat(Duration.ofNanos(ready - back)).as("ready again after the database's return").isLessThan(Duration.ofSeconds(30));
                assertThat(Duration.ofNanos(publishing - back)).as("publishing after the database's return").isLessThan(Duration.ofSeconds(30));
            } finally {
                stop.set(true);
                load.shutdownNow();
            }
        }
    }

    /**
     * A SIGTERM to the router while its database is down (a node drained during database maintenance): the process
     * exits within a Kubernetes grace period, storing nothing it has not published, and the next process publishes
     * everything committed.
     */
    @org.junit.jupiter.api.Test
    void aSigtermWhileTheDatabaseIsDownExitsWithinAGracePeriod(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        try (var server = PostgresServer.start()) {
            var db = new PostgresOutbox(server, OutboxContract.unique("sigterm"));
            String topics = OutboxContract.unique("sigterm");
            int port = OutboxContract.freePort();
            var file = java.nio.file.Files.writeString(dir.resolve("router.yml"), OutboxContract.configYaml(db,
                    OutboxContract.unique("sigterm-router").replace('_', '-'), topics, port));
            var written = new HashSet<UUID>();
            try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
                try (var router = RouterProcess.start(file, port, dir.resolve("first.log")).awaitReady(Duration.ofSeconds(90));
                     var c = db.connect()) {
                    for (int i = 0; i < 20; i++) {
                        var e = TestEvent.of("Order", "o-" + (i % 4), i / 4 + 1);
                        db.insert(c, e);
                        c.commit();
                        written.add(e.id());
                    }
                    kafka.awaitIds(written, Duration.ofSeconds(60));
                    var late = TestEvent.of("Order", "o-late", 1);
                    db.insert(c, late);
                    c.commit();
                    written.add(late.id());
                    server.shutDownFast(Duration.ofSeconds(90));
                    Thread.sleep(1_000);
                    long signalled = System.nanoTime();
                    int exit = router.stop(Duration.ofSeconds(60));
                    long exited = System.nanoTime();
                    System.out.printf("sigterm: the router exited %d ms after SIGTERM, with its database down (exit %d)%n",
                            ms(exited - signalled), exit);
                    assertThat(Duration.ofNanos(exited - signalled)).as("exit after SIGTERM").isLessThan(Duration.ofSeconds(25));
                    assertThat(exit).as("exit code after SIGTERM").isZero();
                }
                server.restart();
                try (var router = RouterProcess.start(file, port, dir.resolve("second.log")).awaitReady(Duration.ofSeconds(90))) {
                    kafka.awaitIds(written, Duration.ofSeconds(60));
                }
            }
        }
    }

    /**
     * A SIGTERM while Kafka is down and a batch is being retried: the process exits within a Kubernetes grace period,
     * storing no position past what Kafka acknowledged, and the next process publishes everything committed.
     */
    @org.junit.jupiter.api.Test
    void aSigtermWhileKafkaIsDownExitsWithinAGracePeriod(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        try (var broker = io.outboxrouter.testing.KafkaProcess.start(dir.resolve("kafka"))) {
            var db = new PostgresOutbox(io.outboxrouter.testing.TestServers.postgres(), OutboxContract.unique("sigtermk"));
            String topics = OutboxContract.unique("sigtermk");
            int port = OutboxContract.freePort();
            var file = java.nio.file.Files.writeString(dir.resolve("router.yml"), OutboxContract.configYaml(db,
                    OutboxContract.unique("sigtermk-router").replace('_', '-'), topics, port).replace(OutboxContract.kafka(),
                    broker.bootstrapServers()));
            var written = new HashSet<UUID>();
            try (var kafka = new KafkaEvents(broker.bootstrapServers(), topics + "\\..*")) {
                try (var router = RouterProcess.start(file, port, dir.resolve("first.log")).awaitReady(Duration.ofSeconds(90));
                     var c = db.connect()) {
                    for (int i = 0; i < 20; i++) {
                        var e = TestEvent.of("Order", "o-" + (i % 4), i / 4 + 1);
                        db.insert(c, e);
                        c.commit();
                        written.add(e.id());
                    }
                    kafka.awaitIds(written, Duration.ofSeconds(60));
                    broker.kill();
                    for (int i = 0; i < 5; i++) {
                        var e = TestEvent.of("Order", "o-late", i + 1);
                        db.insert(c, e);
                        c.commit();
                        written.add(e.id());
                    }
                    Thread.sleep(2_000); // the router is retrying them
                    long signalled = System.nanoTime();
                    int exit = router.stop(Duration.ofSeconds(90));
                    long exited = System.nanoTime();
                    System.out.printf("sigterm: the router exited %d ms after SIGTERM, with Kafka down (exit %d)%n",
                            ms(exited - signalled), exit);
                    assertThat(Duration.ofNanos(exited - signalled)).as("exit after SIGTERM").isLessThan(Duration.ofSeconds(25));
                    assertThat(exit).as("exit code after SIGTERM").isZero();
                }
                broker.restart();
                try (var router = RouterProcess.start(file, port, dir.resolve("second.log")).awaitReady(Duration.ofSeconds(90))) {
                    kafka.awaitIds(written, Duration.ofSeconds(60));
                }
            }
        }
    }

    /**
     * A SIGTERM while one large transaction is being published (a deploy during a bulk import): the process exits
     * within a Kubernetes grace period without storing a position inside the transaction, and the next process
     * publishes all of it again.
     */
    @org.junit.jupiter.api.Test
    void aSigtermMidTransactionExitsWithinAGracePeriodAndTheNextRunPublishesItWhole(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        var db = new PostgresOutbox(io.outboxrouter.testing.TestServers.postgres(), OutboxContract.unique("sigtermtx"));
        String topics = OutboxContract.unique("sigtermtx");
        int port = OutboxContract.freePort();
        var file = java.nio.file.Files.writeString(dir.resolve("router.yml"), OutboxContract.configYaml(db,
                OutboxContract.unique("sigtermtx-router").replace('_', '-'), topics, port));
        int rows = 200_000;
        var ids = new HashSet<UUID>();
        long[] publishedBefore = new long[1];
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var admin = org.apache.kafka.clients.admin.Admin.create(Map.<String, Object>of("bootstrap.servers", OutboxContract.kafka()))) {
            try (var router = RouterProcess.start(file, port, dir.resolve("first.log")).awaitReady(Duration.ofSeconds(90));
                 var c = db.connect(); var st = c.createStatement()) {
                st.execute("INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) SELECT gen_random_uuid(), 'Order', "
                        + "'o-' || (g % 100), 'OrderPlaced', jsonb_build_object('n', g) FROM generate_series(1, " + rows + ") g");
                try (var r = st.executeQuery("SELECT id FROM public.outbox")) {
                    while (r.next()) {
                        ids.add(r.getObject(1, UUID.class));
                    }
                }
                c.commit();
                Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20))
                        .until(() -> KafkaEvents.records(admin, topics + ".Order") > 0);
                long signalled = System.nanoTime();
                int exit = router.stop(Duration.ofSeconds(60));
                long exited = System.nanoTime();
                long published = KafkaEvents.records(admin, topics + ".Order");
                publishedBefore[0] = published;
                System.out.printf("sigterm: the router exited %d ms after SIGTERM, mid-transaction with %d of %d rows in Kafka (exit %d)%n",
                        ms(exited - signalled), published, rows, exit);
                assertThat(published).as("the SIGTERM came while the transaction was being published").isLessThan(rows);
                assertThat(Duration.ofNanos(exited - signalled)).as("exit after SIGTERM").isLessThan(Duration.ofSeconds(25));
                assertThat(exit).as("exit code after SIGTERM").isZero();
            }
            try (var router = RouterProcess.start(file, port, dir.resolve("second.log")).awaitReady(Duration.ofSeconds(90))) {
                kafka.awaitIds(ids, Duration.ofSeconds(180));
                // Read again whole, from the transaction's start: no position inside it was stored.
                Awaitility.await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(KafkaEvents.records(admin, topics + ".Order"))
                        .as("records after the second run").isGreaterThanOrEqualTo(publishedBefore[0] + rows));
            }
        }
    }

    private static long ms(long nanos) {
        return nanos / 1_000_000;
    }

    private static int status(int port, String path) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (java.io.IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }
}
