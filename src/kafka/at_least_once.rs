//! At-least-once delivery. Every record's outputs are enqueued on an
//! idempotent `acks=all` producer; a task awaits their delivery reports and
//! sends an [`Ack`] back to the consumer thread, which marks the offset done
//! in an [`OffsetTracker`] and stores the highest contiguous done offset per
//! partition; librdkafka's auto-commit commits only stored offsets, and
//! revocation/shutdown commit synchronously. A publish failure is retried a
//! bounded number of times when retriable; otherwise the worker stops with
//! the offset uncommitted, so a restart re-processes the record.
//!
//! Sealing (`super::seals`): a partition's audit rows are cut into a seal
//! every `audit.seal_every` rows, when the oldest unsealed row is
//! `audit.seal_interval_ms` old, and on revocation and shutdown. A cut seal
//! waits in the [`Book`] until every row it lists is acknowledged (rows are
//! keyed by request id and land on other audit partitions than the seal,
//! so nothing else orders them before it); the ack that finishes its last
//! row sends it. Offsets are then stored only up to the last row of an
//! acknowledged seal, with the chain head after that seal as the offset's
//! metadata, and committed at once (so a crash between a seal and its
//! commit, which makes the next owner seal the same rows again, stays
//! unlikely).
//!
//! Must not store an offset before every output of it and of every earlier
//! record of its partition is acknowledged, nor (sealing) before its audit
//! row is covered by an acknowledged seal; must not send a seal before
//! every row it lists is acknowledged (a crash could leave the seal on the
//! topic and a row it lists unwritten: a false `row_missing`).

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
use super::error::{PublishFailure, WorkerError};
use super::events::{
    InternalEvent, Lifecycle, OffsetCommitFailed, OutputPublished, PublishFailed, PublishThen,
    RecordDelivered, SealsFailed, SealsPublished,
};
use super::offsets::{OffsetTracker, TopicPartition};
use super::outputs::Output;
use super::seals::{Chains, Seal};
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
    /// Every output of the record at `offset`.
    Record,
    /// A seal whose last row is at `offset` (published on its own, once
    /// every row it lists was acknowledged).
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

/// Where a seal is between being cut and moving the offset.
#[derive(Debug)]
enum SealState {
    /// Cut, not sent: a row it lists is not acknowledged yet. Rows are
    /// keyed by request id and land on other audit partitions than the
    /// seal, so sending it now could publish it before a row it lists,
    /// which a crash could then leave unwritten (verify: `row_missing`).
    Waiting(Output),
    Sent,
    Acked,
}

/// A seal of one partition, not yet allowed to move the offset.
#[derive(Debug)]
struct Mark {
    last: i64,
    head: ChainHead,
    state: SealState,
}

/// The pure bookkeeping: which offsets are in flight, which seals may be
/// sent and which offsets may be stored. Without sealing, the highest
/// contiguous finished offset is stored; with sealing, a seal is released
/// (to be sent) only once every row it lists is finished, and only the last
/// row of an acknowledged seal is stored.
#[derive(Default)]
pub struct Book {
    tracker: OffsetTracker,
    sealing: bool,
    /// Sealing: highest contiguous finished offset per partition.
    done: HashMap<TopicPartition, i64>,
    /// Sealing: seals per partition in chain order (the sent ones first).
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

    /// A seal of `tp` was cut: it waits for its rows ([`Book::release`]).
    /// Holds the seal's bytes (at most `seal_every` rows) until then.
    pub fn cut(&mut self, tp: &TopicPartition, seal: Seal) {
        self.marks.entry(tp.clone()).or_default().push_back(Mark {
            last: seal.last_offset,
            head: seal.head,
            state: SealState::Waiting(seal.output),
        });
    }

