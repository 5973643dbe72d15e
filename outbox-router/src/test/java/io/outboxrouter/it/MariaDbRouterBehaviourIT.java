package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.RouterConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the router checks on a MariaDB server before it starts. */
class MariaDbRouterBehaviourIT {

    private static String yaml(BinlogOutbox db) {
        return "name: " + OutboxContract.unique("checks").replace('_', '-') + "\n" + db.sourceYaml()
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n";
    }

    @Test
    void offsetsSetMovesTheStoredBinlogPositionBackAndTheRouterPublishesAgainFromThere(@TempDir Path dir) throws Exception {
        offsetsSetMovesThePositionBackToAnEventsHeader(BinlogOutbox.mariadb(OutboxContract.unique("replay")), dir);
    }

    /** Also run on MySQL, whose header carries a GTID of its own form (server_uuid:n). */
    static void offsetsSetMovesThePositionBackToAnEventsHeader(BinlogOutbox db, Path dir) throws Exception {
        String topics = OutboxContract.unique("replay");
        String name = OutboxContract.unique("replay-router").replace('_', '-');
        var file = Files.writeString(dir.resolve("router.yml"), "name: " + name + "\n" + db.sourceYaml()
                + "routing: { topic: \"" + topics + ".${aggregatetype}\" }\n"
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n");
        var config = RouterConfigLoader.load(file, Map.of());
        var first = new ArrayList<TestEvent>();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                for (int i = 1; i <= 10; i++) {
                    var e = TestEvent.of("Order", "o-1", i);
                    db.insert(c, e);
                    c.commit();
                    first.add(e);
                }
                kafka.awaitIds(first.stream().map(TestEvent::id).collect(Collectors.toSet()), Duration.ofSeconds(60));
                assertThat(cli("offsets", "reset", "--config", file.toString(), "--yes")).as("refused while it runs").isEqualTo(1);
            }
            String fourth = kafka.all().stream().filter(r -> r.id().equals(first.get(3).id())).findFirst().orElseThrow()
                    .header("source.position");
            assertThat(fourth).as("the header names the transaction's GTID").contains(",gtid:");
            if (fourth.matches(".*,gtid:\\p{XDigit}{8}-.*")) {
                // MySQL: a header whose GTID is not the transaction at its file and position is another server's
                String other = fourth.replaceFirst(",gtid:\\p{XDigit}{8}", ",gtid:00000000");
                assertThat(cli("offsets", "set", "--config", file.toString(), "--position", other)).as("another server's header").isEqualTo(2);
            }

            assertThat(cli("offsets", "set", "--config", file.toString(), "--position", "binlog:nope-bin.000009:4")).isEqualTo(1);
            assertThat(cli("offsets", "set", "--config", file.toString(), "--position", fourth)).isZero();
            assertThat(cli("offsets", "show", "--config", file.toString(), "--json")).isZero();

            var later = TestEvent.of("Order", "o-1", 11);
            db.insert(c, later);
            c.commit();
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                kafka.awaitIds(Set.of(later.id()), Duration.ofSeconds(60));
                kafka.settle(Duration.ofSeconds(1));
            }
            Map<java.util.UUID, Long> deliveries = kafka.all().stream()
                    .collect(Collectors.groupingBy(KafkaEvents.Received::id, Collectors.counting()));
            for (int i = 0; i < 10; i++) {
                assertThat(deliveries.get(first.get(i).id())).as("event %d", i + 1).isEqualTo(i < 3 ? 1L : 2L);
            }
            assertThat(deliveries.get(later.id())).isEqualTo(1L);
        }
    }

    /** Taking over from another relay (docs/migrating-from-debezium.md): a router that never ran starts where it was told. */
    @Test
    void aRouterThatNeverRanStartsFromAPositionSetForIt(@TempDir Path dir) throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("handover"));
        String topics = OutboxContract.unique("handover");
        String name = OutboxContract.unique("handover-router").replace('_', '-');
        var file = Files.writeString(dir.resolve("router.yml"), "name: " + name + "\n" + db.sourceYaml()
                + "routing: { topic: \"" + topics + ".${aggregatetype}\" }\n"
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n");
        String position;
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SHOW MASTER STATUS")) {
            assertThat(rs.next()).isTrue();
            position = "binlog:" + rs.getString(1) + ":" + rs.getLong(2);
        }
        assertThat(cli("offsets", "set", "--config", file.toString(), "--position", position)).as("MariaDB needs the GTID too").isEqualTo(2);
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT @@gtid_binlog_pos")) {
            assertThat(rs.next()).isTrue();
            String[] last = rs.getString(1).split(",")[0].split("-"); // the last transaction's GTID: the next one follows it
            position += ",gtid:" + last[0] + "-" + last[1] + "-" + (Long.parseLong(last[2]) + 1);
        }
        var before = new ArrayList<TestEvent>();
        try (var c = db.connect()) {
            for (int i = 1; i <= 3; i++) {
                var e = TestEvent.of("Order", "o-1", i);
                db.insert(c, e);
                c.commit();
                before.add(e);
            }
        }
        assertThat(cli("offsets", "set", "--config", file.toString(), "--position", position)).isZero();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*");
             var router = Router.start(RouterConfigLoader.load(file, Map.of()))) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            kafka.awaitIds(before.stream().map(TestEvent::id).collect(Collectors.toSet()), Duration.ofSeconds(60));
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id)
                    .containsExactlyElementsOf(before.stream().map(TestEvent::id).toList());
        }
    }

    @Test
    void aFirstStartThatSeesNoOutboxEventStillStoresAPositionSoRowsWrittenWhileStoppedArePublished() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("quiet"));
        String topics = OutboxContract.unique("quiet");
        String name = OutboxContract.unique("quiet-router").replace('_', '-');
        var config = RouterConfigLoader.parse("name: " + name + "\n" + db.sourceYaml() + "routing: { topic: \"" + topics
                + ".${aggregatetype}\" }\nkafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n", Map.of());
        try (var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            Thread.sleep(1000); // streaming, with nothing to publish
        }
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var c = db.connect()) {
            var e = TestEvent.of("Order", "o-1", 1);
            db.insert(c, e); // while no router runs
            c.commit();
            try (var router = Router.start(config)) {
                assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
                kafka.awaitIds(Set.of(e.id()), Duration.ofSeconds(30));
            }
        }
    }

    static int cli(String... args) {
        return new picocli.CommandLine(new io.outboxrouter.cli.Main()).execute(args);
    }

    @Test
    void aNativeUuidColumnIsRefusedWithTheFix() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("uuidcol"));
        db.execute("ALTER TABLE outbox MODIFY id uuid NOT NULL");
        var config = RouterConfigLoader.parse(yaml(db), Map.of());
        assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("column " + db.outboxTable() + ".id has the native UUID type")
                .hasMessageContaining("ALTER TABLE " + db.outboxTable() + " MODIFY id CHAR(36) NOT NULL");
    }

    @Test
    void binlogSettingsAreCheckedAndEveryProblemNamedAtOnce() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("binlogcheck"));
        db.execute("DROP TABLE outbox_binary");
        db.execute("SET GLOBAL binlog_row_image = 'MINIMAL'");
        try {
            var config = RouterConfigLoader.parse(yaml(db), Map.of());
            assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                    .hasMessageContaining("binlog_row_image is MINIMAL, the router needs FULL")
                    .hasMessageContaining("outbox table " + db.binaryTable() + " does not exist");
        } finally {
            db.execute("SET GLOBAL binlog_row_image = 'FULL'");
        }
        assertThat(db.outboxTable()).endsWith(".outbox");
    }
}
