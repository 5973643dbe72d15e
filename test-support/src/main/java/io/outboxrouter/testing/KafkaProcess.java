package io.outboxrouter.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;

/**
 * A single-node KRaft broker in a JVM of its own, on fixed loopback ports and a data directory that outlives it: a
 * test can crash it (SIGKILL) and start it again where producers expect it. Slower to start than {@link KafkaBroker}
 * (its own JVM), so only for the tests that take Kafka down.
 */
public final class KafkaProcess implements AutoCloseable {
    private final Path dir;
    private final int port;
    /** The secure listeners' ports by name, for a {@link #startSecure} broker. */
    private final Map<String, Integer> secure = new java.util.HashMap<>();
    private Process process;

    private KafkaProcess(Path dir, int port) {
        this.dir = dir;
        this.port = port;
    }

    /** Formats a fresh data directory under {@code dir} and starts the broker. */
    public static KafkaProcess start(Path dir) {
        try {
            return start(dir, freePort(), Map.of(), Map.of());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A broker as production runs them: a {@code SASL_SSL} listener (SCRAM-SHA-512) and an {@code SSL} listener that
     * requires a client certificate (its principal is the certificate's common name), ACLs enforced by KRaft's
     * authorizer with nothing allowed where no ACL says so. The plaintext listener {@link #bootstrapServers()} is the
     * test's own, as a super user, to create users, topics and ACLs.
     */
    public static KafkaProcess startSecure(Path dir, TestCertificates certs) {
        try {
            int sasl = freePort();
            int ssl = freePort();
            var server = certs.server("kafka-broker");
            var settings = new java.util.LinkedHashMap<String, String>();
            settings.put("sasl.enabled.mechanisms", "SCRAM-SHA-512");
            settings.put("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;");
            settings.put("listener.name.ssl.ssl.client.auth", "required");
            settings.put("ssl.keystore.type", "PKCS12");
            settings.put("ssl.keystore.location", server.keystore().toString());
            settings.put("ssl.keystore.password", TestCertificates.PASSWORD);
            settings.put("ssl.key.password", TestCertificates.PASSWORD);
            settings.put("ssl.truststore.type", "PKCS12");
            settings.put("ssl.truststore.location", certs.truststore().toString());
            settings.put("ssl.truststore.password", TestCertificates.PASSWORD);
            settings.put("ssl.principal.mapping.rules", "RULE:^CN=([^,]+)$/$1/,DEFAULT");
            settings.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
            settings.put("allow.everyone.if.no.acl.found", "false");
            settings.put("super.users", "User:ANONYMOUS"); // the plaintext listeners: the controller's and the test's
            var kafka = start(dir, freePort(), Map.of("SASL_SSL", sasl, "SSL", ssl), settings);
            kafka.secure.put("SASL_SSL", sasl);
            kafka.secure.put("SSL", ssl);
            return kafka;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The {@code SASL_SSL} listener of a {@link #startSecure} broker. */
    public String saslSslServers() {
        return "127.0.0.1:" + secure.get("SASL_SSL");
    }

    /** The mutual-TLS listener of a {@link #startSecure} broker. */
    public String sslServers() {
        return "127.0.0.1:" + secure.get("SSL");
    }

    /** Adds a SCRAM-SHA-512 user, as {@code kafka-configs.sh --alter --add-config SCRAM-SHA-512=[...]} would. */
    public void addScramUser(String user, String password) {
        try (var admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()))) {
            admin.alterUserScramCredentials(List.of(new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(user,
                    new org.apache.kafka.clients.admin.ScramCredentialInfo(org.apache.kafka.clients.admin.ScramMechanism.SCRAM_SHA_512, 4096),
                    password))).all().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not add SCRAM user " + user, e);
        }
    }

    /**
     * @param extraListeners listener name (also its security protocol) to port, beside the plaintext one and the controller
     * @param settings       broker settings on top of the single-node defaults
     */
    private static KafkaProcess start(Path dir, int port, Map<String, Integer> extraListeners, Map<String, String> settings) {
        try {
            int controllerPort = freePort();
            Files.createDirectories(dir);
            var listeners = new StringBuilder("PLAINTEXT://127.0.0.1:" + port);
            var protocols = new StringBuilder("PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
            extraListeners.forEach((name, p) -> {
                listeners.append(',').append(name).append("://127.0.0.1:").append(p);
                protocols.append(',').append(name).append(':').append(name);
            });
            var all = new java.util.LinkedHashMap<String, String>();
            Map.ofEntries(
                    Map.entry("process.roles", "broker,controller"),
                    Map.entry("node.id", "1"),
                    Map.entry("controller.quorum.voters", "1@127.0.0.1:" + controllerPort),
                    Map.entry("listeners", listeners + ",CONTROLLER://127.0.0.1:" + controllerPort),
                    Map.entry("advertised.listeners", listeners.toString()),
                    Map.entry("controller.listener.names", "CONTROLLER"),
                    Map.entry("listener.security.protocol.map", protocols.toString()),
                    Map.entry("inter.broker.listener.name", "PLAINTEXT"),
                    Map.entry("log.dirs", dir.resolve("data").toString()),
                    Map.entry("offsets.topic.replication.factor", "1"),
                    Map.entry("offsets.topic.num.partitions", "1"),
                    Map.entry("transaction.state.log.replication.factor", "1"),
                    Map.entry("transaction.state.log.min.isr", "1"),
                    Map.entry("share.coordinator.state.topic.replication.factor", "1"),
                    Map.entry("share.coordinator.state.topic.min.isr", "1"),
                    Map.entry("group.initial.rebalance.delay.ms", "0"),
                    Map.entry("num.partitions", "4"),
                    Map.entry("auto.create.topics.enable", "true"))
                    .forEach(all::put);
            all.putAll(settings);
            var props = new StringBuilder();
            all.forEach((k, v) -> props.append(k).append('=').append(v).append('\n'));
            Files.writeString(dir.resolve("server.properties"), props);
            var kafka = new KafkaProcess(dir, port);
            int formatted = kafka.java("kafka.tools.StorageTool", "format", "-t", Uuid.randomUuid().toString(), "-c",
                    dir.resolve("server.properties").toString()).waitFor();
            if (formatted != 0) {
                throw new IllegalStateException("formatting the Kafka data directory failed; see " + dir.resolve("kafka.log"));
            }
            kafka.launch();
            return kafka;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    /** SIGKILL: no controlled shutdown, as a crash of its host would be. */
    public void kill() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process = null;
        }
    }

    /** Starts the broker again on the same ports and data (after {@link #kill()}). */
    public void restart() {
        kill();
        launch();
    }

    private void launch() {
        try {
            process = java("kafka.Kafka", dir.resolve("server.properties").toString());
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            try (var admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
                    AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000", AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "2000"))) {
                while (true) {
                    try {
                        if (listening() && !admin.describeCluster().nodes().get(3, TimeUnit.SECONDS).isEmpty()) {
                            return;
                        }
                    } catch (Exception e) {
                        // not up yet
                    }
                    if (!process.isAlive() || System.nanoTime() > deadline) {
                        throw new IllegalStateException("the Kafka broker did not start; see " + dir.resolve("kafka.log"));
                    }
                    Thread.sleep(100);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private boolean listening() {
        try (var s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** A class of the test class path run in its own JVM, its output appended to {@code kafka.log}. */
    private Process java(String mainClass, String... args) throws IOException {
        var cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xms64m", "-Xmx512m", "-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("kafka.log").toFile())).start();
    }

    private static int freePort() throws IOException {
        try (var s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        kill();
    }
}
