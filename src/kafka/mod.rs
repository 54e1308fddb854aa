//! The Kafka shell around the pure core: the worker, the client settings
//! (and the librdkafka keys groundgate manages), the embedded broker, the
//! sample producer and topic inspection. This layer moves bytes, offsets and
//! metrics; it must never decide a verdict (that is `crate::core::process`)
//! nor parse command lines (that is `crate::cmd`).

pub mod at_least_once;
pub mod client;
pub mod delivery;
pub mod embedded;
pub mod error;
pub mod events;
pub mod exactly_once;
pub mod inspect;
pub mod offsets;
pub mod outputs;
pub mod produce;
pub mod rebalance;
pub mod worker;
