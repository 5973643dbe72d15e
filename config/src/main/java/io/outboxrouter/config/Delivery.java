package io.outboxrouter.config;

/** What a consumer of the router's topics can count on ({@code delivery}). */
public enum Delivery {
    /**
     * The default: an idempotent producer, a batch's position stored after its acknowledgements. A crash may send the
     * unstored tail again; consumers de-duplicate on the {@code id} header.
     */
    AT_LEAST_ONCE,
    /**
     * A transactional producer: each source transaction's records and the position after it are committed in one Kafka
     * transaction, the position to the offsets topic. A consumer reading {@code read_committed} sees each event once.
     */
    EXACTLY_ONCE
}
