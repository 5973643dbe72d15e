package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.cli.Main;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TestServers;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** `check` against real servers: every prerequisite reported, failures with their fix, a meaningful exit code. */
class CheckCommandIT {
    @TempDir
    Path dir;

    private record Result(int exit, String out) {
    }

    private Result check(String yaml, String... extra) throws Exception {
        var file = Files.writeString(dir.resolve("router-" + System.nanoTime() + ".yml"), yaml);
        var out = new ByteArrayOutputStream();
        PrintStream old = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            var args = new java.util.ArrayList<>(java.util.List.of("check", "--config", file.toString()));
            args.addAll(java.util.List.of(extra));
            int exit = new CommandLine(new Main()).execute(args.toArray(String[]::new));
            return new Result(exit, out.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
        }
    }

    @Test
    void aRouterSetUpRightPassesEveryCheck() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("check"));
        var r = check("name: check-router\n" + db.sourceYaml() + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\n");
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("PASS  wal_level: wal_level = logical", "PASS  replication privilege",
                "PASS  replication slot: slot check_router will be created on first start",
                "PASS  outbox table public.outbox: exists, SELECT granted",
                "PASS  publication: publication check_router will be created on first start",
                "PASS  offsets table", "PASS  kafka: reached", "All checks passed.").doesNotContain("FAIL");
        assertThat(tableExists(db, "outbox_router_offsets")).as("check changes nothing: the offsets table waits for the first start")
                .isFalse();

        // A table a newer outbox-router wrote is refused by check too, as at a start, without being touched.
        try (var c = db.connect(); var st = c.createStatement()) {
            st.execute("CREATE TABLE outbox_router_offsets (router_name varchar(255) NOT NULL, offset_key varchar(255) NOT NULL, "
                    + "offset_value text, updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (router_name, offset_key))");
            st.execute("INSERT INTO outbox_router_offsets (router_name, offset_key, offset_value) VALUES ('*', 'outbox-router.layout', "
                    + "'{\"version\":99}')");
            c.commit();
        }
        var newer = check("name: check-router\n" + db.sourceYaml() + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\n");
        assertThat(newer.exit()).isEqualTo(1);
        assertThat(newer.out()).contains("FAIL  stored position", "has layout version 99, written by a newer outbox-router");
    }

    private static boolean tableExists(OutboxDatabase db, String table) throws Exception {
        try (var c = db.connect(); var rs = c.getMetaData().getTables(c.getCatalog(), null, table, null)) {
            return rs.next();
        }
    }

    /** Exactly-once: the transaction state log, the transactional-id permission and the offsets topic are checked too. */
    @Test
    void exactlyOnceChecksTransactionsTheTransactionalIdAndTheOffsetsTopic() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("checkeos"));
        String name = OutboxContract.unique("checkeos-router").replace('_', '-');
        String yaml = "name: " + name + "\n" + db.sourceYaml() + "delivery: exactly-once\nkafka: { bootstrap-servers: \""
                + OutboxContract.kafka() + "\" }\n";
        var r = check(yaml);
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("PASS  kafka transactions: transaction state log: replication factor 1, min.isr 1 on 1 broker(s)",
                "PASS  transaction timeout: a Kafka transaction may stay open 900 s (the brokers allow 900 s)",
                "PASS  transactional id: the producer may use transactional ids (tried outbox-router." + name + ".check",
                "PASS  offsets topic: outbox-router." + name + ".offsets will be created at first start");
        // A topic without compaction would lose the position to retention: refused with the fix.
        String topic = OutboxContract.unique("plainoffsets");
        try (var admin = org.apache.kafka.clients.admin.Admin.create(java.util.Map.of("bootstrap.servers", OutboxContract.kafka()))) {
            admin.createTopics(java.util.List.of(new org.apache.kafka.clients.admin.NewTopic(topic, 1, (short) 1))).all().get();
        }
        var plain = check(yaml.replace("kafka: {", "kafka: { offsets-topic: " + topic + ","));
        assertThat(plain.exit()).isEqualTo(1);
        assertThat(plain.out()).contains("FAIL  offsets topic: " + topic + " has cleanup.policy=delete",
                "fix: kafka-configs.sh --alter --entity-type topics --entity-name " + topic + " --add-config cleanup.policy=compact");
    }

    /** A sharded router: every shard's slot, publication, offsets and position, each named; a wrong publication failed with the fix. */
    @Test
    void eachShardIsCheckedUnderItsNameAndAPublicationWithAnotherFilterFails() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("checkshards"));
        String name = OutboxContract.unique("checkshards-router").replace('_', '-');
        String pub = name.replace('-', '_');
        String yaml = "name: " + name + "\n" + db.sourceYaml().replace("  tables: [public.outbox, public.outbox_binary]\n",
                "  tables: [public.outbox]\n  postgres: { shards: 2 }\n") + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\n";
        var r = check(yaml);
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("PASS  shard 0 of 2: publication: publication " + pub + "_shard_0_of_2 will be created on first start",
                "PASS  shard 1 of 2: replication slot: slot " + pub + "_shard_1_of_2 will be created on first start",
                "PASS  shard 1 of 2: shard layout", "PASS  shard 0 of 2: offsets table", "All checks passed.");

        db.execute("CREATE PUBLICATION " + pub + "_shard_1_of_2 FOR TABLE public.outbox WHERE ((hashtext(aggregateid::text) & 2147483647) % 2 = 1) "
                + "WITH (publish = 'insert, delete')");
        r = check(yaml);
        assertThat(r.exit()).as(r.out()).isEqualTo(1);
        assertThat(r.out()).contains("FAIL  shard 1 of 2: publication: publication " + pub + "_shard_1_of_2 is not " + name + "-shard-1-of-2's: "
                        + "it publishes more than inserts", "it filters public.outbox by", "fix: ALTER PUBLICATION " + pub + "_shard_1_of_2 SET TABLE")
                .contains("PASS  shard 0 of 2: publication");

        // The fix keeps the publication (a slot behind it still decodes): applied as printed, the check passes.
        var lines = r.out().lines().toList();
        int failed = lines.indexOf(lines.stream().filter(l -> l.contains("FAIL  shard 1 of 2: publication")).findFirst().orElseThrow());
        String fix = lines.get(failed + 1).trim();
        assertThat(fix).startsWith("fix: ALTER PUBLICATION");
        for (String statement : fix.substring("fix: ".length()).split("; ")) {
            db.execute(statement);
        }
        r = check(yaml);
        assertThat(r.exit()).as(r.out()).isZero();
    }

    /**
     * Amazon RDS and Aurora give replication by membership in their rds_replication role, not by the attribute: a member
     * passes, and a role that is not one is told the GRANT that RDS documents. On a server of its own, since roles are
     * shared by every database of a server.
     */
    @Test
    void aMemberOfRdsReplicationMayReplicate() throws Exception {
        try (var server = PostgresServer.start()) {
            String database = server.createDatabase("rds");
            try (var c = server.connect(database); var st = c.createStatement()) {
                st.execute("CREATE ROLE rds_replication NOLOGIN");
                st.execute("CREATE ROLE app_router LOGIN PASSWORD 'secret'");
                st.execute("CREATE TABLE public.outbox (id uuid PRIMARY KEY, aggregatetype varchar(255), aggregateid varchar(255), "
                        + "type varchar(255), payload jsonb)");
                st.execute("GRANT SELECT ON public.outbox TO app_router");
            }
            String yaml = "name: rds-router\nsource: { kind: postgres, url: \"" + server.jdbcUrl(database)
                    + "\", user: app_router, password: secret, tables: [public.outbox] }\nkafka: { bootstrap-servers: \""
                    + OutboxContract.kafka() + "\" }\n";
            var before = check(yaml);
            assertThat(before.out()).contains("FAIL  replication privilege: app_router is not a member of rds_replication",
                    "GRANT rds_replication TO app_router");
            try (var c = server.connect(database); var st = c.createStatement()) {
                st.execute("GRANT rds_replication TO app_router");
            }
            assertThat(check(yaml).out()).contains("PASS  replication privilege: app_router may replicate");
        }
    }

    @Test
    void aMariaDbRouterSetUpRightPassesEveryCheck() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("check"));
        var r = check("name: check-router\n" + db.sourceYaml() + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\n");
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("PASS  binlog_format: binlog_format = ROW", "PASS  binlog_row_image", "PASS  grants",
                "All checks passed.");
        assertThat(tableExists(db, "outbox_router_offsets")).isFalse();
    }

    @Test
    @org.junit.jupiter.api.condition.EnabledIf("io.outboxrouter.it.MySqlOutboxIT#enabled")
    void aMySqlRouterSetUpRightPassesEveryCheck() throws Exception {
        var db = new BinlogOutbox(MySqlOutboxIT.server(), OutboxContract.unique("check"));
        var r = check("name: check-router\n" + db.sourceYaml() + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\n");
        assertThat(r.exit()).as(r.out()).isZero();
        assertThat(r.out()).contains("PASS  binlog_format: binlog_format = ROW", "PASS  binlog_row_image", "PASS  grants",
                "All checks passed.");
    }

    @Test
    void everyFailureIsReportedWithItsFixAndExitCodeOne() throws Exception {
        var server = TestServers.postgres();
        String database = server.createDatabase(OutboxContract.unique("checkbad"));
        String yaml = """
                name: check-router
                source: { url: "%s", user: %s, password: %s, tables: [public.outbox, public.missing] }
                kafka: { bootstrap-servers: "127.0.0.1:1" }
                """.formatted(server.jdbcUrl(database), PostgresServer.USER, PostgresServer.PASSWORD);
        var r = check(yaml);
        assertThat(r.exit()).as(r.out()).isEqualTo(1);
        assertThat(r.out()).contains("FAIL  outbox table public.outbox: outbox table public.outbox does not exist",
                "FAIL  outbox table public.missing", "fix: `java -jar outbox-router.jar schema --config ...` prints the DDL",
                "FAIL  kafka: cannot reach 127.0.0.1:1", "PASS  wal_level", "check(s) failed.");

        // With a broker that answers (the unreachable one costs its 10 s timeout again): the tables still fail.
        String jsonLine = check(yaml.replace("127.0.0.1:1", OutboxContract.kafka()), "--json").out().lines().filter(l -> l.startsWith("{")).findFirst().orElseThrow();
        var json = new ObjectMapper().readTree(jsonLine);
        assertThat(json.get("ok").asBoolean()).isFalse();
        assertThat(json.get("checks")).anySatisfy(c -> assertThat(c.get("name").asText()).isEqualTo("kafka"));
    }
}
