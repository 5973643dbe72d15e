package io.outboxrouter.quickstart;

import io.outboxrouter.app.JvmSettings;
import io.outboxrouter.app.Router;
import io.outboxrouter.config.RouterConfigLoader;
import io.outboxrouter.testing.KafkaBroker;
import io.outboxrouter.testing.PostgresServer;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import sun.misc.Signal;

/**
 * The router on an embedded default: starts Postgres 17 (logical decoding) and a Kafka broker in this JVM, a small
 * shop that writes orders and their outbox rows in one transaction, the router between them, and a consumer that
 * prints every event as it arrives on its topic. Ctrl-C (or {@code --events N}) stops everything in order.
 */
public final class Quickstart {
    private static final PrintStream OUT = System.out;

    private Quickstart() {
    }

    public static void main(String[] args) throws Exception {
        // QUICKSTART_EVENTS=N stops after N events (for a scripted run); the arguments below do the same.
        int events = Integer.parseInt(System.getenv().getOrDefault("QUICKSTART_EVENTS", "0"));
        Duration interval = Duration.ofSeconds(1);
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--events" -> events = Integer.parseInt(args[++i]);
                case "--interval-ms" -> interval = Duration.ofMillis(Long.parseLong(args[++i]));
                default -> {
                    System.err.println("usage: Quickstart [--events N] [--interval-ms MS]");
                    System.exit(2);
                }
            }
        }
        System.exit(run(events, interval));
    }

    static int run(int maxEvents, Duration interval) throws Exception {
        var stop = new CompletableFuture<String>();
        for (String name : new String[] {"INT", "TERM"}) {
            Signal.handle(new Signal(name), s -> stop.complete("SIG" + s.getName()));
        }
        long started = System.nanoTime();
        OUT.println("outbox-router quickstart: an embedded Postgres and Kafka, a sample shop, the router in between.");
        var dir = Files.createTempDirectory("outbox-router-quickstart");
        try (var postgres = PostgresServer.start(); var kafka = quietly(KafkaBroker::start)) {
            String url = postgres.jdbcUrl(postgres.createDatabase("shop"));
            try (var admin = org.apache.kafka.clients.admin.Admin.create(Map.<String, Object>of("bootstrap.servers", kafka.bootstrapServers()))) {
                // Created up front so the console's subscription sees it at once; the router would create it on first use.
                admin.createTopics(java.util.List.of(new org.apache.kafka.clients.admin.NewTopic("outbox.event.Order", 4, (short) 1)))
                        .all().get(30, TimeUnit.SECONDS);
            }
            Shop.createSchema(url);
            int httpPort = freePort();
            Path config = Files.writeString(dir.resolve("router.yml"), """
                    # The quickstart's router configuration: the same file you would write for your own database.
                    name: shop-router
                    source:
                      url: %s
                      user: %s
                      password: ${QUICKSTART_DB_PASSWORD:-%s}
                      tables: [public.outbox]
                    kafka:
                      bootstrap-servers: %s
                    http:
                      listen: 127.0.0.1:%d
                    """.formatted(url, PostgresServer.USER, PostgresServer.PASSWORD, kafka.bootstrapServers(), httpPort));
            OUT.printf("  Postgres  %s (user %s, password %s)%n", url, PostgresServer.USER, PostgresServer.PASSWORD);
            OUT.printf("  Kafka     %s%n", kafka.bootstrapServers());
            OUT.printf("  Router    java %s -jar outbox-router.jar run --config %s%n", String.join(" ", JvmSettings.RECOMMENDED_OPTIONS),
                    config);
            OUT.printf("  Health    http://127.0.0.1:%d/health/ready%n", httpPort);

            var commits = new ConcurrentHashMap<String, Long>();
            var printed = new CompletableFuture<Void>();
            try (var router = Router.start(RouterConfigLoader.load(config, System.getenv()));
                 var console = new ConsoleConsumer(kafka.bootstrapServers(), commits, OUT, maxEvents, printed)) {
                if (!router.awaitStreaming(Duration.ofSeconds(60))) {
                    router.completion().join();
                    throw new IllegalStateException("the router did not start streaming within 60 s");
                }
                OUT.printf("Streaming after %.1f s. The shop writes an order change every %d ms; each line below came "
                        + "through Kafka. Ctrl-C stops everything.%n%n", (System.nanoTime() - started) / 1e9, interval.toMillis());
                console.start();
                console.awaitAssignment(Duration.ofSeconds(30));
                try (var shop = new Shop(url, commits, interval)) {
                    shop.start();
                    CompletableFuture.anyOf(stop, printed, router.completion()).join();
                }
                OUT.printf("%nStopping: shop, router, consumer, Kafka, Postgres...%n");
            }
        } finally {
            deleteQuietly(dir);
        }
        OUT.println("Stopped cleanly.");
        return 0;
    }

    /** Kafka's storage formatter prints its metadata to stdout; keep the console for the events. */
    private static <T> T quietly(java.util.function.Supplier<T> start) {
        var out = System.out;
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        try {
            return start.get();
        } finally {
            System.setOut(out);
        }
    }

    static int freePort() throws IOException {
        try (var s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void deleteQuietly(Path dir) throws IOException {
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }

    static void awaitTermination(java.util.concurrent.ExecutorService executor) {
        executor.shutdownNow();
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

}
