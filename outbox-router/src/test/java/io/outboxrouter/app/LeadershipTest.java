package io.outboxrouter.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.outboxrouter.offsets.HeldLock;
import io.outboxrouter.offsets.RouterLock.LockState;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Who streams, with the lock's database played by a fake: the lock taken, stood by for, waited for through an outage,
 * lost and taken again, or lost to another process. A tick of 20 ms stands for the router's second.
 */
class LeadershipTest {
    private static final Duration TICK = Duration.ofMillis(20);
    private static final Duration WAIT = Duration.ofSeconds(5);

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final FakeLocks locks = new FakeLocks();
    private final Events events = new Events();

    @AfterEach
    void stopTimer() {
        timer.shutdownNow();
    }

    private Leadership<FakeLock> leadership(Duration outageBudget) {
        return new Leadership<>(locks, timer, outageBudget, TICK, Duration.ofSeconds(30));
    }

    @Test
    void aFreeLockIsTakenAtOnceAndHeldWhileTheServerSaysSo() {
        try (var leadership = leadership(Duration.ZERO)) {
            leadership.start(events);
            assertThat(events.list).containsExactly("activated 1");
            assertThat(leadership.isActive()).isTrue();
            assertThat(leadership.waitingFor()).isNull();
            await().atMost(WAIT).until(() -> locks.checks.get() >= 5); // checked every tick, and still held
            assertThat(events.list).containsExactly("activated 1");
        }
        assertThat(locks.taken.get(0).closed).as("released on close").isTrue();
    }

    @Test
    void aStandbyTakesTheLockOnceTheOtherProcessLetsGo() {
        locks.heldByOther = 99;
        try (var leadership = leadership(Duration.ZERO)) {
            leadership.start(events);
            assertThat(leadership.isActive()).isFalse();
            assertThat(leadership.waitingFor()).isEqualTo("the other process");
            locks.heldByOther = 0;
            await().atMost(WAIT).until(leadership::isActive);
            assertThat(events.list).containsExactly("activated 1");
        }
    }

    @Test
    void aLostLockStopsTheStreamAtOnceAndIsTakenAgainWhenFree() {
        try (var leadership = leadership(Duration.ZERO)) {
            leadership.start(events);
            locks.taken.get(0).state = LockState.LOST; // the session was killed
            await().atMost(WAIT).until(() -> events.list.size() == 3);
            assertThat(events.list).containsExactly("activated 1", "lost: lost the lock of fake lock", "activated 2");
            assertThat(locks.taken.get(0).closed).isTrue();
        }
    }

    @Test
    void aLockLostToAnotherProcessStopsThisOne() {
        try (var leadership = leadership(Duration.ZERO)) {
            leadership.start(events);
            locks.heldByOther = 99;
            locks.taken.get(0).state = LockState.LOST;
            await().atMost(WAIT).until(() -> events.list.size() == 3);
            assertThat(events.list.get(1)).startsWith("lost:");
            assertThat(events.list.get(2)).isEqualTo("failed: another process took fake lock over while this one had lost its lock; "
                    + "this one stops");
            assertThat(leadership.isActive()).isFalse();
        }
    }

    @Test
    void aLockStillHeldByThisProcesssOwnLostSessionIsWaitedForNotTakenForAnother() {
        try (var leadership = leadership(Duration.ZERO)) {
            leadership.start(events);
            var first = locks.taken.get(0);
            locks.heldByOther = first.session(); // the server has not dropped the silent session yet
            first.state = LockState.LOST;
            await().atMost(WAIT).until(() -> locks.holderAsked.get() >= 3);
            assertThat(events.list).containsExactly("activated 1", "lost: lost the lock of fake lock");
            locks.heldByOther = 0; // dropped now
            await().atMost(WAIT).until(() -> events.list.size() == 3);
            assertThat(events.list.get(2)).isEqualTo("activated 2");
        }
    }

    @Test
    void checksWithoutAnAnswerCountAsALostLockOnlyThreeInARow() {
        try (var leadership = leadership(Duration.ZERO)) {
            leadership.start(events);
            var lock = locks.taken.get(0);
            lock.answers.addAll(List.of(LockState.UNKNOWN, LockState.UNKNOWN, LockState.HELD, LockState.UNKNOWN, LockState.UNKNOWN));
            await().atMost(WAIT).until(lock.answers::isEmpty);
            await().atMost(WAIT).until(() -> locks.checks.get() >= 8);
            assertThat(events.list).as("two in a row, then an answer: still held").containsExactly("activated 1");
            lock.answers.addAll(List.of(LockState.UNKNOWN, LockState.UNKNOWN, LockState.UNKNOWN));
            await().atMost(WAIT).until(() -> events.list.size() >= 2);
            assertThat(events.list.get(1)).startsWith("lost:");
        }
    }

