package io.outboxrouter.routing;

import io.outboxrouter.cdc.ChangeEvent;
import io.outboxrouter.cdc.ChangeHandler;
import io.outboxrouter.config.RoutingConfig.DeadLetterPolicy;
import io.outboxrouter.kafka.KafkaPublisher;
import io.outboxrouter.retry.Retry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One engine batch: route every change (pure), apply the dead-letter policy to rejected rows, publish the
 * records in source order and return once Kafka acknowledged all of them.
 */
public final class OutboxBatchHandler implements ChangeHandler {
    private static final Logger LOG = LoggerFactory.getLogger(OutboxBatchHandler.class);

    /** Counters for status and metrics; written by the engine thread only. */
    public static final class Counters {
        public final AtomicLong published = new AtomicLong();
        public final AtomicLong deadLettered = new AtomicLong();
        public final AtomicLong skipped = new AtomicLong();
        public final AtomicLong batches = new AtomicLong();
    }

    /** A row the {@code fail} policy stops on. */
    public static final class UnroutableEventException extends RuntimeException {
        UnroutableEventException(String message) {
            super(message);
        }
    }

    private final OutboxRouting routing;
    private final DeadLetterPolicy policy;
    private final DeadLetters deadLetters;
    private final KafkaPublisher publisher;
    private final Counters counters;

    public OutboxBatchHandler(OutboxRouting routing, DeadLetterPolicy policy, DeadLetters deadLetters,
                              KafkaPublisher publisher, Counters counters) {
        this.routing = routing;
        this.policy = policy;
        this.deadLetters = deadLetters;
        this.publisher = publisher;
        this.counters = counters;
    }

    @Override
    public void handle(List<ChangeEvent> batch) throws Retry.GaveUpException, InterruptedException {
        var records = new ArrayList<ProducerRecord<byte[], byte[]>>(batch.size());
        var sources = new ArrayList<ChangeEvent>(batch.size());
        int events = 0;
        int dead = 0;
        for (ChangeEvent change : batch) {
            RoutingResult result = routing.route(change);
            if (result instanceof RoutingResult.Publish p) {
                records.add(p.record());
                sources.add(change);
                events++;
            } else if (result instanceof RoutingResult.Reject reject && reject(reject) != null) {
                records.add(deadLetters.record(reject));
                sources.add(null);
                dead++;
            }
        }
        var refused = publisher.publish(records);
        if (!refused.isEmpty()) {
            // Everything else was acknowledged; the dead letters go to another topic, so no aggregate's order changes.
            var letters = new ArrayList<ProducerRecord<byte[], byte[]>>();
            for (var r : refused) {
                ChangeEvent change = sources.get(r.index());
                if (change == null) {
                    throw new UnroutableEventException("a dead letter for topic " + records.get(r.index()).topic()
                            + " is itself refused by Kafka: " + r.error().getMessage());
                }
                var record = records.get(r.index());
                int size = record.value() == null ? 0 : record.value().length;
                var reject = new RoutingResult.Reject("Kafka refused the record: " + r.error().getMessage()
                        + " (payload " + size + " bytes; see the producer's max.request.size and the topic's max.message.bytes)", change);
                events--;
                if (reject(reject) != null) {
                    letters.add(deadLetters.withoutPayload(reject, size));
                    dead++;
                }
            }
            if (!publisher.publish(letters).isEmpty()) {
                throw new UnroutableEventException("dead letters without payload were refused by Kafka too; check the dead-letter topic");
            }
        }
        counters.published.addAndGet(events);
        counters.deadLettered.addAndGet(dead);
        counters.batches.incrementAndGet();
    }

    /** Applies the policy to a rejected row: returns it when it is to be dead-lettered, null when skipped; throws on fail. */
    private RoutingResult.Reject reject(RoutingResult.Reject reject) {
        ChangeEvent change = reject.change();
        switch (policy) {
            case DEAD_LETTER -> {
                LOG.warn("Dead-lettering row at {} of {}: {}", change.position(), change.table(), reject.reason());
                return reject;
            }
            case SKIP -> {
                LOG.warn("Skipping row at {} of {} (routing.dead-letters.policy=skip): {}", change.position(), change.table(), reject.reason());
                counters.skipped.incrementAndGet();
                return null;
            }
            default -> throw new UnroutableEventException("row at " + change.position() + " of " + change.table()
                    + " cannot be routed: " + reject.reason() + " (routing.dead-letters.policy=fail; fix the row, "
                    + "or use policy dead-letter, then restart: the row is read again)");
        }
    }
}
