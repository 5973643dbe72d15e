package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.PostgresServer;
import io.outboxrouter.testing.TestServers;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Changes under a running router that no watch of the router's knows, each losing a row silently before the self-audit:
 * now each stops the router within seconds, naming the row.
 */
class AuditedPathsIT {

    private static RouterConfig config(String name, String sourceYaml, String topics) {
        return RouterConfigLoader.parse("name: " + name + "\n" + sourceYaml + """
                outbox:
                  audit: { interval: 500ms, lag: 1s }
                routing: { topic: "%s.${aggregatetype}" }
                kafka: { bootstrap-servers: "%s" }
                http: { enabled: false }
                """.formatted(topics, OutboxContract.kafka()), Map.of());
    }

    /** Out of the publication and back between two looks of the publication watch: the rows written between are lost. */
    @Test
    void anOutboxTableTakenOutOfThePublicationAndPutBackWhileRunningIsFound() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("flipback"));
        String topics = OutboxContract.unique("flipback");
        var config = config(OutboxContract.unique("flip-back").replace('_', '-'), db.sourceYaml(), topics);
        String publication = config.source().postgres().publication();
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        var after = TestEvent.of("Order", "o-1", 3);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect();
             var st = c.createStatement()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, before);
            c.commit();
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));

            st.execute("ALTER PUBLICATION " + publication + " DROP TABLE public.outbox");
            c.commit();
            db.insert(c, lost);
            c.commit();
            st.execute("ALTER PUBLICATION " + publication + " ADD TABLE public.outbox");
            c.commit();
            db.insert(c, after);
            c.commit();

            assertThat(RouterStops.failure(router)).contains(lost.id().toString());
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());
        }
    }

    /**
     * A shard's row filter changed while it runs (its table taken out of the shard's publication and put back with
     * another filter, in one transaction): the rows the new filter leaves out reach no shard.
     */
    @Test
    void aShardsRowFilterChangedWhileRunningIsFound() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("shardfilter"));
        String topics = OutboxContract.unique("shardfilter");
        String sourceYaml = db.sourceYaml().replace("  tables: [public.outbox, public.outbox_binary]\n",
                "  tables: [public.outbox, public.outbox_binary]\n  postgres:\n    shards: 2\n");
        var config = config(OutboxContract.unique("shard-filter").replace('_', '-'), sourceYaml, topics);
        var before = TestEvent.of("Order", "o-1", 1);
        var written = new java.util.ArrayList<TestEvent>();
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect();
             var st = c.createStatement()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(90))).isTrue();
            db.insert(c, before);
            c.commit();
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));

            String publication;
            String columns;
            try (var rs = st.executeQuery("SELECT pubname, array_to_string(attnames, ', ') FROM pg_publication_tables WHERE pubname LIKE '"
                    + config.source().postgres().publication() + "%' AND tablename = 'outbox' ORDER BY pubname LIMIT 1")) {
                assertThat(rs.next()).as("a shard's publication").isTrue();
                publication = rs.getString(1);
                columns = rs.getString(2);
            }
            st.execute("ALTER PUBLICATION " + publication + " DROP TABLE public.outbox");
            st.execute("ALTER PUBLICATION " + publication + " ADD TABLE public.outbox (" + columns + ") WHERE (false)");
            c.commit();
            for (int i = 0; i < 20; i++) {
                var e = TestEvent.of("Order", "agg-" + i, 1);
                db.insert(c, e);
                c.commit();
                written.add(e);
            }

            String failure = RouterStops.failure(router);
            assertThat(written).as(failure).anyMatch(e -> failure.contains(e.id().toString()));
        }
    }

    /**
     * {@code publish_via_partition_root} turned off under a partitioned outbox: the slot sends its rows under the
     * partition's name, which the router does not capture.
     */
    @Test
    void aPartitionedOutboxWhosePublicationStopsPublishingThroughTheRootIsFound() throws Exception {
        PostgresServer server = TestServers.postgres();
        String database = server.createDatabase(OutboxContract.unique("viaroot"));
        try (var c = server.connect(database); var st = c.createStatement()) {
            st.execute("""
                    CREATE TABLE public.outbox (
                      id uuid NOT NULL,
                      aggregatetype varchar(255) NOT NULL,
                      aggregateid varchar(255) NOT NULL,
                      type varchar(255) NOT NULL,
                      payload jsonb,
                      created_at timestamptz NOT NULL DEFAULT now(),
                      PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)""");
            st.execute("CREATE TABLE public.outbox_rest PARTITION OF public.outbox DEFAULT");
        }
        String topics = OutboxContract.unique("viaroot");
        var config = config(OutboxContract.unique("via-root").replace('_', '-'), """
                source:
                  kind: postgres
                  url: %s
                  user: %s
                  password: %s
                  tables: [public.outbox]
                """.formatted(server.jdbcUrl(database), PostgresServer.USER, PostgresServer.PASSWORD), topics);
        String publication = config.source().postgres().publication();
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config);
             var c = server.connect(database); var st = c.createStatement()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            insert(c, before);
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));

            st.execute("ALTER PUBLICATION " + publication + " SET (publish_via_partition_root = false)");
            insert(c, lost);

            assertThat(RouterStops.failure(router)).contains(lost.id().toString());
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());
        }
    }

    /**
     * Postgres refuses to change the type of a column a publication's column list names. The migration docs/database-changes.md
     * gives, in one transaction (the table taken out of the publication, the column changed, the table put back with its
     * list), runs under a streaming router without stopping it or losing the rows written around it.
     */
    @Test
    void aColumnTypeChangeInTheDocumentedTransactionGoesThroughWithoutAStopOrALoss() throws Exception {
        var db = new PostgresOutbox(TestServers.postgres(), OutboxContract.unique("migrate"));
        String topics = OutboxContract.unique("migrate");
        var config = config(OutboxContract.unique("migrate").replace('_', '-'), db.sourceYaml(), topics);
        String publication = config.source().postgres().publication();
        var before = TestEvent.of("Order", "o-1", 1);
        var after = TestEvent.of("Order", "o-1", 2);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect();
             var st = c.createStatement()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, before);
            c.commit();
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));
            String columns;
            try (var rs = st.executeQuery("SELECT string_agg(a.attname, ', ' ORDER BY a.attnum) FROM pg_publication_rel r "
                    + "JOIN pg_publication p ON p.oid = r.prpubid JOIN pg_attribute a ON a.attrelid = r.prrelid "
                    + "AND a.attnum = ANY (r.prattrs) WHERE p.pubname = '" + publication + "' AND r.prrelid = 'public.outbox'::regclass")) {
                rs.next();
                columns = rs.getString(1);
            }
            c.commit();
            assertThat(columns).as("the router's publication lists the columns it reads").contains("payload").doesNotContain("created_at");

            st.execute("ALTER PUBLICATION " + publication + " DROP TABLE public.outbox");
            st.execute("ALTER TABLE public.outbox ALTER COLUMN payload TYPE json USING payload::json");
            st.execute("ALTER PUBLICATION " + publication + " ADD TABLE public.outbox (" + columns + ")");
            c.commit();
            db.insert(c, after);
            c.commit();

            kafka.awaitIds(Set.of(after.id()), Duration.ofSeconds(60));
            // Long enough for the publication watch (every 2 s) and the audit (every 0.5 s, rows 1 s old) to have looked.
            org.awaitility.Awaitility.await().pollDelay(Duration.ofSeconds(5)).until(() -> true);
            assertThat(router.completion()).isNotDone();
            assertThat(router.isReady()).isTrue();
        }
    }

    private static void insert(java.sql.Connection c, TestEvent e) throws java.sql.SQLException {
        try (var ps = c.prepareStatement("INSERT INTO public.outbox (id, aggregatetype, aggregateid, type, payload) VALUES (?::uuid, ?, ?, ?, ?::jsonb)")) {
            ps.setString(1, e.id().toString());
            ps.setString(2, e.aggregateType());
            ps.setString(3, e.aggregateId());
            ps.setString(4, e.type());
            ps.setString(5, e.payload());
            ps.execute();
        }
    }

    /**
     * A statement-format INSERT that begins with a comment (as Hibernate's {@code use_sql_comments} writes them): Debezium
     * hands it to its DDL parser without the warning the statement watch listens for.
     */
    @Test
    void aStatementFormatInsertBehindACommentIsFound() throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("commented"));
        String topics = OutboxContract.unique("commented");
        var config = config(OutboxContract.unique("commented").replace('_', '-'), db.sourceYaml(), topics);
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        var after = TestEvent.of("Order", "o-2", 1);
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect();
             var st = c.createStatement()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, before);
            c.commit();
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));

            st.execute("SET SESSION binlog_format = 'STATEMENT'");
            st.execute("/* update Order#42 */ INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload) VALUES ('" + lost.id()
                    + "', 'Order', 'o-1', 'OrderChanged', '{\"seq\": 2}')");
            c.commit();
            st.execute("SET SESSION binlog_format = 'ROW'");
            db.insert(c, after);
            c.commit();

            assertThat(RouterStops.failure(router)).contains(lost.id().toString());
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());
        }
    }

    /**
     * Rows loaded from a file in statement format ({@code LOAD DATA} under {@code binlog_format = STATEMENT}): the binlog
     * holds the file's contents and the statement, not rows, and Debezium passes over it without the warning the statement
     * watch listens for.
     */
    @Test
    void aStatementFormatLoadDataIsFound(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        var db = BinlogOutbox.mariadb(OutboxContract.unique("loaddata"));
        String topics = OutboxContract.unique("loaddata");
        var config = config(OutboxContract.unique("loaddata").replace('_', '-'), db.sourceYaml(), topics);
        var before = TestEvent.of("Order", "o-1", 1);
        var lost = TestEvent.of("Order", "o-1", 2);
        var after = TestEvent.of("Order", "o-2", 1);
        var rows = java.nio.file.Files.writeString(dir.resolve("rows.tsv"), lost.id() + "\tOrder\to-1\tOrderChanged\t{\"seq\": 2}\n");
        try (var kafka = new KafkaEvents(OutboxContract.kafka(), topics + "\\..*"); var router = Router.start(config); var c = db.connect();
             var loader = db.connect("?allowLocalInfile=true"); var st = loader.createStatement()) {
            assertThat(router.awaitStreaming(Duration.ofSeconds(60))).isTrue();
            db.insert(c, before);
            c.commit();
            kafka.awaitIds(Set.of(before.id()), Duration.ofSeconds(60));

            st.execute("SET SESSION binlog_format = 'STATEMENT'");
            st.execute("LOAD DATA LOCAL INFILE '" + rows + "' INTO TABLE outbox (id, aggregatetype, aggregateid, type, payload)");
            loader.commit();
            db.insert(c, after);
            c.commit();

            assertThat(RouterStops.failure(router)).contains(lost.id().toString());
            assertThat(kafka.settle(Duration.ofSeconds(1))).extracting(KafkaEvents.Received::id).doesNotContain(lost.id());
        }
    }
}
