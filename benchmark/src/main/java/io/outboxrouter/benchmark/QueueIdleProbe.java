package io.outboxrouter.benchmark;

import io.debezium.connector.base.ChangeEventQueue;
import io.debezium.pipeline.DataChangeEvent;
import io.debezium.util.LoggingContext;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The CPU one thread spends polling an empty Debezium change event queue, the way the engine's task thread does while
 * nothing is committed, for several poll intervals. It separates the queue's own cost from the rest of an idle router:
 * the queue's wait ends on a millisecond timer, so each poll may spin through the last millisecond of its interval.
 */
final class QueueIdleProbe {
    private QueueIdleProbe() {
    }

    /** Percent of one core spent polling an empty queue, by poll interval in milliseconds. */
    static Map<Integer, Double> measure(List<Integer> intervalsMillis, Duration each) throws InterruptedException {
        var threads = ManagementFactory.getThreadMXBean();
        var result = new LinkedHashMap<Integer, Double>();
        for (int interval : intervalsMillis) {
            ChangeEventQueue<DataChangeEvent> queue = new ChangeEventQueue.Builder<DataChangeEvent>()
                    .pollInterval(Duration.ofMillis(interval)).maxBatchSize(2048).maxQueueSize(8192)
                    .loggingContextSupplier(() -> LoggingContext.forConnector("probe", "probe", "probe")).build();
            long end = System.nanoTime() + each.toNanos();
            long cpu0 = threads.getCurrentThreadCpuTime();
            long wall0 = System.nanoTime();
            int polls = 0;
            while (System.nanoTime() < end) {
                queue.poll();
                polls++;
            }
            double percent = (threads.getCurrentThreadCpuTime() - cpu0) / (double) (System.nanoTime() - wall0) * 100;
            Benchmark.LOG.info("an empty Debezium queue polled every {} ms: {} polls, {}% of a core", interval, polls, Results.fmt1(percent));
            result.put(interval, percent);
        }
        return result;
    }

    public static void main(String[] args) throws InterruptedException {
        measure(List.of(10, 25, 50, 100), Duration.ofSeconds(5));
    }
}
