/*
 * Copyright Debezium Authors.
 *
 * Licensed under the Apache Software License version 2.0, available at http://www.apache.org/licenses/LICENSE-2.0
 *
 * outbox-router: Debezium 3.5.0.Final's io.debezium.connector.base.ChangeEventQueue with these changes.
 * (1) While the queue is empty, poll() sleeps until the first record arrives (for up to IDLE_WAIT), then hands the batch
 * over at the end of the poll interval that record arrived in, exactly when successive polls would have: upstream
 * returns an empty batch every poll interval, and the engine polls again at once, a hundred wake-ups a second at the
 * default 10 ms for a router with nothing to publish. (2) When less than a millisecond of the poll interval remains,
 * it waits for that millisecond instead of looping. Its timer
 * counts whole milliseconds and expires only once the elapsed time passes the interval, so with nothing to poll each
 * cycle ended in up to a millisecond of spinning (drain, log, check the clock): about a tenth of a core for a router
 * with nothing to publish at the default 10 ms poll interval. The same loop is still upstream in 3.7. (3) A queued
 * record's size for max.queue.size.in.bytes is io.outboxrouter.cdc.QueuedSize's estimate, not Debezium's (which the
 * router, bounding its queue by the heap, would otherwise pay on every event), and poll() ends a batch once its own
 * records reach that size: upstream only checks what is left in the queue, which each drain empties, so one batch
 * could gather many queues' worth within a long poll interval. This class
 * replaces Debezium's in the runnable jar (the shade plugin drops the original) and ahead of it on the test class path;
 * ChangeEventQueuePatchTest and RunnableJarIT check that this copy is the one loaded. Compare it with upstream on every
 * Debezium upgrade.
 */
package io.debezium.connector.base;

import static io.debezium.util.Loggings.maybeRedactSensitiveData;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.debezium.annotation.SingleThreadAccess;
import io.debezium.annotation.ThreadSafe;
import io.debezium.config.ConfigurationDefaults;
import io.debezium.pipeline.Sizeable;
import io.debezium.time.Temporals;
import io.debezium.util.LoggingContext;
import io.debezium.util.LoggingContext.PreviousContext;

/**
 * A queue which serves as handover point between producer threads (e.g. MySQL's
 * binlog reader thread) and the Kafka Connect polling loop.
 * <p>
 * The queue is configurable in different aspects, e.g. its maximum size and the
 * time to sleep (block) between two subsequent poll calls. See the
 * {@link Builder} for the different options. The queue applies back-pressure
 * semantics, i.e. if it holds the maximum number of elements, subsequent calls
 * to {@link #enqueue(T)} will block until elements have been removed from
 * the queue.
 * <p>
 * If an exception occurs on the producer side, the producer should make that
 * exception known by calling {@link #producerException(RuntimeException)} before stopping its
 * operation. Upon the next call to {@link #poll()}, that exception will be
 * raised, causing Kafka Connect to stop the connector and mark it as
 * {@code FAILED}.
 *
 * @author Gunnar Morling
 *
 * @param <T>
 *            the type of events in this queue. Usually {@link Sizeable} is
 *            used, but in cases where additional metadata must be passed from
 *            producers to the consumer, a custom type extending source records
 *            may be used.
 */
@ThreadSafe
public class ChangeEventQueue<T extends Sizeable> implements ChangeEventQueueMetrics {
    /** Read by the tests: this is the router's copy. */
    public static final boolean NO_SPIN = true;


    private static final Logger LOGGER = LoggerFactory.getLogger(ChangeEventQueue.class);

    private final Duration pollInterval;
    private final int maxBatchSize;
    private final int maxQueueSize;
    private final long maxQueueSizeInBytes;

    private final Lock lock;
    private final Condition isFull;
    private final Condition isNotFull;
    /** outbox-router: signalled by the first record enqueued into an empty queue, and by a producer exception. */
    private final Condition isNotEmpty;
    /** outbox-router: how long an empty poll sleeps before it returns an empty batch (the engine then polls again). */
    static final Duration IDLE_WAIT = Duration.ofMillis(200);

