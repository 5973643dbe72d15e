package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.MySqlServer;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.testcontainers.mysql.MySQLContainer;

/**
 * The outbox contract on a real MySQL: the one given by {@code OUTBOX_IT_MYSQL_URL} (what {@code scripts/mysql-server.sh
 * start} prints; {@code .ci/run} does this, so every CI run covers MySQL 9.7), or else, with {@code -Doutbox.it.mysql=true}
 * where a Docker engine runs, a MySQL 8.4 container through Testcontainers. Skipped without either.
 */
@EnabledIf("enabled")
class MySqlOutboxIT extends OutboxContract implements StopAndRestartTier {
    private static MySQLContainer mysql;

    static boolean enabled() {
        return MySqlServer.isGiven() || Boolean.getBoolean("outbox.it.mysql");
    }

    static synchronized BinlogOutbox.Server server() {
        var given = MySqlServer.given();
        if (given.isPresent()) {
            return new BinlogOutbox.Server("mysql", given.get().jdbcUrl(""), given.get().user(), given.get().password());
        }
        if (mysql == null) {
            mysql = new MySQLContainer("mysql:8.4")
                    .withUsername("root")
                    .withPassword("outbox-router")
                    .withCommand("--server-id=1", "--log-bin=mysql-bin", "--binlog-format=ROW", "--binlog-row-image=FULL");
            mysql.start();
            Runtime.getRuntime().addShutdownHook(new Thread(mysql::stop));
        }
        return new BinlogOutbox.Server("mysql", "jdbc:mysql://" + mysql.getHost() + ":" + mysql.getMappedPort(3306) + "/",
                "root", "outbox-router");
    }

    @Override
    OutboxDatabase newDatabase(String name) throws SQLException {
        return new BinlogOutbox(server(), name);
    }

    /** An event's source.position header (binlog:F:P,gtid:server_uuid:n with GTIDs on) is a position offsets set takes. */
    @Test
    void offsetsSetMovesThePositionBackToAnEventsHeader(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        MariaDbRouterBehaviourIT.offsetsSetMovesThePositionBackToAnEventsHeader(new BinlogOutbox(server(), unique("replay")), dir);
    }

    /** Three SIGKILLs, not four: the binlog path is MariaDB's, which takes four. */
    @Override
    @Test
    void sigkillUnderLoadLosesNothingAndKeepsOrderPerAggregate() throws Exception {
        sigkillUnderLoad("crash", "", 3);
    }

    /** The README's grants for MySQL, exactly: the router streams, stores its offsets and holds its lock with them. */
    @Test
    void theRouterStreamsAsAUserWithExactlyTheReadmeGrants() throws Exception {
        var server = server();
        String database = unique("grants");
        var db = new BinlogOutbox(server, database);
        String user = unique("router"); // MySQL user names: up to 32 characters
        try (var c = DriverManager.getConnection(server.jdbcUrl(""), server.user(), server.password()); var st = c.createStatement()) {
            st.execute("CREATE USER '" + user + "'@'%' IDENTIFIED BY 'least-privilege'");
            // As the README has them, with its database name:
            st.execute("GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '" + user + "'@'%'");
            st.execute("GRANT CREATE, INSERT, UPDATE, DELETE ON " + database + ".* TO '" + user + "'@'%'");
        }
        String topics = unique("grants");
        String yaml = configYaml(db, unique("grants-router").replace('_', '-'), topics, 0)
                .replace("user: " + server.user(), "user: " + user)
                .replace("password: \"" + server.password() + "\"", "password: \"least-privilege\"");
        assertThat(yaml).contains("user: " + user, "least-privilege");
        var config = RouterConfigLoader.parse(yaml, Map.of());
        var event = TestEvent.of("Order", "o-1", 1);
        try (var router = Router.start(config); var kafka = new KafkaEvents(kafka(), topics + "\\..*"); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, event);
            c.commit();
            kafka.awaitIds(Set.of(event.id()), Duration.ofSeconds(60));
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> router.metrics().lastOffsetStored() != null);
        }
    }

    /**
     * After a failover to a replica that missed transactions the router had read, its stored GTID set names transactions
     * the server never executed: refused as another history (before, the file check would have called it binlog retention
     * or passed on a file of the same name).
     */
    @Test
    void aStoredGtidSetThisServerHasNotExecutedIsRefusedAsAnotherHistory() throws Exception {
        var db = new BinlogOutbox(server(), unique("gtid"));
        String topics = unique("gtid");
        var config = RouterConfigLoader.parse(configYaml(db, unique("gtid-router").replace('_', '-'), topics, 0), Map.of());
        String stored;
        try (var router = Router.start(config); var kafka = new KafkaEvents(kafka(), topics + "\\..*"); var c = db.connect()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            var event = TestEvent.of("Order", "o-1", 1);
            db.insert(c, event);
            c.commit();
            kafka.awaitIds(Set.of(event.id()), Duration.ofSeconds(60));
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> router.metrics().lastOffsetStored() != null);
        }
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT JSON_UNQUOTE(JSON_EXTRACT(offset_value, "
                + "'$.gtids')) FROM outbox_router_offsets WHERE router_name = '" + config.name() + "' AND offset_key LIKE '[%'")) {
            assertThat(rs.next()).isTrue();
            stored = rs.getString(1);
        }
        assertThat(stored).as("the MySQL here runs with GTIDs").isNotBlank();
        String missed = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5";
        MariaDbDriftIT.setStoredGtids(db, config.name(), stored + "," + missed);
        assertThatThrownBy(() -> Router.start(config)).isInstanceOf(io.outboxrouter.cdc.SourceSetupException.class)
                .hasMessageContaining("stored GTID set names transactions this server has not executed (" + missed + ")")
                .hasMessageContaining("another history").hasMessageContaining("--accept-gap");
        MariaDbDriftIT.setStoredGtids(db, config.name(), stored);
        try (var router = Router.start(config)) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
        }
    }
}
