package io.outboxrouter.app;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.time.Instant;
import java.util.HashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A loss of events found while a router runs, kept where its next start finds it. */
final class LostEvents {
    private static final Logger LOG = LoggerFactory.getLogger(LostEvents.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private LostEvents() {
    }

    /**
     * Keeps the loss in the offsets table, so that the next start refuses until an operator accepts it, and holds
     * retention, so that the rows to publish again stay in the outbox table.
     */
    static void record(RouterConfig config, String problem) {
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            var gap = JSON.createObjectNode().put("detected", Instant.now().toString()).put("problem", problem);
            // ASCII only: the problem may quote an outbox row, and an offsets table's text column need not hold every character.
            String value = JSON.writer().with(JsonWriteFeature.ESCAPE_NON_ASCII).writeValueAsString(gap);
            var entries = new HashMap<String, String>();
            entries.put(OffsetTable.GAP_KEY, value);
            entries.put(OffsetTable.RETENTION_HOLD_KEY, OffsetTable.retentionHoldFromNow());
            entries.put(OffsetTable.CATALOG_KEY, null); // the gap names the rows; the next start takes the catalog anew
            table.write(config.name(), entries);
        } catch (RuntimeException | JsonProcessingException ex) {
            LOG.error("Router {}: could not record the loss in the offsets table ({}); the next start will not refuse on its own: "
                    + "publish the rows named above before starting it again", config.name(), ex.getMessage());
        }
    }
}
