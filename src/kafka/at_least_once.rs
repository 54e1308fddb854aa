//! At-least-once delivery. Every record's outputs are enqueued on an
//! idempotent `acks=all` producer; a task awaits their delivery reports and
//! sends an [`Ack`] back to the consumer thread, which marks the offset done
//! in an [`OffsetTracker`] and stores the highest contiguous done offset per
//! partition; librdkafka's auto-commit commits only stored offsets, and
//! revocation/shutdown commit synchronously. A publish failure is retried a
//! bounded number of times when retriable; otherwise the worker stops with
//! the offset uncommitted, so a restart re-processes the record.
//!
//! Sealing (`super::seals`): a partition's audit rows are sealed every
//! `audit.seal_every` rows (the seal is one more output of the record that
//! completes it), when the oldest unsealed row is `audit.seal_interval_ms`
//! old, and on revocation and shutdown (a seal of its own). Offsets are then
//! stored only up to the last row of an acknowledged seal, with the chain
//! head after that seal as the offset's metadata, and committed at once (so
//! a crash between a seal and its commit, which makes the next owner seal
//! the same rows again, stays unlikely).
//!
//! Must not store an offset before every output of it and of every earlier
//! record of its partition is acknowledged, nor (sealing) before its audit
//! row is covered by an acknowledged seal.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use rdkafka::TopicPartitionList;
use rdkafka::consumer::{CommitMode, Consumer as _};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::DeliveryFuture;
use rdkafka::util::Timeout;
use tracing::debug;

use super::client::FutureProducer;
use super::delivery::{
    Consumer, Delivery, Flow, Oversize, Pending, chain_row, enqueue, enqueue_or_replace,
    is_too_large, now_millis, position,
};
use super::error::classify;
use super::events::{
    InternalEvent, Lifecycle, OffsetCommitFailed, OutputPublished, PublishFailed, PublishThen,
    RecordDelivered, SealsFailed, SealsPublished,
};
use super::offsets::{OffsetTracker, TopicPartition};
use super::outputs::Output;
use super::seals::{Chains, Seal};
use super::worker::{PublishFailure, WorkerError};
use crate::audit::ChainHead;
use crate::metrics::Metrics;

/// Re-sends of one output after a retriable delivery failure, on top of
/// librdkafka's own retries, before the worker gives up and stops.
const MAX_RESENDS: u32 = 5;
/// How long the loop waits for an ack when it may not fetch more.
const BACKPRESSURE_WAIT: Duration = Duration::from_millis(100);

/// What an [`Ack`] acknowledges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acked {
    /// Every output of the record at `offset` (a seal among them included).
    Record,
    /// A seal published on its own (interval, revocation, shutdown) whose
    /// last row is at `offset`.
    Seal,
}

/// A delivery outcome, sent from the async side to the consumer thread.
pub struct Ack {
    pub tp: TopicPartition,
    pub offset: i64,
    pub input_ts_ms: Option<i64>,
    pub what: Acked,
    pub result: Result<(), WorkerError>,
}

/// An offset that may be stored: `done` and everything before it is
/// finished; `head`, when sealing, is the chain head after the seal that
/// covers `done` (the offset's metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    pub tp: TopicPartition,
    pub done: i64,
    pub head: Option<ChainHead>,
}

/// A seal sent and not yet allowed to move the offset.
#[derive(Debug)]
struct Mark {
    last: i64,
    head: ChainHead,
    acked: bool,
}

/// The pure bookkeeping: which offsets are in flight and which may be
/// stored. Without sealing, the highest contiguous finished offset; with
/// sealing, only the last row of a seal that is acknowledged and whose rows
/// are all finished.
#[derive(Default)]
pub struct Book {
    tracker: OffsetTracker,
    sealing: bool,
    /// Sealing: highest contiguous finished offset per partition.
    done: HashMap<TopicPartition, i64>,
    /// Sealing: seals per partition in the order sent.
    marks: HashMap<TopicPartition, VecDeque<Mark>>,
}

impl Book {
    pub fn new(sealing: bool) -> Book {
        Book {
            sealing,
            ..Book::default()
        }
    }

    pub fn sent(&mut self, tp: &TopicPartition, offset: i64) {
        self.tracker.start(tp, offset);
    }

    /// A seal covering `tp`'s rows up to `last` was sent: as an output of
    /// the record at `last` (`own_ack` false: acknowledged with that record)
    /// or on its own (acknowledged by an [`Acked::Seal`]).
    pub fn sealed(&mut self, tp: &TopicPartition, last: i64, head: ChainHead, own_ack: bool) {
        self.marks.entry(tp.clone()).or_default().push_back(Mark {
            last,
            head,
            acked: !own_ack,
        });
    }

