package io.outboxrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class MainTest {
    @TempDir
    Path dir;

    private record Result(int exit, String out, String err) {
    }

    private Result run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            int exit = new CommandLine(new Main()).execute(args);
            return new Result(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    @Test
    void versionNamesTheBuildsVersionAndCommitAndTheJava() {
        var r = run("--version");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).startsWith("outbox-router " + System.getProperty("project.version") + " (commit ")
                .contains("Java " + Runtime.version());
    }

    @Test
    void anInvalidConfigExitsTwoAndListsEveryProblemByKey() throws Exception {
        var file = Files.writeString(dir.resolve("router.yml"), """
                name: orders-router
                source: { url: "jdbc:postgresql://db/app", user: router, password: hunter2, max-batch-size: lots }
                kafka: { bootstrap-servers: "k:9092", give-up-after: forever }
                """);
        for (String command : new String[] {"run", "config"}) {
            var r = run(command, "--config", file.toString());
            assertThat(r.exit()).isEqualTo(2);
            assertThat(r.err()).contains("invalid configuration (2 problems)")
                    .contains("source.max-batch-size: must be a whole number (was \"lots\")")
                    .contains("kafka.give-up-after: must be a duration such as 500ms, 10s, 2m or 1h (was \"forever\")")
                    .doesNotContain("hunter2");
        }
    }

    @Test
    void configPrintsTheEffectiveConfigWithSecretsMasked() throws Exception {
        var file = Files.writeString(dir.resolve("router.yml"), """
                name: orders-router
                source: { url: "jdbc:postgresql://db/app", user: router, password: hunter2 }
                kafka: { bootstrap-servers: "k:9092" }
                """);
        var r = run("config", "--config", file.toString());
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("slot: orders_router").contains("topic: \"outbox.event.${aggregatetype}\"")
                .contains("password: '******'").doesNotContain("hunter2");
    }

    @Test
    void aDebeziumServerConfigurationConvertsToOneTheRouterLoads() throws Exception {
        var r = run("config", "from-debezium", Path.of("..", "docs", "examples", "debezium-server-postgres.properties").toString());
        assertThat(r.exit()).as(r.err()).isZero();
        var config = io.outboxrouter.config.RouterConfigLoader.parse(r.out(), java.util.Map.of("DB_PASSWORD", "pw"));
        assertThat(config.name()).isEqualTo("orders");
        assertThat(config.source().connection().url()).isEqualTo("jdbc:postgresql://db:5432/shop");
        assertThat(config.source().tables()).containsExactly("public.outbox");
        assertThat(config.source().postgres().slot()).isEqualTo("orders_outbox");
        assertThat(config.source().snapshot()).isEqualTo(io.outboxrouter.config.SnapshotMode.NONE);
        assertThat(config.kafka().producer()).containsEntry("compression.type", "lz4");
        var mode = config.routing().eventRouter();
        assertThat(mode.options().given()).containsEntry("route.topic.replacement", "orders.${routedByValue}")
                .containsEntry("table.fields.additional.placement", "type:header:eventType")
                .containsEntry("table.expand.json.payload", "true");
        assertThat(mode.value()).isEqualTo(io.outboxrouter.config.RoutingConfig.Format.SCHEMALESS_JSON);
        assertThat(mode.key()).isEqualTo(io.outboxrouter.config.RoutingConfig.Format.JSON);
        // What it leaves out, it says, with the reason.
        assertThat(r.out()).contains("# left out debezium.source.offset.storage.file.filename: the router keeps its positions")
                .contains("# left out quarkus.log.console.json: a Quarkus setting");
    }

    @Test
    void debeziumsNewerEventRouterOptionsAreCarriedOverAndTheirDisagreementsRefused() throws Exception {
        String example = Files.readString(Path.of("..", "docs", "examples", "debezium-server-postgres.properties"));
        var file = Files.writeString(dir.resolve("application.properties"), example + """

                debezium.transforms.outbox.table.field.additional.missing=ignore
                debezium.transforms.outbox.table.json.payload.empty.array.behavior=optional_string
                """);
        var r = run("config", "from-debezium", file.toString());
        assertThat(r.exit()).as(r.err()).isZero();
        var options = io.outboxrouter.config.RouterConfigLoader.parse(r.out(), java.util.Map.of("DB_PASSWORD", "pw"))
                .routing().eventRouter().options();
        assertThat(options.given()).containsEntry("table.field.additional.missing", "ignore")
                .containsEntry("table.json.payload.empty.array.behavior", "optional_string");
        assertThat(options.optionalColumns()).containsExactly("type"); // the placed column may be missing, as Debezium's ignore says

        var clash = Files.writeString(dir.resolve("clash.properties"), example + """

                debezium.transforms.outbox.table.fields.additional.error.on.missing=true
                debezium.transforms.outbox.table.field.additional.missing=ignore
                """);
        var refused = run("config", "from-debezium", clash.toString());
        assertThat(refused.exit()).isEqualTo(2);
        assertThat(refused.err()).contains("routing.event-router.table.field.additional.missing: says ignore and "
                + "table.fields.additional.error.on.missing says true");
    }

    @Test
    void aDebeziumServerPropertyWithoutAnEquivalentIsRefusedWithTheReason() throws Exception {
        var file = Files.writeString(dir.resolve("application.properties"), """
                debezium.sink.type=pulsar
                debezium.source.connector.class=io.debezium.connector.postgresql.PostgresConnector
                debezium.source.topic.prefix=orders
                debezium.source.table.include.list=public.outbox.*
                debezium.source.snapshot.mode=when_needed
                debezium.transforms=unwrap,outbox
                debezium.transforms.outbox.type=io.debezium.transforms.outbox.EventRouter
                debezium.transforms.outbox.route.topic.replacment=typo
                debezium.format.value=avro
                debezium.source.slot.drop.on.stop=true
                """);
        var r = run("config", "from-debezium", file.toString());
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("debezium.sink.type: the router publishes to Kafka only (was pulsar)")
                .contains("debezium.source.table.include.list: the router names tables, not patterns")
                .contains("debezium.source.snapshot.mode: the router takes initial or none (no_data); \"when_needed\" has no equivalent")
                .contains("debezium.transforms: the router runs the outbox EventRouter alone")
                .contains("debezium.transforms.outbox.route.topic.replacment: not an option of Debezium's outbox EventRouter")
                .contains("debezium.format.value: the router writes json, schemaless json, simplestring or binary; \"avro\" has no equivalent")
                .contains("debezium.source.slot.drop.on.stop: the router keeps its slot");
        // Without slot.name, Debezium's default slot is the one to hand over.
        assertThat(r.out()).contains("slot: \"debezium\"").contains("publication: \"dbz_publication\"");
    }

    @Test
    void aMissingConfigFileIsAClearError() {
        var r = run("config", "--config", dir.resolve("nope.yml").toString());
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("cannot read configuration file").contains("nope.yml");
    }
}
