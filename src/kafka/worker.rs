//! The stream worker: consume an answer, run [`crate::core::process()`], publish
//! the terminal record and the audit row (sealed, per input partition, by
//! audit seals: `super::seals`), and only then let the input offset be
//! committed. The loop reads as the algorithm:
//! capacity → poll a batch → process → build outputs → publish → (offsets).
//!
//! Rooms: `super::outputs` (what each record becomes: key, value, headers),
//! `super::delivery` with `super::at_least_once` and
//! `super::exactly_once` (how outputs and offsets are settled: the
//! guarantee is chosen once, in `run_worker_with`), `super::rebalance`
//! (the consumer context), `super::events` (every log line with its
//! counter).
//!
//! Threads. The consumer, the pure processing step and the enqueueing of
//! outputs run on one dedicated blocking thread (`consume_loop`): librdkafka's
//! poll, offset store, synchronous commits, rebalance callbacks and the
//! transaction calls all block, and `process` is CPU work (≈10–30 µs for a
//! few KB, linear up to the 1 MiB record cap), so none of it may sit on the
//! async runtime. The runtime only awaits delivery reports and serves HTTP.
//!
//! Must not decide a verdict, shape an output, or know the HTTP server.
//! Nothing is logged per record at info level.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use rdkafka::Message;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::BorrowedMessage;
use rdkafka::producer::Producer;
use rdkafka::util::Timeout;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::at_least_once::AtLeastOnce;
use super::client::{self, FutureProducer};
use super::delivery::{Delivery, Flow, Pending, Room, TooLargeReplacer};
pub use super::error::{PublishFailure, WorkerError};
use super::events::{InternalEvent, Lifecycle, RecordProcessed};
use super::exactly_once::{Commits, ExactlyOnce};
use super::offsets::TopicPartition;
use super::outputs::{self, Consumed};
pub use super::worker_report::{Unfinished, WorkerReport};
// The header names are the output contract (defined in `outputs`); re-exported
// here because consumers of the worker read them.
pub use super::rebalance::Readiness;
use super::rebalance::WorkerContext;
use super::seals::{Chains, SealSettings};
use crate::audit::seal::row_hash;
use crate::config::{Config, Guarantee};
use crate::core::{Outcome, RecordMeta, process};
use crate::metrics::{Metrics, Verdict};

/// How long one poll waits for a record.
const POLL: Duration = Duration::from_millis(100);
/// Records taken from one poll round; bounds the work between offset and
/// transaction checks.
const BATCH_MAX: usize = 256;

/// How long the consume loop waits for room, not polling, before it pauses
/// its partitions to poll the consumer; at most a quarter of
/// `max.poll.interval.ms`, which a consumer must be polled within.
const PAUSE_AFTER: Duration = Duration::from_secs(1);

/// How long the consume loop sleeps between two asks for room while it
/// waits. The delivery's own ask already waits for an acknowledgement
/// (at-least-once, up to 100 ms); this only keeps the loop from spinning.
const ROOM_WAIT: Duration = Duration::from_millis(1);

/// The share of `kafka.drain_deadline_ms` (1/`CLOSE_SHARE`) kept for
/// closing the clients once the deliveries settled and the producer
/// flushed: `groundgate run`'s watchdog ends the process at the full
/// deadline.
const CLOSE_SHARE: u32 = 5;
/// The least kept for closing, whatever the share: leaving the group and
/// joining the producer's poll thread each take up to a poll interval
/// (100 ms) on an idle machine, and several times that on a loaded one.
const CLOSE_MIN: Duration = Duration::from_secs(1);
/// Below this many records a batch is validated on the consume thread alone
/// (waking the validation pool would cost more than it saves).
const PARALLEL_MIN: usize = 8;

/// What the worker does with each record between consuming and publishing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Validate with [`crate::core::process()`] and seal the audit rows: the
    /// only mode `run` uses.
    Validate,
    /// Validate without sealing. Exists only so `groundgate bench` can
    /// measure what sealing costs.
    ValidateUnsealed,
    /// Copy the input value to the final and audit topics unvalidated, no
    /// seals. Exists only so `groundgate bench` can measure the Kafka
    /// plumbing alone, with the very same clients, offsets handling and
    /// transactions.
    Passthrough,
}

impl Step {
    fn seals(self) -> bool {
        self == Step::Validate
    }
}

