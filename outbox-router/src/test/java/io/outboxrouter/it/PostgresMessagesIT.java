package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The outbox contract for a tableless outbox: events written as transactional logical decoding messages
 * ({@code outbox_emit}, i.e. {@code pg_logical_emit_message(true, 'outbox', ...)}) on a real Postgres 17, beside an outbox
 * table routed by the same router. Routing, rollbacks, order under eight writers and SIGKILLs under load (single, 50- and
 * 500-message transactions) run here; the other contract tests exercise the router after the connector, which messages
 * share with rows, and are left to the table suites to keep the run short.
 */
class PostgresMessagesIT extends OutboxContract {
    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return new PostgresMessageOutbox(TestServers.postgres(), name);
    }

    /**
     * Rolled-back messages publish nothing; a message written outside a transaction, and one that is not the defined
     * shape, go to the dead-letter topic with the reason, and the stream goes on.
     */
    @Override
    @Test
    void rollbacksUpdatesAndDeletesPublishNothingButInsertThenDeletePublishes() throws Exception {
        var db = newDatabase(unique("msgtxn"));
        String topics = unique("msgtxn");
        String yaml = configYaml(db, unique("msgtxn-router").replace('_', '-'), topics, 0)
                .replace("routing:\n", "routing:\n  dead-letters: { topic: " + topics + "-dl.dead-letters }\n");
        try (var router = startRouter(RouterConfigLoader.parse(yaml, Map.of()));
             var kafka = new KafkaEvents(kafka(), topics + "\\..*");
             var deadLetters = new KafkaEvents(kafka(), topics + "-dl\\..*");
             var c = db.connect()) {
            db.insertMultiRow(c, List.of(TestEvent.of("Order", "o-1", 1), TestEvent.of("Order", "o-1", 2)));
            c.rollback();

            var kept = TestEvent.of("Order", "o-2", 1);
            db.insert(c, kept);
            c.commit();
            try (var st = c.createStatement()) {
                st.execute("SELECT pg_logical_emit_message(false, 'outbox', '{\"id\": \"" + java.util.UUID.randomUUID()
                        + "\", \"aggregateid\": \"o-5\", \"payload\": {}}')");
                st.execute("SELECT pg_logical_emit_message(true, 'outbox', 'not json')");
                st.execute("SELECT pg_logical_emit_message(true, 'someone-else', 'not ours')");
            }
            c.commit();
            var sentinel = TestEvent.of("Order", "o-4", 1);
            db.insert(c, sentinel);
            c.commit();

            kafka.awaitIds(Set.of(kept.id(), sentinel.id()), Duration.ofSeconds(60));
            var received = kafka.settle(Duration.ofMillis(1500));
            assertThat(received).extracting(KafkaEvents.Received::id).containsExactlyInAnyOrder(kept.id(), sentinel.id());
            var kept1 = received.stream().filter(r -> r.id().equals(kept.id())).findFirst().orElseThrow();
            assertThat(kept1.valueText()).isEqualTo(kept.payload());
            assertThat(kept1.header("source.table")).isEqualTo("message:outbox");

            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> {
                deadLetters.poll();
                return deadLetters.all().size() >= 2;
            });
            var dead = deadLetters.settle(Duration.ofMillis(1000));
            assertThat(dead).extracting(r -> r.header("dead-letter.reason")).satisfiesExactlyInAnyOrder(
                    reason -> assertThat(reason).contains("outside a transaction", "not atomic"),
                    reason -> assertThat(reason).contains("not valid JSON"));
            assertThat(dead).extracting(KafkaEvents.Received::valueText).contains("not json");
        }
    }

    /**
     * No outbox table at all: the publication is created empty, the connector captures no table (and loads none), and
     * messages are routed; {@code check} passes and {@code replay} refuses, saying why.
     */
    @Test
    void aRouterWithMessagesOnlyNeedsNoTable() throws Exception {
        var db = newDatabase(unique("msgonly"));
        String topics = unique("msgonly");
        String name = unique("msgonly-router").replace('_', '-');
        String yaml = configYaml(db, name, topics, 0).replace("  tables: [public.outbox_binary]\n", "");
        var file = java.nio.file.Files.writeString(dir.resolve("messages-only.yml"), yaml);
        var main = new picocli.CommandLine(new io.outboxrouter.cli.Main());
        assertThat(main.execute("check", "--config", file.toString())).as("check exit code").isZero();
        try (var router = startRouter(RouterConfigLoader.parse(yaml, Map.of()));
             var kafka = new KafkaEvents(kafka(), topics + "\\..*");
             var c = db.connect()) {
            var events = List.of(TestEvent.of("Order", "o-1", 1), TestEvent.of("Order", "o-1", 2), TestEvent.of("Invoice", "i-1", 1));
            db.insertMultiRow(c, events);
            c.commit();
            kafka.awaitIds(Set.of(events.get(0).id(), events.get(1).id(), events.get(2).id()), Duration.ofSeconds(60));
            assertThat(kafka.settle(Duration.ofMillis(500))).extracting(KafkaEvents.Received::topic)
                    .containsExactlyInAnyOrder(topics + ".Order", topics + ".Order", topics + ".Invoice"); // two topics: no order between them
        }
        try (var c = db.connect(); var st = c.createStatement();
             var rs = st.executeQuery("SELECT count(*) FROM pg_publication_tables WHERE pubname = '" + name.replace('-', '_') + "'")) {
            rs.next();
            assertThat(rs.getInt(1)).as("tables in the router's publication").isZero();
        }
        assertThat(new picocli.CommandLine(new io.outboxrouter.cli.Main()).execute("replay", "--config", file.toString(), "--dry-run"))
                .as("replay exit code").isEqualTo(2);
    }

    /** Two SIGKILLs, not four: the table suites run four; this one is about messages resuming at transaction ends. */
    @Override
    @Test
    void sigkillUnderLoadLosesNothingAndKeepsOrderPerAggregate() throws Exception {
        sigkillUnderLoad("msgcrash", "", 2);
    }
}
