package io.outboxrouter.app;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.offsets.OffsetTable;
import io.outboxrouter.offsets.OffsetTableSettings;
import io.outboxrouter.publish.ParkLedger;
import io.outboxrouter.publish.ParkedAggregates;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;

/**
 * A stream's parks in its offsets table ({@link OffsetTable#PARKS_KEY}), beside its position: JSON, one entry per park,
 * written under the activation's fencing token. An unreadable row is read as no park, with an error: never a reason for
 * the stream not to run.
 */
final class KeptParks implements ParkLedger {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(KeptParks.class);

    private final RouterConfig config;
    /** The fencing token of the activation that writes; -1 before the first. */
    private volatile long fence = -1;

    KeptParks(RouterConfig config) {
        this.config = config;
    }

    /** The activation's fencing token: a process that lost the router cannot write over the new one's parks. */
    void fence(long fence) {
        this.fence = fence;
    }

    @Override
    public List<ParkedAggregates.Kept> read() {
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            return parse(table.parks(config.name()).orElse(null));
        }
    }

    @Override
    public void write(List<ParkedAggregates.Kept> parks) {
        var entry = new HashMap<String, String>();
        entry.put(OffsetTable.PARKS_KEY, parks.isEmpty() ? null : json(parks));
        try (var table = OffsetTable.open(OffsetTableSettings.offsets(config))) {
            if (fence < 0) {
                table.write(config.name(), entry);
            } else {
                table.write(config.name(), entry, fence);
            }
        }
    }

    static String json(List<ParkedAggregates.Kept> parks) {
        ArrayNode list = JSON.createArrayNode();
        for (var p : parks) {
            var node = list.addObject().put("aggregate", p.aggregate()).put("park", p.park());
            if (p.position() != null) {
                node.put("position", p.position());
            }
            if (p.since() != null) {
                node.put("since", p.since().toString());
            }
        }
        return JSON.createObjectNode().set("parks", list).toString();
    }

    static List<ParkedAggregates.Kept> parse(String json) {
        if (json == null) {
            return List.of();
        }
        try {
            var out = new ArrayList<ParkedAggregates.Kept>();
            for (var node : JSON.readTree(json).path("parks")) {
                String since = node.path("since").asText(null);
                out.add(new ParkedAggregates.Kept(node.path("aggregate").asText(), node.path("park").asText(),
                        node.path("position").asText(null), since == null ? null : Instant.parse(since)));
            }
            return out;
        } catch (IOException | java.time.format.DateTimeParseException e) {
            LOG.error("The offsets table's row {} is unreadable ({}), so the parks it kept are not compared with the parking topic: {}",
                    OffsetTable.PARKS_KEY, e.getMessage(), json);
            return List.of();
        }
    }

    /**
     * Under a policy other than {@code park-aggregate}, parks kept from an earlier run mean aggregates whose events are
     * held in the parking topic: streaming on would let their later events flow past them. Refused, unless accepted.
     */
    static void refuseUnderAnotherPolicy(RouterConfig config, OffsetTable table, boolean acceptGap) {
        var parks = parse(table.parks(config.name()).orElse(null));
        if (parks.isEmpty()) {
            return;
        }
        var aggregates = parks.stream().map(ParkedAggregates.Kept::aggregate).toList();
        String problem = parks.size() + " aggregate(s) of router " + config.name() + " are parked, their events held in "
                + config.routing().deadLetters().parkingTopic() + ": " + aggregates.stream().limit(5).toList()
                + (parks.size() > 5 ? " and " + (parks.size() - 5) + " more" : "") + ", but routing.dead-letters.policy is now "
                + config.routing().deadLetters().policy().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-')
                + ": their held events would never be published and their later events would flow past them";
        if (!acceptGap) {
            throw new io.outboxrouter.cdc.SourceSetupException(problem + ". Fix: start with routing.dead-letters.policy: park-aggregate "
                    + "and release (or drop) them with `outbox-router parked release <aggregate> --config <file>`, then change the "
                    + "policy; or publish their events again (outbox-router replay --aggregate-id <aggregate>) and start once with "
                    + "--accept-gap");
        }
        org.slf4j.LoggerFactory.getLogger(KeptParks.class).error("Router {}: {}. Accepted (--accept-gap): they are forgotten, and "
                + "their held events stay in the parking topic", config.name(), problem);
        var entry = new HashMap<String, String>();
        entry.put(OffsetTable.PARKS_KEY, null);
        table.write(config.name(), entry);
    }
}
