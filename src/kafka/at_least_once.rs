//! At-least-once delivery. Every record's outputs are enqueued on an
//! idempotent `acks=all` producer; a task awaits their delivery reports and
//! sends an [`Ack`] back to the consumer thread, which marks the offset done
//! in an [`OffsetTracker`] and stores the highest contiguous done offset per
//! partition; librdkafka's auto-commit commits only stored offsets, and
//! revocation/shutdown commit synchronously. A publish failure is retried a
//! bounded number of times when retriable; otherwise the worker stops with
//! the offset uncommitted, so a restart re-processes the record.
//!
//! Must not store an offset before every output of it and of every earlier
//! record of its partition is acknowledged.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use rdkafka::consumer::{CommitMode, Consumer as _};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::DeliveryFuture;
use rdkafka::util::Timeout;
use tracing::debug;

use super::client::FutureProducer;
use super::delivery::{
    Consumer, Delivery, Flow, Oversize, Pending, enqueue_or_replace, is_too_large, now_millis,
};
use super::error::classify;
use super::events::{
    InternalEvent, Lifecycle, OffsetCommitFailed, OutputPublished, PublishFailed, PublishThen,
    RecordDelivered,
};
use super::offsets::{OffsetTracker, TopicPartition};
use super::outputs::Output;
use super::worker::{PublishFailure, WorkerError};
use crate::metrics::Metrics;

/// Re-sends of one output after a retriable delivery failure, on top of
/// librdkafka's own retries, before the worker gives up and stops.
const MAX_RESENDS: u32 = 5;
/// How long the loop waits for an ack when it may not fetch more.
const BACKPRESSURE_WAIT: Duration = Duration::from_millis(100);

/// A record's delivery outcome, sent from the async side to the consumer thread.
pub struct Ack {
    pub tp: TopicPartition,
    pub offset: i64,
    pub input_ts_ms: Option<i64>,
    pub result: Result<(), WorkerError>,
}

/// The pure bookkeeping: which offsets are in flight and which may be stored.
#[derive(Default)]
pub struct Book {
    tracker: OffsetTracker,
}

impl Book {
    pub fn sent(&mut self, tp: &TopicPartition, offset: i64) {
        self.tracker.start(tp, offset);
    }

    /// Applies one ack: `Ok(Some((tp, o)))` when offset `o` (and everything
    /// before it) is now done and may be stored; `Err` for a failed publish.
    pub fn acked(&mut self, ack: Ack) -> Result<Option<(TopicPartition, i64)>, WorkerError> {
        ack.result?;
        Ok(self
            .tracker
            .complete(&ack.tp, ack.offset)
            .map(|done| (ack.tp, done)))
    }

    pub fn in_flight(&self) -> usize {
        self.tracker.in_flight()
    }

    pub fn in_flight_for(&self, tps: &[TopicPartition]) -> usize {
        tps.iter().map(|tp| self.tracker.in_flight_for(tp)).sum()
    }

    /// Revoked partitions: acks still coming for them are ignored.
    pub fn forget(&mut self, tps: &[TopicPartition]) {
        for tp in tps {
            self.tracker.forget(tp);
        }
    }
}

pub struct AtLeastOnce {
    producer: FutureProducer,
    metrics: Arc<Metrics>,
    runtime: tokio::runtime::Handle,
    book: Book,
    acks: Receiver<Ack>,
    /// Dropped at finish, so a drain ends when every task has reported.
    ack_tx: Option<Sender<Ack>>,
    max_in_flight: usize,
    drain_deadline: Duration,
}

impl AtLeastOnce {
    pub fn new(
        producer: FutureProducer,
        metrics: Arc<Metrics>,
        runtime: tokio::runtime::Handle,
        max_in_flight: usize,
        drain_deadline: Duration,
    ) -> AtLeastOnce {
        let (tx, acks) = mpsc::channel();
        AtLeastOnce {
            producer,
            metrics,
            runtime,
            book: Book::default(),
            acks,
            ack_tx: Some(tx),
            max_in_flight,
            drain_deadline,
        }
    }

