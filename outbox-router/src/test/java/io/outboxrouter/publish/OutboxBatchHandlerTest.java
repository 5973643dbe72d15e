package io.outboxrouter.publish;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.RoutingConfig.DeadLetterPolicy;
import io.outboxrouter.config.TopicTemplate;
import io.outboxrouter.kafka.KafkaPublisher;
import io.outboxrouter.kafka.TopicProbe;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.retry.Retry;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.OutboxRouting;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The batch handler on Kafka's MockProducer: policies, too-large refusals, retried batches, and what each outcome counts. */
class OutboxBatchHandlerTest {
    private static final Retry FAST = new Retry(Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofSeconds(5));
    private static final String DEAD_LETTERS = "outbox.dead-letters";

    /** Every producer made, in order; what Kafka "acknowledged" is each one's history. */
    private final List<TestProducer> producers = new ArrayList<>();
    private final RouterMetrics metrics = new RouterMetrics("test");
    /** How many of the next producers fail every send with a timeout (an outage). */
    private int failingProducers;

    @AfterEach
    void closeMetrics() {
        metrics.close();
    }

    /** A MockProducer that refuses records over 100 bytes the way Kafka does, through the callback. */
    private final class TestProducer extends MockProducer<byte[], byte[]> {
        private final boolean failing;

        TestProducer(boolean failing) {
            super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            this.failing = failing;
        }

