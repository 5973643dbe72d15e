package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
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
