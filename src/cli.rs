//! Command-line surface (clap derive). Flags that override configuration are
//! turned into a [`RawConfig`] layer here, so precedence (file < env < flags)
//! is decided in one place: `crate::config`.

use std::path::PathBuf;
use std::time::SystemTime;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Guarantee, LogFormat, RawConfig};

#[derive(Debug, Parser)]
#[command(
    name = "groundgate",
    version,
    about = "Validates LLM answers and their [^N] citations between Kafka topics"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a JSON Lines file offline and write the outputs to a directory.
    Check(CheckArgs),
    /// Run the stream worker against Kafka (or the embedded broker if no --brokers).
    Run(RunArgs),
    /// Run the embedded in-memory broker as a long-lived process (development only).
    DevBroker(DevBrokerArgs),
    /// One-command tour: embedded broker, sample stream, one worker, a summary.
    Demo(DemoArgs),
    /// Stream answers (a JSON Lines file or synthetic ones) to the input topic.
    Produce(ProduceArgs),
    /// Measure the worker against a passthrough on the embedded broker (prints rates and ratios).
    Bench(BenchArgs),
    /// The sealed audit trail: verify a trail, or make a signing key pair.
    Audit(AuditArgs),
    /// Measure the grounding check on labelled JSON Lines (AUC, accuracy, threshold sweep).
    Eval(EvalArgs),
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check an audit trail (JSON Lines files, or the audit topic with --brokers) for altered,
    /// missing, reordered or forged rows, broken or unsigned seals, and input offsets without a row.
    /// Exit 0 clean (redeliveries allowed), 1 problem found, 2 usage error.
    Verify(AuditVerifyArgs),
    /// Write an Ed25519 key pair: PREFIX.key (PKCS#8 PEM, mode 0600) and PREFIX.pub (SPKI PEM).
    Keygen(KeygenArgs),
}

