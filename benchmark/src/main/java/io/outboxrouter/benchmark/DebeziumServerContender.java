package io.outboxrouter.benchmark;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Comparator;
import java.util.regex.Pattern;

/**
 * Debezium Server 3.6.3 with its Kafka sink and the outbox EventRouter, tuned like the router (its poll interval on
 * Postgres, batches of 2048), from the distribution on Maven Central, run on a Java 21+ JDK.
 */
final class DebeziumServerContender implements Contender {
    static final String VERSION = "3.6.3.Final";
    static final String NAME = "Debezium Server " + VERSION.replace(".Final", "") + " + EventRouter";
    private static final String URL = "https://repo.maven.apache.org/maven2/io/debezium/debezium-server-dist/" + VERSION
            + "/debezium-server-dist-" + VERSION + ".tar.gz";

    private final BenchDb db;
    private final String slot;
    private final String bootstrap;
    private final Path home;
    private final Path javaBinary;
    private final int port;
    private ChildProcess process;
    private KafkaArrivals kafka;
    /** Read the records back only once the topics hold this many (a drain), or at once (0). */
    private long readBackAfter;

    DebeziumServerContender(BenchDb db, String slot, String bootstrap, Path home, Path java, int port) {
        this.db = db;
        this.slot = slot;
        this.bootstrap = bootstrap;
        this.home = home;
        this.javaBinary = java;
        this.port = port;
    }

    /**
     * A Debezium Server on {@code slot}, unless left out: by {@code BENCH_DEBEZIUM_SERVER=false}, off Postgres, or with no
     * Java 21 to run it (then {@code note} says so).
     */
    static Optional<DebeziumServerContender> ifWanted(BenchDb db, String slot, String bootstrap, java.util.function.Consumer<String> note)
            throws IOException, InterruptedException {
        if ("false".equals(System.getenv("BENCH_DEBEZIUM_SERVER")) || !db.postgres) {
            return Optional.empty();
        }
        var jdk = findJava21();
        if (jdk.isEmpty()) {
            note.accept("Debezium Server left out: it needs Java 21+ (set BENCH_JAVA21_HOME)");
            return Optional.empty();
        }
        Path cache = Path.of(System.getProperty("user.home"), ".cache", "outbox-router-bench");
        return Optional.of(new DebeziumServerContender(db, slot, bootstrap, install(cache), jdk.get(), Benchmark.freePort()));
    }

    /** Downloads and unpacks the distribution once (a large download, hence the cache) into {@code cache}; returns its home. */
    static Path install(Path cache) throws IOException, InterruptedException {
        Path home = cache.resolve("debezium-server-" + VERSION).resolve("debezium-server");
        if (Files.exists(home.resolve("run.sh"))) {
            return home;
        }
        Files.createDirectories(home.getParent());
        Path tarball = cache.resolve("debezium-server-dist-" + VERSION + ".tar.gz");
        if (!Files.exists(tarball)) {
            Benchmark.LOG.info("Downloading {} (about 700 MB, once)", URL);
            var tmp = cache.resolve(tarball.getFileName() + ".part");
            var r = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build()
                    .send(HttpRequest.newBuilder(URI.create(URL)).build(), HttpResponse.BodyHandlers.ofFile(tmp));
            if (r.statusCode() != 200) {
                throw new IOException("GET " + URL + " answered " + r.statusCode());
            }
            Files.move(tmp, tarball);
        }
        var tar = new ProcessBuilder("tar", "xzf", tarball.toString(), "-C", home.getParent().toString()).inheritIO().start();
        if (tar.waitFor() != 0) {
            throw new IOException("tar xzf " + tarball + " failed");
        }
        return home;
    }

    /** A JDK of version 21 or later: {@code BENCH_JAVA21_HOME}, else the newest under /usr/lib/jvm. */
    static Optional<Path> findJava21() throws IOException {
        String env = System.getenv("BENCH_JAVA21_HOME");
        if (env != null && !env.isBlank()) {
            return Optional.of(Path.of(env, "bin", "java"));
        }
        var jvms = Path.of("/usr/lib/jvm");
        if (!Files.isDirectory(jvms)) {
            return Optional.empty();
        }
        try (var dirs = Files.list(jvms)) {
            return dirs.filter(d -> Files.exists(d.resolve("release")) && Files.isExecutable(d.resolve("bin/java")))
                    .filter(d -> feature(d) >= 21).max(Comparator.comparingInt(DebeziumServerContender::feature))
                    .map(d -> d.resolve("bin/java"));
        }
    }