    private final QueueProvider<T> queue;
    private final Supplier<PreviousContext> loggingContextSupplier;
    private final Queue<Long> sizeInBytesQueue;
    private long currentQueueSizeInBytes = 0;
    /** outbox-router: the bytes of the batch poll() is gathering (poll's thread, under the lock). */
    private long batchBytes = 0;

    // Sometimes it is necessary to update the record before it is delivered depending on the content
    // of the following record. In that cases the easiest solution is to provide a single cell buffer
    // that will allow the modification of it during the explicit flush.
    // Typical example is MySQL connector when sometimes it is impossible to detect when the record
    // in process is the last one. In this case the snapshot flags are set during the explicit flush.
    @SingleThreadAccess("producer thread")
    private boolean buffering;

    private final AtomicReference<T> bufferedEvent = new AtomicReference<>();

    private volatile RuntimeException producerException;

    private ChangeEventQueue(Duration pollInterval, int maxQueueSize, int maxBatchSize, Supplier<LoggingContext.PreviousContext> loggingContextSupplier,
                             long maxQueueSizeInBytes, boolean buffering, QueueProvider<T> queueProvider) {
        this.pollInterval = pollInterval;
        this.maxBatchSize = maxBatchSize;
        this.maxQueueSize = maxQueueSize;

        this.lock = new ReentrantLock();
        this.isFull = lock.newCondition();
        this.isNotFull = lock.newCondition();
        this.isNotEmpty = lock.newCondition();

        this.loggingContextSupplier = loggingContextSupplier;
        if (maxQueueSizeInBytes > 0) {
            this.sizeInBytesQueue = new ArrayDeque<>(maxQueueSize);
        }
        else {
            this.sizeInBytesQueue = new ArrayDeque<>(0);
        }

        this.maxQueueSizeInBytes = maxQueueSizeInBytes;
        this.buffering = buffering;
        this.queue = queueProvider;
    }

    public static class Builder<T extends Sizeable> {

        private Duration pollInterval;
        private int maxQueueSize;
        private int maxBatchSize;
        private Supplier<LoggingContext.PreviousContext> loggingContextSupplier;
        private long maxQueueSizeInBytes;
        private boolean buffering;
        private QueueProvider<T> queueProvider;

        public Builder<T> pollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
            return this;
        }

        public Builder<T> maxQueueSize(int maxQueueSize) {
            this.maxQueueSize = maxQueueSize;
            return this;
        }

        public Builder<T> maxBatchSize(int maxBatchSize) {
            this.maxBatchSize = maxBatchSize;
            return this;
        }

        public Builder<T> loggingContextSupplier(Supplier<LoggingContext.PreviousContext> loggingContextSupplier) {
            this.loggingContextSupplier = loggingContextSupplier;
            return this;
        }

        public Builder<T> maxQueueSizeInBytes(long maxQueueSizeInBytes) {
            this.maxQueueSizeInBytes = maxQueueSizeInBytes;
            return this;
        }

        /**
         * Sets a custom {@link QueueProvider} implementation to be used by the {@link ChangeEventQueue}.
         * <p>
         * If not set, a default provider will be used internally based on the max queue size.
         * This allows for custom queue behavior or instrumentation if needed.
         *
         * @param queueProvider the queue provider to use; may be {@code null}, in which case a default will be used
         * @return this builder instance for method chaining
         */
        public ChangeEventQueue.Builder<T> queueProvider(QueueProvider<T> queueProvider) {
            this.queueProvider = queueProvider;
            return this;
        }

        public Builder<T> buffering() {
            this.buffering = true;
            return this;
        }

