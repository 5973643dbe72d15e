package io.outboxrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class MainTest {
    @TempDir
    Path dir;

    private record Result(int exit, String out, String err) {
    }

    private Result run(String... args) {
        var out = new ByteArrayOutputStream();
        var err = new ByteArrayOutputStream();
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            int exit = new CommandLine(new Main()).execute(args);
            return new Result(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    @Test
    void anInvalidConfigExitsTwoAndListsEveryProblemByKey() throws Exception {
        var file = Files.writeString(dir.resolve("router.yml"), """
                name: orders-router
                source: { url: "jdbc:postgresql://db/app", user: router, password: hunter2, max-batch-size: lots }
                kafka: { bootstrap-servers: "k:9092", give-up-after: forever }
                """);
        for (String command : new String[] {"run", "config"}) {
            var r = run(command, "--config", file.toString());
            assertThat(r.exit()).isEqualTo(2);
            assertThat(r.err()).contains("invalid configuration (2 problems)")
                    .contains("source.max-batch-size: must be a whole number (was \"lots\")")
                    .contains("kafka.give-up-after: must be a duration such as 500ms, 10s, 2m or 1h (was \"forever\")")
                    .doesNotContain("hunter2");
        }
    }

    @Test
    void configPrintsTheEffectiveConfigWithSecretsMasked() throws Exception {
        var file = Files.writeString(dir.resolve("router.yml"), """
                name: orders-router
                source: { url: "jdbc:postgresql://db/app", user: router, password: hunter2 }
                kafka: { bootstrap-servers: "k:9092" }
                """);
        var r = run("config", "--config", file.toString());
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("slot: orders_router").contains("topic: \"outbox.event.${aggregatetype}\"")
                .contains("password: '******'").doesNotContain("hunter2");
    }

    @Test
    void aMissingConfigFileIsAClearError() {
        var r = run("config", "--config", dir.resolve("nope.yml").toString());
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("cannot read configuration file").contains("nope.yml");
    }
}
