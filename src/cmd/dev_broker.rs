//! `groundgate dev-broker`: the embedded broker (librdkafka's mock cluster)
//! as a long-lived process on a fixed port, for development and tests.

use std::process::ExitCode;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::cli::DevBrokerArgs;
use crate::config::RawConfig;
use crate::kafka::embedded::EmbeddedBroker;

/// `groundgate dev-broker`: the embedded broker as a long-lived process.
pub async fn main(args: DevBrokerArgs) -> anyhow::Result<ExitCode> {
    super::init_logging(crate::config::LogFormat::Human, "info");
    let config = RawConfig::load_from_process(args.config.as_deref(), RawConfig::default())?;
    let topics = config.kafka.topics.all();
    let broker = EmbeddedBroker::start(args.partitions, &topics)?;
    let bootstrap = if args.port == 0 {
        broker.bootstrap()
    } else {
        broker.forward_from(args.port).await?
    };
    info!(
        %bootstrap,
        partitions = args.partitions,
        topics = ?topics,
        max_messages_per_partition = crate::kafka::produce::MOCK_MAX_MSGS,
        max_bytes_per_partition = crate::kafka::produce::MOCK_MAX_BYTES,
        "embedded in-memory broker running: development only, NOT durable, everything is lost on exit; each partition keeps only the newest messages within these limits"
    );
    // Signals are handled before the address is announced: whoever reads
    // it may stop the broker at once.
    let stop = CancellationToken::new();
    super::on_signals(stop.clone(), "stopping the broker")
        .context("cannot install signal handlers")?;
    // One parseable line on stdout, for scripts and tests.
    println!("bootstrap={bootstrap}");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    stop.cancelled().await;
    info!("dev-broker stopping");
    Ok(ExitCode::SUCCESS)
}
