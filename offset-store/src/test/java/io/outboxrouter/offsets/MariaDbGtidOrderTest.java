package io.outboxrouter.offsets;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.connector.mariadb.gtid.MariaDbGtidSetFactory;
import io.debezium.connector.mariadb.history.MariaDbHistoryRecordComparator;
import io.debezium.relational.history.HistoryRecord;
import io.debezium.relational.history.HistoryRecordComparator;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MariaDbGtidOrderTest {
    private final HistoryRecordComparator connectors = new MariaDbHistoryRecordComparator(null, new MariaDbGtidSetFactory());
    private final HistoryRecordComparator order = MariaDbGtidOrder.around(connectors);

    private static HistoryRecord at(String gtids) {
        Map<String, Object> position = new HashMap<>();
        position.put("file", "mariadb-bin.000001");
        position.put("pos", 4L);
        if (gtids != null) {
            position.put("gtids", gtids);
        }
        return new HistoryRecord(Map.of("server", "router"), position, "db", null, "CREATE TABLE outbox (id INT)", null, java.time.Instant.EPOCH);
    }

    @Test
    void aTableShapeRecordedOnTheFormerPrimaryIsBeforeAPositionOnThePromotedReplica() {
        assertThat(connectors.isAtOrBefore(at("0-1-8"), at("0-2-657"))).as("the connector's own comparison, server id included").isFalse();
        assertThat(order.isAtOrBefore(at("0-1-8"), at("0-2-657"))).isTrue();
        assertThat(order.isAtOrBefore(at("0-1-8,0-2-3"), at("0-2-657"))).isTrue();
    }

    @Test
    void aShapeRecordedLaterInTheDomainIsAfter() {
        assertThat(order.isAtOrBefore(at("0-2-700"), at("0-1-657"))).isFalse();
        assertThat(order.isAtOrBefore(at("1-1-5"), at("0-1-657"))).as("a domain the position does not know").isFalse();
        assertThat(order.isAtOrBefore(at("0-1-5,1-1-9"), at("0-2-657,1-3-8"))).isFalse();
        assertThat(order.isAtOrBefore(at("0-1-5,1-1-7"), at("0-2-657,1-3-8"))).isTrue();
    }

    @Test
    void theSameTransactionComparesAsTheConnectorDoes() {
        assertThat(order.isAtOrBefore(at("0-1-8"), at("0-1-8"))).isEqualTo(connectors.isAtOrBefore(at("0-1-8"), at("0-1-8"))).isTrue();
    }

    @Test
    void positionsWithoutMariaDbGtidsAreTheConnectorsToCompare() {
        assertThat(order.isAtOrBefore(at(null), at("0-1-8"))).isEqualTo(connectors.isAtOrBefore(at(null), at("0-1-8")));
        assertThat(order.isAtOrBefore(at("0-1-8"), at(null))).isFalse();
        assertThat(MariaDbGtidOrder.perDomain("0-1-434, 0-2-563,1-1-3")).isEqualTo("0-0-563,1-0-3");
    }
}
