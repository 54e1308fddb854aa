//! Exactly-once delivery. A transactional producer: outputs and the
//! consumer's positions (`send_offsets_to_transaction` with the group
//! metadata) are committed together every `commit_interval`, or once the
//! transaction holds `commit_max_records` records or `max_in_flight_bytes`
//! of them. An abortable error aborts the transaction and seeks
//! back to the first offset of the transaction in each partition; a fatal one
//! (fencing) stops the worker; a commit or abort call that timed out is
//! made again (the brokers may still be finishing it).
//!
//! An output the broker refuses as too large fails the transaction's
//! commit: the transaction is aborted and rewound, and the refused output
//! (remembered by its record's input position and its role) is replaced by
//! its bounded stand-in when the record is processed again, so the record
//! still gets one terminal record and one audit row and the partition
//! moves on. A stand-in or a seal refused as too large stops the worker
//! (nothing smaller can take its place).
//!
//! Sealing (`super::seals`): the seals are in the transaction of their rows.
//! A partition is sealed every `audit.seal_every` rows and, before each
//! commit, every partition with unsealed rows is sealed; its position is
//! sent with the chain head after that seal as metadata. An abort takes
//! every chain back to its head at the transaction's start.
//!
//! Must not let a record's outputs and its input position be committed in
//! different transactions, nor commit a position whose rows are unsealed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer as _;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{DeliveryFuture, Producer};
use rdkafka::{Offset, TopicPartitionList};
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::client::FutureProducer;
use super::delivery::{
    Consumer, Delivery, Enqueued, Flow, Pending, QueueWait, Room, chain_row, enqueue,
    enqueue_or_replace, enqueue_stand_in, gave_up_waiting, is_too_large, now_millis, position,
};
use super::error::{ErrorClass, PublishFailure, WorkerError, classify};
use super::events::{
    InternalEvent, PublishFailed, PublishThen, SealsFailed, TransactionAborted,
    TransactionCallRetried, TransactionCommitted, TxnCall,
};
use super::offsets::TopicPartition;
use super::outputs::Output;
use super::seals::Chains;
use super::worker_report::Unfinished;
use crate::config::KafkaConfig;
use crate::core::{OutputRole, Summary};
use crate::metrics::{Metrics, Verdict};

/// Timeout of the blocking transaction calls.
pub const TXN_TIMEOUT: Duration = Duration::from_secs(30);
/// librdkafka's `request.timeout.ms` unless passed through: how long a
/// produce request may take before it fails.
const REQUEST_TIMEOUT_MS: u64 = 30_000;
/// How much longer than a produce request may take the outputs of a
/// transaction may go without an acknowledgement.
const STALL_MARGIN: Duration = Duration::from_secs(5);

/// How long the outputs of a transaction may go without one of them being
/// acknowledged before its commit fails (abort and rewind): longer than a
/// produce request may take (`request.timeout.ms`), so brokers that answer
/// slowly (waiting on a slow in-sync replica) are waited for, and gone
/// ones are not waited out to the transaction timeout.
pub fn delivery_stall(k: &KafkaConfig) -> Duration {
    let request_ms = k
        .properties
        .get("request.timeout.ms")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(REQUEST_TIMEOUT_MS);
    Duration::from_millis(request_ms) + STALL_MARGIN
}

/// The producer's `transaction.timeout.ms`: how long the coordinator lets a
/// transaction stay open before it aborts it and fences the producer. A
/// transaction is open for up to `commit_interval`; its commit then sends
/// the offsets and commits (each call bounded by [`TXN_TIMEOUT`], and made
/// again after a timeout only while this has not passed) after the
/// deliveries, which fail it once stalled for [`delivery_stall`].
pub fn transaction_timeout(k: &KafkaConfig) -> Duration {
    k.commit_interval + 2 * TXN_TIMEOUT + delivery_stall(k)
}

/// The pure bookkeeping of one open transaction.
#[derive(Default, Debug)]
pub struct Txn {
    open_since: Option<Instant>,
    records: usize,
    /// Next offset to consume per partition, sent with the transaction.
    next: HashMap<TopicPartition, i64>,
    /// First offset of the transaction per partition: where an abort rewinds to.
    first: HashMap<TopicPartition, i64>,
    /// Outputs enqueued per role, in [`OutputRole::ALL`] order.
    published: [u64; 4],
    /// Seals enqueued (not counted in `published`).
    seals: u64,
    /// Input bytes of the records.
    bytes: usize,
    input_ts_ms: Vec<i64>,
    /// What the terminal records are written as, counted once committed.
    verdicts: Vec<Verdict>,
    /// What the records' answers said, counted once committed.
    answers: Vec<Summary>,
}

