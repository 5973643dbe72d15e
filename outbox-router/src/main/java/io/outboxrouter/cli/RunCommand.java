package io.outboxrouter.cli;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import sun.misc.Signal;

@Command(name = "run", mixinStandardHelpOptions = true,
        description = "Streams committed outbox rows to Kafka until stopped (SIGTERM or Ctrl-C stop it cleanly, exit 0).")
final class RunCommand implements Callable<Integer> {
    @Mixin
    ConfigOption config;

    @picocli.CommandLine.Option(names = "--log-format", paramLabel = "FORMAT", defaultValue = "${env:OUTBOX_ROUTER_LOG_FORMAT:-text}",
            description = "text (default) or json: one JSON object per log line, on stderr.")
    String logFormat;

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
            router = Router.start(c);
        } catch (SourceSetupException e) {
            return fail(e.getMessage());
        } catch (RuntimeException e) {
            return fail("could not start: " + Failures.explain(e));
        }
        try {
            if (!router.awaitStreaming(Duration.ofSeconds(60)) && !router.completion().isDone()) {
                System.err.println(router.isActive() ? "outbox-router: not streaming yet after 60 s; still trying (see the log)"
                        : "outbox-router: standing by: another process runs router " + c.name() + "; this one takes over when it stops");
            }
            CompletableFuture.anyOf(stopRequested, router.completion()).join();
        } catch (CompletionException e) {
            // the engine failed: reported below
        } finally {
            router.close();
        }
        try {
            router.completion().get();
            return 0;
        } catch (ExecutionException e) {
            return fail("stopped on an error: " + Failures.explain(e.getCause())
                    + ". Fix the cause and start it again: it resumes from its stored offset, nothing is lost");
        }
    }

    private static int fail(String message) {
        System.err.println("outbox-router: " + message);
        return Main.EXIT_FAILED;
    }
}
