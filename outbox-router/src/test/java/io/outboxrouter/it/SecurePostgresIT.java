package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.cli.Main;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TestCertificates;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The router against a Postgres that takes TLS connections only: {@code hostssl} lines alone, SCRAM passwords and a
 * client certificate required of the router's role, on normal and replication connections alike. Every connection the
 * router opens (catalog, offsets table, lock, catalog watch and the connector's replication stream) must carry
 * {@code source.url}'s TLS settings, or the server refuses it. Certificates are made by the test.
 */
class SecurePostgresIT {
    private static final String ROUTER_USER = "router_tls";
    private static final String ROUTER_PASSWORD = "router-tls-secret";

    @TempDir
    static Path dir;
    private static TestCertificates certs;
    private static TestCertificates.Issued client;
    private static PostgresServer server;

    @BeforeAll
    static void tlsOnlyServer() throws Exception {
        certs = TestCertificates.authority(dir.resolve("certs"));
        var serverCert = certs.server("localhost");
        client = certs.client(ROUTER_USER);
        // No host or hostnossl line: an unencrypted TCP connection finds no entry and is refused. The test's own superuser
        // is trusted over TLS only.
        var hba = Files.writeString(dir.resolve("pg_hba.conf"), """
                local all all trust
                hostssl all postgres 127.0.0.1/32 trust
                hostssl all postgres ::1/128 trust
                hostssl all %1$s 127.0.0.1/32 scram-sha-256 clientcert=verify-full
                hostssl all %1$s ::1/128 scram-sha-256 clientcert=verify-full
                hostssl replication %1$s 127.0.0.1/32 scram-sha-256 clientcert=verify-full
                hostssl replication %1$s ::1/128 scram-sha-256 clientcert=verify-full
                """.formatted(ROUTER_USER));
        server = PostgresServer.start(Map.of(
                "ssl", "on",
                "ssl_cert_file", serverCert.certPem().toString(),
                "ssl_key_file", serverCert.keyPem().toString(),
                "ssl_ca_file", certs.caPem().toString(),
                "hba_file", hba.toString(),
                "password_encryption", "scram-sha-256"));
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    /** A database of its own, the router's role granted what docs/postgres.md's statements grant, and nothing else. */
    private static PostgresOutbox database(String name) throws Exception {
        var db = new PostgresOutbox(server, OutboxContract.unique(name));
        for (String sql : DocumentedGrants.of("postgres.md", "## The router's role", ROUTER_USER, ROUTER_PASSWORD, db.database())) {
            if (sql.startsWith("CREATE ROLE") && roleExists()) {
                continue; // one role for every database of the server
            }
            db.execute(sql);
        }
        return db;
    }

    private static boolean roleExists() throws Exception {
        try (var c = server.connect("postgres"); var st = c.createStatement();
             var rs = st.executeQuery("SELECT 1 FROM pg_roles WHERE rolname = '" + ROUTER_USER + "'")) {
            return rs.next();
        }
    }

    private static String url(PostgresOutbox db, String tls) {
        return "jdbc:postgresql://localhost:" + server.port() + "/" + db.database() + (tls.isEmpty() ? "" : "?" + tls);
    }

    private static String verifyFull(TestCertificates authority) {
        return "sslmode=verify-full&sslrootcert=" + authority.caPem() + "&sslcert=" + client.certPem() + "&sslkey=" + client.keyPk8();
    }

    private static String yaml(String name, String url, String topics, int httpPort) {
        return """
                name: %s
                source:
                  kind: postgres
                  url: "%s"
                  user: %s
                  password: %s
                  tables: [public.outbox]
                routing:
                  topic: "%s.${aggregatetype}"
                kafka:
                  bootstrap-servers: %s
                http:
                  listen: 127.0.0.1:%d
                """.formatted(name, url, ROUTER_USER, ROUTER_PASSWORD, topics, OutboxContract.kafka(), httpPort);
    }

    @Test
    void streamsOverVerifiedTlsWithAClientCertificateOnEveryConnection() throws Exception {
        var db = database("tls");
        String topics = OutboxContract.unique("tls");
        int httpPort = OutboxContract.freePort();
        // The password from a mounted secret, as docs/security.md shows.
        var secret = Files.writeString(dir.resolve("db-password"), ROUTER_PASSWORD + "\n");
        var config = Files.writeString(dir.resolve("tls.yml"), yaml("tls-router", url(db, verifyFull(certs)), topics, httpPort)
                .replace("  password: " + ROUTER_PASSWORD + "\n", "  password-file: " + secret + "\n"));
        var log = dir.resolve("tls-router.log");
        try (var router = RouterProcess.start(config, httpPort, log).awaitReady(Duration.ofSeconds(90));
             var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            var ids = new HashSet<UUID>();
            try (var c = db.connect()) {
                for (int i = 0; i < 20; i++) {
                    var e = TestEvent.of("Order", "order-" + (i % 4), i);
                    db.insert(c, e);
                    ids.add(e.id());
                    c.commit();
                }
            }
            kafka.awaitIds(ids, Duration.ofSeconds(60), router);

            // Every backend of the router's role is encrypted and authenticated by its certificate, the walsender included.
            var backends = new ArrayList<String>();
            try (var c = server.connect("postgres"); var st = c.createStatement(); var rs = st.executeQuery(
                    "SELECT a.backend_type, s.ssl, s.client_dn FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
                            + "WHERE a.usename = '" + ROUTER_USER + "'")) {
                while (rs.next()) {
                    backends.add(rs.getString(1) + " ssl=" + rs.getBoolean(2) + " dn=" + rs.getString(3));
                }
            }
            assertThat(backends).as("the router's connections").isNotEmpty()
                    .allSatisfy(b -> assertThat(b).endsWith("ssl=true dn=/CN=" + ROUTER_USER))
                    .anySatisfy(b -> assertThat(b).startsWith("walsender "));

            // The commands beside it connect the same way: audit and replay read the outbox, offsets reads the table.
            var outputs = new ArrayList<String>();
            var audit = RouterProcess.exec(Map.of(), Duration.ofSeconds(90), "audit", "--config", config.toString(), "--until",
                    java.time.Instant.now().toString());
            assertThat(audit.exit()).as(audit.out()).isZero();
            outputs.add(audit.out());
            UUID again = ids.iterator().next();
            var replay = RouterProcess.exec(Map.of(), Duration.ofSeconds(90), "replay", "--config", config.toString(), "--id", again.toString());
            assertThat(replay.exit()).as(replay.out()).isZero();
            outputs.add(replay.out());
            var offsets = RouterProcess.exec(Map.of(), Duration.ofSeconds(60), "offsets", "show", "--config", config.toString());
            assertThat(offsets.exit()).as(offsets.out()).isZero();
            outputs.add(offsets.out());
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> {
                kafka.poll();
                return kafka.all().stream().filter(r -> again.equals(r.id())).count() >= 2;
            });
            assertThat(router.stop(Duration.ofSeconds(30))).isZero();
            outputs.add(Files.readString(log));
            assertThat(outputs).allSatisfy(out -> assertThat(out).doesNotContain(ROUTER_PASSWORD, TestCertificates.PASSWORD));
        }
    }

    @Test
    void checkPassesOverTlsAndNamesWhatTheServerRefuses() throws Exception {
        var db = database("tlscheck");
        String topics = OutboxContract.unique("tlscheck");
        // A role that may not create the publication fails check, as it would fail the first start.
        db.execute("REVOKE CREATE ON DATABASE " + db.database() + " FROM " + ROUTER_USER);
        var noCreate = check(yaml("tls-check", url(db, verifyFull(certs)), topics, 0));
        assertThat(noCreate.exit()).as(noCreate.out()).isEqualTo(1);
        assertThat(noCreate.out()).contains("FAIL  publication: publication tls_check is missing, and the router's role cannot create it: "
                + "it lacks CREATE on database " + db.database(), "GRANT CREATE ON DATABASE " + db.database() + " TO " + ROUTER_USER);
        db.execute("GRANT CREATE ON DATABASE " + db.database() + " TO " + ROUTER_USER);
        var good = check(yaml("tls-check", url(db, verifyFull(certs)), topics, 0));
        assertThat(good.exit()).as(good.out()).isZero();
        assertThat(good.out()).contains("PASS  replication privilege", "PASS  outbox table public.outbox",
                "PASS  publication: publication tls_check will be created on first start", "All checks passed.");

        // With a heartbeat table the router will create (and own), the publication check looks only at tables that exist.
        var heartbeat = check(yaml("tls-check", url(db, verifyFull(certs)), topics, 0).replace("  tables: [public.outbox]\n",
                "  tables: [public.outbox]\n  postgres: { heartbeat-interval: 10s }\n"));
        assertThat(heartbeat.exit()).as(heartbeat.out()).isZero();

        var plain = check(yaml("tls-check", url(db, "sslmode=disable"), topics, 0));
        assertThat(plain.exit()).as(plain.out()).isEqualTo(1);
        assertThat(plain.out()).contains("no pg_hba.conf entry", "no encryption", "the server accepts TLS connections only");

        var noCertificate = check(yaml("tls-check", url(db, "sslmode=verify-full&sslrootcert=" + certs.caPem()), topics, 0));
        assertThat(noCertificate.exit()).as(noCertificate.out()).isEqualTo(1);
        assertThat(noCertificate.out()).contains("the server asks for a client certificate");

        // A server whose certificate another authority signed is not trusted: verify-full refuses it.
        var stranger = TestCertificates.authority(dir.resolve("stranger"));
        var untrusted = check(yaml("tls-check", url(db, verifyFull(stranger)), topics, 0));
        assertThat(untrusted.exit()).as(untrusted.out()).isEqualTo(1);
        assertThat(untrusted.out()).contains("the TLS handshake failed").doesNotContain(ROUTER_PASSWORD);
    }

    private record Result(int exit, String out) {
    }

    private static Result check(String yaml) throws Exception {
        var file = Files.writeString(dir.resolve("check-" + System.nanoTime() + ".yml"), yaml);
        var out = new ByteArrayOutputStream();
        PrintStream old = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            int exit = new CommandLine(new Main()).execute(List.of("check", "--config", file.toString()).toArray(String[]::new));
            return new Result(exit, out.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
        }
    }
}
