package io.outboxrouter.change;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

class ChangeEventTest {

    private static ChangeEvent fromBinlog(Integer row) {
        var source = SchemaBuilder.struct().field("file", Schema.STRING_SCHEMA).field("row", Schema.OPTIONAL_INT32_SCHEMA).build();
        var envelope = SchemaBuilder.struct().field("source", source).build();
        var value = new Struct(envelope).put("source", new Struct(source).put("file", "mysql-bin.000003").put("row", row));
        var record = new SourceRecord(Map.of(), Map.of(), "t", envelope, value);
        return new ChangeEvent("app.outbox", ChangeEvent.Operation.INSERT, Map.of(), "binlog:mysql-bin.000003:4711", null, record);
    }

    @Test
    void eachRowOfAMultiRowBinlogEventHasAPositionOfItsOwn() {
        assertThat(fromBinlog(0).rowPosition()).isEqualTo("binlog:mysql-bin.000003:4711,row:0");
        assertThat(fromBinlog(2).rowPosition()).isEqualTo("binlog:mysql-bin.000003:4711,row:2");
        assertThat(fromBinlog(null).rowPosition()).as("no row index given").isEqualTo("binlog:mysql-bin.000003:4711");
    }

    @Test
    void aChangeWithoutAConnectorRecordIsAtItsPosition() {
        var change = new ChangeEvent("public.outbox", ChangeEvent.Operation.INSERT, Map.of("id", "e1"), "lsn:0/1A2B3C8", null);
        assertThat(change.rowPosition()).isEqualTo("lsn:0/1A2B3C8");
    }
}
