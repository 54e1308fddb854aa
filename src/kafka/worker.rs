//! The stream worker: consume an answer, run [`crate::core::process()`], publish
//! the terminal record and the audit row, and only then let the input offset
//! be committed.
//!
//! Threads. The consumer, the pure processing step and the enqueueing of
//! outputs run on one dedicated blocking thread (`consume_loop`): librdkafka's
//! poll, offset store, synchronous commits, rebalance callbacks and the
//! transaction calls all block, and `process` is CPU work (≈10–30 µs for a
//! few KB, linear up to the 1 MiB record cap), so none of it may sit on the
//! async runtime. The runtime only awaits delivery reports (`settle`) and
//! serves HTTP.
//!
//! At-least-once. Every record's outputs are enqueued on an idempotent
//! `acks=all` producer; a task awaits both delivery reports and sends an ack
//! back to the consumer thread, which marks the offset done in an
//! [`OffsetTracker`] and stores the highest contiguous done offset per
//! partition; librdkafka's auto-commit commits only stored offsets, and
//! revocation/shutdown commit synchronously. A publish failure is retried a
//! bounded number of times when retriable; otherwise the worker stops with the
//! offset uncommitted, so a restart re-processes the record.
//!
//! Exactly-once. A transactional producer: outputs and the consumer's
//! positions (`send_offsets_to_transaction` with the group metadata) are
//! committed together every `commit_interval` or `commit_max_records`. An
//! abortable error aborts the transaction and seeks back to the first offset
//! of the transaction in each partition; a fatal one (fencing) stops the worker.
//!
//! Headers on every output: `groundgate.input.topic`,
//! `groundgate.input.partition`, `groundgate.input.offset`. Dead letters keep
//! the original key, value (or, when too large, the core's bounded summary)
//! and headers, and add `groundgate.error.kind`, `groundgate.error.detail` and
//! `groundgate.input.timestamp` (ms, when known). An incoming `groundgate.*`
//! header is renamed `original.groundgate.*`: ours are the only ones.
//!
//! Nothing is logged per record at info level.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Header, Headers, OwnedHeaders};
use rdkafka::producer::{FutureRecord, Producer};
use rdkafka::statistics::Statistics;
use rdkafka::util::Timeout;
use rdkafka::{ClientContext, Message, Offset, TopicPartitionList};
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use super::client::{self, FutureProducer};
use super::error::classify;
use super::offsets::{OffsetTracker, TopicPartition};
use crate::config::{Config, Guarantee};
use crate::core::{DeadLetterValue, Outcome, OutcomeKind, RecordMeta, Terminal, process};
use crate::http::Health;
use crate::metrics::{ErrorClass, Metrics, RebalanceKind, TopicRole};

/// Header names, part of the output contract.
pub const H_INPUT_TOPIC: &str = "groundgate.input.topic";
pub const H_INPUT_PARTITION: &str = "groundgate.input.partition";
pub const H_INPUT_OFFSET: &str = "groundgate.input.offset";
pub const H_INPUT_TIMESTAMP: &str = "groundgate.input.timestamp";
pub const H_ERROR_KIND: &str = "groundgate.error.kind";
pub const H_ERROR_DETAIL: &str = "groundgate.error.detail";

/// Re-sends of one output after a retriable delivery failure, on top of
/// librdkafka's own retries, before the worker gives up and stops.
const MAX_RESENDS: u32 = 5;
/// Timeout of the blocking transaction and commit calls.
const TXN_TIMEOUT: Duration = Duration::from_secs(30);
/// Exactly-once: outputs of a transaction that stop being delivered for this
/// long make the commit fail (abort and rewind).
const DELIVERY_STALL: Duration = Duration::from_secs(5);
/// How long one poll waits for a record.
const POLL: Duration = Duration::from_millis(100);
/// Records taken from one poll round; bounds the work between offset and
/// transaction checks.
const BATCH_MAX: usize = 256;
/// Below this many records a batch is validated on the consume thread alone
/// (waking the validation pool would cost more than it saves).
const PARALLEL_MIN: usize = 8;
/// Minimum spacing of repeated client-error logs.
const ERROR_LOG_EVERY: Duration = Duration::from_secs(10);

/// What a worker did, returned when it stops.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    pub records: u64,
    pub accepted: u64,
    pub rejected: u64,
    pub retry: u64,
    pub dead_letter: u64,
    pub transactions_committed: u64,
    pub transactions_aborted: u64,
}

impl WorkerReport {
    fn count(&mut self, kind: OutcomeKind) {
        self.records += 1;
        match kind {
            OutcomeKind::Accepted => self.accepted += 1,
            OutcomeKind::Rejected => self.rejected += 1,
            OutcomeKind::Retry => self.retry += 1,
            OutcomeKind::DeadLetter => self.dead_letter += 1,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("cannot create the Kafka {which}: {source}")]
    Client {
        which: &'static str,
        source: KafkaError,
    },
    #[error("cannot subscribe to topic {topic}: {source}")]
    Subscribe { topic: String, source: KafkaError },
    #[error(
        "exactly-once needs brokers that support transactions (Apache Kafka 2.5 or later, transaction state log available), and initialising the transactional producer failed: {0}. Use --guarantee at-least-once with this cluster"
    )]
    TransactionsUnsupported(KafkaError),
    #[error(transparent)]
    Publish(Box<PublishFailure>),
    #[error(
        "transaction failed fatally (another worker with the same transactional.id may have fenced this one): {0}"
    )]
    Transaction(KafkaError),
    #[error("the worker thread stopped unexpectedly: {0}")]
    Thread(String),
    #[error(
        "this worker's partitions were lost (session timed out: broker restarted or unreachable, or the group state is gone) and none were assigned again within {0:?} (kafka.unassigned_timeout_ms); stopping so that a restart joins the group afresh"
    )]
    Unassigned(Duration),
}

