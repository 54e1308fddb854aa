//! What the delivery guarantees have in common: the [`Delivery`] operations
//! the consume loop calls, the [`Pending`] record handed to them, the
//! producer enqueue they share, and putting a record's audit row on its
//! partition's chain ([`chain_row`], reading the chain head from the
//! committed offset when the partition is new to this worker). The guarantee is chosen once, in
//! [`super::worker`], by constructing an [`super::at_least_once::AtLeastOnce`]
//! or an [`super::exactly_once::ExactlyOnce`].
//!
//! Must not: validate, build outputs (that is [`super::outputs`]), or log or
//! count directly (that is [`super::events`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::DeliveryFuture;
use rdkafka::{Offset, TopicPartitionList};
use tokio_util::sync::CancellationToken;

use super::client::FutureProducer;
use super::error::WorkerError;
use super::events::{ChainStarted, InternalEvent};
use super::offsets::TopicPartition;
use super::outputs::{Consumed, Output, StandIn, oversize_replacement};
use super::rebalance::WorkerContext;
use super::seals::{Chains, Resume, Seal, encode_head};
use super::worker_report::Unfinished;
use crate::audit::seal::row_hash;
use crate::audit::{ChainHead, Written};
use crate::config::Config;
use crate::core::Summary;
use crate::metrics::{Metrics, Verdict};

pub type Consumer = BaseConsumer<WorkerContext>;

/// How long reading a partition's committed offset (its chain head) may take.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// One input record's outputs, ready to publish.
pub struct Pending {
    pub tp: TopicPartition,
    pub offset: i64,
    pub input_ts_ms: Option<i64>,
    /// The input record's bytes (value and key): what it counts against
    /// `kafka.max_in_flight_bytes` until settled.
    pub input_bytes: usize,
    /// Any number of outputs; the input offset is done when all are.
    pub outputs: Vec<Output>,
    pub oversize: TooLargeReplacer,
    /// SHA-256 of the audit row among `outputs` (computed beside
    /// validation); `None` when the worker does not seal (bench modes).
    pub audit_hash: Option<[u8; 32]>,
    /// The core's verdict, counted once the terminal record is written
    /// (as its stand-in's when that replaces it); `None`: not judged
    /// (bench modes).
    pub verdict: Option<Verdict>,
    /// What the answer said (findings, usage, grounding), counted once per
    /// record written; `None`: not judged (bench modes).
    pub answer: Option<Summary>,
}

impl Pending {
    pub fn input(&self) -> String {
        format!("{}/{}@{}", self.tp.0, self.tp.1, self.offset)
    }
}

/// How much more the consume loop may fetch now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// Records; 0: fetch nothing.
    pub records: usize,
    /// Bytes of input records (value and key): a batch ends at the record
    /// that reaches them (its first record is taken whatever its size, so
    /// a record larger than the bound still passes, alone).
    pub bytes: usize,
}

impl Room {
    pub const NONE: Room = Room {
        records: 0,
        bytes: 0,
    };
}

/// What the loop does with the rest of its batch after a publish.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Next,
    /// The delivery rewound the consumer (to before the rest of the batch):
    /// drop the rest, it will be fetched again.
    Rewound,
    /// The worker is stopping and the producer's queue had no room for
    /// the record's outputs: it was not handed over whole, and neither is
    /// the rest of the batch; their offsets are never committed.
    Stopped,
}

/// How long a wait for room in the producer's queue lasts: until the
/// worker stops, and while it drains, until its drain deadline. The queue
/// empties only as the brokers acknowledge, so with the brokers away the
/// wait would otherwise outlast the stop, and the watchdog would end the
/// process with nothing said of what was left undone.
#[derive(Debug, Clone, Copy)]
pub struct QueueWait<'a> {
    pub stop: &'a CancellationToken,
    /// The drain deadline, once the drain has started.
    pub until: Option<Instant>,
}

impl QueueWait<'_> {
    fn over(&self) -> bool {
        self.stop.is_cancelled() && self.until.is_none_or(|u| Instant::now() >= u)
    }
}

/// The error [`enqueue`] gives up with when the wait for room is over.
pub fn gave_up_waiting(e: &KafkaError) -> bool {
    e.rdkafka_error_code() == Some(RDKafkaErrorCode::QueueFull)
}

