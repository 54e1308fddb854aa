//! `groundgate run`: configuration, logging, the metrics endpoint, signals,
//! and one worker. Without configured brokers it starts the embedded
//! in-memory broker and says loudly that nothing is durable.

use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use anyhow::Context;

use crate::cli::RunArgs;
use crate::config::RawConfig;
use crate::http::{self, Health};
use crate::kafka::embedded::EmbeddedBroker;
use crate::kafka::worker::run_worker;
use crate::metrics::Metrics;

/// Exit code for configuration and usage errors (clap uses 2 as well).
const EXIT_USAGE: u8 = 2;

pub async fn main(args: RunArgs) -> anyhow::Result<ExitCode> {
    let flags = args.raw_layer().map_err(anyhow::Error::msg)?;
    let config = match RawConfig::load_from_process(args.kafka.config.as_deref(), flags) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("groundgate run: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    super::init_logging(config.log.format, &config.log.level);

    let metrics = Arc::new(Metrics::new(&config.metrics)?);
    let health = Arc::new(Health::default());
    let (addr, _server) = http::serve(config.metrics.addr, metrics.clone(), health.clone()).await?;
    info!(%addr, "serving /metrics, /healthz and /readyz");

    let mut _embedded = None;
    let bootstrap = match &config.kafka.brokers {
        Some(b) => b.clone(),
        None => {
            let broker = EmbeddedBroker::start(4, &config.kafka.topics.all())?;
            let b = broker.bootstrap();
            warn!(
                bootstrap = %b,
                "no brokers configured (--brokers, GROUNDGATE_BROKERS or kafka.brokers): started an EMBEDDED IN-MEMORY broker; it is not durable and everything is lost on exit"
            );
            _embedded = Some(broker);
            b
        }
    };

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
        Err(e) => {
            error!(error = %e, retriable = e.is_retriable(), "worker stopped with an error");
            Err(e.into())
        }
    }
}
