package io.outboxrouter.quickstart;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** A Kafka consumer of {@code outbox.event.*} that prints each event with its commit-to-consumer latency. */
final class ConsoleConsumer implements AutoCloseable {
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final Map<String, Long> commits;
    private final PrintStream out;
    private final int maxEvents;
    private final CompletableFuture<Void> done;
    private final Thread thread;
    private final java.util.concurrent.CountDownLatch assigned = new java.util.concurrent.CountDownLatch(1);
    private volatile boolean running = true;
    private int printed;

    ConsoleConsumer(String bootstrapServers, Map<String, Long> commits, PrintStream out, int maxEvents, CompletableFuture<Void> done) {
        var p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "quickstart-console-" + UUID.randomUUID());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "500");
        this.consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        this.commits = commits;
        this.out = out;
        this.maxEvents = maxEvents;
        this.done = done;
        this.thread = new Thread(this::loop, "console-consumer");
    }

    /** Waits until the consumer owns the event topic's partitions, so the first event is not held by a group join. */
    boolean awaitAssignment(Duration timeout) throws InterruptedException {
        return assigned.await(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    void start() {
        out.printf("  %-22s %-10s %-13s %9s  %s%n", "topic", "key", "type", "latency", "payload");
        thread.start();
    }

    private void loop() {
        consumer.subscribe(Pattern.compile("outbox\\.event\\..*"), new org.apache.kafka.clients.consumer.ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(java.util.Collection<org.apache.kafka.common.TopicPartition> partitions) {
            }

            @Override
            public void onPartitionsAssigned(java.util.Collection<org.apache.kafka.common.TopicPartition> partitions) {
                if (!partitions.isEmpty()) {
                    assigned.countDown();
                }
            }
        });
        while (running) {
            for (var r : consumer.poll(Duration.ofMillis(100))) {
                print(r);
                if (maxEvents > 0 && ++printed >= maxEvents) {
                    done.complete(null);
                    return;
                }
            }
        }
    }

    private void print(ConsumerRecord<byte[], byte[]> r) {
        long now = System.nanoTime();
        String id = header(r, "id");
        Long committed = id == null ? null : commits.remove(id);
        String latency = committed == null ? "-" : String.format("%.1f ms", (now - committed) / 1e6);
        out.printf("  %-22s %-10s %-13s %9s  %s%n", r.topic(), new String(r.key(), StandardCharsets.UTF_8), header(r, "type"),
                latency, r.value() == null ? "(tombstone)" : new String(r.value(), StandardCharsets.UTF_8));
    }

    private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(5_000);
        consumer.close(Duration.ofSeconds(5));
    }
}
