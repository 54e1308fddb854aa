//! The Kafka shell around the pure core: the worker, the client settings
//! (and the librdkafka keys groundgate manages), the embedded broker, the
//! sample producer and topic inspection. This layer moves bytes, offsets and
//! metrics; it must never decide a verdict (that is `crate::core::process`)
//! nor parse command lines (that is `crate::cmd`).

pub mod client;
pub mod embedded;
pub mod error;
pub mod inspect;
pub mod offsets;
pub mod produce;
pub mod worker;