        @Override
        public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
            RuntimeException error = failing ? new TimeoutException("broker unreachable")
                    : record.value() != null && record.value().length > 100 ? new RecordTooLargeException("record too large") : null;
            if (error != null) {
                callback.onCompletion(null, error);
                return CompletableFuture.failedFuture(error);
            }
            return super.send(record, callback);
        }
    }

    private Producer<byte[], byte[]> newProducer() {
        var p = new TestProducer(failingProducers-- > 0);
        producers.add(p);
        return p;
    }

    private OutboxBatchHandler handler(DeadLetterPolicy policy) {
        var outbox = new OutboxConfig(OutboxConfig.Columns.DEFAULTS, Map.of());
        var routing = new OutboxRouting(List.of("public.outbox"), outbox, TopicTemplate.parse("outbox.event.${aggregatetype}"));
        var sink = new KafkaPublisher(this::newProducer, FAST, metrics, TopicProbe.NONE);
        return new OutboxBatchHandler(routing, policy, new DeadLetters(DEAD_LETTERS, outbox.columns()), sink, metrics);
    }

    private static final AtomicInteger SEQ = new AtomicInteger();

    private static ChangeEvent event(String aggregateId, String payload) {
        var row = new LinkedHashMap<String, Object>();
        row.put("id", "id-" + SEQ.incrementAndGet());
        row.put("aggregatetype", "Order");
        row.put("aggregateid", aggregateId);
        row.put("type", "OrderPlaced");
        row.put("payload", payload);
        return new ChangeEvent("public.outbox", ChangeEvent.Operation.INSERT, row, "lsn:0/" + SEQ.get(), Instant.now());
    }

    private List<String> acknowledged() {
        return producers.get(producers.size() - 1).history().stream()
                .map(r -> r.topic() + ":" + (r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8))).toList();
    }

    @Test
    void publishesEveryEventInOrderAndCountsIt() throws Exception {
        handler(DeadLetterPolicy.DEAD_LETTER).handle(List.of(event("1", "{}"), event("2", "{}"), event("1", "{}")));
        assertThat(acknowledged()).containsExactly("outbox.event.Order:1", "outbox.event.Order:2", "outbox.event.Order:1");
        assertThat(metrics.publishedTotal()).isEqualTo(3);
        assertThat(metrics.deadLetteredTotal()).isZero();
        assertThat(metrics.scrape()).contains("outbox_router_batch_size_count{router=\"test\"} 1");
    }

    @Test
    void theIdsOfTheRowsAcknowledgedOrDeadLetteredAreRecordedForTheAuditAndThoseOfAFailedBatchAreNot() throws Exception {
        var delivered = new io.outboxrouter.audit.DeliveredIds(1_000);
        failingProducers = Integer.MAX_VALUE;
        var outbox = new OutboxConfig(OutboxConfig.Columns.DEFAULTS, Map.of());
        var routing = new OutboxRouting(List.of("public.outbox"), outbox, TopicTemplate.parse("outbox.event.${aggregatetype}"));
        var sink = new KafkaPublisher(this::newProducer, new Retry(Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(50)), metrics,
                TopicProbe.NONE);
        var handler = new OutboxBatchHandler(routing, DeadLetterPolicy.DEAD_LETTER, new DeadLetters(DEAD_LETTERS, outbox.columns()), sink, metrics);
        handler.recordDeliveriesIn(delivered);
        var failed = event("1", "{}");
        assertThatThrownBy(() -> handler.handle(List.of(failed))).isInstanceOf(Retry.GaveUpException.class);
        failingProducers = 0;
        var published = event("2", "{}");
        var deadLettered = event(null, "{}");
        handler.handle(List.of(published, deadLettered));
        assertThat(delivered.contains(io.outboxrouter.audit.DeliveredIds.hash((String) published.row().get("id")))).isTrue();
        assertThat(delivered.contains(io.outboxrouter.audit.DeliveredIds.hash((String) deadLettered.row().get("id")))).isTrue();
        assertThat(delivered.contains(io.outboxrouter.audit.DeliveredIds.hash((String) failed.row().get("id"))))
                .as("a batch Kafka did not acknowledge delivered nothing").isFalse();
        assertThat(delivered.size()).isEqualTo(2);
    }

    @Test
    void aRowThatCannotBeRoutedIsDeadLetteredInItsPlaceUnderTheDefaultPolicy() throws Exception {
        handler(DeadLetterPolicy.DEAD_LETTER).handle(List.of(event("1", "{}"), event(null, "{}"), event("2", "{}")));
        assertThat(acknowledged()).containsExactly("outbox.event.Order:1", DEAD_LETTERS + ":null", "outbox.event.Order:2");
        assertThat(metrics.publishedTotal()).isEqualTo(2);
        assertThat(metrics.deadLetteredTotal()).isEqualTo(1);
        assertThat(metrics.scrape()).contains("outbox_router_dead_letters_total{reason=\"null_aggregate_id\",router=\"test\"} 1.0");
    }

    @Test
    void theSkipPolicyPublishesNothingForTheRowButCountsIt() throws Exception {
        handler(DeadLetterPolicy.SKIP).handle(List.of(event(null, "{}"), event("2", "{}")));
        assertThat(acknowledged()).containsExactly("outbox.event.Order:2");
        assertThat(metrics.skippedTotal()).isEqualTo(1);
        assertThat(metrics.deadLetteredTotal()).isZero();
    }

    @Test
    void theFailPolicyStopsTheBatchBeforeAnythingIsSent() {
        var handler = handler(DeadLetterPolicy.FAIL);
        assertThatThrownBy(() -> handler.handle(List.of(event("1", "{}"), event(null, "{}"))))
                .isInstanceOf(UnroutableEventException.class)
                .hasMessageContaining("aggregate id (column aggregateid) is null").hasMessageContaining("policy=fail");
        assertThat(acknowledged()).isEmpty();
        assertThat(metrics.publishedTotal()).isZero();
    }

    @Test
    void aRecordKafkaRefusesAsTooLargeIsDeadLetteredWithoutItsPayload() throws Exception {
        String big = "{\"x\":\"" + "a".repeat(200) + "\"}";
        handler(DeadLetterPolicy.DEAD_LETTER).handle(List.of(event("1", "{}"), event("2", big), event("3", "{}")));
        var sent = producers.get(0).history();
        assertThat(acknowledged()).containsExactly("outbox.event.Order:1", "outbox.event.Order:3", DEAD_LETTERS + ":2");
        var letter = sent.get(2);
        assertThat(letter.value()).isNull();
        assertThat(new String(letter.headers().lastHeader("dead-letter.payload-bytes").value(), StandardCharsets.UTF_8))
                .isEqualTo(Integer.toString(big.length()));
        assertThat(new String(letter.headers().lastHeader(DeadLetters.HEADER_REASON).value(), StandardCharsets.UTF_8))
                .contains("Kafka refused the record");
        assertThat(metrics.publishedTotal()).isEqualTo(2);
        assertThat(metrics.scrape()).contains("outbox_router_dead_letters_total{reason=\"too_large\",router=\"test\"} 1.0");
    }

    /** A handler whose sink refuses records over 450 bytes before sending (the producer's max.request.size). */
    private OutboxBatchHandler handlerWithRequestLimit(DeadLetterPolicy policy) {
        var outbox = new OutboxConfig(OutboxConfig.Columns.DEFAULTS, Map.of());
        var routing = new OutboxRouting(List.of("public.outbox"), outbox, TopicTemplate.parse("outbox.event.${aggregatetype}"));
        var sink = new KafkaPublisher(this::newProducer, FAST, metrics, TopicProbe.NONE, 450);
        return new OutboxBatchHandler(routing, policy, new DeadLetters(DEAD_LETTERS, outbox.columns()), sink, metrics);
    }

    @Test
    void aRecordOverTheRequestLimitIsDecidedBeforeSendingSoItsDeadLetterKeepsItsPlace() throws Exception {
        handlerWithRequestLimit(DeadLetterPolicy.DEAD_LETTER).handle(List.of(event("1", "{}"), event("1", "x".repeat(300)), event("1", "{}")));
        assertThat(acknowledged()).containsExactly("outbox.event.Order:1", DEAD_LETTERS + ":1", "outbox.event.Order:1");
        assertThat(metrics.scrape()).contains("outbox_router_dead_letters_total{reason=\"too_large\",router=\"test\"} 1.0");
    }

    @Test
    void underTheFailPolicyARecordOverTheRequestLimitStopsBeforeAnythingIsSentWithAFixThatWorks() {
        var handler = handlerWithRequestLimit(DeadLetterPolicy.FAIL);
        assertThatThrownBy(() -> handler.handle(List.of(event("1", "{}"), event("1", "x".repeat(300)), event("1", "{}"))))
                .isInstanceOf(UnroutableEventException.class).hasMessageContaining("max.request.size (450)")
                .hasMessageContaining("set routing.dead-letters.policy to dead-letter").hasMessageContaining("raise kafka.producer max.request.size");
        assertThat(acknowledged()).as("nothing after it, nor before it, was published").isEmpty();
    }

    @Test
    void aTooLargeRecordUnderTheSkipPolicyIsCountedAsSkipped() throws Exception {
        handler(DeadLetterPolicy.SKIP).handle(List.of(event("2", "x".repeat(200)), event("3", "{}")));
        assertThat(acknowledged()).containsExactly("outbox.event.Order:3");
        assertThat(metrics.scrape()).contains("outbox_router_skipped_total{reason=\"too_large\",router=\"test\"} 1.0");
    }

    @Test
    void aFailedBatchIsSentAgainWholeAndInOrderOnANewProducerAndTheRetryIsCounted() throws Exception {
        failingProducers = 2; // the first producer and its replacement fail: an outage of two attempts
        handler(DeadLetterPolicy.DEAD_LETTER).handle(List.of(event("1", "{}"), event("2", "{}")));
        assertThat(producers).hasSize(3);
        assertThat(acknowledged()).containsExactly("outbox.event.Order:1", "outbox.event.Order:2");
        assertThat(metrics.publishedTotal()).isEqualTo(2);
        assertThat(metrics.retriesTotal()).isEqualTo(2);
        assertThat(metrics.scrape()).contains("outbox_router_retries_total{operation=\"kafka_publish\",router=\"test\"} 2.0");
    }

    @Test
    void aChangeFromATableNoOutboxIsConfiguredForIsCountedNotPublished() throws Exception {
        var other = new ChangeEvent("public.Outbox_v2", ChangeEvent.Operation.INSERT, event("1", "{}").row(), "lsn:0/9", Instant.now());
        handler(DeadLetterPolicy.DEAD_LETTER).handle(List.of(other, event("2", "{}")));
        assertThat(acknowledged()).containsExactly("outbox.event.Order:2");
        assertThat(metrics.scrape()).contains("outbox_router_unrouted_changes_total{router=\"test\",table=\"public.Outbox_v2\"} 1.0");
    }

    @Test
    void anOutageLongerThanTheBudgetFailsTheBatchWithoutCountingAnythingPublished() {
        failingProducers = Integer.MAX_VALUE;
        var outbox = new OutboxConfig(OutboxConfig.Columns.DEFAULTS, Map.of());
        var routing = new OutboxRouting(List.of("public.outbox"), outbox, TopicTemplate.parse("t"));
        var sink = new KafkaPublisher(this::newProducer, new Retry(Duration.ofMillis(1), Duration.ofMillis(2), Duration.ofMillis(50)), metrics,
                TopicProbe.NONE);
        var handler = new OutboxBatchHandler(routing, DeadLetterPolicy.DEAD_LETTER, new DeadLetters(DEAD_LETTERS, outbox.columns()), sink, metrics);
        assertThatThrownBy(() -> handler.handle(List.of(event("1", "{}")))).isInstanceOf(Retry.GaveUpException.class)
                .hasMessageContaining("giving up after").hasMessageContaining("broker unreachable");
        assertThat(metrics.publishedTotal()).isZero();
        assertThat(metrics.retriesTotal()).isPositive();
    }
}