impl Txn {
    pub fn is_open(&self) -> bool {
        self.open_since.is_some()
    }

    pub fn opened(&mut self, now: Instant) {
        self.open_since = Some(now);
    }

    pub fn output(&mut self, role: OutputRole) {
        if let Some(i) = OutputRole::ALL.iter().position(|r| *r == role) {
            self.published[i] += 1;
        }
    }

    /// Whether the transaction holds as many records or bytes as one may.
    pub fn full(&self, max: Room) -> bool {
        self.records >= max.records || self.bytes >= max.bytes
    }

    pub fn record(
        &mut self,
        tp: &TopicPartition,
        offset: i64,
        input_ts_ms: Option<i64>,
        bytes: usize,
    ) {
        self.first.entry(tp.clone()).or_insert(offset);
        self.next.insert(tp.clone(), offset + 1);
        self.records += 1;
        self.bytes += bytes;
        self.input_ts_ms.extend(input_ts_ms);
    }

    pub fn due(&self, max: Room, interval: Duration) -> bool {
        self.is_open()
            && (self.full(max) || self.open_since.is_some_and(|t| t.elapsed() >= interval))
    }

    /// The positions committed with the transaction: the next offset to read
    /// per partition.
    pub fn commit_positions(&self) -> Vec<(TopicPartition, i64)> {
        let mut v: Vec<_> = self.next.iter().map(|(tp, o)| (tp.clone(), *o)).collect();
        v.sort();
        v
    }

    /// Where an abort rewinds to: each partition's first offset in the
    /// transaction, and for partitions only in `rest` (fetched, never sent)
    /// their first fetched offset, or those records would be skipped.
    pub fn rewind_positions(&self, rest: &[(TopicPartition, i64)]) -> HashMap<TopicPartition, i64> {
        let mut first = self.first.clone();
        for (tp, o) in rest {
            first.entry(tp.clone()).or_insert(*o);
        }
        first
    }
}

/// An output of the open transaction, kept until the transaction ends so
/// that a refusal by the broker is traced back to its record.
struct Sent {
    tp: TopicPartition,
    /// The record's input offset (a seal: the last row it covers).
    offset: i64,
    role: OutputRole,
    topic: String,
    /// A seal, or the bounded stand-in of a refused output: nothing smaller
    /// can take its place.
    last_resort: bool,
    delivery: DeliveryFuture,
}

/// How [`ExactlyOnce::commit`] ended the open transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TxnEnd {
    /// No transaction was open: nothing to commit.
    NoneOpen,
    Committed,
    /// Aborted and rewound: its records' outputs and positions are not
    /// committed.
    Aborted,
}

/// The outputs of one record the broker refused as too large, by role.
type Refused = HashMap<(TopicPartition, i64), HashSet<OutputRole>>;

pub struct ExactlyOnce {
    producer: FutureProducer,
    /// Awaits the delivery reports of an aborted transaction's outputs.
    runtime: tokio::runtime::Handle,
    metrics: Arc<Metrics>,
    txn: Txn,
    /// The open transaction's outputs and seals.
    sent: Vec<Sent>,
    /// Outputs refused as too large in an aborted transaction: their
    /// records publish the bounded stand-in instead when processed again.
    refused: Refused,
    commit_interval: Duration,
    /// Records and their input bytes a transaction holds at most.
    commit_max: Room,
    /// See [`delivery_stall`].
    stall: Duration,
    /// See [`Commits`].
    call_timeout: Duration,
    open_for: Duration,
    committed: u64,
    aborted: u64,
    /// The partitions' audit chains; `None`: not sealing (bench modes).
    chains: Option<Chains>,
    /// Set by `finish` to the drain deadline, which then bounds every
    /// transaction call, so a stop ends on its own instead of waiting out
    /// the brokers' timeouts; and the revocation that closing the consumer
    /// serves afterwards has nothing left to settle.
    finishing: Option<Instant>,
    /// The worker's stop: a wait for room in the producer's queue ends with
    /// it (see [`QueueWait`]).
    stop: CancellationToken,
    /// The open transaction holds a record whose outputs were not all
    /// enqueued (the worker stopped while the producer's queue was full):
    /// it must never commit.
    abandoned: bool,
}

