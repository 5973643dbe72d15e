package io.outboxrouter.publish;

import io.outboxrouter.kafka.ParkingTopic;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.AuthorizationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One stream's parks, read whole from the parking topic as the stream is activated (the topic created when missing),
 * through Kafka outages up to {@code kafka.give-up-after}; a topic another router parks in too, or with fewer
 * partitions than shards, is refused.
 *
 * @param parked what is parked, and which requests wait
 * @param ends   where each partition ended when it was read
 * @param id     the topic's id; null when the broker did not say
 */
record ParkingLoad(ParkedAggregates parked, Map<TopicPartition, Long> ends, Uuid id) {
    private static final Logger LOG = LoggerFactory.getLogger(ParkingLoad.class);

    /** @param stopped whether the stream stopped meanwhile: the read then gives up */
    static ParkingLoad read(ParkingTopic topic, String stream, int shards, BooleanSupplier stopped) throws InterruptedException {
        long started = System.nanoTime();
        for (long backoff = 1_000; ; backoff = Math.min(backoff * 2, 30_000)) {
            var parked = new ParkedAggregates(stream);
            ParkingTopic.Layout layout;
            Map<TopicPartition, Long> ends;
            try {
                layout = topic.ensureExists(shards);
                ends = topic.read(parked::apply);
            } catch (ExecutionException | RuntimeException e) {
                if (stopped.getAsBoolean()) {
                    throw new IllegalStateException("the stream stopped while reading the parking topic " + topic.name());
                }
                Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
                boolean givingUp = !topic.giveUpAfter().isZero() && System.nanoTime() - started > topic.giveUpAfter().toNanos();
                if (givingUp || cause instanceof AuthorizationException || cause instanceof io.outboxrouter.kafka.KafkaClients.SetupException) {
                    throw new IllegalStateException("cannot read the parking topic " + topic.name() + " (routing.dead-letters.parking-topic): "
                            + cause.getMessage(), cause);
                }
                LOG.warn("Cannot read the parking topic {} yet ({}); trying again in {} s (kafka.give-up-after)", topic.name(),
                        cause.toString(), backoff / 1000);
                Thread.sleep(backoff);
                continue;
            }
            check(topic, stream, shards, parked, layout.partitions());
            return new ParkingLoad(parked, ends, layout.id());
        }
    }

    private static void check(ParkingTopic topic, String stream, int shards, ParkedAggregates parked, int partitions) {
        String router = routerOf(stream);
        var others = parked.streams().stream().filter(s -> !routerOf(s).equals(router)).toList();
        if (!others.isEmpty()) {
            throw new IllegalStateException("the parking topic " + topic.name() + " holds the parks of another router too (" + others
                    + "): a router's parking topic must be its own, or another router's open Kafka transactions hide held events "
                    + "from it. Set routing.dead-letters.parking-topic to a topic of this router's (the default is "
                    + io.outboxrouter.config.RouterConfigLoader.parkingTopicOf(router) + ")");
        }
        if (partitions < shards) {
            throw new IllegalStateException("the parking topic " + topic.name() + " has " + partitions + " partition(s), fewer than the "
                    + shards + " shards: each shard writes its own, so that another shard's open Kafka transaction never hides a "
                    + "held event from it. Fix: kafka-topics.sh --alter --topic " + topic.name() + " --partitions " + shards);
        }
    }

    /** The router a stream belongs to: its own name, or a shard's without the shard suffix. */
    static String routerOf(String stream) {
        return stream.replaceFirst("-shard-\\d+-of-\\d+$", "");
    }
}
