package io.outboxrouter.benchmark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The head of a results page: when, from which commit and with which command the run was made, and its plot. */
final class RunHeader {
    private RunHeader() {
    }

    /** When, from which commit and with which command the run was made, and the plots it drew. */
    static String markdown() {
        var settings = new ArrayList<String>();
        System.getenv().entrySet().stream().filter(e -> e.getKey().startsWith("BENCH_")).sorted(Map.Entry.comparingByKey())
                .forEach(e -> settings.add(e.getKey() + "=" + e.getValue()));
        var command = new StringBuilder(String.join(" ", settings)).append(settings.isEmpty() ? "" : " ")
                .append("./mvnw -q -pl benchmark -am package -DskipTests exec:exec");
        for (String property : List.of("bench.profile", "bench.only", "bench.repeat", "bench.latency.rounds")) {
            String value = System.getProperty(property, "");
            if (!value.isBlank() && !(property.equals("bench.profile") && value.equals("full"))) {
                command.append(" -D").append(property).append('=').append(value);
            }
        }
        return "# Benchmark results\n\nRun " + java.time.Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MINUTES)
                + " on commit " + commit() + ", written by the benchmark itself (method and caveats: [performance.md](../performance.md)).\n\n"
                + "```bash\n" + command + "\n```\n\n![Drain rates and latency percentiles of this run](results.png)\n\n";
    }

    /** The repository's commit, with "+ changes" when the working tree differs from it; "unknown" outside a clone. */
    private static String commit() {
        try {
            var head = new ProcessBuilder("git", "rev-parse", "--short", "HEAD").redirectErrorStream(true).start();
            String rev = new String(head.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
            var status = new ProcessBuilder("git", "status", "--porcelain", "--untracked-files=no").redirectErrorStream(true).start();
            boolean dirty = !new String(status.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).isBlank();
            return head.waitFor() == 0 ? rev + (dirty ? " + uncommitted changes" : "") : "unknown";
        } catch (IOException e) {
            return "unknown";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }
}