    /// The next seal of `tp` to send, if every row it lists (every offset
    /// up to its last) is finished; it is then in flight until its
    /// [`Acked::Seal`]. Call until `None`: seals come out in chain order.
    pub fn release(&mut self, tp: &TopicPartition) -> Option<Seal> {
        let done = *self.done.get(tp)?;
        let m = self
            .marks
            .get_mut(tp)?
            .iter_mut()
            .find(|m| matches!(m.state, SealState::Waiting(_)))?;
        if m.last > done {
            return None;
        }
        let SealState::Waiting(output) = std::mem::replace(&mut m.state, SealState::Sent) else {
            return None;
        };
        Some(Seal {
            output,
            last_offset: m.last,
            head: m.head,
        })
    }

    /// Applies one ack: `Ok(Some(store))` when an offset may now be stored;
    /// `Err` for a failed publish (its offset and the seals listing it stay
    /// where they are).
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
            Acked::Seal => match self.marks.get_mut(&tp).and_then(|m| {
                m.iter_mut()
                    .find(|m| m.last == ack.offset && matches!(m.state, SealState::Sent))
            }) {
                Some(m) => m.state = SealState::Acked,
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
        while marks
            .front()
            .is_some_and(|m| matches!(m.state, SealState::Acked) && m.last <= done)
        {
            last = marks.pop_front();
        }
        last.map(|m| Store {
            tp,
            done: m.last,
            head: Some(m.head),
        })
    }

    /// Records, and seals waiting or sent, not yet acknowledged.
    pub fn in_flight(&self) -> usize {
        self.tracker.in_flight() + self.marks.values().map(unacked).sum::<usize>()
    }

    pub fn in_flight_for(&self, tps: &[TopicPartition]) -> usize {
        tps.iter()
            .map(|tp| self.tracker.in_flight_for(tp) + self.marks.get(tp).map_or(0, unacked))
            .sum()
    }

    /// Revoked partitions: acks still coming for them are ignored, and
    /// their waiting seals are dropped (the next owner seals those rows).
    pub fn forget(&mut self, tps: &[TopicPartition]) {
        for tp in tps {
            self.tracker.forget(tp);
            self.done.remove(tp);
            self.marks.remove(tp);
        }
    }
}

fn unacked(marks: &VecDeque<Mark>) -> usize {
    marks
        .iter()
        .filter(|m| !matches!(m.state, SealState::Acked))
        .count()
}

