//! Command-line surface (clap derive). Flags that override configuration are
//! turned into a [`RawConfig`] layer here, so precedence (file < env < flags)
//! is decided in one place: `crate::config`.

use std::path::PathBuf;
use std::time::SystemTime;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{Guarantee, LogFormat, RawConfig};

mod examples;

#[derive(Debug, Parser)]
#[command(
    name = "groundgate",
    version,
    about = "Validates LLM answers and their [^N] citations between Kafka topics",
    after_help = examples::TOP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a JSON Lines file offline and write the outputs to a directory.
    #[command(after_help = examples::CHECK)]
    Check(CheckArgs),
    /// Run the stream worker against Kafka (--brokers, GROUNDGATE_BROKERS or kafka.brokers).
    #[command(after_help = examples::RUN)]
    Run(RunArgs),
    /// Run the embedded in-memory broker as a long-lived process (development only).
    #[command(after_help = examples::DEV_BROKER)]
    DevBroker(DevBrokerArgs),
    /// One-command tour: embedded broker, sample stream, one worker, a summary.
    #[command(after_help = examples::DEMO)]
    Demo(DemoArgs),
    /// Stream answers (a JSON Lines file or synthetic ones) to the input topic.
    #[command(after_help = examples::PRODUCE)]
    Produce(ProduceArgs),
    /// Put dead letters of chosen kinds back on the input topic, as received, once fixed.
    #[command(after_help = examples::REPLAY)]
    Replay(ReplayArgs),
    /// Measure the worker against a passthrough on the embedded broker (prints rates and ratios).
    #[command(after_help = examples::BENCH)]
    Bench(BenchArgs),
    /// The sealed audit trail: verify a trail, make a signing key pair, or print a pseudonym.
    #[command(after_help = examples::AUDIT)]
    Audit(AuditArgs),
    /// Measure the grounding check on labelled JSON Lines (AUC, accuracy, threshold sweep).
    #[command(after_help = examples::EVAL)]
    Eval(EvalArgs),
    /// Print the JSON Schema of a record this binary reads or writes, or list them.
    #[command(after_help = examples::SCHEMA)]
    Schema(SchemaArgs),
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The schema to print (e.g. `final`, `audit-row`, or its file name `final.schema.json`); without it, every name with its title.
    pub name: Option<String>,
    /// Write every schema into this directory instead, as NAME.schema.json (created if missing).
    #[arg(long, conflicts_with = "name")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check an audit trail (JSON Lines files, or the audit topic of the configured cluster) for altered,
    /// missing, reordered or forged rows, broken or unsigned seals, and input offsets without a row.
    /// Exit 0 clean (redeliveries allowed), 1 problem found, 2 the trail could not be read
    /// (usage, configuration, files, brokers).
    #[command(after_help = examples::AUDIT_VERIFY)]
    Verify(Box<AuditVerifyArgs>),
    /// Write an Ed25519 key pair: PREFIX.key (PKCS#8 PEM, mode 0600) and PREFIX.pub (SPKI PEM).
    #[command(after_help = examples::AUDIT_KEYGEN)]
    Keygen(KeygenArgs),
    /// Print the pseudonym that `[audit] pseudonymize` writes for each value, to find the rows of
    /// one user, tenant, question or source in a pseudonymised trail.
    #[command(after_help = examples::AUDIT_PSEUDONYM)]
    Pseudonym(PseudonymArgs),
}

