//! At-least-once delivery. A record's terminal record is enqueued on an
//! idempotent `acks=all` producer; a task awaits its delivery report, then
//! sends the audit row (so that the row can say what the record became,
//! should the terminal record be replaced by its too-large stand-in; after
//! the rows of the partition's earlier records, so the rows keep their
//! offset order), awaits that, and sends an [`Ack`] back to the consumer thread, which marks the
//! offset done in the ledger (`super::ack_ledger`) and stores the highest
//! contiguous done offset per partition; librdkafka's auto-commit commits
//! only stored offsets, and revocation/shutdown commit synchronously. A
//! publish failure is retried a bounded number of times when retriable;
//! otherwise the worker stops with the offset uncommitted, so a restart
//! re-processes the record.
//!
//! Sealing (`super::seals`): the ack carries the SHA-256 of the audit row
//! as delivered (a stand-in's when the row was replaced) and where the
//! audit topic holds it, and the rows go on their partition's chain only
//! when acknowledged, in offset order. A row sent again after a failed
//! produce, or replaced by its stand-in, lands after rows of later records
//! already sent; a seal lists the rows of each audit partition in the order
//! that partition holds them, the order `audit verify` checks. A
//! partition's rows are cut into a seal every `audit.seal_every` rows, when
//! the oldest unsealed row is `audit.seal_interval_ms` old, and on
//! revocation and shutdown. A seal therefore lists only acknowledged rows
//! (rows are keyed by request id and land on other audit partitions than
//! the seal, so nothing else orders them before it); the ledger
//! (`super::ack_ledger`) holds it until it is sent. Offsets are then stored
//! only up to the last row of an acknowledged seal, with the chain head
//! after that seal as the offset's metadata, and committed at once (so a
//! crash between a seal and its commit, which makes the next owner seal the
//! same rows again, stays unlikely).
//!
//! Must not store an offset before every output of it and of every earlier
//! record of its partition is acknowledged, nor (sealing) before its audit
//! row is covered by an acknowledged seal; must not seal a row before it is
//! acknowledged (a crash could leave the seal on the topic and a row it
//! lists unwritten: a false `row_missing`), nor seal other bytes than the
//! ones delivered (a false `row_altered`), nor list an audit partition's
//! rows in another order than the partition holds them (a false
//! `row_out_of_order`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use rdkafka::TopicPartitionList;
use rdkafka::consumer::{CommitMode, Consumer as _};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::DeliveryFuture;
use rdkafka::util::Timeout;
use tokio::sync::oneshot;
use tracing::debug;

use super::ack_ledger::{Ack, AckLedger, Acked, DeliveredRow, Store};
use super::client::FutureProducer;
use super::delivery::{
    Consumer, Delivery, Flow, Pending, QueueWait, Room, TooLargeReplacer, chain_row,
    delivered_row_hash, enqueue, enqueue_or_replace, gave_up_waiting, is_too_large, now_millis,
    position,
};
use super::error::classify;
use super::error::{PublishFailure, WorkerError};
use super::events::{
    AnswersWritten, InternalEvent, OffsetCommitFailed, OutputPublished, PublishFailed, PublishThen,
    RecordDelivered, SealsFailed, SealsPublished,
};
use super::offsets::TopicPartition;
use super::outputs::Output;
use super::seals::{Chains, Seal};
use super::worker_report::Unfinished;
use crate::audit::Written;
use crate::metrics::{Metrics, Verdict};
use tokio_util::sync::CancellationToken;

/// Re-sends of one output after a retriable delivery failure, on top of
/// librdkafka's own retries, before the worker gives up and stops.
const MAX_RESENDS: u32 = 5;
/// How long the loop waits for an ack when it may not fetch more.
const BACKPRESSURE_WAIT: Duration = Duration::from_millis(100);
/// How long a send from a delivery task waits for room in the producer queue.
const SEND_WAIT: Duration = Duration::from_secs(30);

