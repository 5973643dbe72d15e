package io.outboxrouter.audit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.Test;

class DeliveredIdsTest {

    private static long[] hashes(String... ids) {
        var out = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = DeliveredIds.hash(ids[i]);
        }
        return out;
    }

    @Test
    void anIdIsKnownByItsHashUntilItsGenerationIsForgotten() {
        var ids = new DeliveredIds(1_000);
        ids.addAll(hashes("a", "b"), 2, 10_000);
        ids.addAll(hashes("c"), 1, 11_500); // a second generation: the first took ids for 1 s
        assertThat(ids.contains(DeliveredIds.hash("a"))).isTrue();
        assertThat(ids.contains(DeliveredIds.hash("c"))).isTrue();
        assertThat(ids.contains(DeliveredIds.hash("d"))).isFalse();
        assertThat(ids.size()).isEqualTo(3);

        ids.forgetBefore(11_000); // the first generation took ids until 11.5 s: kept
        assertThat(ids.contains(DeliveredIds.hash("a"))).isTrue();
        ids.forgetBefore(12_000);
        assertThat(ids.contains(DeliveredIds.hash("a"))).isFalse();
        assertThat(ids.contains(DeliveredIds.hash("c"))).as("the newest generation may still take ids").isTrue();
        ids.forgetBefore(12_600);
        assertThat(ids.size()).isZero();
    }

    @Test
    void onlyTheFirstCountOfTheArrayIsTaken() {
        var ids = new DeliveredIds(1_000);
        ids.addAll(hashes("a", "b", "c"), 2, 0);
        assertThat(ids.contains(DeliveredIds.hash("b"))).isTrue();
        assertThat(ids.contains(DeliveredIds.hash("c"))).isFalse();
    }

    @Test
    void tooManyIdsDropTheOldestGenerationAndSaySo() {
        var ids = new DeliveredIds(100);
        int n = DeliveredIds.MOST_KEPT / 2 + 1;
        var batch = new long[n];
        for (int g = 0; g < 3; g++) {
            for (int i = 0; i < n; i++) {
                batch[i] = DeliveredIds.hash(g + "-" + i);
            }
            ids.addAll(batch, n, g * 1_000L);
        }
        assertThat(ids.size()).isLessThanOrEqualTo(DeliveredIds.MOST_KEPT);
        assertThat(ids.contains(DeliveredIds.hash("0-1"))).isFalse();
        assertThat(ids.contains(DeliveredIds.hash("2-1"))).isTrue();
        assertThat(ids.takeDroppedThrough()).as("the ids of the dropped generations were taken until the next began").isEqualTo(2_000);
        assertThat(ids.takeDroppedThrough()).isZero();
    }

    @Test
    void hashesOfDistinctIdsDiffer() {
        var seen = new LongSet(200_000);
        for (int i = 0; i < 200_000; i++) {
            assertThat(seen.add(DeliveredIds.hash(UUID.nameUUIDFromBytes(Integer.toString(i).getBytes()).toString()))).isTrue();
        }
        assertThat(DeliveredIds.hash("42")).isEqualTo(DeliveredIds.hash(new String("42"))).isNotEqualTo(DeliveredIds.hash("43"));
    }
}
