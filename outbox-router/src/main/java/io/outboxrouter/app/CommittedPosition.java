package io.outboxrouter.app;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.EngineOffsets;
import io.outboxrouter.offsets.OffsetTable;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly-once start: the offsets table (which the engine reads, {@code offsets show} and the status page show) and the
 * offsets topic (where positions are committed with the records they cover) are made to agree before the engine starts.
 * While the router runs exactly-once the topic is the truth and the table its mirror, written after each commit: when
 * they disagree the topic wins, the table is corrected, and a line says so. After an at-least-once run or an operator's
 * {@code offsets set|reset} the table is the truth ({@link OffsetTable#AUTHORITY_KEY}): the topic, stale since, is
 * corrected from it. A table that does not say (new, or lost) loses to a topic that holds a position.
 */
final class CommittedPosition {
    private static final Logger LOG = LoggerFactory.getLogger(CommittedPosition.class);

    private CommittedPosition() {
    }

    /**
     * Makes the two agree for one stream.
     *
     * @param table     the stream's offsets table, open
     * @param committed the stream's positions in the offsets topic ({@code OffsetsTopic.read})
     * @param fence     the stream's fencing token: the table is written only while it is still this process's
     * @param tableWins the table's positions win whatever it says (the topic's came from another router of the same name)
     * @return what the offsets topic must be told (key to value, null to forget) for it to agree with the table; empty
     *         when it already does, or when the table was corrected instead
     */
    static Map<String, String> reconcile(RouterConfig config, OffsetTable table, String topic, Map<String, String> committed,
                                         long fence, boolean tableWins) {
        var stored = table.read(config.name());
        var differing = new TreeSet<String>();
        var keys = new HashSet<>(committed.keySet());
        keys.addAll(stored.keySet());
        for (String key : keys) {
            if (!EngineOffsets.samePosition(committed.get(key), stored.get(key))) {
                differing.add(key);
            }
        }
        if (differing.isEmpty()) {
            return Map.of();
        }
        // The table, when it says so or the topic holds nothing (deleted, or never written: the first exactly-once
        // start); else the topic, also when no row says (a table that is new, lost, or of a build before this).
        if (tableWins || committed.isEmpty() || table.authority(config.name()).filter(OffsetTable.TABLE::equals).isPresent()) {
            var toTopic = new LinkedHashMap<String, String>();
            differing.forEach(key -> toTopic.put(key, stored.get(key)));
            LOG.warn("Router {}: the offsets topic {} says {}, the offsets table {}; the table's is the position (written by an "
                    + "at-least-once run, by offsets set|reset, or the topic holds none): resuming from it, and the topic is "
                    + "corrected. Events published after it by an earlier run may be published once more", config.name(), topic,
                    describe(committed, differing), describe(stored, differing));
            return toTopic;
        }
        var changes = new LinkedHashMap<String, String>();
        differing.forEach(key -> changes.put(key, committed.get(key)));
        LOG.warn("Router {}: the offsets table and the offsets topic {} disagree: table {}, topic {}. Resuming from the topic's, "
                + "the position committed with the records (delivery: exactly-once); the table is corrected", config.name(), topic,
                describe(stored, differing), describe(committed, differing));
        changes.put(OffsetTable.STATE_KEY, OffsetTable.STORED);
        table.write(config.name(), changes, fence);
        return Map.of();
    }

    private static String describe(Map<String, String> positions, java.util.Set<String> keys) {
        var out = new LinkedHashMap<String, String>();
        keys.forEach(k -> out.put(k, positions.getOrDefault(k, "(none)")));
        return out.toString();
    }
}
