package io.outboxrouter.publish;

import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.config.RoutingConfig;
import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.routing.DeadLetters;
import io.outboxrouter.routing.RoutingResult;
import java.util.Optional;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What becomes of a row that cannot be routed, by {@code routing.dead-letters.policy}: a dead letter to publish in its
 * place, nothing (skip, counted), or a stop. Every decision is logged with the row's position.
 */
final class DeadLetterPolicy {
    private static final Logger LOG = LoggerFactory.getLogger(DeadLetterPolicy.class);

    private final RoutingConfig.DeadLetterPolicy policy;
    private final DeadLetters deadLetters;
    private final RouterListener listener;

    DeadLetterPolicy(RoutingConfig.DeadLetterPolicy policy, DeadLetters deadLetters, RouterListener listener) {
        this.policy = policy;
        this.deadLetters = deadLetters;
        this.listener = listener;
    }

    /**
     * @return the dead letter to publish, or empty when the row is skipped
     * @throws UnroutableEventException under the {@code fail} policy
     */
    Optional<ProducerRecord<byte[], byte[]>> decide(RoutingResult.Reject reject) {
        return decide(reject, () -> deadLetters.record(reject));
    }

    /** For a record Kafka refused as too large: its dead letter carries everything but the payload. */
    Optional<ProducerRecord<byte[], byte[]>> tooLarge(ChangeEvent change, ProducerRecord<byte[], byte[]> refused, Exception error) {
        int size = refused.value() == null ? 0 : refused.value().length;
        var reject = new RoutingResult.Reject("too_large", "Kafka refused the record: " + error.getMessage()
                + " (payload " + size + " bytes; see the producer's max.request.size and the topic's max.message.bytes)", change);
        return decide(reject, () -> deadLetters.withoutPayload(reject, size));
    }

    private Optional<ProducerRecord<byte[], byte[]>> decide(RoutingResult.Reject reject,
                                                           Supplier<ProducerRecord<byte[], byte[]>> letter) {
        ChangeEvent change = reject.change();
        switch (policy) {
            case DEAD_LETTER, PARK_AGGREGATE -> {
                LOG.warn("Dead-lettering row at {} of {}: {}", change.position(), change.table(), reject.reason());
                return Optional.of(letter.get());
            }
            case SKIP -> {
                LOG.warn("Skipping row at {} of {} (routing.dead-letters.policy=skip): {}", change.position(), change.table(), reject.reason());
                listener.skipped(reject.kind());
                return Optional.empty();
            }
            default -> throw new UnroutableEventException("row at " + change.position() + " of " + change.table()
                    + " cannot be routed: " + reject.reason() + " (routing.dead-letters.policy=fail). The change is in the "
                    + "database's log as it was committed and is read again as it is: to go on, set routing.dead-letters.policy to "
                    + "dead-letter (or skip) and start again"
                    + ("too_large".equals(reject.kind()) ? ", or raise kafka.producer max.request.size and the topic's max.message.bytes" : ""));
        }
    }
}
