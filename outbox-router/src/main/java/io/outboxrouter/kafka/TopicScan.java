package io.outboxrouter.kafka;

import io.outboxrouter.config.KafkaConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;

/**
 * Reads the records of a router's topics as they are now, with its security settings: every partition from a time (or
 * its beginning) to the end it had when the scan began, committed transactions only. For {@code audit}.
 */
public final class TopicScan {

    /**
     * One record, as much of it as an audit needs.
     *
     * @param id         the event id header; null when the record has none
     * @param replayed   published again by {@code replay} or {@code offsets recover}
     * @param deadLetter a dead letter (it has a reason header)
     */
    public record Seen(String topic, int partition, long offset, String key, String id, String aggregateType, boolean replayed,
                       boolean deadLetter) {
    }

    /** How long a scan waits for a record before the end of a partition. */
    private static final Duration STALL = Duration.ofMinutes(2);

    private final Properties clientConfig;

    public TopicScan(KafkaConfig kafka) {
        this.clientConfig = ProducerSettings.atLeastOnce(kafka, "outbox-router-audit");
    }

    /** The topics whose names match, sorted. */
    public List<String> topics(Pattern names) throws ExecutionException, InterruptedException {
        try (var admin = KafkaClients.admin(clientConfig)) {
            return admin.listTopics().names().get().stream().filter(t -> names.matcher(t).matches()).sorted().toList();
        }
    }

    /**
     * Calls {@code each} for every record of {@code topics} from {@code from} (null: the beginning) up to the end each
     * partition had when the scan began.
     *
     * @return the records read
     */
    public long scan(List<String> topics, Instant from, Consumer<Seen> each) {
        return scanRecords(topics, from, r -> each.accept(new Seen(r.topic(), r.partition(), r.offset(), r.key() == null ? null
                : new String(r.key(), StandardCharsets.UTF_8), header(r.headers(), "id"), header(r.headers(), "aggregatetype"),
                "true".equals(header(r.headers(), "replayed")), r.headers().lastHeader("dead-letter.reason") != null)));
    }

    /** As {@link #scan}, each record whole. */
    public long scanRecords(List<String> topics, Instant from, Consumer<ConsumerRecord<byte[], byte[]>> each) {
        return scanRecords(clientConfig, topics, from, each, new HashMap<>());
    }

    /** @param ends filled with the end each partition had when the scan began: where a follower of the topics goes on */
    static long scanRecords(Properties clientConfig, List<String> topics, Instant from, Consumer<ConsumerRecord<byte[], byte[]>> each,
                            Map<TopicPartition, Long> ends) {
        long read = 0;
        try (var consumer = consumer(clientConfig)) {
            var partitions = new ArrayList<TopicPartition>();
            for (String t : topics) {
                consumer.partitionsFor(t, Duration.ofSeconds(30)).forEach(p -> partitions.add(new TopicPartition(p.topic(), p.partition())));
            }
            if (partitions.isEmpty()) {
                return 0;
            }
            consumer.assign(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            ends.putAll(end);
            if (from == null) {
                consumer.seekToBeginning(partitions);
            } else {
                var times = new HashMap<TopicPartition, Long>();
                partitions.forEach(p -> times.put(p, from.toEpochMilli()));
                consumer.offsetsForTimes(times, Duration.ofSeconds(30)).forEach((p, found) -> {
                    if (found == null) {
                        consumer.seek(p, end.get(p));
                    } else {
                        consumer.seek(p, found.offset());
                    }
                });
            }
            var open = new ArrayList<TopicPartition>();
            for (var p : partitions) {
                if (consumer.position(p, Duration.ofSeconds(30)) < end.get(p)) {
                    open.add(p);
                }
            }
            consumer.pause(partitions);
            consumer.resume(open);
            long idleSince = System.nanoTime();
            while (!open.isEmpty()) {
                if (System.nanoTime() - idleSince > STALL.toNanos()) {
                    throw new IllegalStateException("no record arrived from " + open + " for " + STALL.toSeconds() + " s before "
                            + "their end: a partition without a leader, or a broker not answering");
                }
                var polled = consumer.poll(Duration.ofMillis(500));
                if (!polled.isEmpty()) {
                    idleSince = System.nanoTime();
                }
                for (var r : polled) {
                    var p = new TopicPartition(r.topic(), r.partition());
                    if (r.offset() >= end.get(p)) {
                        continue;
                    }
                    read++;
                    each.accept(r);
                }
                for (var it = open.iterator(); it.hasNext(); ) {
                    var p = it.next();
                    // Transaction markers and aborted records take offsets too: the position passes them without a record.
                    if (consumer.position(p) >= end.get(p)) {
                        consumer.pause(List.of(p));
                        it.remove();
                    }
                }
            }
        }
        return read;
    }

    private static String header(Headers headers, String name) {
        var h = headers.lastHeader(name);
        return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    static KafkaConsumer<byte[], byte[]> consumer(Properties clientConfig) {
        // earliest: a segment deleted under the scan moves it to the log's new start, not past everything to its end. Small
        // fetches: the running router's audit scans within the router's heap, and large records must not fill it.
        return ClientConfigs.consumer(clientConfig, "outbox-router-audit-", Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "1000",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.FETCH_MAX_BYTES_CONFIG, Integer.toString(4 << 20),
                ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, Integer.toString(1 << 20)));
    }
}
