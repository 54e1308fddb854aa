//! The pure validation core: citation parsing, the strict/lenient decision,
//! policy checks, canonical output builders and [`process()`].
//!
//! Nothing under `core` may do I/O, read the clock or the environment, spawn
//! tasks, or touch Kafka or Prometheus. Time comes in as an argument; outputs
//! go out as bytes. That is what makes `groundgate check` and the Kafka worker
//! give the same verdict for the same record.

pub mod citation;
pub mod decision;
pub mod encode;
pub mod grounding;
pub mod normalize;
pub mod policy;
pub mod process;
pub mod pseudonym;
pub mod settings;
pub(crate) mod terms;
pub mod types;
pub mod wire;

pub use process::process;
pub use settings::{CoreSettings, GroundingModel, GroundingSettings, PolicySettings, ValueFraming};
pub use types::*;