#[derive(Debug, Args)]
pub struct AuditVerifyArgs {
    /// Audit files (e.g. `check`'s audit.jsonl); omit with --brokers.
    pub files: Vec<PathBuf>,
    /// Read the audit topic from these brokers instead of files.
    #[arg(long)]
    pub brokers: Option<String>,
    /// The audit topic.
    #[arg(long, default_value = "answers.audit")]
    pub topic: String,
    /// With --brokers: the input topic. Every offset it holds (up to the
    /// group's committed offset with --group) must have a row, partitions
    /// the trail never mentions included.
    #[arg(long, requires = "brokers")]
    pub input_topic: Option<String>,
    /// With --input-topic: the workers' consumer group. Its committed
    /// offsets and chain heads are the anchor: rows below a committed
    /// offset must be sealed, and the committed head seal must be there.
    #[arg(long, requires = "input_topic")]
    pub group: Option<String>,
    /// With --input-topic: check the input records written at or after this
    /// time (RFC 3339, e.g. 2026-11-22T00:00:00Z), by the input topic's
    /// record timestamps.
    #[arg(long, requires = "input_topic", value_parser = parse_time)]
    pub from_time: Option<SystemTime>,
    /// With --input-topic: check the input records written at or before
    /// this time (RFC 3339).
    #[arg(long, requires = "input_topic", value_parser = parse_time)]
    pub to_time: Option<SystemTime>,
    /// Check input offsets from this one (inclusive).
    #[arg(long)]
    pub from: Option<i64>,
    /// Check input offsets up to this one (inclusive).
    #[arg(long)]
    pub to: Option<i64>,
    /// Require every seal to be signed by this key (SPKI PEM, from `audit keygen`).
    #[arg(long)]
    pub public_key: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Path prefix of the key files.
    #[arg(long, default_value = "groundgate-audit")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Rejected,
    Retry,
    #[value(name = "dead_letter", alias = "dead-letter")]
    DeadLetter,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// JSON Lines input, one answer per line; `-` reads standard input.
    pub input: String,
    /// Directory for final.jsonl, retry.jsonl, audit.jsonl, dead_letter.jsonl and summary.json
    /// (created if missing). A record's number, `line` in dead_letter.jsonl and `input.offset` in
    /// audit.jsonl, is its 1-based line number.
    #[arg(long)]
    pub out: PathBuf,
    /// TOML configuration file (policy, providers, limits).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Exit 1 if any record had this outcome (repeatable).
    #[arg(long = "fail-on", value_enum)]
    pub fail_on: Vec<FailOn>,
    /// Also write a self-contained HTML report here (summary.json is always written to --out).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// What-if: also judge every record under this (baseline) configuration and report which
    /// records change outcome under --config.
    #[arg(long)]
    pub compare_config: Option<PathBuf>,
    /// How many of the worst-grounded answers the report shows.
    #[arg(long, default_value_t = 10)]
    pub worst: usize,
    /// Worker threads validating lines (default: one per CPU core). Outputs are the same for
    /// any value.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Settings shared by every subcommand that talks to Kafka.
#[derive(Debug, Args, Clone, Default)]
pub struct KafkaFlags {
    /// Bootstrap servers, host:port[,host:port...]. Absent → embedded in-memory broker.
    #[arg(long)]
    pub brokers: Option<String>,
    /// TOML configuration file.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Consumer group id.
    #[arg(long)]
    pub group_id: Option<String>,
    /// Client id reported to the brokers.
    #[arg(long)]
    pub client_id: Option<String>,
    /// Input topic.
    #[arg(long)]
    pub input_topic: Option<String>,
    /// librdkafka property passthrough, KEY=VALUE (repeatable), e.g. -X security.protocol=SSL.
    #[arg(short = 'X', long = "kafka-property", value_name = "KEY=VALUE")]
    pub kafka_property: Vec<String>,
    /// Log format.
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormatArg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormatArg {
    Human,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GuaranteeArg {
    AtLeastOnce,
    ExactlyOnce,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub kafka: KafkaFlags,
    /// Delivery guarantee.
    #[arg(long, value_enum)]
    pub guarantee: Option<GuaranteeArg>,
    /// Address of /metrics, /healthz, /readyz.
    #[arg(long)]
    pub metrics_addr: Option<String>,
}

#[derive(Debug, Args)]
pub struct DevBrokerArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 9092)]
    pub port: u16,
    /// Partitions per topic.
    #[arg(long, default_value_t = 4)]
    pub partitions: i32,
    /// TOML configuration file (for topic names).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Sample stream to play (defaults to the shipped examples/answers.jsonl).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Address of /metrics during the demo.
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub metrics_addr: String,
    /// After the summary, keep the broker, worker and /metrics up until Ctrl-C.
    #[arg(long)]
    pub serve: bool,
}

/// The Kafka settings of `produce`: no consumer group, and no embedded broker.
#[derive(Debug, Args, Clone, Default)]
pub struct ProducerFlags {
    /// Bootstrap servers, host:port[,host:port...]. Required: produce never starts a broker
    /// (`groundgate dev-broker` runs one for development).
    #[arg(long)]
    pub brokers: Option<String>,
    /// TOML configuration file.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Client id reported to the brokers (suffixed with -producer).
    #[arg(long)]
    pub client_id: Option<String>,
    /// Topic to write to (the worker's input topic).
    #[arg(long)]
    pub input_topic: Option<String>,
    /// librdkafka property passthrough, KEY=VALUE (repeatable), e.g. -X security.protocol=SSL.
    #[arg(short = 'X', long = "kafka-property", value_name = "KEY=VALUE")]
    pub kafka_property: Vec<String>,
    /// Log format.
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormatArg>,
}

impl ProducerFlags {
    /// The flag layer of the configuration (highest precedence).
    pub fn raw_layer(&self) -> Result<RawConfig, String> {
        KafkaFlags {
            brokers: self.brokers.clone(),
            config: self.config.clone(),
            group_id: None,
            client_id: self.client_id.clone(),
            input_topic: self.input_topic.clone(),
            kafka_property: self.kafka_property.clone(),
            log_format: self.log_format,
        }
        .raw_layer()
    }
}