/// When a transaction is committed: every `interval`, or once it holds
/// `max` records or bytes of them; how long its outputs may go
/// unacknowledged ([`delivery_stall`]); how long one transaction call may
/// block ([`TXN_TIMEOUT`]); and how long the coordinator lets a
/// transaction stay open ([`transaction_timeout`]), past which a timed-out
/// call is not made again.
#[derive(Debug, Clone, Copy)]
pub struct Commits {
    pub interval: Duration,
    pub max: Room,
    pub stall: Duration,
    pub call_timeout: Duration,
    pub open_for: Duration,
}

impl ExactlyOnce {
    /// `producer` must have had `init_transactions` called.
    pub fn new(
        producer: FutureProducer,
        runtime: tokio::runtime::Handle,
        metrics: Arc<Metrics>,
        commits: Commits,
        chains: Option<Chains>,
        stop: CancellationToken,
    ) -> ExactlyOnce {
        let Commits {
            interval: commit_interval,
            max: commit_max,
            stall,
            call_timeout,
            open_for,
        } = commits;
        ExactlyOnce {
            producer,
            runtime,
            metrics,
            txn: Txn::default(),
            sent: Vec::new(),
            refused: Refused::new(),
            commit_interval,
            commit_max,
            stall,
            call_timeout,
            open_for,
            committed: 0,
            aborted: 0,
            chains,
            finishing: None,
            stop,
            abandoned: false,
        }
    }

    fn queue_wait(&self) -> QueueWait<'_> {
        QueueWait {
            stop: &self.stop,
            until: self.finishing,
        }
    }

    /// Seals every partition with rows not yet sealed into the open
    /// transaction; the first seal that cannot be enqueued, with the error.
    fn seal_all(&mut self) -> Result<(), Box<(Output, KafkaError)>> {
        let Some(chains) = self.chains.as_mut() else {
            return Ok(());
        };
        for tp in chains.unsealed() {
            if let Some(seal) = chains.seal(&tp, crate::clock::now_nanos()) {
                let wait = QueueWait {
                    stop: &self.stop,
                    until: self.finishing,
                };
                let delivery = enqueue(&self.producer, &seal.output, wait)
                    .map_err(|e| Box::new((seal.output.clone(), e)))?;
                self.sent.push(Sent {
                    tp,
                    offset: seal.last_offset,
                    role: OutputRole::Audit,
                    topic: seal.output.topic,
                    last_resort: true,
                    delivery,
                });
                self.txn.seals += 1;
            }
        }
        Ok(())
    }

    /// `wanted`, or less when finishing: what is left of the drain deadline.
    fn budget(&self, wanted: Duration) -> Duration {
        self.finishing.map_or(wanted, |until| {
            wanted.min(until.saturating_duration_since(Instant::now()))
        })
    }

    /// Makes a transaction call, and makes it again while it fails with an
    /// error librdkafka says that call may retry: it timed out, and the
    /// brokers may still finish it (any other transaction call would
    /// conflict with it, an abort included). Gives up with the error once
    /// `open_for` has passed since `opened` (the transaction's start, or an
    /// abort's first attempt: the coordinator has ended the transaction by
    /// its timeout then), at the drain deadline, or when the worker is told
    /// to stop before it drains (the drain then decides).
    fn call_until_done(
        &self,
        call: TxnCall,
        opened: Instant,
        mut f: impl FnMut(Duration) -> Result<(), KafkaError>,
    ) -> Result<(), KafkaError> {
        loop {
            let e = match f(self.budget(self.call_timeout)) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            let again = matches!(&e, KafkaError::Transaction(t)
                if t.is_retriable() && !t.txn_requires_abort() && !t.is_fatal());
            let stopping = self.stop.is_cancelled() && self.finishing.is_none();
            if !again
                || stopping
                || opened.elapsed() >= self.open_for
                || self.budget(self.call_timeout).is_zero()
            {
                return Err(e);
            }
            TransactionCallRetried { call, error: &e }.emit(&self.metrics);
        }
    }

    /// Commits the open transaction with the consumer positions; on an
    /// abortable error aborts it and rewinds to the transaction's first
    /// offsets.
    fn commit(&mut self, consumer: &Consumer) -> Result<TxnEnd, WorkerError> {
        if !self.txn.is_open() {
            return Ok(TxnEnd::NoneOpen);
        }
        let sealed = self.seal_all();
        let txn = std::mem::take(&mut self.txn);
        let sent = std::mem::take(&mut self.sent);
        if let Err(failed) = sealed {
            let (_, e) = *failed;
            // The seals already enqueued, and the one that was not.
            let seals = txn.seals + 1;
            self.abort_and_rewind(consumer, txn.rewind_positions(&[]), sent, seals, Some(&e))?;
            return Ok(TxnEnd::Aborted);
        }
        let positions = txn.commit_positions();
        let mut tpl = TopicPartitionList::new();
        for (tp, next) in &positions {
            let head = self.chains.as_ref().and_then(|c| c.head(tp));
            position(&mut tpl, tp, *next, head).map_err(WorkerError::transaction)?;
        }
        let producer = &self.producer;
        let opened = txn.open_since.unwrap_or_else(Instant::now);
        let result = match consumer.group_metadata() {
            // Offsets first: in an abortable state this fails at once.
            Some(cgm) => self
                .call_until_done(TxnCall::SendOffsets, opened, |t| {
                    producer.send_offsets_to_transaction(&tpl, &cgm, t)
                })
                .and_then(|()| wait_for_deliveries(producer, self.finishing, self.stall))
                .and_then(|()| {
                    self.call_until_done(TxnCall::Commit, opened, |t| {
                        producer.commit_transaction(t)
                    })
                }),
            // Only before the first assignment; there is nothing to commit then.
            None => Err(KafkaError::MessageProduction(RDKafkaErrorCode::State)),
        };
        match result {
            Ok(()) => {
                self.committed += 1;
                consumer.context().note_committed_in_txn(&positions);
                // Those records are done: their refused outputs stay replaced.
                let next: HashMap<_, _> = positions.into_iter().collect();
                self.refused
                    .retain(|(tp, offset), _| next.get(tp).is_none_or(|n| offset >= n));
                TransactionCommitted {
                    records: txn.records,
                    published: txn.published,
                    input_ts_ms: &txn.input_ts_ms,
                    verdicts: &txn.verdicts,
                    answers: &txn.answers,
                    seals: txn.seals,
                    now_ms: now_millis(),
                }
                .emit(&self.metrics);
                Ok(TxnEnd::Committed)
            }
            Err(e) if txn_is_fatal(&e) => Err(WorkerError::transaction(e)),
            Err(e) => {
                self.abort_and_rewind(
                    consumer,
                    txn.rewind_positions(&[]),
                    sent,
                    txn.seals,
                    Some(&e),
                )?;
                Ok(TxnEnd::Aborted)
            }
        }
    }

    /// `sent`: the aborted transaction's outputs; `seals`: how many seals
    /// it held (not published).
    fn abort_and_rewind(
        &mut self,
        consumer: &Consumer,
        first: HashMap<TopicPartition, i64>,
        sent: Vec<Sent>,
        seals: u64,
        cause: Option<&KafkaError>,
    ) -> Result<(), WorkerError> {
        self.txn = Txn::default();
        if let Some(c) = self.chains.as_mut() {
            c.rollback();
        }
        SealsFailed {
            seals,
            chain: "(the aborted transaction's partitions)",
        }
        .emit(&self.metrics);
        self.call_until_done(TxnCall::Abort, Instant::now(), |t| {
            self.producer.abort_transaction(t)
        })
        .map_err(WorkerError::transaction)?;
        self.aborted += 1;
        TransactionAborted {
            partitions: first.len(),
            cause,
            at_stop: false,
        }
        .emit(&self.metrics);
        self.remember_refused(sent)?;
        for ((topic, p), offset) in first {
            if let Err(source) =
                consumer.seek(&topic, p, Offset::Offset(offset), self.budget(TXN_TIMEOUT))
            {
                let owned = consumer
                    .assignment()
                    .map(|a| a.find_partition(&topic, p).is_some());
                rewind_failed(owned, topic, p, offset, source)?;
            }
        }
        Ok(())
    }
}

