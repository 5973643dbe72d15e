package io.outboxrouter.routing;

import io.outboxrouter.cdc.ChangeEvent;
import io.outboxrouter.cdc.ChangeHandler;
import io.outboxrouter.config.RoutingConfig.DeadLetterPolicy;
import io.outboxrouter.kafka.KafkaPublisher;
import io.outboxrouter.retry.Retry;
import java.util.ArrayList;
import java.util.List;
import io.outboxrouter.metrics.RouterMetrics;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One engine batch: route every change (pure), apply the dead-letter policy to rejected rows, publish the
 * records in source order and return once Kafka acknowledged all of them.
 */
public final class OutboxBatchHandler implements ChangeHandler {
    private static final Logger LOG = LoggerFactory.getLogger(OutboxBatchHandler.class);

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
    private final RouterMetrics metrics;

    public OutboxBatchHandler(OutboxRouting routing, DeadLetterPolicy policy, DeadLetters deadLetters,
                              KafkaPublisher publisher, RouterMetrics metrics) {
        this.routing = routing;
        this.policy = policy;
        this.deadLetters = deadLetters;
        this.publisher = publisher;
        this.metrics = metrics;
    }

    @Override
    public void handle(List<ChangeEvent> batch) throws Retry.GaveUpException, InterruptedException {
        var records = new ArrayList<ProducerRecord<byte[], byte[]>>(batch.size());
        var sources = new ArrayList<ChangeEvent>(batch.size());
        var kinds = new ArrayList<String>(batch.size());
        for (ChangeEvent change : batch) {
            RoutingResult result = routing.route(change);
            if (result instanceof RoutingResult.Publish p) {
                records.add(p.record());
                sources.add(change);
                kinds.add(null);
            } else if (result instanceof RoutingResult.Reject reject && reject(reject) != null) {
                records.add(deadLetters.record(reject));
                sources.add(null);
                kinds.add(reject.kind());
            }
        }
        long start = System.nanoTime();
        var refused = publisher.publish(records);
        var ackTime = java.time.Instant.now();
        var refusedIndexes = new java.util.HashSet<Integer>();
        refused.forEach(r -> refusedIndexes.add(r.index()));
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
                var reject = new RoutingResult.Reject("too_large", "Kafka refused the record: " + r.error().getMessage()
                        + " (payload " + size + " bytes; see the producer's max.request.size and the topic's max.message.bytes)", change);
                if (reject(reject) != null) {
                    letters.add(deadLetters.withoutPayload(reject, size));
                    metrics.deadLettered(reject.kind());
                }
            }
            if (!publisher.publish(letters).isEmpty()) {
                throw new UnroutableEventException("dead letters without payload were refused by Kafka too; check the dead-letter topic");
            }
        }
        for (int i = 0; i < records.size(); i++) {
            if (refusedIndexes.contains(i)) {
                continue;
            }
            if (sources.get(i) != null) {
                metrics.published(records.get(i).topic(), sources.get(i).commitTime(), ackTime);
            } else {
                metrics.deadLettered(kinds.get(i));
            }
        }
        metrics.batch(records.size(), java.time.Duration.ofNanos(System.nanoTime() - start));
    }

    @Override
    public void positionStored() {
        metrics.offsetStored();
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
                metrics.skipped(reject.kind());
                return null;
            }
            default -> throw new UnroutableEventException("row at " + change.position() + " of " + change.table()
                    + " cannot be routed: " + reject.reason() + " (routing.dead-letters.policy=fail; fix the row, "
                    + "or use policy dead-letter, then restart: the row is read again)");
        }
    }
}