pub struct AtLeastOnce {
    producer: FutureProducer,
    metrics: Arc<Metrics>,
    runtime: tokio::runtime::Handle,
    ledger: AckLedger,
    acks: Receiver<Ack>,
    /// Dropped once finished: nothing is published after that.
    ack_tx: Option<Sender<Ack>>,
    /// Delivery tasks spawned and not yet reported back (each sends one
    /// [`Ack`]): a drain with none left can learn nothing more.
    tasks: usize,
    /// Records and their input bytes in flight at most.
    max_in_flight: Room,
    /// Input bytes of the records whose delivery tasks have not reported
    /// back.
    in_flight_bytes: usize,
    drain_deadline: Duration,
    /// The partitions' audit chains; `None`: not sealing (bench modes).
    chains: Option<Chains>,
    /// Per input partition: closed once its last published record's audit
    /// rows are enqueued. Each record's delivery task waits for it before
    /// enqueuing its own rows, so that rows of one partition reach each
    /// audit partition in offset order, as they go on their chain; only a
    /// row sent again or replaced lands later, and its seal lists it where
    /// it landed.
    row_turns: HashMap<TopicPartition, oneshot::Receiver<()>>,
    /// `finish` has run: the revocation that closing the consumer serves
    /// afterwards has nothing left to settle (and must not cut a seal that
    /// could not be sent).
    finished: bool,
    /// The worker's stop: a wait for room in the producer's queue ends with
    /// it (see [`QueueWait`]).
    stop: CancellationToken,
    /// The drain deadline, once `finish` has started.
    draining_until: Option<Instant>,
    /// Records whose outputs were not all enqueued because the worker
    /// stopped while the producer's queue was full.
    abandoned: usize,
}

impl AtLeastOnce {
    pub fn new(
        producer: FutureProducer,
        metrics: Arc<Metrics>,
        runtime: tokio::runtime::Handle,
        max_in_flight: Room,
        drain_deadline: Duration,
        chains: Option<Chains>,
        stop: CancellationToken,
    ) -> AtLeastOnce {
        let (tx, acks) = mpsc::channel();
        AtLeastOnce {
            producer,
            metrics,
            runtime,
            ledger: AckLedger::new(chains.is_some()),
            acks,
            ack_tx: Some(tx),
            tasks: 0,
            max_in_flight,
            in_flight_bytes: 0,
            drain_deadline,
            chains,
            row_turns: HashMap::new(),
            finished: false,
            stop,
            draining_until: None,
            abandoned: 0,
        }
    }

