//! `groundgate run`: configuration, logging, the metrics endpoint, signals,
//! and one worker. It needs configured brokers: it never starts the
//! embedded broker (that is `demo` and `dev-broker`), so a deployment whose
//! broker list went missing fails at start instead of looking healthy.
//!
//! Shutdown is bounded: from the first signal, `/readyz` answers 503 and the
//! worker has `kafka.drain_deadline_ms` to settle, flush and close its
//! clients; a close that does not return by then (librdkafka can block in
//! it when the brokers vanish) is abandoned by a watchdog. Either way a
//! shutdown that did not finish (that watchdog, or a worker that stopped
//! with records unsettled or uncommitted) exits with
//! [`EXIT_SHUTDOWN_INCOMPLETE`].

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use anyhow::Context;

use crate::cli::RunArgs;
use crate::config::{ConfigError, RawConfig};
use crate::http::{self, Health};
use crate::kafka::client;
use crate::kafka::worker::{WorkerReport, run_worker};
use crate::metrics::Metrics;
use crate::terminal::{Escaped, escape_lines};

/// Exit code when shutdown did not finish: the Kafka clients did not close
/// within `kafka.drain_deadline_ms`, or the worker stopped with records
/// unsettled, a commit failed or the producer not flushed. The input records
/// whose offsets were not committed are processed again by the next owner.
pub const EXIT_SHUTDOWN_INCOMPLETE: u8 = 3;

/// Shutdown took longer than its deadline.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "shutdown did not finish within kafka.drain_deadline_ms ({0:?}): the Kafka clients did not close (brokers unreachable?); exiting without waiting further. Outputs whose input offsets were not committed are processed again by the next worker"
)]
pub struct DrainOverrun(pub Duration);

/// Runs `work` to its end; once `shutdown` fires, calls `on_drain` and gives
/// `work` at most `deadline` more. Before the signal no deadline applies.
pub async fn bounded_shutdown<T>(
    work: impl Future<Output = T>,
    shutdown: &CancellationToken,
    deadline: Duration,
    on_drain: impl FnOnce(),
) -> Result<T, DrainOverrun> {
    let mut work = std::pin::pin!(work);
    tokio::select! {
        out = &mut work => return Ok(out),
        () = shutdown.cancelled() => {}
    }
    on_drain();
    tokio::time::timeout(deadline, work)
        .await
        .map_err(|_| DrainOverrun(deadline))
}

pub async fn main(args: RunArgs) -> anyhow::Result<ExitCode> {
    let library = client::library();
    let config = match args
        .raw_layer()
        .map_err(|p| ConfigError::Invalid(vec![p]))
        .and_then(|flags| {
            RawConfig::load_for_worker(
                args.kafka.client.config.as_deref(),
                flags,
                &crate::config::Librdkafka {
                    features: &library.features,
                    refuses: &client::refuses,
                    clients: &client::refuses_clients,
                },
            )
        }) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln_lossy!("groundgate run: {}", escape_lines(&e.to_string()));
            return Ok(ExitCode::from(super::EXIT_USAGE));
        }
    };
    super::init_logging(config.log.format, &config.log.level);
    info!(
        librdkafka = %library.version,
        builtin_features = %library.features_line(),
        "Kafka client library"
    );
    let grounding = &config.core.grounding;
    info!(
        enabled = grounding.enabled,
        min_support = grounding.min_support,
        model = grounding.model().as_str(),
        policy_version = %config.core.policy_version,
        "grounding check"
    );
    if let Some(p) = &config.core.pseudonyms {
        info!(
            fields = %p.field_names(),
            key_id = p.key_id(),
            "audit rows write these fields as pseudonyms"
        );
    }
    if let Some(framed) = config.kafka.output_schema_ids.describe() {
        info!(
            schema_ids = %framed,
            "output values written in Schema Registry wire format"
        );
    }
    let Some(bootstrap) = config.kafka.brokers.clone() else {
        // `load_for_kafka` refuses a configuration without brokers.
        eprintln_lossy!("groundgate run: no brokers configured");
        return Ok(ExitCode::from(super::EXIT_USAGE));
    };
    if args.preflight {
        let layers = super::config_layers(
            args.kafka.client.config.as_deref(),
            &crate::config::env_layer_names(),
            // A flag that is given sets a key of the flag layer.
            args.raw_layer().is_ok_and(|r| r != RawConfig::default()),
        );
        return Ok(preflight(&config, &bootstrap, &layers).await);
    }

    let metrics = Arc::new(Metrics::new(&config.metrics)?);
    metrics.set_grounding_model(grounding.model());
    let health = Arc::new(Health::watching_polls(
        crate::kafka::client::max_poll_interval(&config.kafka),
    ));
    let (addr, _server) = http::serve(config.metrics.addr, metrics.clone(), health.clone())
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "{e}; choose another address with --metrics-addr HOST:PORT, GROUNDGATE_METRICS_ADDR or [metrics] addr (port 0 picks a free one)"
            )
        })?;
    info!(%addr, "serving /metrics, /healthz and /readyz");

    let shutdown = CancellationToken::new();
    super::on_signals(
        shutdown.clone(),
        "stopping intake, draining in-flight records",
    )
    .context("cannot install signal handlers")?;

    let deadline = config.kafka.drain_deadline;
    let worker = run_worker(config, bootstrap, metrics, health.clone(), shutdown.clone());
    let finished = bounded_shutdown(worker, &shutdown, deadline, || health.begin_drain()).await;
    let result = match finished {
        Ok(result) => result,
        Err(overrun) => {
            error!(error = %overrun, "shutdown overran its deadline");
            // The worker's thread is stuck in a librdkafka call: the runtime
            // would wait for it forever on the way out.
            std::process::exit(i32::from(EXIT_SHUTDOWN_INCOMPLETE));
        }
    };
    match result {
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
            Ok(stop_code(&report))
        }
        // Said once, as every other configuration error is.
        Err(e) if e.is_config() => {
            eprintln_lossy!(
                "groundgate run: invalid configuration: {}",
                escape_lines(&e.to_string())
            );
            Ok(ExitCode::from(super::EXIT_USAGE))
        }
        Err(e) => {
            error!(error = %e, retriable = e.is_retriable(), "worker stopped with an error");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The exit code of a worker that stopped without an error: 0 only when
/// its shutdown finished (the worker logged what it did not finish).
fn stop_code(report: &WorkerReport) -> ExitCode {
    if report.unfinished.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_SHUTDOWN_INCOMPLETE)
    }
}

