package io.outboxrouter.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/** Which of Debezium's skipped-statement warnings stop the router: INSERTs into an outbox table, of its own connector. */
class StatementInsertWatchTest {
    private final List<String> stops = new ArrayList<>();
    private final StatementInsertWatch watch = StatementInsertWatch.attach("orders", List.of("shop.outbox", "shop.outbox_binary"),
            stops::add).orElseThrow();

    @AfterEach
    void detach() {
        watch.detach();
        MDC.clear();
    }

    private void skipped(String connector, String sql) {
        MDC.put("dbz.connectorLogicalName", connector);
        LoggerFactory.getLogger(StatementInsertWatch.READER_LOGGER).warn("Received DML '{}' for processing, binlog probably contains "
                + "events generated with statement or mixed based replication format", sql);
    }

    @Test
    void anInsertIntoAnOutboxTableStopsTheRouterOnceNamingTheStatement() {
        skipped("orders", "INSERT INTO outbox (id, aggregatetype) VALUES ('e-1', 'Order')");
        skipped("orders", "INSERT INTO outbox (id, aggregatetype) VALUES ('e-2', 'Order')");
        assertThat(stops).hasSize(1);
        assertThat(stops.get(0)).contains("an INSERT into outbox table shop.outbox reached the binlog in statement format")
                .contains("VALUES ('e-1', 'Order')").contains("--accept-gap").contains("replay");
    }

    @Test
    void everySpellingOfAnInsertIntoTheTableCounts() {
        for (String sql : List.of("insert ignore into `shop`.`outbox` values ('e')", "REPLACE outbox_binary SET id = 'e'",
                "SET STATEMENT max_statement_time=60 FOR INSERT INTO shop.outbox VALUES ('e')",
                "  INSERT LOW_PRIORITY INTO `OUTBOX` SELECT * FROM staging", "INSERT /*+ NO_RANGE_OPTIMIZATION(t) */ INTO outbox VALUES ('e')")) {
            stops.clear();
            var again = StatementInsertWatch.attach("orders-" + sql.length(), List.of("shop.outbox", "shop.outbox_binary"),
                    stops::add).orElseThrow();
            try {
                skipped("orders-" + sql.length(), sql);
            } finally {
                again.detach();
            }
            assertThat(stops).as(sql).hasSize(1);
        }
    }

    @Test
    void otherStatementsTablesAndConnectorsDoNot() {
        skipped("orders", "UPDATE outbox SET payload = '{}' WHERE id = 'e'");
        skipped("orders", "DELETE FROM outbox WHERE id = 'e'");
        skipped("orders", "INSERT INTO other.outbox VALUES ('e')");
        skipped("orders", "INSERT INTO outbox_archive VALUES ('e')");
        skipped("payments", "INSERT INTO outbox VALUES ('e')");
        LoggerFactory.getLogger(StatementInsertWatch.READER_LOGGER).warn("Some other warning about INSERT INTO outbox");
        assertThat(stops).isEmpty();
    }
}