#[derive(Debug, Args)]
pub struct AuditVerifyArgs {
    /// Audit files (e.g. `check`'s audit.jsonl). Without files, the audit
    /// topic is read from Kafka.
    pub files: Vec<PathBuf>,
    /// Bootstrap servers of the audit topic, host:port[,host:port...]
    /// (also GROUNDGATE_BROKERS or kafka.brokers of --config).
    #[arg(long)]
    pub brokers: Option<String>,
    /// The workers' TOML configuration: its `[kafka]` settings (brokers, TLS,
    /// SASL, passthrough properties) reach the cluster, and its
    /// kafka.topics.audit is the audit topic. GROUNDGATE_* variables and
    /// the flags here override it, as for `run`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// librdkafka property passthrough, KEY=VALUE (repeatable), as for
    /// `run`; secrets are refused here.
    #[arg(short = 'X', long = "kafka-property", value_name = "KEY=VALUE")]
    pub kafka_property: Vec<String>,
    /// The audit topic [default: kafka.topics.audit of the configuration,
    /// answers.audit]
    #[arg(long)]
    pub topic: Option<String>,
    /// Reading the audit topic: the input topic. Every offset it holds (up
    /// to the group's committed offset with --group) must have a row,
    /// partitions the trail never mentions included.
    #[arg(long)]
    pub input_topic: Option<String>,
    /// With --input-topic: the workers' consumer group. Its committed
    /// offsets and chain heads are the anchor: rows below a committed
    /// offset must be sealed, and the committed head seal must be there.
    #[arg(long, requires = "input_topic")]
    pub group: Option<String>,
    /// With --input-topic: check the input records written at or after this
    /// time (RFC 3339, e.g. 2026-11-22T00:00:00Z, or a time ago, e.g. 25h or
    /// 7days), by the input topic's record timestamps.
    #[arg(long, requires = "input_topic", value_parser = parse_time)]
    pub from_time: Option<SystemTime>,
    /// With --input-topic: check the input records written at or before
    /// this time (RFC 3339, or a time ago, e.g. 1h).
    #[arg(long, requires = "input_topic", value_parser = parse_time)]
    pub to_time: Option<SystemTime>,
    /// Check input offsets from this one (inclusive).
    #[arg(long)]
    pub from: Option<i64>,
    /// Check input offsets up to this one (inclusive).
    #[arg(long)]
    pub to: Option<i64>,
    /// A run of `check` the trail must be (its id, printed by `check` and in
    /// its summary.json as audit_run; repeatable): the trail's runs must be
    /// exactly the ones given, each whole.
    #[arg(long = "run", value_name = "ID")]
    pub runs: Vec<String>,
    /// Require every seal to be signed by one of the keys of this file: the
    /// .pub of `audit keygen` (SPKI PEM), or a bundle of several PEM PUBLIC
    /// KEY blocks. Repeatable: after a key rotation, give every public key
    /// that signed seals the trail still holds; the report says what each
    /// signed.
    #[arg(long, value_name = "FILE")]
    pub public_key: Vec<PathBuf>,
    /// Accept rows after a chain's last seal as a running worker's live
    /// tail (counted, not a problem). Without it a trail must end with a
    /// seal, as `check`'s and a stopped worker's do. With --public-key,
    /// only rows above the group's committed offset (--group) may be a tail;
    /// in a trail holding any seal of `check`'s, no row may.
    #[arg(long)]
    pub allow_unsealed_tail: bool,
    /// With --input-topic: a trail with no row passes when no row is owed
    /// either (the input topic holds no record in the range checked, up to
    /// the group's committed offsets with --group, and the group committed
    /// no chain head): a deployment that has not consumed anything yet, or
    /// a quiet window. Without it, a trail with no row is never a pass.
    #[arg(long, requires = "input_topic")]
    pub allow_empty: bool,
    /// Print the report as JSON: indented on a terminal, one line
    /// otherwise (a log collector reads the job's report as one record).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Path prefix of the key files: PREFIX.key and PREFIX.pub; a directory (existing, or ending
    /// in `/`) gets groundgate-audit.key and groundgate-audit.pub inside it. Missing directories
    /// are created (mode 0700).
    #[arg(long, default_value = "groundgate-audit")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct PseudonymArgs {
    /// The key the trail was written with (`[audit] pseudonym_key_file`); this or --config is
    /// required.
    #[arg(long, conflicts_with = "config")]
    pub key_file: Option<PathBuf>,
    /// The workers' configuration file: the key is the one its `audit.pseudonym_key_file` names
    /// (after the GROUNDGATE_* environment, as the workers read it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Values to pseudonymise, exactly as the records carry them; without any, one a line is read
    /// from standard input.
    pub values: Vec<String>,
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
    /// JSON Lines inputs, one answer per line, plain or gzip/zstd-compressed, read one after
    /// another; `-` reads standard input (once). Each input's records are numbered by its own lines.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// Directory for final.jsonl, retry.jsonl, audit.jsonl, dead_letter.jsonl and summary.json
    /// (created if missing). A record's number, `line` in dead_letter.jsonl and `input.offset` in
    /// audit.jsonl, is its 1-based line number.
    #[arg(long)]
    pub out: PathBuf,
    /// TOML configuration file (policy, providers, limits, grounding, value_framing, `[audit]`
    /// keys), the workers' own for the workers' verdicts; GROUNDGATE_* variables override it
    /// [default: none, built-in defaults]
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Exit 1 if any record had this outcome (repeatable).
    #[arg(long = "fail-on", value_enum)]
    pub fail_on: Vec<FailOn>,
    /// Also write a self-contained HTML report here (summary.json is always written to --out); its
    /// directory is created if missing.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// What-if: also judge every record under this (baseline) configuration and report which
    /// records change outcome under --config.
    #[arg(long)]
    pub compare_config: Option<PathBuf>,
    /// How many of the worst-grounded answers the report shows (at most 1000).
    #[arg(long, default_value_t = 10, value_parser = parse_worst)]
    pub worst: usize,
    /// Worker threads validating lines (default: one per CPU core). Outputs are the same for
    /// any value.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Where and how a command reaches Kafka, shared by `run` and `produce`.
#[derive(Debug, Args, Clone, Default)]
pub struct ClientFlags {
    /// Bootstrap servers, host:port[,host:port...]. Required (here, in GROUNDGATE_BROKERS or in
    /// kafka.brokers): run, produce and replay never start a broker (`groundgate dev-broker` runs one for
    /// development).
    #[arg(long)]
    pub brokers: Option<String>,
    /// TOML configuration file; a flag overrides GROUNDGATE_* variables, which override the file
    /// [default: none, built-in defaults]
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Client id reported to the brokers (produce adds -producer) [default: groundgate]
    #[arg(long)]
    pub client_id: Option<String>,
    /// Input topic, which run reads and produce and replay write [default: answers]
    #[arg(long)]
    pub input_topic: Option<String>,
    /// librdkafka property passthrough, KEY=VALUE (repeatable), e.g. -X fetch.min.bytes=1024.
    /// Secrets are refused here: use kafka.sasl_password_file and friends.
    #[arg(short = 'X', long = "kafka-property", value_name = "KEY=VALUE")]
    pub kafka_property: Vec<String>,
    /// Log format [default: human]
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormat>,
}

/// The Kafka settings of `run`: a client and its consumer group.
#[derive(Debug, Args, Clone, Default)]
pub struct KafkaFlags {
    #[command(flatten)]
    pub client: ClientFlags,
    /// Consumer group id [default: groundgate]
    #[arg(long)]
    pub group_id: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub kafka: KafkaFlags,
    /// Delivery guarantee [default: at-least-once]
    #[arg(long, value_enum)]
    pub guarantee: Option<Guarantee>,
    /// Address of /metrics, /healthz, /readyz (also metrics.addr, GROUNDGATE_METRICS_ADDR)
    /// [default: 0.0.0.0:9464]
    #[arg(long)]
    pub metrics_addr: Option<String>,
    /// Check the configuration and what the cluster offers (brokers, the five topics, their
    /// message limits, the audit topic's compaction and retention, schema validation against
    /// value_framing and `[output_schema_ids]`), print the findings and exit: 0 when nothing would
    /// stop the worker, 1 otherwise. Consumes, produces and creates nothing.
    #[arg(long)]
    pub preflight: bool,
}

#[derive(Debug, Args)]
pub struct DevBrokerArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 9092)]
    pub port: u16,
    /// Partitions per topic.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(i32).range(1..))]
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

