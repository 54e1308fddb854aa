//! groundgate: validates LLM answers (inline `[^N]` citations, policy rules)
//! between a Kafka input topic and the consumers that trust them.
//!
//! Layout:
//! - [`core`]: the pure validation core. Citation parser, strict/lenient
//!   decision, policy checks, wire types and canonical encoders for the
//!   envelope / retry request / audit row, and
//!   `process(bytes, meta, now, settings) -> Outcome`. No I/O, no clock.
//! - [`audit`]: the sealed audit trail: seals over audit rows and the
//!   verifier (both pure), and the signing key files.
//! - [`report`]: the batch report of `check` (pure aggregation; HTML).
//! - [`pipeline`]: the ordered parallel fold over lines that drives `check`.
//! - [`kafka`]: the worker shell, client settings, embedded broker, sample
//!   producer. Moves bytes, offsets and metrics; never decides a verdict.
//! - [`eval`]: `groundgate eval`, the grounding check measured on labelled JSON Lines.
//! - [`metrics`]: the closed Prometheus vocabulary.
//! - [`http`]: `/metrics`, `/healthz`, `/readyz`.
//! - [`config`]: two-phase configuration (file + env + flags → validated `Config`).
//! - [`cmd`]: one file per subcommand (check, run, demo, produce, bench,
//!   dev-broker, audit); the only place besides `main.rs` using `anyhow`,
//!   with the one logging setup and the one signal path.
//! - [`cli`]: clap definitions shared by `main.rs`.
//! - [`clock`]: the shell's clock (the core takes time as an argument).
//! - [`sample`]: deterministic realistic sample answers (demo, produce, benches).

pub mod audit;
pub mod cli;
pub mod clock;
pub mod cmd;
pub mod config;
pub mod core;
pub mod eval;
pub mod http;
pub mod kafka;
pub mod metrics;
pub mod pipeline;
pub mod report;
pub mod sample;
