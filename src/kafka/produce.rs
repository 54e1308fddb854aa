//! `groundgate produce`: streams answers to the input topic, from a JSON
//! Lines file or from the deterministic synthetic generator, at a given
//! rate. It is the sample producer of docker-compose and a load source; it
//! never validates anything itself.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::producer::{DeliveryFuture, FutureRecord, Producer};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::client::{FutureProducer, LogContext};
use crate::config::KafkaConfig;

#[derive(Debug, thiserror::Error)]
pub enum ProduceError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "cannot read {path}: line {line} is {bytes} bytes, larger than kafka.max_message_bytes ({cap})"
    )]
    TooLong {
        path: String,
        line: u64,
        bytes: u64,
        cap: usize,
    },
    #[error("cannot create the producer: {0}")]
    Client(KafkaError),
    #[error(
        "no broker at {bootstrap} answered within {} s ({source}): nothing was sent. Check the address (--brokers, GROUNDGATE_BROKERS or kafka.brokers), that a broker listens there and, on a secured cluster, the TLS and SASL settings; for development, `groundgate dev-broker --port 9092` runs one",
        META_TIMEOUT.as_secs()
    )]
    Unreachable {
        bootstrap: String,
        source: KafkaError,
    },
    #[error(
        "record {} was not delivered: {source}; the {delivered} records before it were; records after it may have been too (sent twice if produced again): go on with --skip {delivered}",
        delivered + 1
    )]
    Delivery {
        /// Records delivered before the first one that was not, which
        /// every earlier record was (those left out by `--skip` counted).
        delivered: u64,
        source: KafkaError,
    },
    #[error(
        "{source}; the {sent} records before it were sent, and nothing after it: go on with --skip {sent} {}",
        go_on(source, *sent)
    )]
    Stopped {
        /// Records before the one that stopped the run (those left out by
        /// `--skip` counted).
        sent: u64,
        source: Box<ProduceError>,
    },
    #[error(
        "cannot read past the first {skip} records of {path}, which --skip leaves out: {what}; nothing was sent"
    )]
    Skipping {
        path: String,
        skip: u64,
        what: String,
    },
    #[error(
        "{what}; the dev broker (librdkafka's mock cluster) keeps at most {MOCK_MAX_MSGS} messages / {MOCK_MAX_BYTES} bytes (after compression) per partition and silently drops the oldest beyond that. Produce fewer records (--count), or start `groundgate dev-broker` with more --partitions"
    )]
    MockRetention { what: String },
}

/// How a run stopped by `source`, after the `sent` records before it, goes
/// on: past a line too long to send, or once the input reads again (a cut
/// compressed stream cannot be read past).
fn go_on(source: &ProduceError, sent: u64) -> String {
    match source {
        ProduceError::TooLong { .. } => format!(
            "once it is short enough, or --skip {} to leave it out",
            sent + 1
        ),
        _ => "once it can be read".to_string(),
    }
}

/// What librdkafka's mock cluster (`dev-broker`) keeps per partition
/// (rdkafka_mock.c: `max_cnt`, `max_size`); older messages are deleted.
pub const MOCK_MAX_MSGS: i64 = 100_000;
pub const MOCK_MAX_BYTES: i64 = 5 * 1024 * 1024;

/// Deliveries awaited at once; bounds memory when producing forever.
const MAX_PENDING: usize = 10_000;

/// How long a stopped run waits, once what it sent is delivered, for its
/// input to say whether it holds more records: a file's reader sees its
/// end a moment after handing over its last line, while a pipe left open
/// may never say.
const INPUT_END_WAIT: Duration = Duration::from_millis(250);

/// What a run sent, and whether a stop ended it before its input did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Records delivered (not counting those left out before the first).
    pub records: u64,
    /// Whether a stop ended the run while its input may have held more
    /// records. A stop that comes once every record was handed to the
    /// producer does not: the run sent all it had to.
    pub stopped: bool,
}

/// A producer with the same client settings as the worker's outputs.
pub fn producer(k: &KafkaConfig, bootstrap: &str) -> Result<FutureProducer, ProduceError> {
    producer_config(k, bootstrap, Duration::from_millis(5))
        .create_with_context(LogContext::loud())
        .map_err(ProduceError::Client)
}

/// The settings of [`producer`], waiting `linger` for more records to
/// batch with one (`-X linger.ms` overrides it).
pub fn producer_config(k: &KafkaConfig, bootstrap: &str, linger: Duration) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("client.id", format!("{}-producer", k.client_id))
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", linger.as_millis().to_string())
        .set("compression.type", "lz4")
        .set("message.max.bytes", k.max_message_bytes.to_string());
    super::client::secured(&mut c, &k.security);
    for (key, value) in &k.properties {
        c.set(key, value);
    }
    c
}