/// Runs a worker until `shutdown` is cancelled or a fatal error occurs.
pub async fn run_worker(
    config: Arc<Config>,
    bootstrap: String,
    metrics: Arc<Metrics>,
    readiness: Arc<dyn Readiness>,
    shutdown: CancellationToken,
) -> Result<WorkerReport, WorkerError> {
    run_worker_with(
        config,
        bootstrap,
        metrics,
        readiness,
        shutdown,
        Step::Validate,
    )
    .await
}

/// [`run_worker`] with the per-record [`Step`] chosen (benchmarks only).
pub async fn run_worker_with(
    config: Arc<Config>,
    bootstrap: String,
    metrics: Arc<Metrics>,
    readiness: Arc<dyn Readiness>,
    shutdown: CancellationToken,
    step: Step,
) -> Result<WorkerReport, WorkerError> {
    let k = &config.kafka;
    let producer: FutureProducer = client::producer(k, &bootstrap)
        .create_with_context(client::LogContext::counted(metrics.clone()))
        .map_err(|source| WorkerError::Client {
            which: "producer",
            source,
        })?;
    let runtime = tokio::runtime::Handle::current();
    let chains = if step.seals() {
        Some(Chains::new(seal_settings(&config)?))
    } else {
        None
    };
    // The one place the guarantee is chosen.
    let delivery: Box<dyn Delivery> = match k.guarantee {
        Guarantee::AtLeastOnce => Box::new(AtLeastOnce::new(
            producer.clone(),
            metrics.clone(),
            runtime.clone(),
            Room {
                records: k.max_in_flight,
                bytes: k.max_in_flight_bytes,
            },
            k.drain_deadline,
            chains,
            shutdown.clone(),
        )),
        Guarantee::ExactlyOnce => {
            let (p, stop) = (producer.clone(), shutdown.clone());
            let initialised = tokio::task::spawn_blocking(move || init_transactions(&p, &stop))
                .await
                .map_err(|e| WorkerError::Thread(e.to_string()))??;
            if !initialised {
                // Stopped before anything was consumed: nothing to settle.
                Lifecycle::StoppedCleanly { records: 0 }.emit(&metrics);
                return Ok(WorkerReport::default());
            }
            Box::new(ExactlyOnce::new(
                producer.clone(),
                runtime.clone(),
                metrics.clone(),
                Commits {
                    interval: k.commit_interval,
                    max: Room {
                        records: k.commit_max_records,
                        bytes: k.max_in_flight_bytes,
                    },
                    stall: super::exactly_once::delivery_stall(k),
                    call_timeout: super::exactly_once::TXN_TIMEOUT,
                    open_for: super::exactly_once::transaction_timeout(k),
                },
                chains,
                shutdown.clone(),
            ))
        }
    };
    let stats_ms = config
        .metrics
        .consumer_lag
        .then(|| config.metrics.statistics_interval.as_millis() as u64);
    let ctx = WorkerContext::new(
        metrics.clone(),
        readiness.clone(),
        k.topics.input.clone(),
        config.metrics.consumer_lag,
        delivery,
        k.unassigned_timeout,
    );
    let consumer: BaseConsumer<WorkerContext> = client::consumer(k, &bootstrap, stats_ms)
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
    // Not ready from the moment a drain starts, not only once it is over;
    // the drain's deadline counts from then too, as the watchdog's does,
    // not from when the consume thread next looks.
    let stop_began = Arc::new(OnceLock::new());
    let draining = {
        let (readiness, shutdown, began) =
            (readiness.clone(), shutdown.clone(), stop_began.clone());
        tokio::spawn(async move {
            shutdown.cancelled().await;
            let _ = began.set(Instant::now());
            readiness.begin_drain();
        })
    };
    Lifecycle::Started {
        input: &k.topics.input,
        group: &k.group_id,
        guarantee: &k.guarantee,
    }
    .emit(&metrics);
    let result = tokio::task::spawn_blocking(move || {
        let stop = Stop {
            token: &shutdown,
            began: &stop_began,
        };
        let result = consume_loop(&consumer, &producer, &config, &metrics, step, stop);
        let membership = consumer
            .context()
            .membership(config.kafka.group_instance_id.is_some());
        // Dropping the consumer closes it: a dynamic member asks to leave the
        // group, so the others get its partitions at the next rebalance
        // instead of after the session timeout.
        consumer.context().closing();
        drop(consumer);
        Lifecycle::ConsumerClosed { membership }.emit(&metrics);
        result
    })
    .await;
    draining.abort();
    let result = result.map_err(|e| WorkerError::Thread(e.to_string()))?;
    readiness.set_ready(false);
    result
}