/// One delivery guarantee. All calls run on the consumer thread.
pub trait Delivery: Send {
    /// How much more may be fetched now, after applying what has settled
    /// (acks, a transaction due for commit), at most `batch_max` records.
    fn capacity(&mut self, consumer: &Consumer, batch_max: usize) -> Result<Room, WorkerError>;
    /// Hands one record's outputs to the producer. `rest`: positions of the
    /// batch records after this one (where a rewind must also go back to).
    fn publish(
        &mut self,
        consumer: &Consumer,
        record: Pending,
        rest: &[(TopicPartition, i64)],
    ) -> Result<Flow, WorkerError>;
    /// Partitions are being revoked (`lost`: not handed over): settle what
    /// can be settled for them before their new owner starts.
    fn on_revoke(
        &mut self,
        consumer: &Consumer,
        revoked: &[TopicPartition],
        lost: bool,
    ) -> Result<(), WorkerError>;
    /// Shutdown: settle (or, when `failed`, abandon) in-flight work by
    /// `deadline`, and say what was left undone (empty: every record
    /// settled, its offsets or transaction committed, its seals sent).
    fn finish(
        &mut self,
        consumer: &Consumer,
        deadline: Instant,
        failed: bool,
    ) -> Result<Unfinished, WorkerError>;
    /// Transactions (committed, aborted) so far.
    fn transactions(&self) -> (u64, u64) {
        (0, 0)
    }
}

/// What it takes to replace an output the producer or broker refused as too
/// large by the core's bounded form ([`oversize_replacement`]).
#[derive(Clone)]
pub struct TooLargeReplacer {
    pub config: Arc<Config>,
    pub request_id: Option<String>,
}

impl TooLargeReplacer {
    pub fn replacement(&self, out: &Output, tp: &TopicPartition, offset: i64) -> StandIn {
        let input = Consumed {
            topic: &tp.0,
            partition: tp.1,
            offset,
            key: None,
            payload: None,
            timestamp_ms: None,
            headers: &[],
        };
        oversize_replacement(
            out,
            &input,
            self.request_id.as_deref(),
            &self.config.core,
            &self.config.kafka.topics,
            &self.config.kafka.output_schema_ids,
            crate::clock::now_nanos(),
        )
    }
}

pub fn is_too_large(e: &KafkaError) -> bool {
    e.rdkafka_error_code() == Some(RDKafkaErrorCode::MessageSizeTooLarge)
}

/// Enqueues one output, waiting while the producer queue is full for as
/// long as `wait` allows ([`gave_up_waiting`] then).
pub fn enqueue(
    producer: &FutureProducer,
    out: &Output,
    wait: QueueWait<'_>,
) -> Result<DeliveryFuture, KafkaError> {
    let mut record = out.record();
    loop {
        match producer.send_result(record) {
            Ok(f) => return Ok(f),
            Err((e @ KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _))
                if wait.over() =>
            {
                return Err(e);
            }
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                // Deliveries drain the queue from librdkafka's own threads.
                std::thread::sleep(Duration::from_millis(5));
            }
            Err((e, _)) => return Err(e),
        }
    }
}

/// An output handed to the producer.
pub struct Enqueued {
    /// What was enqueued: the output, or its bounded stand-in.
    pub out: Output,
    pub delivery: DeliveryFuture,
    /// The SHA-256 of `out` when it is the audit row of a sealed record.
    pub audit_hash: Option<[u8; 32]>,
    /// `out` is the bounded stand-in: nothing smaller can replace it.
    pub stand_in: bool,
    /// `out` stands in for a terminal record: the audit row to publish in
    /// place of the record's own ([`StandIn::audit`]).
    pub audit: Option<Output>,
}

/// Enqueues `out`, or its bounded stand-in when the producer's own size
/// check refuses it (key and headers beside a bounded value). A seal is
/// never replaced (a stand-in would seal nothing). `replaced`: `out` is
/// already not the output built beside validation (its audit hash is
/// computed here).
// The error carries the output so the caller can name it; it is the rare path.
#[allow(clippy::result_large_err)]
pub fn enqueue_or_replace(
    producer: &FutureProducer,
    out: Output,
    record: &Pending,
    replaced: bool,
    wait: QueueWait<'_>,
) -> Result<Enqueued, (Output, KafkaError)> {
    match enqueue(producer, &out, wait) {
        Ok(delivery) => Ok(Enqueued {
            audit_hash: audit_row_hash(record, &out, replaced),
            out,
            delivery,
            stand_in: false,
            audit: None,
        }),
        Err(e) if is_too_large(&e) && !out.is_seal() => {
            enqueue_stand_in(producer, &out, record, wait)
        }
        Err(e) => Err((out, e)),
    }
}

