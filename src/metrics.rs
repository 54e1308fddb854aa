//! The closed Prometheus vocabulary of groundgate (`groundgate_<name>_<unit>`,
//! counters end in `_total`). Labels only take values from the enums below or
//! from the configured provider/model allow-lists (everything else is `other`).
//!
//! SKELETON: the observability work fills in the bodies; the signatures are the
//! contract the worker codes against.

use std::time::Duration;

use crate::config::MetricsConfig;
use crate::core::{OutcomeKind, Summary};

/// Role of an output topic, used as the `role` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicRole {
    Final,
    Retry,
    Audit,
    DeadLetter,
}

impl TopicRole {
    pub fn as_str(self) -> &'static str {
        match self {
            TopicRole::Final => "final",
            TopicRole::Retry => "retry",
            TopicRole::Audit => "audit",
            TopicRole::DeadLetter => "dead_letter",
        }
    }
}

/// Class of a publish/commit error, used as the `class` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Transient: librdkafka or the worker retries it.
    Retriable,
    /// Message exceeds the broker/topic size limit.
    TooLarge,
    /// Delivery timed out (`message.timeout.ms`).
    Timeout,
    /// Authorization, fencing, unknown topic, invalid config...: stops the worker.
    Fatal,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Retriable => "retriable",
            ErrorClass::TooLarge => "too_large",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Fatal => "fatal",
        }
    }
}

/// Kind of consumer-group rebalance event, used as the `kind` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RebalanceKind {
    Assign,
    Revoke,
}

/// Handle to every groundgate metric, registered in its own registry.
pub struct Metrics {
    registry: prometheus::Registry,
}

impl Metrics {
    pub fn new(cfg: &MetricsConfig) -> Result<Metrics, prometheus::Error> {
        let _ = cfg;
        Ok(Metrics {
            registry: prometheus::Registry::new(),
        })
    }

    /// One processed input record: outcome/mode, findings, citations, usage, pure-step time.
    pub fn record_outcome(&self, kind: OutcomeKind, summary: &Summary, processing: Duration) {
        let _ = (kind, summary, processing);
    }

    /// Input record timestamp → both outputs acknowledged.
    pub fn observe_end_to_end(&self, latency: Duration) {
        let _ = latency;
    }

    pub fn record_published(&self, role: TopicRole) {
        let _ = role;
    }

    pub fn record_publish_error(&self, class: ErrorClass) {
        let _ = class;
    }

    pub fn record_transaction_committed(&self) {}

    pub fn record_transaction_aborted(&self) {}

    pub fn record_rebalance(&self, kind: RebalanceKind) {
        let _ = kind;
    }

    pub fn set_assigned_partitions(&self, n: usize) {
        let _ = n;
    }

    /// Replaces the per-partition lag gauges with `lags` (topic, partition, lag);
    /// partitions no longer present are removed so cardinality stays bounded.
    pub fn set_consumer_lag(&self, lags: &[(String, i32, i64)]) {
        let _ = lags;
    }

    /// Prometheus text exposition of every registered metric.
    pub fn encode(&self) -> String {
        let _ = &self.registry;
        String::new()
    }
}
