package io.outboxrouter.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.SourceKind;
import java.util.List;
import org.junit.jupiter.api.Test;

class SchemaDdlTest {
    private static final OutboxConfig.Columns COLUMNS = new OutboxConfig.Columns("event_id", "kind", "entity", "event", "body");

    @Test
    void postgresUsesTheConfiguredNamesPublicationAndRole() {
        var ddl = new SchemaDdl(SourceKind.POSTGRES, List.of("sales.outbox"), COLUMNS, List.of("tenant"), "orders_pub", "orders_router",
                java.util.Optional.of("sales.router_heartbeat")).all();
        assertThat(ddl).contains("CREATE TABLE sales.outbox (", "event_id uuid PRIMARY KEY", "entity VARCHAR(255) NOT NULL",
                "body jsonb", "tenant VARCHAR(512)", "CREATE INDEX outbox_created_at ON sales.outbox (created_at);",
                "CREATE PUBLICATION orders_pub FOR TABLE sales.outbox, sales.router_heartbeat;",
                "CREATE TABLE IF NOT EXISTS sales.router_heartbeat (router_name varchar(200) PRIMARY KEY",
                "CREATE ROLE orders_router WITH LOGIN REPLICATION", "GRANT SELECT ON sales.outbox TO orders_router;",
                "GRANT CREATE ON SCHEMA sales TO orders_router;", "wal_level = logical");
        // the role exists before anything is granted to it
        assertThat(ddl.indexOf("GRANT SELECT, INSERT, UPDATE ON sales.router_heartbeat TO orders_router;"))
                .isGreaterThan(ddl.indexOf("CREATE ROLE orders_router"));
    }

    @Test
    void shardsGetAPublicationEachWithTheirRowsInsertsOnly() {
        var ddl = new SchemaDdl(SourceKind.POSTGRES, List.of("sales.outbox"), COLUMNS, List.of(), "orders_pub", "orders_router",
                java.util.Optional.of("sales.router_heartbeat"), "orders-router", 2).all();
        assertThat(ddl).contains(
                "CREATE PUBLICATION orders_pub_shard_0_of_2 FOR TABLE sales.outbox (event_id, kind, entity, event, body) WHERE ((COALESCE(hashtext(entity::text), 0) & 2147483647) % 2 = 0), "
                        + "sales.router_heartbeat WHERE (router_name = 'orders-router-shard-0-of-2') WITH (publish = 'insert');",
                "CREATE PUBLICATION orders_pub_shard_1_of_2 FOR TABLE sales.outbox (event_id, kind, entity, event, body) WHERE ((COALESCE(hashtext(entity::text), 0) & 2147483647) % 2 = 1), "
                        + "sales.router_heartbeat WHERE (router_name = 'orders-router-shard-1-of-2') WITH (publish = 'insert');",
                "GRANT SELECT, INSERT, DELETE ON sales.router_heartbeat TO orders_router;",
                "SELECT (hashtext('<aggregate id>') & 2147483647) % 2")
                .doesNotContain("CREATE PUBLICATION orders_pub FOR");
    }

    @Test
    void aTablelessOutboxGetsTheEmitFunctionAnEmptyPublicationAndNoTableGrants() {
        var ddl = new SchemaDdl(SourceKind.POSTGRES, List.of(), COLUMNS, List.of(), "orders_pub", "orders_router",
                java.util.Optional.empty(), "orders-router", 1, java.util.Optional.of("orders")).all();
        assertThat(ddl).contains("CREATE OR REPLACE FUNCTION public.outbox_emit(aggregatetype text, aggregateid text, type text, payload json,",
                        "pg_logical_emit_message(true, 'orders', json_build_object('id', id,", "CREATE PUBLICATION orders_pub;",
                        "CREATE ROLE orders_router WITH LOGIN REPLICATION", "GRANT CREATE ON SCHEMA public TO orders_router;")
                .doesNotContain("CREATE TABLE", "GRANT SELECT ON");
    }

    @Test
    void binlogSourcesGetCharIdsAndReplicationGrantsButNoPublication() {
        var ddl = new SchemaDdl(SourceKind.MARIADB, List.of("app.outbox"), OutboxConfig.Columns.DEFAULTS, List.of(), "unused", "router", java.util.Optional.empty()).all();
        assertThat(ddl).contains("id CHAR(36) PRIMARY KEY", "payload JSON",
                "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'router'@'%';",
                "GRANT CREATE, INSERT, UPDATE, DELETE ON app.* TO 'router'@'%';", "binlog_format = ROW")
                .doesNotContain("PUBLICATION").doesNotContain(" uuid ");
    }
}