/// An output that could not be published; its input offset stays uncommitted.
#[derive(Debug, thiserror::Error)]
#[error(
    "publishing to {topic} ({role}) failed ({class}): {source}; the input record {input} was not committed and will be processed again after a restart"
)]
pub struct PublishFailure {
    pub role: &'static str,
    pub topic: String,
    pub input: String,
    pub class: &'static str,
    pub source: KafkaError,
}

impl WorkerError {
    /// Whether restarting the worker as-is may succeed (broker-side trouble)
    /// rather than needing an operator (configuration, authorization, fencing).
    pub fn is_retriable(&self) -> bool {
        match self {
            WorkerError::Publish(p) => {
                matches!(
                    classify(&p.source),
                    ErrorClass::Retriable | ErrorClass::Timeout
                )
            }
            WorkerError::Thread(_) | WorkerError::Unassigned(_) => true,
            _ => false,
        }
    }
}

fn now_millis() -> i64 {
    crate::clock::now_nanos() / 1_000_000
}

/// One output message, owned so it can be re-sent.
#[derive(Clone)]
struct Output {
    role: TopicRole,
    topic: String,
    key: Option<Vec<u8>>,
    payload: Option<Vec<u8>>,
    headers: OwnedHeaders,
}

impl Output {
    fn record(&self) -> FutureRecord<'_, [u8], [u8]> {
        let mut r = FutureRecord::to(&self.topic).headers(self.headers.clone());
        if let Some(k) = &self.key {
            r = r.key(k.as_slice());
        }
        if let Some(p) = &self.payload {
            r = r.payload(p.as_slice());
        }
        r
    }
}

/// A record's delivery outcome, sent from the async side to the consumer thread.
struct Ack {
    tp: TopicPartition,
    offset: i64,
    input_ts_ms: Option<i64>,
    result: Result<(), WorkerError>,
}

/// State of an open transaction (exactly-once).
#[derive(Default)]
struct Txn {
    open: bool,
    started: Option<Instant>,
    records: usize,
    /// Next offset to consume per partition, sent with the transaction.
    next: HashMap<TopicPartition, i64>,
    /// First offset of the transaction per partition: where an abort rewinds to.
    first: HashMap<TopicPartition, i64>,
    published: [u64; 4],
    input_ts_ms: Vec<i64>,
}

/// State shared by the consume loop and the rebalance callbacks (both run on
/// the consumer thread; the mutex is never held across `poll`).
struct LoopState {
    tracker: OffsetTracker,
    acks: Receiver<Ack>,
    fatal: Option<WorkerError>,
    txn: Txn,
    report: WorkerReport,
}

struct GateContext {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    input_topic: String,
    guarantee: Guarantee,
    drain_deadline: Duration,
    lag: bool,
    step: Step,
    /// Bumped on every revocation, so a batch polled across one can drop
    /// records of partitions it no longer owns.
    revocations: AtomicU64,
    producer: FutureProducer,
    state: Mutex<LoopState>,
    last_error_log: Mutex<Option<Instant>>,
    /// When the assignment was lost (not handed over in a rebalance); cleared
    /// by the next assignment. Bounded by `unassigned_timeout`.
    lost_at: Mutex<Option<Instant>>,
    unassigned_timeout: Duration,
}

impl GateContext {
    fn state(&self) -> MutexGuard<'_, LoopState> {
        // A panic while holding the lock would already have stopped the worker.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl ClientContext for GateContext {
    fn stats(&self, stats: Statistics) {
        if !self.lag {
            return;
        }
        let lags: Vec<(String, i32, i64)> = stats
            .topics
            .get(&self.input_topic)
            .map(|t| {
                t.partitions
                    .values()
                    .filter(|p| p.partition >= 0 && p.consumer_lag >= 0)
                    .map(|p| (self.input_topic.clone(), p.partition, p.consumer_lag))
                    .collect()
            })
            .unwrap_or_default();
        self.metrics.set_consumer_lag(&lags);
    }

    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        client::log(level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        // Brokers being away is retried by librdkafka forever; say so, but not
        // thousands of times a minute.
        let mut last = self
            .last_error_log
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if last.is_none_or(|t| t.elapsed() >= ERROR_LOG_EVERY) {
            *last = Some(Instant::now());
            warn!(error = %error, reason, "Kafka client error (retrying; check that the brokers are reachable)");
        }
    }
}

