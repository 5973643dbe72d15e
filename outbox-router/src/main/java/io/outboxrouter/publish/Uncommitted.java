package io.outboxrouter.publish;

import io.outboxrouter.metrics.RouterListener;
import io.outboxrouter.publish.Outcome.DeadLetter;
import io.outboxrouter.publish.Outcome.Event;
import io.outboxrouter.publish.Outcome.Held;
import io.outboxrouter.publish.Outcome.Released;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** What was sent since the last commit, counted by topic and commit time (the rows of one source transaction share one). */
final class Uncommitted {
    private record Published(String topic, Instant commitTime) {
    }

    private final java.util.Map<Published, long[]> published = new java.util.LinkedHashMap<>();
    private final java.util.Map<String, Integer> deadLettered = new java.util.HashMap<>();
    /** Held and released events: counted one by one (a park holds few). */
    private final List<Outcome> others = new ArrayList<>();
    /** The spans of the events sent since the last commit: they end when the commit is acknowledged. */
    final List<io.opentelemetry.api.trace.Span> spans = new ArrayList<>();
    /** Records sent since the last commit. */
    long total;
    private long since;

    void add(List<Outcome> outcomes, long start) {
        if (total == 0) {
            since = start;
        }
        for (var outcome : outcomes) {
            total++;
            if (outcome instanceof Event e) {
                published.computeIfAbsent(new Published(e.record().topic(), e.change().commitTime()), k -> new long[1])[0]++;
            } else if (outcome instanceof DeadLetter d) {
                deadLettered.merge(d.reason(), 1, Integer::sum);
            } else if (outcome instanceof Held || outcome instanceof Released) {
                others.add(outcome);
            }
        }
    }

    void acknowledged(RouterListener listener, Instant ackTime) {
        published.forEach((p, n) -> {
            for (long i = 0; i < n[0]; i++) {
                listener.published(p.topic(), p.commitTime(), ackTime);
            }
        });
        deadLettered.forEach((reason, n) -> {
            for (int i = 0; i < n; i++) {
                listener.deadLettered(reason);
            }
        });
        if (total > 0) {
            listener.batchPublished((int) Math.min(total, Integer.MAX_VALUE), Duration.ofNanos(System.nanoTime() - since));
        }
        others.forEach(o -> o.acknowledged(listener, ackTime));
        published.clear();
        deadLettered.clear();
        others.clear();
        total = 0;
    }
}
