//! librdkafka client configurations for the worker, produced from the
//! validated [`KafkaConfig`]: the settings groundgate's guarantees depend on
//! are set here, and the user's passthrough properties are layered on top
//! (config validation already refused passthrough of managed keys).
//!
//! [`MANAGED`] is the one list of those keys: every key the functions below
//! set is in it (a unit test checks that), except the pure tuning defaults
//! in `TUNABLE`, which a passthrough may override.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::KafkaError;
use rdkafka::{ClientConfig, ClientContext};
use tracing::{debug, error, info, warn};

use crate::config::{Guarantee, KafkaConfig};

/// The producer type every groundgate client uses: errors go through
/// [`LogContext`], so each is logged once.
pub type FutureProducer = rdkafka::producer::FutureProducer<LogContext>;

/// Minimum spacing of repeated client-error logs.
const ERROR_LOG_EVERY: Duration = Duration::from_secs(10);

/// The raw metadata bytes committed with `topic`/`partition` in `tpl`
/// (empty when there are none or the entry is absent). rdkafka's accessor
/// panics on metadata that is not UTF-8, which another tool or a damaged
/// group can hold: those bytes must be reported, not crash the reader.
#[allow(unsafe_code)]
pub fn metadata_bytes(tpl: &rdkafka::TopicPartitionList, topic: &str, partition: i32) -> Vec<u8> {
    // SAFETY: `tpl` owns its native list for the borrow's lifetime; `elems`
    // holds `cnt` initialised entries, each with a NUL-terminated topic and
    // `metadata_size` bytes at `metadata` when that is not null.
    unsafe {
        let list = &*tpl.ptr();
        let Ok(n) = usize::try_from(list.cnt) else {
            return Vec::new();
        };
        if list.elems.is_null() {
            return Vec::new();
        }
        std::slice::from_raw_parts(list.elems, n)
            .iter()
            .find(|e| {
                e.partition == partition
                    && !e.topic.is_null()
                    && std::ffi::CStr::from_ptr(e.topic).to_bytes() == topic.as_bytes()
            })
            .filter(|e| !e.metadata.is_null())
            .map(|e| std::slice::from_raw_parts(e.metadata as *const u8, e.metadata_size).to_vec())
            .unwrap_or_default()
    }
}

/// librdkafka's own log lines, forwarded to `tracing`. A connection failure
/// (facility `FAIL`) is also delivered as an error event, which the client
/// context logs (rate-limited); the log line is kept at debug so the same
/// failure is not printed twice.
pub fn log(level: RDKafkaLogLevel, fac: &str, msg: &str) {
    match level {
        _ if fac == "FAIL" => debug!(target: "librdkafka", "{fac} {msg}"),
        RDKafkaLogLevel::Emerg
        | RDKafkaLogLevel::Alert
        | RDKafkaLogLevel::Critical
        | RDKafkaLogLevel::Error => error!(target: "librdkafka", "{fac} {msg}"),
        RDKafkaLogLevel::Warning => warn!(target: "librdkafka", "{fac} {msg}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
            info!(target: "librdkafka", "{fac} {msg}")
        }
        RDKafkaLogLevel::Debug => debug!(target: "librdkafka", "{fac} {msg}"),
    }
}

/// Client context of producers: logs each client error once (at most every
/// 10 s while it repeats), or only at debug when another client of the same
/// process (the worker's consumer) already reports the same brokers.
pub struct LogContext {
    loud: bool,
    last: Mutex<Option<Instant>>,
}

impl LogContext {
    /// Reports client errors (a producer on its own, e.g. `produce`).
    pub fn loud() -> LogContext {
        LogContext {
            loud: true,
            last: Mutex::new(None),
        }
    }

    /// Leaves client errors to another client's context.
    pub fn quiet() -> LogContext {
        LogContext {
            loud: false,
            last: Mutex::new(None),
        }
    }
}

impl ClientContext for LogContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        log(level, fac, log_message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if !self.loud {
            debug!(error = %error, reason, "Kafka producer client error");
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_none_or(|t| t.elapsed() >= ERROR_LOG_EVERY) {
            *last = Some(Instant::now());
            warn!(error = %error, reason, "Kafka client error (retrying; check that the brokers are reachable)");
        }
    }
}

/// A librdkafka property groundgate sets itself and refuses in
/// `kafka.properties` / `-X`.
#[derive(Debug, Clone, Copy)]
pub struct Managed {
    /// The property name, as librdkafka spells it.
    pub key: &'static str,
    /// Other names librdkafka accepts for the same property.
    pub aliases: &'static [&'static str],
    /// What groundgate sets and why overriding it would break a promise.
    pub why: &'static str,
    /// The groundgate setting to use instead, if there is one.
    pub instead: Option<&'static str>,
}

