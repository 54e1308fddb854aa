//! librdkafka client configurations for the worker, produced from the
//! validated [`KafkaConfig`]: the settings groundgate's guarantees depend on
//! are set here, and the user's passthrough properties are layered on top
//! (config validation already refused passthrough of managed keys).

use rdkafka::ClientConfig;

use crate::config::{Guarantee, KafkaConfig};

fn base(k: &KafkaConfig, bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("client.id", &k.client_id);
    c
}

/// The user's librdkafka properties go last so they can tune anything that
/// is not managed (managed keys were refused when the config was validated).
fn with_passthrough(mut c: ClientConfig, k: &KafkaConfig) -> ClientConfig {
    for (key, value) in &k.properties {
        c.set(key, value);
    }
    c
}

/// The consumer: manual offset store, cooperative-sticky assignment.
pub fn consumer(k: &KafkaConfig, bootstrap: &str, statistics_ms: Option<u64>) -> ClientConfig {
    let mut c = base(k, bootstrap);
    c.set("group.id", &k.group_id)
        .set("partition.assignment.strategy", "cooperative-sticky")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "false")
        .set("isolation.level", "read_committed")
        // Offsets are stored by the worker only after both outputs of a
        // record are acknowledged; librdkafka then commits what was stored.
        .set("enable.auto.offset.store", "false");
    match k.guarantee {
        Guarantee::AtLeastOnce => {
            c.set("enable.auto.commit", "true").set(
                "auto.commit.interval.ms",
                k.commit_interval.as_millis().to_string(),
            );
        }
        // Offsets travel inside the transaction instead.
        Guarantee::ExactlyOnce => {
            c.set("enable.auto.commit", "false");
        }
    }
    if let Some(ms) = statistics_ms {
        c.set("statistics.interval.ms", ms.to_string());
    }
    with_passthrough(c, k)
}

/// The producer: idempotent, acks from all in-sync replicas; transactional
/// for exactly-once.
pub fn producer(k: &KafkaConfig, bootstrap: &str) -> ClientConfig {
    let mut c = base(k, bootstrap);
    c.set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("compression.type", "lz4")
        .set("message.max.bytes", k.max_message_bytes.to_string());
    if k.guarantee == Guarantee::ExactlyOnce {
        c.set("transactional.id", &k.transactional_id);
    }
    with_passthrough(c, k)
}
