package io.outboxrouter.app;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.outboxrouter.config.HttpConfig;
import io.outboxrouter.metrics.RouterMetrics;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * {@code /health/live}, {@code /health/ready} (ready = streaming from the source; with {@code ?standby=true} a process
 * that stands by behind the lock's holder counts as ready too, for orchestrators that roll one pod after another),
 * {@code /metrics} (Prometheus),
 * {@code /status} (JSON) and {@code /} (an HTML status page), on loopback by default. The health checks answer from
 * memory, and several threads serve requests, so a probe never waits behind a slow status page.
 */
final class HealthServer implements AutoCloseable {
    private static final int THREADS = 4;

    private final HttpServer server;
    private final ExecutorService executor;

    private HealthServer(HttpServer server, ExecutorService executor) {
        this.server = server;
        this.executor = executor;
    }

    static HealthServer start(HttpConfig http, String routerName, BooleanSupplier live, BooleanSupplier ready,
                              BooleanSupplier standingBy, Supplier<String> statusJson, Supplier<String> statusPage, RouterMetrics metrics) {
        try {
            var server = HttpServer.create(new InetSocketAddress(http.host(), http.port()), 16);
            var executor = Executors.newFixedThreadPool(THREADS, r -> {
                var t = new Thread(r, "http-" + routerName);
                t.setDaemon(true);
                return t;
            });
            server.setExecutor(executor);
            server.createContext("/health/live", ex -> answer(ex, live.getAsBoolean(), "live"));
            server.createContext("/health/ready", ex -> {
                boolean standbyCounts = "standby=true".equals(ex.getRequestURI().getQuery());
                answer(ex, ready.getAsBoolean() || standbyCounts && standingBy.getAsBoolean(), standbyCounts ? "ready or standby" : "ready");
            });
            server.createContext("/metrics", ex -> send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.scrape()));
            server.createContext("/status", ex -> send(ex, 200, "application/json", statusJson.get()));
            server.createContext("/", ex -> {
                if (!"/".equals(ex.getRequestURI().getPath())) {
                    send(ex, 404, "text/plain; charset=utf-8", "not found; see / for the status page\n");
                } else {
                    send(ex, 200, "text/html; charset=utf-8", statusPage.get());
                }
            });
            server.start();
            return new HealthServer(server, executor);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on " + http.host() + ":" + http.port()
                    + " (http.listen; use another port or http.enabled: false)", e);
        }
    }

    int port() {
        return server.getAddress().getPort();
    }

    private static void answer(HttpExchange ex, boolean ok, String what) throws IOException {
        send(ex, ok ? 200 : 503, "application/json", "{\"status\":\"" + (ok ? "UP" : "DOWN") + "\",\"check\":\"" + what + "\"}");
    }

    private static void send(HttpExchange ex, int status, String type, String text) throws IOException {
        byte[] body = text.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", type);
        ex.sendResponseHeaders(status, body.length);
        try (var out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
