package io.outboxrouter.benchmark;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.time.Duration;
import java.util.Properties;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** A consumer that records when each event (by its {@code id} header) reached Kafka's consumers. */
final class KafkaArrivals implements AutoCloseable {
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

    /** Until the topics matching {@code topics} hold {@code records} records, or this closes. */
    private void awaitWritten(String bootstrap, Pattern topics, boolean readCommitted, long records) {
        try (var admin = Admin.create(Map.<String, Object>of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            var options = new ListOffsetsOptions(readCommitted ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED);
            while (running) {
                var names = admin.listTopics().names().get().stream().filter(t -> topics.matcher(t).matches()).toList();
                long written = 0;
                if (!names.isEmpty()) {
                    var request = new HashMap<TopicPartition, OffsetSpec>();
                    for (var d : admin.describeTopics(names).allTopicNames().get().values()) {
                        d.partitions().forEach(pi -> request.put(new TopicPartition(d.name(), pi.partition()), OffsetSpec.latest()));
                    }
                    for (var o : admin.listOffsets(request, options).all().get().values()) {
                        written += o.offset();
                    }
                }
                arrivals.written(written);
                if (written >= records) {
                    return;
                }
                Thread.sleep(100);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            Benchmark.LOG.warn("Reading end offsets failed ({}); reading the records now", e.toString());
        }
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
