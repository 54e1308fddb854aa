//! The Kafka shell around the pure core: the worker, the client settings
//! (from the lists in `crate::config::managed`) and what librdkafka was
//! built with, the embedded broker, the
//! sample producer, topic inspection and the read of a topic up to its end
//! (`replay`, `audit verify`). This layer moves bytes, offsets and
//! metrics; it must never decide a verdict (that is `crate::core::process`)
//! nor parse command lines (that is `crate::cmd`).

mod ack_ledger;
mod at_least_once;
pub(crate) mod client;
mod delivery;
pub mod embedded;
mod error;
mod events;
mod exactly_once;
pub mod inspect;
mod offsets;
pub mod outputs;
pub mod preflight;
pub mod produce;
pub(crate) mod range_read;
mod rebalance;
pub mod replay;
pub(crate) mod seals;
pub mod worker;
mod worker_report;

pub use client::{Library, PROMISED_FEATURES, library};
pub(crate) use error::unreachable_hint;