/// The partitions of `topic`, or an error when no broker of `bootstrap`
/// answers a metadata request. Without it, records sent to a mistyped
/// address wait in the producer for librdkafka's message timeout (five
/// minutes) before any error is said, and a Ctrl-C waits for them too.
/// Blocks: call it off the async runtime.
pub fn reachable(
    producer: &FutureProducer,
    bootstrap: &str,
    topic: &str,
) -> Result<Vec<i32>, ProduceError> {
    let metadata = producer
        .client()
        .fetch_metadata(Some(topic), META_TIMEOUT)
        .map_err(|source| ProduceError::Unreachable {
            bootstrap: bootstrap.to_string(),
            source,
        })?;
    Ok(metadata
        .topics()
        .iter()
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect())
}

#[derive(Deserialize)]
struct Rid<'a> {
    #[serde(borrow)]
    request_id: Option<std::borrow::Cow<'a, str>>,
}

/// Sends every record to `topic` at `rate` records/s (0 = unthrottled),
/// keyed by request_id when it can be read (a framed value's too), and
/// waits for every delivery.
pub async fn send_all(
    producer: &FutureProducer,
    topic: &str,
    records: impl Iterator<Item = Result<Vec<u8>, ProduceError>>,
    rate: u64,
) -> Result<u64, ProduceError> {
    let mut records = records;
    let next = async || records.next();
    send_until(producer, topic, next, rate, 0, &CancellationToken::new())
        .await
        .map(|sent| sent.records)
}

/// [`send_all`] that stops taking records once `stop` is cancelled, also
/// while `next` waits for one (a pipe that stays open with nothing to
/// read); the records already handed to the producer are still awaited, so
/// the count returned is of delivered records. `next` is awaited with the
/// stop beside it, so it must not lose a record when dropped unfinished
/// (a channel's `recv` does not). `skipped`: the records of the input
/// left out before the first one `next` gives, which the numbers an error
/// says count, so that `--skip` goes on from them.
///
/// A stop that comes between two records is followed, once what was sent
/// is delivered, by one more `next` (for at most `INPUT_END_WAIT`): when
/// it says the input ended, the run sent every record and is not
/// [`Sent::stopped`] (a signal just after the last record is not an
/// interruption, and its `--skip` would send nothing).
pub async fn send_until(
    producer: &FutureProducer,
    topic: &str,
    mut next: impl AsyncFnMut() -> Option<Result<Vec<u8>, ProduceError>>,
    rate: u64,
    skipped: u64,
    stop: &CancellationToken,
) -> Result<Sent, ProduceError> {
    let started = Instant::now();
    // Each delivery with how many records came before its record.
    let mut pending: VecDeque<(u64, DeliveryFuture)> = VecDeque::new();
    let mut sent = 0u64;
    let mut stopped_by = None;
    // Whether a stop came between two records (`Some(false)`), or while a
    // record taken waited for its turn (`Some(true)`, that record unsent).
    let mut stopped_with_record = None;
    loop {
        let rec = tokio::select! {
            biased;
            _ = stop.cancelled() => {
                stopped_with_record = Some(false);
                break;
            }
            rec = next() => rec,
        };
        let Some(rec) = rec else { break };
        let rec = match rec {
            Ok(rec) => rec,
            Err(e) => {
                stopped_by = Some(e);
                break;
            }
        };
        if rate > 0 {
            let due = started + Duration::from_secs_f64(sent as f64 / rate as f64);
            tokio::select! {
                _ = tokio::time::sleep_until(due.into()) => {}
                _ = stop.cancelled() => {
                    stopped_with_record = Some(true);
                    break;
                }
            }
        }
        // A framed value's JSON starts past its Schema Registry header.
        let json = &rec[crate::core::wire::header_bytes(&rec)..];
        let key = serde_json::from_slice::<Rid<'_>>(json)
            .ok()
            .and_then(|r| r.request_id)
            .map(|k| k.into_owned());
        let mut fr = FutureRecord::to(topic).payload(rec.as_slice());
        if let Some(k) = &key {
            fr = fr.key(k.as_str());
        }
        let fut = loop {
            match producer.send_result(fr) {
                Ok(f) => break f,
                Err((
                    KafkaError::MessageProduction(rdkafka::types::RDKafkaErrorCode::QueueFull),
                    back,
                )) => {
                    fr = back;
                    if let Some(f) = pending.pop_front() {
                        settle(f).await?;
                    } else {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                Err((e, _)) => {
                    // Every earlier record is delivered first: the count
                    // said is of records delivered.
                    for f in pending {
                        settle(f).await?;
                    }
                    return Err(ProduceError::Delivery {
                        delivered: skipped + sent,
                        source: e,
                    });
                }
            }
        };
        pending.push_back((skipped + sent, fut));
        sent += 1;
        while pending.len() > MAX_PENDING {
            if let Some(f) = pending.pop_front() {
                settle(f).await?;
            }
        }
    }
    // What was handed to the producer is delivered and counted before a
    // stop by a bad record too, so the count said is the count sent. In
    // order: a failure names the first record not delivered.
    for f in pending {
        settle(f).await?;
    }
    let stopped = match stopped_with_record {
        None | Some(true) => stopped_with_record.is_some(),
        // Whatever `next` gives here is not sent: the run stops either way,
        // and only says whether its input held more.
        Some(false) => !matches!(tokio::time::timeout(INPUT_END_WAIT, next()).await, Ok(None)),
    };
    match stopped_by {
        Some(e @ ProduceError::Skipping { .. }) => Err(e),
        Some(e) => Err(ProduceError::Stopped {
            sent: skipped + sent,
            source: Box::new(e),
        }),
        None => Ok(Sent {
            records: sent,
            stopped,
        }),
    }
}

/// Awaits one delivery; `before`: the records before its record.
async fn settle((before, f): (u64, DeliveryFuture)) -> Result<(), ProduceError> {
    let failed = |source| ProduceError::Delivery {
        delivered: before,
        source,
    };
    match f.await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err((e, _))) => Err(failed(e)),
        Err(_) => Err(failed(KafkaError::Canceled)),
    }
}

