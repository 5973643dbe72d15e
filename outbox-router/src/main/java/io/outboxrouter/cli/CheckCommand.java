package io.outboxrouter.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.cdc.Check;
import io.outboxrouter.cdc.Source;
import io.outboxrouter.config.KafkaConfig;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.KafkaClients;
import io.outboxrouter.kafka.ProducerSettings;
import io.outboxrouter.offsets.OffsetStoreException;
import io.outboxrouter.retention.RetentionChecks;
import io.outboxrouter.retry.Retry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "check", mixinStandardHelpOptions = true,
        description = {"Checks that the source database, the offsets table and Kafka are set up for the router: every "
                + "prerequisite as PASS or FAIL, with the fix. It writes nothing to the databases: the slot, the publication "
                + "and the offsets table it reports as missing are made by the first start. Under exactly-once it registers a "
                + "transactional id of its own with the brokers (outbox-router.<name>.check), to prove that the producer may.",
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
            own.addAll(RetentionChecks.checks(stream, source.outboxSql()));
            own.addAll(io.outboxrouter.audit.AuditChecks.checks(stream, source.outboxSql()));
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
            checks.forEach(k -> list.addObject().put("name", k.name()).put("ok", k.ok()).put("warning", k.warning()).put("detail", k.detail())
                    .put("fix", k.fix()));
            System.out.println(out);
        } else {
            for (Check k : checks) {
                System.out.println((k.warning() ? "WARN  " : k.ok() ? "PASS  " : "FAIL  ") + k.name() + ": " + k.detail());
                if (!k.fix().isEmpty()) {
                    System.out.println("      fix: " + k.fix());
                }
            }
            long warnings = checks.stream().filter(Check::warning).count();
            System.out.println((ok ? "All checks passed." : checks.stream().filter(k -> !k.ok()).count() + " check(s) failed.")
                    + (warnings > 0 ? " " + warnings + " warning(s)." : ""));
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

    /**
     * What {@code delivery: exactly-once} needs: a transaction state log the cluster can hold, the producer's permission
     * to use transactional ids (tried with a probe id under the router's prefix, which fences nothing of the router's),
     * and a compacted offsets topic (or the right to create one).
     */
    private static List<Check> exactlyOnceChecks(RouterConfig c, Admin admin, int brokers, org.apache.kafka.clients.admin.Config broker)
            throws Exception {
        var checks = new ArrayList<Check>();
        int replication = intValue(broker, "transaction.state.log.replication.factor", 3);
        int minIsr = intValue(broker, "transaction.state.log.min.isr", 2);
        if (replication > brokers || minIsr > brokers) {
            checks.add(Check.fail("kafka transactions", "the brokers' transaction.state.log.replication.factor is " + replication
                    + " and transaction.state.log.min.isr " + minIsr + ", but the cluster has " + brokers + " broker(s): no transaction "
                    + "can start", "set both to at most the number of brokers (on a single broker: 1) and restart the brokers"));
        } else {
            checks.add(Check.pass("kafka transactions", "transaction state log: replication factor " + replication + ", min.isr "
                    + minIsr + " on " + brokers + " broker(s)"));
        }
        long maxTimeout = intValue(broker, "transaction.max.timeout.ms", 900_000);
        long timeout = Long.parseLong(ProducerSettings.transactional(c.kafka(), "check", "check")
                .getProperty(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG));
        if (timeout > maxTimeout) {
            checks.add(Check.fail("transaction timeout", "the router's transaction.timeout.ms is " + timeout + " but the brokers allow at "
                    + "most " + maxTimeout + " (transaction.max.timeout.ms): the producer cannot start", "set kafka.producer."
                    + "transaction.timeout.ms to at most " + maxTimeout + ", or raise the brokers' transaction.max.timeout.ms"));
        } else {
            checks.add(Check.pass("transaction timeout", "a Kafka transaction may stay open " + timeout / 1000 + " s (the brokers allow "
                    + maxTimeout / 1000 + " s): the longest a source transaction may take to stream"));
        }
        String transactionalId = KafkaConfig.transactionalId(c.name());
        String probe = transactionalId + ".check";
        try (var producer = KafkaClients.transactionalProducer(c.kafka(), "outbox-router-check", probe,
                java.util.Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(KAFKA_TIMEOUT.toMillis())))) {
            producer.initTransactions();
            checks.add(Check.pass("transactional id", "the producer may use transactional ids (tried " + probe + "; the router uses "
                    + KafkaConfig.transactionalId(c.name()) + (c.source().postgres().sharded() ? "-shard-<i>-of-<N>" : "") + ")"));
        } catch (TransactionalIdAuthorizationException e) {
            checks.add(Check.fail("transactional id", "the producer may not use transactional id " + probe, "grant WRITE and DESCRIBE "
                    + "on TransactionalId " + transactionalId + " and on those prefixed " + transactionalId + ". and " + transactionalId
                    + "-shard- to the router's principal (the ACL list: docs/security.md)"));
        } catch (RuntimeException e) {
            checks.add(Check.fail("transactional id", "initTransactions() with " + probe + " failed: " + Retry.describe(e),
                    "check the transaction coordinator (the brokers' transaction.state.log.* settings and logs)"));
        }
        String topic = c.kafka().offsetsTopic();
        var resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try {
            var policy = admin.describeConfigs(List.of(resource)).all().get(KAFKA_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                    .get(resource).get(TopicConfig.CLEANUP_POLICY_CONFIG);
            int shards = c.source().postgres().shards();
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(KAFKA_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                    .get(topic).partitions().size();
            if (policy == null || !policy.value().contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
                checks.add(Check.fail("offsets topic", topic + " has cleanup.policy=" + (policy == null ? "?" : policy.value())
                        + ": retention would delete the router's position", "kafka-configs.sh --alter --entity-type topics --entity-name "
                        + topic + " --add-config cleanup.policy=compact (or set kafka.offsets-topic to another topic)"));
            } else if (partitions < shards) {
                checks.add(Check.fail("offsets topic", topic + " has " + partitions + " partition(s), fewer than the " + shards
                        + " shards: each shard needs its own", "kafka-topics.sh --alter --topic " + topic + " --partitions " + shards));
            } else {
                checks.add(Check.pass("offsets topic", topic + " exists, compacted, " + partitions + " partition(s)"));
            }
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                checks.add(Check.pass("offsets topic", topic + " will be created at first start (cleanup.policy=compact, a partition "
                        + "per shard; the router's principal needs CREATE on it, or create it so)"));
            } else {
                throw e;
            }
        }
        return checks;
    }

    private static int intValue(org.apache.kafka.clients.admin.Config config, String name, int fallback) {
        var entry = config.get(name);
        try {
            return entry == null || entry.value() == null ? fallback : Integer.parseInt(entry.value());
        } catch (NumberFormatException e) {
            return fallback;
        }
    }

    private static List<Check> kafkaChecks(RouterConfig c) {
        try (var admin = KafkaClients.admin(c.kafka(), "outbox-router-check", java.util.Map.of(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG,
                (int) KAFKA_TIMEOUT.toMillis(), AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) KAFKA_TIMEOUT.toMillis()))) {
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
            if (c.kafka().exactlyOnce()) {
                checks.addAll(exactlyOnceChecks(c, admin, nodes.size(), brokerConfig));
            }
            return checks;
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (e.getCause() instanceof org.apache.kafka.common.errors.ClusterAuthorizationException) {
                return List.of(Check.fail("kafka", "reached " + c.kafka().bootstrapServers() + ", but the router's principal may not read "
                        + "the brokers' settings: " + e.getCause().getMessage(), "grant DescribeConfigs on the Cluster to the router's "
                        + "principal (the ACL list: docs/security.md)"));
            }
            return List.of(Check.fail("kafka", "cannot reach " + c.kafka().bootstrapServers() + " within " + KAFKA_TIMEOUT.toSeconds()
                    + " s: " + Retry.describe(e), "check kafka.bootstrap-servers, the network, and kafka.producer security settings"));
        }
    }
}
