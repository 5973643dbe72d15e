package io.outboxrouter.cdc;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import java.sql.SQLException;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Before the engine starts: does the stored position still add up with the source (its slot, its binlog, its schema
 * history)? A drift is refused with what was lost and the one way to accept it ({@code run --accept-gap}); never a
 * silent start-over.
 */
final class PositionCheck {
    private static final Logger LOG = LoggerFactory.getLogger(PositionCheck.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private PositionCheck() {
    }

    /**
     * The drift, if any: a loss recorded while the router ran, a stored position that no longer adds up with the source,
     * or both. {@code prepare} (a start) creates or migrates the offsets table first; without it ({@code check}) nothing is
     * written, and a table not made yet holds no position to compare.
     */
    static Optional<Drift> find(RouterConfig config, Source source, boolean prepare) {
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            if (prepare) {
                table.createIfMissing();
            } else if (!table.exists()) {
                return Optional.empty();
            } else {
                table.requireKnownLayout();
            }
            var gap = table.gap(config.name()).map(PositionCheck::gapText);
            // A loss recorded while the router ran names its rows from an earlier point than the catalog kept: that one is not compared.
            var drift = source.drift(new StoredPosition(table.read(config.name()), table.state(config.name()),
                    gap.isPresent() ? Optional.empty() : table.catalog(config.name()), table.firstStartUnderWay(config.name()),
                    table.timeline(config.name())));
            if (drift.isPresent()) {
                return gap.map(g -> new Drift(g + "; and " + drift.get().problem(), drift.get().accepted(), drift.get().keepsPosition(),
                        table.gap(config.name()).map(PositionCheck::detected).orElse(null))).or(() -> drift);
            }
            return gap.map(g -> new Drift(g, "go on from the stored position (the rows it names reach Kafka only by replay)", true,
                    table.gap(config.name()).map(PositionCheck::detected).orElse(null)));
        } catch (SQLException e) {
            throw new SourceSetupException("cannot compare router " + config.name() + "'s stored position with the source: "
                    + e.getMessage(), e);
        }
    }

    /** When a recorded loss was found; null when unreadable. */
    private static java.time.Instant detected(String json) {
        try {
            return java.time.Instant.parse(JSON.readTree(json).path("detected").asText());
        } catch (java.io.IOException | java.time.format.DateTimeParseException e) {
            return null;
        }
    }

    /** The operator's words for a recorded loss: when it was found and what it says. */
    private static String gapText(String json) {
        try {
            var node = JSON.readTree(json);
            String problem = node.path("problem").asText(json);
            return "the router stopped at " + node.path("detected").asText("?") + ": "
                    + (problem.endsWith(".") ? problem.substring(0, problem.length() - 1) : problem);
        } catch (java.io.IOException e) {
            return "the router stopped: " + json;
        }
    }

    /**
     * @param acceptGapGivenAt when the operator said to start anyway (repair the state and log, as an error, what is lost);
     *                         null when not said
     * @throws SourceSetupException on a drift, unless accepted
     */
    static void verify(RouterConfig config, Source source, java.time.Instant acceptGapGivenAt) {
        boolean acceptGap = acceptGapGivenAt != null;
        var drift = find(config, source, true);
        if (drift.isEmpty()) {
            return;
        }
        if (acceptGap && drift.get().recordedAt() != null && drift.get().recordedAt().isAfter(acceptGapGivenAt)) {
            // --accept-gap accepts what the operator saw before giving it, not a loss recorded since (by the process this
            // one stood by for).
            throw new SourceSetupException(drift.get().problem() + ". This was recorded after --accept-gap was given to this "
                    + "process, so it does not accept it: read it, then start the router again with --accept-gap");
        }
        if (!acceptGap) {
            throw new SourceSetupException(drift.get().problem() + ". The router does not start over on its own. To accept this and "
                    + drift.get().accepted() + ", start it once with: java -jar outbox-router.jar run --config <file> --accept-gap");
        }
        LOG.error("Router {}: {}. Accepted (--accept-gap): {}", config.name(), drift.get().problem(), drift.get().accepted());
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            if (drift.get().keepsPosition()) {
                var entries = new java.util.HashMap<String, String>();
                entries.put(OffsetTable.GAP_KEY, null);
                entries.put(OffsetTable.CATALOG_KEY, null); // the catalog as it is now is the one to compare with from now on
                // The rows to replay are older than the stored position: retention would take them for published.
                entries.put(OffsetTable.RETENTION_HOLD_KEY, OffsetTable.retentionHoldFromNow());
                table.write(config.name(), entries);
            } else {
                source.resetPosition(table, config.name());
            }
        }
    }
}
