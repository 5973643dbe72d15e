package io.outboxrouter.kafka;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Tells a topic that will never take records from an outage, after sends to it timed out: the producer says only "not
 * present in metadata" either way. Asked of the cluster with an admin client, only when a batch has failed.
 */
@FunctionalInterface
public interface TopicProbe {
    /** Never finds anything: every failure is treated as an outage. */
    TopicProbe NONE = topics -> Optional.empty();

    /**
     * @return why records for these topics can never be written (missing and not auto-created), with the fix; empty when
     *         the cluster cannot be asked (an outage) or the topics exist
     */
    Optional<String> whyUnwritable(Set<String> topics);

    /** Asks the cluster of these producer properties. */
    static TopicProbe of(Properties producerConfig) {
        Duration timeout = Duration.ofSeconds(2);
        return topics -> {
            var props = new HashMap<>(ClientConfigs.admin(producerConfig));
            props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
            props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
            try (var admin = KafkaClients.admin(props)) {
                var nodes = admin.describeCluster().nodes().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                var missing = new TreeSet<String>();
                for (var e : admin.describeTopics(topics).topicNameValues().entrySet()) {
                    try {
                        e.getValue().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                    } catch (ExecutionException ex) {
                        if (ex.getCause() instanceof UnknownTopicOrPartitionException) {
                            missing.add(e.getKey());
                        }
                    }
                }
                if (missing.isEmpty() || nodes.isEmpty()) {
                    return Optional.empty();
                }
                var broker = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(nodes.iterator().next().id()));
                var autoCreate = admin.describeConfigs(List.of(broker)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS)
                        .get(broker).get("auto.create.topics.enable");
                if (autoCreate != null && Boolean.parseBoolean(autoCreate.value())) {
                    return Optional.empty(); // it will be created; a slow first metadata fetch
                }
                return Optional.of("topic(s) " + String.join(", ", missing) + " do not exist and the broker does not create topics "
                        + "(auto.create.topics.enable=false): create them (kafka-topics.sh --create --topic <name>), or change "
                        + "routing.topic; the router publishes them from the stored position when started again");
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                return Optional.empty(); // the cluster does not answer: an outage, retried
            }
        };
    }

    /** The topics of records whose sends timed out waiting for metadata. */
    static Set<String> timedOut(Map<String, Throwable> errorsByTopic) {
        var topics = new TreeSet<String>();
        errorsByTopic.forEach((topic, error) -> {
            if (error instanceof TimeoutException && String.valueOf(error.getMessage()).contains("not present in metadata")) {
                topics.add(topic);
            }
        });
        return topics;
    }
}