/// What a failed rewind of an aborted transaction's partition means.
/// A partition revoked meanwhile is its new owner's, who starts from the
/// committed offset: nothing to do. One still assigned (or whose
/// assignment cannot be read) would go on past the aborted records, and
/// the next transaction would commit offsets beyond them: they would be
/// lost, so the worker stops instead.
fn rewind_failed(
    owned: Result<bool, KafkaError>,
    topic: String,
    partition: i32,
    offset: i64,
    source: KafkaError,
) -> Result<(), WorkerError> {
    if let Ok(false) = owned {
        debug!(error = %source, partition, "rewind skipped: the partition is no longer assigned");
        return Ok(());
    }
    Err(WorkerError::Rewind {
        topic,
        partition,
        offset,
        source,
    })
}

impl ExactlyOnce {
    /// Remembers which outputs of an aborted transaction the broker refused
    /// as too large (their delivery reports are all in once the abort has
    /// returned). Err when a seal or a stand-in was refused: re-running the
    /// records would only be refused again.
    fn remember_refused(&mut self, sent: Vec<Sent>) -> Result<(), WorkerError> {
        let deadline = Instant::now() + self.budget(TXN_TIMEOUT);
        for s in sent {
            let left = deadline.saturating_duration_since(Instant::now());
            let report = self
                .runtime
                .block_on(tokio::time::timeout(left, s.delivery));
            let Ok(Ok(Err((e, _)))) = report else {
                continue;
            };
            if !is_too_large(&e) {
                continue;
            }
            let input = format!("{}/{}@{}", s.tp.0, s.tp.1, s.offset);
            let then = if s.last_resort {
                PublishThen::Stop
            } else {
                PublishThen::ReplaceBounded
            };
            PublishFailed {
                error: &e,
                topic: &s.topic,
                input: &input,
                then,
            }
            .emit(&self.metrics);
            if s.last_resort {
                return Err(PublishFailure::stop(s.role.as_str(), s.topic, input, e));
            }
            self.refused
                .entry((s.tp, s.offset))
                .or_default()
                .insert(s.role);
        }
        Ok(())
    }

