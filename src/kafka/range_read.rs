//! One read of a topic range, for the commands that read a topic through
//! and stop (`replay`, `audit verify`): every chosen partition from a first
//! offset up to the high watermark it had when the read began, in order
//! per partition. Records written after that are left for the next run, so
//! a topic that keeps growing (or that the command itself writes back to)
//! still ends the read. An offset past the last record (a transaction
//! marker, a deleted record) is never delivered, but the reader's position
//! still moves past it: a partition whose position reached its end is done.
//!
//! Must not: join a consumer group or commit an offset (partitions are
//! assigned), judge what a record holds, or be called on the async
//! runtime: every call blocks, so async callers run it on a blocking
//! thread.

use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::BorrowedMessage;
use rdkafka::{Message, Offset, TopicPartitionList};

use super::client::LogContext;

/// How long a metadata or watermark request may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// How long one poll waits for a record: between polls, a stop asked for
/// is seen and the positions past the last record are checked.
const POLL: Duration = Duration::from_millis(100);

#[derive(Debug, thiserror::Error)]
pub enum RangeError {
    #[error("topic {0} does not exist or has no partition")]
    NoTopic(String),
    /// The partition asked for is not one of the topic's `partitions`.
    #[error("topic {topic} has no partition {partition}: it has {}", partitions_of(*.partitions))]
    NoPartition {
        topic: String,
        partition: i32,
        partitions: usize,
    },
    #[error(transparent)]
    Kafka(#[from] KafkaError),
}

/// `n` partitions, and their ids (a topic's are 0 up to `n` - 1).
pub fn partitions_of(n: usize) -> String {
    match n {
        1 => "1 partition, 0".to_string(),
        2 => "2 partitions, 0 and 1".to_string(),
        n => format!("{n} partitions, 0 to {}", n - 1),
    }
}

/// The partition ids of `topic`, in the order the cluster lists them; an
/// absent or partitionless topic is [`RangeError::NoTopic`].
pub fn partitions(
    consumer: &BaseConsumer<LogContext>,
    topic: &str,
) -> Result<Vec<i32>, RangeError> {
    let md = super::client::fetch_metadata(consumer, Some(topic), TIMEOUT)?;
    md.topics()
        .iter()
        .find(|t| t.name() == topic && !t.partitions().is_empty())
        .map(|t| t.partitions().iter().map(|p| p.id()).collect())
        .ok_or_else(|| RangeError::NoTopic(topic.to_string()))
}

/// One partition's part of the read: `from` up to `end` (exclusive), the
/// high watermark when the read began. Nothing is read when `from >= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub partition: i32,
    pub from: i64,
    pub end: i64,
}

/// A topic range being read; see the module documentation.
pub struct RangeRead {
    consumer: BaseConsumer<LogContext>,
    topic: String,
    spans: Vec<Span>,
    /// The partitions not read through yet, with their ends.
    remaining: std::collections::BTreeMap<i32, i64>,
    stop: Option<Box<dyn Fn() -> bool + Send>>,
}

impl RangeRead {
    /// Assigns `consumer` the partitions of `topic` (only `partition` when
    /// given; absent, it is [`RangeError::NoPartition`]), each from
    /// `from` (its low watermark when `None` or lower) up to its high
    /// watermark now.
    pub fn open(
        consumer: BaseConsumer<LogContext>,
        topic: &str,
        partition: Option<i32>,
        from: Option<i64>,
    ) -> Result<RangeRead, RangeError> {
        let mut ids = partitions(&consumer, topic)?;
        if let Some(p) = partition {
            let partitions = ids.len();
            ids.retain(|q| *q == p);
            if ids.is_empty() {
                return Err(RangeError::NoPartition {
                    topic: topic.to_string(),
                    partition: p,
                    partitions,
                });
            }
        }
        let mut spans = Vec::with_capacity(ids.len());
        let mut tpl = TopicPartitionList::new();
        for p in ids {
            let (lo, end) = consumer.fetch_watermarks(topic, p, TIMEOUT)?;
            let from = from.map_or(lo, |o| o.max(lo));
            spans.push(Span {
                partition: p,
                from,
                end,
            });
            if from < end {
                tpl.add_partition_offset(topic, p, Offset::Offset(from))?;
            }
        }
        consumer.assign(&tpl)?;
        let remaining = spans
            .iter()
            .filter(|s| s.from < s.end)
            .map(|s| (s.partition, s.end))
            .collect();
        Ok(RangeRead {
            consumer,
            topic: topic.to_string(),
            spans,
            remaining,
            stop: None,
        })
    }

    /// Ends the read early, at the next record or poll, once `stop` says
    /// so: a caller that gave up on the read need not wait for its end.
    pub fn stop_when(mut self, stop: impl Fn() -> bool + Send + 'static) -> RangeRead {
        self.stop = Some(Box::new(stop));
        self
    }