/// Watches a produce run into the dev broker (the mock cluster), which
/// truncates partitions silently: refuses a `--count` that cannot fit, and
/// reports any record the broker dropped while producing.
pub struct MockCheck {
    topic: String,
    /// Log start offset per partition before producing.
    low: Vec<(i32, i64)>,
}

const META_TIMEOUT: Duration = Duration::from_secs(10);

impl MockCheck {
    /// `partitions`: those of `topic` ([`reachable`]).
    pub fn start(
        producer: &FutureProducer,
        topic: &str,
        partitions: &[i32],
        count: Option<u64>,
    ) -> Result<Option<MockCheck>, ProduceError> {
        let client = producer.client();
        let is_mock = client
            .fetch_cluster_id(META_TIMEOUT)
            .is_some_and(|id| id.starts_with("mockCluster"));
        if !is_mock {
            return Ok(None);
        }
        let mut low = Vec::with_capacity(partitions.len());
        let mut held = 0i64;
        for p in partitions {
            let (lo, hi) = client
                .fetch_watermarks(topic, *p, META_TIMEOUT)
                .map_err(ProduceError::Client)?;
            held = held.max(hi - lo);
            low.push((*p, lo));
        }
        if let Some(n) = count
            && !partitions.is_empty()
        {
            // Keys spread records about evenly over the partitions.
            let per = held + n.div_ceil(partitions.len() as u64) as i64;
            if per > MOCK_MAX_MSGS {
                return Err(ProduceError::MockRetention {
                    what: format!(
                        "--count {n} over {} partitions of {topic} would put about {per} messages in a partition",
                        partitions.len()
                    ),
                });
            }
        }
        Ok(Some(MockCheck {
            topic: topic.to_string(),
            low,
        }))
    }