/// How long one call initialising the transactional producer waits before
/// the worker looks for a stop and calls again: librdkafka resumes the
/// initialisation where the call that timed out left it.
const INIT_SLICE: Duration = Duration::from_secs(1);

/// Initialises the transactional producer, for as long as the brokers need
/// to answer (unreachable at start, the transaction coordinator not yet
/// available), as the consumer waits for them to join the group. `false`:
/// `shutdown` came first. Err when the brokers refused (authorization, a
/// transaction timeout above `transaction.max.timeout.ms`, no transaction
/// support).
fn init_transactions(
    producer: &FutureProducer,
    shutdown: &CancellationToken,
) -> Result<bool, WorkerError> {
    loop {
        if shutdown.is_cancelled() {
            return Ok(false);
        }
        match producer.init_transactions(INIT_SLICE) {
            Ok(()) => return Ok(true),
            Err(e) if init_again(&e) => continue,
            Err(e) => return Err(WorkerError::TransactionsUnsupported(e)),
        }
    }
}

/// Whether initialising transactions may succeed when called again: the
/// call timed out, or the brokers answered with a retriable error.
fn init_again(e: &KafkaError) -> bool {
    match e {
        KafkaError::Transaction(t) => t.is_retriable() && !t.is_fatal(),
        _ => false,
    }
}

/// What the audit chains of this worker share.
fn seal_settings(config: &Config) -> Result<SealSettings, WorkerError> {
    let a = &config.audit;
    let k = &config.kafka;
    Ok(SealSettings {
        worker: crate::audit::seal::worker_name(k.group_instance_id.as_deref(), &k.client_id)
            .to_string(),
        seal_every: a.seal_every,
        interval: a.seal_interval,
        key: a.signing_key()?.cloned(),
        topics: k.topics.clone(),
        schema_ids: k.output_schema_ids,
    })
}

/// The algorithm: while running, ask the delivery for capacity, poll a batch,
/// validate it, build and publish each record's outputs; then finish once.
fn consume_loop(
    consumer: &BaseConsumer<WorkerContext>,
    producer: &FutureProducer,
    config: &Arc<Config>,
    metrics: &Metrics,
    step: Step,
    stop: Stop<'_>,
) -> Result<WorkerReport, WorkerError> {
    let ctx = consumer.context();
    let mut room_wait =
        RoomWait::new(PAUSE_AFTER.min(client::max_poll_interval(&config.kafka) / 4));
    while !stop.token.is_cancelled() {
        let room = {
            let mut st = ctx.state();
            if st.fatal.is_some() {
                break;
            }
            match ctx
                .check_assigned()
                .and_then(|()| usable(consumer))
                .and_then(|()| st.delivery.capacity(consumer, BATCH_MAX))
            {
                Ok(room) => room,
                Err(e) => {
                    st.fail(e);
                    break;
                }
            }
        };
        match room_wait.next(room.records > 0, Instant::now()) {
            RoomStep::Wait => {
                std::thread::sleep(ROOM_WAIT);
                continue;
            }
            RoomStep::Pause => set_paused(consumer, true),
            RoomStep::Resume => set_paused(consumer, false),
            RoomStep::Poll => {}
        }
        let batch = poll_batch(consumer, room);
        if batch.is_empty() {
            continue;
        }
        if let Err(e) = publish_batch(consumer, &batch, config, metrics, step) {
            ctx.state().fail(e);
            break;
        }
    }
    // A fatal error stops the worker without a signal: its drain starts now.
    let began = stop.began.get().copied().unwrap_or_else(Instant::now);
    finish(consumer, producer, config, metrics, began)
}

/// How the consume loop learns of a stop, and when the stop began.
#[derive(Clone, Copy)]
struct Stop<'a> {
    token: &'a CancellationToken,
    began: &'a OnceLock<Instant>,
}

/// The part of a drain deadline of `drain` kept for closing the clients:
/// its share, but at least [`CLOSE_MIN`] and at most half of it.
fn close_allowance(drain: Duration) -> Duration {
    (drain / CLOSE_SHARE).max(CLOSE_MIN).min(drain / 2)
}

/// What the consume loop does about room in the delivery before it polls.
#[derive(Debug, PartialEq, Eq)]
enum RoomStep {
    /// No room: wait for acknowledgements without polling the consumer, so
    /// what it fetched ahead stays fetched (pausing drops it, to be fetched
    /// again from the brokers).
    Wait,
    /// No room for the wait allowed: pause the partitions and poll the
    /// consumer, which must be polled within `max.poll.interval.ms`.
    Pause,
    /// Room again after a pause.
    Resume,
    /// Poll as usual (paused still, or with room).
    Poll,
}

