package io.outboxrouter.benchmark;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** A consumer that records when each event (by its {@code id} header) reached Kafka's consumers. */
final class KafkaArrivals implements AutoCloseable {
    private final Arrivals arrivals = new Arrivals();
    private final Thread thread;
    private volatile boolean running = true;

    KafkaArrivals(String bootstrap, String topicRegex) {
        this(bootstrap, topicRegex, false);
    }

    /** @param readCommitted read only committed Kafka transactions, as an exactly-once router's consumers do */
    KafkaArrivals(String bootstrap, String topicRegex, boolean readCommitted) {
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
        consumer.subscribe(Pattern.compile(topicRegex));
        thread = new Thread(() -> {
            try (consumer) {
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