    pub fn finish(self, producer: &FutureProducer) -> Result<(), ProduceError> {
        let mut dropped = Vec::new();
        for (p, before) in &self.low {
            let (lo, _) = producer
                .client()
                .fetch_watermarks(&self.topic, *p, META_TIMEOUT)
                .map_err(ProduceError::Client)?;
            if lo > *before {
                dropped.push(format!("partition {p}: {}", lo - before));
            }
        }
        if dropped.is_empty() {
            return Ok(());
        }
        Err(ProduceError::MockRetention {
            what: format!(
                "the dev broker DROPPED the oldest records of {} while this run produced ({}); records not yet consumed are lost",
                self.topic,
                dropped.join(", ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};

    /// A value in Schema Registry wire format (a line of a framed topic's
    /// dump) is keyed by the request id of its JSON, as the same record
    /// sent plain is: the key decides the partition.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_framed_record_is_keyed_by_its_request_id_as_a_plain_one_is() {
        use rdkafka::Message;
        let broker = crate::kafka::embedded::EmbeddedBroker::start(1, &["answers"]).unwrap();
        let bs = broker.bootstrap();
        let mut raw = crate::config::RawConfig::default();
        raw.kafka.brokers = Some(bs.clone());
        let k = raw.validate().unwrap().kafka;
        let p = producer(&k, &bs).unwrap();
        let plain = br#"{"request_id":"plain","answer":"x"}"#.to_vec();
        let framed = crate::core::wire::framed(42, br#"{"request_id":"framed","answer":"x"}"#);
        let sent = send_all(&p, "answers", [plain, framed].into_iter().map(Ok), 0)
            .await
            .unwrap();
        assert_eq!(sent, 2);
        let got = tokio::task::spawn_blocking(move || {
            crate::kafka::inspect::read_until(&bs, &["answers"], Duration::from_secs(60), |got| {
                got[0].len() >= 2
            })
        })
        .await
        .unwrap()
        .unwrap();
        let keys: Vec<Option<&[u8]>> = got[0].iter().map(|m| m.key()).collect();
        assert_eq!(keys, [Some(&b"plain"[..]), Some(&b"framed"[..])]);
    }

    /// A producer on an embedded broker with an `answers` topic.
    fn answers_producer() -> (crate::kafka::embedded::EmbeddedBroker, FutureProducer) {
        let broker = crate::kafka::embedded::EmbeddedBroker::start(1, &["answers"]).unwrap();
        let mut raw = crate::config::RawConfig::default();
        raw.kafka.brokers = Some(broker.bootstrap());
        let k = raw.validate().unwrap().kafka;
        let p = producer(&k, &broker.bootstrap()).unwrap();
        (broker, p)
    }

    /// `n` records, the stop cancelled as record `stop_at` (from 1) is
    /// handed over, or as the input says it ended (`n + 1`): a signal
    /// that comes then.
    async fn send_stopped_at(p: &FutureProducer, n: u64, stop_at: u64) -> Sent {
        let stop = CancellationToken::new();
        let mut given = 0u64;
        let next = async || {
            given += 1;
            if given == stop_at {
                stop.cancel();
            }
            (given <= n).then(|| Ok(format!("{{\"n\":{given}}}").into_bytes()))
        };
        send_until(p, "answers", next, 0, 0, &stop).await.unwrap()
    }

    /// A signal just after the last record was handed over, or while the
    /// last deliveries are awaited, stops nothing: every record was sent,
    /// and the run says so, not where to go on from.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stop_after_the_last_record_is_a_finished_run() {
        let (_broker, p) = answers_producer();
        for stop_at in [3, 4] {
            let sent = send_stopped_at(&p, 3, stop_at).await;
            assert_eq!(
                sent,
                Sent {
                    records: 3,
                    stopped: false
                },
                "stop at {stop_at}"
            );
        }
        // Before the last, the run is stopped short of its end.
        let sent = send_stopped_at(&p, 3, 2).await;
        assert_eq!(
            sent,
            Sent {
                records: 2,
                stopped: true
            }
        );
    }

    /// A reader that sees the end of its input a moment after handing over
    /// the last record (a file's, on a thread of its own) finishes the run;
    /// one that says nothing more (a pipe left open) leaves it stopped.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stopped_run_waits_a_moment_for_its_input_to_say_it_ended() {
        let (_broker, p) = answers_producer();
        for (end_after, stopped) in [(Some(Duration::from_millis(20)), false), (None, true)] {
            let (tx, mut rx) = tokio::sync::mpsc::channel(4);
            let stop = CancellationToken::new();
            let reader = std::thread::spawn({
                let stop = stop.clone();
                move || {
                    for i in 0..2 {
                        tx.blocking_send(Ok(format!("{{\"n\":{i}}}").into_bytes()))
                            .unwrap();
                    }
                    // Once both are taken, the signal comes.
                    while tx.capacity() < tx.max_capacity() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    stop.cancel();
                    match end_after {
                        Some(wait) => std::thread::sleep(wait),
                        None => std::thread::sleep(INPUT_END_WAIT * 4),
                    }
                    drop(tx);
                }
            });
            let next = async || rx.recv().await;
            let sent = send_until(&p, "answers", next, 0, 0, &stop).await.unwrap();
            assert_eq!(
                sent,
                Sent {
                    records: 2,
                    stopped
                },
                "{end_after:?}"
            );
            reader.join().unwrap();
        }
    }

    /// A delivery that fails says which record it was and how many before
    /// it were delivered, not how many were handed to the producer: that
    /// is where a run of a file goes on from.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_delivery_names_the_first_record_not_delivered() {
        let broker = crate::kafka::embedded::EmbeddedBroker::start(1, &["answers"]).unwrap();
        broker.cluster().request_errors(
            RDKafkaApiKey::Produce,
            &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED; 50],
        );
        let mut raw = crate::config::RawConfig::default();
        raw.kafka.brokers = Some(broker.bootstrap());
        let k = raw.validate().unwrap().kafka;
        let p = producer(&k, &broker.bootstrap()).unwrap();
        let records = (0..40).map(|i| Ok(format!("{{\"n\":{i}}}").into_bytes()));
        let e = send_all(&p, "answers", records, 0).await.unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, ProduceError::Delivery { delivered: 0, .. }),
            "{text}"
        );
        assert!(text.starts_with("record 1 was not delivered: "), "{text}");
        assert!(
            text.ends_with("the 0 records before it were; records after it may have been too (sent twice if produced again): go on with --skip 0"),
            "{text}"
        );
    }
}