#[derive(Debug, Args)]
pub struct ProduceArgs {
    #[command(flatten)]
    pub kafka: ClientFlags,
    /// JSON Lines file to stream (plain, gzip or zstd; `-` reads standard input); absent →
    /// synthetic answers.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Records per second (0 = as fast as possible).
    #[arg(long, default_value_t = 100)]
    pub rate: u64,
    /// Stop after this many records (0 = forever for synthetic, once through a file).
    #[arg(long, default_value_t = 0)]
    pub count: u64,
    /// Leave out the first N records (of the file, or of the synthetic answers) and send from
    /// record N+1: the number a stopped run says to go on with.
    #[arg(long, default_value_t = 0)]
    pub skip: u64,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub kafka: ClientFlags,
    /// Dead-letter kind to put back (repeatable): `internal` once the defect is fixed, `schema`,
    /// `invalid_json` or `invalid_utf8` once the producer or the configuration is.
    #[arg(long, value_enum, required = true)]
    pub kind: Vec<ReplayKind>,
    /// Only this partition of the dead-letter topic [default: all]
    #[arg(long, value_parser = clap::value_parser!(i32).range(0..))]
    pub partition: Option<i32>,
    /// First offset to read in each partition read [default: the earliest kept]
    #[arg(long, value_parser = clap::value_parser!(i64).range(0..))]
    pub from_offset: Option<i64>,
    /// Count what would be put back, and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Put back the dead letters of records read from this input topic (their
    /// groundgate.input.topic header), onto the input topic [default: the input topic]
    #[arg(long)]
    pub from_input_topic: Option<String>,
}

/// The dead-letter kinds `replay` can put back: every kind but
/// `too_large`, whose dead letter is a summary of the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ReplayKind {
    Internal,
    Schema,
    InvalidJson,
    InvalidUtf8,
}

impl ReplayKind {
    pub fn dead_letter_kind(self) -> crate::core::DeadLetterKind {
        use crate::core::DeadLetterKind as K;
        match self {
            ReplayKind::Internal => K::Internal,
            ReplayKind::Schema => K::Schema,
            ReplayKind::InvalidJson => K::InvalidJson,
            ReplayKind::InvalidUtf8 => K::InvalidUtf8,
        }
    }
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
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(i32).range(1..))]
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

