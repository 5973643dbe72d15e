package io.outboxrouter.audit;

import static org.assertj.core.api.Assertions.assertThat;

import io.outboxrouter.audit.AuditReads.Bound;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the audit reads from the offsets table: where a stream starts, and how far rows are proven published. */
class AuditStateTest {

    @Test
    void theStartingCommitTimeComesFromTheConnectorsOffset() {
        assertThat(StartingPoint.commitMicros(Map.of("[\"router\",{\"server\":\"r\"}]",
                "{\"lsn\":123,\"txId\":7,\"ts_usec\":1764646200123456}"))).hasValue(1764646200123456L);
        assertThat(StartingPoint.commitMicros(Map.of("[\"router\",{\"server\":\"r\"}]",
                "{\"file\":\"binlog.000002\",\"pos\":400,\"ts_sec\":1764646200}"))).hasValue(1764646200_000_000L);
        assertThat(StartingPoint.commitMicros(Map.of("[\"router\",{\"server\":\"r\"}]", "{\"lsn\":123}"))).isEmpty();
        assertThat(StartingPoint.commitMicros(Map.of("k", "not json"))).isEmpty();
        assertThat(StartingPoint.commitMicros(Map.of())).isEmpty();
    }

    @Test
    void provenThroughReadsBackAsWritten() {
        var through = new LinkedHashMap<String, Bound>();
        through.put("public.outbox", new Bound("2026-12-02 03:30:00.123456+00", 1764646200123456L));
        through.put("shop.outbox", new Bound("2026-12-02 03:30:00", 1764646200000000L));
        String json = AuditedThrough.format(through);
        assertThat(AuditedThrough.parse(json)).isEqualTo(through);
        assertThat(AuditedThrough.provenThrough(json)).containsEntry("public.outbox", "2026-12-02 03:30:00.123456+00").hasSize(2);
        assertThat(AuditedThrough.parse(null)).isEmpty();
        assertThat(AuditedThrough.parse("{broken")).isEmpty();
    }

    @Test
    void theTopicsOfRecentRunsAreKeptNewestFirstBesideWhatIsProven() {
        var through = Map.of("public.outbox", new Bound("2026-12-02 03:30:00+00", 1764646200000000L));
        var topics = AuditedThrough.withTopics("(b\\..*)|\\Qdlq\\E", java.util.List.of("(a\\..*)|\\Qdlq\\E", "(b\\..*)|\\Qdlq\\E"));
        assertThat(topics).containsExactly("(b\\..*)|\\Qdlq\\E", "(a\\..*)|\\Qdlq\\E");
        String json = AuditedThrough.format(through, topics);
        assertThat(AuditedThrough.topics(json)).isEqualTo(topics);
        assertThat(AuditedThrough.parse(json)).as("the topics are not a table").isEqualTo(through);
        assertThat(AuditedThrough.topics(AuditedThrough.format(through))).isEmpty();
        assertThat(AuditedThrough.topics("{broken")).isEmpty();
        var many = java.util.stream.IntStream.range(0, 20).mapToObj(i -> "t" + i).toList();
        assertThat(AuditedThrough.withTopics("own", many)).hasSize(AuditedThrough.TOPICS_KEPT).startsWith("own", "t0");
    }
}
