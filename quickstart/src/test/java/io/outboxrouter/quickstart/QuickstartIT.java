package io.outboxrouter.quickstart;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The quickstart as a new user runs it: its own JVM, events printed, Ctrl-C (SIGTERM here) stops everything. */
class QuickstartIT {
    private static final Pattern EVENT_LINE = Pattern.compile("\\s+outbox\\.event\\.Order\\s+order-\\d+\\s+Order(Placed|Paid|Shipped)\\s+[\\d.]+ ms\\s+\\{.*}");
    private static final Pattern POSTGRES_PORT = Pattern.compile("Postgres\\s+jdbc:postgresql://127\\.0\\.0\\.1:(\\d+)/shop.*");

    private record Run(Process process, List<String> lines, CompletableFuture<Void> firstEvent, Thread reader) {
        /** Waits for the process to exit and for its output to be read to the end. */
        boolean awaitExit(long seconds) throws InterruptedException {
            boolean exited = process.waitFor(seconds, TimeUnit.SECONDS);
            reader.join(10_000);
            return exited;
        }
    }

    private static Run start(String events) throws IOException {
        var builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dlogback.configurationFile=quickstart-logback.xml", "-cp", System.getProperty("java.class.path"),
                Quickstart.class.getName()).redirectErrorStream(true);
        builder.environment().put("QUICKSTART_EVENTS", events);
        var process = builder.start();
        var lines = java.util.Collections.synchronizedList(new ArrayList<String>());
        var firstEvent = new CompletableFuture<Void>();
        var reader = new Thread(() -> {
            try (var in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    lines.add(line);
                    if (EVENT_LINE.matcher(line).matches()) {
                        firstEvent.complete(null);
                    }
                }
            } catch (IOException e) {
                firstEvent.completeExceptionally(e);
            }
        });
        reader.setDaemon(true);
        reader.start();
        return new Run(process, lines, firstEvent, reader);
    }

    private static int postgresPort(List<String> lines) {
        synchronized (lines) {
            return lines.stream().map(String::trim).map(POSTGRES_PORT::matcher).filter(java.util.regex.Matcher::matches)
                    .map(m -> Integer.parseInt(m.group(1))).findFirst().orElseThrow();
        }
    }

    private static boolean listening(int port) {
        try (var s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void printsEventsWithLatencyThenStopsCleanly() throws Exception {
        var run = start("3");
        assertThat(run.awaitExit(180)).as("finished").isTrue();
        String output = String.join("\n", run.lines());
        assertThat(run.process().exitValue()).as(output).isZero();
        assertThat(run.lines().stream().filter(l -> EVENT_LINE.matcher(l).matches())).as(output).hasSize(3);
        assertThat(output).contains("Streaming after", "Stopped cleanly.").doesNotContain("Exception");
        assertThat(listening(postgresPort(run.lines()))).as("embedded Postgres stopped").isFalse();
    }

    @Test
    void sigtermStopsEverythingCleanly() throws Exception {
        var run = start("0");
        try {
            run.firstEvent().get(180, TimeUnit.SECONDS);
            int port = postgresPort(run.lines());
            assertThat(listening(port)).isTrue();
            // SIGTERM (Ctrl-C sends SIGINT; both stop it the same way). Process.destroy() would also close our end
            // of its stdout and lose the last lines; the handle only signals.
            run.process().toHandle().destroy();
            assertThat(run.awaitExit(60)).isTrue();
            String output = String.join("\n", run.lines());
            assertThat(run.process().exitValue()).as(output).isZero();
            assertThat(output).contains("Stopping: shop, router, consumer, Kafka, Postgres...", "Stopped cleanly.");
            assertThat(listening(port)).as("embedded Postgres stopped").isFalse();
        } finally {
            run.process().destroyForcibly();
        }
    }
}
