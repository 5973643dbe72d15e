package io.outboxrouter.benchmark;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * outbox-router as users run it, in its own JVM: {@code java <the README's JVM options> -jar outbox-router.jar run --config
 * router.yml}; or, for comparison, with no JVM options at all.
 */
final class RouterContender implements Contender {
    static final String NAME = "outbox-router";
    static final String PLAIN = NAME + ", plain java -jar";
    /** The JVM options the README gives for running the router. */
    static final List<String> RECOMMENDED_JVM_OPTIONS = io.outboxrouter.app.JvmSettings.RECOMMENDED_OPTIONS;
    static final String EXACTLY_ONCE = NAME + ", exactly-once";
    static final String MESSAGES = NAME + ", messages";

    private final BenchDb db;
    private final String name;
    private final String bootstrap;
    private final Path dir;
    private final int port;
    private final String topicPrefix;
    private final int shards;
    private final boolean exactlyOnce;
    /** A tableless outbox: {@code source.postgres.messages.prefix}, no table (its database writes messages). */
    private final boolean messages;
    /** Run as {@code java -jar} without the recommended JVM options (with {@code BENCH_ROUTER_PLAIN_OPTS} only). */
    private boolean plain;
    /** The metrics of the measured process were kept before a restart. */
    private boolean metricsSaved;
    private ChildProcess process;
    private KafkaArrivals kafka;
    /** Read the records back only once the topics hold this many (a drain), or at once (0). */
    private long readBackAfter;

    RouterContender(BenchDb db, String name, String topicPrefix, String bootstrap, Path dir, int port) {
        this(db, name, topicPrefix, bootstrap, dir, port, 1);
    }

    /** @param shards {@code source.postgres.shards}: one slot, publication and engine per shard in the one process */
    RouterContender(BenchDb db, String name, String topicPrefix, String bootstrap, Path dir, int port, int shards) {
        this(db, name, topicPrefix, bootstrap, dir, port, shards, false);
    }

    /** @param exactlyOnce {@code delivery: exactly-once}, read by a read_committed consumer */
    RouterContender(BenchDb db, String name, String topicPrefix, String bootstrap, Path dir, int port, int shards, boolean exactlyOnce) {
        this.exactlyOnce = exactlyOnce;
        this.messages = db.messages;
        this.shards = shards;
        this.db = db;
        this.name = name;
        this.bootstrap = bootstrap;
        this.dir = dir;
        this.port = port;
        this.topicPrefix = topicPrefix;
    }

    /** The same router run without the recommended JVM options, as a plain {@code java -jar} would. */
    RouterContender plain() {
        plain = true;
        return this;
    }

    boolean isPlain() {
        return plain;
    }

    @Override
    public String name() {
        return plain ? PLAIN : !db.postgres ? NAME + " (MariaDB)" : shards > 1 ? NAME + ", " + shards + " shards" : exactlyOnce ? EXACTLY_ONCE
                : messages ? MESSAGES : NAME;
    }

    boolean exactlyOnce() {
        return exactlyOnce;
    }

    boolean messages() {
        return messages;
    }

    int shards() {
        return shards;
    }

    String slot() {
        return name.replace('-', '_');
    }

    /** The slots it reads: one, or one per shard. */
    List<String> slots() {
        return shards == 1 ? List.of(slot())
                : java.util.stream.IntStream.range(0, shards).mapToObj(i -> slot() + "_shard_" + i + "_of_" + shards).toList();
    }

