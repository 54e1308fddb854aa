//! groundgate's integration tests, one binary (it links the library and
//! librdkafka once): `cargo test --test it`, or one area with
//! `cargo test --test it worker::`.
//!
//! Tests that need an external tool (kcat, prometheus, promtool,
//! docker-compose, kubectl, chromium, openssl) print a `SKIPPED: needs X` line when
//! it is missing, and fail instead under `GG_REQUIRE_TOOLS=1`
//! (`.ci/run` sets it).

mod common;

mod audit_cli;
mod check_cli;
mod commands;
mod deploy;
mod eval_cli;
mod grounding;
mod hostile_output;
mod lifecycle;
mod observability;
mod processes;
mod prometheus_live;
mod report_browser;
mod schemas;
mod secured;
mod worker;
