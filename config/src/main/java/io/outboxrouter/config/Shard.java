package io.outboxrouter.config;

import java.util.List;
import java.util.stream.IntStream;

/**
 * One of the shards of a Postgres router ({@code source.postgres.shards}): the outbox rows whose aggregate id hashes to
 * {@code index} modulo {@code count}, read through a replication slot and publication of their own, with offsets and a
 * lock of their own. All events of one aggregate are in one shard, so their order is kept.
 */
public record Shard(int index, int count) {
    /** More slots than this would cost the server more (each walsender decodes all of the WAL) than they bring. */
    public static final int MAX_COUNT = 64;

    public Shard {
        if (count < 2 || index < 0 || index >= count) {
            throw new IllegalArgumentException("shard " + index + " of " + count);
        }
    }

    /** Shard indexes 0 to count - 1. */
    static List<Integer> all(int count) {
        return IntStream.range(0, count).boxed().toList();
    }

    /** The name of a shard's offsets rows, lock, heartbeat row and metrics: {@code orders-shard-0-of-4}. */
    public static String routerName(String routerName, int index, int count) {
        return routerName + "-shard-" + index + "-of-" + count;
    }

    /** What a shard's slot and publication names end with: {@code _shard_0_of_4}. */
    public static String suffix(int index, int count) {
        return "_shard_" + index + "_of_" + count;
    }

    public String routerName(String routerName) {
        return routerName(routerName, index, count);
    }

    public String suffix() {
        return suffix(index, count);
    }

    /** For log lines and the status page: {@code shard 0 of 4}. */
    @Override
    public String toString() {
        return "shard " + index + " of " + count;
    }
}
