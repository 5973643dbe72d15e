package io.outboxrouter.publish;

import io.outboxrouter.change.ChangeEvent;
import io.outboxrouter.metrics.RouterListener;
import java.time.Instant;
import org.apache.kafka.clients.producer.ProducerRecord;

/** A record to send and what it stands for. */
sealed interface Outcome {
    ProducerRecord<byte[], byte[]> record();

    void acknowledged(RouterListener listener, Instant ackTime);

    /** An outbox event. */
    record Event(ChangeEvent change, ProducerRecord<byte[], byte[]> record) implements Outcome {
        @Override
        public void acknowledged(RouterListener listener, Instant ackTime) {
            listener.published(record.topic(), change.commitTime(), ackTime);
        }
    }

    /** The dead letter of a row that could not be routed. */
    record DeadLetter(String reason, ProducerRecord<byte[], byte[]> record) implements Outcome {
        @Override
        public void acknowledged(RouterListener listener, Instant ackTime) {
            listener.deadLettered(reason);
        }
    }

    /** An event of a parked aggregate, written to the parking topic in its place. */
    record Held(ProducerRecord<byte[], byte[]> record) implements Outcome {
        @Override
        public void acknowledged(RouterListener listener, Instant ackTime) {
            listener.held();
        }
    }

    /** A released event, published to its topic from the parking topic. */
    record Released(ProducerRecord<byte[], byte[]> record) implements Outcome {
        @Override
        public void acknowledged(RouterListener listener, Instant ackTime) {
            listener.released();
        }
    }

    /**
     * A parking marker (an aggregate parked, a row's place, a release done). At least once, it is written only after
     * every record before it is acknowledged: a marker in the topic means what came before it is published.
     */
    record Marker(ProducerRecord<byte[], byte[]> record) implements Outcome {
        @Override
        public void acknowledged(RouterListener listener, Instant ackTime) {
        }
    }
}