/// Enqueues the bounded stand-in of `refused`, an output of `record` that
/// was refused as too large.
#[allow(clippy::result_large_err)]
pub fn enqueue_stand_in(
    producer: &FutureProducer,
    refused: &Output,
    record: &Pending,
    wait: QueueWait<'_>,
) -> Result<Enqueued, (Output, KafkaError)> {
    let StandIn { output, audit } = record
        .oversize
        .replacement(refused, &record.tp, record.offset);
    match enqueue(producer, &output, wait) {
        Ok(delivery) => Ok(Enqueued {
            audit_hash: audit_row_hash(record, &output, true),
            out: output,
            delivery,
            stand_in: true,
            audit,
        }),
        Err(e) => Err((output, e)),
    }
}

/// The SHA-256 of the audit row among one record's enqueued outputs: the
/// one computed beside validation, unless the row was replaced by its
/// bounded stand-in on the way (then of the stand-in, which is what the
/// audit topic holds). `None` when the record is not sealed.
fn audit_row_hash(record: &Pending, enqueued: &Output, replaced: bool) -> Option<[u8; 32]> {
    if !enqueued.is_audit_row() {
        return None;
    }
    delivered_row_hash(record.audit_hash, enqueued, replaced)
}

/// The SHA-256 of `row`, an audit row on its way: `precomputed` (computed
/// beside validation; `None` when the record is not sealed) unless the row
/// was replaced on the way. Of its JSON text either way: a Schema Registry
/// header is transport, so a framed trail hashes as a plain one.
pub fn delivered_row_hash(
    precomputed: Option<[u8; 32]>,
    row: &Output,
    replaced: bool,
) -> Option<[u8; 32]> {
    let precomputed = precomputed?;
    // Re-hashing only a replaced row keeps hashing off the consumer thread.
    Some(if replaced {
        row_hash(row.json_text())
    } else {
        precomputed
    })
}

/// Records the audit row of input `offset` (`hash`; `None`: not sealed;
/// `at`: where the audit topic holds it, when known) on `tp`'s chain (read
/// from the committed offset's metadata on the partition's first row here);
/// the seal, when one is due by count.
pub fn chain_row(
    chains: &mut Option<Chains>,
    consumer: &Consumer,
    metrics: &Metrics,
    tp: &TopicPartition,
    offset: i64,
    hash: Option<[u8; 32]>,
    at: Option<Written>,
) -> Result<Option<Seal>, WorkerError> {
    let (Some(chains), Some(hash)) = (chains.as_mut(), hash) else {
        return Ok(None);
    };
    if !chains.has(tp) {
        let head = load_head(consumer, metrics, tp)?;
        chains.start(tp, head);
    }
    if chains.push(tp, offset, hash, at, Instant::now()) {
        return Ok(chains.seal(tp, crate::clock::now_nanos()));
    }
    Ok(None)
}

/// Where `tp`'s chain resumes: the head in its committed offset's metadata.
fn load_head(
    consumer: &Consumer,
    metrics: &Metrics,
    tp: &TopicPartition,
) -> Result<ChainHead, WorkerError> {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(&tp.0, tp.1);
    let got = consumer
        .committed_offsets(tpl, HEAD_TIMEOUT)
        .map_err(|source| WorkerError::ChainHead {
            partition: tp.1,
            source,
        })?;
    let committed = got
        .find_partition(&tp.0, tp.1)
        .and_then(|e| match e.offset() {
            Offset::Offset(o) => Some(o),
            _ => None,
        });
    let metadata = super::client::metadata_bytes(&got, &tp.0, tp.1);
    let resume = Resume::from_committed(committed, &metadata);
    let chain = format!("{}/{}", tp.0, tp.1);
    let chain = chain.as_str();
    match resume {
        Resume::Continue(h) => ChainStarted::Continued {
            chain,
            next_seq: h.next_seq,
        },
        Resume::Fresh => ChainStarted::Fresh { chain },
        Resume::NewChain { committed, reason } => ChainStarted::New {
            chain,
            committed,
            reason,
        },
    }
    .emit(metrics);
    Ok(resume.head())
}

/// A position to commit (the next offset to read) with the chain head after
/// the last seal as its metadata, when sealing.
pub fn position(
    tpl: &mut TopicPartitionList,
    tp: &TopicPartition,
    next: i64,
    head: Option<ChainHead>,
) -> Result<(), KafkaError> {
    let mut e = tpl.add_partition(&tp.0, tp.1);
    e.set_offset(Offset::Offset(next))?;
    if let Some(h) = head {
        e.set_metadata(encode_head(&h));
    }
    Ok(())
}

pub fn now_millis() -> i64 {
    crate::clock::now_nanos() / 1_000_000
}

/// What unit tests of the deliveries drive them with.
#[cfg(test)]
pub mod testing {
    use std::sync::Arc;
    use std::time::Instant;

