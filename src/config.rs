//! Two-phase configuration: raw layers (TOML file, `GROUNDGATE_*` environment,
//! command-line flags; later layers win) are merged into a [`RawConfig`] whose
//! every key is optional, then [`RawConfig::validate`] turns it into a
//! [`Config`] or fails with *every* problem listed at once.
//!
//! This module reads files and the environment; the pure core never does. It
//! must not open network connections: brokers are only checked for shape.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::core::process::MIN_OUTPUT_BYTES;
use crate::core::{Action, CoreSettings, GroundingSettings, PolicySettings};

/// Delivery guarantee of the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Guarantee {
    #[default]
    AtLeastOnce,
    ExactlyOnce,
}

impl Guarantee {
    pub fn as_str(self) -> &'static str {
        match self {
            Guarantee::AtLeastOnce => "at-least-once",
            Guarantee::ExactlyOnce => "exactly-once",
        }
    }
}

impl fmt::Display for Guarantee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Human,
    Json,
}

// ---------------------------------------------------------------------------
// Raw layer: every key optional, unknown keys rejected by name.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_answer: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_record_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub non_citing_providers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "RawPolicy::is_empty")]
    pub policy: RawPolicy,
    #[serde(default, skip_serializing_if = "RawGrounding::is_empty")]
    pub grounding: RawGrounding,
    #[serde(default, skip_serializing_if = "RawKafka::is_empty")]
    pub kafka: RawKafka,
    #[serde(default, skip_serializing_if = "RawMetrics::is_empty")]
    pub metrics: RawMetrics,
    #[serde(default, skip_serializing_if = "RawLog::is_empty")]
    pub log: RawLog,
    #[serde(default, skip_serializing_if = "RawAudit::is_empty")]
    pub audit: RawAudit,
}

/// `[audit]`: the sealed audit trail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAudit {
    /// Emit a seal after this many audit rows of one input partition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seal_every: Option<u64>,
    /// The worker also seals a partition's pending rows this often (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seal_interval_ms: Option<u64>,
    /// Ed25519 private key (PKCS#8 PEM, from `groundgate audit keygen`) to sign seals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_key_file: Option<PathBuf>,
}

impl RawAudit {
    fn is_empty(&self) -> bool {
        *self == RawAudit::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_confidence: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_answer_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub require_provenance: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forbidden_terms: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "RawActions::is_empty")]
    pub actions: RawActions,
}

impl RawPolicy {
    fn is_empty(&self) -> bool {
        *self == RawPolicy::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawActions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_confidence: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub too_long: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_answer: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_provenance: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forbidden_term: Option<Action>,
}

impl RawActions {
    fn is_empty(&self) -> bool {
        *self == RawActions::default()
    }
}

/// `[grounding]` (issue 8): the support check of cited claims.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGrounding {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_support: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported_claim: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncited_claim: Option<OptionalAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict_numbers: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_entity_cap: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_word_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_weight: Option<f64>,
}

impl RawGrounding {
    fn is_empty(&self) -> bool {
        *self == RawGrounding::default()
    }
}

/// An action that can also be switched off (`"off"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptionalAction {
    Off,
    Reject,
    Retry,
    Warn,
}

impl OptionalAction {
    fn action(self) -> Option<Action> {
        match self {
            OptionalAction::Off => None,
            OptionalAction::Reject => Some(Action::Reject),
            OptionalAction::Retry => Some(Action::Retry),
            OptionalAction::Warn => Some(Action::Warn),
        }
    }
}

