//! groundgate: validates LLM answers (inline `[^N]` citations, policy rules)
//! between a Kafka input topic and the consumers that trust them.
//!
//! Layout:
//! - [`core`]: the pure validation core. Citation parser, strict/lenient
//!   decision, policy checks, wire types and canonical encoders for the
//!   envelope / retry request / audit row, and
//!   `process(bytes, meta, now, settings) -> Outcome`. No I/O, no clock.
//! - [`clock`]: the shell's clock (the core takes time as an argument).
//! - [`config`]: two-phase configuration (file + env + flags → validated `Config`).
//! - [`check`]: `groundgate check`, the offline batch runner over JSON Lines.
//! - [`kafka`]: the worker shell (`groundgate run`), embedded broker, demo,
//!   sample producer, `bench`. Moves bytes, offsets and metrics; never
//!   decides a verdict itself.
//! - [`eval`]: `groundgate eval`, the grounding check measured on labelled JSON Lines.
//! - [`metrics`]: the closed Prometheus vocabulary.
//! - [`http`]: `/metrics`, `/healthz`, `/readyz`.
//! - [`sample`]: deterministic realistic sample answers (demo, produce, benches).
//! - [`cli`]: clap definitions shared by `main.rs`.

pub mod check;
pub mod cli;
pub mod clock;
pub mod config;
pub mod core;
pub mod eval;
pub mod http;
pub mod kafka;
pub mod metrics;
pub mod sample;
