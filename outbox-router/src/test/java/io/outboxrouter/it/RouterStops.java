package io.outboxrouter.it;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.cli.Main;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;

/** How a test reads a router's stop and runs the operator's commands. */
final class RouterStops {
    private RouterStops() {
    }

    /** The message of the router's stop, which must come within seconds. */
    static String failure(Router router) throws Exception {
        try {
            router.completion().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            var cause = e.getCause();
            while (cause.getCause() != null && !(cause instanceof SourceSetupException)) {
                cause = cause.getCause();
            }
            return cause.getMessage();
        }
        throw new AssertionError("the router ended without an error");
    }

    /** Runs a command of the jar in this JVM; returns what it printed on standard output. */
    static String cli(String... args) {
        var out = new ByteArrayOutputStream();
        var old = System.out;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            new CommandLine(new Main()).execute(args);
        } finally {
            System.setOut(old);
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