    use super::{Consumer, Delivery, Flow, Pending, TooLargeReplacer, Unfinished};
    use crate::config::Config;
    use crate::core::OutputRole;
    use crate::kafka::client;
    use crate::kafka::error::WorkerError;
    use crate::kafka::offsets::TopicPartition;
    use crate::kafka::outputs::Output;
    use crate::kafka::rebalance::WorkerContext;
    use crate::metrics::Metrics;

    /// The delivery of a consumer's context when the test drives another
    /// one by hand: it settles nothing.
    struct Idle;

    impl Delivery for Idle {
        fn capacity(&mut self, _: &Consumer, _: usize) -> Result<super::Room, WorkerError> {
            Ok(super::Room::NONE)
        }
        fn publish(
            &mut self,
            _: &Consumer,
            _: Pending,
            _: &[(TopicPartition, i64)],
        ) -> Result<Flow, WorkerError> {
            Ok(Flow::Next)
        }
        fn on_revoke(
            &mut self,
            _: &Consumer,
            _: &[TopicPartition],
            _: bool,
        ) -> Result<(), WorkerError> {
            Ok(())
        }
        fn finish(&mut self, _: &Consumer, _: Instant, _: bool) -> Result<Unfinished, WorkerError> {
            Ok(Unfinished::default())
        }
    }

    /// An embedded broker with the input, final and audit topics, and the
    /// defaults pointed at it with `adjust` applied: the broker (kept alive
    /// by the caller), its address, the configuration and the metrics.
    pub fn cluster(
        adjust: impl FnOnce(&mut crate::config::RawConfig),
    ) -> (
        crate::kafka::embedded::EmbeddedBroker,
        String,
        Arc<Config>,
        Arc<Metrics>,
    ) {
        let topics = crate::config::Topics::default();
        let broker = crate::kafka::embedded::EmbeddedBroker::start(
            1,
            &[&topics.input, &topics.final_, &topics.audit],
        )
        .unwrap();
        let bs = broker.bootstrap();
        let mut raw = crate::config::RawConfig::default();
        raw.kafka.brokers = Some(bs.clone());
        adjust(&mut raw);
        let config = Arc::new(raw.validate().unwrap());
        let metrics = Arc::new(Metrics::new(&config.metrics).unwrap());
        (broker, bs, config, metrics)
    }

    /// A producer of the worker's kind, leaving client errors to the consumer.
    pub fn producer(config: &Config, bootstrap: &str) -> client::FutureProducer {
        client::producer(&config.kafka, bootstrap)
            .create_with_context(client::LogContext::quiet())
            .unwrap()
    }

    /// A consumer of the worker's kind, not subscribed.
    pub fn consumer(config: &Config, bootstrap: &str, metrics: &Arc<Metrics>) -> Consumer {
        let ctx = WorkerContext::new(
            metrics.clone(),
            Arc::new(crate::http::Health::default()),
            config.kafka.topics.input.clone(),
            false,
            Box::new(Idle),
            config.kafka.unassigned_timeout,
        );
        client::consumer(&config.kafka, bootstrap, None)
            .create_with_context(ctx)
            .unwrap()
    }

    /// Input record 0 of `tp`: a final record and an audit row.
    pub fn record(config: &Arc<Config>, tp: &TopicPartition) -> Pending {
        let t = &config.kafka.topics;
        let out = |role, topic: &str, bytes: &[u8]| Output {
            role,
            topic: topic.to_string(),
            key: None,
            payload: Some(bytes.to_vec()),
            headers: Vec::new(),
        };
        let row = br#"{"row":0}"#;
        Pending {
            tp: tp.clone(),
            offset: 0,
            input_ts_ms: None,
            input_bytes: 0,
            outputs: vec![
                out(OutputRole::Final, &t.final_, b"{}"),
                out(OutputRole::Audit, &t.audit, row),
            ],
            oversize: TooLargeReplacer {
                config: config.clone(),
                request_id: None,
            },
            audit_hash: Some(crate::audit::seal::row_hash(row)),
            verdict: None,
            answer: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::OutputRole;
    use crate::core::wire::framed;

    #[test]
    fn a_replaced_framed_row_is_hashed_without_its_header() {
        let json = br#"{"answer_hash":"00","input":{}}"#;
        let row = Output {
            role: OutputRole::Audit,
            topic: "answers.audit".into(),
            key: None,
            payload: Some(framed(103, json)),
            headers: Vec::new(),
        };
        let precomputed = [7; 32];
        assert_eq!(
            delivered_row_hash(Some(precomputed), &row, false),
            Some(precomputed)
        );
        assert_eq!(
            delivered_row_hash(Some(precomputed), &row, true),
            Some(row_hash(json))
        );
        assert_eq!(delivered_row_hash(None, &row, true), None);
    }
}
