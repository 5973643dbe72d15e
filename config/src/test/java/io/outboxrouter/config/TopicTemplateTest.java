package io.outboxrouter.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class TopicTemplateTest {
    @Test
    void rendersPlaceholdersFromValues() {
        var t = TopicTemplate.parse("outbox.${aggregatetype}.${type}");
        assertThat(t.render(Map.of("aggregatetype", "Order", "type", "Created")::get)).hasValue("outbox.Order.Created");
        assertThat(t.render(Map.of("aggregatetype", "Order")::get)).isEmpty();
    }

    @Test
    void itsPatternMatchesWhatItCanRenderAndNothingElse() {
        var p = TopicTemplate.parse("outbox.${aggregatetype}.v1").pattern();
        assertThat(p.matcher("outbox.Order.v1").matches()).isTrue();
        assertThat(p.matcher("outbox.Order.Line.v1").matches()).isTrue();
        assertThat(p.matcher("outboxXOrderXv1").matches()).as("dots are literal").isFalse();
        assertThat(p.matcher("outbox..v1").matches()).as("a placeholder is not empty").isFalse();
        assertThat(TopicTemplate.parse("orders").pattern().matcher("orders").matches()).isTrue();
    }

    @Test
    void legalTopicNames() {
        assertThat(TopicTemplate.isLegalTopic("outbox.event.Order_1-x")).isTrue();
        assertThat(TopicTemplate.isLegalTopic("outbox.event.Order Line")).isFalse();
        assertThat(TopicTemplate.isLegalTopic("")).isFalse();
        assertThat(TopicTemplate.isLegalTopic("..")).isFalse();
        assertThat(TopicTemplate.isLegalTopic("x".repeat(250))).isFalse();
    }

    @Test
    void durationsReadAndPrintTheSame() {
        for (String s : new String[] {"10ms", "2s", "5m", "1h", "1500ms"}) {
            assertThat(Durations.format(Durations.parse(s).orElseThrow())).isEqualTo(s);
        }
        assertThat(Durations.parse("PT10S").orElseThrow().toSeconds()).isEqualTo(10);
        assertThat(Durations.parse("500")).isEmpty();
        assertThat(Durations.parse("0")).contains(java.time.Duration.ZERO);
    }
}
