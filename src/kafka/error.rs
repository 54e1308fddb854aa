//! The worker's errors: the explicit classification of Kafka errors into a
//! closed [`ErrorClass`] set (what the worker may retry and what must stop
//! it), and [`WorkerError`], why a worker stopped, with its retry hint. The
//! classification is table-tested because a wrong answer here either loses
//! data (treating a fatal error as skippable) or spins forever (retrying a
//! fatal one).
//!
//! The classes are the metrics `class` label's closed vocabulary
//! ([`crate::metrics::ErrorClass`]), so a class is counted as it is decided.
//! Must not know the metrics registry.

use std::time::Duration;

use rdkafka::error::{KafkaError, RDKafkaErrorCode as C};

use crate::audit::keys::KeyError;

pub use crate::metrics::ErrorClass;

/// Classifies an error code.
pub fn classify_code(code: C) -> ErrorClass {
    match code {
        C::MessageSizeTooLarge | C::MessageBatchTooLarge => ErrorClass::TooLarge,
        C::MessageTimedOut | C::RequestTimedOut | C::OperationTimedOut => ErrorClass::Timeout,
        C::NotEnoughReplicas
        | C::NotEnoughReplicasAfterAppend
        | C::LeaderNotAvailable
        | C::NotLeaderForPartition
        | C::NetworkException
        | C::BrokerNotAvailable
        | C::AllBrokersDown
        | C::BrokerTransportFailure
        | C::QueueFull
        | C::CoordinatorNotAvailable
        | C::NotCoordinator
        | C::CoordinatorLoadInProgress
        | C::KafkaStorageError
        | C::Retry
        | C::ConcurrentTransactions
        | C::RebalanceInProgress
        | C::PreferredLeaderNotAvailable
        | C::FetchSessionIdNotFound
        | C::InvalidFetchSessionEpoch
        | C::Resolve
        | C::OffsetNotAvailable
        | C::ThrottlingQuotaExceeded => ErrorClass::Retriable,
        _ => ErrorClass::Fatal,
    }
}

/// What to look at when no broker answers: librdkafka says only "broker
/// transport failure", which names neither the cause nor the settings.
macro_rules! no_broker_answered {
    () => {
        "no broker answered; check the address (--brokers, GROUNDGATE_BROKERS or kafka.brokers of --config), that a broker listens there and, on a secured cluster, the TLS and SASL settings"
    };
}

/// What to look at while librdkafka retries a client error. A topic that
/// does not exist, a principal the brokers refuse, is no matter of
/// reachability: the brokers answered.
pub fn retry_hint(e: &KafkaError) -> &'static str {
    match e.rdkafka_error_code() {
        Some(C::UnknownTopicOrPartition | C::UnknownTopic) => {
            "retrying; a topic does not exist: create it, groundgate creates none (`groundgate run --preflight` lists what is missing)"
        }
        Some(code) if refuses_principal(code) => {
            "retrying; the brokers refuse this principal an operation: grant it the ACLs the worker needs (docs/secured-kafka.md#what-the-principal-must-be-allowed)"
        }
        Some(C::SaslAuthenticationFailed | C::Authentication) => {
            "retrying; the brokers refuse the login: check kafka.sasl_username and its password, or the OIDC client (docs/secured-kafka.md)"
        }
        Some(code) if no_broker(code) => concat!("retrying; ", no_broker_answered!()),
        _ => "retrying; check that the brokers are reachable",
    }
}

/// Whether the brokers refused the principal an operation (missing ACLs).
fn refuses_principal(code: C) -> bool {
    matches!(
        code,
        C::TopicAuthorizationFailed
            | C::GroupAuthorizationFailed
            | C::ClusterAuthorizationFailed
            | C::TransactionalIdAuthorizationFailed
    )
}

/// Why a transaction call failed, as far as the operator is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TxnFailure {
    /// Another producer with the same transactional id took over.
    Fenced,
    /// The brokers refused the principal an operation of the transaction.
    Refused,
    /// Anything else: a restart may get past it.
    Other,
}

impl TxnFailure {
    fn of(e: &KafkaError) -> TxnFailure {
        match e.rdkafka_error_code() {
            Some(C::ProducerFenced | C::InvalidProducerEpoch) => TxnFailure::Fenced,
            Some(code) if refuses_principal(code) => TxnFailure::Refused,
            _ => TxnFailure::Other,
        }
    }
}