impl ClientFlags {
    /// The flag layer of the configuration (highest precedence).
    pub fn raw_layer(&self) -> Result<RawConfig, String> {
        let mut raw = RawConfig::default();
        raw.kafka.brokers = self.brokers.clone();
        raw.kafka.client_id = self.client_id.clone();
        raw.kafka.topics.input = self.input_topic.clone();
        for kv in &self.kafka_property {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(format!(
                    "-X {kv:?}: expected KEY=VALUE, e.g. -X security.protocol=SSL"
                ));
            };
            let key = k.trim();
            // A second value for one key is a typo as often as an
            // override: which one librdkafka gets must not depend on order.
            if let Some(first) = raw.kafka.properties.get(key)
                && first != v
            {
                return Err(format!(
                    "-X {key} is given twice, as {first:?} and as {v:?}: keep the one you mean"
                ));
            }
            raw.kafka.properties.insert(key.to_string(), v.to_string());
        }
        raw.log.format = self.log_format;
        Ok(raw)
    }
}

impl KafkaFlags {
    /// The flag layer of the configuration (highest precedence).
    pub fn raw_layer(&self) -> Result<RawConfig, String> {
        let mut raw = self.client.raw_layer()?;
        raw.kafka.group_id = self.group_id.clone();
        Ok(raw)
    }
}

impl RunArgs {
    pub fn raw_layer(&self) -> Result<RawConfig, String> {
        let mut raw = self.kafka.raw_layer()?;
        raw.kafka.guarantee = self.guarantee;
        raw.metrics.addr = self.metrics_addr.clone();
        Ok(raw)
    }
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// JSON Lines inputs in the `check` format plus a label field
    /// (`supported` | `unsupported`), plain or gzip/zstd-compressed; one
    /// table row per file.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// TOML configuration file (its `[grounding]` section is what is measured); GROUNDGATE_*
    /// variables override it [default: none, built-in defaults]
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Name of the label field.
    #[arg(long = "label-field", default_value = "label")]
    pub label_field: String,
    /// Also break each file down by this record field (e.g. `kind`).
    #[arg(long)]
    pub by: Option<String>,
    /// Print the rows as JSON instead of a table (with --fit: the
    /// cross-validated rows and the coefficients by feature name).
    #[arg(long)]
    pub json: bool,
    /// How many worst misses to list per file.
    #[arg(long, default_value_t = 0)]
    pub misses: usize,
    /// Fit the grounding model's coefficients on the inputs instead: prints
    /// the k-fold cross-validated figures and the coefficients to ship.
    #[arg(long)]
    pub fit: bool,
    /// Folds of the cross-validation (with --fit): from 2 up to the records of the largest input.
    #[arg(long, default_value_t = 5, value_parser = parse_folds, requires = "fit")]
    pub folds: usize,
}

/// Each answer the report shows is held, with its cited sources, until the
/// report is written, and every record is ranked against them.
pub const MAX_WORST: usize = 1000;

fn parse_worst(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_WORST => Ok(n),
        Ok(_) => Err(format!(
            "at most {MAX_WORST}: each answer shown is held with its sources until the report \
             is written; every answer's grounding is in the outputs (final.jsonl, retry.jsonl)"
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_folds(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        Ok(_) => Err("at least 2: one part to fit on while another is scored".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// A time: RFC 3339, or a duration (`25h`, `7days`) read as that long
/// before now, so a scheduled verification can name its window without a
/// shell to compute dates.
fn parse_time(s: &str) -> Result<SystemTime, String> {
    time_at(s, SystemTime::now())
}

fn time_at(s: &str, now: SystemTime) -> Result<SystemTime, String> {
    if let Ok(t) = humantime::parse_rfc3339_weak(s) {
        return Ok(t);
    }
    let expected = "expected RFC 3339 (e.g. 2026-11-22T00:00:00Z) or a time ago (e.g. 25h, 7days)";
    let ago = humantime::parse_duration(s).map_err(|e| format!("{s:?}: {e} ({expected})"))?;
    now.checked_sub(ago)
        .ok_or_else(|| format!("{s:?} ago is before any time this system can represent"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_time_is_rfc_3339_or_a_time_ago() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let t = time_at("2026-11-22T00:00:00Z", now).unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_795_305_600
        );
        assert_eq!(
            time_at("25h", now).unwrap(),
            now - Duration::from_secs(25 * 3600)
        );
        assert_eq!(
            time_at("7days", now).unwrap(),
            now - Duration::from_secs(7 * 86_400)
        );
        let e = time_at("yesterday", now).unwrap_err();
        assert!(e.contains("RFC 3339") && e.contains("25h"), "{e}");
    }
}