    /// Enqueues one output of `record`: its bounded stand-in when the
    /// broker refused it in an aborted transaction. `replaced`: `out` is
    /// already a stand-in's audit row.
    #[allow(clippy::result_large_err)]
    fn enqueue_output(
        &self,
        out: Output,
        record: &Pending,
        replaced: bool,
    ) -> Result<Enqueued, (Output, KafkaError)> {
        // Almost always empty: no key is built for the lookup then.
        let refused = !self.refused.is_empty()
            && self
                .refused
                .get(&(record.tp.clone(), record.offset))
                .is_some_and(|roles| roles.contains(&out.role));
        if refused {
            enqueue_stand_in(&self.producer, &out, record, self.queue_wait())
        } else {
            enqueue_or_replace(&self.producer, out, record, replaced, self.queue_wait())
        }
    }
}

impl Delivery for ExactlyOnce {
    fn capacity(&mut self, consumer: &Consumer, batch_max: usize) -> Result<Room, WorkerError> {
        if self.txn.due(self.commit_max, self.commit_interval) {
            // An aborted transaction's records are read again (rewound).
            self.commit(consumer)?;
        }
        self.metrics.set_in_flight(self.txn.records, self.txn.bytes);
        // Not full (or it was just committed): at least one record fits.
        Ok(Room {
            records: batch_max.min(
                self.commit_max
                    .records
                    .saturating_sub(self.txn.records)
                    .max(1),
            ),
            bytes: self.commit_max.bytes.saturating_sub(self.txn.bytes).max(1),
        })
    }