/// Checks `[grounding]`, listing every problem.
fn validate_grounding(raw: &RawGrounding, problems: &mut Vec<String>) -> GroundingSettings {
    let d = GroundingSettings::default();
    let mut range = |name: &str, v: Option<f64>, default: f64, max: f64| {
        let v = v.unwrap_or(default);
        if !(v.is_finite() && (0.0..=max).contains(&v)) {
            problems.push(format!(
                "grounding.{name} = {v}: must be between 0 and {max}"
            ));
        }
        v
    };
    let min_support = range("min_support", raw.min_support, d.min_support, 1.0);
    let missing_entity_cap = range(
        "missing_entity_cap",
        raw.missing_entity_cap,
        d.missing_entity_cap,
        1.0,
    );
    let pair_weight = range("pair_weight", raw.pair_weight, d.pair_weight, 1.0);
    let entity_weight = range("entity_weight", raw.entity_weight, d.entity_weight, 100.0);
    let number_weight = range("number_weight", raw.number_weight, d.number_weight, 100.0);
    let missing_penalty = range(
        "missing_penalty",
        raw.missing_penalty,
        d.missing_penalty,
        100.0,
    );
    let function_word_weight = range(
        "function_word_weight",
        raw.function_word_weight,
        d.function_word_weight,
        100.0,
    );
    let prior_weight = range("prior_weight", raw.prior_weight, d.prior_weight, 100.0);
    GroundingSettings {
        enabled: raw.enabled.unwrap_or(d.enabled),
        min_support,
        unsupported_claim: raw.unsupported_claim.unwrap_or(d.unsupported_claim),
        uncited_claim: raw
            .uncited_claim
            .map_or(d.uncited_claim, OptionalAction::action),
        entity_weight,
        number_weight,
        strict_numbers: raw.strict_numbers.unwrap_or(d.strict_numbers),
        missing_entity_cap,
        missing_penalty,
        function_word_weight,
        prior_weight,
        pair_weight,
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKafka {
    /// Comma-separated `host:port` list. Absent → embedded in-memory broker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brokers: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guarantee: Option<Guarantee>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_interval_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_max_records: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_deadline_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_message_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_timeout_ms: Option<u64>,
    /// Static group membership (`group.instance.id`), e.g. the pod name of a StatefulSet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unassigned_timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "RawTopics::is_empty")]
    pub topics: RawTopics,
    /// librdkafka passthrough (`security.protocol`, `sasl.*`, `ssl.*`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
}

impl RawKafka {
    fn is_empty(&self) -> bool {
        *self == RawKafka::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTopics {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(rename = "final", skip_serializing_if = "Option::is_none")]
    pub final_: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter: Option<String>,
}

impl RawTopics {
    fn is_empty(&self) -> bool {
        *self == RawTopics::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// Providers allowed as a metric label value; others are reported as `other`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub providers: Option<Vec<String>>,
    /// Models allowed as a metric label value; others are reported as `other`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// Export per-partition consumer lag from librdkafka statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_lag: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statistics_interval_ms: Option<u64>,
}

impl RawMetrics {
    fn is_empty(&self) -> bool {
        *self == RawMetrics::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<LogFormat>,
    /// A `tracing` filter directive, e.g. `info` or `groundgate=debug`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
}

impl RawLog {
    fn is_empty(&self) -> bool {
        *self == RawLog::default()
    }
}

// ---------------------------------------------------------------------------
// Validated layer.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub struct Topics {
    pub input: String,
    pub final_: String,
    pub retry: String,
    pub audit: String,
    pub dead_letter: String,
}

impl Default for Topics {
    fn default() -> Self {
        Topics {
            input: "answers".into(),
            final_: "answers.final".into(),
            retry: "answers.retry".into(),
            audit: "answers.audit".into(),
            dead_letter: "answers.dlq".into(),
        }
    }
}

impl Topics {
    /// All four output topics plus the input, for creating them up front.
    pub fn all(&self) -> [&str; 5] {
        [
            &self.input,
            &self.final_,
            &self.retry,
            &self.audit,
            &self.dead_letter,
        ]
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct KafkaConfig {
    /// `None` → start the embedded in-memory broker.
    pub brokers: Option<String>,
    pub group_id: String,
    pub client_id: String,
    pub guarantee: Guarantee,
    pub transactional_id: String,
    pub max_in_flight: usize,
    pub commit_interval: Duration,
    pub commit_max_records: usize,
    pub drain_deadline: Duration,
    pub max_message_bytes: usize,
    /// librdkafka `session.timeout.ms`: how long the group waits for a
    /// member that vanished without leaving (SIGKILL, crash, partition).
    pub session_timeout: Duration,
    pub group_instance_id: Option<String>,
    /// After its partitions were lost, a worker given none back within this
    /// is not ready, and stops with an error so it is restarted.
    pub unassigned_timeout: Duration,
    pub topics: Topics,
    pub properties: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MetricsConfig {
    pub addr: SocketAddr,
    pub providers: Vec<String>,
    pub models: Vec<String>,
    pub consumer_lag: bool,
    pub statistics_interval: Duration,
}

/// The validated `[audit]` section. The key file is only named here; the
/// shells load it at start (a missing or unreadable key stops them there).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditConfig {
    pub seal_every: usize,
    pub seal_interval: Duration,
    pub signing_key_file: Option<PathBuf>,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            seal_every: 1000,
            seal_interval: Duration::from_secs(5),
            signing_key_file: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    pub format: LogFormat,
    pub level: String,
}

/// The validated configuration every subcommand runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub core: CoreSettings,
    pub kafka: KafkaConfig,
    pub metrics: MetricsConfig,
    pub log: LogConfig,
    pub audit: AuditConfig,
}

impl Default for Config {
    fn default() -> Self {
        // The empty raw layer always validates; a failure here is a bug in the defaults.
        match RawConfig::default().validate() {
            Ok(c) => c,
            Err(e) => panic!("built-in defaults are invalid: {e}"),
        }
    }
}

/// Every problem found in a configuration, reported together.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read configuration: {0}")]
    Load(String),
    #[error("invalid configuration:\n{}", .0.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<String>),
}

impl RawConfig {
    /// Merges the layers: the optional TOML file, then `GROUNDGATE_*`
    /// environment variables, then `flags` (highest precedence).
    ///
    /// Environment: `GROUNDGATE_BROKERS`, `GROUNDGATE_GROUP_ID`,
    /// `GROUNDGATE_CLIENT_ID`, `GROUNDGATE_GUARANTEE`,
    /// `GROUNDGATE_METRICS_ADDR`, `GROUNDGATE_LOG_FORMAT`,
    /// `GROUNDGATE_LOG_LEVEL`, `GROUNDGATE_POLICY_VERSION`, and any nested key
    /// spelled with `__` (`GROUNDGATE_KAFKA__TOPICS__INPUT`).
    pub fn load(
        file: Option<&Path>,
        env: &[(String, String)],
        flags: RawConfig,
    ) -> Result<RawConfig, ConfigError> {
        let mut fig = Figment::new();
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::Load(format!(
                    "config file {} does not exist or is not a file",
                    path.display()
                )));
            }
            fig = fig.merge(Toml::file_exact(path));
        }
        let mut problems = Vec::new();
        match env_layer(env) {
            Ok(raw) => fig = fig.merge(Serialized::defaults(raw)),
            Err(ConfigError::Load(p)) => problems.push(p),
            Err(ConfigError::Invalid(p)) => problems.extend(p),
        }
        fig = fig.merge(Serialized::defaults(flags));
        finish_load(&fig, problems)
    }

    /// Parses one TOML document (no environment, no flags): for configuration
    /// shipped inside the binary, such as the demo's.
    pub fn from_toml_str(text: &str) -> Result<RawConfig, ConfigError> {
        finish_load(&Figment::from(Toml::string(text)), Vec::new())
    }

    /// Reads the process environment and delegates to [`RawConfig::load`].
    pub fn load_from_process(file: Option<&Path>, flags: RawConfig) -> Result<Config, ConfigError> {
        let env: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with(ENV_PREFIX))
            .collect();
        RawConfig::load(file, &env, flags)?.validate()
    }

    /// Checks every value and fills defaults; lists every problem found.
    pub fn validate(self) -> Result<Config, ConfigError> {
        let mut problems = Vec::new();
        let d = PolicySettings::default();
        let p = &self.policy;
        let min_confidence = p.min_confidence.unwrap_or(d.min_confidence);
        if !(0.0..=1.0).contains(&min_confidence) {
            problems.push(format!(
                "policy.min_confidence = {min_confidence}: must be between 0 and 1"
            ));
        }
        let max_answer_bytes = p.max_answer_bytes.unwrap_or(d.max_answer_bytes as u64);
        if max_answer_bytes == 0 {
            problems.push("policy.max_answer_bytes = 0: must be at least 1".to_string());
        }
        let forbidden_terms = p.forbidden_terms.clone().unwrap_or_default();
        for (i, t) in forbidden_terms.iter().enumerate() {
            if t.trim().is_empty() {
                problems.push(format!(
                    "policy.forbidden_terms[{i}] is blank: every term must contain a non-space character"
                ));
            }
        }
        let a = &p.actions;
        let policy = PolicySettings {
            min_confidence,
            low_confidence: a.low_confidence.unwrap_or(d.low_confidence),
            max_answer_bytes: max_answer_bytes as usize,
            too_long: a.too_long.unwrap_or(d.too_long),
            empty_answer: a.empty_answer.unwrap_or(d.empty_answer),
            require_provenance: p.require_provenance.unwrap_or(d.require_provenance),
            missing_provenance: a.missing_provenance.unwrap_or(d.missing_provenance),
            forbidden_terms,
            forbidden_term: a.forbidden_term.unwrap_or(d.forbidden_term),
        };

        let dc = CoreSettings::default();
        let max_record_bytes = self.max_record_bytes.unwrap_or(dc.max_record_bytes as u64);
        if !(1024..=(64 << 20)).contains(&max_record_bytes) {
            problems.push(format!(
                "max_record_bytes = {max_record_bytes}: must be between 1024 and 67108864 (64 MiB)"
            ));
        }
        let max_output_bytes = self.max_output_bytes.unwrap_or(dc.max_output_bytes as u64);
        if !(MIN_OUTPUT_BYTES as u64..=(64 << 20)).contains(&max_output_bytes) {
            problems.push(format!(
                "max_output_bytes = {max_output_bytes}: must be between {MIN_OUTPUT_BYTES} and 67108864 (64 MiB)"
            ));
        } else if max_record_bytes > max_output_bytes {
            problems.push(format!(
                "max_record_bytes = {max_record_bytes} is larger than max_output_bytes = {max_output_bytes}: a dead letter forwards the original record, so raise max_output_bytes to at least {max_record_bytes} or lower max_record_bytes"
            ));
        }
        let policy_version = self.policy_version.unwrap_or(dc.policy_version);
        if policy_version.trim().is_empty() {
            problems
                .push("policy_version is blank: give the rules a name, e.g. \"2026-11-01\"".into());
        }
        if policy_version.len() > 256 {
            problems.push(format!(
                "policy_version is {} bytes: at most 256 (it is stamped on every audit row)",
                policy_version.len()
            ));
        }
        let core = CoreSettings {
            policy,
            non_citing_providers: self.non_citing_providers.unwrap_or_default(),
            include_answer: self.include_answer.unwrap_or(false),
            policy_version,
            max_record_bytes: max_record_bytes as usize,
            max_output_bytes: max_output_bytes as usize,
            grounding: validate_grounding(&self.grounding, &mut problems),
        };

        let kafka = validate_kafka(self.kafka, max_output_bytes as usize, &mut problems);
        let metrics = validate_metrics(self.metrics, &mut problems);
        let log = LogConfig {
            format: self.log.format.unwrap_or_default(),
            level: self.log.level.unwrap_or_else(|| "info".to_string()),
        };
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&log.level) {
            problems.push(format!("log.level = {:?}: {e}", log.level));
        }

        let audit = validate_audit(self.audit, &mut problems);

        if problems.is_empty() {
            Ok(Config {
                core,
                kafka,
                metrics,
                log,
                audit,
            })
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }
}

