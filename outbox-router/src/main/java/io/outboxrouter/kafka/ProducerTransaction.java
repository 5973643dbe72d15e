package io.outboxrouter.kafka;

import java.time.Duration;
import org.apache.kafka.clients.producer.Producer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One transactional producer and the transaction it has open, if any. Used by the publisher's thread only. */
final class ProducerTransaction {
    private static final Logger LOG = LoggerFactory.getLogger(ProducerTransaction.class);

    private final Producer<byte[], byte[]> producer;
    private final String transactionalId;
    private boolean open;
    private long openedAt;

    /** @param producer a producer whose transactions are initialized */
    ProducerTransaction(Producer<byte[], byte[]> producer, String transactionalId) {
        this.producer = producer;
        this.transactionalId = transactionalId;
    }

    Producer<byte[], byte[]> producer() {
        return producer;
    }

    boolean open() {
        return open;
    }

    /** How long the open transaction has been open. */
    Duration openFor() {
        return open ? Duration.ofNanos(System.nanoTime() - openedAt) : Duration.ZERO;
    }

    /** Begins a transaction unless one is open. */
    void begin() {
        if (!open) {
            producer.beginTransaction();
            open = true;
            openedAt = System.nanoTime();
        }
    }

    /** Aborts the open transaction, failing as the producer does; returns whether one was open. */
    boolean abort() {
        if (!open) {
            return false;
        }
        producer.abortTransaction();
        open = false;
        return true;
    }

    /** Commits the open transaction (a flush first): fails when a record of it failed, or the commit did. */
    void commit() {
        producer.commitTransaction();
        open = false;
    }

    /**
     * Closes the producer, having aborted the open transaction (so that read_committed consumers are not held up by it)
     * unless the timeout is zero: a producer dropped at once, to make a new one that aborts it anyway.
     */
    void close(Duration timeout) {
        if (open && !timeout.isZero()) {
            try {
                producer.abortTransaction();
            } catch (RuntimeException e) {
                LOG.debug("Aborting the open transaction of {} on close: {}", transactionalId, e.getMessage());
            }
        }
        open = false;
        try {
            producer.close(timeout);
        } catch (RuntimeException e) {
            LOG.warn("Kafka producer {} did not close cleanly: {}", transactionalId, e.getMessage());
        }
    }
}