    fn publish(
        &mut self,
        consumer: &Consumer,
        mut record: Pending,
        rest: &[(TopicPartition, i64)],
    ) -> Result<Flow, WorkerError> {
        if !self.txn.is_open() {
            self.producer
                .begin_transaction()
                .map_err(WorkerError::transaction)?;
            self.txn.opened(Instant::now());
            if let Some(c) = self.chains.as_mut() {
                c.checkpoint();
            }
        }
        let mut failed = None;
        let mut hash = None;
        // Set once the terminal record is replaced by its stand-in: the
        // audit row to publish instead of the record's own.
        let mut agreeing: Option<Output> = None;
        let mut terminal_replaced = false;
        for out in std::mem::take(&mut record.outputs) {
            let (out, replaced) = match agreeing.take() {
                Some(row) if out.is_audit_row() => (row, true),
                other => {
                    agreeing = other;
                    (out, false)
                }
            };
            match self.enqueue_output(out, &record, replaced) {
                Ok(mut sent) => {
                    terminal_replaced |= sent.audit.is_some();
                    agreeing = agreeing.or(sent.audit.take());
                    self.txn.output(sent.out.role);
                    hash = hash.or(sent.audit_hash);
                    self.sent.push(Sent {
                        tp: record.tp.clone(),
                        offset: record.offset,
                        role: sent.out.role,
                        topic: sent.out.topic,
                        last_resort: sent.stand_in,
                        delivery: sent.delivery,
                    });
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.txn.record(
            &record.tp,
            record.offset,
            record.input_ts_ms,
            record.input_bytes,
        );
        if let Some(v) = record.verdict {
            self.txn.verdicts.push(if terminal_replaced {
                Verdict::STAND_IN
            } else {
                v
            });
        }
        self.txn.answers.extend(record.answer.take());
        let hash = hash.filter(|_| failed.is_none());
        let due = chain_row(
            &mut self.chains,
            consumer,
            &self.metrics,
            &record.tp,
            record.offset,
            hash,
            // Written in the order recorded: one transaction, no re-send.
            None,
        )?;
        if let Some(seal) = due {
            match enqueue(&self.producer, &seal.output, self.queue_wait()) {
                Ok(delivery) => {
                    self.txn.seals += 1;
                    self.sent.push(Sent {
                        tp: record.tp.clone(),
                        offset: seal.last_offset,
                        role: OutputRole::Audit,
                        topic: seal.output.topic,
                        last_resort: true,
                        delivery,
                    });
                }
                Err(e) => failed = Some((seal.output, e)),
            }
        }
        // A full transaction is committed next: seal it now, so the seals
        // leave in the producer batches of its last rows rather than
        // `linger.ms` later, while the commit waits for them.
        if failed.is_none() && self.txn.full(self.commit_max) {
            failed = self.seal_all().err().map(|b| *b);
        }
        let Some((out, e)) = failed else {
            return Ok(Flow::Next);
        };
        if gave_up_waiting(&e) {
            self.abandoned = true;
            return Ok(Flow::Stopped);
        }
        PublishFailed {
            error: &e,
            topic: &out.topic,
            input: &record.input(),
            then: PublishThen::AbortTransaction {
                records: self.txn.records,
            },
        }
        .emit(&self.metrics);
        let first = self.txn.rewind_positions(rest);
        let seals = self.txn.seals;
        let sent = std::mem::take(&mut self.sent);
        self.abort_and_rewind(consumer, first, sent, seals, None)?;
        Ok(Flow::Rewound)
    }

    fn on_revoke(
        &mut self,
        consumer: &Consumer,
        revoked: &[TopicPartition],
        _lost: bool,
    ) -> Result<(), WorkerError> {
        if self.finishing.is_some() {
            return Ok(());
        }
        // An aborted transaction's records go to the partitions' next owner.
        let result = self.commit(consumer).map(|_| ());
        if let Some(c) = self.chains.as_mut() {
            c.forget(revoked);
        }
        self.refused.retain(|(tp, _), _| !revoked.contains(tp));
        result
    }

    fn finish(
        &mut self,
        consumer: &Consumer,
        deadline: Instant,
        failed: bool,
    ) -> Result<Unfinished, WorkerError> {
        self.finishing = Some(deadline);
        let records = self.txn.records;
        if !failed && !self.abandoned {
            let not_committed = Unfinished {
                records,
                commit_failed: true,
                ..Unfinished::default()
            };
            return match self.commit(consumer) {
                Ok(TxnEnd::NoneOpen | TxnEnd::Committed) => Ok(Unfinished::default()),
                Ok(TxnEnd::Aborted) => Ok(not_committed),
                // Out of time to abort as well: the coordinator aborts the
                // transaction when it times out, or when the next producer
                // with this transactional id starts.
                Err(WorkerError::Transaction { source, .. }) if !txn_is_fatal(&source) => {
                    Ok(not_committed)
                }
                Err(e) => Err(e),
            };
        }
        if self.txn.is_open() {
            // Not aborted in time: the coordinator aborts it when it times
            // out, or when the next producer with this transactional id starts.
            let aborted = self.call_until_done(TxnCall::Abort, Instant::now(), |t| {
                self.producer.abort_transaction(t)
            });
            if aborted.is_ok() {
                self.aborted += 1;
                TransactionAborted {
                    partitions: self.txn.first.len(),
                    cause: None,
                    at_stop: true,
                }
                .emit(&self.metrics);
            }
            self.txn = Txn::default();
            self.sent.clear();
            if let Some(c) = self.chains.as_mut() {
                c.rollback();
            }
        }
        Ok(Unfinished {
            records,
            commit_failed: self.abandoned,
            ..Unfinished::default()
        })
    }

    fn transactions(&self) -> (u64, u64) {
        (self.committed, self.aborted)
    }
}

/// Waits until the producer has no undelivered message, so that
/// `commit_transaction`'s own flush finds nothing to do: rust-rdkafka's flush
/// polls the event queue in 100 ms steps while the FutureProducer's thread
/// serves the same queue, and measured, that made every commit take ~100 ms.
/// Deliveries that make no progress for `stall` ([`delivery_stall`]: a partition the
/// transaction could not add, a broker gone), or that are not all in by
/// `until`, fail the commit, which aborts and rewinds rather than waiting
/// out the transaction timeout.
fn wait_for_deliveries(
    producer: &FutureProducer,
    until: Option<Instant>,
    stall: Duration,
) -> Result<(), KafkaError> {
    let mut last = producer.in_flight_count();
    let mut progress = Instant::now();
    while last > 0 {
        std::thread::sleep(Duration::from_millis(1));
        let now = producer.in_flight_count();
        if now < last {
            progress = Instant::now();
        } else if progress.elapsed() >= stall || until.is_some_and(|u| Instant::now() >= u) {
            return Err(KafkaError::Flush(RDKafkaErrorCode::OperationTimedOut));
        }
        last = now;
    }
    Ok(())
}

fn txn_is_fatal(e: &KafkaError) -> bool {
    match e {
        KafkaError::Transaction(t) => t.is_fatal() || !t.txn_requires_abort() && !t.is_retriable(),
        other => classify(other) == ErrorClass::Fatal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        ("answers".to_string(), p)
    }

    #[test]
    fn commits_the_next_offset_of_every_partition_in_the_transaction() {
        let mut t = Txn::default();
        assert!(!t.is_open());
        t.opened(Instant::now());
        for o in 5..8 {
            t.record(&tp(0), o, Some(1), 0);
        }
        t.record(&tp(1), 3, None, 0);
        assert_eq!(t.commit_positions(), [(tp(0), 8), (tp(1), 4)]);
        let records = |n| Room {
            records: n,
            bytes: usize::MAX,
        };
        assert!(
            t.due(records(4), Duration::from_secs(3600)),
            "4 records reached"
        );
        assert!(!t.due(records(5), Duration::from_secs(3600)));
        assert_eq!(t.input_ts_ms, [1, 1, 1]);
    }

    #[test]
    fn a_failed_rewind_stops_the_worker_unless_the_partition_was_revoked() {
        let refused = || KafkaError::Seek("Local: Timed out".to_string());
        let rewind = |owned| rewind_failed(owned, "answers".into(), 2, 40, refused());
        assert!(rewind(Ok(false)).is_ok(), "revoked: the new owner rereads");
        for owned in [Ok(true), Err(KafkaError::Canceled)] {
            let Err(e) = rewind(owned) else {
                panic!("a partition still read past its aborted records")
            };
            assert!(matches!(
                e,
                WorkerError::Rewind {
                    partition: 2,
                    offset: 40,
                    ..
                }
            ));
            assert!(
                e.is_retriable(),
                "a restart rereads from the committed offset"
            );
            let said = e.to_string();
            assert!(said.contains("answers/2 to offset 40"), "{said}");
        }
    }

    #[test]
    fn abort_rewinds_to_first_offsets_and_to_the_unsent_rest_of_the_batch() {
        let mut t = Txn::default();
        t.opened(Instant::now());
        t.record(&tp(0), 5, None, 0);
        t.record(&tp(0), 6, None, 0);
        let rest = [(tp(0), 7), (tp(2), 10), (tp(2), 11)];
        let got = t.rewind_positions(&rest);
        assert_eq!(got.len(), 2);
        assert_eq!(got[&tp(0)], 5, "first offset of the transaction wins");
        assert_eq!(got[&tp(2)], 10, "fetched but never sent");
    }

    /// An exactly-once delivery on a fresh transactional producer with a
    /// transaction open that holds input record 0 of partition 0 (its
    /// outputs enqueued), each transaction call bounded by `call_timeout`.
    fn one_record_open(
        config: &Arc<crate::config::Config>,
        bs: &str,
        metrics: Arc<Metrics>,
        runtime: tokio::runtime::Handle,
        call_timeout: Duration,
    ) -> (ExactlyOnce, Consumer) {
        use crate::kafka::delivery::testing;
        let producer = testing::producer(config, bs);
        producer.init_transactions(TXN_TIMEOUT).unwrap();
        let consumer = testing::consumer(config, bs, &metrics);
        let mut eo = ExactlyOnce::new(
            producer,
            runtime,
            metrics,
            Commits {
                interval: Duration::from_secs(3600),
                max: Room {
                    records: 1000,
                    bytes: 64 << 20,
                },
                stall: Duration::from_secs(35),
                call_timeout,
                open_for: Duration::from_secs(120),
            },
            None,
            CancellationToken::new(),
        );
        let record = testing::record(config, &tp(0));
        assert_eq!(eo.publish(&consumer, record, &[]).unwrap(), Flow::Next);
        (eo, consumer)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_finish_closes_the_transaction_and_the_closing_revocation_settles_nothing() {
        use crate::kafka::delivery::testing;
        let (_broker, bs, config, metrics) = testing::cluster(|raw| {
            raw.kafka.guarantee = Some(crate::config::Guarantee::ExactlyOnce);
            raw.kafka.transactional_id = Some("finish-txn".into());
        });
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let (mut eo, consumer) = one_record_open(&config, &bs, metrics, runtime, TXN_TIMEOUT);
            assert!(eo.txn.is_open());
            eo.finish(&consumer, Instant::now() + TXN_TIMEOUT, true)
                .unwrap();
            assert!(!eo.txn.is_open(), "the aborted transaction is closed");
            assert_eq!(eo.transactions(), (0, 1), "the open transaction aborted");
            // Closing the consumer serves a revocation after finish.
            eo.on_revoke(&consumer, &[tp(0)], false).unwrap();
            assert_eq!(eo.transactions(), (0, 1), "nothing committed after finish");
        })
        .await
        .unwrap();
    }

    /// Commits a transaction of one record while the brokers answer every
    /// request after 1.5 s and a transaction call gives up after 0.3 s,
    /// until a call has timed out; `abortable`: the transaction cannot add
    /// its partitions, so the commit aborts it. How the commit ended, the
    /// transactions committed and aborted, and the calls made again.
    async fn commit_on_slow_brokers(id: &str, abortable: bool) -> (TxnEnd, (u64, u64), f64) {
        use crate::kafka::delivery::testing;
        use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
        let (broker, bs, config, metrics) = testing::cluster(|raw| {
            raw.kafka.guarantee = Some(crate::config::Guarantee::ExactlyOnce);
            raw.kafka.transactional_id = Some(id.into());
        });
        let cluster = broker.cluster();
        if abortable {
            cluster.request_errors(
                RDKafkaApiKey::AddPartitionsToTxn,
                &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED],
            );
        }
        let runtime = tokio::runtime::Handle::current();
        let m = metrics.clone();
        let (eo, consumer) = tokio::task::spawn_blocking(move || {
            let (eo, consumer) =
                one_record_open(&config, &bs, m, runtime, Duration::from_millis(300));
            let _ = eo.producer.flush(Duration::from_secs(10));
            (eo, consumer)
        })
        .await
        .unwrap();
        cluster
            .broker_round_trip_time(1, Duration::from_millis(1500))
            .unwrap();
        let commit = tokio::task::spawn_blocking(move || {
            let mut eo = eo;
            let ended = eo.commit(&consumer).unwrap();
            (ended, eo.transactions())
        });
        let timeouts = || {
            metrics
                .encode()
                .lines()
                .find_map(|l| {
                    l.strip_prefix(r#"groundgate_kafka_client_errors_total{class="timeout"} "#)
                })
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while timeouts() < 1.0 && !commit.is_finished() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cluster.broker_round_trip_time(1, Duration::ZERO).unwrap();
        let (ended, transactions) = commit.await.unwrap();
        (ended, transactions, timeouts())
    }

    /// A commit that times out is made again, and commits once the brokers
    /// answer in time: aborting instead would throw away a transaction the
    /// brokers may still be committing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transaction_call_that_times_out_is_made_again_until_it_commits() {
        let (ended, transactions, again) = commit_on_slow_brokers("slow-commit", false).await;
        assert_eq!(ended, TxnEnd::Committed);
        assert_eq!(transactions, (1, 0), "committed, none aborted");
        assert!(again >= 1.0, "a call timed out and was made again");
    }

    /// An abort that times out is made again too, rather than stopping the
    /// worker with the transaction still open.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abort_that_times_out_is_made_again_until_it_aborts() {
        let (ended, transactions, again) = commit_on_slow_brokers("slow-abort", true).await;
        assert_eq!(ended, TxnEnd::Aborted);
        assert_eq!(transactions, (0, 1), "aborted");
        assert!(again >= 1.0, "the abort timed out and was made again");
    }

    #[test]
    fn a_transaction_is_full_at_its_input_bytes() {
        let mut t = Txn::default();
        t.opened(Instant::now());
        let max = Room {
            records: 1000,
            bytes: 1 << 20,
        };
        t.record(&tp(0), 0, None, 600_000);
        assert!(!t.due(max, Duration::from_secs(3600)));
        t.record(&tp(0), 1, None, 600_000);
        assert!(t.full(max));
        assert!(t.due(max, Duration::from_secs(3600)), "2 records, 1.2 MB");
    }

    #[test]
    fn outputs_are_tallied_by_role_for_the_commit() {
        let mut t = Txn::default();
        t.output(OutputRole::Final);
        t.output(OutputRole::Audit);
        t.output(OutputRole::DeadLetter);
        t.output(OutputRole::Audit);
        assert_eq!(t.published, [1, 0, 2, 1]);
        assert!(
            !t.due(
                Room {
                    records: 1,
                    bytes: 1
                },
                Duration::ZERO
            ),
            "a closed transaction is never due"
        );
    }
}
