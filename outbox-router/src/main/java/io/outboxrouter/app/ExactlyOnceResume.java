package io.outboxrouter.app;

import io.outboxrouter.cdc.SourceSetupException;
import io.outboxrouter.config.KafkaConfig;
import io.outboxrouter.config.RouterConfig;
import io.outboxrouter.kafka.OffsetsTopic;
import io.outboxrouter.kafka.TransactionalPublisher;
import io.outboxrouter.metrics.RouterMetrics;
import io.outboxrouter.offsets.OffsetTable;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** How an exactly-once stream's activation takes over its transactional id and its committed position. */
final class ExactlyOnceResume {
    private static final Logger LOG = LoggerFactory.getLogger(ExactlyOnceResume.class);

    private ExactlyOnceResume() {
    }

    /**
     * Exactly-once: a new producer (and handler) for this activation, whose {@code initTransactions()} fences every
     * earlier producer of the stream and aborts what it left open; then the offsets table and the offsets topic are
     * made to agree (the topic's position wins, unless an at-least-once run or an operator wrote the table since),
     * and the engine resumes from there. First, before fencing anyone, the topic's positions of this name must come
     * from this router's offsets table ({@link SourceToken}).
     *
     * @param acceptForeign the operator started with --accept-gap: positions of this name from another offsets table are taken over
     * @param install       takes the new producer as soon as it exists (before its transactions are initialized), with a
     *                      handler of its own, so that a start that fails still closes it
     */
    static void resume(RouterConfig config, RouterMetrics metrics, OffsetTable table, long fence, boolean acceptForeign, int shardIndex,
                       Consumer<TransactionalPublisher> install) {
        var topic = new OffsetsTopic(config.kafka());
        try {
            var token = SourceToken.of(config, table, topic, acceptForeign, shardIndex);
            var transactional = TransactionalPublisher.of(config.kafka(), config.name(), KafkaConfig.transactionalId(config.name()),
                    config.source().streamsInProcess(), Duration.ofMillis(200), metrics);
            install.accept(transactional);
            transactional.activate();
            int shards = config.source().postgres().shards();
            int partitions = topic.ensureExists(shards);
            if (partitions < shards) {
                // A read_committed reader stops at another shard's open transaction: a shard sharing a partition could
                // read a stale position of its own and resume from it.
                throw new IllegalStateException("the offsets topic " + topic.name() + " has " + partitions + " partition(s), fewer "
                        + "than the " + shards + " shards: each shard needs its own. Fix: kafka-topics.sh --alter --topic "
                        + topic.name() + " --partitions " + shards + " (or set kafka.offsets-topic to a new topic)");
            }
            int partition = OffsetsTopic.partitionOf(shardIndex, partitions);
            transactional.useOffsetsPartition(partition);
            var committed = topic.read(config.name(), partition);
            var toTopic = new LinkedHashMap<>(CommittedPosition.reconcile(config, table, topic.name(), committed, fence,
                    token.tableWins()));
            toTopic.put(OffsetsTopic.sourceKey(config.name()), SourceToken.mark(config, token.token()));
            transactional.commitPositions(toTopic);
            table.write(config.name(), Map.of(OffsetTable.AUTHORITY_KEY, OffsetTable.TOPIC), fence);
            LOG.info("Router {}: exactly-once delivery, transactional.id {}, positions committed to {} (partition {})", config.name(),
                    transactional.transactionalId(), topic.name(), partition);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting exactly-once delivery", e);
        } catch (SourceSetupException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("cannot start exactly-once delivery for router " + config.name() + ": "
                    + e.getMessage(), e);
        }
    }
}