    /// Applies one ack: `Ok(Some(store))` when an offset may now be stored;
    /// `Err` for a failed publish.
    pub fn acked(&mut self, ack: Ack) -> Result<Option<Store>, WorkerError> {
        ack.result?;
        let tp = ack.tp;
        match ack.what {
            Acked::Record => {
                let Some(done) = self.tracker.complete(&tp, ack.offset) else {
                    return Ok(None);
                };
                if !self.sealing {
                    return Ok(Some(Store {
                        tp,
                        done,
                        head: None,
                    }));
                }
                self.done.insert(tp.clone(), done);
            }
            Acked::Seal => match self
                .marks
                .get_mut(&tp)
                .and_then(|m| m.iter_mut().find(|m| m.last == ack.offset && !m.acked))
            {
                Some(m) => m.acked = true,
                // Acks of a revoked partition's seals.
                None => return Ok(None),
            },
        }
        Ok(self.covered(tp))
    }

    /// The last seal of `tp` whose rows are all finished and which is
    /// acknowledged, with every seal before it.
    fn covered(&mut self, tp: TopicPartition) -> Option<Store> {
        let done = *self.done.get(&tp)?;
        let marks = self.marks.get_mut(&tp)?;
        let mut last = None;
        while marks.front().is_some_and(|m| m.acked && m.last <= done) {
            last = marks.pop_front();
        }
        last.map(|m| Store {
            tp,
            done: m.last,
            head: Some(m.head),
        })
    }

    /// Records and seals of their own not yet acknowledged.
    pub fn in_flight(&self) -> usize {
        self.tracker.in_flight() + self.marks.values().flatten().filter(|m| !m.acked).count()
    }

    pub fn in_flight_for(&self, tps: &[TopicPartition]) -> usize {
        tps.iter()
            .map(|tp| {
                self.tracker.in_flight_for(tp)
                    + self
                        .marks
                        .get(tp)
                        .map_or(0, |m| m.iter().filter(|m| !m.acked).count())
            })
            .sum()
    }

