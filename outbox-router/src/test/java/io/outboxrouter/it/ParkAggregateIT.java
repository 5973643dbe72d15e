package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.outboxrouter.app.Router;
import io.outboxrouter.cli.Main;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * routing.dead-letters.policy: park-aggregate on a real Postgres and a real broker: a row that cannot be routed stops
 * only its own aggregate; its later events are held through a restart; a release publishes the fixed row and then
 * the held events, in order, and the aggregate flows again. Read back as a consumer reads the topics.
 */
class ParkAggregateIT {

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"at-least-once", "exactly-once"})
    void aBadRowParksOnlyItsAggregateUntilReleasedInOrder(String delivery) throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("park"));
        String topics = OutboxContract.unique("park");
        String yaml = "name: " + OutboxContract.unique("park-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "delivery: " + delivery + "\n"
                + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\n"
                + "  dead-letters:\n    policy: park-aggregate\n    topic: " + topics + "-dead\n    parking-topic: " + topics + "-parked\n"
                + "kafka:\n  bootstrap-servers: \"" + OutboxContract.kafka() + "\"\nhttp:\n  enabled: false\n";
        var file = dir.resolve("router.yaml");
        Files.writeString(file, yaml);
        RouterConfig config = RouterConfigLoader.parse(yaml, Map.of());

        var a1 = TestEvent.of("Order", "a", 1);
        var b1 = TestEvent.of("Order", "b", 1);
        // A topic name cannot hold a space: this row cannot be routed.
        var a2 = new TestEvent(UUID.randomUUID(), "Bad Order", "a", "OrderChanged", 2, TestEvent.of("Order", "a", 2).payload());
        var b2 = TestEvent.of("Order", "b", 2);
        var a3 = TestEvent.of("Order", "a", 3);
        var a4 = TestEvent.of("Order", "a", 4);
        var b3 = TestEvent.of("Order", "b", 3);
        var a5 = TestEvent.of("Order", "a", 5);
        var a6 = TestEvent.of("Order", "a", 6);
        try (var kafka = delivery.equals("exactly-once") ? KafkaEvents.readCommitted(OutboxContract.kafka(), java.util.regex.Pattern.quote(topics) + "\\..*")
                : new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(topics) + "\\..*");
             var dead = new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(topics + "-dead"));
             var c = db.connect()) {
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                for (var e : List.of(a1, b1, a2, b2, a3, a4)) {
                    db.insert(c, e); // each its own transaction
                    c.commit();
                }
                kafka.awaitIds(Set.of(a1.id(), b1.id(), b2.id()), Duration.ofSeconds(60));
                dead.awaitIds(Set.of(a2.id()), Duration.ofSeconds(60));
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("a  parked")
                        .contains("2 event(s) held"));
                var audit = run(file, "audit", "--until", "2100-01-01T00:00:00Z");
                assertThat(audit.code()).as(audit.out()).isZero();
                assertThat(audit.out()).contains("3 published, 1 dead-lettered").contains("2 held").contains("0 missing");
                assertThat(router.metrics().scrape()).containsPattern("outbox_router_parked_aggregates\\{[^}]*\\} 1.0")
                        .containsPattern("outbox_router_held_events_total\\{[^}]*\\} 2.0");
            }
            assertThat(kafka.settle(Duration.ofSeconds(1)).stream().map(KafkaEvents.Received::id))
                    .as("the parked aggregate's later events are held").doesNotContain(a3.id(), a4.id());

            // A restart while parked: the park is read back, and a's new event is held while b's flows.
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, a5);
                c.commit();
                db.insert(c, b3);
                c.commit();
                kafka.awaitIds(Set.of(b3.id()), Duration.ofSeconds(60));
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("3 event(s) held"));
                assertThat(kafka.settle(Duration.ofSeconds(1)).stream().map(KafkaEvents.Received::id)).doesNotContain(a5.id());

                // The fix: the bad row replaced by a good one with its event id; then the release.
                try (var st = c.prepareStatement("DELETE FROM public.outbox WHERE id = ?")) {
                    st.setObject(1, a2.id());
                    st.executeUpdate();
                }
                var fixed = new TestEvent(a2.id(), "Order", "a", "OrderChanged", 2, a2.payload());
                db.insert(c, fixed);
                c.commit();
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("4 event(s) held"));
                var released = run(file, "parked", "release", "a");
                assertThat(released.code()).as(released.out()).isZero();
                assertThat(released.out()).contains("released");

                kafka.awaitIds(Set.of(a2.id(), a3.id(), a4.id(), a5.id()), Duration.ofSeconds(60));
                db.insert(c, a6); // flows again
                c.commit();
                kafka.awaitIds(Set.of(a6.id()), Duration.ofSeconds(60));
                assertThat(list(file)).contains("No aggregate is parked");
            }
            var ofA = new ArrayList<UUID>();
            kafka.settle(Duration.ofSeconds(1)).stream().filter(r -> "a".equals(r.key())).forEach(r -> {
                if (!ofA.contains(r.id())) {
                    ofA.add(r.id());
                }
            });
            assertThat(ofA).as("aggregate a in order, the fixed row in the bad one's place")
                    .containsExactly(a1.id(), a2.id(), a3.id(), a4.id(), a5.id(), a6.id());
            var ofB = kafka.all().stream().filter(r -> "b".equals(r.key())).map(KafkaEvents.Received::id).distinct().toList();
            assertThat(ofB).containsExactly(b1.id(), b2.id(), b3.id());
        }
    }

    /**
     * The parking topic deleted under a running router while an aggregate is parked, or its records deleted (as
     * retention would): its held events are gone, so the router stops within seconds, naming the aggregate and the
     * replay that publishes it again, and its next start refuses until the loss is accepted; accepted, the aggregate
     * flows.
     */
    @ParameterizedTest
    @ValueSource(strings = {"topic", "records"})
    void heldEventsDeletedWhileParkedStopTheRouterWithTheAggregatesToPublishAgain(String deleted) throws Exception {
        var setup = parked("parklost");
        var db = setup.db();
        String topics = setup.topics();
        String parkingTopic = setup.parkingTopic();
        var file = setup.file();
        RouterConfig config = setup.config();
        var a1 = TestEvent.of("Order", "a", 1);
        var a2 = bad(TestEvent.of("Order", "a", 2));
        var a3 = TestEvent.of("Order", "a", 3);
        var a4 = TestEvent.of("Order", "a", 4);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(topics) + "\\..*"); var c = db.connect();
             var admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", OutboxContract.kafka()))) {
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                for (var e : List.of(a1, a2, a3)) {
                    db.insert(c, e);
                    c.commit();
                }
                kafka.awaitIds(Set.of(a1.id()), Duration.ofSeconds(60));
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("a  parked")
                        .contains("1 event(s) held"));
                if (deleted.equals("topic")) {
                    admin.deleteTopics(List.of(parkingTopic)).all().get();
                } else {
                    var partition = new org.apache.kafka.common.TopicPartition(parkingTopic, 0);
                    long end = admin.listOffsets(Map.of(partition, org.apache.kafka.clients.admin.OffsetSpec.latest())).all().get()
                            .get(partition).offset();
                    admin.deleteRecords(Map.of(partition, org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(end))).all().get();
                }
                assertThatThrownBy(() -> router.completion().get(60, java.util.concurrent.TimeUnit.SECONDS))
                        .hasMessageContaining(deleted.equals("topic") ? "the parking topic " + parkingTopic + " was deleted"
                                : "the parking topic " + parkingTopic + " no longer holds partition 0 from offset 0")
                        .hasMessageContaining("outbox-router replay --aggregate-id a").hasMessageContaining("--accept-gap");
            }
            assertThatThrownBy(() -> Router.start(config)).as("the loss is kept for the next start")
                    .hasMessageContaining("the parking topic " + parkingTopic).hasMessageContaining("--accept-gap");
            // The operator publishes a again (here: the row fixed, then the replay) and accepts the loss.
            try (var st = c.prepareStatement("UPDATE public.outbox SET aggregatetype = 'Order' WHERE id = ?")) {
                st.setObject(1, a2.id());
                st.executeUpdate();
            }
            c.commit();
            var replay = run(file, "replay", "--aggregate-id", "a");
            assertThat(replay.code()).as(replay.out()).isZero();
            kafka.awaitIds(Set.of(a2.id(), a3.id()), Duration.ofSeconds(60));
            try (var router = Router.start(config, true)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, a4);
                c.commit();
                kafka.awaitIds(Set.of(a4.id()), Duration.ofSeconds(60));
                assertThat(list(file)).contains("No aggregate is parked");
            }
        }
    }

    /**
     * What the router cannot see in the parking topic, the offsets table keeps: a start under another dead-letter
     * policy while an aggregate is parked is refused (its later events would flow past its held ones), and so is a start
     * after the parking topic was deleted while the router was stopped, naming the aggregate and the replay. Accepted
     * once its events are published again, the aggregate flows.
     */
    @org.junit.jupiter.api.Test
    void parksLostWithTheTopicOrLeftUnderAnotherPolicyWhileStoppedAreRefusedAtStart() throws Exception {
        var setup = parked("parkgone");
        var db = setup.db();
        String parkingTopic = setup.parkingTopic();
        var file = setup.file();
        var a1 = TestEvent.of("Order", "a", 1);
        var a2 = bad(TestEvent.of("Order", "a", 2));
        var a3 = TestEvent.of("Order", "a", 3);
        var a4 = TestEvent.of("Order", "a", 4);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(setup.topics()) + "\\..*");
             var c = db.connect(); var admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", OutboxContract.kafka()))) {
            try (var router = Router.start(setup.config())) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                for (var e : List.of(a1, a2, a3)) {
                    db.insert(c, e);
                    c.commit();
                }
                kafka.awaitIds(Set.of(a1.id()), Duration.ofSeconds(60));
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("a  parked")
                        .contains("1 event(s) held"));
            }
            var deadLetterPolicy = RouterConfigLoader.parse(Files.readString(file).replace("policy: park-aggregate", "policy: dead-letter"),
                    Map.of());
            assertThatThrownBy(() -> Router.start(deadLetterPolicy).close()).hasMessageContaining("aggregate(s) of router")
                    .hasMessageContaining("[a]").hasMessageContaining("routing.dead-letters.policy is now dead-letter")
                    .hasMessageContaining("parked release");

            admin.deleteTopics(List.of(parkingTopic)).all().get();
            assertThatThrownBy(() -> Router.start(setup.config()).close()).hasMessageContaining("knows nothing of: [a (since")
                    .hasMessageContaining("outbox-router replay --aggregate-id a").hasMessageContaining("--accept-gap");
            // The operator fixes the row, publishes the aggregate again and accepts the loss.
            try (var st = c.prepareStatement("UPDATE public.outbox SET aggregatetype = 'Order' WHERE id = ?")) {
                st.setObject(1, a2.id());
                st.executeUpdate();
            }
            c.commit();
            var replay = run(file, "replay", "--aggregate-id", "a");
            assertThat(replay.code()).as(replay.out()).isZero();
            kafka.awaitIds(Set.of(a2.id(), a3.id()), Duration.ofSeconds(60));
            try (var router = Router.start(setup.config(), true)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                db.insert(c, a4);
                c.commit();
                kafka.awaitIds(Set.of(a4.id()), Duration.ofSeconds(60));
                assertThat(list(file)).contains("No aggregate is parked");
            }
            // Accepted once: the next start under either policy goes on.
            Router.start(deadLetterPolicy).close();
        }
    }

    /**
     * A release of 100,000 held events, by the router run as the README says (its heap of 128 MiB): the held events are
     * read again and published a chunk at a time. A SIGTERM in the middle of it (a deploy) exits within a Kubernetes
     * grace period; the next process carries the release out from its start, and the aggregate flows.
     */
    @org.junit.jupiter.api.Test
    void aReleaseOfAHundredThousandHeldEventsRunsInTheReadmesHeapAndSurvivesASigterm() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("parkbig"));
        String topics = OutboxContract.unique("parkbig");
        int port = OutboxContract.freePort();
        String yaml = "name: " + OutboxContract.unique("parkbig-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\n"
                + "  dead-letters:\n    policy: park-aggregate\n    topic: " + topics + "-dead\n    parking-topic: " + topics + "-parked\n"
                + "kafka:\n  bootstrap-servers: \"" + OutboxContract.kafka() + "\"\nhttp:\n  listen: 127.0.0.1:" + port + "\n";
        var file = Files.writeString(dir.resolve("router.yaml"), yaml);
        int held = 100_000;
        var last = TestEvent.of("Order", "big", held + 2);
        String orders = topics + ".Order";
        var heldIds = new java.util.HashSet<UUID>();
        try (var c = db.connect();
             var admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", OutboxContract.kafka()))) {
            try (var router = RouterProcess.start(file, port, dir.resolve("router.log")).awaitReady(Duration.ofSeconds(90))) {
                var first = bad(TestEvent.of("Order", "big", 1));
                db.insert(c, first);
                c.commit();
                try (var st = c.createStatement()) {
                    st.execute("INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) SELECT gen_random_uuid(), 'Order', "
                            + "'big', 'OrderChanged', jsonb_build_object('n', g, 'note', repeat('x', 200)) FROM generate_series(1, " + held + ") g");
                }
                c.commit();
                try (var st = c.createStatement();
                     var r = st.executeQuery("SELECT id FROM public.outbox WHERE aggregateid = 'big' AND type = 'OrderChanged'")) {
                    while (r.next()) {
                        heldIds.add(r.getObject(1, UUID.class));
                    }
                }
                c.commit();
                heldIds.remove(first.id()); // the bad row goes to the dead letters, not to the topic
                assertThat(heldIds).hasSize(held);
                await().atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofSeconds(2)).untilAsserted(() ->
                        assertThat(list(file)).contains(held + " event(s) held"));
                var requested = run(file, "parked", "release", "big", "--wait", "0");
                assertThat(requested.code()).as(requested.out()).isZero();
                await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(20))
                        .until(() -> KafkaEvents.records(admin, orders) > 0);
                long signalled = System.nanoTime();
                int exit = router.stop(Duration.ofSeconds(60));
                long exited = System.nanoTime();
                long published = KafkaEvents.records(admin, orders);
                System.out.printf("parkbig: the router exited %d ms after SIGTERM, mid-release with %d of %d held events in Kafka (exit %d)%n",
                        (exited - signalled) / 1_000_000, published, held, exit);
                assertThat(published).as("the SIGTERM came while the release was being published").isLessThan(held);
                assertThat(Duration.ofNanos(exited - signalled)).as("exit after SIGTERM").isLessThan(Duration.ofSeconds(25));
                assertThat(exit).as("exit code after SIGTERM").isZero();
            }
            try (var router = RouterProcess.start(file, port, dir.resolve("router2.log")).awaitReady(Duration.ofSeconds(90))) {
                db.insert(c, last);
                c.commit();
                // Every held event, and the one after them, is in Kafka: what the stopped release had not published is not lost.
                heldIds.add(last.id());
                try (var kafka = new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(orders))) {
                    kafka.awaitIds(heldIds, Duration.ofSeconds(180));
                }
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofSeconds(1)).untilAsserted(() ->
                        assertThat(list(file)).contains("No aggregate is parked"));
                assertThat(router.isAlive()).isTrue();
            }
        }
    }

    /**
     * {@code keep-ended-parks}: the records of an ended park are deleted from the parking topic once older than it, and
     * an active park keeps its own: it is still parked, and its release publishes its held event.
     */
    @org.junit.jupiter.api.Test
    void theRecordsOfEndedParksAreDeletedAndAnActiveParkKeepsItsOwn() throws Exception {
        var setup = parked("parktrim");
        var db = setup.db();
        var file = Files.writeString(setup.file(), Files.readString(setup.file()).replace("    parking-topic:",
                "    keep-ended-parks: 2s\n    parking-topic:"));
        RouterConfig config = RouterConfigLoader.load(file, Map.of());
        var partition = new org.apache.kafka.common.TopicPartition(setup.parkingTopic(), 0);
        var b2 = TestEvent.of("Order", "b", 2);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(setup.topics()) + "\\..*");
             var c = db.connect(); var admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", OutboxContract.kafka()));
             var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            for (var e : List.of(bad(TestEvent.of("Order", "a", 1)), TestEvent.of("Order", "a", 2))) {
                db.insert(c, e);
                c.commit();
            }
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("a  parked").contains("1 event(s) held"));
            var dropped = run(file, "parked", "drop", "a");
            assertThat(dropped.code()).as(dropped.out()).isZero();
            for (var e : List.of(bad(TestEvent.of("Order", "b", 1)), b2)) {
                db.insert(c, e);
                c.commit();
            }
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("b  parked").contains("1 event(s) held"));
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> assertThat(admin.listOffsets(
                    Map.of(partition, org.apache.kafka.clients.admin.OffsetSpec.earliest())).all().get().get(partition).offset())
                    .as("the first offset kept").isPositive());
            Thread.sleep(3_000); // more trims, and a look of the watch
            assertThat(router.completion()).as("only an ended park's records were deleted").isNotDone();
            assertThat(list(file)).contains("b  parked").contains("1 event(s) held").doesNotContain("a  parked");
            var released = run(file, "parked", "release", "b");
            assertThat(released.code()).as(released.out()).isZero();
            kafka.awaitIds(Set.of(b2.id()), Duration.ofSeconds(30));
        }
    }

    /**
     * Records deleted from before every park's marker (a finished park's, as retention or an operator would) lose
     * nothing: the router goes on, and the park made after them stays.
     */
    @org.junit.jupiter.api.Test
    void recordsDeletedBeforeTheParksAreNoLoss() throws Exception {
        var setup = parked("parkold");
        var db = setup.db();
        String parkingTopic = setup.parkingTopic();
        var file = setup.file();
        RouterConfig config = setup.config();
        var partition = new org.apache.kafka.common.TopicPartition(parkingTopic, 0);
        try (var c = db.connect(); var admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", OutboxContract.kafka()));
             var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            for (var e : List.of(bad(TestEvent.of("Order", "a", 1)), TestEvent.of("Order", "a", 2))) {
                db.insert(c, e);
                c.commit();
            }
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("a  parked").contains("1 event(s) held"));
            var dropped = run(file, "parked", "drop", "a");
            assertThat(dropped.code()).as(dropped.out()).isZero();
            // The dropped park's held event is neither published nor held any more: the audit says so.
            var audit = run(file, "audit", "--until", "2100-01-01T00:00:00Z");
            assertThat(audit.out()).contains("1 dead-lettered").contains("1 dropped").doesNotContain("held (their aggregates");
            for (var e : List.of(bad(TestEvent.of("Order", "b", 1)), TestEvent.of("Order", "b", 2))) {
                db.insert(c, e);
                c.commit();
            }
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("b  parked").contains("1 event(s) held"));
            long bMarker = -1;
            try (var consumer = new org.apache.kafka.clients.consumer.KafkaConsumer<byte[], byte[]>(Map.of("bootstrap.servers",
                    OutboxContract.kafka(), "key.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class.getName(),
                    "value.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class.getName()))) {
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (bMarker < 0 && System.nanoTime() < deadline) {
                    for (var r : consumer.poll(Duration.ofMillis(500))) {
                        var action = r.headers().lastHeader("outbox-router.parking.action");
                        if (bMarker < 0 && r.key() != null && new String(r.key(), StandardCharsets.UTF_8).equals("b") && action != null
                                && new String(action.value(), StandardCharsets.UTF_8).equals("park")) {
                            bMarker = r.offset();
                        }
                    }
                }
            }
            assertThat(bMarker).as("b's park marker").isPositive();
            admin.deleteRecords(Map.of(partition, org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(bMarker))).all().get();
            Thread.sleep(25_000); // two looks at the topic
            assertThat(router.completion()).as("only a finished park's records were deleted").isNotDone();
            assertThat(list(file)).contains("b  parked").contains("1 event(s) held");
        }
    }

    /**
     * The parking topic deleted while nothing is parked loses nothing: the router goes on, creates it again before its
     * next batch, and parks into it.
     */
    @org.junit.jupiter.api.Test
    void aParkingTopicDeletedWhileNothingIsParkedIsCreatedAgain() throws Exception {
        var setup = parked("parkgone");
        var db = setup.db();
        String topics = setup.topics();
        String parkingTopic = setup.parkingTopic();
        var file = setup.file();
        RouterConfig config = setup.config();
        var a1 = bad(TestEvent.of("Order", "a", 1));
        var a2 = TestEvent.of("Order", "a", 2);
        var b1 = TestEvent.of("Order", "b", 1);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(topics) + "\\..*"); var c = db.connect();
             var admin = org.apache.kafka.clients.admin.Admin.create(Map.of("bootstrap.servers", OutboxContract.kafka()));
             var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            admin.deleteTopics(List.of(parkingTopic)).all().get();
            Thread.sleep(12_000); // past one look at the topic
            assertThat(router.completion()).as("nothing was parked: nothing is lost").isNotDone();
            for (var e : List.of(a1, a2, b1)) {
                db.insert(c, e);
                c.commit();
            }
            kafka.awaitIds(Set.of(b1.id()), Duration.ofSeconds(60));
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("a  parked")
                    .contains("1 event(s) held"));
            assertThat(admin.describeConfigs(List.of(new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.TOPIC, parkingTopic))).all().get().values().iterator().next()
                    .get("retention.ms").value()).as("created again to keep held events").isEqualTo("-1");
            assertThat(router.completion()).isNotDone();
        }
    }

    /**
     * MariaDB's binlog: two bad rows of one aggregate in one multi-row INSERT (one row event) are the park and a slot;
     * fixed copies of both take their places on release.
     */
    @org.junit.jupiter.api.Test
    void onMariaDbTwoBadRowsOfOneInsertAreReleasedInTheirPlacesOnceFixed() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("parkmaria"));
        String topics = OutboxContract.unique("parkmaria");
        String yaml = "name: " + OutboxContract.unique("parkmaria-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\n"
                + "  dead-letters:\n    policy: park-aggregate\n    topic: " + topics + "-dead\n    parking-topic: " + topics + "-parked\n"
                + "kafka:\n  bootstrap-servers: \"" + OutboxContract.kafka() + "\"\nhttp:\n  enabled: false\n";
        var file = Files.writeString(dir.resolve("router.yaml"), yaml);
        RouterConfig config = RouterConfigLoader.parse(yaml, Map.of());
        var events = new ArrayList<TestEvent>();
        for (int seq = 1; seq <= 5; seq++) {
            events.add(TestEvent.of("Order", "a", seq));
        }
        var b1 = TestEvent.of("Order", "b", 1);
        var bad2 = bad(events.get(1));
        var bad4 = bad(events.get(3));
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(topics) + "\\..*");
             var c = db.connect();
             var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insertMultiRow(c, List.of(events.get(0), bad2, events.get(2), bad4, events.get(4), b1));
            c.commit();
            kafka.awaitIds(Set.of(events.get(0).id(), b1.id()), Duration.ofSeconds(60));
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("a  parked")
                    .contains("2 event(s) held"));
            for (var fixed : List.of(events.get(1), events.get(3))) {
                try (var st = c.prepareStatement("DELETE FROM outbox WHERE id = ?")) {
                    st.setString(1, fixed.id().toString());
                    st.executeUpdate();
                }
                db.insert(c, fixed);
                c.commit();
            }
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("4 event(s) held"));
            var released = run(file, "parked", "release", "a");
            assertThat(released.code()).as(released.out()).isZero();
            kafka.awaitIds(events.stream().map(TestEvent::id).collect(java.util.stream.Collectors.toSet()), Duration.ofSeconds(60));
            var ofA = kafka.settle(Duration.ofSeconds(1)).stream().filter(r -> "a".equals(r.key())).map(KafkaEvents.Received::id)
                    .distinct().toList();
            assertThat(ofA).containsExactlyElementsOf(events.stream().map(TestEvent::id).toList());
        }
    }

    /** The same event with an aggregate type that cannot be a topic name. */
    private static TestEvent bad(TestEvent good) {
        return new TestEvent(good.id(), "Bad Order", good.aggregateId(), good.type(), good.seq(), good.payload());
    }

    /**
     * SIGKILLs of a router process while aggregates park and their events are held: after the fixes and the releases,
     * every event arrived, and each aggregate's first deliveries are in order, the fixed rows in the bad rows' places.
     */
    @org.junit.jupiter.api.Test
    void crashesWhileParkedLoseNothingAndKeepOrder() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("parkcrash"));
        String topics = OutboxContract.unique("parkcrash");
        int port = OutboxContract.freePort();
        String yaml = "name: " + OutboxContract.unique("parkcrash-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\n"
                + "  dead-letters:\n    policy: park-aggregate\n    topic: " + topics + "-dead\n    parking-topic: " + topics + "-parked\n"
                + "kafka:\n  bootstrap-servers: \"" + OutboxContract.kafka() + "\"\n"
                + "http:\n  enabled: true\n  listen: 127.0.0.1:" + port + "\n";
        var file = Files.writeString(dir.resolve("router.yaml"), yaml);
        var log = dir.resolve("router.log");
        long seed = Long.getLong("outbox.it.crash-seed", System.nanoTime());
        System.out.printf("park crash test: seed %d (repeat with -Doutbox.it.crash-seed=%d)%n", seed, seed);
        var random = new java.util.Random(seed);
        int aggregates = 12;
        var seqs = new int[aggregates];
        var written = java.util.Collections.synchronizedSet(new java.util.HashSet<UUID>());
        // Aggregates 0 and 1 get a bad row as their 5th event; aggregate 2 as its 5th and 9th.
        var bad = new java.util.concurrent.ConcurrentHashMap<UUID, TestEvent>();
        var flowing = java.util.concurrent.ConcurrentHashMap.<UUID>newKeySet();
        var stop = new java.util.concurrent.atomic.AtomicBoolean();
        var load = java.util.concurrent.Executors.newSingleThreadExecutor();
        RouterProcess router = null;
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), java.util.regex.Pattern.quote(topics) + "\\..*");
             var c = db.connect()) {
            router = RouterProcess.start(file, port, log).awaitReady(Duration.ofSeconds(90));
            var writer = load.submit(() -> {
                var loadRandom = new java.util.Random(seed);
                try (var w = db.connect()) {
                    while (!stop.get()) {
                        int a = loadRandom.nextInt(aggregates);
                        int seq = ++seqs[a];
                        var good = TestEvent.of("Order", "agg-" + a, seq);
                        boolean poison = (a <= 2 && seq == 5) || (a == 2 && seq == 9);
                        var e = poison ? new TestEvent(good.id(), "Bad Order", good.aggregateId(), good.type(), seq, good.payload()) : good;
                        db.insert(w, e);
                        w.commit();
                        written.add(e.id());
                        if (a > 2) {
                            flowing.add(e.id());
                        }
                        if (poison) {
                            bad.put(e.id(), good);
                        }
                        Thread.sleep(2);
                    }
                }
                return null;
            });
            for (int kill = 1; kill <= 3; kill++) {
                Thread.sleep(1_500 + random.nextInt(2_500));
                router.kill();
                System.out.printf("park crash test: SIGKILL %d of 3 with %d events written%n", kill, written.size());
                Thread.sleep(random.nextInt(1_000));
                router = RouterProcess.start(file, port, log).awaitReady(Duration.ofSeconds(90));
            }
            Thread.sleep(1_000);
            stop.set(true);
            writer.get();
            assertThat(bad).as("bad rows written").hasSize(4);

            // Every event of the aggregates that never parked arrives while the others are held.
            kafka.awaitIds(flowing, Duration.ofSeconds(120));
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(list(file)).contains("3 parked aggregate(s)"));
            // Fix each bad row (same id) and release its aggregate.
            for (var fixed : bad.values()) {
                try (var st = c.prepareStatement("DELETE FROM public.outbox WHERE id = ?")) {
                    st.setObject(1, fixed.id());
                    st.executeUpdate();
                }
                db.insert(c, fixed);
                c.commit();
            }
            for (String aggregate : List.of("agg-0", "agg-1", "agg-2")) {
                var released = run(file, "parked", "release", aggregate);
                assertThat(released.code()).as(released.out()).isZero();
            }
            kafka.awaitIds(Set.copyOf(written), Duration.ofSeconds(120));
            var received = kafka.settle(Duration.ofSeconds(2));
            assertThat(router.stop(Duration.ofSeconds(60))).isZero();
            System.out.printf("park crash test: %d events written, %d records read, %d distinct%n", written.size(), received.size(),
                    kafka.receivedIds().size());
            assertThat(kafka.receivedIds()).containsExactlyInAnyOrderElementsOf(written);
            OutboxContract.assertOrderPerAggregate(received);
        } finally {
            stop.set(true);
            load.shutdownNow();
            if (router != null) {
                router.close();
            }
        }
    }

    /** A Postgres outbox and a router config with park-aggregate, its own topics and parking topic. */
    private record Parked(PostgresOutbox db, String topics, String parkingTopic, Path file, RouterConfig config) {
    }

    private Parked parked(String prefix) throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique(prefix));
        String topics = OutboxContract.unique(prefix);
        String parkingTopic = topics + "-parked";
        String yaml = "name: " + OutboxContract.unique(prefix + "-router").replace('_', '-') + "\n" + db.sourceYaml()
                + "routing:\n  topic: \"" + topics + ".${aggregatetype}\"\n"
                + "  dead-letters:\n    policy: park-aggregate\n    topic: " + topics + "-dead\n    parking-topic: " + parkingTopic + "\n"
                + "kafka:\n  bootstrap-servers: \"" + OutboxContract.kafka() + "\"\nhttp:\n  enabled: false\n";
        var file = dir.resolve("router.yaml");
        Files.writeString(file, yaml);
        return new Parked(db, topics, parkingTopic, file, RouterConfigLoader.parse(yaml, Map.of()));
    }

    private record Result(int code, String out) {
    }

    private static String list(Path file) {
        var r = run(file, "parked", "list");
        assertThat(r.code()).as(r.out()).isZero();
        return r.out();
    }

    private static Result run(Path file, String... command) {
        var out = new ByteArrayOutputStream();
        var old = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        int code;
        try {
            var args = new ArrayList<>(List.of(command));
            args.add("--config");
            args.add(file.toString());
            code = new CommandLine(new Main()).execute(args.toArray(String[]::new));
        } finally {
            System.setOut(old);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        System.out.println(text);
        return new Result(code, text);
    }
}
