package io.outboxrouter.app;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.outboxrouter.config.HttpConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;

/**
 * {@code /health/live}, {@code /health/ready} (ready = streaming from the source), {@code /metrics} (Prometheus) and
 * {@code /status} (JSON), on loopback by default.
 */
final class HealthServer implements AutoCloseable {
    private final HttpServer server;
    private final ExecutorService executor;

    private HealthServer(HttpServer server, ExecutorService executor) {
        this.server = server;
        this.executor = executor;
    }

    static HealthServer start(HttpConfig http, String routerName, BooleanSupplier live, BooleanSupplier ready,
                              io.outboxrouter.metrics.RouterMetrics metrics) {
        try {
            var server = HttpServer.create(new InetSocketAddress(http.host(), http.port()), 16);
            var executor = Executors.newSingleThreadExecutor(r -> {
                var t = new Thread(r, "http-" + routerName);
                t.setDaemon(true);
                return t;
            });
            server.setExecutor(executor);
            server.createContext("/health/live", ex -> answer(ex, live.getAsBoolean(), "live"));
            server.createContext("/health/ready", ex -> answer(ex, ready.getAsBoolean(), "ready"));
            server.createContext("/metrics", ex -> send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.scrape()));
            server.createContext("/status", ex -> {
                var stored = metrics.lastOffsetStored();
                send(ex, 200, "application/json", "{\"router\":\"" + routerName + "\",\"live\":" + live.getAsBoolean()
                        + ",\"streaming\":" + ready.getAsBoolean() + ",\"published\":" + metrics.publishedTotal()
                        + ",\"dead_letters\":" + metrics.deadLetteredTotal() + ",\"skipped\":" + metrics.skippedTotal()
                        + ",\"offset_stored_at\":" + (stored == null ? "null" : "\"" + stored + "\"") + "}");
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
