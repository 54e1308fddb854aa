//! The Kafka shell around the pure core: the worker (`run`), the embedded
//! broker (`dev-broker`), `demo`, the sample producer (`produce`) and
//! `bench`. This layer moves bytes, offsets and metrics; it must never decide
//! a verdict (that is `crate::core::process`).

pub mod at_least_once;
pub mod bench;
pub mod client;
pub mod delivery;
pub mod demo;
pub mod embedded;
pub mod error;
pub mod events;
pub mod exactly_once;
pub mod inspect;
pub mod offsets;
pub mod outputs;
pub mod produce;
pub mod rebalance;
pub mod run;
pub mod worker;

use std::sync::Once;

use crate::config::LogFormat;

/// Installs the global tracing subscriber once (later calls are no-ops, so
/// in-process demos and tests can call it freely).
pub fn init_logging(format: LogFormat, level: &str) {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_new(level)
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
        // Colours only for a person at a terminal, never in files or collectors.
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(ansi)
            .with_writer(std::io::stderr);
        let _ = match format {
            LogFormat::Json => builder.json().flatten_event(true).try_init(),
            LogFormat::Human => builder.try_init(),
        };
    });
}

/// Resolves on the first SIGINT or SIGTERM.
pub async fn shutdown_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
    Ok(())
}
