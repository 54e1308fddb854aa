//! Reading output topics back: used by `demo` to report what went where and
//! by the integration tests.
//! Blocking (librdkafka poll): call it from a blocking thread.

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, OwnedMessage};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

/// Reads `topics` from the beginning (no consumer group offsets are touched)
/// until `done(messages so far)` says so or `deadline` passes; returns what
/// was read, per topic in the order given.
pub fn read_until(
    bootstrap: &str,
    topics: &[&str],
    deadline: Duration,
    mut done: impl FnMut(&[Vec<OwnedMessage>]) -> bool,
) -> Result<Vec<Vec<OwnedMessage>>, KafkaError> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "groundgate-inspect")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()?;
    let metadata = consumer.fetch_metadata(None, Duration::from_secs(10))?;
    let mut tpl = TopicPartitionList::new();
    for t in topics {
        if let Some(m) = metadata.topics().iter().find(|m| m.name() == *t) {
            for p in m.partitions() {
                tpl.add_partition_offset(t, p.id(), Offset::Beginning)?;
            }
        }
    }
    consumer.assign(&tpl)?;
    let mut out: Vec<Vec<OwnedMessage>> = vec![Vec::new(); topics.len()];
    let end = Instant::now() + deadline;
    while !done(&out) && Instant::now() < end {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                if let Some(i) = topics.iter().position(|t| *t == m.topic()) {
                    out[i].push(m.detach());
                }
            }
            Some(Err(e)) => tracing::debug!(error = %e, "inspect poll"),
            None => {}
        }
    }
    Ok(out)
}

/// Whether a record of the audit topic is a seal (it carries the
/// `groundgate.seal` header), not an audit row.
pub fn is_seal(m: &OwnedMessage) -> bool {
    m.headers()
        .is_some_and(|h| h.iter().any(|h| h.key == super::outputs::H_SEAL))
}
