package io.outboxrouter.kafka;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * What a failure of a stream's Kafka transaction means: fenced (another process took the transactional id over), refused
 * for good (authorization, a record no topic takes), or an outage that is retried.
 */
final class TransactionFailures {
    private final String streamName;
    private final String transactionalId;
    private final String offsetsTopic;

    TransactionFailures(String streamName, String transactionalId, String offsetsTopic) {
        this.streamName = streamName;
        this.transactionalId = transactionalId;
        this.offsetsTopic = offsetsTopic;
    }

    /** Whether {@code type} is in {@code e}'s chain of causes. */
    static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (type.isInstance(t)) {
                return true;
            }
        }
        return false;
    }

    /** A newer producer of the stream's transactional id exists: this process stops. */
    TransactionalPublisher.FencedOutException fenced(Exception e) {
        return new TransactionalPublisher.FencedOutException("fenced: another process started router stream " + streamName
                + " (its producer took transactional.id " + transactionalId + " over); this process stops without publishing more", e);
    }

    /** Fencing, authorization and records a topic will never take stop the stream; the rest is an outage, retried. */
    RuntimeException classify(Exception e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            // Only this: a newer producer of the id exists. InvalidProducerEpochException (the coordinator aborted a
            // transaction that outlived transaction.timeout.ms) is recovered from by aborting and sending again (KIP-588).
            if (t instanceof ProducerFencedException) {
                return fenced(e);
            }
            if (t instanceof TransactionalIdAuthorizationException) {
                return new UnrecoverableException("the producer may not use transactional.id " + transactionalId + ": grant WRITE and "
                        + "DESCRIBE on TransactionalId " + transactionalId + " (or its prefix outbox-router.) to the router's principal", e);
            }
            if (t instanceof TopicAuthorizationException denied) {
                return new UnrecoverableException("the producer is not authorized to write to " + denied.unauthorizedTopics()
                        + ": grant WRITE and DESCRIBE on them (the offsets topic " + offsetsTopic + " too)", e);
            }
            if (t instanceof RecordTooLargeException) {
                return new UnrecoverableException("Kafka refused a record of the transaction as too large: with exactly-once "
                        + "delivery, kafka.producer.max.request.size must not exceed the topics' max.message.bytes, so that such "
                        + "an event is dead-lettered before it is sent (" + t.getMessage() + ")", e);
            }
            if (t instanceof KafkaPublisher.UnwritableTopicException u) {
                return new UnrecoverableException(u.getMessage(), e);
            }
        }
        return e instanceof RuntimeException r ? r : new KafkaException(e);
    }

    /** Kafka will not take the transaction however long we wait, or the producer cannot go on: the stream stops. */
    static final class UnrecoverableException extends KafkaException {
        UnrecoverableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Outages and abortable errors are retried; fencing, refusals for good, and misuse are not (an IllegalStateException:
     * a producer closed under a batch of a stream that was stopped, which must not retry onto anything else).
     */
    static boolean isRetryable(Throwable e) {
        return !(e instanceof TransactionalPublisher.FencedOutException || e instanceof KafkaClients.SetupException
                || e instanceof UnrecoverableException || e instanceof AuthorizationException
                || e instanceof UnsupportedVersionException || e instanceof IllegalStateException || e instanceof NullPointerException
                || !KafkaPublisher.isRetryable(e));
    }
}
