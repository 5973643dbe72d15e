package io.outboxrouter.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.TestServers;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the router checks on a MariaDB server before it starts. */
class MariaDbRouterBehaviourIT {

    private static String yaml(MariaDbOutbox db) {
        return "name: " + OutboxContract.unique("checks").replace('_', '-') + "\n" + db.sourceYaml()
                + "kafka: { bootstrap-servers: \"" + OutboxContract.kafka() + "\" }\nhttp: { enabled: false }\n";
    }

    @Test
    void aNativeUuidColumnIsRefusedWithTheFix() throws Exception {
        var db = new MariaDbOutbox(TestServers.mariadb(), OutboxContract.unique("uuidcol"));
        db.execute("ALTER TABLE outbox MODIFY id uuid NOT NULL");
        var config = RouterConfigLoader.parse(yaml(db), Map.of());
        assertThatThrownBy(() -> Router.start(config)).isInstanceOf(SourceSetupException.class)
                .hasMessageContaining("column " + db.outboxTable() + ".id has the native UUID type")
                .hasMessageContaining("ALTER TABLE " + db.outboxTable() + " MODIFY id CHAR(36) NOT NULL");
    }

    @Test
    void binlogSettingsAreCheckedAndEveryProblemNamedAtOnce() throws Exception {
        var db = new MariaDbOutbox(TestServers.mariadb(), OutboxContract.unique("binlogcheck"));
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
