package io.outboxrouter.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.cdc.Source;
import io.outboxrouter.cdc.Check;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetStoreException;
import io.outboxrouter.retry.Retry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.config.ConfigResource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "check", mixinStandardHelpOptions = true,
        description = {"Checks, without changing anything, that the source database, the offsets table and Kafka are set up "
                + "for the router: every prerequisite as PASS or FAIL, with the fix.",
                "Exit code 0 when all pass, 1 when any fails, 2 when the configuration is invalid."})
final class CheckCommand implements Callable<Integer> {
    private static final Duration KAFKA_TIMEOUT = Duration.ofSeconds(10);

    @Mixin
    ConfigOption config;

    @Option(names = "--json", description = "One JSON object, for scripts.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        var c = config.loadOrReport();
        if (c == null) {
            return Main.EXIT_USAGE;
        }
        var checks = new ArrayList<Check>();
        for (var stream : c.shardConfigs()) {
            // A sharded router: each shard's slot, publication, offsets and position, under the shard's name.
            var source = Source.of(stream);
            var own = new ArrayList<>(source.checks());
            own.add(offsetsCheck(stream));
            if (own.stream().allMatch(Check::ok)) {
                own.add(source.positionCheck(stream));
            }
            stream.shard().ifPresentOrElse(s -> own.forEach(k -> checks.add(k.of(s.toString()))), () -> checks.addAll(own));
        }
        checks.addAll(kafkaChecks(c));
        boolean ok = checks.stream().allMatch(Check::ok);
        if (json) {
            var mapper = new ObjectMapper();
            var out = mapper.createObjectNode().put("router", c.name()).put("ok", ok);
            var list = out.putArray("checks");
            checks.forEach(k -> list.addObject().put("name", k.name()).put("ok", k.ok()).put("detail", k.detail()).put("fix", k.fix()));
            System.out.println(out);
        } else {
            for (Check k : checks) {
                System.out.println((k.ok() ? "PASS  " : "FAIL  ") + k.name() + ": " + k.detail());
                if (!k.ok()) {
                    System.out.println("      fix: " + k.fix());
                }
            }
            System.out.println(ok ? "All checks passed." : checks.stream().filter(k -> !k.ok()).count() + " check(s) failed.");
        }
        return ok ? 0 : Main.EXIT_FAILED;
    }

    private static Check offsetsCheck(RouterConfig c) {
        try (var table = OffsetsCommand.open(c)) {
            var rows = table.rows(Optional.of(c.name()));
            return Check.pass("offsets table", c.offsets().table() + " readable; " + (rows.isEmpty() ? "no stored position yet"
                    : "stored position updated " + rows.get(0).updatedAt()));
        } catch (OffsetStoreException e) {
            String message = String.valueOf(e.getMessage());
            if (message.contains("does not exist") || message.contains("doesn't exist")) {
                return Check.pass("offsets table", c.offsets().table() + " will be created on first start");
            }
            return Check.fail("offsets table", message, "check offsets.url, offsets.user and offsets.password (or the source's)");
        }
    }

    /**
     * With auto-creation off, every topic must exist before its first record: the dead-letter topic and a template
     * without placeholders are checked by name; for a template with placeholders, the topics that exist are listed.
     */
    private static List<Check> topicChecks(RouterConfig c, Set<String> existing) {
        var checks = new ArrayList<Check>();
        var template = c.routing().topic();
        String dlq = c.routing().deadLetters().topic();
        String create = "create it (kafka-topics.sh --create --topic <name>): auto.create.topics.enable is off";
        checks.add(existing.contains(dlq) ? Check.pass("dead-letter topic", dlq + " exists")
                : Check.fail("dead-letter topic", "topic " + dlq + " does not exist and the broker does not create topics", create));
        if (template.placeholders().isEmpty()) {
            String topic = template.source();
            checks.add(existing.contains(topic) ? Check.pass("event topic", topic + " exists")
                    : Check.fail("event topic", "topic " + topic + " does not exist and the broker does not create topics", create));
        } else {
            var pattern = Pattern.compile(Pattern.quote(template.source()).replaceAll("\\$\\{[^}]+}", "\\\\E.+\\\\Q"));
            var matching = existing.stream().filter(t -> pattern.matcher(t).matches()).sorted().toList();
            checks.add(Check.pass("event topics", "auto.create.topics.enable is off: every topic " + template + " renders must exist "
                    + "before its first event (a missing one stops the router with its name); existing: "
                    + (matching.isEmpty() ? "none" : String.join(", ", matching))));
        }
        return checks;
    }

    private static List<Check> kafkaChecks(RouterConfig c) {
        var props = new HashMap<String, Object>(c.kafka().producer());
        props.keySet().removeIf(k -> !AdminClientConfig.configNames().contains(k));
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, c.kafka().bootstrapServers());
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) KAFKA_TIMEOUT.toMillis());
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) KAFKA_TIMEOUT.toMillis());
        try (var admin = Admin.create(props)) {
            var cluster = admin.describeCluster();
            var nodes = cluster.nodes().get(KAFKA_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            var checks = new ArrayList<Check>();
            checks.add(Check.pass("kafka", "reached " + c.kafka().bootstrapServers() + " (" + nodes.size() + " broker(s))"));
            var broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(nodes.iterator().next().id()));
            var brokerConfig = admin.describeConfigs(List.of(broker)).all().get(KAFKA_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).get(broker);
            var autoCreate = brokerConfig.get("auto.create.topics.enable");
            boolean creates = autoCreate != null && Boolean.parseBoolean(autoCreate.value());
            if (creates) {
                checks.add(Check.pass("kafka topics", "the broker creates topics on first use (auto.create.topics.enable)"));
            } else {
                checks.addAll(topicChecks(c, admin.listTopics().names().get(KAFKA_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)));
            }
            return checks;
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return List.of(Check.fail("kafka", "cannot reach " + c.kafka().bootstrapServers() + " within " + KAFKA_TIMEOUT.toSeconds()
                    + " s: " + Retry.describe(e), "check kafka.bootstrap-servers, the network, and kafka.producer security settings"));
        }
    }
}
