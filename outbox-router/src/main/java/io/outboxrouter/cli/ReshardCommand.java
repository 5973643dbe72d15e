package io.outboxrouter.cli;

import io.outboxrouter.app.Router;
import io.outboxrouter.cdc.LayoutHandover;
import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.Durations;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Moves a Postgres router to the shard layout its configuration names from the one whose slots exist, while the
 * application goes on writing: see {@link LayoutHandover}.
 */
@Command(name = "reshard", mixinStandardHelpOptions = true,
        description = {"Moves the router to the shard layout in its configuration (source.postgres.shards) from the layout whose "
                + "replication slots exist, while writers go on writing: creates the new layout's slots, runs the earlier layout "
                + "until it has published everything committed before they began, then drops the earlier layout's slots, shard "
                + "publications and stored positions. Start the router with the new layout afterwards.",
                "Processes that still run the earlier layout are waited for (stop them; this takes their place). Events committed "
                        + "while both layouts' slots exist may be published twice; consumers drop them by the id header."})
final class ReshardCommand implements java.util.concurrent.Callable<Integer> {
    @Mixin
    ConfigOption config;

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "10m", converter = DurationConverter.class,
            description = "How long to wait for the earlier layout to stream and drain, such as 30m or PT30M (default ${DEFAULT-VALUE}).")
    Duration timeout;

    @Option(names = "--dry-run", description = "Say what would be done; change nothing.")
    boolean dryRun;

    @Override
    public Integer call() {
        var c = config.loadOrReport();
        if (c == null) {
            return Main.EXIT_USAGE;
        }
        if (!c.source().kind().hasSlots()) {
            System.err.println("outbox-router: reshard is for Postgres shards (source.postgres.shards); a binlog has one stream");
            return Main.EXIT_USAGE;
        }
        int next = c.source().postgres().shards();
        try {
            var earlier = LayoutHandover.earlierLayout(c);
            if (earlier.isEmpty()) {
                System.out.println("No slots of another shard layout of router " + c.name() + ": nothing to hand over; start the router.");
                return 0;
            }
            if (c.source().snapshot() == io.outboxrouter.config.SnapshotMode.INITIAL) {
                // The new layout's streams would start without a position, take a snapshot and stream from its end, not from
                // where their slots began.
                System.err.println("outbox-router: reshard: source.snapshot is initial; set it to none for the reshard and the new "
                        + "layout's first start (the earlier layout publishes everything up to the new slots)");
                return Main.EXIT_USAGE;
            }
            if (c.routing().deadLetters().policy() == io.outboxrouter.config.RoutingConfig.DeadLetterPolicy.PARK_AGGREGATE) {
                // Parks belong to a layout's streams: the new layout's would not hold their aggregates' events.
                var parks = ParkedCommand.read(new io.outboxrouter.kafka.ParkingTopic(c.kafka(), c.routing().deadLetters().parkingTopic())).parks();
                if (!parks.isEmpty()) {
                    System.err.println("outbox-router: reshard: " + parks.size() + " aggregate(s) are parked (" + parks.stream().limit(5)
                            .map(io.outboxrouter.publish.ParkedAggregates.Park::aggregate).toList() + (parks.size() > 5 ? ", ..." : "")
                            + "); parks belong to the earlier layout's streams. Release or drop them first (parked list, parked release)");
                    return Main.EXIT_FAILED;
                }
            }
            var from = c.withShards(earlier.get());
            String plan = "router " + c.name() + ": from " + layout(earlier.get()) + " to " + layout(next);
            if (dryRun) {
                System.out.println("Would move " + plan + ": create the new layout's slots, drain the earlier layout past them, then "
                        + "drop its slots and stored positions. Nothing was changed (--dry-run).");
                return 0;
            }
            System.err.println("outbox-router: moving " + plan);
            if (LayoutHandover.layoutStarted(c)) {
                // An earlier reshard stopped before dropping the earlier layout, which still holds every event.
                System.err.println("outbox-router: the new layout's slots exist from an unfinished reshard; they are made again");
                LayoutHandover.dropLayout(c);
            }
            try (var router = Router.start(from)) {
                long deadline = System.nanoTime() + timeout.toNanos();
                boolean told = false;
                while (!router.isStreaming() && !router.completion().isDone()) {
                    if (System.nanoTime() > deadline) {
                        return fail("the earlier layout did not stream within " + Durations.format(timeout) + (router.isActive() ? ""
                                : ": another process runs it; stop that process first"));
                    }
                    if (!router.isActive() && !told) {
                        System.err.println("outbox-router: another process runs the earlier layout; waiting for it to stop");
                        told = true;
                    }
                    router.awaitStreaming(Duration.ofSeconds(1));
                }
                if (router.completion().isDone()) {
                    router.completion().get();
                    return fail("the earlier layout stopped before it could be drained");
                }
                LayoutHandover.createLayout(c);
                LayoutHandover.check(c);
                router.drain().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
                System.err.println("outbox-router: the earlier layout has published everything committed before the new slots began ("
                        + router.metrics().publishedTotal() + " events in this run)");
            }
            if (from.kafka().exactlyOnce()) {
                forgetCommittedPositions(from);
            }
            for (String gone : LayoutHandover.dropLayout(from)) {
                System.out.println("dropped " + gone);
            }
            System.out.println("Router " + c.name() + " is ready to start with " + layout(next) + ".");
            return 0;
        } catch (SourceSetupException e) {
            return fail(e.getMessage());
        } catch (TimeoutException e) {
            return fail("the earlier layout did not drain within " + Durations.format(timeout) + "; nothing was dropped, run reshard again");
        } catch (ExecutionException e) {
            return fail(Failures.explain(e.getCause()) + "; nothing was dropped, run reshard again");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail("interrupted; nothing was dropped, run reshard again");
        }
    }

    /**
     * Exactly-once: the earlier layout's positions in the offsets topic go with its slots, so that a later layout of the
     * same stream names does not resume from them.
     */
    private static void forgetCommittedPositions(io.outboxrouter.config.RouterConfig earlier) {
        var topic = new io.outboxrouter.kafka.OffsetsTopic(earlier.kafka());
        int shards = earlier.source().postgres().shards();
        for (var stream : earlier.shardConfigs()) {
            int index = stream.shard().map(io.outboxrouter.config.Shard::index).orElse(0);
            var forget = new java.util.HashMap<String, String>();
            topic.readStream(stream.name(), index).keySet().forEach(k -> forget.put(k, null));
            if (!forget.isEmpty()) {
                // The mark goes with the positions: the same stream names may come back with a later layout.
                forget.put(io.outboxrouter.kafka.OffsetsTopic.sourceKey(stream.name()), null);
            }
            if (forget.isEmpty()) {
                continue;
            }
            try {
                topic.write(stream.name(), index, shards, forget);
            } catch (Exception e) {
                throw new SourceSetupException("cannot forget the earlier layout's positions in " + topic.name() + ": " + e.getMessage());
            }
        }
    }

    private static String layout(int shards) {
        return shards == 1 ? "one slot (not sharded)" : shards + " shards";
    }

    private static int fail(String why) {
        System.err.println("outbox-router: reshard: " + why);
        return Main.EXIT_FAILED;
    }
}