/// How long the preflight waits for each answer of the cluster.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);

/// `run --preflight`: what the cluster offers the worker this configuration
/// describes, a line a finding; exit 1 when something would stop it.
async fn preflight(config: &crate::config::Config, bootstrap: &str, layers: &str) -> ExitCode {
    use crate::kafka::preflight::{Level, judge, survey};
    let k = &config.kafka;
    println!(
        "groundgate run --preflight: brokers {bootstrap}, group {}, {}",
        k.group_id,
        k.guarantee.as_str()
    );
    println!("{layers}");
    let survey = match survey(config, bootstrap, PREFLIGHT_TIMEOUT).await {
        Ok(s) => s,
        // The client would not be made from these settings: the worker's
        // own start would stop there too, with the same exit code.
        Err(e @ rdkafka::error::KafkaError::ClientCreation(_)) => {
            eprintln_lossy!(
                "groundgate run: invalid configuration: {}",
                escape_lines(&e.to_string())
            );
            return ExitCode::from(super::EXIT_USAGE);
        }
        Err(e) => {
            println!(
                "problem: cannot read the cluster's metadata within {} s: {e}; check kafka.brokers and, for a secured cluster, the TLS and SASL settings (docs/secured-kafka.md)",
                PREFLIGHT_TIMEOUT.as_secs()
            );
            return ExitCode::FAILURE;
        }
    };
    let checks = judge(config, &survey);
    for c in &checks {
        // Names and settings as the brokers report them.
        println!(
            "{:<8} {}: {}",
            c.level.as_str(),
            Escaped(&c.subject),
            Escaped(&c.detail)
        );
    }
    let count = |l: Level| checks.iter().filter(|c| c.level == l).count();
    let problems = count(Level::Problem);
    println!(
        "preflight: {problems} problem(s), {} note(s)",
        count(Level::Note)
    );
    if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Health;

    #[tokio::test]
    async fn a_close_that_never_returns_is_abandoned_at_the_deadline() {
        let shutdown = CancellationToken::new();
        let health = Arc::new(Health::default());
        health.set_ready(true);
        // The worker's close, stuck for good.
        let stuck = std::future::pending::<()>();
        shutdown.cancel();
        let got = bounded_shutdown(stuck, &shutdown, Duration::from_millis(50), || {
            health.begin_drain()
        })
        .await;
        assert_eq!(got, Err(DrainOverrun(Duration::from_millis(50))));
        assert!(!health.is_ready());
        assert!(got.unwrap_err().to_string().contains("drain_deadline_ms"));
    }

    #[tokio::test]
    async fn readiness_drops_when_the_drain_starts_not_when_it_ends() {
        let shutdown = CancellationToken::new();
        let health = Arc::new(Health::default());
        health.set_ready(true);
        let (finish, finished) = tokio::sync::oneshot::channel::<u8>();
        let task = {
            let (shutdown, health) = (shutdown.clone(), health.clone());
            tokio::spawn(async move {
                bounded_shutdown(finished, &shutdown, Duration::from_secs(600), || {
                    health.begin_drain()
                })
                .await
            })
        };
        // Running: no deadline, still ready.
        tokio::task::yield_now().await;
        assert!(health.is_ready());
        shutdown.cancel();
        // The drain is under way (the work has not finished: we hold it).
        while health.is_ready() {
            tokio::task::yield_now().await;
        }
        assert!(!task.is_finished());
        // A late assignment during the drain does not make it ready again.
        health.set_ready(true);
        assert!(!health.is_ready());
        finish.send(7).unwrap();
        assert_eq!(task.await.unwrap(), Ok(Ok(7)));
    }

    #[tokio::test]
    async fn work_that_ends_by_itself_needs_no_signal() {
        let shutdown = CancellationToken::new();
        let got = bounded_shutdown(async { 5 }, &shutdown, Duration::ZERO, || {
            panic!("no drain without a signal")
        })
        .await;
        assert_eq!(got, Ok(5));
    }
}
