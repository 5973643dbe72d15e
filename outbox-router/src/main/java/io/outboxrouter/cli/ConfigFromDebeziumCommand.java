package io.outboxrouter.cli;

import io.outboxrouter.migrate.FromDebeziumServer;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

@Command(name = "from-debezium", mixinStandardHelpOptions = true,
        description = {"Turns a Debezium Server application.properties (Postgres, MySQL or MariaDB source, the outbox EventRouter, "
                + "the Kafka sink) into the router's YAML, on standard output, so that consumers get the same records.",
                "Properties the router makes unnecessary are named in comments with the reason; one with no equivalent is refused "
                        + "with the reason (exit code 2)."})
final class ConfigFromDebeziumCommand implements Callable<Integer> {
    @Parameters(paramLabel = "FILE", description = "Debezium Server's application.properties")
    Path file;

    @Override
    public Integer call() {
        var properties = new Properties();
        try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            properties.load(r);
        } catch (IOException e) {
            System.err.println("outbox-router: cannot read " + file + " (" + e.getClass().getSimpleName() + ")");
            return Main.EXIT_USAGE;
        }
        var result = FromDebeziumServer.convert(properties);
        var out = new StringBuilder("# outbox-router configuration converted from " + file.getFileName() + "\n");
        for (var d : result.dropped()) {
            out.append("# ").append(d.refused() ? "NOT CONVERTED " : "left out ").append(d.property()).append(": ").append(d.reason())
                    .append('\n');
        }
        out.append(result.yaml());
        System.out.print(out);
        result.dropped().stream().filter(FromDebeziumServer.Dropped::refused)
                .forEach(d -> System.err.println("outbox-router: " + d.property() + ": " + d.reason()));
        return result.anyRefused() ? Main.EXIT_USAGE : 0;
    }
}