    /// Every partition read, in the order the cluster lists them.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// The next record of the range (in order within its partition), or
    /// `None` once every partition is read to its end or a stop was asked.
    pub fn next_record(&mut self) -> Result<Option<BorrowedMessage<'_>>, KafkaError> {
        let consumer = &self.consumer;
        while !self.remaining.is_empty() {
            if self.stop.as_ref().is_some_and(|stop| stop()) {
                return Ok(None);
            }
            let Some(msg) = consumer.poll(POLL) else {
                let positions = consumer.position()?;
                let topic = &self.topic;
                self.remaining.retain(|p, end| {
                    positions
                        .find_partition(topic, *p)
                        .and_then(|e| e.offset().to_raw())
                        .is_none_or(|pos| pos < *end)
                });
                continue;
            };
            let msg = msg?;
            let (p, offset) = (msg.partition(), msg.offset());
            // A record of a partition read through already, fetched with
            // the ones before its end, was written after the start.
            let Some(&end) = self.remaining.get(&p) else {
                continue;
            };
            if offset >= end {
                self.remaining.remove(&p);
                continue;
            }
            if offset + 1 >= end {
                self.remaining.remove(&p);
            }
            return Ok(Some(msg));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::embedded::EmbeddedBroker;
    use rdkafka::ClientConfig;
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn produce(producer: &BaseProducer, topic: &str, partition: i32, n: usize) {
        for _ in 0..n {
            producer
                .send(
                    BaseRecord::<(), [u8]>::to(topic)
                        .partition(partition)
                        .payload(&b"x"[..]),
                )
                .unwrap();
        }
        producer.flush(Duration::from_secs(10)).unwrap();
    }

    fn reader(bootstrap: &str) -> BaseConsumer<LogContext> {
        ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", "range-read-test")
            .set("enable.auto.commit", "false")
            .create_with_context(LogContext::quiet())
            .unwrap()
    }

    /// Partition 0 is read through at its first record; partition 1 takes
    /// a fetch a batch, while partition 0's newer records are fetched too:
    /// none past its end is delivered, and the read ends at the ends it
    /// began with although records keep coming.
    #[test]
    fn the_read_stops_at_the_ends_of_its_start_while_records_keep_coming() {
        let broker = EmbeddedBroker::start(2, &["t"]).unwrap();
        let bs = broker.bootstrap();
        let producer: BaseProducer = ClientConfig::new()
            .set("bootstrap.servers", &bs)
            .create()
            .unwrap();
        produce(&producer, "t", 0, 1);
        for _ in 0..8 {
            produce(&producer, "t", 1, 20);
        }
        // One batch a partition a fetch, and no fetch far ahead of the read.
        let consumer = ClientConfig::new()
            .set("bootstrap.servers", &bs)
            .set("group.id", "range-read-test")
            .set("enable.auto.commit", "false")
            .set("fetch.message.max.bytes", "1")
            .set("queued.min.messages", "1")
            .set("queued.max.messages.kbytes", "1")
            .set("fetch.queue.backoff.ms", "10")
            .create_with_context(LogContext::quiet())
            .unwrap();
        let mut read = RangeRead::open(consumer, "t", None, None).unwrap();
        let mut spans = read.spans().to_vec();
        spans.sort_by_key(|s| s.partition);
        let want = [(0, 0, 1), (1, 0, 160)].map(|(partition, from, end)| Span {
            partition,
            from,
            end,
        });
        assert_eq!(spans, want);
        let done = Arc::new(AtomicBool::new(false));
        let (batch, written) = std::sync::mpsc::channel();
        let writer = std::thread::spawn({
            let done = done.clone();
            move || {
                while !done.load(Ordering::Relaxed) {
                    produce(&producer, "t", 0, 20);
                    let _ = batch.send(());
                }
            }
        });
        // Partition 0's newer records are there before the read begins.
        for _ in 0..3 {
            written.recv().unwrap();
        }
        let mut got: Vec<(i32, i64)> = Vec::new();
        while let Some(m) = read.next_record().unwrap() {
            got.push((m.partition(), m.offset()));
        }
        done.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        let of = |p| {
            got.iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, o)| *o)
                .collect::<Vec<_>>()
        };
        assert_eq!(of(0), [0]);
        assert_eq!(of(1), (0..160).collect::<Vec<_>>());
    }

    #[test]
    fn an_absent_topic_or_partition_is_named() {
        let broker = EmbeddedBroker::start(2, &["t"]).unwrap();
        let bs = broker.bootstrap();
        let e = RangeRead::open(reader(&bs), "absent", None, None)
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "topic absent does not exist or has no partition"
        );
        let e = RangeRead::open(reader(&bs), "t", Some(3), None)
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                RangeError::NoPartition {
                    partition: 3,
                    partitions: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "topic t has no partition 3: it has 2 partitions, 0 and 1"
        );
    }

    #[test]
    fn partitions_are_counted_and_named() {
        assert_eq!(partitions_of(1), "1 partition, 0");
        assert_eq!(partitions_of(4), "4 partitions, 0 to 3");
    }
}
