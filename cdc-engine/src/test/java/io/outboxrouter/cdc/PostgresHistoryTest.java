package io.outboxrouter.cdc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class PostgresHistoryTest {
    private static final String SYSTEM = "7714594695521937295";

    @Test
    void readsEachEarlierTimelineAndWhereItEnded() {
        var ends = PostgresHistory.parse("1\t0/30164D0\tno recovery target specified\n\n2\t1/A0000028\tat restore point \"x\"\n");
        assertThat(ends).containsExactly(Map.entry(1, PostgresSource.parseLsn("0/30164D0")),
                Map.entry(2, PostgresSource.parseLsn("1/A0000028")));
    }

    @Test
    void aPositionReadBeforeTheBranchPointIsInBothHistories() {
        var history = new PostgresHistory(SYSTEM, 2, PostgresHistory.parse("1\t0/30164D0\tpromoted\n"));
        var stamp = new PostgresHistory.Stamp(SYSTEM, 1);
        assertThat(history.missing(stamp, PostgresSource.parseLsn("0/30164CF"))).isEmpty();
        assertThat(history.missing(new PostgresHistory.Stamp(SYSTEM, 2), PostgresSource.parseLsn("0/9000000"))).isEmpty();
    }

    @Test
    void aPositionReadOnTheFormerPrimaryAtOrPastTheBranchPointIsNot() {
        var history = new PostgresHistory(SYSTEM, 3, PostgresHistory.parse("1\t0/30164D0\tpromoted\n2\t0/5000000\tpromoted\n"));
        assertThat(history.missing(new PostgresHistory.Stamp(SYSTEM, 1), PostgresSource.parseLsn("0/30164D0")))
                .hasValueSatisfying(why -> assertThat(why).contains("timeline 1").contains("left at 0/30164D0")
                        .contains("writes on timeline 3"));
        assertThat(history.missing(new PostgresHistory.Stamp(SYSTEM, 2), PostgresSource.parseLsn("0/4FFFFFF"))).isEmpty();
        assertThat(history.missing(new PostgresHistory.Stamp(SYSTEM, 2), PostgresSource.parseLsn("0/5000100"))).isPresent();
        assertThat(history.lastSwitch()).isEqualTo(PostgresSource.parseLsn("0/5000000"));
    }

    @Test
    void aTimelineThisHistoryNeverHadIsNotInIt() {
        // restored to an earlier point: the server writes on timeline 2, the position was read on a timeline 4
        var history = new PostgresHistory(SYSTEM, 2, PostgresHistory.parse("1\t0/30164D0\tpromoted\n"));
        assertThat(history.missing(new PostgresHistory.Stamp(SYSTEM, 4), 1L)).hasValueSatisfying(why ->
                assertThat(why).contains("not in this server's history"));
    }

    @Test
    void anotherClusterIsLeftToTheOtherChecks() {
        var history = new PostgresHistory("1111", 1, Map.of());
        assertThat(history.missing(new PostgresHistory.Stamp(SYSTEM, 3), 1L)).isEmpty();
        assertThat(history.lastSwitch()).isNull();
    }

    @Test
    void theStampIsReadBackAndAnUnreadableOneIsNone() {
        var stamp = new PostgresHistory.Stamp(SYSTEM, 2);
        assertThat(PostgresHistory.Stamp.of(stamp.json())).contains(stamp);
        assertThat(PostgresHistory.Stamp.of("{\"timeline\":2}")).isEmpty();
        assertThat(PostgresHistory.Stamp.of("not json")).isEmpty();
    }
}