        public ChangeEventQueue<T> build() {
            QueueProvider<T> effectiveQueueProvider = (queueProvider != null) ? queueProvider : new DefaultQueueProvider<>(maxQueueSize);
            return new ChangeEventQueue<>(pollInterval, maxQueueSize, maxBatchSize, loggingContextSupplier, maxQueueSizeInBytes, buffering, effectiveQueueProvider);
        }
    }

    /**
     * Enqueues a record so that it can be obtained via {@link #poll()}. This method
     * will block if the queue is full.
     *
     * @param record
     *            the record to be enqueued
     * @throws InterruptedException
     *             if this thread has been interrupted
     */
    public void enqueue(T record) throws InterruptedException {
        if (record == null) {
            return;
        }

        // The calling thread has been interrupted, let's abort
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }

        if (buffering) {
            record = bufferedEvent.getAndSet(record);
            if (record == null) {
                // Can happen only for the first coming event
                return;
            }
        }

        doEnqueue(record);
    }

    /**
     * Applies a function to the event and the buffer and adds it to the queue. Buffer is emptied.
     *
     * @param recordModifier
     * @throws InterruptedException
     */
    public void flushBuffer(Function<T, T> recordModifier) throws InterruptedException {
        assert buffering : "Unsupported for queues with disabled buffering";
        T record = bufferedEvent.getAndSet(null);
        if (record != null) {
            doEnqueue(recordModifier.apply(record));
        }
    }

    /**
     * Disable buffering for the queue
     */
    public void disableBuffering() {
        assert bufferedEvent.get() == null : "Buffer must be flushed";
        buffering = false;
    }

    /**
     * Enable buffering for the queue
     */
    public void enableBuffering() {
        buffering = true;
    }

    protected void doEnqueue(T record) throws InterruptedException {
        if (LOGGER.isTraceEnabled()) {
            LOGGER.trace("Enqueuing source record '{}'", maybeRedactSensitiveData(record));
        }

        try {
            this.lock.lock();

            while (queue.size() >= maxQueueSize || (maxQueueSizeInBytes > 0 && currentQueueSizeInBytes >= maxQueueSizeInBytes)) {
                // signal poll() to drain queue
                this.isFull.signalAll();
                // queue size or queue sizeInBytes threshold reached, so wait a bit
                this.isNotFull.await(pollInterval.toMillis(), TimeUnit.MILLISECONDS);
            }

            queue.enqueue(record);
            if (queue.size() == 1) {
                this.isNotEmpty.signalAll(); // outbox-router: wake a poll() sleeping on an empty queue
            }
            // If we pass a positiveLong max.queue.size.in.bytes to enable handling queue size in bytes feature
            if (maxQueueSizeInBytes > 0) {
                long messageSize = io.outboxrouter.cdc.QueuedSize.of(record); // outbox-router: a cheaper estimate (see there)
                sizeInBytesQueue.add(messageSize);
                currentQueueSizeInBytes += messageSize;
            }

            // batch size or queue sizeInBytes threshold reached
            if (queue.size() >= maxBatchSize || (maxQueueSizeInBytes > 0 && currentQueueSizeInBytes >= maxQueueSizeInBytes)) {
                // signal poll() to start draining queue and do not wait
                this.isFull.signalAll();
            }
        }
        finally {
            this.lock.unlock();
        }
    }

    /**
     * Returns the next batch of elements from this queue. May be empty in case no
     * elements have arrived in the maximum waiting time.
     *
     * @throws InterruptedException
     *             if this thread has been interrupted while waiting for more
     *             elements to arrive
     */
    public List<T> poll() throws InterruptedException {
        LoggingContext.PreviousContext previousContext = loggingContextSupplier.get();

        try {
            LOGGER.debug("polling records...");
            final long interval = Temporals.min(pollInterval, ConfigurationDefaults.RETURN_CONTROL_INTERVAL).toNanos();
            final long start = System.nanoTime();
            try {
                this.lock.lock();
                List<T> records = new ArrayList<>(Math.min(maxBatchSize, queue.size()));
                batchBytes = 0;
                throwProducerExceptionIfPresent();
                long deadline = start + interval;
                if (queue.size() == 0) {
                    // outbox-router: sleep until the first record comes, rather than through one empty poll after another
                    long idleUntil = start + IDLE_WAIT.toNanos();
                    long now = start;
                    while (queue.size() == 0 && producerException == null && now < idleUntil) {
                        this.isNotEmpty.awaitNanos(idleUntil - now);
                        now = System.nanoTime();
                    }
                    throwProducerExceptionIfPresent();
                    if (queue.size() == 0) {
                        return records;
                    }
                    // Hand it over at the end of the poll interval it came in, as successive polls would have.
                    deadline = start + ((now - start) / interval + 1) * interval;
                }
                while (drainRecords(records, maxBatchSize - records.size()) < maxBatchSize
                        // outbox-router: the batch's bytes too, not only the queue's, which a drain has just emptied
                        && (maxQueueSizeInBytes == 0 || (currentQueueSizeInBytes < maxQueueSizeInBytes && batchBytes < maxQueueSizeInBytes))
                        && System.nanoTime() < deadline) {
                    throwProducerExceptionIfPresent();

                    LOGGER.debug("no records available or batch size not reached yet, sleeping a bit...");
                    // outbox-router: never less than a millisecond, which the loop spent spinning (see the header).
                    long remainingTimeoutMills = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                    // signal doEnqueue() to add more records
                    this.isNotFull.signalAll();
                    // no records available or batch size not reached yet, so wait a bit
                    this.isFull.await(remainingTimeoutMills, TimeUnit.MILLISECONDS);
                    LOGGER.debug("checking for more records...");
                }
                // signal doEnqueue() to add more records
                this.isNotFull.signalAll();
                return records;
            }
            finally {
                this.lock.unlock();
            }
        }
        finally {
            previousContext.restore();
        }
    }

    private long drainRecords(List<T> records, int maxElements) throws InterruptedException {
        int queueSize = queue.size();
        if (queueSize == 0) {
            return records.size();
        }
        int recordsToDrain = Math.min(queueSize, maxElements);
        if (maxQueueSizeInBytes > 0) {
            // outbox-router: a batch stops at the bound, with the record that crossed it (see the header)
            for (int i = 0; i < recordsToDrain && batchBytes < maxQueueSizeInBytes; i++) {
                records.add(queue.poll());
                Long objectSize = sizeInBytesQueue.poll();
                currentQueueSizeInBytes -= (objectSize == null ? 0L : objectSize);
                batchBytes += (objectSize == null ? 0L : objectSize);
            }
            return records.size();
        }
        T[] drainedRecords = (T[]) new Sizeable[recordsToDrain];
        for (int i = 0; i < recordsToDrain; i++) {
            T record = queue.poll();
            drainedRecords[i] = record;
        }
        // outbox-router: upstream's byte accounting for this path moved into the bounded branch above
        records.addAll(Arrays.asList(drainedRecords));
        return records.size();
    }

    public void producerException(final RuntimeException producerException) {
        this.producerException = producerException;
        // outbox-router: wake a poll() sleeping on an empty queue
        this.lock.lock();
        try {
            this.isNotEmpty.signalAll();
        }
        finally {
            this.lock.unlock();
        }
    }

    private void throwProducerExceptionIfPresent() {
        if (producerException != null) {
            throw producerException;
        }
    }

    @Override
    public int totalCapacity() {
        return maxQueueSize;
    }

    @Override
    public int remainingCapacity() {
        return maxQueueSize - queue.size();
    }

    @Override
    public long maxQueueSizeInBytes() {
        return maxQueueSizeInBytes;
    }

    @Override
    public long currentQueueSizeInBytes() {
        return currentQueueSizeInBytes;
    }

    public boolean isBuffered() {
        return buffering;
    }
}