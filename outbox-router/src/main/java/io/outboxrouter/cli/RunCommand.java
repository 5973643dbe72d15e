package io.outboxrouter.cli;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.kafka.TransactionalPublisher;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import sun.misc.Signal;

@Command(name = "run", mixinStandardHelpOptions = true,
        description = {"Streams committed outbox rows to Kafka until stopped (SIGTERM or Ctrl-C stop it cleanly, exit 0).",
                "With --once: publishes what is committed now, stores the position and exits 0 (for batch jobs and tests)."})
final class RunCommand implements Callable<Integer> {
    @Mixin
    ConfigOption config;

    @Option(names = "--log-format", paramLabel = "FORMAT", defaultValue = "${env:OUTBOX_ROUTER_LOG_FORMAT:-text}",
            description = "text (default) or json: one JSON object per log line, on stderr.")
    String logFormat;

    @Option(names = "--once",
            description = "Drain: publish every outbox row committed before the start, store the position, exit 0. "
                    + "Refuses (exit 1) while another process runs this router.")
    boolean once;

    @Option(names = "--accept-gap",
            description = "Start even though the stored position no longer adds up with the source (a dropped slot, deleted "
                    + "offsets, an expired binlog): forget it, start afresh, and log what is skipped. Without it the router refuses.")
    boolean acceptGap;

    @Override
    public Integer call() throws InterruptedException {
        switch (logFormat.toLowerCase()) {
            // Read by logback.xml when logging starts, which is below: nothing has logged yet.
            case "json" -> System.setProperty("outbox.log.appender", "JSON");
            case "text" -> System.setProperty("outbox.log.appender", "TEXT");
            default -> {
                System.err.println("outbox-router: --log-format must be text or json (was \"" + logFormat + "\")");
                return Main.EXIT_USAGE;
            }
        }
        var c = config.loadOrReport();
        if (c == null) {
            return Main.EXIT_USAGE;
        }
        var stopRequested = new CompletableFuture<String>();
        for (String name : new String[] {"TERM", "INT"}) {
            Signal.handle(new Signal(name), s -> stopRequested.complete("SIG" + s.getName()));
        }
        Router router;
        try {
            router = Router.start(c, acceptGap);
        } catch (SourceSetupException e) {
            return fail(e.getMessage());
        } catch (RuntimeException e) {
            return fail("could not start: " + Failures.explain(e));
        }
        if (once && !router.isActive() && !"the database".equals(router.waitingFor())) {
            router.close();
            return fail("--once: another process runs router " + c.name() + "; stop it first, or let it do the work");
        }
        var drained = new CompletableFuture<Void>();
        try {
            if (!awaitStreamingOrStop(router, stopRequested, Duration.ofSeconds(60)) && !router.completion().isDone()
                    && !stopRequested.isDone()) {
                System.err.println(router.isActive() ? "outbox-router: not streaming yet after 60 s; still trying (see the log)"
                        : "the database".equals(router.waitingFor()) ? "outbox-router: waiting for the database (see the log); "
                        + "it streams once the database answers"
                        : "outbox-router: standing by: another process runs router " + c.name() + "; this one takes over when it stops");
            }
            if (once) {
                // Waits for streaming first: the drain mark must be read by this router's connection.
                while (!router.isStreaming() && !router.completion().isDone() && !stopRequested.isDone()) {
                    router.awaitStreaming(Duration.ofSeconds(5));
                }
                if (router.isStreaming()) {
                    router.drain().whenComplete((v, e) -> {
                        if (e == null) {
                            drained.complete(null);
                        } else {
                            drained.completeExceptionally(e);
                        }
                    });
                }
            }
            CompletableFuture.anyOf(stopRequested, router.completion(), drained).join();
        } catch (CompletionException e) {
            // the engine failed or the drain could not start: reported below
        } finally {
            router.close();
        }
        if (drained.isCompletedExceptionally()) {
            return fail("--once: " + Failures.explain(drained.handle((v, e) -> e).join()));
        }
        if (drained.isDone()) {
            System.err.println("outbox-router: --once: everything committed before the start is published; "
                    + router.metrics().publishedTotal() + " events, position stored");
        }
        try {
            router.completion().get();
            return 0;
        } catch (ExecutionException e) {
            var fenced = fencedOut(e.getCause());
            if (fenced != null) {
                return fail(fenced.getMessage() + " (exactly-once: what this process sent since its last commit is aborted, and "
                        + "read_committed consumers never see it)");
            }
            return fail("stopped on an error: " + Failures.explain(e.getCause())
                    + ". Fix the cause and start it again: it resumes from its stored offset, nothing is lost");
        }
    }

    /** Waits for the stream in short steps, so that SIGTERM is heeded while a standby waits or a start is slow. */
    private static boolean awaitStreamingOrStop(Router router, CompletableFuture<String> stop, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline && !stop.isDone() && !router.completion().isDone()) {
            if (router.awaitStreaming(Duration.ofMillis(500))) {
                return true;
            }
        }
        return router.isStreaming();
    }

    /** The fencing of this process's Kafka producer, when that is why it stopped: not an error to fix and restart. */
    private static TransactionalPublisher.FencedOutException fencedOut(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof TransactionalPublisher.FencedOutException fenced) {
                return fenced;
            }
        }
        return null;
    }

    private static int fail(String message) {
        System.err.println("outbox-router: " + message);
        return Main.EXIT_FAILED;
    }
}
