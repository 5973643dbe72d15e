package io.outboxrouter.kafka;

import io.outboxrouter.cdc.SourcePosition;
import io.outboxrouter.config.KafkaConfig;
import io.outboxrouter.kafka.TransactionFailures.UnrecoverableException;
import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.offsets.EngineOffsets;
import io.outboxrouter.retry.Retry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The exactly-once sink: a transactional producer. Records are sent into an open Kafka transaction as they come;
 * {@link #commit} adds the source position after them to the offsets topic and commits, so that a consumer reading
 * {@code read_committed} sees the records exactly when the position that covers them is stored. A failed transaction is
 * aborted and sent again, whole and in order, in a new one, with capped backoff until the retry budget is spent; its
 * records are kept for that up to a sixteenth of the heap, and a failed transaction larger than that stops the stream,
 * which resumes from the position committed last (memory does not grow with the source transaction).
 *
 * <p>{@link #activate} makes a new producer and calls {@code initTransactions()}, which bumps the producer epoch of the
 * stream's {@code transactional.id}: a process that still thinks it streams (paused, partitioned) is fenced, and its
 * next send or commit fails with {@link FencedOutException}. A fenced producer is never made again in this process: a
 * new one would fence the process that fenced it. The stream stops, and whoever starts next reads the position committed
 * last.
 */
public final class TransactionalPublisher implements EventSink {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionalPublisher.class);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(10);

    /** This process no longer owns the stream's transactional id: another one started it, or its transaction timed out. */
    public static final class FencedOutException extends KafkaException {
        FencedOutException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final String streamName;
    private final String transactionalId;
    private final String offsetsTopic;
    private final Supplier<Producer<byte[], byte[]>> producers;
    private final Retry retry;
    private final RouterListener listener;
    private final TransactionFailures failures;
    private final int maxRequestBytes;
    /** The producer made by the last {@link #activate}; null before it and after a close. */
    private ProducerTransaction transaction;
    /** The offsets topic's partition this stream commits its position to: its own, so no other stream's transaction hides it. */
    private volatile Integer offsetsPartition;
    /**
     * Commits refused in a row for an old producer epoch. The first may be the coordinator having aborted a transaction
     * that outlived transaction.timeout.ms: the producer recovers its epoch when it aborts, and the records are sent again.
     * A second in a row, after that abort, means a newer producer of the id exists: fenced.
     */
    private int epochRefusals;
    /** The open transaction failed: it is aborted and its records sent again before anything else. */
    private KafkaException failed;
    /** Set when a transaction too large to send again failed: nothing is sent or committed until {@link #activate}. */
    private UnrecoverableException stopped;
    /** commitTransaction timed out: the producer allows only that call again (it may have committed). */
    private boolean commitPending;
    /** The records of the open transaction, kept to send again after an abort while they take at most a sixteenth of the heap. */
    private final ResendBuffer resend;
    /** Records sent into the open transaction. */
    private long sent;
    /** The open transaction's sends and their errors. */
    private final TransactionSends sends;

    /**
     * A publisher with producers made from the configuration.
     *
     * @param streamName      the stream (router or shard) name: the engine name in the offsets topic's keys
     * @param transactionalId the producer's id: the stream's ({@link KafkaConfig#transactionalId}), or a replay's
     * @param streams         how many streams of the router share this process's heap (a sharded router's): each takes its share
     */
    public static TransactionalPublisher of(KafkaConfig kafka, String streamName, String transactionalId, int streams,
                                            Duration initialBackoff, RouterListener listener) {
        var producerConfig = ProducerSettings.transactional(kafka, streamName, transactionalId, streams);
        return new TransactionalPublisher(streamName, transactionalId, kafka.offsetsTopic(), () -> KafkaClients.producer(producerConfig),
                new Retry(initialBackoff, KafkaPublisher.MAX_BACKOFF, kafka.giveUpAfter()), listener, TopicProbe.of(producerConfig),
                ProducerSettings.maxRequestBytes(producerConfig), streams);
    }

    /** @param producers makes a transactional producer for each {@link #activate} ({@code MockProducer} in tests) */
    public TransactionalPublisher(String streamName, String transactionalId, String offsetsTopic,
                                  Supplier<Producer<byte[], byte[]>> producers, Retry retry, RouterListener listener,
                                  TopicProbe probe, int maxRequestBytes) {
        this(streamName, transactionalId, offsetsTopic, producers, retry, listener, probe, maxRequestBytes, 1);
    }

    private TransactionalPublisher(String streamName, String transactionalId, String offsetsTopic,
                                   Supplier<Producer<byte[], byte[]>> producers, Retry retry, RouterListener listener,
                                   TopicProbe probe, int maxRequestBytes, int streams) {
        this.streamName = streamName;
        this.transactionalId = transactionalId;
        this.offsetsTopic = offsetsTopic;
        this.producers = producers;
        this.retry = retry;
        this.listener = listener;
        this.sends = new TransactionSends(probe);
        this.maxRequestBytes = maxRequestBytes;
        this.resend = new ResendBuffer(Runtime.getRuntime().maxMemory() / 16 / Math.max(1, streams), transactionalId);
        this.failures = new TransactionFailures(streamName, transactionalId, offsetsTopic);
    }

    public String transactionalId() {
        return transactionalId;
    }

    /** The offsets topic's partition for this stream's positions ({@link OffsetsTopic#partitionOf}); by key when unset. */
    public void useOffsetsPartition(int partition) {
        this.offsetsPartition = partition;
    }

    /**
     * Commits positions given as the offsets table holds them (key and value text; a null value forgets the key), in a
     * transaction of their own: at start, when the table is authoritative and the topic must say the same.
     */
    public void commitPositions(Map<String, String> positions) throws Retry.GaveUpException, InterruptedException {
        var records = new ArrayList<ProducerRecord<byte[], byte[]>>();
        positions.forEach((key, value) -> records.add(new ProducerRecord<>(offsetsTopic, offsetsPartition,
                key.getBytes(StandardCharsets.UTF_8), value == null ? null : value.getBytes(StandardCharsets.UTF_8))));
        send(records);
        commit(null);
    }

    @Override
    public boolean transactional() {
        return true;
    }

    /**
     * Makes a new producer and initializes its transactions, retried while Kafka is unreachable: from now on no earlier
     * producer of this transactional id can commit, and what it left open is aborted. Call before reading the committed
     * position, and again after each {@link #close} or stop of the stream.
     */
    public void activate() throws Retry.GaveUpException, InterruptedException {
        closeProducer(Duration.ZERO);
        reset();
        stopped = null;
        retry.call("initialize Kafka transactions of " + transactionalId, TransactionFailures::isRetryable, LOG,
                (operation, attempt, cause) -> listener.retrying("kafka_publish", cause), () -> {
                    var p = producers.get();
                    try {
                        p.initTransactions();
                    } catch (RuntimeException e) {
                        try {
                            p.close(Duration.ZERO);
                        } catch (RuntimeException ignored) {
                            // closing a producer that could not start
                        }
                        throw failures.classify(e);
                    }
                    transaction = new ProducerTransaction(p, transactionalId);
                    sends.newProducer();
                    return null;
                });
    }

    @Override
    public Optional<String> refusesForSize(ProducerRecord<byte[], byte[]> record) {
        return KafkaPublisher.refusesForSize(record, maxRequestBytes);
    }

    /**
     * Sends the records into the open transaction (begun if none is) and returns without waiting: they are acknowledged,
     * or sent again, by {@link #commit}. Nothing is refused here.
     */
    @Override
    public List<Refused> send(List<ProducerRecord<byte[], byte[]>> records) {
        requireActive();
        var partitionCounts = new HashMap<String, Integer>();
        for (var record : records) {
            keep(record);
            if (failed == null) {
                try {
                    transaction.begin();
                    sends.send(transaction.producer(), record, partitionCounts);
                } catch (org.apache.kafka.common.errors.InterruptException e) {
                    throw e; // a stop, not a failed transaction
                } catch (KafkaException e) {
                    failed = e; // sent again in a new transaction at commit
                }
            }
            if (!resend.resendable() && (failed != null || sends.failed())) {
                throw cannotResend(failed != null ? failed : sends.anyError());
            }
        }
        return List.of();
    }

    private void keep(ProducerRecord<byte[], byte[]> record) {
        sent++;
        resend.keep(record);
    }

    /** A failed transaction too large to have been kept: aborted, and the stream stops; it resumes from the last commit. */
    private UnrecoverableException cannotResend(Exception cause) {
        // Nothing more goes into this producer's transactions: a commit now would store a position past aborted records.
        stopped = new UnrecoverableException("the transactional producer of " + transactionalId + " stopped after a failed "
                + "transaction it could not send again", cause);
        if (transaction.open()) {
            try {
                transaction.abort();
                listener.kafkaTransaction(false);
            } catch (RuntimeException e) {
                LOG.debug("Aborting the failed transaction of {}: {}", transactionalId, e.getMessage());
            }
        }
        return new UnrecoverableException("a Kafka transaction of " + transactionalId + " with " + sent + " records, too large to be "
                + "kept in memory to send again, failed (" + Retry.describe(cause) + "): it is aborted, so read_committed consumers "
                + "see none of it, and the stream stops; started again, it resumes from the position committed last", cause);
    }

    /**
     * Commits the open transaction with the source position (to the offsets topic; none for a replay), retrying a failed
     * one as a whole. Returns once the broker committed it.
     *
     * @throws Retry.GaveUpException when the budget is spent, the producer was fenced ({@link FencedOutException} as its
     *                               cause), or Kafka refuses for good (authorization, a record larger than a topic takes)
     */
    @Override
    public void commit(SourcePosition position) throws Retry.GaveUpException, InterruptedException {
        requireActive();
        var offset = position == null ? null : new ProducerRecord<>(offsetsTopic, offsetsPartition,
                EngineOffsets.key(streamName, position.partition()).getBytes(StandardCharsets.UTF_8),
                EngineOffsets.value(position.offset()).getBytes(StandardCharsets.UTF_8));
        retry.call("commit a Kafka transaction of " + sent + " records", TransactionFailures::isRetryable, LOG,
                (operation, attempt, cause) -> {
                    listener.retrying("kafka_publish", cause);
                    var open = transaction; // null once a stop closed the producer under this retry
                    if (open != null && open.open()) {
                        LOG.warn("The Kafka transaction of {} has been open for {} s (transaction.timeout.ms ends it on the broker)",
                                transactionalId, open.openFor().toSeconds());
                    }
                }, () -> {
                    attemptCommit(offset);
                    return null;
                });
        reset();
    }

    private void attemptCommit(ProducerRecord<byte[], byte[]> offset) throws Exception {
        try {
            if (!commitPending) {
                if (failed != null) {
                    abortAndResend();
                }
                transaction.begin();
                if (offset != null) {
                    sends.send(transaction.producer(), offset, new HashMap<>());
                }
            }
            commitPending = true;
            transaction.commit();
            commitPending = false;
            listener.kafkaTransaction(true);
        } catch (org.apache.kafka.common.errors.InterruptException e) {
            // Interrupted while committing (a stop): like a timeout, the commit may have gone through; the stream stops.
            throw new InterruptedException("interrupted while committing a Kafka transaction of " + transactionalId);
        } catch (FencedOutException | UnrecoverableException e) {
            throw e; // decided already (aborting the failed transaction was refused): not to be masked by a record's error
        } catch (TimeoutException e) {
            // The commit may have gone through or not: only commitTransaction may be called again, and it is.
            epochRefusals = 0;
            if (!commitPending) {
                failed = e;
            }
            throw e;
        } catch (KafkaException e) {
            commitPending = false;
            var cause = failures.classify(sends.firstError().orElse(e));
            if (!TransactionFailures.causedBy(e, org.apache.kafka.common.errors.InvalidProducerEpochException.class)) {
                epochRefusals = 0; // "in a row": another failure in between (an outage) starts the count again
            } else if (++epochRefusals >= 2) {
                cause = failures.fenced(e);
            }
            if (!(cause instanceof FencedOutException)) {
                failed = e;
            }
            throw cause;
        }
        epochRefusals = 0;
    }

    /** Aborts the failed transaction and sends its records again, in order, in a new one. */
    private void abortAndResend() {
        if (transaction.open()) {
            try {
                transaction.abort();
            } catch (TimeoutException e) {
                throw e; // still failed; the next attempt aborts again
            } catch (KafkaException e) {
                var cause = failures.classify(e);
                throw cause instanceof FencedOutException ? cause : new UnrecoverableException("the transactional producer of "
                        + transactionalId + " cannot go on (" + Retry.describe(e) + "): the stream stops; started again, it "
                        + "resumes from the position committed last", e);
            }
            listener.kafkaTransaction(false);
        }
        if (!resend.resendable()) {
            throw cannotResend(failed != null ? failed : new KafkaException("the transaction failed"));
        }
        LOG.info("Sending the {} records of an aborted Kafka transaction again in a new one", resend.records().size());
        failed = null;
        sends.clear();
        transaction.begin();
        var partitionCounts = new HashMap<String, Integer>();
        for (var record : resend.records()) {
            sends.send(transaction.producer(), record, partitionCounts);
        }
    }

    private void requireActive() {
        if (transaction == null) {
            throw new IllegalStateException("the transactional publisher of " + streamName + " is not activated");
        }
        if (stopped != null) {
            throw stopped;
        }
    }

    private void reset() {
        resend.clear();
        sent = 0;
        sends.clear();
        failed = null;
        commitPending = false;
    }

    /** Aborts the open transaction, if any (so that read_committed consumers are not held up by it), and closes the producer. */
    @Override
    public void close() {
        closeProducer(CLOSE_TIMEOUT);
        reset();
    }

    private void closeProducer(Duration timeout) {
        if (transaction != null) {
            transaction.close(timeout);
            transaction = null;
        }
    }
}
