package io.outboxrouter.audit;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Random;
import org.junit.jupiter.api.Test;

class LongSetTest {

    @Test
    void holdsWhatWasAddedAndNothingElseThroughGrowth() {
        var set = new LongSet(4);
        var expected = new HashSet<Long>();
        var random = new Random(7);
        for (int i = 0; i < 50_000; i++) {
            long v = random.nextLong();
            assertThat(set.add(v)).isEqualTo(expected.add(v));
        }
        assertThat(set.add(0)).isTrue();
        assertThat(set.add(0)).isFalse();
        expected.add(0L);
        assertThat(set.size()).isEqualTo(expected.size());
        expected.forEach(v -> assertThat(set.contains(v)).isTrue());
        var other = new Random(8);
        for (int i = 0; i < 10_000; i++) {
            long v = other.nextLong();
            assertThat(set.contains(v)).isEqualTo(expected.contains(v));
        }
    }

    @Test
    void filterKeepsTheMembersThePredicateKeeps() {
        var set = new LongSet(16);
        for (long v = -5; v <= 5; v++) {
            set.add(v);
        }
        var even = set.filter(v -> v % 2 == 0);
        assertThat(even.size()).isEqualTo(5);
        assertThat(even.contains(0)).isTrue();
        assertThat(even.contains(-4)).isTrue();
        assertThat(even.contains(3)).isFalse();
        assertThat(set.filter(v -> false).isEmpty()).isTrue();
    }
}
