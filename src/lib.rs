//! groundgate: validates LLM answers (inline `[^N]` citations, policy rules)
//! between a Kafka input topic and the consumers that trust them.
//!
//! Layout:
//! - [`core`]: the pure validation core. Citation parser, strict/lenient
//!   decision, policy checks, wire types and canonical encoders for the
//!   envelope / retry request / audit row, and
//!   `process(bytes, meta, now, settings) -> Outcome`. No I/O, no clock.
//!   `core::wire` holds the input decoding, the output shapes and the
//!   Schema Registry header of a framed value;
//!   `core::pseudonym` the keyed pseudonyms of the audit row's personal fields;
//!   `core::grounding` the support check (words, memo, source index, claim
//!   splitting, scoring, explanations).
//! - `audit`: the sealed audit trail: seals over audit rows and the
//!   verifier (both pure), and the signing key files.
//! - [`batch`]: the offline side of `check` and `eval`: opening an input,
//!   plain or compressed (`input`), the ordered parallel fold over lines
//!   (`pipeline`), the batch report (pure aggregation; HTML) and the
//!   grounding evaluation on labelled JSON Lines (`eval`).
//! - [`kafka`]: the worker shell, client settings, embedded broker, sample
//!   producer. Moves bytes, offsets and metrics; never decides a verdict.
//!   The worker's rooms:
//!   - `kafka::worker`: entry points and the consume loop (capacity → poll →
//!     process → publish), the one place the guarantee is chosen;
//!   - `kafka::outputs`: the pure output builder (key, value, headers of
//!     every output; header names; dead-letter header rule; passthrough);
//!   - `kafka::delivery`: the `Delivery` operations (capacity, publish, on
//!     revoke, finish), implemented by `kafka::at_least_once` (the delivery
//!     driver: acks, stored offsets, commits) over `kafka::ack_ledger` (its
//!     pure ledger: offsets in flight, seals waiting for their rows) and
//!     `kafka::exactly_once` (transactions, abort and rewind);
//!   - `kafka::rebalance`: the consumer context (rebalance callbacks, client
//!     errors, lag statistics) and the `Readiness` trait the HTTP shell
//!     implements;
//!   - `kafka::seals`: the audit chains (a sealer per owned input
//!     partition, the chain head carried in the committed offset's
//!     metadata), pure;
//!   - `kafka::events`: one typed event per thing that happens, logging and
//!     counting together; `kafka::error`: the Kafka error classification
//!     and why a worker stops (`WorkerError`); `kafka::worker_report`:
//!     what a worker did; `kafka::offsets`: in-order offset tracking;
//!   - `kafka::preflight`: `run --preflight`, the cluster read and judged
//!     against the configuration before a worker starts.
//!
//!   Beside the worker: `kafka::range_read`, the one read of a topic from a
//!   first offset up to its end at the start of the read, blocking (run off
//!   the async runtime), for `kafka::replay` and `audit verify`.
//! - [`metrics`]: the closed Prometheus vocabulary.
//! - [`http`]: `/metrics`, `/healthz`, `/readyz`; its `Health` implements the
//!   worker's `Readiness` (the worker does not know the HTTP server).
//! - [`config`]: two-phase configuration (file + env + flags → validated `Config`).
//! - [`cmd`]: one file per subcommand (check, run, demo, produce, bench,
//!   dev-broker, audit); the only place besides `main.rs` using `anyhow`,
//!   with the one logging setup and the one signal path.
//! - [`cli`]: clap definitions shared by `main.rs`.
//! - `clock`: the shell's clocks, wall and process CPU (the core takes time as
//!   an argument).
//! - [`sample`]: deterministic realistic sample answers (demo, produce, benches).
//! - `terminal`: the one rule for showing text groundgate did not write
//!   (records, file and topic names) on a terminal or in a text log line.
//! - `fuzzing` (tests and the `fuzzing` feature only): adversarial records
//!   and the invariants checked on them, for the fuzz targets under `fuzz/`
//!   and the property tests.

mod audit;
pub mod batch;
pub mod cli;
mod clock;
pub mod cmd;
pub mod config;
pub mod core;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod kafka;
pub mod metrics;
pub mod sample;
mod terminal;
