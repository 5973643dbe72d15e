package io.outboxrouter.kafka;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The records of an open Kafka transaction, in send order, kept to send again after an abort while they take at most a
 * cap; a larger transaction keeps none (its memory would grow with the source transaction), and one that fails stops the
 * stream, which resumes from the position committed last.
 */
final class ResendBuffer {
    private static final Logger LOG = LoggerFactory.getLogger(ResendBuffer.class);

    private final List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    private final long capBytes;
    private final String transactionalId;
    private long bytes;
    private boolean keeping = true;

    ResendBuffer(long capBytes, String transactionalId) {
        this.capBytes = capBytes;
        this.transactionalId = transactionalId;
    }

    /** Keeps a record sent into the transaction, until the transaction passes the cap. */
    void keep(ProducerRecord<byte[], byte[]> record) {
        if (!keeping) {
            return;
        }
        records.add(record);
        bytes += KafkaPublisher.sizeOf(record);
        if (bytes > capBytes) {
            LOG.info("The Kafka transaction of {} passed {} MB: its records are no longer kept to send again (a failure now stops "
                    + "the stream, which resumes from the position committed last)", transactionalId, capBytes >> 20);
            records.clear();
            bytes = 0;
            keeping = false;
        }
    }

    /** Whether every record of the transaction is kept: it can be sent again. */
    boolean resendable() {
        return keeping;
    }

    List<ProducerRecord<byte[], byte[]>> records() {
        return records;
    }

    /** For the next transaction. */
    void clear() {
        records.clear();
        bytes = 0;
        keeping = true;
    }
}
