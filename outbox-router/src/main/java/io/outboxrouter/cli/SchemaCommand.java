package io.outboxrouter.cli;

import io.outboxrouter.config.OutboxConfig;
import io.outboxrouter.config.SourceKind;
import io.outboxrouter.schema.SchemaDdl;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "schema", mixinStandardHelpOptions = true,
        description = {"Prints the DDL the database needs: the outbox table(s) with their index, the Postgres publication, "
                + "and a least-privilege role with its grants.",
                "With --config, names come from the router's configuration; else from --kind and the defaults."})
final class SchemaCommand implements Callable<Integer> {

    static final class Source {
        @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "The router's YAML configuration.")
        java.nio.file.Path config;

        @Option(names = "--kind", paramLabel = "KIND", description = "postgres, mysql or mariadb (without --config).")
        String kind;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Source source;

    @Override
    public Integer call() {
        SchemaDdl ddl;
        if (source.config != null) {
            var option = new ConfigOption();
            option.file = source.config;
            var c = option.loadOrReport();
            if (c == null) {
                return Main.EXIT_USAGE;
            }
            ddl = SchemaDdl.of(c);
        } else {
            SourceKind kind;
            try {
                kind = SourceKind.valueOf(source.kind.trim().toUpperCase());
            } catch (IllegalArgumentException e) {
                System.err.println("outbox-router: --kind must be postgres, mysql or mariadb (was \"" + source.kind + "\")");
                return Main.EXIT_USAGE;
            }
            ddl = new SchemaDdl(kind, List.of(kind.exampleTable()), OutboxConfig.Columns.DEFAULTS,
                    List.of(), "outbox_router", "outbox_router", java.util.Optional.empty());
        }
        System.out.print(ddl.all());
        return 0;
    }
}
