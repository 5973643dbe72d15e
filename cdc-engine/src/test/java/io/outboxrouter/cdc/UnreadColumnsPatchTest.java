package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.connector.postgresql.PostgresChangeRecordEmitter;
import io.debezium.relational.Column;
import io.debezium.relational.ColumnFilterMode;
import io.debezium.relational.Key;
import io.debezium.relational.Table;
import io.debezium.relational.TableId;
import io.debezium.relational.Tables.ColumnNameFilterFactory;
import java.sql.Types;
import org.junit.jupiter.api.Test;

/**
 * The patched PostgresChangeRecordEmitter (io/debezium/connector/postgresql in this module) is the copy loaded, and
 * leaves unresolved exactly the columns no record carries: out of the column filter and not in the key.
 */
class UnreadColumnsPatchTest {
    private final Table outbox = Table.editor().tableId(new TableId(null, "public", "outbox"))
            .addColumn(column("id", 1, Types.OTHER, "uuid"))
            .addColumn(column("aggregatetype", 2, Types.VARCHAR, "varchar"))
            .addColumn(column("aggregateid", 3, Types.VARCHAR, "varchar"))
            .addColumn(column("type", 4, Types.VARCHAR, "varchar"))
            .addColumn(column("payload", 5, Types.OTHER, "jsonb"))
            .addColumn(column("created_at", 6, Types.TIMESTAMP_WITH_TIMEZONE, "timestamptz"))
            .addColumn(column("tenant", 7, Types.VARCHAR, "varchar"))
            .setPrimaryKeyNames("id")
            .create();

    private static Column column(String name, int position, int jdbcType, String typeName) {
        return Column.editor().name(name).position(position).jdbcType(jdbcType).type(typeName).optional(true).create();
    }

    @Test
    void thePatchedCopyIsLoadedAheadOfDebeziums() throws Exception {
        String from = PostgresChangeRecordEmitter.class.getProtectionDomain().getCodeSource().getLocation().toString();
        assertThat(from).as("PostgresChangeRecordEmitter loaded from").doesNotContain("debezium-connector-postgres");
        assertThat(PostgresChangeRecordEmitter.class.getField("SKIPS_UNREAD_COLUMNS").getBoolean(null)).isTrue(); // not inlined
    }

    @Test
    void columnsOutOfTheIncludeListAreNotResolved() {
        // The router's include list: the outbox columns it reads (here without the key column id, which the key carries).
        var filter = ColumnNameFilterFactory.createIncludeListFilter(
                "public\\.outbox\\.(aggregatetype|aggregateid|type|payload|tenant)", ColumnFilterMode.SCHEMA);
        boolean[] unread = PostgresChangeRecordEmitter.unreadPositions(outbox, filter, null);
        assertThat(unread).containsExactly(false, false, false, false, false, true, false);
    }

    @Test
    void anExcludeListLeavesOutWhatItNames() {
        var filter = ColumnNameFilterFactory.createExcludeListFilter("public\\.outbox\\.(created_at|tenant)", ColumnFilterMode.SCHEMA);
        assertThat(PostgresChangeRecordEmitter.unreadPositions(outbox, filter, null))
                .containsExactly(false, false, false, false, false, true, true);
    }

    @Test
    void aColumnOfACustomKeyIsResolvedWhateverTheFilterSays() {
        var filter = ColumnNameFilterFactory.createIncludeListFilter("public\\.outbox\\.payload", ColumnFilterMode.SCHEMA);
        Key.KeyMapper byAggregate = Key.CustomKeyMapper.getInstance("public.outbox:aggregateid",
                (io.debezium.relational.Selectors.TableIdToStringMapper) null);
        assertThat(PostgresChangeRecordEmitter.unreadPositions(outbox, filter, byAggregate))
                .as("aggregateid is the key; id is not, once a custom key replaces the primary key")
                .containsExactly(true, true, false, true, false, true, true);
    }
}