/// How long the delivery has had no room, and whether the partitions are
/// paused for it.
struct RoomWait {
    /// How long to wait for room before pausing.
    pause_after: Duration,
    full_since: Option<Instant>,
    paused: bool,
}

impl RoomWait {
    fn new(pause_after: Duration) -> RoomWait {
        RoomWait {
            pause_after,
            full_since: None,
            paused: false,
        }
    }

    fn next(&mut self, room: bool, now: Instant) -> RoomStep {
        if room {
            self.full_since = None;
            return if std::mem::take(&mut self.paused) {
                RoomStep::Resume
            } else {
                RoomStep::Poll
            };
        }
        let since = *self.full_since.get_or_insert(now);
        if self.paused {
            RoomStep::Poll
        } else if now.saturating_duration_since(since) < self.pause_after {
            RoomStep::Wait
        } else {
            self.paused = true;
            RoomStep::Pause
        }
    }
}

/// Pauses or resumes every partition assigned. Once the delivery has had
/// no room (records with outputs unacknowledged up to `max_in_flight` or
/// `max_in_flight_bytes`) for a while (`RoomWait`), the consumer is polled again,
/// with its partitions paused: a consumer not polled for `max.poll.interval.ms`
/// (5 min by default) leaves its group, and its rebalance callbacks, statistics and lag wait meanwhile. Pausing drops
/// what was fetched ahead and fetches it again from the next record once
/// resumed, so no record is skipped. A partition assigned while paused is
/// paused at the next pass; a record it delivered before is judged at once
/// (a poll takes one record at most then), beyond the bound by that one.
/// Failing leaves fetching as it was, which loses nothing (a record polled
/// while it should be paused is judged like any other), so it is logged
/// and not fatal.
fn set_paused(consumer: &BaseConsumer<WorkerContext>, pause: bool) {
    let result = consumer.assignment().and_then(|assigned| {
        if assigned.count() == 0 {
            return Ok(());
        }
        if pause {
            consumer.pause(&assigned)
        } else {
            consumer.resume(&assigned)
        }
    });
    if let Err(e) = result {
        debug!(error = %e, pause, "pausing or resuming the assigned partitions failed");
    }
}

/// Err once the consumer raised a fatal error (fenced by another member
/// with its `group.instance.id`, ...): it never consumes again, so polling
/// it would leave the worker waiting, not ready, for ever.
fn usable(consumer: &BaseConsumer<WorkerContext>) -> Result<(), WorkerError> {
    match consumer.client().fatal_error() {
        Some((code, reason)) => Err(WorkerError::consumer_fatal(code, reason)),
        None => Ok(()),
    }
}

