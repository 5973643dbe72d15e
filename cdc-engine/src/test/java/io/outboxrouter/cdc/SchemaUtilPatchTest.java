package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import io.debezium.data.SchemaUtil;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.junit.jupiter.api.Test;

/** The backport of dbz#2492 (io/debezium/data/SchemaUtil.java in this module) is the copy loaded, and renders as before. */
class SchemaUtilPatchTest {

    @Test
    void thePatchedCopyIsLoadedAheadOfDebeziums() throws Exception {
        String from = SchemaUtil.class.getProtectionDomain().getCodeSource().getLocation().toString();
        assertThat(from).as("SchemaUtil loaded from").doesNotContain("debezium-connector-common");
        var writer = Class.forName("io.debezium.data.SchemaUtil$RecordWriter");
        assertThat(writer.getDeclaredFields()).as("no ObjectMapper made per writer")
                .noneMatch(f -> f.getType().getName().equals("com.fasterxml.jackson.databind.ObjectMapper"));
    }

    @Test
    void aKeyRendersAsInDebezium() {
        Schema schema = SchemaBuilder.struct().name("key").field("id", Schema.STRING_SCHEMA).field("n", Schema.INT32_SCHEMA).build();
        var key = new Struct(schema).put("id", "a \"quoted\" id").put("n", 7);
        assertThat(SchemaUtil.asString(key)).isEqualTo("{\"id\" : \"a \\\"quoted\\\" id\", \"n\" : \"7\"}");
    }

    @Test
    void aStringIsEscapedAsJacksonWritesIt() throws Exception {
        String text = "tab\t line\n back\\slash \u0001 caf\u00e9 / \uD83D\uDE00";
        assertThat(SchemaUtil.asString(text)).isEqualTo(new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(text));
    }
}
