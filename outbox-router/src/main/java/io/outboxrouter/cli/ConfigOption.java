package io.outboxrouter.cli;

import io.outboxrouter.config.ConfigException;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The {@code --config} option every command shares. */
final class ConfigOption {
    @Option(names = {"-c", "--config"}, required = true, paramLabel = "FILE",
            description = "The router's YAML configuration. Every key can also be set as OUTBOX_ROUTER_<KEY> in the environment.")
    Path file;

    /** Loads the config, or prints every problem to stderr and returns null. */
    RouterConfig loadOrReport() {
        try {
            return RouterConfigLoader.load(file, System.getenv());
        } catch (ConfigException e) {
            System.err.println("outbox-router: " + file + ": " + e.getMessage());
            return null;
        }
    }
}