/// Validates a batch and hands each record's outputs to the delivery.
fn publish_batch(
    consumer: &BaseConsumer<WorkerContext>,
    batch: &[BorrowedMessage<'_>],
    config: &Arc<Config>,
    metrics: &Metrics,
    step: Step,
) -> Result<(), WorkerError> {
    let ctx = consumer.context();
    let topics = &config.kafka.topics;
    let positions: Vec<(TopicPartition, i64)> = batch
        .iter()
        .map(|m| ((m.topic().to_string(), m.partition()), m.offset()))
        .collect();
    let outcomes = process_batch(batch, config, step);
    for (i, (msg, outcome)) in batch.iter().zip(outcomes).enumerate() {
        let read = client::headers_of(msg);
        let headers: Vec<(&str, Option<&[u8]>)> =
            read.iter().map(|(k, v)| (k.as_ref(), *v)).collect();
        let input = Consumed {
            topic: msg.topic(),
            partition: msg.partition(),
            offset: msg.offset(),
            key: msg.key(),
            payload: msg.payload(),
            timestamp_ms: msg.timestamp().to_millis(),
            headers: &headers,
        };
        let mut st = ctx.state();
        let (outputs, request_id, audit_hash, verdict, answer) = match outcome {
            Some((outcome, took, audit_hash)) => {
                RecordProcessed {
                    outcome: &outcome,
                    took,
                    input: (input.topic, input.partition, input.offset),
                }
                .emit(metrics);
                st.report.count(outcome.kind);
                let request_id = outcome.request_id.clone();
                let verdict = Verdict::of(outcome.kind, &outcome.summary);
                let answer = outcome.summary.clone();
                (
                    outputs::outputs_for(
                        &input,
                        outcome,
                        topics,
                        &config.kafka.output_schema_ids,
                        &config.kafka.propagate_headers,
                    ),
                    request_id,
                    audit_hash,
                    Some(verdict),
                    Some(answer),
                )
            }
            None => (outputs::passthrough(&input, topics), None, None, None, None),
        };
        let (tp, offset) = positions[i].clone();
        let record = Pending {
            tp,
            offset,
            input_ts_ms: input.timestamp_ms,
            input_bytes: input_bytes(msg),
            outputs,
            oversize: TooLargeReplacer {
                config: config.clone(),
                request_id,
            },
            audit_hash,
            verdict,
            answer,
        };
        match st.delivery.publish(consumer, record, &positions[i + 1..])? {
            Flow::Next => {}
            Flow::Rewound | Flow::Stopped => break,
        }
    }
    Ok(())
}

/// Polls up to `room` (one record at most when it has none): waits for the
/// first record, then takes only what is already fetched, and stops at the
/// record whose bytes reach `room.bytes`. If partitions were
/// revoked meanwhile, records of
/// partitions no longer assigned are dropped: their offsets were never
/// stored, so their new owner reads them again.
fn poll_batch(consumer: &BaseConsumer<WorkerContext>, room: Room) -> Vec<BorrowedMessage<'_>> {
    let ctx = consumer.context();
    let mut batch = Vec::new();
    let mut timeout = POLL;
    let mut revocations = 0;
    let mut bytes = 0usize;
    while batch.len() < room.records.max(1) && bytes < room.bytes.max(1) {
        let polled = consumer.poll(timeout);
        ctx.polled();
        match polled {
            None => break,
            Some(Err(e)) => {
                rdkafka::ClientContext::error(&**ctx, e, "consumer poll");
                break;
            }
            Some(Ok(m)) => {
                if batch.is_empty() {
                    revocations = ctx.revocations();
                }
                bytes += input_bytes(&m);
                batch.push(m);
                timeout = Duration::ZERO;
            }
        }
    }
    if !batch.is_empty() && ctx.revocations() != revocations {
        let assigned = consumer.assignment().unwrap_or_default();
        batch.retain(|m| assigned.find_partition(m.topic(), m.partition()).is_some());
    }
    batch
}

/// What a record counts against `kafka.max_in_flight_bytes`.
fn input_bytes(m: &BorrowedMessage<'_>) -> usize {
    m.payload_len() + m.key().map_or(0, <[u8]>::len)
}

/// One validated record: its outcome, how long the core took, and the SHA-256
/// of its audit row when sealing.
type Validated = (Outcome, Duration, Option<[u8; 32]>);

/// Runs the pure core over a batch, in parallel when it is worth it; output
/// order follows input order. `None` per record in passthrough (bench) mode.
/// When sealing, the audit row's SHA-256 is computed here too, off the
/// consume thread.
fn process_batch(
    batch: &[BorrowedMessage<'_>],
    config: &Config,
    step: Step,
) -> Vec<Option<Validated>> {
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
        let took = started.elapsed();
        let audit_hash = step.seals().then(|| row_hash(&outcome.audit));
        Some((outcome, took, audit_hash))
    };
    if inputs.len() >= PARALLEL_MIN {
        inputs.par_iter().map(one).collect()
    } else {
        inputs.iter().map(one).collect()
    }
}