/// Every librdkafka property the worker manages. Changing any of them
/// through the passthrough would silently weaken the delivery guarantee or
/// contradict a groundgate setting, so config validation refuses them.
pub const MANAGED: &[Managed] = &[
    Managed {
        key: "bootstrap.servers",
        aliases: &["metadata.broker.list"],
        why: "the brokers",
        instead: Some("kafka.brokers / --brokers"),
    },
    Managed {
        key: "client.id",
        aliases: &[],
        why: "the client id reported to the brokers",
        instead: Some("kafka.client_id / --client-id"),
    },
    Managed {
        key: "group.id",
        aliases: &[],
        why: "the consumer group",
        instead: Some("kafka.group_id / --group-id"),
    },
    Managed {
        key: "group.instance.id",
        aliases: &[],
        why: "static group membership",
        instead: Some("kafka.group_instance_id"),
    },
    Managed {
        key: "session.timeout.ms",
        aliases: &[],
        why: "how long the group waits for a member that stopped without leaving",
        instead: Some("kafka.session_timeout_ms"),
    },
    Managed {
        key: "partition.assignment.strategy",
        aliases: &[],
        why: "cooperative-sticky: the rebalance callbacks drain and commit only the revoked partitions",
        instead: None,
    },
    Managed {
        key: "auto.offset.reset",
        aliases: &[],
        why: "earliest: a new group reads the input from its start, so no record is skipped",
        instead: None,
    },
    Managed {
        key: "enable.partition.eof",
        aliases: &[],
        why: "false: end-of-partition events are not records",
        instead: None,
    },
    Managed {
        key: "isolation.level",
        aliases: &[],
        why: "read_committed: records of aborted transactions are never validated",
        instead: None,
    },
    Managed {
        key: "enable.auto.offset.store",
        aliases: &[],
        why: "false: an offset is stored only after both outputs of its record are acknowledged",
        instead: None,
    },
    Managed {
        key: "enable.auto.commit",
        aliases: &["auto.commit.enable"],
        why: "true for at-least-once (commits only stored offsets), false for exactly-once (offsets travel in the transaction)",
        instead: Some("kafka.guarantee"),
    },
    Managed {
        key: "auto.commit.interval.ms",
        aliases: &[],
        why: "how often stored offsets are committed",
        instead: Some("kafka.commit_interval_ms"),
    },
    Managed {
        key: "statistics.interval.ms",
        aliases: &[],
        why: "the consumer lag metric",
        instead: Some("metrics.statistics_interval_ms"),
    },
    Managed {
        key: "enable.idempotence",
        aliases: &[],
        why: "true: re-sent outputs are not duplicated and stay in order",
        instead: None,
    },
    Managed {
        key: "acks",
        aliases: &["request.required.acks"],
        why: "all: an output counts as published only once every in-sync replica has it",
        instead: None,
    },
    Managed {
        key: "transactional.id",
        aliases: &[],
        why: "the exactly-once producer identity (fences a zombie predecessor)",
        instead: Some("kafka.transactional_id"),
    },
    Managed {
        key: "message.max.bytes",
        aliases: &[],
        why: "the largest output, checked against max_record_bytes at start",
        instead: Some("kafka.max_message_bytes"),
    },
];

/// Keys set here as defaults for throughput only; a passthrough may change them.
#[cfg(test)]
pub const TUNABLE: &[&str] = &["linger.ms", "compression.type"];

/// The managed entry a passthrough key collides with, by name or alias
/// (librdkafka names are matched case-insensitively, to be safe).
pub fn managed(key: &str) -> Option<&'static Managed> {
    let key = key.trim();
    MANAGED.iter().find(|m| {
        m.key.eq_ignore_ascii_case(key) || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(key))
    })
}

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
        // A clean stop leaves the group (the consumer is closed), so this
        // only matters after SIGKILL, a crash or a network partition.
        .set(
            "session.timeout.ms",
            k.session_timeout.as_millis().to_string(),
        )
        // Offsets are stored by the worker only after both outputs of a
        // record are acknowledged; librdkafka then commits what was stored.
        .set("enable.auto.offset.store", "false");
    if let Some(id) = &k.group_instance_id {
        c.set("group.instance.id", id);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RawConfig;

    /// Every key this module sets is either managed or an explicit tunable:
    /// a new setting cannot be added without deciding which.
    #[test]
    fn every_key_set_here_is_in_the_managed_table() {
        for guarantee in [Guarantee::AtLeastOnce, Guarantee::ExactlyOnce] {
            let mut raw = RawConfig::default();
            raw.kafka.guarantee = Some(guarantee);
            raw.kafka.group_instance_id = Some("worker-0".into());
            let k = raw.validate().unwrap().kafka;
            for c in [consumer(&k, "b:9092", Some(1000)), producer(&k, "b:9092")] {
                for key in c.config_map().keys() {
                    assert!(
                        managed(key).is_some() || TUNABLE.contains(key),
                        "{key} is set by groundgate but neither managed nor tunable"
                    );
                }
            }
        }
    }

    #[test]
    fn aliases_are_recognised() {
        assert_eq!(
            managed("request.required.acks").map(|m| m.key),
            Some("acks")
        );
        assert_eq!(managed(" ACKS ").map(|m| m.key), Some("acks"));
        assert_eq!(
            managed("metadata.broker.list").map(|m| m.key),
            Some("bootstrap.servers")
        );
        assert!(managed("security.protocol").is_none());
        assert!(managed("linger.ms").is_none());
    }
}
