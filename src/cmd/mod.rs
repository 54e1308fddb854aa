//! The subcommands, one file each: read the flags and the configuration,
//! set up logging, signals and the HTTP endpoints, call the library, and
//! turn the outcome into an exit code. `anyhow` is used here and in
//! `main.rs` only; everything below returns typed errors.
//!
//! Nothing here decides a verdict or talks the Kafka protocol itself.

pub mod audit;
pub mod bench;
pub mod check;
pub mod demo;
pub mod dev_broker;
pub mod eval;
pub mod produce;
pub mod run;

use std::sync::Once;

use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use crate::config::LogFormat;

/// Exit code after a second signal: stop now, drain nothing.
pub const EXIT_INTERRUPTED: i32 = 130;

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

/// The one signal path: the first SIGINT or SIGTERM cancels `shutdown`
/// (stop intake, drain, flush, commit); a second one exits at once with
/// [`EXIT_INTERRUPTED`]. Fails only if the handlers cannot be installed.
pub fn on_signals(shutdown: CancellationToken) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        info!("signal received: stopping intake, draining in-flight records");
        shutdown.cancel();
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        error!("second signal: exiting immediately without draining");
        std::process::exit(EXIT_INTERRUPTED);
    });
    Ok(())
}
