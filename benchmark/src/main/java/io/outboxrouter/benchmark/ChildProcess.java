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
import java.util.concurrent.TimeUnit;

/** A JVM the benchmark starts, waits for over HTTP, measures from /proc and stops with SIGTERM. */
final class ChildProcess implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    final Process process;
    final Path log;

    private ChildProcess(Process process, Path log) {
        this.process = process;
        this.log = log;
    }

    static ChildProcess start(List<String> command, Path workDir, Map<String, String> env, Path log) throws IOException {
        var b = new ProcessBuilder(command).directory(workDir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        b.environment().putAll(env);
        return new ChildProcess(b.start(), log);
    }

    /** Polls the URL until it answers 200; fails with the log's tail when the process exits or the timeout passes. */
    Duration awaitHttp200(String url, Duration timeout, long startedNanos) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("exited with " + process.exitValue() + ":\n" + tail());
            }
            try {
                var r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(1)).build(),
                        HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 200) {
                    return Duration.ofNanos(System.nanoTime() - startedNanos);
                }
            } catch (IOException e) {
                // not listening yet
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("not ready after " + timeout + ":\n" + tail());
    }

    String tail() throws IOException {
        var lines = Files.readAllLines(log);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    ProcessStats stats() {
        return new ProcessStats(process.pid());
    }

    /** SIGTERM and wait; SIGKILL after 60 s. */
    @Override
    public void close() throws InterruptedException {
        process.toHandle().destroy();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.toHandle().destroyForcibly();
            process.waitFor();
        }
    }
}