fn validate_audit(raw: RawAudit, problems: &mut Vec<String>) -> AuditConfig {
    let d = AuditConfig::default();
    let max = crate::audit::seal::MAX_SEAL_EVERY as u64;
    let seal_every = raw.seal_every.unwrap_or(d.seal_every as u64);
    if !(1..=max).contains(&seal_every) {
        problems.push(format!(
            "audit.seal_every = {seal_every}: must be between 1 and {max} (a seal lists every row it covers)"
        ));
    }
    let interval_ms = raw
        .seal_interval_ms
        .unwrap_or(d.seal_interval.as_millis() as u64);
    if !(100..=3_600_000).contains(&interval_ms) {
        problems.push(format!(
            "audit.seal_interval_ms = {interval_ms}: must be between 100 and 3600000"
        ));
    }
    AuditConfig {
        seal_every: seal_every.clamp(1, max) as usize,
        seal_interval: Duration::from_millis(interval_ms),
        signing_key_file: raw.signing_key_file,
    }
}

const ENV_PREFIX: &str = "GROUNDGATE_";

/// Flat aliases for the settings operators set most often.
const ENV_ALIASES: &[(&str, &str)] = &[
    ("BROKERS", "kafka.brokers"),
    ("GROUP_ID", "kafka.group_id"),
    ("CLIENT_ID", "kafka.client_id"),
    ("GUARANTEE", "kafka.guarantee"),
    ("TRANSACTIONAL_ID", "kafka.transactional_id"),
    ("METRICS_ADDR", "metrics.addr"),
    ("LOG_FORMAT", "log.format"),
    ("LOG_LEVEL", "log.level"),
    ("POLICY_VERSION", "policy_version"),
];

