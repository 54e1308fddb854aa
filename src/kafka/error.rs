//! Explicit classification of Kafka errors into a closed [`ErrorClass`]
//! set: what the worker may retry and what must stop it. Kept separate and
//! table-tested because a wrong answer here either loses data (treating a
//! fatal error as skippable) or spins forever (retrying a fatal one).
//!
//! Must not know the metrics registry: the `class` label is mapped from this
//! classification in [`super::events`].

use rdkafka::error::{KafkaError, RDKafkaErrorCode as C};

/// Class of a publish/commit error.
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

    /// Whether re-sending (or restarting) may succeed.
    pub fn is_transient(self) -> bool {
        matches!(self, ErrorClass::Retriable | ErrorClass::Timeout)
    }
}

/// Classifies an error code.
pub fn classify_code(code: C) -> ErrorClass {
    match code {
        C::MessageSizeTooLarge | C::InvalidRecord => ErrorClass::TooLarge,
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

/// Classifies a client error; errors without a broker code (configuration,
/// client creation) are fatal.
pub fn classify(e: &KafkaError) -> ErrorClass {
    match e.rdkafka_error_code() {
        Some(code) => classify_code(code),
        None => ErrorClass::Fatal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
