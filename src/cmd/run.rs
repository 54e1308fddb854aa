//! `groundgate run`: configuration, logging, the metrics endpoint, signals,
//! and one worker. It needs configured brokers: it never starts the
//! embedded broker (that is `demo` and `dev-broker`), so a deployment whose
//! broker list went missing fails at start instead of looking healthy.

use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use anyhow::Context;

use crate::cli::RunArgs;
use crate::config::{ConfigError, RawConfig};
use crate::http::{self, Health};
use crate::kafka::client;
use crate::kafka::worker::run_worker;
use crate::metrics::Metrics;

/// Exit code for configuration and usage errors (clap uses 2 as well).
pub const EXIT_USAGE: u8 = 2;

pub async fn main(args: RunArgs) -> anyhow::Result<ExitCode> {
    let library = client::library();
    let config = match args
        .raw_layer()
        .map_err(|p| ConfigError::Invalid(vec![p]))
        .and_then(|flags| {
            RawConfig::load_for_kafka(args.kafka.config.as_deref(), flags, &library.features)
        }) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("groundgate run: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    super::init_logging(config.log.format, &config.log.level);
    info!(
        librdkafka = %library.version,
        builtin_features = %library.features_line(),
        "Kafka client library"
    );
    let Some(bootstrap) = config.kafka.brokers.clone() else {
        // `load_for_kafka` refuses a configuration without brokers.
        eprintln!("groundgate run: no brokers configured");
        return Ok(ExitCode::from(EXIT_USAGE));
    };

    let metrics = Arc::new(Metrics::new(&config.metrics)?);
    let health = Arc::new(Health::default());
    let (addr, _server) = http::serve(config.metrics.addr, metrics.clone(), health.clone()).await?;
    info!(%addr, "serving /metrics, /healthz and /readyz");

    let shutdown = CancellationToken::new();
    super::on_signals(shutdown.clone()).context("cannot install signal handlers")?;

    match run_worker(config, bootstrap, metrics, health, shutdown).await {
        Ok(report) => {
            info!(
                records = report.records,
                accepted = report.accepted,
                rejected = report.rejected,
                retry = report.retry,
                dead_letter = report.dead_letter,
                transactions_committed = report.transactions_committed,
                transactions_aborted = report.transactions_aborted,
                "stopped"
            );
            Ok(ExitCode::SUCCESS)
        }
        // Said once, as every other configuration error is.
        Err(e) if e.is_config() => {
            eprintln!("groundgate run: invalid configuration: {e}");
            Ok(ExitCode::from(EXIT_USAGE))
        }
        Err(e) => {
            error!(error = %e, retriable = e.is_retriable(), "worker stopped with an error");
            Ok(ExitCode::FAILURE)
        }
    }
}