#[derive(Debug, Args)]
pub struct ProduceArgs {
    #[command(flatten)]
    pub kafka: ProducerFlags,
    /// JSON Lines file to stream; absent → synthetic answers.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Records per second (0 = as fast as possible).
    #[arg(long, default_value_t = 100)]
    pub rate: u64,
    /// Stop after this many records (0 = forever for synthetic, once through a file).
    #[arg(long, default_value_t = 0)]
    pub count: u64,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Records produced once and drained by each run.
    #[arg(long, default_value_t = 50_000)]
    pub records: u64,
    /// Approximate answer size in bytes (`--shape mixed`).
    #[arg(long, default_value_t = 1000)]
    pub answer_bytes: usize,
    /// Records: `mixed` (the sample stream) or `rag` (8 sources of ~1.2 KB,
    /// 35 cited sentences).
    #[arg(long, value_enum, default_value_t = BenchShape::Mixed)]
    pub shape: BenchShape,
    /// Percentage of source slots that repeat a recent source (`--shape rag`).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub repeat_percent: u32,
    /// Partitions of the input and output topics.
    #[arg(long, default_value_t = 4)]
    pub partitions: i32,
    /// Each run is repeated this many times (interleaved); medians are reported.
    #[arg(long, default_value_t = 5)]
    pub rounds: u32,
}

/// The records `groundgate bench` produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchShape {
    Mixed,
    Rag,
}

impl KafkaFlags {
    /// The flag layer of the configuration (highest precedence).
    pub fn raw_layer(&self) -> Result<RawConfig, String> {
        let mut raw = RawConfig::default();
        raw.kafka.brokers = self.brokers.clone();
        raw.kafka.group_id = self.group_id.clone();
        raw.kafka.client_id = self.client_id.clone();
        raw.kafka.topics.input = self.input_topic.clone();
        for kv in &self.kafka_property {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(format!(
                    "-X {kv:?}: expected KEY=VALUE, e.g. -X security.protocol=SSL"
                ));
            };
            raw.kafka
                .properties
                .insert(k.trim().to_string(), v.to_string());
        }
        raw.log.format = self.log_format.map(|f| match f {
            LogFormatArg::Human => LogFormat::Human,
            LogFormatArg::Json => LogFormat::Json,
        });
        Ok(raw)
    }
}

impl RunArgs {
    pub fn raw_layer(&self) -> Result<RawConfig, String> {
        let mut raw = self.kafka.raw_layer()?;
        raw.kafka.guarantee = self.guarantee.map(|g| match g {
            GuaranteeArg::AtLeastOnce => Guarantee::AtLeastOnce,
            GuaranteeArg::ExactlyOnce => Guarantee::ExactlyOnce,
        });
        raw.metrics.addr = self.metrics_addr.clone();
        Ok(raw)
    }
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// JSON Lines inputs in the `check` format plus a label field
    /// (`supported` | `unsupported`); one table row per file.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// TOML configuration file (its `[grounding]` section is what is measured).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Name of the label field.
    #[arg(long = "label-field", default_value = "label")]
    pub label_field: String,
    /// Also break each file down by this record field (e.g. `kind`).
    #[arg(long)]
    pub by: Option<String>,
    /// Print the rows as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How many worst misses to list per file.
    #[arg(long, default_value_t = 0)]
    pub misses: usize,
    /// Fit the grounding model's coefficients on the inputs instead: prints
    /// the k-fold cross-validated figures and the coefficients to ship.
    #[arg(long)]
    pub fit: bool,
    /// Folds of the cross-validation (with --fit).
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
}

fn parse_time(s: &str) -> Result<SystemTime, String> {
    humantime::parse_rfc3339_weak(s)
        .map_err(|e| format!("{e} (expected RFC 3339, e.g. 2026-11-22T00:00:00Z)"))
}