    @Override
    public Duration start() throws Exception {
        String source = messages
                ? """
                source:
                  kind: postgres
                  url: %s
                  user: %s
                  password: "%s"
                  postgres: { slot: %s, publication: bench_messages, messages: { prefix: outbox } }
                """.formatted(db.server.jdbcUrl(db.database), db.server.user(), db.server.password(), slot())
                : db.postgres
                ? """
                source:
                  kind: postgres
                  url: %s
                  user: %s
                  password: "%s"
                  tables: [public.outbox]
                  postgres: { slot: %s, publication: bench_pub, shards: %d }
                %s
                """.formatted(db.server.jdbcUrl(db.database), db.server.user(), db.server.password(), slot(), shards,
                // e.g. "  poll-interval: 25ms": a source setting's trade-off, measured
                System.getenv().getOrDefault(plain ? "BENCH_ROUTER_PLAIN_SOURCE_YAML" : "BENCH_ROUTER_SOURCE_YAML", ""))
                : """
                source:
                  kind: mariadb
                  url: %s
                  user: %s
                  password: "%s"
                  tables: [%s]
                """.formatted(db.server.jdbcUrl(db.database), db.server.user(), db.server.password(), db.table());
        var config = Files.writeString(dir.resolve(name + ".yml"), "name: " + name + "\n" + source + """
                routing: { topic: "%s.${aggregatetype}" }
                %s
                kafka: { bootstrap-servers: "%s"%s }
                http: { listen: "127.0.0.1:%d" }
                delivery: %s
                """.formatted(topicPrefix, System.getenv().getOrDefault(plain ? "BENCH_ROUTER_PLAIN_EXTRA_YAML" : "BENCH_ROUTER_EXTRA_YAML", ""), bootstrap,
                // e.g. ", producer: { compression.type: none }"
                System.getenv().getOrDefault(plain ? "BENCH_ROUTER_PLAIN_KAFKA" : "BENCH_ROUTER_KAFKA", ""), port,
                exactlyOnce ? "exactly-once" : "at-least-once"));
        if (kafka == null) {
            kafka = new KafkaArrivals(bootstrap, java.util.regex.Pattern.quote(topicPrefix) + "\\..*", exactlyOnce, readBackAfter);
        }
        long t0 = System.nanoTime();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        var command = new java.util.ArrayList<>(List.of(java));
        command.addAll(plain ? options("BENCH_ROUTER_PLAIN_OPTS") : RECOMMENDED_JVM_OPTIONS);
        command.addAll(options("BENCH_ROUTER_JVM_OPTS")); // e.g. a JFR recording, for profiling
        // BENCH_ROUTER_PLAIN_JAR: another build's jar, for a before-and-after of a change in one run.
        String jar = plain ? System.getenv().getOrDefault("BENCH_ROUTER_PLAIN_JAR", "") : "";
        command.addAll(List.of("-jar", jar.isBlank() ? Benchmark.routerJar().toString() : jar, "run", "--config", config.toString()));
        process = ChildProcess.start(command, dir, environment(plain ? "BENCH_ROUTER_PLAIN_ENV" : "BENCH_ROUTER_ENV"), dir.resolve(name + ".log"));
        return process.awaitHttp200("http://127.0.0.1:" + port + "/health/ready", Duration.ofSeconds(120), t0);
    }

    /** Environment variables for the router process from a variable of the benchmark's: {@code NAME=value NAME2=value2}. */
    private static Map<String, String> environment(String variable) {
        var out = new java.util.LinkedHashMap<String, String>();
        for (String pair : System.getenv().getOrDefault(variable, "").trim().split("\\s+")) {
            if (pair.contains("=")) {
                out.put(pair.substring(0, pair.indexOf('=')), pair.substring(pair.indexOf('=') + 1));
            }
        }
        return out;
    }

    /** JVM options from an environment variable, {@code {name}} replaced by the contender's name and the time. */
    private List<String> options(String variable) {
        return jvmOptions(variable, name);
    }

    /** JVM options from a variable of the benchmark's, split at spaces; {@code {name}} becomes the contender's name and the time. */
    static List<String> jvmOptions(String variable, String name) {
        String value = System.getenv(variable);
        return value == null || value.isBlank() ? List.of()
                : List.of(value.trim().replace("{name}", name + "-" + System.currentTimeMillis()).split("\\s+"));
    }

    /** SIGTERM, then start again: the restart-to-streaming time. */
    Duration restart() throws Exception {
        saveMetrics(); // what the run measured: the restarted process starts its metrics afresh, and close keeps these
        metricsSaved = true;
        process.close();
        return start();
    }

    @Override
    public void readBackAfter(long events) {
        readBackAfter = events;
    }

    @Override
    public Arrivals arrivals() {
        return kafka.arrivals();
    }

    @Override
    public boolean alive() {
        return process == null || process.process.isAlive();
    }

    @Override
    public ProcessStats stats() {
        return process.stats();
    }

    /**
     * Keeps the router's own metrics beside the results, for batch sizes, publish times and commit-to-ack latency: where a
     * latency tail arises, before the router's publish (the log reader, the queue) or in it (Kafka's acks).
     */
    private void saveMetrics() {
        try {
            var body = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            Files.writeString(dir.resolve(topicPrefix + "-metrics.txt"), body);
        } catch (Exception e) {
            Benchmark.LOG.debug("no metrics from {}: {}", name, e.toString());
        }
    }

    @Override
    public void close() throws Exception {
        if (process != null) {
            if (!metricsSaved) {
                saveMetrics();
            }
            process.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }
}
