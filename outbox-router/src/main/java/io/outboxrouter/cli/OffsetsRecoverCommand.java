package io.outboxrouter.cli;

import io.outboxrouter.app.Recovery;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code offsets recover}: a Postgres router's position again after a failover to a standby without a copy of its slot. */
@Command(name = "recover", mixinStandardHelpOptions = true,
        description = {"Postgres: after the router's replication slot was lost while a position is stored (a failover to a "
                + "standby that kept no copy of it, or a slot dropped while the router was stopped), publishes again the "
                + "outbox rows committed since its last published transaction, creates the slot where they end, and stores "
                + "that position: the next start streams from there, with nothing in between lost.",
                "Needs track_commit_timestamp = on since before that transaction. Rows deleted since they were written "
                        + "(outbox.retention, a service that deletes its rows) and logical decoding messages cannot be "
                        + "published again. --dry-run prints the range and the rows; it changes nothing."})
final class OffsetsRecoverCommand implements Callable<Integer> {
    private static final int LISTED = 50;

    @Mixin
    ConfigOption config;

    @Option(names = "--dry-run", description = "Print what would be published; change nothing.")
    boolean dryRun;

    @Option(names = "--reach-back", paramLabel = "DURATION", defaultValue = "10s", converter = DurationConverter.class,
            description = "Also publish again the rows committed this long before the last published transaction "
                    + "(default: ${DEFAULT-VALUE}): commit times follow commit order only roughly, and a clock may step. "
                    + "Transactions begun after it are taken whatever their commit time.")
    java.time.Duration reachBack;

    @Override
    public Integer call() throws Exception {
        var c = config.loadOrReport();
        if (c == null) {
            return Main.EXIT_USAGE;
        }
        var unsupported = Recovery.unsupported(c);
        if (unsupported.isPresent()) {
            switch (unsupported.get()) {
                case BINLOG -> System.err.println("outbox-router: MySQL and MariaDB need no recovery after a failover: a replica that "
                        + "logs what it applies resumes the router by GTID (docs/failover.md); to move the position, use `offsets set`");
                case MESSAGES_ONLY -> System.err.println("outbox-router: router " + c.name() + " reads logical decoding messages only, "
                        + "which leave no rows to publish again: `run --accept-gap` starts from a new slot, and the messages in "
                        + "between are lost");
                case SHARDED -> System.err.println("outbox-router: router " + c.name() + " is sharded: recover each shard's slot is not "
                        + "supported yet; `run --accept-gap`, then `replay --since` the stored positions' time (`offsets show`)");
            }
            return Main.EXIT_USAGE;
        }
        var lock = OffsetsCommand.lockOrReport(c);
        if (lock == null) {
            return Main.EXIT_FAILED;
        }
        try (lock; var table = OffsetsCommand.open(c)) {
            Recovery recovery;
            try {
                recovery = Recovery.plan(c, table, reachBack);
            } catch (IllegalStateException e) {
                System.err.println("outbox-router: " + e.getMessage());
                return Main.EXIT_FAILED;
            }
            var plan = recovery.lost();
            System.out.println("router " + c.name() + ": replication slot " + plan.slot() + " does not exist; the last transaction "
                    + "it published" + (plan.publishedXid() < 0 ? "" : ", " + plan.publishedXid() + ",") + " committed at "
                    + plan.committedAt() + " (stored position " + plan.storedLsn() + ").");
            System.out.println("Publishes again the rows committed since " + recovery.since() + " (--reach-back " + reachBack.toSeconds()
                    + " s before it)" + (plan.publishedXid() < 0 ? "" : " or written by a transaction begun after it")
                    + ": those the router had published are sent twice.");
            recovery.tables().forEach((t, order) -> System.out.println("  " + t + ": " + order));
            System.out.println("Not covered: rows deleted since they were written (outbox.retention, or a service that deletes "
                    + "its outbox rows after inserting them).");
            c.source().messagePrefix().ifPresent(prefix -> System.out.println("NOT RECOVERED: the logical decoding messages with prefix "
                    + prefix + " (source.postgres.messages.prefix) committed since " + plan.committedAt() + ": a message leaves no "
                    + "row to publish again, and the new slot begins after them. Their writers must send them again; the router "
                    + "cannot tell which they were."));
            var policy = c.routing().deadLetters().policy();
            java.util.function.Consumer<String> rejected = reason -> System.err.println("outbox-router: cannot be routed ("
                    + policy.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-') + "): " + reason);
            if (dryRun) {
                var listed = new java.util.concurrent.atomic.AtomicInteger();
                var result = recovery.dryRun(r -> {
                    if (listed.getAndIncrement() < LISTED) {
                        System.out.println("  " + ReplayCommand.header(r, "id") + "  " + r.topic() + "  " + ReplayCommand.header(r, "type"));
                    }
                }, rejected);
                System.out.println(result.published() + " row(s) would be published again"
                        + (result.published() > LISTED ? " (first " + LISTED + " listed)" : "")
                        + (result.rejected() > 0 ? "; " + result.rejected() + " cannot be routed" : "") + ", and slot " + plan.slot()
                        + " created where they end. Nothing was changed (--dry-run).");
                return 0;
            }
            Recovery.Recovered recovered;
            try {
                recovered = recovery.apply(rejected, new Recovery.Progress() {
                    @Override
                    public void slotCreated(String consistentPoint) {
                        System.out.println("Created slot " + plan.slot() + " at " + consistentPoint + ".");
                    }

                    @Override
                    public void offsetsTopicWritten() {
                        System.out.println("router " + c.name() + ": written to the offsets topic " + c.kafka().offsetsTopic() + " too");
                    }
                });
            } catch (Recovery.Stopped e) {
                System.err.println("outbox-router: the recovery stopped: " + e.getMessage() + ". " + (e.notDropped().isEmpty()
                        ? "Slot " + plan.slot() + " was dropped again, so that it can be run once more (events sent before "
                        + "the stop are then published twice)" : "Slot " + plan.slot() + " could not be dropped (" + e.notDropped().get()
                        + "): drop it with SELECT pg_drop_replication_slot('" + plan.slot() + "') before running it again"));
                return Main.EXIT_FAILED;
            }
            var result = recovered.result();
            System.out.println(result.published() + " event(s) published again, each with the header replayed=true"
                    + (result.rejected() > 0 ? "; " + result.rejected() + " row(s) cannot be routed ("
                    + (recovered.deadLettered() ? "sent to the dead-letter topic" : "skipped, as routing.dead-letters.policy says")
                    + ")" : "") + ". The next start streams from the new slot."
                    + c.source().messagePrefix().map(prefix -> " Messages with prefix " + prefix + " committed in between are not "
                    + "published (see above).").orElse(""));
            return 0;
        }
    }
}
