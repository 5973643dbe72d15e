package io.outboxrouter.benchmark;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The relay the outbox articles describe: every interval, lock a page of unrelayed rows with
 * {@code SELECT ... FOR UPDATE SKIP LOCKED}, publish them, wait for the acks, mark them relayed, commit; when the page
 * was full, go again at once.
 */
final class PollingRelay implements Contender {
    private static final int PAGE = 1000;
    private final BenchDb db;
    private final Duration interval;
    private final String bootstrap;
    private final String topic;
    private KafkaArrivals kafka;
    private Thread thread;
    private volatile boolean running = true;

    PollingRelay(BenchDb db, Duration interval, String bootstrap) {
        this.db = db;
        this.interval = interval;
        this.bootstrap = bootstrap;
        this.topic = "bench-relay-" + interval.toMillis() + "ms.Order";
    }

    @Override
    public String name() {
        return "polling relay, every " + interval.toMillis() + " ms";
    }

    @Override
    public Duration start() throws Exception {
        long t0 = System.nanoTime();
        // Only rows written from now on: the earlier ones belong to other contenders' runs.
        db.execute("UPDATE public.outbox SET relayed = true WHERE NOT relayed");
        kafka = new KafkaArrivals(bootstrap, java.util.regex.Pattern.quote(topic));
        var p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        var producer = new KafkaProducer<byte[], byte[]>(p);
        thread = new Thread(() -> {
            try (producer; Connection c = db.connect()) {
                while (running) {
                    int n = relayPage(c, producer);
                    if (n < PAGE) {
                        Thread.sleep(interval.toMillis());
                    }
                }
            } catch (Exception e) {
                if (running) {
                    Benchmark.LOG.warn("polling relay stopped: {}", e.toString());
                }
            }
        }, "polling-relay");
        thread.setDaemon(true);
        thread.start();
        return Duration.ofNanos(System.nanoTime() - t0);
    }

    private int relayPage(Connection c, KafkaProducer<byte[], byte[]> producer) throws Exception {
        var ids = new ArrayList<String>(PAGE);
        var acks = new ArrayList<Future<RecordMetadata>>(PAGE);
        try (var ps = c.prepareStatement("SELECT id::text, aggregateid, type, payload::text FROM public.outbox WHERE NOT relayed "
                + "ORDER BY created_at LIMIT " + PAGE + " FOR UPDATE SKIP LOCKED"); var rs = ps.executeQuery()) {
            while (rs.next()) {
                var record = new ProducerRecord<>(topic, rs.getString(2).getBytes(StandardCharsets.UTF_8),
                        rs.getString(4).getBytes(StandardCharsets.UTF_8));
                record.headers().add("id", rs.getString(1).getBytes(StandardCharsets.UTF_8));
                record.headers().add("type", rs.getString(3).getBytes(StandardCharsets.UTF_8));
                acks.add(producer.send(record));
                ids.add(rs.getString(1));
            }
        }
        producer.flush();
        for (var ack : acks) {
            ack.get();
        }
        if (!ids.isEmpty()) {
            try (var ps = c.prepareStatement("UPDATE public.outbox SET relayed = true WHERE id = ANY (?::uuid[])")) {
                ps.setArray(1, c.createArrayOf("text", ids.toArray()));
                ps.executeUpdate();
            }
        }
        c.commit();
        return ids.size();
    }

    @Override
    public Arrivals arrivals() {
        return kafka.arrivals();
    }

    @Override
    public void close() throws Exception {
        running = false;
        if (thread != null) {
            thread.join(10_000);
        }
        if (kafka != null) {
            kafka.close();
        }
    }
}