    private static int feature(Path jdk) {
        try {
            for (String line : Files.readAllLines(jdk.resolve("release"))) {
                if (line.startsWith("JAVA_VERSION=")) {
                    String v = line.substring("JAVA_VERSION=".length()).replace("\"", "");
                    return Integer.parseInt(v.split("[.+-]")[0]);
                }
            }
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
        return 0;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Duration start() throws Exception {
        String topicPrefix = "bench-dbzs-" + slot.replace('_', '-');
        Files.createDirectories(home.resolve("data"));
        // Each run starts a new Postgres whose LSNs begin again at zero: an offset kept from an earlier run would make
        // the connector skip everything below it.
        Files.deleteIfExists(home.resolve("data/offsets-" + slot + ".dat"));
        Files.deleteIfExists(home.resolve("data/" + slot + ".log"));
        Files.writeString(home.resolve("config/application.properties"), String.join("\n",
                "debezium.sink.type=kafka",
                "debezium.sink.kafka.producer.bootstrap.servers=" + bootstrap,
                "debezium.sink.kafka.producer.key.serializer=org.apache.kafka.common.serialization.StringSerializer",
                "debezium.sink.kafka.producer.value.serializer=org.apache.kafka.common.serialization.StringSerializer",
                "debezium.sink.kafka.producer.acks=all",
                "debezium.sink.kafka.producer.enable.idempotence=true",
                // The router's producer settings and column filter, so that neither side wins by tuning alone.
                "debezium.sink.kafka.producer.linger.ms=0",
                "debezium.sink.kafka.producer.batch.size=262144",
                "debezium.sink.kafka.producer.compression.type=lz4",
                "debezium.source.column.include.list=public\\.outbox\\.(id|aggregatetype|aggregateid|type|payload)",
                "debezium.source.tombstones.on.delete=false",
                "debezium.source.connector.class=io.debezium.connector.postgresql.PostgresConnector",
                "debezium.source.offset.storage.file.filename=data/offsets-" + slot + ".dat",
                "debezium.source.offset.flush.interval.ms=0",
                "debezium.source.database.hostname=127.0.0.1",
                "debezium.source.database.port=" + db.server.port(),
                "debezium.source.database.user=" + db.server.user(),
                "debezium.source.database.password=" + db.server.password(),
                "debezium.source.database.dbname=" + db.database,
                "debezium.source.topic.prefix=dbzs",
                "debezium.source.table.include.list=public.outbox",
                "debezium.source.plugin.name=pgoutput",
                "debezium.source.slot.name=" + slot,
                "debezium.source.publication.name=bench_pub_all",
                "debezium.source.publication.autocreate.mode=disabled",
                "debezium.source.snapshot.mode=no_data",
                "debezium.source.poll.interval.ms=" + io.outboxrouter.config.RouterConfigLoader.DEFAULT_POLL_INTERVAL.toMillis(),
                "debezium.source.max.batch.size=2048",
                "debezium.source.max.queue.size=8192",
                "debezium.transforms=outbox",
                "debezium.transforms.outbox.type=io.debezium.transforms.outbox.EventRouter",
                // Quarkus would resolve ${...} itself: the properties file needs \\${...} for a literal placeholder.
                "debezium.transforms.outbox.route.topic.replacement=" + topicPrefix + ".\\\\${routedByValue}",
                "debezium.format.value=json",
                "debezium.format.value.schemas.enable=false",
                "debezium.format.key=json",
                "debezium.format.key.schemas.enable=false",
                "debezium.format.header.schemas.enable=false", // the id header as a plain JSON string
                "quarkus.http.port=" + port,
                "quarkus.log.level=INFO",
                ""));
        if (kafka == null) {
            kafka = new KafkaArrivals(bootstrap, Pattern.quote(topicPrefix) + "\\..*", false, readBackAfter);
        }
        long t0 = System.nanoTime();
        process = ChildProcess.start(List.of("bash", "run.sh"), home,
                Map.of("JAVA_HOME", javaBinary.getParent().getParent().toString(), "JAVA_OPTS",
                        System.getenv().getOrDefault("BENCH_DEBEZIUM_SERVER_OPTS", "-Xmx1g") + " --add-opens java.base/java.lang=ALL-UNNAMED"),
                home.resolve("data/" + slot + ".log"));
        return process.awaitHttp200("http://127.0.0.1:" + port + "/q/health/ready", Duration.ofSeconds(180), t0);
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

    @Override
    public void close() throws Exception {
        if (process != null) {
            process.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }
}