fn env_layer(env: &[(String, String)]) -> Result<RawConfig, ConfigError> {
    let mut fig = Figment::new();
    let mut unknown = Vec::new();
    let mut problems = Vec::new();
    for (k, v) in env {
        let Some(rest) = k.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        let path = match ENV_ALIASES.iter().find(|(alias, _)| *alias == rest) {
            Some((_, path)) => path.to_string(),
            None if rest.contains("__") => rest.to_ascii_lowercase().replace("__", "."),
            None => {
                unknown.push(k.clone());
                continue;
            }
        };
        let value: figment::value::Value = v.parse().unwrap_or_else(|_| v.clone().into());
        // Strings that look like numbers must stay strings where a string is wanted.
        let value = if path.ends_with("brokers")
            || path.ends_with("_id")
            || path.ends_with("policy_version")
            || path.contains("topics.")
        {
            figment::value::Value::from(v.clone())
        } else {
            value
        };
        // Checked one variable at a time, so every bad one is reported.
        if let Err(e) =
            Figment::from(Serialized::global(&path, value.clone())).extract::<RawConfig>()
        {
            for e in e {
                problems.push(format!("{k}={v:?}: {}", describe_kind(&e.kind)));
            }
            continue;
        }
        fig = fig.merge(Serialized::global(&path, value));
    }
    if !unknown.is_empty() {
        let known: Vec<String> = ENV_ALIASES
            .iter()
            .map(|(a, _)| format!("{ENV_PREFIX}{a}"))
            .collect();
        problems.insert(0, format!(
            "unknown environment variable(s) {}; known: {} (or a nested key spelled with __, e.g. GROUNDGATE_KAFKA__TOPICS__INPUT)",
            unknown.join(", "),
            known.join(", ")
        ));
    }
    if !problems.is_empty() {
        return Err(ConfigError::Invalid(problems));
    }
    fig.extract::<RawConfig>().map_err(|e| {
        ConfigError::Load(format!(
            "in GROUNDGATE_* environment: {}",
            describe_figment_error(e)
        ))
    })
}

/// Extracts the merged layers; on failure lists every unknown key and type
/// error (serde stops at the first one, so each leaf value is tried on its
/// own), followed by the validation problems of the keys that did parse.
fn finish_load(fig: &Figment, mut problems: Vec<String>) -> Result<RawConfig, ConfigError> {
    use figment::value::{Dict, Tag, Value};
    let first = match fig.extract::<RawConfig>() {
        Ok(raw) if problems.is_empty() => return Ok(raw),
        Ok(raw) => {
            if let Err(ConfigError::Invalid(p)) = raw.validate() {
                problems.extend(p);
            }
            return Err(ConfigError::Invalid(problems));
        }
        Err(e) => e,
    };
    // Not even a document (TOML syntax error, unreadable file): say that.
    let Ok(root) = fig.extract::<Value>() else {
        problems.push(describe_figment_error(first));
        return Err(ConfigError::Invalid(problems));
    };
    fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        match v {
            Value::Dict(_, d) if !d.is_empty() => {
                for (k, child) in d {
                    path.push(k.clone());
                    leaves(child, path, out);
                    path.pop();
                }
            }
            other => out.push((path.clone(), other.clone())),
        }
    }
    let mut all = Vec::new();
    leaves(&root, &mut Vec::new(), &mut all);
    let nest = |path: &[String], v: Value| {
        path.iter().rev().fold(v, |acc, k| {
            let mut d = Dict::new();
            d.insert(k.clone(), acc);
            Value::Dict(Tag::Default, d)
        })
    };
    let before = problems.len();
    let mut good = Figment::new();
    for (path, value) in all {
        let origin = fig
            .get_metadata(value.tag())
            .and_then(|m| m.source.as_ref())
            .and_then(|s| s.file_path())
            .map(|p| format!(" (in {})", p.display()))
            .unwrap_or_default();
        let one = Figment::from(Serialized::defaults(nest(&path, value.clone())));
        match one.extract::<RawConfig>() {
            Ok(_) => good = good.merge(Serialized::defaults(nest(&path, value))),
            Err(e) => {
                for e in e {
                    let key = path.join(".");
                    let msg = format!("{key}: {}", describe_kind(&e.kind));
                    if !problems.contains(&format!("{msg}{origin}")) {
                        problems.push(format!("{msg}{origin}"));
                    }
                }
            }
        }
    }
    if problems.len() == before {
        problems.push(describe_figment_error(first));
    }
    if let Ok(raw) = good.extract::<RawConfig>()
        && let Err(ConfigError::Invalid(p)) = raw.validate()
    {
        problems.extend(p);
    }
    Err(ConfigError::Invalid(problems))
}

