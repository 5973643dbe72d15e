/*
 * Copyright Debezium Authors.
 *
 * Licensed under the Apache Software License version 2.0, available at http://www.apache.org/licenses/LICENSE-2.0
 *
 * outbox-router: Debezium 3.5.0.Final's io.debezium.embedded.async.ParallelSmtAndConvertBatchProcessor with one change:
 * records are transformed and converted on the polling thread instead of being handed one by one to the engine's
 * record-processing executor and awaited in order. The router runs no transformations, and converting a record to
 * the Connect format only wraps it: the hand-off to another thread and back per record (three per single-row
 * transaction, with the transaction markers) was about 7% of the router's sampled CPU at 5,000 events/s, for no work.
 * Same records, same order, same handler call. This class replaces Debezium's in the runnable jar (the shade plugin
 * drops the original) and ahead of it on the test class path; InlineRecordProcessorTest and RunnableJarIT check that
 * this copy is the one loaded. Re-check it against the upstream class on every Debezium upgrade.
 */
package io.debezium.embedded.async;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import org.apache.kafka.connect.source.SourceRecord;

import io.debezium.engine.DebeziumEngine;

/**
 * {@link RecordProcessor} which transforms and converts the records of a batch on the calling thread, in order, and
 * then passes the whole batch to the user-provided handler.
 */
public class ParallelSmtAndConvertBatchProcessor<R> extends AbstractRecordProcessor<R> {
    /** Read by the tests: this is the router's copy. */
    public static final boolean INLINE = true;

    final DebeziumEngine.RecordCommitter committer;
    final DebeziumEngine.ChangeConsumer<R> userHandler;
    final Function<SourceRecord, R> convertor;

    ParallelSmtAndConvertBatchProcessor(final DebeziumEngine.RecordCommitter committer, final DebeziumEngine.ChangeConsumer<R> userHandler,
                                        final Function<SourceRecord, R> convertor) {
        this.committer = committer;
        this.userHandler = userHandler;
        this.convertor = convertor;
    }

    @Override
    public void processRecords(final List<SourceRecord> records) throws Exception {
        final List<R> convertedRecords = new ArrayList<>(records.size());
        for (SourceRecord r : records) {
            R record = new ProcessingCallables.TransformAndConvertRecord<R>(r, transformations, convertor).call();
            if (record != null) {
                convertedRecords.add(record);
            }
        }
        userHandler.handleBatch(convertedRecords, committer);
    }
}
