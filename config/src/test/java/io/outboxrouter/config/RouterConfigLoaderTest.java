package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RouterConfigLoaderTest {
    private static final String MINIMAL = """
            name: orders-router
            source:
              url: jdbc:postgresql://db:5433/app
              user: router
              password: s3cret-pw
            kafka:
              bootstrap-servers: kafka:9092
            """;

    private static List<String> problems(String yaml) {
        return problems(yaml, Map.of());
    }

    private static List<String> problems(String yaml, Map<String, String> env) {
        try {
            RouterConfigLoader.parse(yaml, env);
        } catch (ConfigException e) {
            return e.problems();
        }
        throw new AssertionError("expected a ConfigException");
    }

    @Test
    void minimalConfigGetsEventRouterDefaults() {
        var c = RouterConfigLoader.parse(MINIMAL, Map.of());
        assertThat(c.name()).isEqualTo("orders-router");
        assertThat(c.source().address().host()).isEqualTo("db");
        assertThat(c.source().address().port()).isEqualTo(5433);
        assertThat(c.source().address().database()).isEqualTo("app");
        assertThat(c.source().tables()).containsExactly("public.outbox");
        assertThat(c.source().postgres().slot()).isEqualTo("orders_router");
        assertThat(c.source().postgres().publication()).isEqualTo("orders_router");
        assertThat(c.source().snapshot()).isEqualTo(SnapshotMode.NONE);
        assertThat(c.source().pollInterval()).isEqualTo(Duration.ofMillis(5));
        assertThat(c.outbox().columns()).isEqualTo(OutboxConfig.Columns.DEFAULTS);
        assertThat(c.routing().topic().source()).isEqualTo("outbox.event.${aggregatetype}");
        assertThat(c.routing().deadLetters().policy()).isEqualTo(RoutingConfig.DeadLetterPolicy.DEAD_LETTER);
        assertThat(c.offsets().table()).isEqualTo("outbox_router_offsets");
        assertThat(c.offsetsConnection()).isEqualTo(c.source().connection());
        assertThat(c.http().host()).isEqualTo("127.0.0.1");
        assertThat(c.http().port()).isEqualTo(8080);
    }

    @Test
    void aPostgresUrlMayNameSeveralHostsAndReachesThePrimaryAmongThem() {
        var c = RouterConfigLoader.parse(MINIMAL.replace("jdbc:postgresql://db:5433/app", "jdbc:postgresql://db-a,db-b:5434/app?ssl=false"), Map.of());
        assertThat(c.source().address().hosts()).containsExactly(new JdbcUrl.Host("db-a", 5432), new JdbcUrl.Host("db-b", 5434));
        assertThat(c.source().connection().url()).isEqualTo("jdbc:postgresql://db-a,db-b:5434/app?ssl=false&targetServerType=primary");
        var given = RouterConfigLoader.parse(MINIMAL.replace("jdbc:postgresql://db:5433/app",
                "jdbc:postgresql://db-a:5433,db-b:5433/app?targetServerType=primary"), Map.of());
        assertThat(given.source().connection().url()).isEqualTo("jdbc:postgresql://db-a:5433,db-b:5433/app?targetServerType=primary");
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of()).source().connection().url()).isEqualTo("jdbc:postgresql://db:5433/app");
        var two = JdbcUrl.parse("jdbc:postgresql://a:5433,b/app?ssl=false&targetServerType=primary&connectTimeout=5").orElseThrow();
        assertThat(two.withOnly(two.hosts().get(1))).isEqualTo("jdbc:postgresql://b:5432/app?ssl=false&connectTimeout=5");
        assertThat(JdbcUrl.parse("jdbc:postgresql://a,b/app?targetServerType=primary").orElseThrow().withOnly(new JdbcUrl.Host("a", 5432)))
                .isEqualTo("jdbc:postgresql://a:5432/app");
        assertThat(JdbcUrl.parse("jdbc:postgresql://[::1]:5433,db/app").orElseThrow().hosts())
                .containsExactly(new JdbcUrl.Host("[::1]", 5433), new JdbcUrl.Host("db", 5432));

        assertThat(problems(MINIMAL.replace("jdbc:postgresql://db:5433/app", "jdbc:postgresql://a,b/app?targetServerType=preferSecondary")))
                .singleElement().asString().startsWith("source.url: names several hosts with targetServerType=preferSecondary; the "
                        + "router reads its slot and writes its offsets on the primary");
        assertThat(problems(MINIMAL.replace("jdbc:postgresql://db:5433/app", "jdbc:mariadb://a,b:3306/app")
                .replace("  password: s3cret-pw\n", "  password: s3cret-pw\n  kind: mariadb\n")))
                .singleElement().asString().startsWith("source.url: names 2 hosts; a mariadb source takes one");
    }

    @Test
    void thePollIntervalIsShorterOnlyWhereABatchStoresNothingOfItsOwn() {
        String mariadb = MINIMAL.replace("jdbc:postgresql://db:5433/app", "jdbc:mariadb://db:3306/app")
                .replace("  password: s3cret-pw\n", "  password: s3cret-pw\n  kind: mariadb\n");
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of()).source().pollInterval()).isEqualTo(Duration.ofMillis(5));
        assertThat(RouterConfigLoader.parse(MINIMAL + "delivery: exactly-once\n", Map.of()).source().pollInterval())
                .isEqualTo(Duration.ofMillis(10));
        assertThat(RouterConfigLoader.parse(mariadb, Map.of()).source().pollInterval()).isEqualTo(Duration.ofMillis(10));
        assertThat(RouterConfigLoader.parse(MINIMAL + "delivery: exactly-once\n", Map.of("OUTBOX_ROUTER_SOURCE_POLL_INTERVAL", "3ms"))
                .source().pollInterval()).isEqualTo(Duration.ofMillis(3));
    }

    @Test
    void onMariaDbTheKeysThatWouldLetTheConnectorRestartPastThePositionCheckAreRefused() {
        String mariadb = MINIMAL.replace("jdbc:postgresql://db:5433/app", "jdbc:mariadb://db:3306/app")
                .replace("  password: s3cret-pw\n", "  password: s3cret-pw\n  kind: mariadb\n");
        assertThat(problems(mariadb + "debezium:\n  errors.max.retries: \"5\"\n  custom.retriable.exception: \".*\"\n"))
                .anySatisfy(p -> assertThat(p).startsWith("debezium.errors.max.retries: is set by the router on MariaDB"))
                .anySatisfy(p -> assertThat(p).startsWith("debezium.custom.retriable.exception: would restart the connector"));
        assertThat(RouterConfigLoader.parse(MINIMAL + "debezium:\n  errors.max.retries: \"5\"\n", Map.of()).debezium())
                .containsEntry("errors.max.retries", "5");
    }

    @Test
    void cloudEventsAreOptInWithABinaryDefaultAndASourceTemplate() {
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of()).routing().cloudEvents()).isNull();
        var c = RouterConfigLoader.parse(MINIMAL + "routing:\n  envelope: cloudevents\n", Map.of()).routing().cloudEvents();
        assertThat(c.mode()).isEqualTo(RoutingConfig.CloudEvents.Mode.BINARY);
        assertThat(c.source().toString()).isEqualTo("/outbox/${aggregatetype}");
        var structured = RouterConfigLoader.parse(MINIMAL + "routing:\n  envelope: cloudevents\n  cloudevents:\n    mode: structured\n"
                + "    source: \"https://shop.example/${aggregatetype}\"\n", Map.of()).routing().cloudEvents();
        assertThat(structured.mode()).isEqualTo(RoutingConfig.CloudEvents.Mode.STRUCTURED);
        assertThat(structured.source().render(p -> "Order")).contains("https://shop.example/Order");

        assertThat(problems(MINIMAL + "routing:\n  cloudevents:\n    mode: structured\n"))
                .containsExactly("routing.cloudevents.mode: is read only with routing.envelope: cloudevents (set it, or remove this)");
        assertThat(problems(MINIMAL + "routing:\n  envelope: cloudevents\n  cloudevents:\n    source: \"/x/${nope}\"\n"))
                .singleElement().asString().startsWith("routing.cloudevents.source: unknown placeholder ${nope}");
        assertThat(problems(MINIMAL + "routing:\n  envelope: cloud\n")).singleElement().asString().startsWith("routing.envelope:");
    }

    @Test
    void shardsGiveEachShardItsOwnNameSlotAndPublication() {
        var c = RouterConfigLoader.parse(MINIMAL.replace("  password: s3cret-pw\n", "  password: s3cret-pw\n  postgres:\n    shards: 3\n"), Map.of());
        assertThat(c.source().postgres().shards()).isEqualTo(3);
        var shards = c.shardConfigs();
        assertThat(shards).extracting(RouterConfig::name)
                .containsExactly("orders-router-shard-0-of-3", "orders-router-shard-1-of-3", "orders-router-shard-2-of-3");
        assertThat(shards.get(2).source().postgres().slot()).isEqualTo("orders_router_shard_2_of_3");
        assertThat(shards.get(2).source().postgres().publication()).isEqualTo("orders_router_shard_2_of_3");
        assertThat(shards.get(2).shard()).contains(new Shard(2, 3));
        assertThat(shards.get(2).shardConfigs()).containsExactly(shards.get(2));
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of()).shardConfigs()).hasSize(1).allMatch(s -> s.shard().isEmpty());

        var one = RouterConfigLoader.parse(MINIMAL.replace("  password: s3cret-pw\n", "  password: s3cret-pw\n  postgres:\n    shard: 1/4\n"), Map.of());
        assertThat(one.shardConfigs()).extracting(RouterConfig::name).containsExactly("orders-router-shard-1-of-4");
        String printed = EffectiveConfig.toYaml(one);
        assertThat(printed).contains("shards: 4");
        assertThat(RouterConfigLoader.parse(printed.replace("'******'", "x"), Map.of()).source().postgres().runs()).containsExactly(1);
    }

    @Test
    void aTablelessOutboxNeedsNoTableAndReadsBackTheSame() {
        String messages = "  password: s3cret-pw\n  postgres:\n    messages: { prefix: outbox }\n";
        var c = RouterConfigLoader.parse(MINIMAL.replace("  password: s3cret-pw\n", messages), Map.of());
        assertThat(c.source().tables()).isEmpty();
        assertThat(c.source().postgres().messagePrefix()).isEqualTo("outbox");
        assertThat(RouterConfigLoader.parse(EffectiveConfig.toYaml(c).replace(Secret.MASK, "s3cret-pw"), Map.of())).isEqualTo(c);
        var both = RouterConfigLoader.parse(MINIMAL.replace("  password: s3cret-pw\n", messages + "  tables: [public.outbox]\n"), Map.of());
        assertThat(both.source().tables()).containsExactly("public.outbox");
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of()).source().postgres().messages()).isFalse();
    }

    @Test
    void badMessageSettingsNameTheKeyAndTheValue() {
        String pg = "  password: s3cret-pw\n  postgres:\n";
        assertThat(problems(MINIMAL.replace("  password: s3cret-pw\n", pg + "    messages: { prefix: \"out box\" }\n")))
                .containsExactly("source.postgres.messages.prefix: must be 1 to 64 letters, digits or any of _.:/- (was \"out box\")");
        assertThat(problems(MINIMAL.replace("  password: s3cret-pw\n", pg + "    messages: { prefix: outbox }\n    shards: 2\n")))
                .singleElement().asString().startsWith("source.postgres.shards: shards split outbox tables by a publication row filter");
        assertThat(problems(MINIMAL.replace("jdbc:postgresql://db:5433/app", "jdbc:mariadb://db:3306/app")
                .replace("  password: s3cret-pw\n", "  kind: mariadb\n" + pg + "    messages: { prefix: outbox }\n")))
                .containsExactly("source.postgres.messages.prefix: logical decoding messages are Postgres's (pg_logical_emit_message); "
                        + "a mariadb source has none (remove it)");
        assertThat(problems(MINIMAL.replace("  password: s3cret-pw\n", "  password: s3cret-pw\n  tables: []\n")))
                .containsExactly("source.tables: must name at least one outbox table (or, on Postgres, set "
                        + "source.postgres.messages.prefix for a tableless outbox)");
    }

    @Test
    void debeziumsEventRouterOptionsAreTakenUnderTheirOwnNames() {
        var c = RouterConfigLoader.parse(MINIMAL + """
                routing:
                  event-router:
                    table.field.event.key: order_id
                    route.by.field: kind
                    route.topic.replacement: orders.${routedByValue}
                    table.fields.additional.placement: "type:header:eventType, created_at:envelope:at, shard:partition"
                    table.field.event.timestamp: created_at
                  format: { value: schemaless-json, header: string }
                """, Map.of());
        var mode = c.routing().eventRouter();
        assertThat(mode.options().get(EventRouterOptions.ROUTE_REPLACEMENT)).isEqualTo("orders.${routedByValue}"); // Debezium's, not a variable
        assertThat(mode.key()).isEqualTo(RoutingConfig.Format.JSON);
        assertThat(mode.value()).isEqualTo(RoutingConfig.Format.SCHEMALESS_JSON);
        assertThat(mode.header()).isEqualTo(RoutingConfig.Format.STRING);
        // The columns the router reads (and the preflight requires) are the options' columns; no type column unless placed.
        assertThat(mode.options().requiredColumns()).containsExactly("id", "order_id", "payload", "kind", "created_at", "type", "shard");
        assertThat(c.outbox().columns().aggregateId()).isEqualTo("order_id");
        var lenient = RouterConfigLoader.parse(MINIMAL + """
                routing:
                  event-router: { table.fields.additional.placement: "tenant:header", table.fields.additional.error.on.missing: "false" }
                """, Map.of()).routing().eventRouter().options();
        assertThat(lenient.requiredColumns()).containsExactly("id", "aggregateid", "payload", "aggregatetype");
        assertThat(lenient.optionalColumns()).containsExactly("tenant");
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of()).routing().eventRouter()).isNull();
    }

    private static EventRouterOptions eventRouterOptions(String flowMapping) {
        return RouterConfigLoader.parse(MINIMAL + "routing:\n  event-router: { " + flowMapping + " }\n", Map.of())
                .routing().eventRouter().options();
    }

    @Test
    void theMissingColumnSettingIsTakenUnderEitherOfDebeziumsNames() {
        var older = eventRouterOptions("table.fields.additional.placement: \"tenant:header\", table.fields.additional.error.on.missing: \"false\"");
        var newer = eventRouterOptions("table.fields.additional.placement: \"tenant:header\", table.field.additional.missing: ignore");
        var both = eventRouterOptions("table.fields.additional.placement: \"tenant:header\", table.fields.additional.error.on.missing: \"false\", "
                + "table.field.additional.missing: ignore");
        assertThat(newer).isEqualTo(older).isEqualTo(both);
        assertThat(newer.optionalColumns()).containsExactly("tenant");
        assertThat(newer.requiredColumns()).doesNotContain("tenant");
        assertThat(newer.get(EventRouterOptions.ERROR_ON_MISSING)).isEqualTo("false");
        assertThat(older.get(EventRouterOptions.ADDITIONAL_MISSING)).isEqualTo("ignore");
        assertThat(newer.given()).containsEntry(EventRouterOptions.ADDITIONAL_MISSING, "ignore")
                .doesNotContainKey(EventRouterOptions.ERROR_ON_MISSING); // printed back as written

        var strict = eventRouterOptions("table.fields.additional.placement: \"tenant:header\", table.field.additional.missing: ERROR");
        assertThat(strict).isEqualTo(eventRouterOptions("table.fields.additional.placement: \"tenant:header\", "
                + "table.fields.additional.error.on.missing: \"true\"")).isEqualTo(eventRouterOptions("table.fields.additional.placement: \"tenant:header\""));
        assertThat(strict.requiredColumns()).contains("tenant");
        assertThat(strict.optionalColumns()).isEmpty();
        assertThat(strict.all()).containsEntry(EventRouterOptions.ERROR_ON_MISSING, "true")
                .containsEntry(EventRouterOptions.ADDITIONAL_MISSING, "error");
    }

    @Test
    void theTwoNamesOfTheMissingColumnSettingMustAgree() {
        assertThat(problems(MINIMAL + """
                routing:
                  event-router: { table.fields.additional.error.on.missing: "true", table.field.additional.missing: ignore }
                """)).singleElement().asString()
                .startsWith("routing.event-router.table.field.additional.missing: says ignore and "
                        + "table.fields.additional.error.on.missing says true")
                .contains("give one of them");
        assertThat(problems(MINIMAL + """
                routing:
                  event-router: { table.fields.additional.error.on.missing: "false", table.field.additional.missing: error }
                """)).singleElement().asString()
                .contains("table.field.additional.missing").contains("table.fields.additional.error.on.missing says false");
        // A bad value is refused as such, not as a disagreement.
        assertThat(problems(MINIMAL + """
                routing:
                  event-router: { table.fields.additional.error.on.missing: "true", table.field.additional.missing: skip }
                """)).containsExactly("routing.event-router.table.field.additional.missing: must be one of error, ignore (was \"skip\")");
    }

    @Test
    void emptyJsonArraysAreLeftOutUnlessDebeziumsOptionalStringIsChosen() {
        assertThat(eventRouterOptions("table.expand.json.payload: \"true\"").get(EventRouterOptions.JSON_EMPTY_ARRAYS)).isEqualTo("ignore");
        assertThat(eventRouterOptions("table.expand.json.payload: \"true\", table.json.payload.empty.array.behavior: optional_string").all())
                .containsEntry(EventRouterOptions.JSON_EMPTY_ARRAYS, "optional_string");
        assertThat(problems(MINIMAL + """
                routing:
                  event-router: { table.json.payload.empty.array.behavior: keep }
                """)).containsExactly("routing.event-router.table.json.payload.empty.array.behavior: must be one of ignore, optional_string "
                + "(was \"keep\")");
    }

    @Test
    void eventRouterOptionsThatAreWrongOrClashWithOursNameTheKey() {
        assertThat(problems(MINIMAL + """
                outbox: { columns: { id: event_id } }
                routing:
                  topic: "x.${aggregatetype}"
                  event-router:
                    route.topic.regex: "(unclosed"
                    table.op.invalid.behavior: explode
                    table.fields.additional.placement: "type:footer"
                    route.topic.replacment: typo
                """)).anySatisfy(p -> assertThat(p).startsWith("outbox.columns: is set by routing.event-router"))
                .anySatisfy(p -> assertThat(p).startsWith("routing.topic: is set by routing.event-router's route.topic.replacement"))
                .anySatisfy(p -> assertThat(p).startsWith("routing.event-router.route.topic.regex: is not a regular expression"))
                .anySatisfy(p -> assertThat(p).isEqualTo("routing.event-router.table.op.invalid.behavior: must be one of warn, error, fatal "
                        + "(was \"explode\")"))
                .anySatisfy(p -> assertThat(p).contains("'footer' in 'type:footer' is not a placement"))
                .anySatisfy(p -> assertThat(p).startsWith("routing.event-router.route.topic.replacment: is not an option of Debezium's"));
        assertThat(problems(MINIMAL + "routing: { format: { value: avro } }\n"))
                .anySatisfy(p -> assertThat(p).startsWith("routing.format.value: must be one of json, schemaless-json, string, bytes"))
                .anySatisfy(p -> assertThat(p).startsWith("routing.format: applies to records made by routing.event-router"));
    }

    @Test
    void retentionIsOffByDefaultAndNamesItsKeysWhenWrong() {
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of()).outbox().retention()).isEqualTo(OutboxConfig.Retention.OFF);
        var c = RouterConfigLoader.parse(MINIMAL + "outbox: { retention: 7d, retention-time-column: inserted_at, retention-batch-size: 200 }\n", Map.of());
        assertThat(c.outbox().retention()).isEqualTo(new OutboxConfig.Retention(Duration.ofDays(7), "inserted_at", 200));
        assertThat(RouterConfigLoader.parse(EffectiveConfig.toYaml(c).replace(Secret.MASK, "s3cret-pw"), Map.of())).isEqualTo(c);
        assertThat(problems(MINIMAL + "outbox: { retention: 500ms }\n"))
                .containsExactly("outbox.retention: must be at least 1s, or 0 for off (was \"500ms\")");
        assertThat(problems(MINIMAL + "outbox: { retention: 1d, retention-time-column: \"created at\" }\n"))
                .containsExactly("outbox.retention-time-column: must be a column name (was \"created at\")");
        assertThat(problems(MINIMAL.replace("  password: s3cret-pw\n", "  password: s3cret-pw\n  postgres:\n    messages: { prefix: outbox }\n")
                + "outbox: { retention: 1d }\n")).singleElement().asString()
                .startsWith("outbox.retention: deletes published rows of the outbox tables, and this router has none");
    }

    @Test
    void theSelfAuditIsOnByDefaultAndNamesItsKeysWhenWrong() {
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of()).outbox().audit()).isEqualTo(OutboxConfig.Audit.DEFAULT);
        assertThat(OutboxConfig.Audit.DEFAULT.enabled()).isTrue();
        var c = RouterConfigLoader.parse(MINIMAL + "outbox: { audit: { interval: 2s, lag: 30s, on-loss: replay } }\n", Map.of());
        assertThat(c.outbox().audit()).isEqualTo(new OutboxConfig.Audit(true, Duration.ofSeconds(2), Duration.ofSeconds(30),
                OutboxConfig.OnLoss.REPLAY));
        assertThat(problems(MINIMAL + "outbox: { audit: { interval: 10ms, on-loss: ignore, lagg: 1s } }\n"))
                .anySatisfy(p -> assertThat(p).isEqualTo("outbox.audit.interval: must be at least 100ms (was \"10ms\")"))
                .anySatisfy(p -> assertThat(p).isEqualTo("outbox.audit.on-loss: must be one of stop, replay (was \"ignore\")"))
                .anySatisfy(p -> assertThat(p).startsWith("outbox.audit.lagg"));
        assertThat(problems(MINIMAL + "outbox: { retention: 7d, audit: { enabled: false } }\n")).singleElement().asString()
                .startsWith("outbox.retention: deletes only rows the self-audit proved published, and outbox.audit.enabled is false");
    }

    @Test
    void badShardSettingsNameTheKeyAndTheValue() {
        String pg = "  password: s3cret-pw\n  postgres:\n";
        assertThat(problems(MINIMAL.replace("  password: s3cret-pw\n", pg + "    shard: 4/4\n")))
                .containsExactly("source.postgres.shard: must be i/N, this process's shard of N (2 to 64), numbered from 0: 0/4 to 3/4 (was \"4/4\")");
        assertThat(problems(MINIMAL.replace("  password: s3cret-pw\n", pg + "    shard: 1/4\n    shards: 2\n")))
                .containsExactly("source.postgres.shard: says 4 shards but source.postgres.shards says 2 (set one of them)");
        assertThat(problems(MINIMAL.replace("  password: s3cret-pw\n", pg + "    shards: 0\n")))
                .singleElement().asString().startsWith("source.postgres.shards: ");
        assertThat(problems(MINIMAL.replace("  password: s3cret-pw\n", pg + "    shards: 2\n    slot: " + "s".repeat(55) + "\n")))
                .singleElement().asString().startsWith("source.postgres.shards: with 2 shards the names grow past Postgres's 63 characters");
        assertThat(problems(MINIMAL.replace("name: orders-router", "name: orders-shard-0-of-2")))
                .contains("name: must not end like a shard's name, -shard-<i>-of-<N>: the shards of another router are called so "
                        + "(was \"orders-shard-0-of-2\")");
        assertThat(problems(MINIMAL.replace("name: orders-router", "name: orders_shard_0_of_2")))
                .contains("source.postgres.slot: must not end like a shard's, _shard_<i>_of_<N>: another router's shards are called so "
                        + "(was \"orders_shard_0_of_2\", from the name)");
        assertThat(problems(MINIMAL.replace("jdbc:postgresql://db:5433/app", "jdbc:mysql://db:3306/app")
                .replace("  password: s3cret-pw\n", "  kind: mysql\n  password: s3cret-pw\n" + "  postgres:\n    shards: 2\n")))
                .containsExactly("source.postgres.shards: shards split a Postgres outbox over several replication slots; a mysql source "
                        + "reads one binlog stream (remove it)");
    }

    @Test
    void everyProblemIsReportedAtOnceEachNamingItsKey() {
        var p = problems("""
                source:
                  url: jdbc:postgresql://db/app
                  user: router
                  max-batch-size: lots
                  poll-interval: soon
                  snapshot: always
                  tabels: [public.outbox]
                kafka: {}
                routing:
                  topic: "events.${tenant}"
                """);
        assertThat(p).anySatisfy(s -> assertThat(s).startsWith("name: required"));
        assertThat(p).anySatisfy(s -> assertThat(s).isEqualTo("source.max-batch-size: must be a whole number (was \"lots\")"));
        assertThat(p).anySatisfy(s -> assertThat(s).startsWith("source.poll-interval: must be a duration").endsWith("(was \"soon\")"));
        assertThat(p).anySatisfy(s -> assertThat(s).startsWith("source.snapshot: must be one of none, initial (was \"always\")"));
        assertThat(p).anySatisfy(s -> assertThat(s).isEqualTo("source.tabels: unknown key (did you mean \"source.tables\"?)"));
        assertThat(p).anySatisfy(s -> assertThat(s).startsWith("kafka.bootstrap-servers: required"));
        assertThat(p).anySatisfy(s -> assertThat(s).startsWith("routing.topic: unknown placeholder ${tenant}"));
        assertThat(p).hasSize(7);
    }

    @Test
    void wrongTypesNameTheKey() {
        var p = problems(MINIMAL + """
                outbox:
                  columns: [id]
                http:
                  enabled: maybe
                  listen: everywhere
                """);
        assertThat(p).containsExactlyInAnyOrder(
                "outbox.columns: must be a mapping of keys to values (was a list)",
                "http.enabled: must be true or false (was \"maybe\")",
                "http.listen: must be host:port, e.g. 127.0.0.1:8080 (was \"everywhere\")");
    }

    @Test
    void unknownTopLevelAndNestedKeysAreRejected() {
        var p = problems(MINIMAL + """
                kafak: {}
                offsets:
                  tabel: x
                """);
        assertThat(p).containsExactlyInAnyOrder(
                "kafak: unknown key (did you mean \"kafka\"?)",
                "offsets.tabel: unknown key (did you mean \"offsets.table\"?)");
    }

    @Test
    void templatePlaceholdersMayUseConfiguredColumns() {
        var c = RouterConfigLoader.parse(MINIMAL + """
                outbox:
                  headers: { tenant: x-tenant }
                routing:
                  topic: "${tenant}.${type}"
                """, Map.of());
        assertThat(c.routing().topic().placeholders()).containsExactly("tenant", "type");
        assertThat(problems(MINIMAL + "routing: { topic: \"bad topic!\" }"))
                .containsExactly("routing.topic: may only contain letters, digits, '.', '_', '-' and ${placeholders} (was \"bad topic!\")");
        assertThat(problems(MINIMAL + "routing: { topic: \"x.${type\" }"))
                .containsExactly("routing.topic: unclosed placeholder at position 2 (was \"x.${type\")");
    }

    @Test
    void producerSettingsThatBreakDeliveryGuaranteesAreRefused() {
        var p = problems(MINIMAL.replace("kafka:\n  bootstrap-servers: kafka:9092", """
                kafka:
                  bootstrap-servers: kafka:9092
                  producer: { acks: "1", value.serializer: x, compression.type: lz4 }"""));
        assertThat(p).containsExactlyInAnyOrder(
                "kafka.producer.acks: must be all: ordered at-least-once delivery depends on it (was \"1\")",
                "kafka.producer.value.serializer: is set by the router; remove it");
    }

    @Test
    void exactlyOnceDeliveryIsOneLineWithAnOffsetsTopicFromTheName() {
        var alo = RouterConfigLoader.parse(MINIMAL, Map.of());
        assertThat(alo.kafka().delivery()).isEqualTo(Delivery.AT_LEAST_ONCE);
        var c = RouterConfigLoader.parse(MINIMAL + "delivery: exactly-once\n", Map.of());
        assertThat(c.kafka().exactlyOnce()).isTrue();
        assertThat(c.kafka().offsetsTopic()).isEqualTo("outbox-router." + c.name() + ".offsets");
        assertThat(KafkaConfig.transactionalId(c.name())).isEqualTo("outbox-router." + c.name());
        assertThat(RouterConfigLoader.parse(MINIMAL, Map.of("OUTBOX_ROUTER_DELIVERY", "exactly-once")).kafka().exactlyOnce()).isTrue();
        assertThat(problems(MINIMAL + "delivery: twice\n"))
                .containsExactly("delivery: must be one of at-least-once, exactly-once (was \"twice\")");
    }

    @Test
    void exactlyOnceRefusesProducerSettingsATransactionalProducerCannotHaveAndABadOffsetsTopic() {
        var p = problems(MINIMAL.replace("kafka:\n  bootstrap-servers: kafka:9092", """
                kafka:
                  bootstrap-servers: kafka:9092
                  offsets-topic: "my offsets"
                  producer: { max.in.flight.requests.per.connection: "10", transaction.timeout.ms: "10", linger.ms: "5" }""")
                + "delivery: exactly-once\n");
        assertThat(p).containsExactlyInAnyOrder(
                "kafka.producer.max.in.flight.requests.per.connection: must be 1 to 5 for a transactional producer (delivery: "
                        + "exactly-once; was \"10\")",
                "kafka.producer.transaction.timeout.ms: must be at least 1000: a shorter timeout aborts transactions while they are "
                        + "being sent (delivery: exactly-once; was \"10\")",
                "kafka.offsets-topic: must be a Kafka topic name: letters, digits, '.', '_' or '-', at most 249 (was \"my offsets\")");
    }

    @Test
    void environmentOverridesKeysAndFillsReferences() {
        var c = RouterConfigLoader.parse(MINIMAL.replace("s3cret-pw", "${DB_PASSWORD}"), Map.of(
                "DB_PASSWORD", "from-env",
                "OUTBOX_ROUTER_KAFKA_BOOTSTRAP_SERVERS", "broker-1:9092,broker-2:9092",
                "OUTBOX_ROUTER_SOURCE_MAX_BATCH_SIZE", "512",
                "OUTBOX_ROUTER_SOURCE_TABLES", "public.outbox, billing.outbox"));
        assertThat(c.source().connection().password().reveal()).isEqualTo("from-env");
        assertThat(c.kafka().bootstrapServers()).isEqualTo("broker-1:9092,broker-2:9092");
        assertThat(c.source().maxBatchSize()).isEqualTo(512);
        assertThat(c.source().tables()).containsExactly("public.outbox", "billing.outbox");
        assertThat(problems(MINIMAL.replace("s3cret-pw", "${NOPE}")))
                .containsExactly("source.password: environment variable NOPE is not set");
    }

    @Test
    void passwordFromAFile(@TempDir Path dir) throws Exception {
        var file = dir.resolve("db-password");
        Files.writeString(file, "file-pw\n");
        var c = RouterConfigLoader.parse(MINIMAL.replace("password: s3cret-pw", "password-file: " + file), Map.of());
        assertThat(c.source().connection().password().reveal()).isEqualTo("file-pw");
        assertThat(problems(MINIMAL.replace("password: s3cret-pw", "password-file: " + dir.resolve("missing"))))
                .containsExactly("source.password-file: cannot read \"" + dir.resolve("missing") + "\" (NoSuchFileException)");
    }

    @Test
    void secretsNeverAppearInTheEffectiveConfigOrInErrors() {
        var yaml = MINIMAL + """
                kafka:
                  bootstrap-servers: kafka:9092
                  producer: { sasl.jaas.config: "PlainLoginModule required password=\\"kafka-pw\\";", linger.ms: "5" }
                """;
        yaml = yaml.replaceFirst("kafka:\n  bootstrap-servers: kafka:9092\n", "");
        var c = RouterConfigLoader.parse(yaml, Map.of());
        String printed = EffectiveConfig.toYaml(c);
        assertThat(printed).doesNotContain("s3cret-pw").doesNotContain("kafka-pw").contains("password: '******'")
                .contains("sasl.jaas.config: '******'").contains("linger.ms: 5");
        assertThat(c.toString()).doesNotContain("s3cret-pw");
        // A bad value next to a secret: the message shows the bad value, never the secret.
        assertThat(String.join("\n", problems(MINIMAL + "http: { listen: nowhere }"))).doesNotContain("s3cret-pw");
    }

    @Test
    void theEffectiveConfigReadsBackToTheSameConfig() {
        var c = RouterConfigLoader.parse(MINIMAL + """
                outbox:
                  columns: { payload: body }
                  headers: { tracingspancontext: traceparent }
                routing:
                  topic: "events.${type}"
                  dead-letters: { policy: skip }
                debezium: { slot.max.retries: "3" }
                """, Map.of());
        var again = RouterConfigLoader.parse(EffectiveConfig.toYaml(c).replace(Secret.MASK, "s3cret-pw"), Map.of());
        assertThat(again).isEqualTo(c);
    }

    @Test
    void badYamlSaysWhere() {
        assertThat(problems("name: [unclosed\n")).singleElement().asString().startsWith("not valid YAML at line");
    }

    @Test
    void passThroughKeysThatWouldBreakAGuaranteeAreRefusedWithTheReason() {
        var e = org.assertj.core.api.Assertions.catchThrowableOfType(ConfigException.class, () -> RouterConfigLoader.parse("""
                name: orders
                source: { url: "jdbc:postgresql://db:5432/app", user: u, password: p, tables: [public.outbox] }
                kafka:
                  bootstrap-servers: "k:9092"
                  producer: { partitioner.class: "x.RoundRobin", partitioner.ignore.keys: "true", transactional.id: "t", linger.ms: "5" }
                debezium:
                  provide.transaction.metadata: "false"
                  topic.prefix: other
                  offset.storage.file.filename: /tmp/o
                  snapshot.mode: initial
                  slot.max.retries: "3"
                  heartbeat.interval.ms: "0"
                """, java.util.Map.of()));
        assertThat(e.getMessage()).contains(
                "kafka.producer.partitioner.class: would break order per aggregate",
                "kafka.producer.partitioner.ignore.keys: would break order per aggregate",
                "kafka.producer.transactional.id: is set by the router from its name when delivery is exactly-once",
                "debezium.provide.transaction.metadata: is set by the router",
                "debezium.topic.prefix: is set by the router",
                "debezium.offset.storage.file.filename: is set by the router",
                "debezium.snapshot.mode: conflicts with source.snapshot",
                "debezium.heartbeat.interval.ms: is set by the router on Postgres")
                .doesNotContain("linger.ms", "slot.max.retries");
        // On the binlog the connector's heartbeat only carries the position: it may be tuned.
        assertThat(RouterConfigLoader.parse("""
                name: orders
                source: { kind: mariadb, url: "jdbc:mariadb://db:3306/app", user: u, password: p, tables: [app.outbox] }
                kafka: { bootstrap-servers: "k:9092" }
                debezium: { heartbeat.interval.ms: "1000" }
                """, java.util.Map.of()).debezium()).containsEntry("heartbeat.interval.ms", "1000");
    }
}
