package io.outboxrouter.kafka;

import io.outboxrouter.cdc.SourcePosition;
import io.outboxrouter.retry.Retry;
import java.util.List;
import java.util.Optional;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Where routed records go: sends a batch in order and returns once every record is acknowledged or refused for good.
 * The engine stores the source position only after this returns. {@link KafkaPublisher} is the at-least-once sink.
 */
public interface EventSink extends AutoCloseable {

    /** A record the sink will never take, at its index in the batch. */
    record Refused(int index, Exception error) {
        /** The same refusal, its index moved by {@code by} (a part of a larger list was sent). */
        public Refused shifted(int by) {
            return new Refused(index + by, error);
        }
    }

    /**
     * Sends every record in order and waits for all acknowledgements.
     *
     * @return the records refused for good (larger than the broker accepts): every other record was acknowledged
     * @throws Retry.GaveUpException when the batch could not be sent within the retry budget, or hit an error that
     *                               retrying cannot fix (authorization, configuration)
     */
    List<Refused> send(List<ProducerRecord<byte[], byte[]>> records) throws Retry.GaveUpException, InterruptedException;

    /**
     * Why the sink will refuse this record for its size, known before anything is sent (so that its fate is decided before
     * a later record of the same aggregate is acknowledged); empty when it may be sent.
     */
    default Optional<String> refusesForSize(ProducerRecord<byte[], byte[]> record) {
        return Optional.empty();
    }

    /**
     * Whether records become durable only at {@link #commit} ({@code delivery: exactly-once}): {@link #send} then hands
     * them to the open Kafka transaction and returns without waiting, and refuses nothing.
     */
    default boolean transactional() {
        return false;
    }

    /**
     * Transactional sinks: commits every record sent since the last commit, with the source position after them (null
     * when there is none, as for a replay), in one Kafka transaction; returns once committed.
     */
    default void commit(SourcePosition position) throws Retry.GaveUpException, InterruptedException {
    }

    @Override
    void close();
}