/// serde's unknown-field message nests backticks (`` expected `one of `a`` ``);
/// say it plainly.
fn describe_kind(kind: &figment::error::Kind) -> String {
    match kind {
        figment::error::Kind::UnknownField(field, expected) => format!(
            "unknown key {field:?} (known keys here: {})",
            expected.join(", ")
        ),
        other => other.to_string(),
    }
}

fn describe_figment_error(e: figment::Error) -> String {
    e.into_iter()
        .map(|e| {
            let path = e.path.join(".");
            let origin = e
                .metadata
                .as_ref()
                .and_then(|m| m.source.as_ref().map(|s| s.to_string()))
                .unwrap_or_default();
            let mut s = describe_kind(&e.kind);
            if !path.is_empty() {
                s = format!("{path}: {s}");
            }
            if !origin.is_empty() {
                s = format!("{s} (in {origin})");
            }
            s
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Room left in a Kafka message beside an output of `max_output_bytes` for
/// its key (a request id, or a dead letter's original key) and headers.
pub const MESSAGE_HEADROOM_BYTES: usize = 64 << 10;

fn validate_kafka(
    raw: RawKafka,
    max_output_bytes: usize,
    problems: &mut Vec<String>,
) -> KafkaConfig {
    let brokers = raw.brokers.filter(|b| !b.trim().is_empty());
    if let Some(b) = &brokers {
        for part in b.split(',') {
            let part = part.trim();
            let ok = part
                .rsplit_once(':')
                .map(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
                .unwrap_or(false);
            if !ok {
                problems.push(format!(
                    "kafka.brokers: {part:?} is not host:port (example: kafka-1:9092,kafka-2:9092)"
                ));
            }
        }
    }
    let group_id = raw.group_id.unwrap_or_else(|| "groundgate".into());
    if group_id.trim().is_empty() {
        problems.push("kafka.group_id is blank".into());
    }
    let client_id = raw.client_id.unwrap_or_else(|| "groundgate".into());
    if client_id.trim().is_empty() {
        problems.push("kafka.client_id is blank".into());
    }
    let transactional_id = raw.transactional_id.unwrap_or_else(|| {
        // Stable across restarts of the same pod/host so a restarted worker
        // fences its zombie predecessor.
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "local".into());
        format!("{group_id}-{host}")
    });
    let max_in_flight = raw.max_in_flight.unwrap_or(1000);
    if !(1..=100_000).contains(&max_in_flight) {
        problems.push(format!(
            "kafka.max_in_flight = {max_in_flight}: must be between 1 and 100000"
        ));
    }
    let commit_interval_ms = raw.commit_interval_ms.unwrap_or(1000);
    if !(10..=600_000).contains(&commit_interval_ms) {
        problems.push(format!(
            "kafka.commit_interval_ms = {commit_interval_ms}: must be between 10 and 600000"
        ));
    }
    let commit_max_records = raw.commit_max_records.unwrap_or(5000);
    if !(1..=1_000_000).contains(&commit_max_records) {
        problems.push(format!(
            "kafka.commit_max_records = {commit_max_records}: must be between 1 and 1000000"
        ));
    }
    let drain_deadline_ms = raw.drain_deadline_ms.unwrap_or(10_000);
    if !(100..=600_000).contains(&drain_deadline_ms) {
        problems.push(format!(
            "kafka.drain_deadline_ms = {drain_deadline_ms}: must be between 100 and 600000"
        ));
    }
    // The core bounds every output value by max_output_bytes; the producer's
    // message.max.bytes must hold that plus the key and headers.
    let needed = (max_output_bytes + MESSAGE_HEADROOM_BYTES) as u64;
    let max_message_bytes = raw.max_message_bytes.unwrap_or(needed.max(2 << 20));
    if max_message_bytes < needed {
        problems.push(format!(
            "kafka.max_message_bytes = {max_message_bytes} is smaller than max_output_bytes = {max_output_bytes} plus {MESSAGE_HEADROOM_BYTES} bytes for key and headers: raise kafka.max_message_bytes to at least {needed} (and the output topics' max.message.bytes on the brokers), or lower max_output_bytes"
        ));
    }
    let d = Topics::default();
    let t = raw.topics;
    let topics = Topics {
        input: t.input.unwrap_or(d.input),
        final_: t.final_.unwrap_or(d.final_),
        retry: t.retry.unwrap_or(d.retry),
        audit: t.audit.unwrap_or(d.audit),
        dead_letter: t.dead_letter.unwrap_or(d.dead_letter),
    };
    let names = [
        ("input", &topics.input),
        ("final", &topics.final_),
        ("retry", &topics.retry),
        ("audit", &topics.audit),
        ("dead_letter", &topics.dead_letter),
    ];
    for (role, name) in names {
        if name.is_empty()
            || name.len() > 249
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            problems.push(format!(
                "kafka.topics.{role} = {name:?}: a topic name is 1-249 characters of [a-zA-Z0-9._-]"
            ));
        }
    }
    for (i, (ra, a)) in names.iter().enumerate() {
        for (rb, b) in &names[i + 1..] {
            if a == b {
                problems.push(format!(
                    "kafka.topics.{ra} and kafka.topics.{rb} are both {a:?}: every role needs its own topic"
                ));
            }
        }
    }
    for key in raw.properties.keys() {
        if let Some(m) = crate::kafka::client::managed(key) {
            let instead = match m.instead {
                Some(s) => format!("; use {s} instead"),
                None => "; remove it".to_string(),
            };
            problems.push(format!(
                "kafka.properties {key:?} (-X {key}=...) is managed by groundgate: {} ({}){instead}",
                m.key, m.why
            ));
        }
    }
    let session_timeout_ms = raw.session_timeout_ms.unwrap_or(10_000);
    if !(1_000..=3_600_000).contains(&session_timeout_ms) {
        problems.push(format!(
            "kafka.session_timeout_ms = {session_timeout_ms}: must be between 1000 and 3600000 (brokers allow 6000..=1800000 by default)"
        ));
    }
    let group_instance_id = raw.group_instance_id.filter(|s| !s.trim().is_empty());
    let unassigned_timeout_ms = raw.unassigned_timeout_ms.unwrap_or(60_000);
    if !(1_000..=3_600_000).contains(&unassigned_timeout_ms) {
        problems.push(format!(
            "kafka.unassigned_timeout_ms = {unassigned_timeout_ms}: must be between 1000 and 3600000"
        ));
    }
    KafkaConfig {
        brokers,
        group_id,
        client_id,
        guarantee: raw.guarantee.unwrap_or_default(),
        transactional_id,
        max_in_flight: max_in_flight as usize,
        commit_interval: Duration::from_millis(commit_interval_ms),
        commit_max_records: commit_max_records as usize,
        drain_deadline: Duration::from_millis(drain_deadline_ms),
        max_message_bytes: max_message_bytes as usize,
        session_timeout: Duration::from_millis(session_timeout_ms),
        group_instance_id,
        unassigned_timeout: Duration::from_millis(unassigned_timeout_ms),
        topics,
        properties: raw.properties,
    }
}

fn validate_metrics(raw: RawMetrics, problems: &mut Vec<String>) -> MetricsConfig {
    let addr_s = raw.addr.unwrap_or_else(|| "0.0.0.0:9464".into());
    let addr = match addr_s.parse::<SocketAddr>() {
        Ok(a) => a,
        Err(_) => {
            problems.push(format!(
                "metrics.addr = {addr_s:?}: not an ip:port socket address (example: 0.0.0.0:9464)"
            ));
            SocketAddr::from(([0, 0, 0, 0], 9464))
        }
    };
    let interval_ms = raw.statistics_interval_ms.unwrap_or(5000);
    if !(100..=600_000).contains(&interval_ms) {
        problems.push(format!(
            "metrics.statistics_interval_ms = {interval_ms}: must be between 100 and 600000"
        ));
    }
    let providers = raw.providers.unwrap_or_default();
    let models = raw.models.unwrap_or_default();
    for (what, list) in [("providers", &providers), ("models", &models)] {
        if list.len() > 200 {
            problems.push(format!(
                "metrics.{what} lists {} values: at most 200, to keep label cardinality bounded",
                list.len()
            ));
        }
        if list.iter().any(|v| v == "other") {
            problems.push(format!(
                "metrics.{what} contains \"other\", which is reserved for values outside the list"
            ));
        }
    }
    MetricsConfig {
        addr,
        providers,
        models,
        consumer_lag: raw.consumer_lag.unwrap_or(true),
        statistics_interval: Duration::from_millis(interval_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn write(toml: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), toml).unwrap();
        f
    }

    #[test]
    fn defaults_match_the_spec() {
        let c = Config::default();
        assert_eq!(c.core.policy.min_confidence, 0.5);
        assert_eq!(c.core.policy.max_answer_bytes, 10_000);
        assert!(c.core.policy.require_provenance);
        assert!(!c.core.include_answer);
        assert_eq!(c.core.max_record_bytes, 1 << 20);
        assert_eq!(c.kafka.topics, Topics::default());
        assert_eq!(c.kafka.brokers, None);
        assert_eq!(c.kafka.guarantee, Guarantee::AtLeastOnce);
        assert_eq!(c.metrics.addr.to_string(), "0.0.0.0:9464");
    }

    #[test]
    fn layers_apply_in_order_file_env_flags() {
        let f = write(
            "policy_version = \"file\"\n[kafka]\nbrokers = \"file:9092\"\ngroup_id = \"g-file\"\n[policy]\nforbidden_terms = [\"Secret\"]\n[policy.actions]\nlow_confidence = \"reject\"\n",
        );
        let e = env(&[
            ("GROUNDGATE_BROKERS", "env:9092"),
            ("GROUNDGATE_KAFKA__TOPICS__INPUT", "in-env"),
        ]);
        let flags = RawConfig {
            kafka: RawKafka {
                group_id: Some("g-flag".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let c = RawConfig::load(Some(f.path()), &e, flags)
            .unwrap()
            .validate()
            .unwrap();
        assert_eq!(c.core.policy_version, "file");
        assert_eq!(c.kafka.brokers.as_deref(), Some("env:9092"));
        assert_eq!(c.kafka.group_id, "g-flag");
        assert_eq!(c.kafka.topics.input, "in-env");
        assert_eq!(c.core.policy.forbidden_terms, vec!["Secret".to_string()]);
        assert_eq!(c.core.policy.low_confidence, Action::Reject);
    }

    #[test]
    fn unknown_file_key_is_named() {
        let f = write("[policy]\nmin_confidance = 0.3\n");
        let err = RawConfig::load(Some(f.path()), &[], RawConfig::default()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("min_confidance"), "{msg}");
    }

    #[test]
    fn unknown_env_var_is_named() {
        let err = RawConfig::load(
            None,
            &env(&[("GROUNDGATE_BROKRES", "x:1")]),
            RawConfig::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("GROUNDGATE_BROKRES"), "{err}");
    }

    #[test]
    fn every_problem_is_listed_at_once() {
        let f = write(
            "max_record_bytes = 10\n[policy]\nmin_confidence = 2.0\n[kafka]\nbrokers = \"nohost\"\nmax_in_flight = 0\n[kafka.topics]\nretry = \"answers.final\"\n[kafka.properties]\n\"group.id\" = \"x\"\n[metrics]\naddr = \"not-an-addr\"\n",
        );
        let err = RawConfig::load(Some(f.path()), &[], RawConfig::default())
            .unwrap()
            .validate()
            .unwrap_err();
        let ConfigError::Invalid(problems) = &err else {
            panic!("expected Invalid, got {err}");
        };
        let all = problems.join("\n");
        for needle in [
            "max_record_bytes",
            "policy.min_confidence",
            "kafka.brokers",
            "kafka.max_in_flight",
            "kafka.topics.final and kafka.topics.retry",
            "group.id",
            "metrics.addr",
        ] {
            assert!(all.contains(needle), "missing {needle} in:\n{all}");
        }
    }

    #[test]
    fn output_limits_must_agree_with_the_producer_limit() {
        let c = Config::default();
        assert_eq!(c.core.max_output_bytes, 1 << 20);
        assert!(c.kafka.max_message_bytes >= c.core.max_output_bytes + MESSAGE_HEADROOM_BYTES);
        let problems = |toml: &str| -> String {
            match RawConfig::from_toml_str(toml).unwrap().validate() {
                Ok(_) => String::new(),
                Err(ConfigError::Invalid(p)) => p.join("\n"),
                Err(e) => panic!("{e}"),
            }
        };
        let p = problems("max_output_bytes = 1048576\n[kafka]\nmax_message_bytes = 1000000\n");
        assert!(
            p.contains("raise kafka.max_message_bytes to at least 1114112"),
            "{p}"
        );
        let p = problems("max_record_bytes = 2097152\nmax_output_bytes = 1048576\n");
        assert!(
            p.contains("raise max_output_bytes to at least 2097152"),
            "{p}"
        );
        let p = problems("max_output_bytes = 100\n");
        assert!(p.contains("max_output_bytes = 100: must be between"), "{p}");
        // A larger output limit moves the default message limit along.
        let c = RawConfig::from_toml_str("max_output_bytes = 4194304\n")
            .unwrap()
            .validate()
            .unwrap();
        assert_eq!(
            c.kafka.max_message_bytes,
            (4 << 20) + MESSAGE_HEADROOM_BYTES
        );
        assert!(
            problems(&format!("policy_version = \"{}\"\n", "v".repeat(300)))
                .contains("at most 256")
        );
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let err = RawConfig::load(
            Some(Path::new("/nonexistent/groundgate.toml")),
            &[],
            RawConfig::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/groundgate.toml"));
    }

    #[test]
    fn passthrough_properties_are_kept() {
        let f = write(
            "[kafka.properties]\n\"security.protocol\" = \"SASL_SSL\"\n\"sasl.mechanism\" = \"PLAIN\"\n",
        );
        let c = RawConfig::load(Some(f.path()), &[], RawConfig::default())
            .unwrap()
            .validate()
            .unwrap();
        assert_eq!(
            c.kafka
                .properties
                .get("security.protocol")
                .map(String::as_str),
            Some("SASL_SSL")
        );
        assert_eq!(c.kafka.properties.len(), 2);
    }
}

#[cfg(test)]
mod reference_file {
    use super::*;

    /// The shipped reference file documents every key with its default, so
    /// loading it must give exactly the built-in defaults.
    #[test]
    fn shipped_reference_config_is_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/groundgate.toml");
        let c = RawConfig::load(Some(&path), &[], RawConfig::default())
            .unwrap()
            .validate()
            .unwrap();
        assert_eq!(c, Config::default());
    }
}

#[cfg(test)]
mod managed_and_every_problem {
    use super::*;

    fn write(toml: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), toml).unwrap();
        f
    }

    fn problems(file: &str, flags: RawConfig) -> String {
        let f = write(file);
        let err = RawConfig::load(Some(f.path()), &[], flags)
            .and_then(RawConfig::validate)
            .unwrap_err();
        let ConfigError::Invalid(p) = &err else {
            panic!("expected a list of problems, got {err}");
        };
        p.join("\n")
    }

    /// `-X acks=1` and friends would silently weaken the guarantee: each is
    /// refused by name, all of them at once.
    #[test]
    fn managed_librdkafka_keys_are_refused_by_name() {
        let mut flags = RawConfig::default();
        for (k, v) in [
            ("acks", "1"),
            ("enable.idempotence", "false"),
            ("transactional.id", "x"),
            ("isolation.level", "read_uncommitted"),
            ("enable.auto.offset.store", "true"),
            ("request.required.acks", "0"),
            ("security.protocol", "SSL"),
        ] {
            flags.kafka.properties.insert(k.into(), v.into());
        }
        let all = problems("", flags);
        for key in [
            "\"acks\"",
            "\"enable.idempotence\"",
            "\"transactional.id\"",
            "\"isolation.level\"",
            "\"enable.auto.offset.store\"",
            "\"request.required.acks\"",
        ] {
            assert!(all.contains(key), "{key} not refused:\n{all}");
        }
        assert!(!all.contains("security.protocol"), "{all}");
        assert!(
            all.contains("kafka.transactional_id"),
            "points at the setting: {all}"
        );
    }

    /// serde stops at the first unknown key or type error; the loader must
    /// still list every one, plus the invalid values of the keys that parsed.
    #[test]
    fn every_unknown_key_and_type_error_is_listed() {
        let all = problems(
            "max_record_bytes = 10\n[policy]\nmin_confidance = 0.3\nmax_answer_bytes = \"big\"\n[kafka]\nbrokres = \"x:1\"\nmax_in_flight = 0\n[kafka.properties]\nacks = \"1\"\n[metrics]\nconsumer_lag = \"yes\"\n[logg]\nlevel = \"info\"\n",
            RawConfig::default(),
        );
        for needle in [
            "policy.min_confidance: unknown key",
            "policy.max_answer_bytes",
            "kafka.brokres: unknown key",
            "metrics.consumer_lag",
            "logg",
            "max_record_bytes = 10",
            "kafka.max_in_flight = 0",
            "\"acks\"",
        ] {
            assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
        }
        assert!(!all.contains("``"), "doubled backticks:\n{all}");
        assert!(all.contains("min_confidence"), "known keys listed:\n{all}");
    }

    #[test]
    fn environment_and_file_problems_are_listed_together() {
        let f = write("[policy]\nmin_confidance = 0.3\n");
        let env: Vec<(String, String)> = [
            ("GROUNDGATE_BROKRES", "x:1"),
            ("GROUNDGATE_KAFKA__BROKRES", "x:1"),
            ("GROUNDGATE_POLICY__MIN_CONFIDENCE", "abc"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let err = RawConfig::load(Some(f.path()), &env, RawConfig::default()).unwrap_err();
        let ConfigError::Invalid(p) = &err else {
            panic!("expected a list of problems, got {err}");
        };
        let all = p.join("\n");
        for needle in [
            "GROUNDGATE_BROKRES",
            "GROUNDGATE_KAFKA__BROKRES",
            "GROUNDGATE_POLICY__MIN_CONFIDENCE",
            "min_confidance",
        ] {
            assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
        }
        assert!(!all.contains("``"), "doubled backticks:\n{all}");
        assert!(
            !all.contains("src/config.rs"),
            "code locations are noise:\n{all}"
        );
    }

    #[test]
    fn consumer_lag_is_exported_by_default() {
        let c = Config::default();
        assert!(c.metrics.consumer_lag);
        assert!(c.metrics.statistics_interval <= Duration::from_secs(10));
        let consumer = crate::kafka::client::consumer(&c.kafka, "b:9092", Some(5000));
        assert_eq!(consumer.get("statistics.interval.ms"), Some("5000"));
    }

    #[test]
    fn session_timeout_and_static_membership_are_settings() {
        let f = write("[kafka]\nsession_timeout_ms = 6000\ngroup_instance_id = \"pod-0\"\n");
        let c = RawConfig::load(Some(f.path()), &[], RawConfig::default())
            .unwrap()
            .validate()
            .unwrap();
        let consumer = crate::kafka::client::consumer(&c.kafka, "b:9092", None);
        assert_eq!(consumer.get("session.timeout.ms"), Some("6000"));
        assert_eq!(consumer.get("group.instance.id"), Some("pod-0"));
        let d = Config::default();
        let consumer = crate::kafka::client::consumer(&d.kafka, "b:9092", None);
        assert_eq!(consumer.get("group.instance.id"), None);
    }
}

#[cfg(test)]
mod grounding_section {
    use super::*;

    #[test]
    fn grounding_keys_parse_and_every_problem_is_listed() {
        let raw = RawConfig::from_toml_str(
            "[grounding]\nenabled = false\nmin_support = 0.4\nunsupported_claim = \"retry\"\nuncited_claim = \"warn\"\n",
        )
        .unwrap();
        let g = raw.validate().unwrap().core.grounding;
        assert!(!g.enabled);
        assert_eq!(g.min_support, 0.4);
        assert_eq!(g.unsupported_claim, Action::Retry);
        assert_eq!(g.uncited_claim, Some(Action::Warn));
        let off = RawConfig::from_toml_str("[grounding]\nuncited_claim = \"off\"\n").unwrap();
        assert_eq!(off.validate().unwrap().core.grounding.uncited_claim, None);

        let bad = RawConfig::from_toml_str(
            "[grounding]\nmin_support = 1.5\npair_weight = -1\nmissing_penalty = 1000\n",
        )
        .unwrap();
        let Err(ConfigError::Invalid(problems)) = bad.validate() else {
            panic!("invalid grounding values must fail")
        };
        for key in ["min_support", "pair_weight", "missing_penalty"] {
            assert!(
                problems
                    .iter()
                    .any(|p| p.starts_with(&format!("grounding.{key} ="))),
                "{key} not listed in {problems:?}"
            );
        }
        let unknown = RawConfig::from_toml_str("[grounding]\nmin_suport = 0.5\n");
        assert!(
            unknown.is_err_and(|e| e.to_string().contains("min_suport")),
            "unknown keys are errors naming the key"
        );
    }
}
