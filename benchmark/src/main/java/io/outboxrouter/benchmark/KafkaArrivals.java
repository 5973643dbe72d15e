package io.outboxrouter.benchmark;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** A consumer that records when each event (by its {@code id} header) reached Kafka's consumers. */
final class KafkaArrivals implements AutoCloseable {
    /** How long the topics may stay as they are before their reading starts with fewer records than expected. */
    private static final Duration STALLED = Duration.ofSeconds(10);
    private final Arrivals arrivals = new Arrivals();
    private final Thread thread;
    private volatile boolean running = true;

    KafkaArrivals(String bootstrap, String topicRegex) {
        this(bootstrap, topicRegex, false, 0);
    }

    /**
     * @param readCommitted read only committed Kafka transactions, as an exactly-once router's consumers do
     * @param readAfter     when above 0: start reading once the matching topics hold this many records (their end
     *                      offsets, asked every 100 ms), not while they are written
     */
    KafkaArrivals(String bootstrap, String topicRegex, boolean readCommitted, long readAfter) {
        var p = new Properties();
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, readCommitted ? "read_committed" : "read_uncommitted");
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-" + UUID.randomUUID());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "5");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "500"); // sees new topics quickly
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        var consumer = new KafkaConsumer<byte[], byte[]>(p);
        thread = new Thread(() -> {
            try (consumer) {
                if (readAfter > 0) {
                    awaitWritten(bootstrap, Pattern.compile(topicRegex), readCommitted, readAfter);
                }
                consumer.subscribe(Pattern.compile(topicRegex));
                while (running) {
                    var records = consumer.poll(Duration.ofMillis(20));
                    long at = Load.epochMicros();
                    for (var r : records) {
                        var h = r.headers().lastHeader("id");
                        String id = h == null ? r.topic() + "/" + r.partition() + "/" + r.offset() : unquote(new String(h.value(), StandardCharsets.UTF_8));
                        arrivals.arrived(id, at, r.timestampType() == org.apache.kafka.common.record.TimestampType.CREATE_TIME ? r.timestamp() : 0);
                    }
                }
            }
        }, "kafka-arrivals");
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Until the topics matching {@code topics} hold {@code records} records and have held them for a second (Kafka
     * transaction markers count in end offsets: an exactly-once drain reaches the number a little early), until they
     * have not grown for {@link #STALLED} (a contender that delivers fewer: what is there is read), or until this closes.
     */
    private void awaitWritten(String bootstrap, Pattern topics, boolean readCommitted, long records) {
        try (var admin = Admin.create(Map.<String, Object>of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            var options = new ListOffsetsOptions(readCommitted ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED);
            long last = -1;
            long since = System.nanoTime();
            while (running) {
                long written;
                try {
                    written = endOffsets(admin, topics, options);
                } catch (java.util.concurrent.ExecutionException e) {
                    written = last; // a topic still being created: ask again
                }
                long now = System.nanoTime();
                if (written != last) {
                    last = written;
                    since = now;
                    arrivals.written(written);
                } else if (written >= records && now - since >= Duration.ofSeconds(1).toNanos() || now - since >= STALLED.toNanos()) {
                    return;
                }
                Thread.sleep(100);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The sum of the end offsets of the topics matching {@code topics}. */
    private static long endOffsets(Admin admin, Pattern topics, ListOffsetsOptions options)
            throws java.util.concurrent.ExecutionException, InterruptedException {
        var names = admin.listTopics().names().get().stream().filter(t -> topics.matcher(t).matches()).toList();
        if (names.isEmpty()) {
            return 0;
        }
        var request = new HashMap<TopicPartition, OffsetSpec>();
        for (var d : admin.describeTopics(names).allTopicNames().get().values()) {
            d.partitions().forEach(pi -> request.put(new TopicPartition(d.name(), pi.partition()), OffsetSpec.latest()));
        }
        long written = 0;
        for (var o : admin.listOffsets(request, options).all().get().values()) {
            written += o.offset();
        }
        return written;
    }

    /** Debezium's JSON header converter writes strings with quotes. */
    private static String unquote(String s) {
        return s.length() >= 2 && s.startsWith("\"") && s.endsWith("\"") ? s.substring(1, s.length() - 1) : s;
    }

    Arrivals arrivals() {
        return arrivals;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(5_000);
    }
}