    @Test
    void aDatabaseDownAtStartIsWaitedForThenTheLockIsTaken() {
        locks.down = true;
        try (var leadership = leadership(Duration.ZERO)) {
            leadership.start(events);
            assertThat(leadership.waitingFor()).isEqualTo("the database");
            await().atMost(WAIT).until(() -> locks.tries.get() >= 3);
            locks.down = false;
            await().atMost(WAIT).until(leadership::isActive);
            assertThat(events.list).containsExactly("activated 1");
        }
    }

    @Test
    void anOutageLongerThanTheBudgetStopsTheRouterNamingTheSetting() {
        locks.down = true;
        try (var leadership = leadership(Duration.ofMillis(100))) {
            leadership.start(events);
            await().atMost(WAIT).until(() -> !events.list.isEmpty());
            assertThat(events.list.get(0)).startsWith("failed: cannot take the lock of fake lock after waiting PT0.1S "
                    + "(offsets.give-up-after)");
        }
    }

    @Test
    void aRefusalThatWaitingCannotFixFailsTheStartNamingTheConnectionSetting() {
        locks.refusal = new SQLException("password authentication failed", "28P01");
        try (var leadership = leadership(Duration.ZERO)) {
            assertThatThrownBy(() -> leadership.start(events)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("cannot take the lock of fake lock: password authentication failed")
                    .hasMessageContaining("offsets.connection");
        }
        assertThat(locks.tries.get()).as("not tried again").isEqualTo(1);
    }

    @Test
    void aFirstActivationThatFailsReleasesTheLockAndFailsTheStart() {
        events.failActivation = true;
        try (var leadership = leadership(Duration.ZERO)) {
            assertThatThrownBy(() -> leadership.start(events)).hasMessage("setup error");
            assertThat(leadership.isActive()).isFalse();
        }
        assertThat(locks.taken.get(0).closed).isTrue();
    }

    @Test
    void aStoppingRouterKeepsItsLockButNoLongerWatchesIt() {
        try (var leadership = leadership(Duration.ZERO)) {
            leadership.start(events);
            leadership.stopWatching();
            locks.taken.get(0).state = LockState.LOST;
            int checks = locks.checks.get();
            await().pollDelay(TICK.multipliedBy(10)).atMost(WAIT).until(() -> true);
            assertThat(locks.checks.get()).isLessThanOrEqualTo(checks + 1);
            assertThat(events.list).containsExactly("activated 1");
            assertThat(locks.taken.get(0).closed).isFalse();
        }
        assertThat(locks.taken.get(0).closed).isTrue();
    }

    /** The lock's database: free, held by another session, down, or refusing. */
    private static final class FakeLocks implements Leadership.Locks<FakeLock> {
        final List<FakeLock> taken = new CopyOnWriteArrayList<>();
        final AtomicInteger tries = new AtomicInteger();
        final AtomicInteger checks = new AtomicInteger();
        final AtomicInteger holderAsked = new AtomicInteger();
        volatile long heldByOther;
        volatile boolean down;
        volatile SQLException refusal;

        @Override
        public Optional<FakeLock> tryAcquire() throws SQLException {
            tries.incrementAndGet();
            if (refusal != null) {
                throw refusal;
            }
            if (down) {
                throw new SQLTransientConnectionException("connection refused", "08001");
            }
            if (heldByOther != 0 || taken.stream().anyMatch(l -> !l.closed)) {
                return Optional.empty();
            }
            var lock = new FakeLock(this, 100 + taken.size());
            taken.add(lock);
            return Optional.of(lock);
        }

        @Override
        public long holder() {
            holderAsked.incrementAndGet();
            return heldByOther;
        }

        @Override
        public boolean isOutage(SQLException e) {
            return e.getSQLState().startsWith("08");
        }

        @Override
        public String describe() {
            return "fake lock";
        }
    }

    private static final class FakeLock implements HeldLock {
        private final FakeLocks locks;
        private final long session;
        final java.util.Queue<LockState> answers = new java.util.concurrent.ConcurrentLinkedQueue<>();
        volatile LockState state = LockState.HELD;
        volatile boolean closed;

        FakeLock(FakeLocks locks, long session) {
            this.locks = locks;
            this.session = session;
        }

        @Override
        public LockState check() {
            locks.checks.incrementAndGet();
            var answer = answers.poll();
            return answer != null ? answer : state;
        }

        @Override
        public long session() {
            return session;
        }

        @Override
        public String description() {
            return "fake lock";
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    /** What the router was told, in order. */
    private static final class Events implements Leadership.Listener<FakeLock> {
        final List<String> list = new CopyOnWriteArrayList<>();
        private int activations;
        volatile boolean failActivation;

        @Override
        public void activated(FakeLock lock) {
            if (failActivation) {
                throw new IllegalStateException("setup error");
            }
            list.add("activated " + ++activations);
        }

        @Override
        public void lost(String why) {
            list.add("lost: " + why);
        }

        @Override
        public void failed(Throwable error) {
            list.add("failed: " + error.getMessage());
        }
    }
}
