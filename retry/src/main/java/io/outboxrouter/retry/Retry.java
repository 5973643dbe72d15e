package io.outboxrouter.retry;

import java.time.Duration;
import java.util.function.Predicate;
import org.slf4j.Logger;

/**
 * The one retry loop of the project: capped exponential backoff with a time budget. Retryable failures
 * (a predicate decides) are retried until the budget is spent; then, or at once for any other failure,
 * a {@link GaveUpException} names the operation, the attempts, the time spent and the last cause.
 *
 * @param giveUpAfter total time budget; {@link Duration#ZERO} retries forever
 */
public record Retry(Duration initialBackoff, Duration maxBackoff, Duration giveUpAfter) {

    /** Told about every failed attempt that is retried (metrics, status); it must not block or throw. */
    @FunctionalInterface
    public interface Listener {
        Listener NONE = (operation, attempt, cause) -> {
        };

        void retrying(String operation, int attempt, Throwable cause);
    }

    /** One attempt at the operation. */
    @FunctionalInterface
    public interface Attempt<T> {
        T call() throws Exception;
    }

    /** Thrown when an operation failed for good; its message is meant for the operator. */
    public static final class GaveUpException extends Exception {
        private final boolean retryable;

        GaveUpException(String message, Throwable cause, boolean retryable) {
            super(message, cause);
            this.retryable = retryable;
        }

        /** Whether the last failure was of the retryable kind (an outage), as opposed to a setup error. */
        public boolean wasRetryable() {
            return retryable;
        }
    }

    public <T> T call(String operation, Predicate<Throwable> retryable, Logger log, Attempt<T> attempt)
            throws GaveUpException, InterruptedException {
        return call(operation, retryable, log, Listener.NONE, attempt);
    }

    /** Runs {@code attempt} until it succeeds, fails for good, or the budget is spent; each retry is logged and told to {@code listener}. */
    public <T> T call(String operation, Predicate<Throwable> retryable, Logger log, Listener listener, Attempt<T> attempt)
            throws GaveUpException, InterruptedException {
        long start = System.nanoTime();
        long backoff = initialBackoff.toMillis();
        for (int attempts = 1; ; attempts++) {
            try {
                return attempt.call();
            } catch (InterruptedException e) {
                throw e;
            } catch (Exception e) {
                Duration spent = Duration.ofNanos(System.nanoTime() - start);
                if (!retryable.test(e)) {
                    throw new GaveUpException(operation + " failed: " + describe(e), e, false);
                }
                boolean budgetLeft = giveUpAfter.isZero() || spent.plusMillis(backoff).compareTo(giveUpAfter) <= 0;
                if (!budgetLeft) {
                    throw new GaveUpException(operation + ": giving up after " + attempts
                            + (attempts == 1 ? " attempt" : " attempts") + " over " + human(spent) + ": " + describe(e), e, true);
                }
                log.warn("{} failed (attempt {}), retrying in {} ms: {}", operation, attempts, backoff, describe(e));
                listener.retrying(operation, attempts, e);
                Thread.sleep(backoff);
                backoff = Math.min(backoff * 2, maxBackoff.toMillis());
            }
        }
    }

    /** The exception's class and message, with its root cause: one line an operator can act on. */
    public static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String first = e.getClass().getSimpleName() + ": " + e.getMessage();
        return root == e ? first : first + " (caused by " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
    }

    private static String human(Duration d) {
        long s = d.toSeconds();
        return s >= 120 ? d.toMinutes() + "m" : s >= 1 ? s + "s" : d.toMillis() + "ms";
    }
}