pub struct AtLeastOnce {
    producer: FutureProducer,
    metrics: Arc<Metrics>,
    runtime: tokio::runtime::Handle,
    book: Book,
    acks: Receiver<Ack>,
    /// Dropped once finished: nothing is published after that.
    ack_tx: Option<Sender<Ack>>,
    /// Delivery tasks spawned and not yet reported back (each sends one
    /// [`Ack`]): a drain with none left can learn nothing more.
    tasks: usize,
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
            tasks: 0,
            max_in_flight,
            drain_deadline,
            chains,
        }
    }

    fn apply(&mut self, consumer: &Consumer, ack: Ack) -> Result<(), WorkerError> {
        self.tasks = self.tasks.saturating_sub(1);
        let tp = ack.tp.clone();
        let delivered = (ack.what == Acked::Record).then_some(RecordDelivered {
            input_ts_ms: ack.input_ts_ms,
            now_ms: now_millis(),
        });
        let ok = ack.result.is_ok();
        let store = self.book.acked(ack)?;
        if ok && let Some(d) = delivered {
            d.emit(&self.metrics);
        }
        if let Some(store) = store {
            self.store(consumer, store);
        }
        // The rows this ack finished may complete a waiting seal.
        self.release(&tp)
    }

    fn store(&self, consumer: &Consumer, store: Store) {
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
    }

    /// Cuts the pending rows of `tps` into seals, sent as soon as their
    /// rows are acknowledged.
    fn seal_now(&mut self, tps: &[TopicPartition]) -> Result<(), WorkerError> {
        for tp in tps {
            let Some(seal) = self
                .chains
                .as_mut()
                .and_then(|c| c.seal(tp, crate::clock::now_nanos()))
            else {
                continue;
            };
            self.book.cut(tp, seal);
            self.release(tp)?;
        }
        Ok(())
    }

    /// Sends the seals of `tp` whose rows are all acknowledged, in order.
    fn release(&mut self, tp: &TopicPartition) -> Result<(), WorkerError> {
        while let Some(seal) = self.book.release(tp) {
            let Seal {
                output,
                last_offset,
                ..
            } = seal;
            let future = match enqueue(&self.producer, &output) {
                Ok(f) => f,
                Err(e) => return Err(self.seal_failed(&output, tp, last_offset, e)),
            };
            self.spawn(
                Settle {
                    producer: self.producer.clone(),
                    metrics: self.metrics.clone(),
                    acks: self.sender()?,
                    tp: tp.clone(),
                    offset: last_offset,
                    input_ts_ms: None,
                    what: Acked::Seal,
                    oversize: None,
                },
                vec![(output, future)],
            );
        }
        Ok(())
    }

    fn sender(&self) -> Result<Sender<Ack>, WorkerError> {
        self.ack_tx
            .clone()
            .ok_or_else(|| WorkerError::Thread("publish after finish".into()))
    }

    fn spawn(&mut self, s: Settle, outputs: Vec<(Output, DeliveryFuture)>) {
        self.tasks += 1;
        self.runtime.spawn(settle(s, outputs));
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

    /// The one drain loop: applies acks until `done`, `deadline`, or no
    /// delivery is left to report (what is still in flight then is stuck
    /// behind a failure), keeping the first failure and going on (the
    /// others' offsets and seals still count).
    fn drain(
        &mut self,
        consumer: &Consumer,
        deadline: Instant,
        done: impl Fn(&Book) -> bool,
    ) -> Result<(), WorkerError> {
        let mut first_err = None;
        while !done(&self.book) && self.tasks > 0 {
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
        let acks = self.sender()?;
        self.book.sent(&record.tp, record.offset);
        let due = chain_row(&mut self.chains, consumer, &self.metrics, &record, hash)?;
        if let Some(seal) = due {
            // Due by count: sent once this record (its last row) and every
            // earlier one are acknowledged.
            self.book.cut(&record.tp, seal);
        }
        self.spawn(
            Settle {
                producer: self.producer.clone(),
                metrics: self.metrics.clone(),
                acks,
                tp: record.tp,
                offset: record.offset,
                input_ts_ms: record.input_ts_ms,
                what: Acked::Record,
                oversize: Some(record.oversize),
            },
            futures,
        );
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
            // whose every committed row is sealed: the drain waits for the
            // rows, then the seals they release, then their acks.
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
        // The drain still sends the seals its acks release (also after a
        // failure: a seal goes out only when every row it lists is
        // acknowledged, so what it covers is safe to commit).
        let result = sealed.and(self.drain(consumer, deadline, |b| b.in_flight() == 0));
        self.ack_tx = None;
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

    /// A seal of `tp`'s rows up to `last`, with the head after it.
    fn seal(tp: &TopicPartition, last: i64, seq: u64) -> Seal {
        Seal {
            output: crate::kafka::outputs::seal_output(
                &tp.0,
                tp.1,
                seq - 1,
                format!("seal {seq}").into_bytes(),
                &crate::config::Topics::default(),
            ),
            last_offset: last,
            head: head(seq),
        }
    }

    fn released(b: &mut Book, tp: &TopicPartition) -> Vec<i64> {
        std::iter::from_fn(|| b.release(tp))
            .map(|s| s.last_offset)
            .collect()
    }

    #[test]
    fn a_seal_is_released_only_once_every_row_it_lists_is_acknowledged() {
        let p0 = ("answers".to_string(), 0);
        let p1 = ("answers".to_string(), 1);
        let mut b = Book::new(true);
        for o in 0..6 {
            b.sent(&p0, o);
        }
        b.sent(&p1, 0);
        // Rows 0..=2 due by count at record 2, then 3..=4 by the interval.
        b.cut(&p0, seal(&p0, 2, 1));
        b.cut(&p0, seal(&p0, 4, 2));
        b.cut(&p1, seal(&p1, 0, 1));
        assert!(released(&mut b, &p0).is_empty(), "no row acknowledged");
        assert_eq!(b.in_flight(), 7 + 3, "records and waiting seals");
        assert_eq!(b.acked(ack(&p0, 2, true)).unwrap(), None);
        assert_eq!(b.acked(ack(&p0, 1, true)).unwrap(), None);
        assert!(released(&mut b, &p0).is_empty(), "row 0 unacknowledged");
        assert_eq!(b.acked(ack(&p0, 4, true)).unwrap(), None);
        assert_eq!(b.acked(ack(&p0, 0, true)).unwrap(), None, "not sent");
        assert_eq!(released(&mut b, &p0), [2], "rows 0..=2 acknowledged");
        assert!(released(&mut b, &p0).is_empty(), "sent once");
        assert!(released(&mut b, &p1).is_empty(), "partitions apart");
        assert_eq!(b.acked(ack(&p0, 3, true)).unwrap(), None, "seal unacked");
        assert_eq!(released(&mut b, &p0), [4], "the next, in chain order");
        assert_eq!(b.acked(ack(&p0, 5, true)).unwrap(), None);
        assert!(released(&mut b, &p0).is_empty(), "5 is not sealed");
        // Seals acknowledged out of order still move the offset in order.
        assert_eq!(b.acked(seal_ack(&p0, 4)).unwrap(), None, "2 unacked");
        assert_eq!(
            b.acked(seal_ack(&p0, 2)).unwrap(),
            Some(store(&p0, 4, Some(head(2)))),
            "5 is finished but unsealed: not stored"
        );
        assert_eq!(b.in_flight(), 1 + 1, "p1's record and seal");
        assert_eq!(b.in_flight_for(std::slice::from_ref(&p0)), 0);
        assert_eq!(b.acked(ack(&p1, 0, true)).unwrap(), None);
        assert_eq!(released(&mut b, &p1), [0]);
        assert_eq!(
            b.acked(seal_ack(&p1, 0)).unwrap(),
            Some(store(&p1, 0, Some(head(1))))
        );
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn a_seal_listing_a_failed_row_is_never_released() {
        let p0 = ("answers".to_string(), 0);
        let mut b = Book::new(true);
        for o in 7..10 {
            b.sent(&p0, o);
        }
        b.cut(&p0, seal(&p0, 7, 1));
        b.cut(&p0, seal(&p0, 9, 2));
        assert_eq!(b.acked(ack(&p0, 7, true)).unwrap(), None);
        assert_eq!(released(&mut b, &p0), [7]);
        assert_eq!(
            b.acked(seal_ack(&p0, 7)).unwrap(),
            Some(store(&p0, 7, Some(head(1))))
        );
        assert!(b.acked(ack(&p0, 8, false)).is_err(), "row 8 failed");
        assert_eq!(b.acked(ack(&p0, 9, true)).unwrap(), None);
        assert!(released(&mut b, &p0).is_empty(), "the seal lists row 8");
        assert_eq!(b.in_flight(), 3, "records 8, 9 (behind 8) and the seal");
        // A failed seal stores nothing either.
        let p1 = ("answers".to_string(), 1);
        b.sent(&p1, 0);
        b.cut(&p1, seal(&p1, 0, 1));
        assert_eq!(b.acked(ack(&p1, 0, true)).unwrap(), None);
        assert_eq!(released(&mut b, &p1), [0]);
        let failed = Ack {
            result: Err(WorkerError::Thread("boom".into())),
            ..seal_ack(&p1, 0)
        };
        assert!(b.acked(failed).is_err());
        assert_eq!(b.in_flight_for(std::slice::from_ref(&p1)), 1);
        // Revoked: the waiting seal is dropped, late acks ignored.
        b.forget(&[p0.clone(), p1.clone()]);
        assert_eq!(b.acked(ack(&p0, 8, true)).unwrap(), None, "revoked");
        assert!(released(&mut b, &p0).is_empty());
        assert_eq!(b.acked(seal_ack(&p1, 0)).unwrap(), None, "revoked");
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
