package io.outboxrouter.kafka;

import io.outboxrouter.retry.Retry;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Where routed records go: sends a batch in order and returns once every record is acknowledged or refused for good.
 * The engine stores the source position only after this returns. {@link KafkaPublisher} is the at-least-once sink.
 */
public interface EventSink extends AutoCloseable {

    /** A record the sink will never take, at its index in the batch. */
    record Refused(int index, Exception error) {
    }

    /**
     * Sends every record in order and waits for all acknowledgements.
     *
     * @return the records refused for good (larger than the broker accepts): every other record was acknowledged
     * @throws Retry.GaveUpException when the batch could not be sent within the retry budget, or hit an error that
     *                               retrying cannot fix (authorization, configuration)
     */
    List<Refused> send(List<ProducerRecord<byte[], byte[]>> records) throws Retry.GaveUpException, InterruptedException;

    @Override
    void close();
}
