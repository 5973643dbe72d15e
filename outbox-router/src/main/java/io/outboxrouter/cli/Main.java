package io.outboxrouter.cli;

import io.outboxrouter.app.BuildInfo;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code java -jar outbox-router.jar <command>}. Exit codes: 0 done, 1 failed at run time, 2 bad usage or config. */
@Command(name = "outbox-router", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Publishes every committed outbox row to Kafka, from the database's replication stream.",
        subcommands = {RunCommand.class, CheckCommand.class, ConfigCommand.class, SchemaCommand.class, OffsetsCommand.class, ReplayCommand.class,
                AuditCommand.class, ParkedCommand.class, ReshardCommand.class, CommandLine.HelpCommand.class})
public final class Main {
    static final int EXIT_FAILED = 1;
    static final int EXIT_USAGE = 2;

    public static void main(String[] args) {
        System.exit(new CommandLine(new Main()).setExitCodeExceptionMapper(e -> EXIT_FAILED).execute(args));
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"outbox-router " + BuildInfo.current().describe(), "Java " + Runtime.version() + " ("
                    + System.getProperty("java.vendor") + ")"};
        }
    }
}
