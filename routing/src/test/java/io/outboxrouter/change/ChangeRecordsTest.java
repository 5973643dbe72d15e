package io.outboxrouter.change;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

class ChangeRecordsTest {
    private static final Schema SOURCE = SchemaBuilder.struct().field("schema", Schema.STRING_SCHEMA).field("table", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA).build();
    private static final Schema ROW = SchemaBuilder.struct().field("id", Schema.STRING_SCHEMA).field("payload", Schema.OPTIONAL_BYTES_SCHEMA)
            .build();
    private static final Schema ENVELOPE = SchemaBuilder.struct().field("op", Schema.STRING_SCHEMA).field("source", SOURCE)
            .field("before", SchemaBuilder.struct().optional().field("id", Schema.STRING_SCHEMA).build()).field("after", ROW).build();

    private static SourceRecord insert(ByteBuffer payload) {
        var value = new Struct(ENVELOPE).put("op", "c")
                .put("source", new Struct(SOURCE).put("schema", "public").put("table", "outbox").put("ts_ms", 1_700_000_000_000L))
                .put("after", new Struct(ROW).put("id", "e1").put("payload", payload));
        return new SourceRecord(Map.of(), Map.of(), "router.public.outbox", ENVELOPE, value);
    }

    private static byte[] payloadOf(SourceRecord record) {
        var event = new ChangeRecords(s -> "pos").toEvent(record).orElseThrow();
        assertThat(event.table()).isEqualTo("public.outbox");
        return (byte[]) event.row().get("payload");
    }

    @Test
    void aValueThatWrapsItsWholeArrayIsSharedNotCopied() {
        byte[] bytes = "{\"large\": true}".getBytes(StandardCharsets.UTF_8);
        assertThat(payloadOf(insert(ByteBuffer.wrap(bytes)))).as("a batch of large rows is not held twice").isSameAs(bytes);
    }

    @Test
    void aValueThatIsPartOfAnArrayIsCopiedToItsOwn() {
        byte[] bytes = "xx{\"part\": 1}yy".getBytes(StandardCharsets.UTF_8);
        var slice = ByteBuffer.wrap(bytes, 2, bytes.length - 4);
        assertThat(payloadOf(insert(slice))).isEqualTo("{\"part\": 1}".getBytes(StandardCharsets.UTF_8)).isNotSameAs(bytes);
        assertThat(payloadOf(insert(slice.slice()))).as("a slice at an offset of its array").isEqualTo("{\"part\": 1}".getBytes(StandardCharsets.UTF_8));
        assertThat(payloadOf(insert(ByteBuffer.wrap(bytes).asReadOnlyBuffer()))).as("read-only: no array to share").isEqualTo(bytes)
                .isNotSameAs(bytes);
    }
}
