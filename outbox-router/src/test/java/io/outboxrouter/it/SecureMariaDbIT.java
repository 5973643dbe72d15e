package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.testing.MariaDbServer;
import io.outboxrouter.testing.TestCertificates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The router against a MariaDB with {@code require_secure_transport = ON} and a user that must show a client
 * certificate ({@code REQUIRE X509}): the catalog and offsets connections and the connector's binlog client all verify
 * the server's certificate against the test's authority and present the router's, from {@code source.url}'s
 * truststore and keystore.
 */
class SecureMariaDbIT {
    private static final String ROUTER_USER = "router_tls";
    private static final String ROUTER_PASSWORD = "mariadb-tls-secret";
    /** The test's own connections as root: TLS, the server's certificate not checked. */
    private static final String ROOT_TLS = "?sslMode=trust";

    @TempDir
    static Path dir;
    private static TestCertificates certs;
    private static TestCertificates.Issued client;
    private static MariaDbServer server;

    @BeforeAll
    static void tlsOnlyServer() throws Exception {
        certs = TestCertificates.authority(dir.resolve("certs"));
        var serverCert = certs.server("localhost");
        client = certs.client(ROUTER_USER);
        server = MariaDbServer.start(List.of(MariaDbServer.GRANTS_ON, "--ssl-ca=" + certs.caPem(), "--ssl-cert=" + serverCert.certPem(),
                "--ssl-key=" + serverCert.keyPem()));
        try (var c = root(""); var st = c.createStatement()) {
            st.execute("SET GLOBAL require_secure_transport = ON");
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (server != null) {
            try (var c = root(""); var st = c.createStatement()) {
                st.execute("SET GLOBAL require_secure_transport = OFF");
            }
            server.close();
        }
    }

    private static java.sql.Connection root(String database) throws java.sql.SQLException {
        return DriverManager.getConnection(server.jdbcUrl(database) + ROOT_TLS, MariaDbServer.USER, MariaDbServer.PASSWORD);
    }

    private static String url(String database, String tls) {
        return "jdbc:mariadb://localhost:" + server.port() + "/" + database + (tls.isEmpty() ? "" : "?" + tls);
    }

    private static String verifyFull() {
        return "sslMode=verify-full&trustStore=" + certs.truststore() + "&trustStorePassword=" + TestCertificates.PASSWORD
                + "&trustStoreType=PKCS12&keyStore=" + client.keystore() + "&keyStorePassword=" + TestCertificates.PASSWORD
                + "&keyStoreType=PKCS12";
    }

    @Test
    void streamsTheBinlogOverVerifiedTlsWithAClientCertificate() throws Exception {
        String database = OutboxContract.unique("tls");
        try (var c = root(""); var st = c.createStatement()) {
            st.execute("CREATE DATABASE " + database);
            st.execute("CREATE TABLE " + database + ".outbox (id char(36) PRIMARY KEY, aggregatetype varchar(255) NOT NULL, "
                    + "aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload json, "
                    + "created_at timestamp(6) NOT NULL DEFAULT current_timestamp(6))");
            // What docs/mysql-mariadb.md grants, and a client certificate required of the user.
            for (String sql : DocumentedGrants.of("mysql-mariadb.md", "## The router's user", ROUTER_USER, ROUTER_PASSWORD, database)) {
                st.execute(sql);
            }
            st.execute("ALTER USER '" + ROUTER_USER + "'@'%' REQUIRE X509");
        }
        String topics = OutboxContract.unique("mtls");
        int httpPort = OutboxContract.freePort();
        String name = "mariadb-tls";
        var config = Files.writeString(dir.resolve("router.yml"), """
                name: %s
                source:
                  kind: mariadb
                  url: "%s"
                  user: %s
                  password: %s
                  tables: [%s.outbox]
                routing:
                  topic: "%s.${aggregatetype}"
                kafka:
                  bootstrap-servers: %s
                http:
                  listen: 127.0.0.1:%d
                """.formatted(name, url(database, verifyFull()), ROUTER_USER, ROUTER_PASSWORD, database, topics,
                OutboxContract.kafka(), httpPort));
        var log = dir.resolve("router.log");

        var check = RouterProcess.exec(java.util.Map.of(), Duration.ofSeconds(90), "check", "--config", config.toString());
        assertThat(check.exit()).as(check.out()).isZero();

        try (var router = RouterProcess.start(config, httpPort, log).awaitReady(Duration.ofSeconds(90));
             var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*")) {
            var ids = new LinkedHashSet<UUID>();
            try (var c = root(database)) {
                for (int i = 0; i < 10; i++) {
                    var e = TestEvent.of("Order", "order-" + (i % 3), i);
                    try (var ps = c.prepareStatement("INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?, ?, ?, ?, ?)")) {
                        ps.setString(1, e.id().toString());
                        ps.setString(2, e.aggregateType());
                        ps.setString(3, e.aggregateId());
                        ps.setString(4, e.type());
                        ps.setString(5, e.payload());
                        ps.executeUpdate();
                    }
                    ids.add(e.id());
                }
            }
            kafka.awaitIds(ids, Duration.ofSeconds(60), router);

            // The user is REQUIRE X509 under require_secure_transport: a session of the router without TLS and its
            // certificate (the binlog client's included) would have been refused, and nothing would have arrived.
            assertThat(router.stop(Duration.ofSeconds(30))).isZero();
        }
        assertThat(Files.readString(log)).doesNotContain(ROUTER_PASSWORD, TestCertificates.PASSWORD);

        // Without TLS the server refuses, and check names the fix.
        var plain = RouterProcess.exec(java.util.Map.of(), Duration.ofSeconds(90), "check", "--config",
                Files.writeString(dir.resolve("plain.yml"), Files.readString(config).replace(url(database, verifyFull()), url(database, "")))
                        .toString());
        assertThat(plain.exit()).as(plain.out()).isEqualTo(1);
        assertThat(plain.out()).contains("the server accepts TLS connections only");
        assertThat(plain.out()).doesNotContain(ROUTER_PASSWORD, TestCertificates.PASSWORD);
    }
}