    /// Revoked partitions: acks still coming for them are ignored.
    pub fn forget(&mut self, tps: &[TopicPartition]) {
        for tp in tps {
            self.tracker.forget(tp);
            self.done.remove(tp);
            self.marks.remove(tp);
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
    /// The partitions' audit chains; `None`: not sealing (bench modes).
    chains: Option<Chains>,
}

impl AtLeastOnce {
    pub fn new(
        producer: FutureProducer,
        metrics: Arc<Metrics>,
        runtime: tokio::runtime::Handle,
        max_in_flight: usize,
        drain_deadline: Duration,
        chains: Option<Chains>,
    ) -> AtLeastOnce {
        let (tx, acks) = mpsc::channel();
        AtLeastOnce {
            producer,
            metrics,
            runtime,
            book: Book::new(chains.is_some()),
            acks,
            ack_tx: Some(tx),
            max_in_flight,
            drain_deadline,
            chains,
        }
    }

    fn apply(&mut self, consumer: &Consumer, ack: Ack) -> Result<(), WorkerError> {
        let delivered = (ack.what == Acked::Record).then_some(RecordDelivered {
            input_ts_ms: ack.input_ts_ms,
            now_ms: now_millis(),
        });
        let ok = ack.result.is_ok();
        let store = self.book.acked(ack)?;
        if ok && let Some(d) = delivered {
            d.emit(&self.metrics);
        }
        let Some(store) = store else {
            return Ok(());
        };
        // Stored: done + 1, the next record to read, with the chain head.
        let mut tpl = TopicPartitionList::new();
        let stored = position(&mut tpl, &store.tp, store.done + 1, store.head)
            .and_then(|()| consumer.store_offsets(&tpl));
        if let Err(e) = stored {
            debug!(error = %e, partition = store.tp.1, "offset store skipped (partition no longer assigned)");
        } else if store.head.is_some() {
            // Commit a sealed position at once: a crash between a seal and
            // the commit of its offsets makes the next owner seal the same
            // rows again (under the same seq).
            if let Err(e) = consumer.commit_consumer_state(CommitMode::Async) {
                debug!(error = %e, "asynchronous commit after a seal not started");
            }
        }
        Ok(())
    }

    /// Publishes the pending rows of `tps` as seals of their own.
    fn seal_now(&mut self, tps: &[TopicPartition]) -> Result<(), WorkerError> {
        for tp in tps {
            let Some(seal) = self
                .chains
                .as_mut()
                .and_then(|c| c.seal(tp, crate::clock::now_nanos()))
            else {
                continue;
            };
            let Seal {
                output,
                last_offset,
                head,
            } = seal;
            let future = match enqueue(&self.producer, &output) {
                Ok(f) => f,
                Err(e) => return Err(self.seal_failed(&output, tp, last_offset, e)),
            };
            let Some(ack_tx) = self.ack_tx.clone() else {
                return Err(WorkerError::Thread("seal after finish".into()));
            };
            self.book.sealed(tp, last_offset, head, true);
            self.runtime.spawn(settle(
                Settle {
                    producer: self.producer.clone(),
                    metrics: self.metrics.clone(),
                    acks: ack_tx,
                    tp: tp.clone(),
                    offset: last_offset,
                    input_ts_ms: None,
                    what: Acked::Seal,
                    oversize: None,
                },
                vec![(output, future)],
            ));
        }
        Ok(())
    }

    fn seal_failed(
        &self,
        seal: &Output,
        tp: &TopicPartition,
        last: i64,
        e: KafkaError,
    ) -> WorkerError {
        let input = format!("{}/{}@{last}", tp.0, tp.1);
        PublishFailed {
            error: &e,
            topic: &seal.topic,
            input: &input,
            then: PublishThen::Stop,
        }
        .emit(&self.metrics);
        SealsFailed {
            seals: 1,
            chain: &format!("{}/{}", tp.0, tp.1),
        }
        .emit(&self.metrics);
        publish_failure(seal, input, e)
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
        if let Some(due) = self.chains.as_ref().map(|c| c.due(Instant::now()))
            && !due.is_empty()
        {
            self.seal_now(&due)?;
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
        consumer: &Consumer,
        mut record: Pending,
        _rest: &[(TopicPartition, i64)],
    ) -> Result<Flow, WorkerError> {
        let outputs = std::mem::take(&mut record.outputs);
        let mut futures = Vec::with_capacity(outputs.len() + 1);
        let mut hash = None;
        for out in outputs {
            match enqueue_or_replace(&self.producer, out, &record) {
                Ok((out, future, audit_hash)) => {
                    hash = hash.or(audit_hash);
                    futures.push((out, future));
                }
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
        let due = chain_row(&mut self.chains, consumer, &self.metrics, &record, hash)?;
        if let Some(seal) = due {
            // Due by count: one more output of this record, so the record
            // is done only once its seal is acknowledged too.
            match enqueue(&self.producer, &seal.output) {
                Ok(f) => futures.push((seal.output, f)),
                Err(e) => {
                    return Err(self.seal_failed(&seal.output, &record.tp, record.offset, e));
                }
            }
            self.book
                .sealed(&record.tp, seal.last_offset, seal.head, false);
        }
        self.runtime.spawn(settle(
            Settle {
                producer: self.producer.clone(),
                metrics: self.metrics.clone(),
                acks: ack_tx,
                tp: record.tp,
                offset: record.offset,
                input_ts_ms: record.input_ts_ms,
                what: Acked::Record,
                oversize: Some(record.oversize),
            },
            futures,
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
            // Seal what is pending, so the next owner continues a chain
            // whose every committed row is sealed.
            result = self.seal_now(revoked);
            let deadline = Instant::now() + self.drain_deadline;
            let drained = self.drain(consumer, deadline, |b| b.in_flight_for(revoked) == 0);
            result = result.and(drained);
            self.commit_stored(consumer);
        }
        self.book.forget(revoked);
        if let Some(c) = self.chains.as_mut() {
            c.forget(revoked);
        }
        result
    }

    fn finish(
        &mut self,
        consumer: &Consumer,
        deadline: Instant,
        failed: bool,
    ) -> Result<(), WorkerError> {
        let mut sealed = Ok(());
        if !failed && let Some(tps) = self.chains.as_ref().map(Chains::unsealed) {
            sealed = self.seal_now(&tps);
        }
        self.ack_tx = None;
        let result = sealed.and(self.drain(consumer, deadline, |b| b.in_flight() == 0));
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

/// One delivery's state, moved into its own task.
struct Settle {
    producer: FutureProducer,
    metrics: Arc<Metrics>,
    acks: Sender<Ack>,
    tp: TopicPartition,
    offset: i64,
    input_ts_ms: Option<i64>,
    what: Acked,
    /// How to replace an output refused as too large (`None`: a seal, never
    /// replaced).
    oversize: Option<Oversize>,
}

/// Awaits the delivery of every output of one record, or of one seal
/// (re-sending a bounded number of times on retriable failures), and
/// reports back.
async fn settle(s: Settle, first: Vec<(Output, DeliveryFuture)>) {
    let Settle {
        producer,
        metrics,
        acks,
        tp,
        offset,
        input_ts_ms,
        what,
        oversize,
    } = s;
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
                Ok(()) if out.is_seal() => {
                    SealsPublished {
                        seals: 1,
                        now_ms: now_millis(),
                    }
                    .emit(&metrics);
                    continue 'outputs;
                }
                Ok(()) => {
                    OutputPublished { role: out.role }.emit(&metrics);
                    continue 'outputs;
                }
                Err(e) => e,
            };
            let replacement = oversize.as_ref().filter(|_| !out.is_seal());
            let then = if is_too_large(&e) && !replaced && replacement.is_some() {
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
            match (then, replacement) {
                (PublishThen::ReplaceBounded, Some(oversize)) => {
                    out = oversize.replacement(&out, &tp, offset);
                    replaced = true;
                }
                (PublishThen::Resend(n), _) => {
                    resends = n;
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(resends))).await;
                }
                _ => {
                    if out.is_seal() {
                        SealsFailed {
                            seals: 1,
                            chain: &format!("{}/{}", tp.0, tp.1),
                        }
                        .emit(&metrics);
                    }
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
        what,
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
            what: Acked::Record,
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
        assert_eq!(
            b.acked(ack(&p1, 3, true)).unwrap(),
            Some(store(&p1, 3, None))
        );
        assert_eq!(
            b.acked(ack(&p0, 5, true)).unwrap(),
            Some(store(&p0, 6, None))
        );
        assert_eq!(b.in_flight(), 1);
        assert_eq!(b.in_flight_for(&[p0.clone(), p1.clone()]), 1);
    }

    fn store(tp: &TopicPartition, done: i64, head: Option<ChainHead>) -> Store {
        Store {
            tp: tp.clone(),
            done,
            head,
        }
    }

    fn head(seq: u64) -> ChainHead {
        ChainHead {
            next_seq: seq,
            prev: [seq as u8; 32],
        }
    }

    fn seal_ack(tp: &TopicPartition, last: i64) -> Ack {
        Ack {
            what: Acked::Seal,
            ..ack(tp, last, true)
        }
    }

    #[test]
    fn sealing_stores_only_up_to_the_last_acknowledged_seal_with_its_head() {
        let p0 = ("answers".to_string(), 0);
        let mut b = Book::new(true);
        for o in 0..6 {
            b.sent(&p0, o);
        }
        // Rows 0..=2 sealed by an output of record 2.
        b.sealed(&p0, 2, head(1), false);
        assert_eq!(b.acked(ack(&p0, 0, true)).unwrap(), None, "no seal yet");
        assert_eq!(b.acked(ack(&p0, 1, true)).unwrap(), None);
        assert_eq!(b.acked(ack(&p0, 3, true)).unwrap(), None, "2 in flight");
        assert_eq!(
            b.acked(ack(&p0, 2, true)).unwrap(),
            Some(store(&p0, 2, Some(head(1)))),
            "finished up to 3, but sealed only up to 2"
        );
        // Rows 3..=4 sealed on their own (the interval); 5 not sealed.
        b.sealed(&p0, 4, head(2), true);
        assert_eq!(b.in_flight(), 3, "records 4, 5 and the seal");
        assert_eq!(b.acked(ack(&p0, 4, true)).unwrap(), None, "seal unacked");
        assert_eq!(b.acked(ack(&p0, 5, true)).unwrap(), None);
        assert_eq!(
            b.acked(seal_ack(&p0, 4)).unwrap(),
            Some(store(&p0, 4, Some(head(2)))),
            "5 is finished but unsealed: not stored"
        );
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn a_seal_acknowledged_before_its_rows_waits_for_them() {
        let p0 = ("answers".to_string(), 0);
        let mut b = Book::new(true);
        b.sent(&p0, 7);
        b.sent(&p0, 8);
        b.sealed(&p0, 8, head(4), true);
        assert_eq!(b.in_flight_for(std::slice::from_ref(&p0)), 3);
        assert_eq!(b.acked(seal_ack(&p0, 8)).unwrap(), None);
        assert_eq!(b.acked(ack(&p0, 8, true)).unwrap(), None, "7 in flight");
        assert_eq!(
            b.acked(ack(&p0, 7, true)).unwrap(),
            Some(store(&p0, 8, Some(head(4))))
        );
        // A failed seal stops the worker; its rows are never stored.
        b.sent(&p0, 9);
        b.sealed(&p0, 9, head(5), true);
        assert_eq!(b.acked(ack(&p0, 9, true)).unwrap(), None);
        let failed = Ack {
            result: Err(WorkerError::Thread("boom".into())),
            ..seal_ack(&p0, 9)
        };
        assert!(b.acked(failed).is_err());
        assert_eq!(b.in_flight(), 1, "the seal stays unacknowledged");
        b.forget(std::slice::from_ref(&p0));
        assert_eq!(b.acked(seal_ack(&p0, 9)).unwrap(), None, "revoked");
        assert_eq!(b.in_flight(), 0);
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
