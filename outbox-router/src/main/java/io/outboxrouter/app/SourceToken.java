package io.outboxrouter.app;

import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.JdbcConnection;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.OffsetsTopic;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly-once: which offsets table a stream's positions in the offsets topic come from, and whether the table's
 * positions win over the topic's.
 *
 * @param token     the offsets table's token, written beside the positions in the topic
 * @param tableWins the table's positions are to win over the topic's
 */
record SourceToken(String token, boolean tableWins) {
    private static final Logger LOG = LoggerFactory.getLogger(SourceToken.class);
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

    /**
     * The token that says which offsets table this stream's positions in the offsets topic come from: made once and kept
     * in the table ({@link OffsetTable#SOURCE_KEY}), and written beside the positions in the topic. A topic whose
     * positions of this name carry another token was written by another router of the same name (another database on
     * the same Kafka cluster: sharing a transactional id and positions with it would fence it and resume from its
     * position), or this router's offsets table lost its rows. Refused with the fix, before anything is fenced, unless
     * the table says it is the truth (an operator's offsets set|reset, an at-least-once run) or the operator accepts.
     *
     * @return the token, and whether the table's positions are to win over the topic's
     */
    static SourceToken of(RouterConfig config, OffsetTable table, OffsetsTopic topic, boolean acceptForeign, int shardIndex)
            throws Exception {
        String ours = table.source(config.name()).map(SourceToken::tokenOf).orElse(null);
        var retry = new io.outboxrouter.retry.Retry(Duration.ofMillis(200), Duration.ofSeconds(30), config.kafka().giveUpAfter());
        var mark = retry.call("read the offsets topic " + topic.name(),
                e -> !(e instanceof org.apache.kafka.common.errors.AuthorizationException), LOG,
                () -> topic.readSource(config.name(), shardIndex));
        String theirs = mark.map(SourceToken::tokenOf).orElse(null);
        String token = ours != null ? ours : java.util.UUID.randomUUID().toString();
        boolean tableSays = table.authority(config.name()).filter(OffsetTable.TABLE::equals).isPresent();
        boolean tableWins = false;
        if (theirs != null && !theirs.equals(ours) && !tableSays) {
            String problem = "the offsets topic " + topic.name() + " holds positions of router " + config.name() + " that came "
                    + "from another offsets table (" + mark.map(SourceToken::offsetsOf).orElse("?") + "; this router's is "
                    + describeOffsets(config) + "): another router of the same name commits to this Kafka cluster" + (ours == null
                    ? ", or this router's offsets table lost its rows" : "") + ". Two routers of one name share a "
                    + "transactional id and positions: starting would fence the other and resume from its position";
            if (!acceptForeign) {
                throw new SourceSetupException(problem + ". Fix: give each router a name of its own (name: in the config file)"
                        + (ours == null ? "; if this router's offsets table was re-created, start it once with run --accept-gap, "
                        + "which resumes from the topic's positions" : "; to take this name over from the other router, "
                        + "start once with run --accept-gap, which resumes from this router's offsets table"));
            }
            LOG.error("Router {}: {}. Accepted (--accept-gap): {}", config.name(), problem, ours == null
                    ? "resuming from the topic's positions" : "resuming from this router's offsets table, the topic is corrected");
            tableWins = ours != null;
        }
        if (ours == null) {
            // Kept in the table first: a stop before the topic has it leaves a topic without a mark, which is not refused.
            table.write(config.name(), java.util.Map.of(OffsetTable.SOURCE_KEY,
                    JSON.createObjectNode().put("source", token).toString()));
        }
        return new SourceToken(token, tableWins);
    }

    private static String describeOffsets(RouterConfig config) {
        var o = OffsetTableSettings.offsets(config);
        return o.table() + " at " + JdbcConnection.redact(o.url());
    }

    /** The mark written beside the positions in the offsets topic. */
    static String mark(RouterConfig config, String token) {
        return JSON.createObjectNode().put("source", token).put("offsets", describeOffsets(config))
                .put("since", java.time.Instant.now().toString()).toString();
    }


    private static String tokenOf(String mark) {
        try {
            return JSON.readTree(mark).path("source").asText(mark);
        } catch (java.io.IOException e) {
            return mark;
        }
    }

    private static String offsetsOf(String mark) {
        try {
            return JSON.readTree(mark).path("offsets").asText("?");
        } catch (java.io.IOException e) {
            return "?";
        }
    }
}
