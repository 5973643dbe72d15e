package io.outboxrouter.examples;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.outboxrouter.app.JvmSettings;
import io.outboxrouter.cli.Main;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RouterConfigLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The deployment examples of docs/deploy.md, read as Kubernetes and systemd would read them (no cluster runs here):
 * the configuration they mount is valid, the probes ask what the router answers, the grace period outlasts the router's
 * slowest clean stop, the JVM options are the recommended ones, and the command line parses.
 */
class DeployManifestsTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    /** The slowest clean stop after SIGTERM that the outage tests allow (OutageReturnIT, ParkAggregateIT). */
    private static final int SLOWEST_CLEAN_STOP_SECONDS = 25;
    /** The peak resident size of the benchmark's drains (docs/benchmark/results.md), with the recommended options. */
    private static final int PEAK_RSS_MIB = 270;

    private static Map<String, JsonNode> kubernetes() throws Exception {
        var yaml = new ObjectMapper(new YAMLFactory());
        var byKind = new HashMap<String, JsonNode>();
        try (var docs = yaml.readerFor(JsonNode.class).<JsonNode>readValues(ROOT.resolve("examples/kubernetes/outbox-router.yaml").toFile())) {
            while (docs.hasNext()) {
                var doc = docs.next();
                byKind.put(doc.path("kind").asText(), doc);
            }
        }
        return byKind;
    }

    @Test
    void theKubernetesDeploymentRunsTwoProcessesOfOneRouterThatRollOneAfterTheOther() throws Exception {
        var k = kubernetes();
        assertThat(k).containsKeys("ConfigMap", "Deployment", "PodDisruptionBudget", "Service");
        var deployment = k.get("Deployment").path("spec");
        assertThat(deployment.path("replicas").asInt()).isEqualTo(2);
        assertThat(deployment.at("/strategy/rollingUpdate/maxUnavailable").asInt()).isZero();
        var pod = deployment.path("template").path("spec");
        var container = pod.path("containers").get(0);

        // The configuration the pod mounts is the one it is told to read, and it is valid.
        var args = strings(container.path("args"));
        var parsed = new CommandLine(new Main()).parseArgs(args.toArray(String[]::new));
        assertThat(parsed.subcommand().commandSpec().name()).isEqualTo("run");
        String configPath = args.get(args.indexOf("--config") + 1);
        var mount = container.path("volumeMounts").get(0);
        assertThat(configPath).isEqualTo(mount.path("mountPath").asText() + "/router.yml");
        assertThat(pod.path("volumes").get(0).at("/configMap/name").asText()).isEqualTo(k.get("ConfigMap").at("/metadata/name").asText());
        var env = new HashMap<String, String>();
        container.path("env").forEach(e -> env.put(e.path("name").asText(), e.path("value").asText("secret")));
        RouterConfig config = RouterConfigLoader.parse(k.get("ConfigMap").at("/data/router.yml").asText(), env);
        assertThat(config.name()).isEqualTo(k.get("ConfigMap").at("/metadata/name").asText());

        // Probes on the port the router listens on, asking what it answers: a standby counts as ready.
        assertThat(config.http().host()).as("reachable by the kubelet").isEqualTo("0.0.0.0");
        assertThat(container.path("ports").get(0).path("containerPort").asInt()).isEqualTo(config.http().port());
        assertThat(container.at("/readinessProbe/httpGet/path").asText()).isEqualTo("/health/ready?standby=true");
        assertThat(container.at("/livenessProbe/httpGet/path").asText()).isEqualTo("/health/live");

        assertThat(pod.path("terminationGracePeriodSeconds").asInt()).isGreaterThan(SLOWEST_CLEAN_STOP_SECONDS);
        assertThat(env.get("JAVA_TOOL_OPTIONS")).isEqualTo(String.join(" ", JvmSettings.RECOMMENDED_OPTIONS));
        assertThat(mebibytes(container.at("/resources/limits/memory").asText())).isGreaterThan(PEAK_RSS_MIB);
        assertThat(mebibytes(container.at("/resources/requests/memory").asText())).isGreaterThanOrEqualTo(PEAK_RSS_MIB);
        assertThat(pod.at("/securityContext/runAsNonRoot").asBoolean()).isTrue();
        assertThat(k.get("PodDisruptionBudget").at("/spec/maxUnavailable").asInt()).isEqualTo(1);
    }

    @Test
    void theSystemdUnitRunsTheRecommendedCommandAndDoesNotRetryABadConfiguration() throws Exception {
        var unit = new HashMap<String, String>();
        for (String line : Files.readAllLines(ROOT.resolve("examples/systemd/outbox-router.service"))) {
            if (!line.startsWith("#") && line.contains("=")) {
                unit.put(line.substring(0, line.indexOf('=')), line.substring(line.indexOf('=') + 1));
            }
        }
        var exec = new ArrayList<>(Arrays.asList(unit.get("ExecStart").split(" ")));
        assertThat(exec.get(0)).endsWith("/java");
        int jar = exec.indexOf("-jar");
        assertThat(exec.subList(1, jar)).isEqualTo(JvmSettings.RECOMMENDED_OPTIONS);
        var parsed = new CommandLine(new Main()).parseArgs(exec.subList(jar + 2, exec.size()).toArray(String[]::new));
        assertThat(parsed.subcommand().commandSpec().name()).isEqualTo("run");
        assertThat(Integer.parseInt(unit.get("TimeoutStopSec"))).isGreaterThan(SLOWEST_CLEAN_STOP_SECONDS);
        assertThat(unit).containsEntry("KillSignal", "SIGTERM").containsEntry("Restart", "on-failure")
                .containsEntry("RestartPreventExitStatus", "2");
        assertThat(unit.get("User")).isNotEqualTo("root");
    }

    private static int mebibytes(String quantity) {
        assertThat(quantity).endsWith("Mi");
        return Integer.parseInt(quantity.substring(0, quantity.length() - 2));
    }

    private static List<String> strings(JsonNode array) {
        var out = new ArrayList<String>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }
}
