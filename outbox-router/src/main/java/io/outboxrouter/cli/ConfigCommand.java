package io.outboxrouter.cli;

import io.outboxrouter.config.EffectiveConfig;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

@Command(name = "config", mixinStandardHelpOptions = true,
        description = "Validates the configuration and prints it as the router sees it: defaults filled in, secrets masked.")
final class ConfigCommand implements Callable<Integer> {
    @Mixin
    ConfigOption config;

    @Override
    public Integer call() {
        var c = config.loadOrReport();
        if (c == null) {
            return Main.EXIT_USAGE;
        }
        System.out.print(EffectiveConfig.toYaml(c));
        return 0;
    }
}
