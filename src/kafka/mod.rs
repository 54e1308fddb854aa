//! The Kafka shell around the pure core: the worker (`run`), the embedded
//! broker (`dev-broker`), `demo`, the sample producer (`produce`) and the
//! passthrough benchmark (`bench`). This layer moves bytes, offsets and
//! metrics; it must never decide a verdict (that is `crate::core::process`).

pub mod bench;
pub mod demo;
pub mod embedded;
pub mod produce;
pub mod run;