impl ConsumerContext for GateContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Rebalance::Revoke(tpl) = rebalance else {
            return;
        };
        self.revocations.fetch_add(1, Ordering::AcqRel);
        self.metrics.record_rebalance(RebalanceKind::Revoke);
        let revoked: Vec<TopicPartition> = tpl
            .elements()
            .iter()
            .map(|e| (e.topic().to_string(), e.partition()))
            .collect();
        let lost = consumer.assignment_lost();
        info!(partitions = revoked.len(), lost, "partitions revoked");
        if lost {
            // Not handed over: the group moved on without this member. Not
            // ready until partitions come back (see `unassigned_timeout`).
            self.health.set_ready(false);
            *self.lost_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
        let mut st = self.state();
        match self.guarantee {
            Guarantee::AtLeastOnce => {
                if !lost {
                    let deadline = Instant::now() + self.drain_deadline;
                    while revoked.iter().any(|tp| st.tracker.in_flight_for(tp) > 0)
                        && Instant::now() < deadline
                    {
                        match st.acks.recv_timeout(Duration::from_millis(20)) {
                            Ok(ack) => apply_ack(consumer, &mut st, &self.metrics, ack),
                            Err(RecvTimeoutError::Timeout) => {}
                            Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                    commit_stored(consumer);
                }
                for tp in &revoked {
                    st.tracker.forget(tp);
                }
            }
            Guarantee::ExactlyOnce => {
                if let Err(e) = commit_txn(consumer, &self.producer, &mut st, &self.metrics) {
                    st.fatal.get_or_insert(e);
                }
            }
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(tpl) => {
                self.metrics.record_rebalance(RebalanceKind::Assign);
                info!(partitions = tpl.count(), "partitions assigned");
                *self.lost_at.lock().unwrap_or_else(|p| p.into_inner()) = None;
            }
            Rebalance::Revoke(_) => {}
            Rebalance::Error(e) => warn!(error = %e, "rebalance error"),
        }
        let assigned = consumer.assignment().map(|a| a.count()).unwrap_or(0);
        self.metrics.set_assigned_partitions(assigned);
        // The group has settled: with or without partitions, this worker is
        // doing what the group asked of it; unless it lost its partitions
        // and has not been given any back yet.
        let lost = self
            .lost_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        self.health.set_ready(!lost);
    }
}

/// Commits stored offsets synchronously; "nothing to commit" is not an error.
fn commit_stored(consumer: &BaseConsumer<GateContext>) {
    match consumer.commit_consumer_state(CommitMode::Sync) {
        Ok(()) => {}
        Err(e) if e.rdkafka_error_code() == Some(RDKafkaErrorCode::NoOffset) => {}
        Err(e) => {
            warn!(error = %e, "offset commit failed; outputs already published will be re-published after a restart (at-least-once)")
        }
    }
}

fn apply_ack(
    consumer: &BaseConsumer<GateContext>,
    st: &mut LoopState,
    metrics: &Metrics,
    ack: Ack,
) {
    match ack.result {
        Ok(()) => {
            if let Some(ts) = ack.input_ts_ms {
                let ms = (now_millis() - ts).max(0) as u64;
                metrics.observe_end_to_end(Duration::from_millis(ms));
            }
            if let Some(done) = st.tracker.complete(&ack.tp, ack.offset) {
                // `store_offset` stores done + 1: the next record to read.
                if let Err(e) = consumer.store_offset(&ack.tp.0, ack.tp.1, done) {
                    debug!(error = %e, partition = ack.tp.1, "offset store skipped (partition no longer assigned)");
                }
            }
        }
        Err(e) => {
            error!(error = %e, "publish failed; stopping the worker");
            st.fatal.get_or_insert(e);
        }
    }
}

/// Commits the open transaction with the consumer positions; on an abortable
/// error aborts it and rewinds the consumer to the transaction's first offsets.
fn commit_txn(
    consumer: &BaseConsumer<GateContext>,
    producer: &FutureProducer,
    st: &mut LoopState,
    metrics: &Metrics,
) -> Result<(), WorkerError> {
    if !st.txn.open {
        return Ok(());
    }
    let txn = std::mem::take(&mut st.txn);
    let mut tpl = TopicPartitionList::new();
    for ((topic, p), next) in &txn.next {
        if let Err(e) = tpl.add_partition_offset(topic, *p, Offset::Offset(*next)) {
            return Err(WorkerError::Transaction(e));
        }
    }
    let result = match consumer.group_metadata() {
        // Offsets first: in an abortable state this fails at once.
        Some(cgm) => producer
            .send_offsets_to_transaction(&tpl, &cgm, TXN_TIMEOUT)
            .and_then(|()| wait_for_deliveries(producer))
            .and_then(|()| producer.commit_transaction(TXN_TIMEOUT)),
        // Only before the first assignment; there is nothing to commit then.
        None => Err(KafkaError::MessageProduction(RDKafkaErrorCode::State)),
    };
    match result {
        Ok(()) => {
            metrics.record_transaction_committed();
            st.report.transactions_committed += 1;
            for (role, n) in [
                TopicRole::Final,
                TopicRole::Retry,
                TopicRole::Audit,
                TopicRole::DeadLetter,
            ]
            .into_iter()
            .zip(txn.published)
            {
                for _ in 0..n {
                    metrics.record_published(role);
                }
            }
            let now = now_millis();
            for ts in txn.input_ts_ms {
                metrics.observe_end_to_end(Duration::from_millis((now - ts).max(0) as u64));
            }
            debug!(records = txn.records, "transaction committed");
            Ok(())
        }
        Err(e) if txn_is_fatal(&e) => Err(WorkerError::Transaction(e)),
        Err(e) => {
            warn!(error = %e, records = txn.records, "transaction failed; aborting and rewinding to the last committed offsets");
            abort_and_rewind(consumer, producer, st, metrics, txn.first)
        }
    }
}

/// Waits until the producer has no undelivered message, so that
/// `commit_transaction`'s own flush finds nothing to do: rust-rdkafka's flush
/// polls the event queue in 100 ms steps while the FutureProducer's thread
/// serves the same queue, and measured, that made every commit take ~100 ms.
/// Deliveries that make no progress for [`DELIVERY_STALL`] (a partition the
/// transaction could not add, a broker gone) fail the commit, which aborts
/// and rewinds rather than waiting out the transaction timeout.
fn wait_for_deliveries(producer: &FutureProducer) -> Result<(), KafkaError> {
    let mut last = producer.in_flight_count();
    let mut progress = Instant::now();
    while last > 0 {
        std::thread::sleep(Duration::from_millis(1));
        let now = producer.in_flight_count();
        if now < last {
            progress = Instant::now();
        } else if progress.elapsed() >= DELIVERY_STALL {
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

fn abort_and_rewind(
    consumer: &BaseConsumer<GateContext>,
    producer: &FutureProducer,
    st: &mut LoopState,
    metrics: &Metrics,
    first: HashMap<TopicPartition, i64>,
) -> Result<(), WorkerError> {
    producer
        .abort_transaction(TXN_TIMEOUT)
        .map_err(WorkerError::Transaction)?;
    metrics.record_transaction_aborted();
    st.report.transactions_aborted += 1;
    debug!(partitions = first.len(), "transaction aborted; rewinding");
    for ((topic, p), offset) in first {
        if let Err(e) = consumer.seek(&topic, p, Offset::Offset(offset), TXN_TIMEOUT) {
            // The partition may have been revoked meanwhile: its new owner
            // starts from the committed offset, which is what we want.
            debug!(error = %e, partition = p, "rewind skipped");
        }
    }
    Ok(())
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
    first: Vec<(Output, rdkafka::producer::DeliveryFuture)>,
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
            match outcome {
                Ok(()) => {
                    metrics.record_published(out.role);
                    continue 'outputs;
                }
                // Refused as too large: re-sending cannot help. Publish the
                // core's bounded stand-in once instead (never retried forever).
                Err(e) if is_too_large(&e) && !replaced => {
                    metrics.record_publish_error(classify(&e));
                    warn!(error = %e, topic = %out.topic, input = %input, "output refused as too large; publishing its bounded too_large dead letter instead");
                    out = oversize.replacement(&out, &tp, offset);
                    replaced = true;
                    outcome = producer
                        .send(out.record(), Timeout::After(Duration::from_secs(30)))
                        .await
                        .map(|_| ())
                        .map_err(|(e, _)| e);
                }
                Err(e) => {
                    let class = classify(&e);
                    metrics.record_publish_error(class);
                    let retriable = matches!(class, ErrorClass::Retriable | ErrorClass::Timeout);
                    if !retriable || resends >= MAX_RESENDS {
                        result = Err(WorkerError::Publish(Box::new(PublishFailure {
                            role: out.role.as_str(),
                            topic: out.topic.clone(),
                            input: input.clone(),
                            class: class.as_str(),
                            source: e,
                        })));
                        break 'outputs;
                    }
                    resends += 1;
                    warn!(error = %e, topic = %out.topic, resends, "retriable publish failure; re-sending");
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(resends))).await;
                    outcome = producer
                        .send(out.record(), Timeout::After(Duration::from_secs(30)))
                        .await
                        .map(|_| ())
                        .map_err(|(e, _)| e);
                }
            }
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

fn is_too_large(e: &KafkaError) -> bool {
    e.rdkafka_error_code() == Some(RDKafkaErrorCode::MessageSizeTooLarge)
}

/// What it takes to replace an output the producer or broker refused as too
/// large by the core's bounded form ([`crate::core::process::oversize_dead_letter`]).
#[derive(Clone)]
struct Oversize {
    config: Arc<Config>,
    request_id: Option<String>,
}

impl Oversize {
    /// A refused audit row becomes a bounded dead-letter audit row; a refused
    /// terminal record becomes a bounded dead letter. Either way the record
    /// keeps exactly one terminal record and one audit row. Only the input
    /// coordinates are kept from the headers (the original ones may be what
    /// did not fit), and the key is the request id.
    fn replacement(&self, out: &Output, tp: &TopicPartition, offset: i64) -> Output {
        let meta = RecordMeta {
            topic: &tp.0,
            partition: tp.1,
            offset,
        };
        let value_len = out.payload.as_ref().map_or(0, Vec::len);
        let detail = format!(
            "the {} output to {} ({value_len} bytes, key {} bytes) was refused as too large (MSG_SIZE_TOO_LARGE); value, length and SHA-256 here are of that output",
            out.role.as_str(),
            out.topic,
            out.key.as_ref().map_or(0, Vec::len),
        );
        let o = crate::core::process::oversize_dead_letter(
            out.payload.as_deref(),
            &meta,
            crate::clock::now_nanos(),
            &self.config.core,
            self.request_id.as_deref(),
            detail,
        );
        let mut headers = OwnedHeaders::new_with_capacity(6);
        for hd in out.headers.iter() {
            if [
                H_INPUT_TOPIC,
                H_INPUT_PARTITION,
                H_INPUT_OFFSET,
                H_INPUT_TIMESTAMP,
            ]
            .contains(&hd.key)
            {
                headers = headers.insert(Header {
                    key: hd.key,
                    value: hd.value,
                });
            }
        }
        let key = self.request_id.as_ref().map(|r| r.as_bytes().to_vec());
        match (out.role, o.terminal) {
            (TopicRole::Audit, _) => Output {
                role: TopicRole::Audit,
                topic: out.topic.clone(),
                key,
                payload: Some(o.audit),
                headers,
            },
            (_, Terminal::DeadLetter(d)) => Output {
                role: TopicRole::DeadLetter,
                topic: self.config.kafka.topics.dead_letter.clone(),
                key,
                payload: match d.value {
                    DeadLetterValue::Bounded(b) => Some(b),
                    // oversize_dead_letter always bounds; keep the type total.
                    DeadLetterValue::Original => None,
                },
                headers: headers
                    .insert(Header {
                        key: H_ERROR_KIND,
                        value: Some(d.kind.as_str()),
                    })
                    .insert(Header {
                        key: H_ERROR_DETAIL,
                        value: Some(&d.detail),
                    }),
            },
            // oversize_dead_letter always returns a dead letter.
            (_, _) => out.clone(),
        }
    }
}

/// What the worker does with each record between consuming and publishing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Validate with [`crate::core::process()`]: the only mode `run` uses.
    Validate,
    /// Copy the input value to the final and audit topics unvalidated. Exists
    /// only so `groundgate bench` can measure the Kafka plumbing alone, with
    /// the very same clients, offsets handling and transactions.
    Passthrough,
}

/// Runs a worker until `shutdown` is cancelled or a fatal error occurs.
pub async fn run_worker(
    config: Arc<Config>,
    bootstrap: String,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    shutdown: CancellationToken,
) -> Result<WorkerReport, WorkerError> {
    run_worker_with(config, bootstrap, metrics, health, shutdown, Step::Validate).await
}

/// [`run_worker`] with the per-record [`Step`] chosen (benchmarks only).
pub async fn run_worker_with(
    config: Arc<Config>,
    bootstrap: String,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    shutdown: CancellationToken,
    step: Step,
) -> Result<WorkerReport, WorkerError> {
    let k = &config.kafka;
    let producer: FutureProducer = client::producer(k, &bootstrap)
        .create_with_context(client::LogContext::quiet())
        .map_err(|source| WorkerError::Client {
            which: "producer",
            source,
        })?;
    if k.guarantee == Guarantee::ExactlyOnce {
        let p = producer.clone();
        tokio::task::spawn_blocking(move || p.init_transactions(TXN_TIMEOUT))
            .await
            .map_err(|e| WorkerError::Thread(e.to_string()))?
            .map_err(WorkerError::TransactionsUnsupported)?;
    }
    let (ack_tx, ack_rx) = mpsc::channel();
    let stats_ms = config
        .metrics
        .consumer_lag
        .then(|| config.metrics.statistics_interval.as_millis() as u64);
    let ctx = GateContext {
        metrics: metrics.clone(),
        health: health.clone(),
        input_topic: k.topics.input.clone(),
        guarantee: k.guarantee,
        drain_deadline: k.drain_deadline,
        lag: config.metrics.consumer_lag,
        step,
        revocations: AtomicU64::new(0),
        producer: producer.clone(),
        state: Mutex::new(LoopState {
            tracker: OffsetTracker::default(),
            acks: ack_rx,
            fatal: None,
            txn: Txn::default(),
            report: WorkerReport::default(),
        }),
        last_error_log: Mutex::new(None),
        lost_at: Mutex::new(None),
        unassigned_timeout: k.unassigned_timeout,
    };
    let consumer: BaseConsumer<GateContext> = client::consumer(k, &bootstrap, stats_ms)
        .create_with_context(ctx)
        .map_err(|source| WorkerError::Client {
            which: "consumer",
            source,
        })?;
    consumer
        .subscribe(&[&k.topics.input])
        .map_err(|source| WorkerError::Subscribe {
            topic: k.topics.input.clone(),
            source,
        })?;
    info!(
        input = %k.topics.input,
        group = %k.group_id,
        guarantee = %k.guarantee,
        "worker started"
    );
    let runtime = tokio::runtime::Handle::current();
    let result = tokio::task::spawn_blocking(move || {
        let result = consume_loop(
            &consumer, &producer, &config, &metrics, &runtime, ack_tx, &shutdown,
        );
        // Dropping the consumer closes it: it leaves the group (unless it is
        // a static member), so the others get its partitions at the next
        // rebalance instead of after the session timeout.
        drop(consumer);
        info!("left the consumer group");
        result
    })
    .await
    .map_err(|e| WorkerError::Thread(e.to_string()))?;
    health.set_ready(false);
    result
}

fn consume_loop(
    consumer: &BaseConsumer<GateContext>,
    producer: &FutureProducer,
    config: &Arc<Config>,
    metrics: &Arc<Metrics>,
    runtime: &tokio::runtime::Handle,
    ack_tx: Sender<Ack>,
    shutdown: &CancellationToken,
) -> Result<WorkerReport, WorkerError> {
    let k = &config.kafka;
    let ctx = consumer.context();
    let eos = k.guarantee == Guarantee::ExactlyOnce;
    'fetch: loop {
        let room = {
            let mut st = ctx.state();
            while let Ok(ack) = st.acks.try_recv() {
                apply_ack(consumer, &mut st, metrics, ack);
            }
            if st.fatal.is_some() || shutdown.is_cancelled() {
                break;
            }
            let lost_for = ctx
                .lost_at
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .map(|t| t.elapsed());
            if lost_for.is_some_and(|d| d >= ctx.unassigned_timeout) {
                error!(after = ?ctx.unassigned_timeout, "no partitions assigned since they were lost; stopping");
                st.fatal
                    .get_or_insert(WorkerError::Unassigned(ctx.unassigned_timeout));
                break;
            }
            if eos {
                let due = st.txn.open
                    && (st.txn.records >= k.commit_max_records
                        || st
                            .txn
                            .started
                            .is_some_and(|t| t.elapsed() >= k.commit_interval));
                if due && let Err(e) = commit_txn(consumer, producer, &mut st, metrics) {
                    st.fatal.get_or_insert(e);
                    break;
                }
                BATCH_MAX.min(k.commit_max_records.saturating_sub(st.txn.records).max(1))
            } else if st.tracker.in_flight() >= k.max_in_flight {
                // Backpressure: wait for deliveries instead of fetching more.
                match st.acks.recv_timeout(POLL) {
                    Ok(ack) => apply_ack(consumer, &mut st, metrics, ack),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                continue;
            } else {
                BATCH_MAX.min(k.max_in_flight - st.tracker.in_flight())
            }
        };
        let batch = poll_batch(consumer, room);
        if batch.is_empty() {
            continue;
        }
        let outcomes = validate(&batch, config, ctx.step);
        for (i, (msg, outcome)) in batch.iter().zip(outcomes).enumerate() {
            let mut request_id = None;
            let outputs = match outcome {
                Some((outcome, took)) => {
                    metrics.record_outcome(outcome.kind, &outcome.summary, took);
                    ctx.state().report.count(outcome.kind);
                    request_id.clone_from(&outcome.request_id);
                    outputs_for(msg, outcome, config)
                }
                None => passthrough_outputs(msg, config),
            };
            let tp: TopicPartition = (msg.topic().to_string(), msg.partition());
            let offset = msg.offset();
            let input_ts_ms = msg.timestamp().to_millis();
            let oversize = Oversize {
                config: config.clone(),
                request_id,
            };
            if eos {
                let mut st = ctx.state();
                if !st.txn.open {
                    if let Err(e) = producer.begin_transaction() {
                        st.fatal.get_or_insert(WorkerError::Transaction(e));
                        break 'fetch;
                    }
                    st.txn.open = true;
                    st.txn.started = Some(Instant::now());
                }
                let mut failed = None;
                for out in &outputs {
                    let mut role = out.role;
                    let mut sent = enqueue(producer, out);
                    if let Err(e) = &sent
                        && is_too_large(e)
                    {
                        let stand_in = oversize.replacement(out, &tp, offset);
                        role = stand_in.role;
                        sent = enqueue(producer, &stand_in);
                    }
                    if let Err(e) = sent {
                        failed = Some(e);
                        break;
                    }
                    st.txn.published[role_index(role)] += 1;
                }
                st.txn.first.entry(tp.clone()).or_insert(offset);
                st.txn.next.insert(tp, offset + 1);
                st.txn.records += 1;
                if let Some(ts) = input_ts_ms {
                    st.txn.input_ts_ms.push(ts);
                }
                if let Some(e) = failed {
                    warn!(error = %e, records = st.txn.records, "publishing inside the transaction failed; aborting and rewinding to the transaction's first offsets");
                    metrics.record_publish_error(classify(&e));
                    let mut first = std::mem::take(&mut st.txn).first;
                    // The rest of the batch was fetched but never sent: its
                    // partitions rewind too, or those records would be skipped.
                    for m in &batch[i + 1..] {
                        first
                            .entry((m.topic().to_string(), m.partition()))
                            .or_insert(m.offset());
                    }
                    if let Err(e) = abort_and_rewind(consumer, producer, &mut st, metrics, first) {
                        st.fatal.get_or_insert(e);
                        break 'fetch;
                    }
                    continue 'fetch;
                }
                continue;
            }
            let mut futures = Vec::with_capacity(outputs.len());
            let mut enqueue_error = None;
            for mut out in outputs {
                let mut sent = enqueue(producer, &out);
                if let Err(e) = &sent
                    && is_too_large(e)
                {
                    // The producer's own size check refused it (key and
                    // headers beside a bounded value): same stand-in.
                    out = oversize.replacement(&out, &tp, offset);
                    sent = enqueue(producer, &out);
                }
                match sent {
                    Ok(f) => futures.push((out, f)),
                    Err(e) => {
                        enqueue_error = Some((out, e));
                        break;
                    }
                }
            }
            let mut st = ctx.state();
            if let Some((out, e)) = enqueue_error {
                let class = classify(&e);
                metrics.record_publish_error(class);
                st.fatal
                    .get_or_insert(WorkerError::Publish(Box::new(PublishFailure {
                        role: out.role.as_str(),
                        topic: out.topic.clone(),
                        input: format!("{}/{}@{}", tp.0, tp.1, offset),
                        class: class.as_str(),
                        source: e,
                    })));
                break 'fetch;
            }
            st.tracker.start(&tp, offset);
            drop(st);
            runtime.spawn(settle(
                producer.clone(),
                metrics.clone(),
                ack_tx.clone(),
                tp,
                offset,
                input_ts_ms,
                futures,
                oversize,
            ));
        }
    }
    drop(ack_tx);
    finish(consumer, producer, config, metrics)
}

/// Polls up to `max` records: waits for the first, then takes only what is
/// already fetched. If partitions were revoked meanwhile, records of
/// partitions no longer assigned are dropped: their offsets were never
/// stored, so their new owner reads them again.
fn poll_batch(consumer: &BaseConsumer<GateContext>, max: usize) -> Vec<BorrowedMessage<'_>> {
    let ctx = consumer.context();
    let mut batch = Vec::new();
    let mut timeout = POLL;
    let mut revocations = 0;
    while batch.len() < max.max(1) {
        match consumer.poll(timeout) {
            None => break,
            Some(Err(e)) => {
                ctx.error(e, "consumer poll");
                break;
            }
            Some(Ok(m)) => {
                if batch.is_empty() {
                    revocations = ctx.revocations.load(Ordering::Acquire);
                }
                batch.push(m);
                timeout = Duration::ZERO;
            }
        }
    }
    if !batch.is_empty() && ctx.revocations.load(Ordering::Acquire) != revocations {
        let assigned = consumer.assignment().unwrap_or_default();
        batch.retain(|m| assigned.find_partition(m.topic(), m.partition()).is_some());
    }
    batch
}

/// Runs the pure core over a batch, in parallel when it is worth it; output
/// order follows input order. `None` per record in passthrough (bench) mode.
fn validate(
    batch: &[BorrowedMessage<'_>],
    config: &Config,
    step: Step,
) -> Vec<Option<(Outcome, Duration)>> {
    if step == Step::Passthrough {
        return batch.iter().map(|_| None).collect();
    }
    // Borrowed message handles are not Send; their bytes are.
    let inputs: Vec<(Option<&[u8]>, &str, i32, i64)> = batch
        .iter()
        .map(|m| (m.payload(), m.topic(), m.partition(), m.offset()))
        .collect();
    let now = crate::clock::now_nanos();
    let one = |&(payload, topic, partition, offset): &(Option<&[u8]>, &str, i32, i64)| {
        let started = Instant::now();
        let meta = RecordMeta {
            topic,
            partition,
            offset,
        };
        let outcome = process(payload, &meta, now, &config.core);
        Some((outcome, started.elapsed()))
    };
    if inputs.len() >= PARALLEL_MIN {
        inputs.par_iter().map(one).collect()
    } else {
        inputs.iter().map(one).collect()
    }
}

fn role_index(role: TopicRole) -> usize {
    match role {
        TopicRole::Final => 0,
        TopicRole::Retry => 1,
        TopicRole::Audit => 2,
        TopicRole::DeadLetter => 3,
    }
}

/// The single shutdown path: drain in-flight work within the deadline,
/// flush, commit, and report.
fn finish(
    consumer: &BaseConsumer<GateContext>,
    producer: &FutureProducer,
    config: &Config,
    metrics: &Arc<Metrics>,
) -> Result<WorkerReport, WorkerError> {
    let ctx = consumer.context();
    let deadline = Instant::now() + config.kafka.drain_deadline;
    let mut st = ctx.state();
    match config.kafka.guarantee {
        Guarantee::AtLeastOnce => {
            while st.tracker.in_flight() > 0 && Instant::now() < deadline {
                match st.acks.recv_timeout(Duration::from_millis(50)) {
                    Ok(ack) => apply_ack(consumer, &mut st, metrics, ack),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            let abandoned = st.tracker.in_flight();
            if abandoned > 0 {
                warn!(
                    abandoned,
                    "drain deadline reached; unfinished records stay uncommitted and will be processed again"
                );
            }
            commit_stored(consumer);
        }
        Guarantee::ExactlyOnce => {
            if st.fatal.is_none() {
                if let Err(e) = commit_txn(consumer, producer, &mut st, metrics) {
                    st.fatal.get_or_insert(e);
                }
            } else if st.txn.open {
                let _ = producer.abort_transaction(TXN_TIMEOUT);
            }
        }
    }
    let remaining = deadline.saturating_duration_since(Instant::now());
    if let Err(e) = producer.flush(Timeout::After(remaining.max(Duration::from_secs(1)))) {
        warn!(error = %e, "producer flush did not complete");
    }
    let report = st.report.clone();
    let fatal = st.fatal.take();
    drop(st);
    consumer.unsubscribe();
    match fatal {
        Some(e) => Err(e),
        None => {
            info!(records = report.records, "worker stopped cleanly");
            Ok(report)
        }
    }
}

/// Enqueues one output, waiting while the producer queue is full.
fn enqueue(
    producer: &FutureProducer,
    out: &Output,
) -> Result<rdkafka::producer::DeliveryFuture, KafkaError> {
    let mut record = out.record();
    loop {
        match producer.send_result(record) {
            Ok(f) => return Ok(f),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                // Deliveries drain the queue from librdkafka's own threads.
                std::thread::sleep(Duration::from_millis(5));
            }
            Err((e, _)) => return Err(e),
        }
    }
}

fn input_headers(msg: &BorrowedMessage<'_>) -> OwnedHeaders {
    let partition = msg.partition().to_string();
    let offset = msg.offset().to_string();
    OwnedHeaders::new_with_capacity(6)
        .insert(Header {
            key: H_INPUT_TOPIC,
            value: Some(msg.topic()),
        })
        .insert(Header {
            key: H_INPUT_PARTITION,
            value: Some(&partition),
        })
        .insert(Header {
            key: H_INPUT_OFFSET,
            value: Some(&offset),
        })
}

/// Prefix of the headers groundgate writes. Incoming headers with it are
/// renamed with [`RENAMED_PREFIX`] in front, so every output carries exactly
/// one, authoritative, value of each `groundgate.*` header.
pub const OWN_HEADER_PREFIX: &str = "groundgate.";
pub const RENAMED_PREFIX: &str = "original.";

/// A dead letter's headers: the record's own (any `groundgate.*` one renamed
/// `original.groundgate.*`, so a producer cannot spoof ours), then the input
/// coordinates, the error kind and detail, and the input timestamp.
fn dead_letter_headers(
    original: Option<&impl Headers>,
    input: &OwnedHeaders,
    kind: &str,
    detail: &str,
    timestamp_ms: Option<i64>,
) -> OwnedHeaders {
    let mut h = OwnedHeaders::new();
    if let Some(orig) = original {
        for hd in orig.iter() {
            if hd.key.starts_with(OWN_HEADER_PREFIX) {
                h = h.insert(Header {
                    key: &format!("{RENAMED_PREFIX}{}", hd.key),
                    value: hd.value,
                });
            } else {
                h = h.insert(Header {
                    key: hd.key,
                    value: hd.value,
                });
            }
        }
    }
    for hd in input.iter() {
        h = h.insert(Header {
            key: hd.key,
            value: hd.value,
        });
    }
    h = h
        .insert(Header {
            key: H_ERROR_KIND,
            value: Some(kind),
        })
        .insert(Header {
            key: H_ERROR_DETAIL,
            value: Some(detail),
        });
    if let Some(ts) = timestamp_ms {
        h = h.insert(Header {
            key: H_INPUT_TIMESTAMP,
            value: Some(&ts.to_string()),
        });
    }
    h
}

/// The input value, unvalidated, to the final and the audit topic: the same
/// number of outputs per record as validation produces.
fn passthrough_outputs(msg: &BorrowedMessage<'_>, config: &Config) -> Vec<Output> {
    let topics = &config.kafka.topics;
    let headers = input_headers(msg);
    [TopicRole::Final, TopicRole::Audit]
        .into_iter()
        .map(|role| Output {
            role,
            topic: match role {
                TopicRole::Final => topics.final_.clone(),
                _ => topics.audit.clone(),
            },
            key: msg.key().map(<[u8]>::to_vec),
            payload: msg.payload().map(<[u8]>::to_vec),
            headers: headers.clone(),
        })
        .collect()
}

/// Shapes the two outputs of one validated record.
fn outputs_for(msg: &BorrowedMessage<'_>, outcome: Outcome, config: &Config) -> Vec<Output> {
    let topics = &config.kafka.topics;
    let original_key = msg.key().map(<[u8]>::to_vec);
    let key = outcome
        .request_id
        .as_ref()
        .map(|r| r.as_bytes().to_vec())
        .or_else(|| original_key.clone());
    let headers = input_headers(msg);
    let terminal = match outcome.terminal {
        Terminal::Final(b) => Output {
            role: TopicRole::Final,
            topic: topics.final_.clone(),
            key: key.clone(),
            payload: Some(b),
            headers: headers.clone(),
        },
        Terminal::Retry(b) => Output {
            role: TopicRole::Retry,
            topic: topics.retry.clone(),
            key: key.clone(),
            payload: Some(b),
            headers: headers.clone(),
        },
        Terminal::DeadLetter(d) => Output {
            role: TopicRole::DeadLetter,
            topic: topics.dead_letter.clone(),
            key: original_key,
            // Exactly what the core decided: the input bytes when they fit
            // the output limit, its bounded summary when not.
            payload: match d.value {
                DeadLetterValue::Original => msg.payload().map(<[u8]>::to_vec),
                DeadLetterValue::Bounded(b) => Some(b),
            },
            headers: dead_letter_headers(
                msg.headers(),
                &headers,
                d.kind.as_str(),
                &d.detail,
                msg.timestamp().to_millis(),
            ),
        },
    };
    let audit = Output {
        role: TopicRole::Audit,
        topic: topics.audit.clone(),
        key,
        payload: Some(outcome.audit),
        headers,
    };
    vec![terminal, audit]
}

#[cfg(test)]
mod header_tests {
    use super::*;

    fn pairs(h: &OwnedHeaders) -> Vec<(String, String)> {
        h.iter()
            .map(|hd| {
                (
                    hd.key.to_string(),
                    String::from_utf8_lossy(hd.value.unwrap_or_default()).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn incoming_groundgate_headers_cannot_spoof_ours() {
        let original = OwnedHeaders::new()
            .insert(Header {
                key: "trace-id",
                value: Some("t-1"),
            })
            .insert(Header {
                key: H_ERROR_KIND,
                value: Some("schema"),
            })
            .insert(Header {
                key: H_INPUT_OFFSET,
                value: Some("999"),
            });
        let input = OwnedHeaders::new()
            .insert(Header {
                key: H_INPUT_TOPIC,
                value: Some("answers"),
            })
            .insert(Header {
                key: H_INPUT_OFFSET,
                value: Some("7"),
            });
        let h = dead_letter_headers(Some(&original), &input, "too_large", "big", Some(5));
        let got = pairs(&h);
        let own: Vec<&(String, String)> = got
            .iter()
            .filter(|(k, _)| k.starts_with(OWN_HEADER_PREFIX))
            .collect();
        let mut keys: Vec<&str> = own.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "one value per groundgate.* header: {got:?}");
        let get = |k: &str| {
            got.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get(H_ERROR_KIND), Some("too_large"));
        assert_eq!(get(H_INPUT_OFFSET), Some("7"));
        assert_eq!(get(H_INPUT_TIMESTAMP), Some("5"));
        assert_eq!(get("original.groundgate.error.kind"), Some("schema"));
        assert_eq!(get("original.groundgate.input.offset"), Some("999"));
        assert_eq!(get("trace-id"), Some("t-1"));
    }
}
