package io.outboxrouter.cli;

import io.outboxrouter.config.ConfigException;
import io.outboxrouter.config.EffectiveConfig;
import io.outboxrouter.config.RouterConfigLoader;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "config", mixinStandardHelpOptions = true, subcommands = ConfigFromDebeziumCommand.class,
        description = "Validates the configuration and prints it as the router sees it: defaults filled in, secrets masked.")
final class ConfigCommand implements Callable<Integer> {
    // Not the shared mixin: required there, and `config from-debezium` needs none.
    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
            description = "The router's YAML configuration. Every key can also be set as OUTBOX_ROUTER_<KEY> in the environment.")
    Path file;

    @Override
    public Integer call() {
        if (file == null) {
            System.err.println("outbox-router config: --config FILE is required (or: config from-debezium FILE)");
            return Main.EXIT_USAGE;
        }
        try {
            System.out.print(EffectiveConfig.toYaml(RouterConfigLoader.load(file, System.getenv())));
            return 0;
        } catch (ConfigException e) {
            System.err.println("outbox-router: " + file + ": " + e.getMessage());
            return Main.EXIT_USAGE;
        }
    }
}
