package io.outboxrouter.app;

import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.EngineOffsets;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly-once start: the position committed to the offsets topic, with the records it covers, is the one to resume
 * from; the offsets table (which the engine reads, {@code offsets show} and the status page show) is its mirror, written
 * after each commit. When they disagree, the topic wins and the table is corrected, and a line says so.
 */
final class CommittedPosition {
    private static final Logger LOG = LoggerFactory.getLogger(CommittedPosition.class);

    private CommittedPosition() {
    }

    /**
     * Makes the table say what the topic says, for one stream.
     *
     * @param committed the stream's positions in the offsets topic ({@code OffsetsTopic.read})
     * @param fence     the stream's fencing token: the table is written only while it is still this process's
     * @return whether the table was corrected
     */
    static boolean reconcile(RouterConfig config, String topic, Map<String, String> committed, long fence) {
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            var stored = table.read(config.name());
            if (committed.isEmpty()) {
                if (!stored.isEmpty()) {
                    LOG.warn("Router {}: the offsets topic {} holds no position yet; resuming from the offsets table's {} (the first "
                            + "start with delivery: exactly-once, or the topic was deleted): what an earlier run published after "
                            + "it may be published once more", config.name(), topic, stored.values());
                }
                return false;
            }
            var changes = new LinkedHashMap<String, String>();
            for (String key : new TreeSet<>(union(committed, stored))) {
                String inTopic = committed.get(key);
                String inTable = stored.get(key);
                if (!EngineOffsets.samePosition(inTopic, inTable)) {
                    changes.put(key, inTopic);
                    LOG.warn("Router {}: the offsets table and the offsets topic {} disagree on {}: table {}, topic {}. Resuming from "
                            + "the topic's, the position committed with the records (delivery: exactly-once); the table is corrected",
                            config.name(), topic, key, inTable == null ? "(none)" : inTable, inTopic == null ? "(none)" : inTopic);
                }
            }
            if (changes.isEmpty()) {
                return false;
            }
            changes.put(OffsetTable.STATE_KEY, OffsetTable.STORED);
            table.write(config.name(), changes, fence);
            return true;
        }
    }

    private static java.util.Set<String> union(Map<String, String> a, Map<String, String> b) {
        var keys = new java.util.HashSet<>(a.keySet());
        keys.addAll(b.keySet());
        return keys;
    }
}
