package io.outboxrouter.audit;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.config.RoutingConfig.DeadLetterPolicy;
import java.time.Instant;
import java.util.List;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * The event ids the records in the router's topics carry, among those written at or after {@code from}; and in the topics
 * of {@code earlier}, patterns an earlier run published to under another routing.
 */
@FunctionalInterface
public interface RecordedIds {
    void forEach(Instant from, List<String> earlier, Consumer<String> id) throws Exception;

    /**
     * The pattern of the topics a router publishes to: its topic template (as a pattern), its dead-letter topic, and under
     * {@code park-aggregate} its parking topic.
     */
    static String topicPattern(RouterConfig config) {
        var deadLetters = config.routing().deadLetters();
        return "(" + config.routing().topic().pattern().pattern() + ")|" + Pattern.quote(deadLetters.topic())
                + (deadLetters.policy() == DeadLetterPolicy.PARK_AGGREGATE ? "|" + Pattern.quote(deadLetters.parkingTopic()) : "");
    }
}
