package io.outboxrouter.cli;

import io.outboxrouter.config.Durations;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.ParkingRecord.Action;
import io.outboxrouter.kafka.ParkingRecord;
import io.outboxrouter.kafka.ParkingTopic;
import io.outboxrouter.publish.ParkedAggregates;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code parked}: the aggregates {@code park-aggregate} holds back, and the operator's release or drop of one. */
@Command(name = "parked", mixinStandardHelpOptions = true,
        description = {"The aggregates parked by routing.dead-letters.policy: park-aggregate. A row that could not be routed was "
                + "dead-lettered, and its aggregate's later events are held in the parking topic, in order, while every other "
                + "aggregate flows.",
                "release publishes the held events in order and lets the aggregate flow again; a fixed copy of the bad row, inserted "
                        + "again with its event id while parked, is published first, in its place. drop lets it flow without "
                        + "publishing them (they stay in the parking topic). The running router carries a request out between "
                        + "batches; a stopped one at its next start."},
        subcommands = {ParkedCommand.ListParked.class, ParkedCommand.Release.class, ParkedCommand.Drop.class})
final class ParkedCommand {

    /** Reads the parking topic of a router whose policy parks; null (and a message) otherwise. */
    static RouterConfig parkingConfig(ConfigOption option) {
        var c = option.loadOrReport();
        if (c == null) {
            return null;
        }
        if (c.routing().deadLetters().policy() != io.outboxrouter.config.RoutingConfig.DeadLetterPolicy.PARK_AGGREGATE) {
            System.err.println("outbox-router: router " + c.name() + " does not park aggregates (routing.dead-letters.policy is "
                    + c.routing().deadLetters().policy().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-')
                    + "); set it to park-aggregate to use parked");
            return null;
        }
        return c;
    }

    static ParkedAggregates read(ParkingTopic topic) throws java.util.concurrent.ExecutionException, InterruptedException {
        var all = new ParkedAggregates(null);
        if (topic.exists()) {
            topic.read(all::apply);
        }
        return all;
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "Prints the parked aggregates, oldest first: since "
            + "when, the row that parked it and why, how many events are held, and a request not carried out yet.")
    static final class ListParked implements Callable<Integer> {
        @Mixin
        ConfigOption config;

        @Override
        public Integer call() throws Exception {
            var c = parkingConfig(config);
            if (c == null) {
                return Main.EXIT_USAGE;
            }
            var topic = new ParkingTopic(c.kafka(), c.routing().deadLetters().parkingTopic());
            var state = read(topic);
            var parks = state.parks();
            if (parks.isEmpty()) {
                System.out.println("No aggregate is parked (parking topic " + topic.name() + ").");
                return 0;
            }
            var requested = state.pendingRequests();
            System.out.println(parks.size() + " parked aggregate(s) (parking topic " + topic.name() + "), oldest first:");
            for (var p : parks) {
                var request = requested.stream().filter(r -> r.aggregate().equals(p.aggregate())).findFirst();
                System.out.printf("  %s  parked %s ago, since %s by the row at %s%s: %s%n    %d event(s) held%s%n", p.aggregate(),
                        age(p.since()), p.since(), p.position(), p.event() == null ? "" : " (event id " + p.event() + ")", p.reason(),
                        p.held(), (p.stream().equals(c.name()) ? "" : ", stream " + p.stream())
                                + request.map(r -> "; " + (r.action() == Action.RELEASE_REQUEST ? "release" : "drop") + " requested at "
                                + r.at()).orElse(""));
            }
            return 0;
        }

        private static String age(Instant since) {
            var d = Duration.between(since, Instant.now());
            return d.toDays() > 0 ? d.toDays() + "d" : d.toHours() > 0 ? d.toHours() + "h" : d.toMinutes() > 0 ? d.toMinutes() + "m"
                    : Math.max(0, d.toSeconds()) + "s";
        }
    }

    /** What {@code release} and {@code drop} share: the request, and the wait for the router to carry it out. */
    abstract static class Request implements Callable<Integer> {
        @Mixin
        ConfigOption config;

        @Parameters(paramLabel = "AGGREGATE_ID", description = "The aggregate id, as parked list prints it.")
        String aggregate;

        @Option(names = "--wait", paramLabel = "DURATION", defaultValue = "1m", converter = DurationConverter.class,
                description = "How long to wait for the running router to carry it out, such as 30s, 5m or PT5M (default "
                        + "${DEFAULT-VALUE}; 0: do not wait).")
        Duration waitFor;

        abstract Action action();

        @Override
        public Integer call() throws Exception {
            var c = parkingConfig(config);
            if (c == null) {
                return Main.EXIT_USAGE;
            }
            var topic = new ParkingTopic(c.kafka(), c.routing().deadLetters().parkingTopic());
            var before = read(topic);
            if (before.parks().stream().noneMatch(p -> p.aggregate().equals(aggregate))) {
                System.err.println("outbox-router: aggregate " + aggregate + " is not parked (parking topic " + topic.name() + ")");
                return Main.EXIT_FAILED;
            }
            String id = UUID.randomUUID().toString();
            var requestedAt = topic.write(ParkingRecord.marker(action(), aggregate, null, null, null, null, null, null, id));
            String verb = action() == Action.RELEASE_REQUEST ? "release" : "drop";
            long deadline = System.nanoTime() + waitFor.toNanos();
            while (System.nanoTime() < deadline) {
                Thread.sleep(1000);
                // Done when the park ended after the request, by it or by another one for the same aggregate.
                var ended = new ArrayList<ParkingRecord>();
                topic.read(r -> {
                    if (r.aggregate().equals(aggregate) && (r.action() == Action.RELEASED || r.action() == Action.DROPPED)
                            && (id.equals(r.request()) || !r.time().isBefore(requestedAt.minusSeconds(1)))) {
                        ended.add(r);
                    }
                });
                if (!ended.isEmpty()) {
                    var last = ended.get(ended.size() - 1);
                    boolean released = last.action() == Action.RELEASED;
                    System.out.println("Aggregate " + aggregate + ": " + (released ? "released (its held events are published in order)"
                            : "dropped (its held events stay in " + topic.name() + ")") + "; it flows again."
                            + (id.equals(last.request()) ? "" : " (By another request than this one.)"));
                    return 0;
                }
            }
            System.out.println("Requested the " + verb + " of aggregate " + aggregate + " (request " + id + "). "
                    + (waitFor.isZero() ? "" : "No router carried it out within " + Durations.format(waitFor) + ". ")
                    + "A running router carries it out between batches, a stopped one at its next start; if the router runs, its "
                    + "log says why it did not (a Kafka transaction still open, a release that failed and is tried again). "
                    + "`parked list` shows the request until then.");
            return waitFor.isZero() ? 0 : Main.EXIT_FAILED;
        }
    }

    @Command(name = "release", mixinStandardHelpOptions = true, description = "Publishes the aggregate's held events in order "
            + "(a fixed copy of the bad row first, if one was inserted with its event id) and lets it flow again.")
    static final class Release extends Request {
        @Override
        Action action() {
            return Action.RELEASE_REQUEST;
        }
    }

    @Command(name = "drop", mixinStandardHelpOptions = true, description = "Lets the aggregate flow again without publishing its "
            + "held events; they stay in the parking topic.")
    static final class Drop extends Request {
        @Override
        Action action() {
            return Action.DROP_REQUEST;
        }
    }
}
