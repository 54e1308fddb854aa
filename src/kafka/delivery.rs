//! What the delivery guarantees have in common: the [`Delivery`] operations
//! the consume loop calls, the [`Pending`] record handed to them, and the
//! producer enqueue they share. The guarantee is chosen once, in
//! [`super::worker`], by constructing an [`super::at_least_once::AtLeastOnce`]
//! or an [`super::exactly_once::ExactlyOnce`].
//!
//! Must not: validate, build outputs (that is [`super::outputs`]), or log or
//! count directly (that is [`super::events`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::BaseConsumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::DeliveryFuture;

use super::client::FutureProducer;
use super::offsets::TopicPartition;
use super::outputs::{InputRecord, Output, oversize_replacement};
use super::rebalance::GateContext;
use super::worker::WorkerError;
use crate::config::Config;

pub type Consumer = BaseConsumer<GateContext>;

/// One input record's outputs, ready to publish.
pub struct Pending {
    pub tp: TopicPartition,
    pub offset: i64,
    pub input_ts_ms: Option<i64>,
    /// Any number of outputs; the input offset is done when all are.
    pub outputs: Vec<Output>,
    pub oversize: Oversize,
}

impl Pending {
    pub fn input(&self) -> String {
        format!("{}/{}@{}", self.tp.0, self.tp.1, self.offset)
    }
}

/// What the loop does with the rest of its batch after a publish.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Next,
    /// The delivery rewound the consumer (to before the rest of the batch):
    /// drop the rest, it will be fetched again.
    Rewound,
}

/// One delivery guarantee. All calls run on the consumer thread.
pub trait Delivery: Send {
    /// How many more records may be fetched now, after applying what has
    /// settled (acks, a transaction due for commit). 0: wait, fetch nothing.
    fn room(&mut self, consumer: &Consumer, batch_max: usize) -> Result<usize, WorkerError>;
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
    /// Shutdown: settle (or, when `failed`, abandon) in-flight work by `deadline`.
    fn finish(
        &mut self,
        consumer: &Consumer,
        deadline: Instant,
        failed: bool,
    ) -> Result<(), WorkerError>;
    /// Transactions (committed, aborted) so far.
    fn transactions(&self) -> (u64, u64) {
        (0, 0)
    }
}

/// What it takes to replace an output the producer or broker refused as too
/// large by the core's bounded form ([`oversize_replacement`]).
#[derive(Clone)]
pub struct Oversize {
    pub config: Arc<Config>,
    pub request_id: Option<String>,
}

impl Oversize {
    pub fn replacement(&self, out: &Output, tp: &TopicPartition, offset: i64) -> Output {
        let input = InputRecord {
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
            &self.config.kafka.topics.dead_letter,
            crate::clock::now_nanos(),
        )
    }
}

pub fn is_too_large(e: &KafkaError) -> bool {
    e.rdkafka_error_code() == Some(RDKafkaErrorCode::MessageSizeTooLarge)
}

/// Enqueues one output, waiting while the producer queue is full.
pub fn enqueue(producer: &FutureProducer, out: &Output) -> Result<DeliveryFuture, KafkaError> {
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

/// Enqueues `out`, or its bounded stand-in when the producer's own size
/// check refuses it (key and headers beside a bounded value). Returns what
/// was enqueued.
// The error carries the output so the caller can name it; it is the rare path.
#[allow(clippy::result_large_err)]
pub fn enqueue_or_replace(
    producer: &FutureProducer,
    out: Output,
    record: &Pending,
) -> Result<(Output, DeliveryFuture), (Output, KafkaError)> {
    match enqueue(producer, &out) {
        Ok(f) => Ok((out, f)),
        Err(e) if is_too_large(&e) => {
            let stand_in = record.oversize.replacement(&out, &record.tp, record.offset);
            match enqueue(producer, &stand_in) {
                Ok(f) => Ok((stand_in, f)),
                Err(e) => Err((stand_in, e)),
            }
        }
        Err(e) => Err((out, e)),
    }
}

pub fn now_millis() -> i64 {
    crate::clock::now_nanos() / 1_000_000
}
