package io.outboxrouter.kafka;

import io.outboxrouter.config.KafkaConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The parking topic's reads and the operator's requests: created with unlimited retention when missing (held events
 * must outlive any park), read whole at start, then followed for requests.
 */
public final class ParkingTopic {
    private static final Logger LOG = LoggerFactory.getLogger(ParkingTopic.class);

    private final Properties clientConfig;
    private final String topic;
    private final Duration giveUpAfter;
    private final Duration keepEnded;

    /** For the commands, which delete nothing. */
    public ParkingTopic(KafkaConfig kafka, String topic) {
        this(kafka, topic, Duration.ZERO);
    }

    /** @param keepEnded how long a running router keeps the records of ended parks ({@code routing.dead-letters.keep-ended-parks}) */
    public ParkingTopic(KafkaConfig kafka, String topic, Duration keepEnded) {
        this.clientConfig = ProducerSettings.atLeastOnce(kafka, "outbox-router-parking");
        this.topic = topic;
        this.giveUpAfter = kafka.giveUpAfter();
        this.keepEnded = keepEnded;
    }

    /** How long the records of ended parks stay before the running router deletes them; zero: for good. */
    public Duration keepEnded() {
        return keepEnded;
    }

    /**
     * Deletes the records of one partition that are older than {@link #keepEnded} and before {@code neededFrom} (the
     * first record a park still needs; -1 when none is parked).
     *
     * @return the offset the partition now starts at, when records were deleted
     */
    public Optional<Long> trim(Admin admin, int partition, long neededFrom) throws ExecutionException, InterruptedException, TimeoutException {
        if (keepEnded.isZero()) {
            return Optional.empty();
        }
        var tp = new TopicPartition(topic, partition);
        long since = System.currentTimeMillis() - keepEnded.toMillis();
        var offsets = admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(since))).all().get(30, TimeUnit.SECONDS);
        long cut = offsets.get(tp).offset();
        if (cut < 0) { // no record that recent: every one is older
            cut = admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get(30, TimeUnit.SECONDS).get(tp).offset();
        }
        if (neededFrom >= 0) {
            cut = Math.min(cut, neededFrom);
        }
        long first = admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get(30, TimeUnit.SECONDS).get(tp).offset();
        if (cut <= first) {
            return Optional.empty();
        }
        admin.deleteRecords(Map.of(tp, org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(cut))).all().get(30, TimeUnit.SECONDS);
        return Optional.of(cut);
    }

    /** How long the router tries to read the topic at start before it stops ({@code kafka.give-up-after}; zero: forever). */
    public Duration giveUpAfter() {
        return giveUpAfter;
    }

    public String name() {
        return topic;
    }

    /**
     * Creates the topic when missing (a partition per stream, nothing deleted by age or size); warns when it deletes by
     * age.
     *
     * @return how many partitions it has, and its id
     */
    public Layout ensureExists(int partitions) throws ExecutionException, InterruptedException {
        try (var admin = KafkaClients.admin(clientConfig)) {
            if (!admin.listTopics().names().get().contains(topic)) {
                try {
                    var created = admin.createTopics(List.of(new NewTopic(topic, Optional.of(partitions), Optional.empty()).configs(Map.of(
                            TopicConfig.RETENTION_MS_CONFIG, "-1", TopicConfig.RETENTION_BYTES_CONFIG, "-1"))));
                    created.all().get();
                    LOG.info("Created the parking topic {} (unlimited retention)", topic);
                    return new Layout(partitions, created.topicId(topic).get());
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw e;
                    }
                }
            }
            try {
                var resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                var configs = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource);
                var retention = configs.get(TopicConfig.RETENTION_MS_CONFIG);
                var cleanup = configs.get(TopicConfig.CLEANUP_POLICY_CONFIG);
                if (cleanup != null && cleanup.value().contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
                    LOG.warn("The parking topic {} is compacted (cleanup.policy={}): compaction keeps one record per aggregate and loses "
                            + "held events. Set cleanup.policy=delete on it", topic, cleanup.value());
                }
                if (retention != null && !"-1".equals(retention.value())) {
                    LOG.warn("The parking topic {} deletes records after {} ms (retention.ms): a park held longer loses its held events. "
                            + "Set retention.ms=-1 on it", topic, retention.value());
                }
            } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                // Only a check: a principal without DESCRIBE_CONFIGS on the topic still parks.
                LOG.warn("Could not read the parking topic {}'s retention.ms ({}): make sure it keeps records as long as a park may last",
                        topic, e.getCause() == null ? e.toString() : e.getCause().toString());
            }
            var description = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            return new Layout(description.partitions().size(), description.topicId());
        }
    }

    /** The topic as {@link #ensureExists} found or made it: its partitions, and its id (another once deleted and created again). */
    public record Layout(int partitions, Uuid id) {
    }

    /**
     * Every record of the topic up to its end now, in order per partition; records it does not know are passed over.
     *
     * @return where each partition ended: what {@link #follow} goes on from
     */
    public Map<TopicPartition, Long> read(Consumer<ParkingRecord> each) {
        var ends = new HashMap<TopicPartition, Long>();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        // A topic created a moment ago may not be in the client's metadata yet: read it once it has partitions.
        while (ends.isEmpty()) {
            TopicScan.scanRecords(clientConfig, List.of(topic), null, r -> ParkingRecord.of(r).ifPresent(each), ends);
            if (ends.isEmpty()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the parking topic " + topic + " has no partitions the router can see after 30 s");
                }
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while reading the parking topic " + topic, e);
                }
            }
        }
        return ends;
    }

    /** Takes the records {@link #fetch} read, a chunk at a time. */
    @FunctionalInterface
    public interface Chunk {
        void accept(List<ParkingRecord> records) throws Exception;
    }

    /**
     * Reads the records at {@code offsets} of one partition, in that order (mostly rising: a read seeks back only where the
     * order goes back), and hands them on in chunks of at most {@code chunkSize}: a release of any size holds one chunk
     * and one fetch at a time.
     *
     * @throws IllegalStateException when a record is gone from the topic (deleted since it was planned)
     */
    public void fetch(int partition, long[] offsets, int chunkSize, Chunk each) throws Exception {
        if (offsets.length == 0) {
            return;
        }
        var tp = new TopicPartition(topic, partition);
        try (var consumer = TopicScan.consumer(clientConfig)) {
            consumer.assign(List.of(tp));
            var chunk = new ArrayList<ParkingRecord>(Math.min(chunkSize, offsets.length));
            int i = 0;
            long lastRead = Long.MAX_VALUE; // forces the first seek
            long stalledSince = System.nanoTime();
            while (i < offsets.length) {
                if (offsets[i] <= lastRead) {
                    consumer.seek(tp, offsets[i]);
                    lastRead = offsets[i] - 1;
                }
                var polled = consumer.poll(Duration.ofMillis(500)).records(tp);
                if (polled.isEmpty()) {
                    if (System.nanoTime() - stalledSince > Duration.ofSeconds(60).toNanos()) {
                        throw new IllegalStateException("the held event at offset " + offsets[i] + " of " + tp + " cannot be read after 60 s");
                    }
                    continue;
                }
                stalledSince = System.nanoTime();
                for (var r : polled) {
                    if (i == offsets.length || offsets[i] <= lastRead) {
                        break; // done, or the order goes back: seek
                    }
                    lastRead = r.offset();
                    if (r.offset() < offsets[i]) {
                        continue;
                    }
                    if (r.offset() > offsets[i]) {
                        throw new IllegalStateException("the held event at offset " + offsets[i] + " of " + tp + " is gone from the "
                                + "topic (its records were deleted since the release was planned)");
                    }
                    var record = ParkingRecord.of(r);
                    if (record.isEmpty()) {
                        throw new IllegalStateException("the record at offset " + offsets[i] + " of " + tp + " is not a held event");
                    }
                    chunk.add(record.get());
                    i++;
                    if (chunk.size() == chunkSize) {
                        each.accept(chunk);
                        chunk = new ArrayList<>(Math.min(chunkSize, offsets.length - i));
                    }
                }
            }
            if (!chunk.isEmpty()) {
                each.accept(chunk);
            }
        }
    }

    /**
     * The topic's id and, per partition, the first offset it still keeps; empty when the topic does not exist. A topic
     * deleted and created again has another id; one whose records were deleted (retention, {@code kafka-delete-records})
     * keeps from a later offset.
     */
    public Optional<Kept> kept(Admin admin) throws ExecutionException, InterruptedException, TimeoutException {
        TopicDescription description;
        try {
            description = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return Optional.empty();
            }
            throw e;
        }
        var earliest = new HashMap<TopicPartition, OffsetSpec>();
        description.partitions().forEach(p -> earliest.put(new TopicPartition(topic, p.partition()), OffsetSpec.earliest()));
        var first = new HashMap<Integer, Long>();
        admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> first.put(tp.partition(), info.offset()));
        return Optional.of(new Kept(description.topicId(), Map.copyOf(first)));
    }

    /** An admin client for {@link #kept}, kept by whoever looks again and again; the caller closes it. */
    public Admin admin() {
        return KafkaClients.admin(clientConfig);
    }

    /** What {@link #kept} found: the topic's id, and each partition's first offset kept. */
    public record Kept(Uuid id, Map<Integer, Long> firstOffsets) {
    }

    /** Whether the topic exists (for the commands, which create nothing). */
    public boolean exists() throws ExecutionException, InterruptedException {
        try (var admin = KafkaClients.admin(clientConfig)) {
            return admin.listTopics().names().get().contains(topic);
        }
    }

    /** A reader of what is written to the topic after {@code from}: the operator's requests, for a running router. */
    public Follower follow(Map<TopicPartition, Long> from) {
        return new Follower(from);
    }

    /**
     * Writes an operator's request (or any record), acknowledged by every in-sync replica before it returns.
     *
     * @return when the broker took it (the record's timestamp)
     */
    public java.time.Instant write(ParkingRecord record) throws ExecutionException, InterruptedException {
        var props = new Properties();
        props.putAll(clientConfig);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
        try (var producer = KafkaClients.producer(props)) {
            return java.time.Instant.ofEpochMilli(producer.send(record.toRecord(topic)).get().timestamp());
        }
    }

    /** Reads on from where the start-up read ended; engine thread only. */
    public final class Follower implements AutoCloseable {
        private final KafkaConsumer<byte[], byte[]> consumer;
        private volatile boolean stopped;

        private Follower(Map<TopicPartition, Long> from) {
            consumer = TopicScan.consumer(clientConfig);
            var partitions = new ArrayList<>(from.keySet());
            consumer.assign(partitions);
            from.forEach(consumer::seek);
        }

        /** What arrived since the last call (waiting at most {@code wait}); empty once {@link #stop} was called. */
        public List<ParkingRecord> poll(Duration wait) {
            var out = new ArrayList<ParkingRecord>();
            try {
                for (var r : consumer.poll(wait)) {
                    ParkingRecord.of(r).ifPresent(out::add);
                }
            } catch (org.apache.kafka.common.errors.WakeupException e) {
                // stop() was called
            }
            return out;
        }

        /** Ends a {@link #poll} under way, from any thread; the next {@link #stopped} says so. */
        public void stop() {
            stopped = true;
            consumer.wakeup();
        }

        public boolean stopped() {
            return stopped;
        }

        @Override
        public void close() {
            consumer.close(Duration.ofSeconds(5));
        }
    }
}