/// What to add to the error of a command that asks the cluster once and
/// exits (`audit verify`, `replay`) when no broker answered: librdkafka
/// says only "broker transport failure", which names neither the cause
/// nor the settings to look at.
pub fn unreachable_hint(e: &KafkaError) -> &'static str {
    match e.rdkafka_error_code() {
        Some(code) if no_broker(code) || code == C::OperationTimedOut => {
            concat!(": ", no_broker_answered!())
        }
        _ => "",
    }
}

/// The codes librdkafka reports when no broker answers at all.
fn no_broker(code: C) -> bool {
    matches!(
        code,
        C::BrokerTransportFailure | C::AllBrokersDown | C::Resolve
    )
}

/// Classifies a client error; errors without a broker code (configuration,
/// client creation) are fatal.
pub fn classify(e: &KafkaError) -> ErrorClass {
    match e.rdkafka_error_code() {
        Some(code) => classify_code(code),
        None => ErrorClass::Fatal,
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
    #[error("a transaction call failed: {source}; {hint}")]
    Transaction {
        source: KafkaError,
        /// What it means: see [`WorkerError::transaction`].
        hint: &'static str,
    },
    #[error("the worker thread stopped unexpectedly: {0}")]
    Thread(String),
    #[error("audit signing key: {0}")]
    SigningKey(#[from] KeyError),
    #[error(
        "cannot read the committed offset of input partition {partition} (where its audit chain continues): {source}"
    )]
    ChainHead { partition: i32, source: KafkaError },
    #[error(
        "the Kafka consumer raised a fatal error and consumes no more: {reason} ({code:?}); stopping so that a restart creates a new consumer{hint}"
    )]
    ConsumerFatal {
        code: C,
        reason: String,
        /// What to look at, for the fatal errors with a known cause.
        hint: &'static str,
    },
    #[error(
        "this worker's partitions were lost (session timed out: broker restarted or unreachable, or the group state is gone) and none were assigned again within {0:?} (kafka.unassigned_timeout_ms); stopping so that a restart joins the group afresh"
    )]
    Unassigned(Duration),
    #[error(
        "cannot rewind input partition {topic}/{partition} to offset {offset} after an aborted transaction: {source}; stopping without committing, so that a restart reads those records again from the committed offset"
    )]
    Rewind {
        topic: String,
        partition: i32,
        offset: i64,
        source: KafkaError,
    },
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

impl PublishFailure {
    /// The error that stops the worker when `source` refused the output of
    /// `role` bound for `topic`, for the input record `input`.
    pub fn stop(
        role: &'static str,
        topic: String,
        input: String,
        source: KafkaError,
    ) -> WorkerError {
        WorkerError::Publish(Box::new(PublishFailure {
            role,
            topic,
            input,
            class: classify(&source).as_str(),
            source,
        }))
    }
}

impl WorkerError {
    /// The consumer's fatal error (librdkafka's `code` and `reason`).
    pub fn consumer_fatal(code: C, reason: String) -> WorkerError {
        let hint = match code {
            C::FencedInstanceId => {
                " (another worker of the group runs with the same kafka.group_instance_id: give each its own)"
            }
            _ => "",
        };
        WorkerError::ConsumerFatal { code, reason, hint }
    }

    /// A transaction call's error, said with what it means: fencing only
    /// when the brokers fenced this producer, ACLs when they refused the
    /// principal; anything else stops the worker without committing.
    pub fn transaction(source: KafkaError) -> WorkerError {
        let hint = match TxnFailure::of(&source) {
            TxnFailure::Fenced => {
                "the brokers fenced this producer: another worker runs with the same kafka.transactional_id (give each worker its own; the default, <group_id>-<$HOSTNAME>, is one per pod), or the coordinator aborted a transaction left open past its transaction.timeout.ms (brokers too slow to commit it; a restart reads its records again)"
            }
            TxnFailure::Refused => {
                "the brokers refuse this principal an operation of the transaction: grant it the ACLs exactly-once needs (docs/secured-kafka.md#what-the-principal-must-be-allowed)"
            }
            TxnFailure::Other => {
                "stopping without committing it, so that a restart reads its records again from the committed offset"
            }
        };
        WorkerError::Transaction { source, hint }
    }

    /// Whether the error is in the configuration (librdkafka refused a
    /// property or a combination of them, or could not load a TLS file when
    /// creating a client): fixing it needs an operator, like every other
    /// configuration error.
    pub fn is_config(&self) -> bool {
        matches!(self, WorkerError::Client { .. })
    }