    fn queue_wait(&self) -> QueueWait<'_> {
        QueueWait {
            stop: &self.stop,
            until: self.draining_until,
        }
    }

    fn apply(&mut self, consumer: &Consumer, ack: Ack) -> Result<(), WorkerError> {
        self.tasks = self.tasks.saturating_sub(1);
        self.in_flight_bytes = self.in_flight_bytes.saturating_sub(ack.bytes);
        let tp = ack.tp.clone();
        let delivered = (ack.what == Acked::Record).then_some(RecordDelivered {
            input_ts_ms: ack.input_ts_ms,
            now_ms: now_millis(),
            verdict: ack.verdict,
        });
        let ok = ack.result.is_ok();
        let store = self.ledger.acked(ack)?;
        if ok && let Some(d) = delivered {
            d.emit(&self.metrics);
        }
        // Only delivered rows go on the chain, in offset order; the seal
        // lists them in the order the audit topic holds them.
        for (offset, row) in self.ledger.delivered_rows(&tp) {
            let due = chain_row(
                &mut self.chains,
                consumer,
                &self.metrics,
                &tp,
                offset,
                Some(row.hash),
                Some(row.at),
            )?;
            if let Some(seal) = due {
                self.ledger.cut(&tp, seal);
            }
        }
        if let Some(store) = store {
            self.store(consumer, store);
        }
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

    /// Cuts the acknowledged rows of `tps` not sealed yet into seals, and
    /// sends them.
    fn seal_now(&mut self, tps: &[TopicPartition]) -> Result<(), WorkerError> {
        for tp in tps {
            let Some(seal) = self
                .chains
                .as_mut()
                .and_then(|c| c.seal(tp, crate::clock::now_nanos()))
            else {
                continue;
            };
            self.ledger.cut(tp, seal);
            self.release(tp)?;
        }
        Ok(())
    }

    /// Sends the seals of `tp` whose rows are all acknowledged, in order.
    fn release(&mut self, tp: &TopicPartition) -> Result<(), WorkerError> {
        while let Some(seal) = self.ledger.release(tp) {
            let Seal {
                output,
                last_offset,
                ..
            } = seal;
            let acks = self.sender()?;
            let future = match enqueue(&self.producer, &output, self.queue_wait()) {
                Ok(f) => f,
                // Stopping: the seal stays unacknowledged, the offsets it
                // covers uncommitted, and `finish` counts it.
                Err(e) if gave_up_waiting(&e) => return Ok(()),
                Err(e) => return Err(self.seal_failed(&output, tp, last_offset, e)),
            };
            self.spawn(
                DeliveryTask {
                    producer: self.producer.clone(),
                    metrics: self.metrics.clone(),
                    acks,
                    generation: self.ledger.generation(tp),
                    tp: tp.clone(),
                    offset: last_offset,
                    input_ts_ms: None,
                    what: Acked::Seal,
                    bytes: 0,
                    verdict: None,
                    oversize: None,
                    rows: Vec::new(),
                    rows_replaced: false,
                    turn: None,
                    done: None,
                    audit_hash: None,
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

    fn spawn(&mut self, s: DeliveryTask, outputs: Vec<(Output, DeliveryFuture)>) {
        self.tasks += 1;
        self.in_flight_bytes += s.bytes;
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
        done: impl Fn(&AckLedger, usize) -> bool,
    ) -> Result<(), WorkerError> {
        let mut first_err = None;
        while !done(&self.ledger, self.in_flight_bytes) && self.tasks > 0 {
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

    /// Commits the stored offsets; false when the commit failed.
    fn commit_stored(&self, consumer: &Consumer) -> bool {
        match consumer.commit_consumer_state(CommitMode::Sync) {
            Ok(()) => true,
            // Nothing stored since the last commit.
            Err(e) if e.rdkafka_error_code() == Some(RDKafkaErrorCode::NoOffset) => true,
            Err(e) => {
                OffsetCommitFailed {
                    error: &e,
                    log: true,
                }
                .emit(&self.metrics);
                false
            }
        }
    }
}

impl Delivery for AtLeastOnce {
    fn capacity(&mut self, consumer: &Consumer, batch_max: usize) -> Result<Room, WorkerError> {
        while let Ok(ack) = self.acks.try_recv() {
            self.apply(consumer, ack)?;
        }
        if let Some(due) = self.chains.as_ref().map(|c| c.due(Instant::now()))
            && !due.is_empty()
        {
            self.seal_now(&due)?;
        }
        let max = self.max_in_flight;
        let room = |b: &AckLedger, bytes: usize| b.in_flight() < max.records && bytes < max.bytes;
        self.metrics
            .set_in_flight(self.ledger.records_in_flight(), self.in_flight_bytes);
        if !room(&self.ledger, self.in_flight_bytes) {
            // Backpressure: wait for deliveries instead of fetching more.
            self.drain(consumer, Instant::now() + BACKPRESSURE_WAIT, room)?;
            return Ok(Room::NONE);
        }
        Ok(Room {
            records: batch_max.min(max.records - self.ledger.in_flight()),
            bytes: max.bytes - self.in_flight_bytes,
        })
    }

    fn publish(
        &mut self,
        _consumer: &Consumer,
        mut record: Pending,
        _rest: &[(TopicPartition, i64)],
    ) -> Result<Flow, WorkerError> {
        // Nothing judged here is judged again: counted as it is published.
        if let Some(answer) = record.answer.take() {
            AnswersWritten {
                summaries: std::slice::from_ref(&answer),
            }
            .emit(&self.metrics);
        }
        // The audit rows are sent by the delivery task once the others are
        // delivered (or replaced), so that they agree with what was.
        let (rows, others): (Vec<Output>, Vec<Output>) = std::mem::take(&mut record.outputs)
            .into_iter()
            .partition(Output::is_audit_row);
        let mut futures = Vec::with_capacity(others.len());
        let mut agreeing = None;
        for out in others {
            match enqueue_or_replace(&self.producer, out, &record, false, self.queue_wait()) {
                Ok(sent) => {
                    agreeing = agreeing.or(sent.audit);
                    futures.push((sent.out, sent.delivery));
                }
                // Its offset is never stored: the next owner reads it again.
                Err((_, e)) if gave_up_waiting(&e) => {
                    self.abandoned += 1;
                    return Ok(Flow::Stopped);
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
        self.ledger.sent(&record.tp, record.offset);
        let rows_replaced = agreeing.is_some();
        let rows = agreeing.map_or(rows, |a| vec![a]);
        let (done, next_turn) = oneshot::channel();
        let turn = self.row_turns.insert(record.tp.clone(), next_turn);
        self.spawn(
            DeliveryTask {
                producer: self.producer.clone(),
                metrics: self.metrics.clone(),
                acks,
                generation: self.ledger.generation(&record.tp),
                tp: record.tp,
                offset: record.offset,
                input_ts_ms: record.input_ts_ms,
                what: Acked::Record,
                bytes: record.input_bytes,
                verdict: record
                    .verdict
                    .map(|v| if rows_replaced { Verdict::STAND_IN } else { v }),
                oversize: Some(record.oversize),
                rows,
                rows_replaced,
                audit_hash: record.audit_hash,
                turn,
                done: Some(done),
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
        if self.finished {
            return Ok(());
        }
        let mut result = Ok(());
        if !lost {
            // Seal what is pending, so the next owner continues a chain
            // whose every committed row is sealed: the drain waits for the
            // rows (only acknowledged rows are sealed), then the seals
            // cut from them.
            let deadline = Instant::now() + self.drain_deadline;
            let rows = self.drain(consumer, deadline, |b, _| {
                b.records_in_flight_for(revoked) == 0
            });
            let sealed = self.seal_now(revoked);
            let drained = self.drain(consumer, deadline, |b, _| b.in_flight_for(revoked) == 0);
            result = rows.and(sealed).and(drained);
            // A failed commit is counted and logged; the next owner reads
            // from the last committed offset.
            self.commit_stored(consumer);
        }
        self.ledger.forget(revoked);
        if let Some(c) = self.chains.as_mut() {
            c.forget(revoked);
        }
        for tp in revoked {
            self.row_turns.remove(tp);
        }
        result
    }

    fn finish(
        &mut self,
        consumer: &Consumer,
        deadline: Instant,
        failed: bool,
    ) -> Result<Unfinished, WorkerError> {
        self.finished = true;
        self.draining_until = Some(deadline);
        // The rows first: only acknowledged rows are sealed. The drain also
        // sends the seals due by count that its acks cut (after a failure
        // too: a seal lists only acknowledged rows, so what it covers is
        // safe to commit).
        let rows = self.drain(consumer, deadline, |b, _| b.records_in_flight() == 0);
        let mut sealed = Ok(());
        if !failed && let Some(tps) = self.chains.as_ref().map(Chains::unsealed) {
            sealed = self.seal_now(&tps);
        }
        let result = rows
            .and(sealed)
            .and(self.drain(consumer, deadline, |b, _| b.in_flight() == 0));
        self.ack_tx = None;
        // Records still in the ledger (unacknowledged, or behind one that
        // is) and seals not acknowledged: their offsets are never stored.
        let records = self.ledger.records_in_flight();
        let seals = self.ledger.in_flight() - records;
        let records = records + self.abandoned;
        let commit_failed = !self.commit_stored(consumer);
        result.map(|()| Unfinished {
            records,
            seals,
            commit_failed,
            flush_failed: false,
        })
    }
}

fn publish_failure(out: &Output, input: String, source: KafkaError) -> WorkerError {
    PublishFailure::stop(out.role.as_str(), out.topic.clone(), input, source)
}

/// One delivery's state, moved into its own task.
struct DeliveryTask {
    producer: FutureProducer,
    metrics: Arc<Metrics>,
    acks: Sender<Ack>,
    /// The assignment of `tp` the delivery is made in.
    generation: u64,
    tp: TopicPartition,
    offset: i64,
    input_ts_ms: Option<i64>,
    what: Acked,
    /// The input bytes of the record delivered (0 for a seal).
    bytes: usize,
    /// What the record's terminal record is written as, as far as known
    /// when it was enqueued (`None`: a seal, or not judged).
    verdict: Option<Verdict>,
    /// How to replace an output refused as too large (`None`: a seal, never
    /// replaced).
    oversize: Option<TooLargeReplacer>,
    /// The record's audit rows, sent once its other outputs are delivered.
    rows: Vec<Output>,
    /// `rows` are not the ones built beside validation (their hash is
    /// computed on delivery).
    rows_replaced: bool,
    /// Closed once the previous record of the partition enqueued its rows.
    turn: Option<oneshot::Receiver<()>>,
    /// Closed once this record's rows are enqueued (or will never be).
    done: Option<oneshot::Sender<()>>,
    /// The SHA-256 of the audit row built beside validation (`None`: not
    /// sealed).
    audit_hash: Option<[u8; 32]>,
}

/// Awaits the delivery of every output of one record, or of one seal
/// (re-sending a bounded number of times on retriable failures), then sends
/// and awaits the record's audit rows, and reports back with the audit row
/// delivered (its SHA-256 and where the audit topic holds it).
async fn settle(s: DeliveryTask, first: Vec<(Output, DeliveryFuture)>) {
    let DeliveryTask {
        producer,
        metrics,
        acks,
        generation,
        tp,
        offset,
        input_ts_ms,
        what,
        bytes,
        mut verdict,
        oversize,
        rows,
        rows_replaced,
        audit_hash,
        turn,
        done,
    } = s;
    let to = Destination {
        producer: &producer,
        metrics: &metrics,
        oversize: oversize.as_ref(),
        tp: &tp,
        offset,
        input: format!("{}/{}@{}", tp.0, tp.1, offset),
    };
    let mut result = Ok(());
    let mut agreeing = None;
    for (out, fut) in first {
        let outcome = written(fut).await;
        match to.deliver(out, outcome).await {
            Ok(d) => agreeing = agreeing.or(d.audit),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if let Some(turn) = turn {
        // Closed without a send too, when the previous task is gone.
        let _ = turn.await;
    }
    let mut delivered_row = None;
    if result.is_ok() {
        // A terminal record replaced by its stand-in: the row that says so.
        let (rows, replaced) = match agreeing {
            Some(a) => {
                verdict = verdict.map(|_| Verdict::STAND_IN);
                (vec![a], true)
            }
            None => (rows, rows_replaced),
        };
        let mut enqueued = Vec::with_capacity(rows.len());
        for row in rows {
            let delivery = to.enqueue(&row).await;
            enqueued.push((row, delivery));
        }
        drop(done);
        for (row, delivery) in enqueued {
            let outcome = match delivery {
                Ok(f) => written(f).await,
                Err(e) => Err(e),
            };
            match to.deliver(row, outcome).await {
                Ok(d) => {
                    // Where the row landed, which is after the rows of later
                    // records when it was sent again or replaced.
                    delivered_row =
                        delivered_row_hash(audit_hash, &d.output, replaced || d.replaced)
                            .map(|hash| DeliveredRow { hash, at: d.at });
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
    }
    // The consumer thread is gone only after shutdown, when nobody waits for acks.
    let _ = acks.send(Ack {
        tp,
        generation,
        offset,
        input_ts_ms,
        what,
        bytes,
        verdict,
        audit_row: delivered_row,
        result,
    });
}

/// Where a delivered message was written, or why it was not.
async fn written(delivery: DeliveryFuture) -> Result<Written, KafkaError> {
    match delivery.await {
        Ok(r) => r.map(landed).map_err(|(e, _)| e),
        Err(_) => Err(KafkaError::Canceled),
    }
}

fn landed(d: rdkafka::producer::future_producer::Delivery) -> Written {
    Written {
        partition: d.partition,
        offset: d.offset,
    }
}

/// Where a delivery task's outputs go, and what they are of.
struct Destination<'a> {
    producer: &'a FutureProducer,
    metrics: &'a Metrics,
    oversize: Option<&'a TooLargeReplacer>,
    tp: &'a TopicPartition,
    offset: i64,
    input: String,
}

/// One output as delivered.
struct Delivered {
    output: Output,
    /// Where its topic holds it.
    at: Written,
    /// `output` is the stand-in of the output first sent.
    replaced: bool,
    /// The first output was a terminal record, replaced by its stand-in:
    /// the audit row that goes with that stand-in.
    audit: Option<Output>,
}

impl Destination<'_> {
    /// Enqueues `out`, waiting while the producer queue is full.
    async fn enqueue(&self, out: &Output) -> Result<DeliveryFuture, KafkaError> {
        let deadline = tokio::time::Instant::now() + SEND_WAIT;
        loop {
            match self.producer.send_result(out.record()) {
                Ok(f) => return Ok(f),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _))
                    if tokio::time::Instant::now() < deadline =>
                {
                    // Deliveries drain the queue from librdkafka's own threads.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err((e, _)) => return Err(e),
            }
        }
    }

    async fn send(&self, out: &Output) -> Result<Written, KafkaError> {
        self.producer
            .send(out.record(), Timeout::After(SEND_WAIT))
            .await
            .map(landed)
            .map_err(|(e, _)| e)
    }

    /// Settles one output whose first attempt ended with `outcome`:
    /// re-sends a bounded number of times when retriable, and replaces it
    /// once by its bounded stand-in when refused as too large.
    async fn deliver(
        &self,
        mut out: Output,
        mut outcome: Result<Written, KafkaError>,
    ) -> Result<Delivered, WorkerError> {
        let mut resends = 0;
        let mut replaced = false;
        let mut audit = None;
        let at = loop {
            let e = match outcome {
                Ok(at) if out.is_seal() => {
                    SealsPublished {
                        seals: 1,
                        now_ms: now_millis(),
                    }
                    .emit(self.metrics);
                    break at;
                }
                Ok(at) => {
                    OutputPublished { role: out.role }.emit(self.metrics);
                    break at;
                }
                Err(e) => e,
            };
            let replacement = self.oversize.filter(|_| !out.is_seal());
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
                input: &self.input,
                then,
            }
            .emit(self.metrics);
            match (then, replacement) {
                (PublishThen::ReplaceBounded, Some(oversize)) => {
                    let stand_in = oversize.replacement(&out, self.tp, self.offset);
                    out = stand_in.output;
                    audit = stand_in.audit;
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
                            chain: &format!("{}/{}", self.tp.0, self.tp.1),
                        }
                        .emit(self.metrics);
                    }
                    return Err(publish_failure(&out, self.input.clone(), e));
                }
            }
            outcome = self.send(&out).await;
        };
        Ok(Delivered {
            output: out,
            at,
            replaced,
            audit,
        })
    }
}

#[cfg(test)]
mod tests {
    use rdkafka::Message as _;
    use rdkafka::producer::Producer as _;
    use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};

    use super::*;
    use crate::audit::verify::{AuditVerifier, Location, Options};
    use crate::core::OutputRole;
    use crate::kafka::delivery::testing;
    use crate::kafka::inspect;
    use crate::kafka::seals::SealSettings;

    /// A sealing delivery on `bootstrap` (a seal every 100 rows, or at the
    /// end), up to 100 records in flight, and a consumer of the worker's
    /// kind.
    fn sealing(
        config: &crate::config::Config,
        bootstrap: &str,
        metrics: Arc<Metrics>,
        runtime: tokio::runtime::Handle,
    ) -> (AtLeastOnce, Consumer) {
        let consumer = testing::consumer(config, bootstrap, &metrics);
        let chains = Chains::new(SealSettings {
            worker: "w".into(),
            seal_every: 100,
            interval: Duration::from_secs(3600),
            key: None,
            topics: config.kafka.topics.clone(),
            schema_ids: config.kafka.output_schema_ids,
        });
        let alo = AtLeastOnce::new(
            testing::producer(config, bootstrap),
            metrics,
            runtime,
            Room {
                records: 100,
                bytes: 64 << 20,
            },
            Duration::from_secs(60),
            Some(chains),
            CancellationToken::new(),
        );
        (alo, consumer)
    }

    /// Input `offset` of `tp` with its audit row as its only output.
    fn audit_row_only(
        config: &Arc<crate::config::Config>,
        tp: &TopicPartition,
        offset: i64,
    ) -> Pending {
        let row = format!(
            r#"{{"answer_hash":"h{offset}","input":{{"offset":{offset},"partition":{},"topic":"{}"}},"outcome":"accepted","ts":{offset}}}"#,
            tp.1, tp.0
        )
        .into_bytes();
        Pending {
            tp: tp.clone(),
            offset,
            input_ts_ms: None,
            input_bytes: 0,
            audit_hash: Some(crate::audit::seal::row_hash(&row)),
            outputs: vec![Output {
                role: OutputRole::Audit,
                topic: config.kafka.topics.audit.clone(),
                key: None,
                payload: Some(row),
                headers: Vec::new(),
            }],
            oversize: TooLargeReplacer {
                config: config.clone(),
                request_id: None,
            },
            verdict: None,
            answer: None,
        }
    }

    /// The rows of input offsets 0 and 1 wait in the producer's queue
    /// while the broker is down, each its own batch, one request at a time;
    /// the broker then refuses the first as too large. Row 1 is written,
    /// then the stand-in of row 0: the seal lists them in that order, and
    /// the trail verifies clean.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_row_replaced_after_a_later_row_was_written_is_sealed_where_it_landed() {
        let (broker, bs, config, metrics) = testing::cluster(|raw| {
            for (k, v) in [
                ("max.in.flight.requests.per.connection", "1"),
                ("batch.num.messages", "1"),
            ] {
                raw.kafka.properties.insert(k.into(), v.into());
            }
        });
        broker.cluster().request_errors(
            RDKafkaApiKey::Produce,
            &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE],
        );
        let runtime = tokio::runtime::Handle::current();
        let audit = config.kafka.topics.audit.clone();
        let deadline = Instant::now() + Duration::from_secs(60);
        broker.broker_down(1).unwrap();
        let b = bs.clone();
        let (mut alo, consumer) = tokio::task::spawn_blocking(move || {
            let (mut alo, consumer) = sealing(&config, &b, metrics, runtime);
            let tp: TopicPartition = (config.kafka.topics.input.clone(), 0);
            for offset in 0..2 {
                let record = audit_row_only(&config, &tp, offset);
                assert_eq!(alo.publish(&consumer, record, &[]).unwrap(), Flow::Next);
            }
            while alo.producer.in_flight_count() < 2 {
                assert!(Instant::now() < deadline, "both rows enqueued");
                std::thread::sleep(Duration::from_millis(5));
            }
            (alo, consumer)
        })
        .await
        .unwrap();
        broker.cluster().broker_up(1).unwrap();
        let (b, topic) = (bs.clone(), audit.clone());
        let trail = tokio::task::spawn_blocking(move || {
            alo.finish(&consumer, deadline, false).unwrap();
            let got = inspect::read_until(&b, &[topic.as_str()], Duration::from_secs(60), |got| {
                got[0].len() >= 3
            })
            .unwrap();
            got.into_iter().next().unwrap_or_default()
        })
        .await
        .unwrap();
        let held: Vec<String> = trail
            .iter()
            .map(|m| String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned())
            .collect();
        assert_eq!(held.len(), 3, "{held:#?}");
        assert!(held[0].contains(r#""answer_hash":"h1""#), "{held:#?}");
        assert!(held[1].contains("MSG_SIZE_TOO_LARGE"), "{held:#?}");
        assert!(held[1].contains(r#""offset":0,"#), "{held:#?}");
        assert!(inspect::is_seal(&trail[2]), "{held:#?}");
        let mut v = AuditVerifier::new(Options::default());
        let stream = v.stream(format!("{audit}/0"));
        for m in &trail {
            let at = Location {
                stream,
                pos: m.offset() as u64,
            };
            v.record(at, m.payload().unwrap_or_default());
        }
        let report = v.finish();
        assert!(report.ok(), "{:#?}\n{held:#?}", report.problems);
        assert_eq!(report.chains[0].sealed_rows, 2);
    }

    /// Records waiting for their outputs' acknowledgements take room by
    /// their bytes as well as by their number: two records of 600 kB fill a
    /// bound of 1 MiB that a hundred records would not fill by count, and a
    /// batch may take only the bytes left.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn records_waiting_for_acknowledgements_take_room_by_their_input_bytes() {
        let (broker, bs, config, metrics) = testing::cluster(|_| {});
        let runtime = tokio::runtime::Handle::current();
        // Nothing is acknowledged while the broker is down.
        broker.broker_down(1).unwrap();
        let (mut alo, consumer) = tokio::task::spawn_blocking(move || {
            let consumer = testing::consumer(&config, &bs, &metrics);
            let bound = Room {
                records: 100,
                bytes: 1 << 20,
            };
            let mut alo = AtLeastOnce::new(
                testing::producer(&config, &bs),
                metrics,
                runtime,
                bound,
                Duration::from_secs(60),
                None,
                CancellationToken::new(),
            );
            let tp: TopicPartition = (config.kafka.topics.input.clone(), 0);
            let large = |offset| {
                let mut record = testing::record(&config, &tp);
                record.offset = offset;
                record.input_bytes = 600_000;
                record.outputs[0].payload = Some(vec![b'x'; 600_000]);
                (record, 600_000)
            };
            assert_eq!(alo.capacity(&consumer, 256).unwrap(), bound);
            let (first, size) = large(0);
            assert_eq!(alo.publish(&consumer, first, &[]).unwrap(), Flow::Next);
            let room = alo.capacity(&consumer, 256).unwrap();
            assert_eq!(
                room,
                Room {
                    records: 99,
                    bytes: (1 << 20) - size,
                }
            );
            let (second, _) = large(1);
            assert_eq!(alo.publish(&consumer, second, &[]).unwrap(), Flow::Next);
            assert_eq!(alo.capacity(&consumer, 256).unwrap(), Room::NONE);
            (alo, consumer)
        })
        .await
        .unwrap();
        broker.cluster().broker_up(1).unwrap();
        tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            let left = alo.finish(&consumer, deadline, false).unwrap();
            assert_eq!(left.records, 0, "both delivered once the broker is back");
            assert_eq!(alo.in_flight_bytes, 0, "acknowledged bytes leave the count");
        })
        .await
        .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_a_failed_finish_the_closing_revocation_cuts_no_seal() {
        let (_broker, bs, config, metrics) = testing::cluster(|_| {});
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let (mut alo, consumer) = sealing(&config, &bs, metrics, runtime);
            let tp: TopicPartition = (config.kafka.topics.input.clone(), 0);
            let record = testing::record(&config, &tp);
            assert_eq!(alo.publish(&consumer, record, &[]).unwrap(), Flow::Next);
            let deadline = Instant::now() + Duration::from_secs(60);
            alo.finish(&consumer, deadline, true).unwrap();
            let unsealed = alo.chains.as_ref().map(Chains::unsealed);
            assert_eq!(unsealed, Some(vec![tp.clone()]), "acknowledged, not sealed");
            // Closing the consumer serves a revocation after finish.
            alo.on_revoke(&consumer, std::slice::from_ref(&tp), false)
                .unwrap();
            assert_eq!(alo.ledger.in_flight(), 0, "no seal cut that cannot be sent");
        })
        .await
        .unwrap();
    }
}
