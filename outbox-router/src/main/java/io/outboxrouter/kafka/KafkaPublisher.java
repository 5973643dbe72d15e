package io.outboxrouter.kafka;

import io.outboxrouter.config.KafkaConfig;
import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.retry.Retry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes a batch of records and returns only when the broker acknowledged every one of them. The producer is
 * idempotent with {@code acks=all}, so its own retries neither duplicate nor reorder. When a batch fails anyway
 * (broker outage past the delivery timeout), the producer is replaced and the whole batch is sent again in order,
 * with capped backoff, until the retry budget is spent: records may be duplicated, never skipped or reordered
 * for an aggregate's first delivery.
 */
public final class KafkaPublisher implements EventSink {
    private static final Logger LOG = LoggerFactory.getLogger(KafkaPublisher.class);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);
    /**
     * The longest wait between two attempts of a failed send: a Kafka that is back is tried again within it. Each
     * attempt itself waits out the producer's delivery timeout, so a short cap costs no load on a Kafka still down.
     */
    static final Duration MAX_BACKOFF = Duration.ofSeconds(5);
    /** More than Kafka's record and batch overhead, so that a record this check passes is not refused by the producer. */
    private static final int RECORD_OVERHEAD_BYTES = 128;

    private final Supplier<Producer<byte[], byte[]>> producers;
    private final Retry retry;
    private final RouterListener listener;
    private final TopicProbe probe;
    private final int maxRequestBytes;
    private Producer<byte[], byte[]> producer;
    /** Topics and partitions a record of this publisher was acknowledged on: not new any more. Engine thread only. */
    private final NewPartitions written = new NewPartitions();

    /** A publisher with Kafka producers made from the configuration; {@code listener} hears of each retry. */
    public KafkaPublisher(KafkaConfig kafka, String clientId, Duration initialBackoff, RouterListener listener) {
        this(kafka, clientId, 1, initialBackoff, listener);
    }

    /** @param streams how many streams of the router share this process's heap (a sharded router's): each producer takes its share */
    public KafkaPublisher(KafkaConfig kafka, String clientId, int streams, Duration initialBackoff, RouterListener listener) {
        this(ProducerSettings.atLeastOnce(kafka, clientId, streams), new Retry(initialBackoff, MAX_BACKOFF, kafka.giveUpAfter()),
                listener);
    }

    private KafkaPublisher(Properties producerConfig, Retry retry, RouterListener listener) {
        this(() -> KafkaClients.producer(producerConfig), retry, listener, TopicProbe.of(producerConfig),
                ProducerSettings.maxRequestBytes(producerConfig));
    }

    /**
     * @param producers makes a producer at start and again after each failed batch (Kafka's {@code MockProducer} in tests)
     * @param probe     asked, after sends timed out waiting for metadata, whether their topics can ever be written
     */
    public KafkaPublisher(Supplier<Producer<byte[], byte[]>> producers, Retry retry, RouterListener listener, TopicProbe probe) {
        this(producers, retry, listener, probe, Integer.parseInt(ProducerSettings.DEFAULT_MAX_REQUEST));
    }

    /** @param maxRequestBytes the producer's {@code max.request.size}: a larger record is refused before it is sent */
    public KafkaPublisher(Supplier<Producer<byte[], byte[]>> producers, Retry retry, RouterListener listener, TopicProbe probe,
                          int maxRequestBytes) {
        this.maxRequestBytes = maxRequestBytes;
        this.producers = producers;
        this.retry = retry;
        this.listener = listener;
        this.probe = probe;
        this.producer = producers.get();
    }

    /** A topic the batch can never be written to: waiting does not help, the operator must act. */
    static final class UnwritableTopicException extends Exception {
        UnwritableTopicException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    @Override
    public Optional<String> refusesForSize(ProducerRecord<byte[], byte[]> record) {
        return refusesForSize(record, maxRequestBytes);
    }

    /** About what a record takes in memory and on the wire: its bytes, headers and Kafka's record overhead. */
    static long sizeOf(ProducerRecord<byte[], byte[]> record) {
        long size = RECORD_OVERHEAD_BYTES + length(record.key()) + length(record.value());
        for (var h : record.headers()) {
            size += h.key().getBytes(StandardCharsets.UTF_8).length + length(h.value()) + 10;
        }
        return size;
    }

    /** Why a producer with this {@code max.request.size} refuses the record, estimated before sending; empty when it fits. */
    static Optional<String> refusesForSize(ProducerRecord<byte[], byte[]> record, int maxRequestBytes) {
        long size = sizeOf(record);
        return size <= maxRequestBytes ? Optional.empty() : Optional.of("the record is about " + size + " bytes, more than the producer's "
                + "max.request.size (" + maxRequestBytes + ")");
    }

    private static int length(byte[] b) {
        return b == null ? 0 : b.length;
    }

    @Override
    public List<Refused> send(List<ProducerRecord<byte[], byte[]>> records) throws Retry.GaveUpException, InterruptedException {
        if (records.isEmpty()) {
            return List.of();
        }
        return retry.call("publish " + records.size() + " records to Kafka", KafkaPublisher::isRetryable, LOG,
                (operation, attempt, cause) -> listener.retrying("kafka_publish", cause), () -> {
            try {
                return sendAndAwait(records);
            } catch (Exception e) {
                replaceProducer();
                throw e;
            }
        });
    }

    private List<Refused> sendAndAwait(List<ProducerRecord<byte[], byte[]>> records) throws Exception {
        var refused = new ArrayList<Refused>();
        var sent = new boolean[records.size()];
        // A partition this publisher has not written yet may be new: its first record is acknowledged before any other
        // is sent to it. Two rounds: a new topic's first record, then the first of each of its partitions still new.
        for (int round = 0; round < 2; round++) {
            var firsts = firstRecordsOfNewPartitions(records, sent);
            if (firsts.isEmpty()) {
                break;
            }
            refused.addAll(sendAndAwait(records, firsts, sent));
        }
        var rest = new ArrayList<Integer>(records.size());
        for (int i = 0; i < records.size(); i++) {
            if (!sent[i]) {
                rest.add(i);
            }
        }
        if (!rest.isEmpty()) {
            refused.addAll(sendAndAwait(records, rest, sent));
        }
        return refused;
    }

    /**
     * The first record of each partition (or, before the topic's partitions are known, of each topic) that this
     * publisher has not written yet, in batch order. Sent alone and acknowledged before the rest of the batch, so that a
     * new partition never has two produce requests of ours in flight: a broker that has not yet applied a topic's
     * creation refuses the first with NOT_LEADER_OR_FOLLOWER, may append the second, and then refuses every retry of
     * the first as out of sequence until the delivery timeout (KAFKA-15591, see {@link NewPartitions}). Costs at most two
     * round trips for a batch that reaches new partitions.
     */
    private List<Integer> firstRecordsOfNewPartitions(List<ProducerRecord<byte[], byte[]>> records, boolean[] sent) {
        var firsts = new ArrayList<Integer>();
        var seen = new HashSet<Object>();
        var partitionCounts = new HashMap<String, Integer>();
        for (int i = 0; i < records.size(); i++) {
            if (sent[i]) {
                continue;
            }
            Object where = written.where(producer, records.get(i), partitionCounts);
            if (written.isNew(where) && seen.add(where)) {
                firsts.add(i);
            }
        }
        return firsts;
    }

    /** Sends the records at {@code indexes} in order, flushes, and waits for every ack; refused ones by their batch index. */
    private List<Refused> sendAndAwait(List<ProducerRecord<byte[], byte[]>> records, List<Integer> indexes, boolean[] sent) throws Exception {
        var acks = new ArrayList<CompletableFuture<RecordMetadata>>(indexes.size());
        for (int i : indexes) {
            acks.add(send(producer, records.get(i)));
            sent[i] = true;
        }
        producer.flush();
        var refused = new ArrayList<Refused>();
        Exception failure = null;
        var errorsByTopic = new HashMap<String, Throwable>();
        for (int k = 0; k < acks.size(); k++) {
            int i = indexes.get(k);
            try {
                written.written(acks.get(k).get());
            } catch (ExecutionException e) {
                Exception cause = e.getCause() instanceof Exception c ? c : e;
                if (cause instanceof RecordTooLargeException) {
                    refused.add(new Refused(i, cause));
                } else {
                    errorsByTopic.putIfAbsent(records.get(i).topic(), cause);
                    failure = failure == null ? cause : failure;
                }
            }
        }
        if (failure != null) {
            throw unwritable(errorsByTopic, failure); // the batch is sent again, whole and in order, unless it never can be
        }
        return refused;
    }

    /** Sends one record; its acknowledgement (or error) completes the future, never thrown on the producer's I/O thread. */
    static CompletableFuture<RecordMetadata> send(Producer<byte[], byte[]> producer, ProducerRecord<byte[], byte[]> record) {
        var ack = new CompletableFuture<RecordMetadata>();
        producer.send(record, (metadata, error) -> {
            if (error == null) {
                ack.complete(metadata);
            } else {
                ack.completeExceptionally(error);
            }
        });
        return ack;
    }

    /** The failure to report: a topic that can never be written, named with its fix, or the first error (an outage). */
    private Exception unwritable(Map<String, Throwable> errorsByTopic, Exception first) {
        for (var e : errorsByTopic.entrySet()) {
            if (e.getValue() instanceof TopicAuthorizationException denied) {
                return new UnwritableTopicException("the producer is not authorized to write to " + denied.unauthorizedTopics()
                        + ": grant WRITE and DESCRIBE on them to the router's principal (the ACL list: docs/security.md)", denied);
            }
        }
        for (var e : errorsByTopic.entrySet()) {
            if (e.getValue() instanceof ClusterAuthorizationException denied) {
                return new UnwritableTopicException("the producer is not authorized to start on the cluster (writing to " + errorsByTopic.keySet()
                        + "): an idempotent producer needs WRITE on the topics it writes, or IDEMPOTENT_WRITE on the cluster; grant WRITE "
                        + "and DESCRIBE on them to the router's principal (the ACL list: docs/security.md)", denied);
            }
        }
        var timedOut = TopicProbe.timedOut(errorsByTopic);
        if (!timedOut.isEmpty()) {
            var why = probe.whyUnwritable(timedOut);
            if (why.isPresent()) {
                return new UnwritableTopicException(why.get(), first);
            }
        }
        return first;
    }

    private void replaceProducer() {
        try {
            producer.close(Duration.ZERO);
        } catch (RuntimeException e) {
            LOG.debug("Closing the failed producer: {}", e.getMessage());
        }
        producer = producers.get();
    }

    /** Setup errors and records the broker will never take are not retried; outages and timeouts are. */
    static boolean isRetryable(Throwable e) {
        return !(e instanceof UnwritableTopicException || e instanceof KafkaClients.SetupException || e instanceof AuthenticationException || e instanceof AuthorizationException
                || e instanceof UnsupportedVersionException || e instanceof InvalidConfigurationException
                || e instanceof ConfigException);
    }

    @Override
    public void close() {
        try {
            producer.close(CLOSE_TIMEOUT);
        } catch (RuntimeException e) {
            LOG.warn("Kafka producer did not close cleanly: {}", e.getMessage());
        }
    }
}