    /// Whether restarting the worker as-is may succeed (broker-side trouble)
    /// rather than needing an operator (configuration, authorization, fencing).
    pub fn is_retriable(&self) -> bool {
        match self {
            WorkerError::Publish(p) => classify(&p.source).is_transient(),
            // Fenced or refused needs an operator; the rest may pass.
            WorkerError::Transaction { source, .. } => TxnFailure::of(source) == TxnFailure::Other,
            WorkerError::Thread(_)
            | WorkerError::Unassigned(_)
            | WorkerError::ChainHead { .. }
            | WorkerError::Rewind { .. } => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed transaction call speaks of fencing only when the brokers
    /// fenced the producer, and only fencing and refused ACLs are left to an
    /// operator: a coordinator that timed out may answer after a restart.
    #[test]
    fn a_transaction_error_says_what_it_means() {
        let error = |code| WorkerError::transaction(KafkaError::MessageProduction(code));
        let fenced = error(C::ProducerFenced);
        assert!(
            fenced.to_string().contains("fenced this producer"),
            "{fenced}"
        );
        assert!(!fenced.is_retriable());
        let refused = error(C::TransactionalIdAuthorizationFailed);
        assert!(refused.to_string().contains("ACLs"), "{refused}");
        assert!(!refused.is_retriable());
        for code in [C::OperationTimedOut, C::State, C::CoordinatorNotAvailable] {
            let e = error(code);
            let text = e.to_string();
            assert!(!text.contains("fenced"), "{text}");
            assert!(text.contains("without committing"), "{text}");
            assert!(e.is_retriable(), "{text}");
        }
    }

    /// A refused principal or login is not said to be a matter of
    /// reachability: the brokers answered.
    #[test]
    fn the_hint_names_what_the_brokers_refused() {
        let hint = |code| retry_hint(&KafkaError::MessageConsumption(code));
        for code in [
            C::GroupAuthorizationFailed,
            C::TopicAuthorizationFailed,
            C::ClusterAuthorizationFailed,
            C::TransactionalIdAuthorizationFailed,
        ] {
            assert!(hint(code).contains("ACLs"), "{code:?}: {}", hint(code));
        }
        assert!(hint(C::SaslAuthenticationFailed).contains("login"));
        assert!(hint(C::Authentication).contains("login"));
        for code in [C::AllBrokersDown, C::BrokerTransportFailure, C::Resolve] {
            assert!(hint(code).contains("no broker answered; check the address"));
        }
        assert!(hint(C::NotCoordinator).contains("reachable"));
        assert!(hint(C::UnknownTopicOrPartition).contains("does not exist"));
    }

    #[test]
    fn classification_table() {
        for (code, class) in [
            (C::NotEnoughReplicas, ErrorClass::Retriable),
            (C::LeaderNotAvailable, ErrorClass::Retriable),
            (C::AllBrokersDown, ErrorClass::Retriable),
            (C::BrokerTransportFailure, ErrorClass::Retriable),
            (C::QueueFull, ErrorClass::Retriable),
            (C::NotCoordinator, ErrorClass::Retriable),
            (C::RequestTimedOut, ErrorClass::Timeout),
            (C::MessageTimedOut, ErrorClass::Timeout),
            (C::MessageSizeTooLarge, ErrorClass::TooLarge),
            (C::MessageBatchTooLarge, ErrorClass::TooLarge),
            // A broker's validation refused the record (its schema, no key
            // on a compacted topic): no size limit to raise.
            (C::InvalidRecord, ErrorClass::Fatal),
            (C::TopicAuthorizationFailed, ErrorClass::Fatal),
            (C::ClusterAuthorizationFailed, ErrorClass::Fatal),
            (C::SaslAuthenticationFailed, ErrorClass::Fatal),
            (C::UnknownTopicOrPartition, ErrorClass::Fatal),
            (C::InvalidProducerEpoch, ErrorClass::Fatal),
            (C::Fenced, ErrorClass::Fatal),
            (C::TransactionalIdAuthorizationFailed, ErrorClass::Fatal),
        ] {
            assert_eq!(classify_code(code), class, "{code:?}");
        }
        assert_eq!(
            classify(&KafkaError::ClientCreation("bad".into())),
            ErrorClass::Fatal
        );
    }
}