    fn apply(&mut self, consumer: &Consumer, ack: Ack) -> Result<(), WorkerError> {
        let delivered = RecordDelivered {
            input_ts_ms: ack.input_ts_ms,
            now_ms: now_millis(),
        };
        let ok = ack.result.is_ok();
        let store = self.book.acked(ack)?;
        if ok {
            delivered.emit(&self.metrics);
        }
        if let Some((tp, done)) = store {
            // `store_offset` stores done + 1: the next record to read.
            if let Err(e) = consumer.store_offset(&tp.0, tp.1, done) {
                debug!(error = %e, partition = tp.1, "offset store skipped (partition no longer assigned)");
            }
        }
        Ok(())
    }

    /// The one drain loop: applies acks until `done` or `deadline`, keeping
    /// the first failure and going on (the others' offsets still count).
    fn drain(
        &mut self,
        consumer: &Consumer,
        deadline: Instant,
        done: impl Fn(&Book) -> bool,
    ) -> Result<(), WorkerError> {
        let mut first_err = None;
        while !done(&self.book) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.acks.recv_timeout(left.min(Duration::from_millis(20))) {
                Ok(ack) => {
                    if let Err(e) = self.apply(consumer, ack) {
                        first_err.get_or_insert(e);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    fn commit_stored(&self, consumer: &Consumer) {
        match consumer.commit_consumer_state(CommitMode::Sync) {
            Ok(()) => {}
            // Nothing stored since the last commit.
            Err(e) if e.rdkafka_error_code() == Some(RDKafkaErrorCode::NoOffset) => {}
            Err(e) => OffsetCommitFailed { error: &e }.emit(&self.metrics),
        }
    }
}

impl Delivery for AtLeastOnce {
    fn room(&mut self, consumer: &Consumer, batch_max: usize) -> Result<usize, WorkerError> {
        while let Ok(ack) = self.acks.try_recv() {
            self.apply(consumer, ack)?;
        }
        if self.book.in_flight() >= self.max_in_flight {
            // Backpressure: wait for deliveries instead of fetching more.
            let max = self.max_in_flight;
            self.drain(consumer, Instant::now() + BACKPRESSURE_WAIT, |b| {
                b.in_flight() < max
            })?;
            return Ok(0);
        }
        Ok(batch_max.min(self.max_in_flight - self.book.in_flight()))
    }

    fn publish(
        &mut self,
        _consumer: &Consumer,
        mut record: Pending,
        _rest: &[(TopicPartition, i64)],
    ) -> Result<Flow, WorkerError> {
        let outputs = std::mem::take(&mut record.outputs);
        let mut futures = Vec::with_capacity(outputs.len());
        for out in outputs {
            match enqueue_or_replace(&self.producer, out, &record) {
                Ok(sent) => futures.push(sent),
                Err((out, e)) => {
                    let input = record.input();
                    PublishFailed {
                        error: &e,
                        topic: &out.topic,
                        input: &input,
                        then: PublishThen::Stop,
                    }
                    .emit(&self.metrics);
                    return Err(publish_failure(&out, input, e));
                }
            }
        }
        let Some(ack_tx) = self.ack_tx.clone() else {
            return Err(WorkerError::Thread("publish after finish".into()));
        };
        self.book.sent(&record.tp, record.offset);
        self.runtime.spawn(settle(
            self.producer.clone(),
            self.metrics.clone(),
            ack_tx,
            record.tp,
            record.offset,
            record.input_ts_ms,
            futures,
            record.oversize,
        ));
        Ok(Flow::Next)
    }

    fn on_revoke(
        &mut self,
        consumer: &Consumer,
        revoked: &[TopicPartition],
        lost: bool,
    ) -> Result<(), WorkerError> {
        let mut result = Ok(());
        if !lost {
            let deadline = Instant::now() + self.drain_deadline;
            result = self.drain(consumer, deadline, |b| b.in_flight_for(revoked) == 0);
            self.commit_stored(consumer);
        }
        self.book.forget(revoked);
        result
    }

    fn finish(
        &mut self,
        consumer: &Consumer,
        deadline: Instant,
        _failed: bool,
    ) -> Result<(), WorkerError> {
        self.ack_tx = None;
        let result = self.drain(consumer, deadline, |b| b.in_flight() == 0);
        let abandoned = self.book.in_flight();
        if abandoned > 0 {
            Lifecycle::DrainAbandoned { abandoned }.emit(&self.metrics);
        }
        self.commit_stored(consumer);
        result
    }
}

pub fn publish_failure(out: &Output, input: String, source: KafkaError) -> WorkerError {
    WorkerError::Publish(Box::new(PublishFailure {
        role: out.role.as_str(),
        topic: out.topic.clone(),
        input,
        class: classify(&source).as_str(),
        source,
    }))
}

/// Awaits the delivery of every output of one record (re-sending a bounded
/// number of times on retriable failures) and reports back.
// One record's delivery state, passed by value into its own task.
#[allow(clippy::too_many_arguments)]
async fn settle(
    producer: FutureProducer,
    metrics: Arc<Metrics>,
    acks: Sender<Ack>,
    tp: TopicPartition,
    offset: i64,
    input_ts_ms: Option<i64>,
    first: Vec<(Output, DeliveryFuture)>,
    oversize: Oversize,
) {
    let input = format!("{}/{}@{}", tp.0, tp.1, offset);
    let mut result = Ok(());
    'outputs: for (mut out, fut) in first {
        let mut outcome = match fut.await {
            Ok(r) => r.map(|_| ()).map_err(|(e, _)| e),
            Err(_) => Err(KafkaError::Canceled),
        };
        let mut resends = 0;
        let mut replaced = false;
        loop {
            let e = match outcome {
                Ok(()) => {
                    OutputPublished { role: out.role }.emit(&metrics);
                    continue 'outputs;
                }
                Err(e) => e,
            };
            let then = if is_too_large(&e) && !replaced {
                // Refused as too large: re-sending cannot help. Publish the
                // core's bounded stand-in once instead (never retried forever).
                PublishThen::ReplaceBounded
            } else if classify(&e).is_transient() && resends < MAX_RESENDS {
                PublishThen::Resend(resends + 1)
            } else {
                PublishThen::Stop
            };
            PublishFailed {
                error: &e,
                topic: &out.topic,
                input: &input,
                then,
            }
            .emit(&metrics);
            match then {
                PublishThen::ReplaceBounded => {
                    out = oversize.replacement(&out, &tp, offset);
                    replaced = true;
                }
                PublishThen::Resend(n) => {
                    resends = n;
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(resends))).await;
                }
                _ => {
                    result = Err(publish_failure(&out, input.clone(), e));
                    break 'outputs;
                }
            }
            outcome = producer
                .send(out.record(), Timeout::After(Duration::from_secs(30)))
                .await
                .map(|_| ())
                .map_err(|(e, _)| e);
        }
    }
    // The consumer thread is gone only after shutdown, when nobody waits for acks.
    let _ = acks.send(Ack {
        tp,
        offset,
        input_ts_ms,
        result,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(tp: &TopicPartition, offset: i64, ok: bool) -> Ack {
        Ack {
            tp: tp.clone(),
            offset,
            input_ts_ms: None,
            result: if ok {
                Ok(())
            } else {
                Err(WorkerError::Thread("boom".into()))
            },
        }
    }

    #[test]
    fn stores_only_after_every_earlier_record_is_acked() {
        let p0 = ("answers".to_string(), 0);
        let p1 = ("answers".to_string(), 1);
        let mut b = Book::default();
        for o in 5..8 {
            b.sent(&p0, o);
        }
        b.sent(&p1, 3);
        assert_eq!(
            b.acked(ack(&p0, 6, true)).unwrap(),
            None,
            "5 still in flight"
        );
        assert_eq!(b.acked(ack(&p1, 3, true)).unwrap(), Some((p1.clone(), 3)));
        assert_eq!(b.acked(ack(&p0, 5, true)).unwrap(), Some((p0.clone(), 6)));
        assert_eq!(b.in_flight(), 1);
        assert_eq!(b.in_flight_for(&[p0.clone(), p1.clone()]), 1);
    }

    #[test]
    fn a_failed_ack_stores_nothing_and_keeps_the_offset_in_flight() {
        let p0 = ("answers".to_string(), 0);
        let mut b = Book::default();
        b.sent(&p0, 0);
        b.sent(&p0, 1);
        assert!(b.acked(ack(&p0, 0, false)).is_err());
        assert_eq!(b.acked(ack(&p0, 1, true)).unwrap(), None, "0 never done");
        assert_eq!(b.in_flight(), 2);
    }

    #[test]
    fn acks_of_revoked_partitions_are_ignored() {
        let p0 = ("answers".to_string(), 0);
        let mut b = Book::default();
        b.sent(&p0, 0);
        b.forget(std::slice::from_ref(&p0));
        assert_eq!(b.acked(ack(&p0, 0, true)).unwrap(), None);
        assert_eq!(b.in_flight(), 0);
    }
}