/// The single shutdown path: the delivery settles and the producer flushes
/// within the drain deadline (counted from `began`) less the part kept for
/// closing the clients, and the report (or the fatal error) comes back.
/// The stop is clean only if nothing was left undone; the report's
/// `unfinished` says what was.
fn finish(
    consumer: &BaseConsumer<WorkerContext>,
    producer: &FutureProducer,
    config: &Config,
    metrics: &Metrics,
    began: Instant,
) -> Result<WorkerReport, WorkerError> {
    let ctx = consumer.context();
    ctx.begin_drain();
    let drain = config.kafka.drain_deadline;
    let deadline = began + drain - close_allowance(drain);
    let mut st = ctx.state();
    let failed = st.fatal.is_some();
    let mut unfinished = match st.delivery.finish(consumer, deadline, failed) {
        Ok(u) => u,
        Err(e) => {
            st.fail(e);
            Unfinished::default()
        }
    };
    let remaining = deadline.saturating_duration_since(Instant::now());
    let flush_error = producer.flush(Timeout::After(remaining)).err();
    unfinished.flush_failed = flush_error.is_some();
    let mut report = st.report.clone();
    (report.transactions_committed, report.transactions_aborted) = st.delivery.transactions();
    let fatal = st.fatal.take();
    drop(st);
    consumer.unsubscribe();
    if let Some(e) = fatal {
        // The error says which record stopped the worker and that it is
        // processed again.
        return Err(e);
    }
    if unfinished.is_empty() {
        Lifecycle::StoppedCleanly {
            records: report.records,
        }
        .emit(metrics);
    } else {
        Lifecycle::StoppedIncomplete {
            records: report.records,
            unfinished,
            flush_error: flush_error.as_ref(),
        }
        .emit(metrics);
    }
    report.unfinished = unfinished;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::keys;
    use crate::config::RawConfig;

    #[test]
    fn without_room_the_loop_waits_then_pauses_and_resumes_once_room_comes() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut w = RoomWait::new(PAUSE_AFTER);
        assert_eq!(w.next(true, at(0)), RoomStep::Poll);
        // A short wait for acknowledgements keeps what was fetched ahead.
        assert_eq!(w.next(false, at(1)), RoomStep::Wait);
        assert_eq!(w.next(false, at(500)), RoomStep::Wait);
        assert_eq!(w.next(true, at(600)), RoomStep::Poll);
        // The wait counts from when room ran out this time.
        assert_eq!(w.next(false, at(700)), RoomStep::Wait);
        assert_eq!(w.next(false, at(1_600)), RoomStep::Wait);
        let pause_at = 700 + PAUSE_AFTER.as_millis() as u64;
        assert_eq!(w.next(false, at(pause_at)), RoomStep::Pause);
        // Paused, the consumer is polled until room comes, then resumed once.
        assert_eq!(w.next(false, at(pause_at + 1)), RoomStep::Poll);
        assert_eq!(w.next(false, at(pause_at + 60_000)), RoomStep::Poll);
        assert_eq!(w.next(true, at(pause_at + 60_001)), RoomStep::Resume);
        assert_eq!(w.next(true, at(pause_at + 60_002)), RoomStep::Poll);
        assert_eq!(w.next(false, at(pause_at + 60_003)), RoomStep::Wait);
    }

    /// Closing keeps a fifth of the drain deadline, never less than a
    /// second unless that would be more than half of the deadline.
    #[test]
    fn closing_keeps_a_fifth_of_the_deadline_at_least_a_second_at_most_half() {
        let ms = Duration::from_millis;
        for (drain, kept) in [
            (ms(10_000), ms(2_000)),
            (ms(30_000), ms(6_000)),
            (ms(5_000), ms(1_000)),
            (ms(2_000), ms(1_000)),
            (ms(1_500), ms(750)),
            (ms(100), ms(50)),
        ] {
            assert_eq!(close_allowance(drain), kept, "{drain:?}");
        }
    }

    /// The key file is replaced after the configuration was loaded and
    /// checked: the worker still signs with the key that was checked.
    #[test]
    fn the_worker_signs_with_the_key_read_with_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let (checked, _) = keys::generate(&dir.path().join("checked")).unwrap();
        let (other, _) = keys::generate(&dir.path().join("other")).unwrap();
        let mut flags = RawConfig::default();
        flags.kafka.brokers = Some("127.0.0.1:9".into());
        flags.audit.signing_key_file = Some(checked.clone());
        let config = RawConfig::load_for_worker(
            None,
            flags,
            &crate::config::Librdkafka {
                features: &crate::kafka::client::library().features,
                refuses: &crate::kafka::client::refuses,
                clients: &crate::kafka::client::refuses_clients,
            },
        )
        .unwrap();
        let want = keys::load_signing_key(&checked).unwrap();
        std::fs::rename(&other, &checked).unwrap();
        assert_ne!(keys::load_signing_key(&checked).unwrap(), want);
        let key = seal_settings(&config).unwrap().key;
        assert_eq!(key.as_ref(), Some(&want));
    }

    /// A configuration built in code that names a key file without reading
    /// it does not sign with whatever the file holds by then.
    #[test]
    fn a_key_file_named_but_not_read_stops_the_worker() {
        let mut config = Config::default();
        config.audit.signing_key_file = Some("audit.key".into());
        let e = seal_settings(&config).err().unwrap();
        assert_eq!(
            e.to_string(),
            "audit signing key: audit.signing_key_file audit.key was not read with the configuration: nothing signs with a key the configuration's checks did not read"
        );
    }
}
