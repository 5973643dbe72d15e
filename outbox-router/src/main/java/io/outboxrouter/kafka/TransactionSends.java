package io.outboxrouter.kafka;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InterruptException;

/**
 * Sends the records of an open Kafka transaction. Only their errors are kept (the first per topic), not their
 * acknowledgements: a transaction of any size costs no memory per record here. A new partition's first record is
 * flushed and waited for alone ({@link NewPartitions}); every {@link #FLUSH_EVERY_BYTES} the producer is flushed, so that
 * the engine does not run ahead of the broker.
 */
final class TransactionSends {
    private static final long FLUSH_EVERY_BYTES = 4L << 20;

    private final TopicProbe probe;
    /** The first error of a record of the open transaction, per topic; written by the producer's I/O thread. */
    private final Map<String, Exception> recordErrors = new ConcurrentHashMap<>();
    /** Partitions the current producer wrote. */
    private NewPartitions written = new NewPartitions();
    /** Bytes sent since the last flush. */
    private long unflushedBytes;

    TransactionSends(TopicProbe probe) {
        this.probe = probe;
    }

    /** A new producer has written no partition yet. */
    void newProducer() {
        written = new NewPartitions();
    }

    /** Sends one record into the open transaction of {@code producer}. */
    void send(Producer<byte[], byte[]> producer, ProducerRecord<byte[], byte[]> record, Map<String, Integer> partitionCounts) {
        var where = written.where(producer, record, partitionCounts);
        var ack = KafkaPublisher.send(producer, record);
        if (written.isNew(where)) {
            producer.flush();
            try {
                written.written(ack.get());
            } catch (ExecutionException e) {
                recordErrors.putIfAbsent(record.topic(), e.getCause() instanceof Exception c ? c : e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptException(e);
            }
            return;
        }
        ack.whenComplete((metadata, error) -> {
            if (error != null) {
                recordErrors.putIfAbsent(record.topic(), error instanceof Exception e ? e : new KafkaException(error));
            }
        });
        unflushedBytes += KafkaPublisher.sizeOf(record);
        if (unflushedBytes > FLUSH_EVERY_BYTES) {
            unflushedBytes = 0;
            producer.flush();
        }
    }

    /** Whether a record of the open transaction failed. */
    boolean failed() {
        return !recordErrors.isEmpty();
    }

    /** The error of a failed record ({@link #failed}). */
    Exception anyError() {
        return recordErrors.values().iterator().next();
    }

    /** The first error of a record of the open transaction: why the commit failed, more precisely than the commit says. */
    Optional<Exception> firstError() {
        var byTopic = new HashMap<String, Throwable>(recordErrors);
        Exception first = recordErrors.isEmpty() ? null : recordErrors.values().iterator().next();
        var timedOut = TopicProbe.timedOut(byTopic);
        if (!timedOut.isEmpty()) {
            var why = probe.whyUnwritable(timedOut);
            if (why.isPresent()) {
                return Optional.of(new KafkaPublisher.UnwritableTopicException(why.get(), first));
            }
        }
        return Optional.ofNullable(first);
    }

    /** For a new transaction, or the same one sent again. */
    void clear() {
        recordErrors.clear();
        unflushedBytes = 0;
    }
}
