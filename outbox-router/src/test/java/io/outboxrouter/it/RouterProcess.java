package io.outboxrouter.it;

import static org.awaitility.Awaitility.await;

import io.outboxrouter.app.JvmSettings;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The router as users run it: {@code java <the README's options> -jar outbox-router.jar run --config FILE}, in a child JVM. */
final class RouterProcess implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();

    private final Process process;
    private final Path log;
    private final int httpPort;

    private RouterProcess(Process process, Path log, int httpPort) {
        this.process = process;
        this.log = log;
        this.httpPort = httpPort;
    }

    static Path jar() {
        var jar = Path.of(System.getProperty("router.jar", "target/outbox-router.jar"));
        if (!Files.exists(jar)) {
            throw new IllegalStateException(jar + " is missing: these tests run after `package` (mvn verify)");
        }
        return jar;
    }

    static RouterProcess start(Path config, int httpPort, Path log) throws IOException {
        return start(config, httpPort, log, java.util.Map.of());
    }

    static RouterProcess start(Path config, int httpPort, Path log, java.util.Map<String, String> env) throws IOException {
        return start(config, httpPort, log, env, JvmSettings.RECOMMENDED_OPTIONS);
    }

    /** With these JVM options instead of the README's. */
    static RouterProcess start(Path config, int httpPort, Path log, java.util.Map<String, String> env, List<String> jvmOptions)
            throws IOException {
        var builder = new ProcessBuilder(command(jvmOptions, "run", "--config", config.toString()));
        builder.environment().putAll(env);
        var process = builder
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        // A test that fails between start and close must not leave a router running after the test JVM.
        Runtime.getRuntime().addShutdownHook(new Thread(process::destroyForcibly));
        return new RouterProcess(process, log, httpPort);
    }

    /** {@code java <jvmOptions> -jar outbox-router.jar <args>}, with this JVM's java. */
    private static List<String> command(List<String> jvmOptions, String... args) {
        var cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-jar", jar().toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** What a command printed (stdout and stderr together), and its exit code. */
    record Finished(int exit, String out) {
    }

    /** {@code java <the README's options> -jar outbox-router.jar <args>} with {@code env}, to its end. */
    static Finished exec(java.util.Map<String, String> env, Duration timeout, String... args) throws IOException, InterruptedException {
        var builder = new ProcessBuilder(command(JvmSettings.RECOMMENDED_OPTIONS, args)).redirectErrorStream(true);
        builder.environment().putAll(env);
        var process = builder.start();
        var out = new java.io.ByteArrayOutputStream();
        var reader = new Thread(() -> {
            try {
                process.getInputStream().transferTo(out);
            } catch (IOException e) {
                // the process ended
            }
        });
        reader.start();
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            reader.join(5_000);
            throw new IllegalStateException(String.join(" ", args) + " still running after " + timeout + ":\n" + out);
        }
        reader.join(5_000);
        return new Finished(process.exitValue(), out.toString(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** {@code run --once}: waits for the process to exit and returns its exit code. */
    static int runOnce(Path config, Path log, Duration timeout) throws IOException, InterruptedException {
        var process = new ProcessBuilder(command(JvmSettings.RECOMMENDED_OPTIONS, "run", "--once", "--config", config.toString()))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.toHandle().destroyForcibly();
            throw new IllegalStateException("run --once still running after " + timeout + ":\n" + Files.readString(log));
        }
        return process.exitValue();
    }

    /** Waits for /health/ready (streaming connected); fails with the router's log when it exits first. */
    RouterProcess awaitReady(Duration timeout) {
        try {
            await().atMost(timeout).pollInterval(Duration.ofMillis(50)).until(() -> {
                if (!process.isAlive()) {
                    throw new IllegalStateException("router exited with " + process.exitValue() + ":\n" + logTail());
                }
                return ready();
            });
        } catch (org.awaitility.core.ConditionTimeoutException e) {
            throw new AssertionError("router not ready within " + timeout + "; its log ends:\n" + logTail(), e);
        }
        return this;
    }

    boolean ready() {
        try {
            var response = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/health/ready"))
                    .timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.discarding());
            return response.statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** SIGTERM, then the exit code. */
    int stop(Duration timeout) throws InterruptedException {
        process.destroy();
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException("router did not stop within " + timeout + " after SIGTERM:\n" + logTail());
        }
        return process.exitValue();
    }

    /** SIGKILL: no shutdown hook, no flush, no offset commit. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGSTOP: the process stops where it is, its connections stay open (a long GC pause, a frozen VM). */
    void pause() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** SIGCONT after {@link #pause()}. */
    void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private void signal(String name) throws IOException, InterruptedException {
        int exit = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start().waitFor();
        if (exit != 0) {
            throw new IllegalStateException("kill -" + name + " " + process.pid() + " exited with " + exit);
        }
    }

    boolean isAlive() {
        return process.isAlive();
    }

    int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("router still running after " + timeout + ":\n" + logTail());
        }
        return process.exitValue();
    }

    String logTail() {
        try {
            var lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}
