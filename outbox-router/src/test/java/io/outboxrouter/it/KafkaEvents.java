package io.outboxrouter.it;

import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads every record of the topics matching a pattern, from the beginning, as a consumer would. */
final class KafkaEvents implements AutoCloseable {

    /** One record as read from Kafka. */
    record Received(String topic, int partition, long offset, long timestamp, long receivedAtMillis, String key, byte[] value,
                    Map<String, String> headers) {
        String header(String name) {
            return headers.get(name);
        }

        UUID id() {
            return UUID.fromString(headers.get("id"));
        }

        String valueText() {
            return value == null ? null : new String(value, StandardCharsets.UTF_8);
        }
    }

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final List<Received> received = new ArrayList<>();
    /** A rebalance (new topics matching the pattern) rewinds to "earliest": read each position once. */
    private final Set<String> positions = new java.util.HashSet<>();

    KafkaEvents(String bootstrapServers, String topicRegex) {
        this(bootstrapServers, topicRegex, false);
    }

    /** A consumer that reads only committed Kafka transactions, as exactly-once consumers must. */
    static KafkaEvents readCommitted(String bootstrapServers, String topicRegex) {
        return new KafkaEvents(bootstrapServers, topicRegex, true);
    }

    private KafkaEvents(String bootstrapServers, String topicRegex, boolean readCommitted) {
        var p = new Properties();
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, readCommitted ? "read_committed" : "read_uncommitted");
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "verify-" + UUID.randomUUID());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "300"); // find topics the router creates while we read
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(Pattern.compile(topicRegex));
    }

    List<Received> all() {
        return received;
    }

    void poll() {
        for (var r : consumer.poll(Duration.ofMillis(100))) {
            if (!positions.add(r.topic() + "/" + r.partition() + "/" + r.offset())) {
                continue;
            }
            var headers = new LinkedHashMap<String, String>();
            r.headers().forEach(h -> headers.put(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8)));
            received.add(new Received(r.topic(), r.partition(), r.offset(), r.timestamp(), System.currentTimeMillis(),
                    r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8), r.value(), headers));
        }
    }

    /** Polls until every id has arrived at least once; fails after the timeout. */
    List<Received> awaitIds(Set<UUID> ids, Duration timeout) {
        return awaitIds(ids, timeout, null);
    }

    /** As {@link #awaitIds(Set, Duration)}, failing at once with its log when {@code router} exits before all arrived. */
    List<Received> awaitIds(Set<UUID> ids, Duration timeout, RouterProcess router) {
        try {
            await().atMost(timeout).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(1)).until(() -> {
                poll();
                if (router != null && !router.isAlive() && !receivedIds().containsAll(ids)) {
                    throw new AssertionError("the router exited while " + ids.size() + " events were awaited (" + received.size()
                            + " records read); its log ends:\n" + router.logTail());
                }
                return receivedIds().containsAll(ids);
            });
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            var missing = new java.util.HashSet<>(ids);
            missing.removeAll(receivedIds());
            throw new AssertionError(missing.size() + " of " + ids.size() + " events missing after " + timeout + " (read "
                    + received.size() + " records; topics " + received.stream().map(Received::topic).distinct().toList()
                    + "); some missing: " + missing.stream().limit(5).toList() + "; unexpected: "
                    + unexpectedIds(ids).stream().limit(5).toList(), e);
        }
        return received;
    }

    /** Polls until no new record arrived for {@code quiet}: catches duplicates that would follow the last expected record. */
    List<Received> settle(Duration quiet) {
        long quietNanos = quiet.toNanos();
        long last = System.nanoTime();
        int seen = received.size();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() - last < quietNanos && System.nanoTime() < deadline) {
            poll();
            if (received.size() != seen) {
                seen = received.size();
                last = System.nanoTime();
            }
        }
        return received;
    }

    Set<UUID> receivedIds() {
        return received.stream().filter(r -> r.headers().containsKey("id")).map(Received::id).collect(Collectors.toSet());
    }

    /** Ids read that were not expected: with missing ones, they show how an id was changed on the way. */
    List<String> unexpectedIds(Set<UUID> expected) {
        return received.stream().map(r -> r.header("id")).filter(id -> id == null || !expected.contains(UUID.fromString(id))).toList();
    }

    /** Records in a topic, summed over its partitions (0 while it does not exist). */
    static long records(org.apache.kafka.clients.admin.Admin admin, String topic) throws Exception {
        var names = admin.listTopics().names().get();
        if (!names.contains(topic)) {
            return 0;
        }
        var latest = new java.util.HashMap<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec>();
        admin.describeTopics(java.util.List.of(topic)).allTopicNames().get().get(topic).partitions().forEach(p ->
                latest.put(new org.apache.kafka.common.TopicPartition(topic, p.partition()), org.apache.kafka.clients.admin.OffsetSpec.latest()));
        return admin.listOffsets(latest).all().get().values().stream().mapToLong(o -> o.offset()).sum();
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(5));
    }
}
