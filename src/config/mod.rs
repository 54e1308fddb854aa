//! Two-phase configuration: raw layers (TOML file, `GROUNDGATE_*` environment,
//! command-line flags; later layers win) are merged into a [`RawConfig`] whose
//! every key is optional, then [`RawConfig::validate`] turns it into a
//! [`Config`] or fails with *every* problem listed at once.
//!
//! Laid out like ripgrep's `flags/`:
//! - [`raw`]: the schema of the layers (every key optional, unknown keys
//!   rejected), with nothing filled in;
//! - `load`: merging the file, the `GROUNDGATE_*` environment and the flags,
//!   collecting every unknown key and type error, and for the commands that
//!   connect, every problem in one list (the only code here that reads
//!   files or the process environment, in `load_from_process`,
//!   `load_writing_audit`, `load_for_kafka` and `load_for_worker`);
//! - `validate`: checking every value and filling defaults into the
//!   validated types below; the environment it needs (the host name for the
//!   default transactional id) is passed in;
//! - [`managed`]: the librdkafka properties groundgate sets itself, the
//!   secrets, and the properties typed keys set (what the passthrough may
//!   not carry); the Kafka client settings read the same lists;
//! - [`secret_file`]: reading a named file without blocking on a FIFO,
//!   and naming a file that holds a secret without showing the secret;
//! - `security`: the typed TLS/SASL/OIDC keys, checked against each other,
//!   and for the commands that connect, against files, variables and the
//!   librdkafka build ([`check_access`]).
//!
//! The pure core never reads configuration; it gets [`crate::core::CoreSettings`].
//! Nothing here opens network connections: brokers are only checked for shape.

mod load;
pub mod managed;
pub mod raw;
pub mod secret_file;
mod security;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::core::pseudonym::PseudonymField;
use crate::core::{CoreSettings, OutputRole};

pub use load::{Librdkafka, env_layer_names, read_pseudonym_key_file};
pub use raw::*;
pub use security::{
    Access, KafkaSecurity, MAX_SECRET_BYTES, NotUtf8, Oidc, SaslMechanism, Secret, SecretSource,
    Secrets, SecurityProtocol, check_access, needed_features,
};
pub use validate::Host;

// What the test modules below use besides this module's own items.
#[cfg(test)]
use {
    crate::core::{Action, ValueFraming},
    std::path::Path,
    validate::MESSAGE_HEADROOM_BYTES,
};

/// Delivery guarantee of the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
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

/// What wraps the JSON text of an input record's value (`value_framing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    /// The value is the JSON text.
    #[default]
    None,
    /// Confluent Schema Registry wire format (0x00, a 4-byte schema id, the
    /// JSON text); a value without it is read as plain JSON.
    SchemaRegistry,
}

impl Framing {
    pub fn as_str(self) -> &'static str {
        match self {
            Framing::None => "none",
            Framing::SchemaRegistry => "schema-registry",
        }
    }
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Human,
    Json,
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

/// The Schema Registry schema id written in front of the values of each
/// output topic that has one (`[output_schema_ids]`): byte 0x00, the id as
/// 4 bytes big-endian, then the JSON text. A topic without an id gets the
/// JSON text alone; dead letters always keep the record as received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputSchemaIds {
    pub final_: Option<u32>,
    pub retry: Option<u32>,
    pub audit: Option<u32>,
}

impl OutputSchemaIds {
    /// The schema id of the values of an output of `role`, if they are framed.
    pub fn of(&self, role: OutputRole) -> Option<u32> {
        match role {
            OutputRole::Final => self.final_,
            OutputRole::Retry => self.retry,
            OutputRole::Audit => self.audit,
            OutputRole::DeadLetter => None,
        }
    }

    /// The framed topics by role with their ids (`final 101, audit 103`),
    /// `None` when every output is plain.
    pub fn describe(&self) -> Option<String> {
        let framed: Vec<String> = OutputRole::ALL
            .into_iter()
            .filter_map(|role| self.of(role).map(|id| format!("{} {id}", role.as_str())))
            .collect();
        (!framed.is_empty()).then(|| framed.join(", "))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct KafkaConfig {
    /// `None` when not configured: `run` and `produce` refuse to start
    /// (the embedded broker is only for `demo` and `dev-broker`).
    pub brokers: Option<String>,
    pub group_id: String,
    pub client_id: String,
    pub guarantee: Guarantee,
    pub transactional_id: String,
    pub max_in_flight: usize,
    /// Input bytes (values and keys) of the records whose outputs are not
    /// yet acknowledged (at-least-once) or committed (exactly-once): what
    /// bounds the worker's memory when records are large, where
    /// `max_in_flight` bounds their number.
    pub max_in_flight_bytes: usize,
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
    /// Kept beside the topics because only what the worker writes to Kafka
    /// is framed: `check` writes its files plain whatever it says.
    pub output_schema_ids: OutputSchemaIds,
    /// Names of the input headers copied onto the final, retry and audit
    /// records (matched without regard to case; never a `groundgate.*`
    /// one). Dead letters keep every header anyway.
    pub propagate_headers: Vec<String>,
    /// TLS and SASL; secrets are read only by the commands that connect.
    pub security: KafkaSecurity,
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

/// The validated `[audit]` section. The loaders of the commands that sign
/// (`load_writing_audit`, `load_for_worker`) read the key file once, with
/// the rest of the configuration, into `signing_key`: what signs is what
/// was checked, and a bad key stops the command before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditConfig {
    pub seal_every: usize,
    pub seal_interval: Duration,
    pub signing_key_file: Option<PathBuf>,
    /// The key `signing_key_file` held when the configuration was loaded;
    /// `None` when none is named, or the loader does not read it.
    pub signing_key: Option<AuditSigningKey>,
    /// The audit-row fields written as pseudonyms (sorted, each once).
    pub pseudonymize: Vec<PseudonymField>,
    /// The pseudonyms' key, read with the configuration by the commands
    /// that judge records (into `core.pseudonyms`).
    pub pseudonym_key_file: Option<PathBuf>,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            seal_every: 1000,
            // As often as at-least-once commits by default
            // (`kafka.commit_interval_ms`): its offsets only move at seals,
            // and a crash redelivers what came after the last one.
            seal_interval: Duration::from_secs(1),
            signing_key_file: None,
            signing_key: None,
            pseudonymize: Vec::new(),
            pseudonym_key_file: None,
        }
    }
}

impl AuditConfig {
    /// Names `path` as the signing key file and reads its key, which is
    /// then the one that signs (what a loader does, for a configuration
    /// built in code).
    pub fn sign_with(&mut self, path: PathBuf) -> Result<(), crate::audit::keys::KeyError> {
        self.signing_key = Some(AuditSigningKey(crate::audit::keys::load_signing_key(
            &path,
        )?));
        self.signing_key_file = Some(path);
        Ok(())
    }

    /// The key that signs: the one read with the configuration. A key file
    /// named but not read is an error, never a second read: that file may
    /// have changed since the configuration was checked.
    pub fn signing_key(
        &self,
    ) -> Result<Option<&ed25519_dalek::SigningKey>, crate::audit::keys::KeyError> {
        match (&self.signing_key, &self.signing_key_file) {
            (Some(key), _) => Ok(Some(&key.0)),
            (None, None) => Ok(None),
            (None, Some(path)) => Err(crate::audit::keys::KeyError::NotLoaded(path.clone())),
        }
    }
}

/// An audit signing key read from `[audit] signing_key_file`. `Debug` shows
/// its public key's fingerprint, never the private key.
#[derive(Clone, PartialEq, Eq)]
pub struct AuditSigningKey(ed25519_dalek::SigningKey);

impl AuditSigningKey {
    pub(crate) fn new(key: ed25519_dalek::SigningKey) -> AuditSigningKey {
        AuditSigningKey(key)
    }
}

impl fmt::Debug for AuditSigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditSigningKey")
            .field(
                "public",
                &crate::audit::keys::fingerprint(&self.0.verifying_key()),
            )
            .finish_non_exhaustive()
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
    /// A problem may quote a key or value as written (a file's key, an
    /// environment variable's value): each is escaped whole, so a newline in
    /// it cannot start a problem of its own.
    #[error("invalid configuration:\n{}", .0.iter().map(|p| format!("  - {}", crate::terminal::Escaped(p))).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<String>),
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

    /// A configuration is logged and shown in panics: the signing key it
    /// carries shows as its public fingerprint, never as its secret bytes.
    #[test]
    fn the_signing_key_is_redacted_in_debug() {
        let secret = [7u8; 32];
        let mut c = Config::default();
        c.audit.signing_key = Some(AuditSigningKey::new(ed25519_dalek::SigningKey::from_bytes(
            &secret,
        )));
        let shown = format!("{c:?}");
        let public = crate::audit::keys::fingerprint(
            &ed25519_dalek::SigningKey::from_bytes(&secret).verifying_key(),
        );
        assert!(
            shown.contains(&format!("AuditSigningKey {{ public: {public:?}, .. }}")),
            "{shown}"
        );
        assert!(!shown.contains("7, 7, 7"), "{shown}");
        assert!(!shown.contains("070707"), "{shown}");
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
    fn top_level_keys_are_set_from_the_environment_by_their_names() {
        let e = env(&[
            ("GROUNDGATE_MAX_RECORD_BYTES", "100000"),
            ("GROUNDGATE_MAX_OUTPUT_BYTES", "200000"),
            ("GROUNDGATE_INCLUDE_ANSWER", "true"),
            ("GROUNDGATE_NON_CITING_PROVIDERS", "acme, perplexity"),
        ]);
        let c = RawConfig::load(None, &e, RawConfig::default())
            .unwrap()
            .validate()
            .unwrap();
        assert_eq!(c.core.max_record_bytes, 100_000);
        assert_eq!(c.core.max_output_bytes, 200_000);
        assert!(c.core.include_answer);
        assert_eq!(
            c.core.non_citing_providers,
            vec!["acme".to_string(), "perplexity".to_string()]
        );
        let err = RawConfig::load(
            None,
            &env(&[("GROUNDGATE_MAX_RECORD_BYTES", "lots")]),
            RawConfig::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("GROUNDGATE_MAX_RECORD_BYTES"), "{err}");
    }

    /// Every list the shipped example file documents is set from one
    /// variable with commas, as the operations guide says of lists.
    #[test]
    fn every_documented_list_is_set_from_the_environment_with_commas() {
        use figment::providers::{Format, Toml};
        use figment::value::Value;
        fn arrays(v: &Value, path: &mut Vec<String>, out: &mut Vec<String>) {
            match v {
                Value::Dict(_, d) => {
                    for (k, v) in d {
                        path.push(k.clone());
                        arrays(v, path, out);
                        path.pop();
                    }
                }
                Value::Array(..) => out.push(path.join("__").to_ascii_uppercase()),
                _ => {}
            }
        }
        let example: Value =
            figment::Figment::from(Toml::string(include_str!("../../examples/groundgate.toml")))
                .extract()
                .unwrap();
        let mut lists = Vec::new();
        arrays(&example, &mut Vec::new(), &mut lists);
        for must in ["METRICS__PROVIDERS", "POLICY__FORBIDDEN_TERMS"] {
            assert!(lists.iter().any(|l| l == must), "{must} in {lists:?}");
        }
        for list in lists {
            let var = format!("GROUNDGATE_{list}");
            let raw = RawConfig::load(None, &env(&[(&var, "alpha, beta")]), RawConfig::default());
            let raw = match raw {
                Ok(r) => r,
                Err(e) => panic!("{var}: {e}"),
            };
            let set = serde_json::to_value(&raw).unwrap();
            let at = list
                .to_ascii_lowercase()
                .split("__")
                .fold(&set, |v, k| &v[k])
                .clone();
            assert_eq!(at, serde_json::json!(["alpha", "beta"]), "{var}");
        }
    }

    /// The variable `kafka.sasl_password_env` names holds the password: it
    /// may carry the GROUNDGATE_ prefix like the others the worker is given,
    /// and is then no unknown variable. Another one still is.
    #[test]
    fn the_password_variable_may_be_named_with_the_prefix() {
        let password = ("GROUNDGATE_SASL_PASSWORD", "hunter2");
        for layers in [
            (
                None,
                vec![
                    ("GROUNDGATE_KAFKA__SASL_PASSWORD_ENV", password.0),
                    password,
                ],
            ),
            (
                Some("[kafka]\nsasl_password_env = \"GROUNDGATE_SASL_PASSWORD\"\n"),
                vec![password],
            ),
        ] {
            let file = layers.0.map(write);
            let raw = RawConfig::load(
                file.as_ref().map(|f| f.path()),
                &env(&layers.1),
                RawConfig::default(),
            );
            let raw = match raw {
                Ok(r) => r,
                Err(e) => panic!("{layers:?}: {e}"),
            };
            assert_eq!(raw.kafka.sasl_password_env.as_deref(), Some(password.0));
        }
        let err = RawConfig::load(
            None,
            &env(&[
                ("GROUNDGATE_KAFKA__SASL_PASSWORD_ENV", password.0),
                password,
                ("GROUNDGATE_SASL_PASSWROD", "x"),
            ]),
            RawConfig::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("unknown environment variable(s) GROUNDGATE_SASL_PASSWROD;"),
            "{err}"
        );
    }

    #[test]
    fn two_variables_for_one_key_are_refused() {
        for order in [
            [
                ("GROUNDGATE_GROUP_ID", "a"),
                ("GROUNDGATE_KAFKA__GROUP_ID", "b"),
            ],
            [
                ("GROUNDGATE_KAFKA__GROUP_ID", "b"),
                ("GROUNDGATE_GROUP_ID", "a"),
            ],
        ] {
            let err = RawConfig::load(None, &env(&order), RawConfig::default())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(
                    "GROUNDGATE_GROUP_ID and GROUNDGATE_KAFKA__GROUP_ID both set kafka.group_id"
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn passthrough_numbers_and_booleans_are_their_text() {
        let f = write(
            "[kafka.properties]\n\"linger.ms\" = 5\n\"enable.ssl.certificate.verification\" = true\n\"client.rack\" = \"r1\"\n",
        );
        let c = RawConfig::load(Some(f.path()), &[], RawConfig::default())
            .unwrap()
            .validate()
            .unwrap();
        let p = &c.kafka.properties;
        assert_eq!(p["linger.ms"], "5");
        assert_eq!(p["enable.ssl.certificate.verification"], "true");
        assert_eq!(p["client.rack"], "r1");
        let f = write("[kafka.properties]\n\"linger.ms\" = [5]\n");
        let err = RawConfig::load(Some(f.path()), &[], RawConfig::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("a string, a number or a boolean"), "{err}");
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
            "[kafka]\nsasl_password_env = \"KAFKA_PASSWORD\"\n[kafka.properties]\n\"security.protocol\" = \"SASL_SSL\"\n\"sasl.mechanism\" = \"PLAIN\"\n\"sasl.username\" = \"u\"\n",
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
        assert_eq!(c.kafka.properties.len(), 3);
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

    /// The README sends readers to this file for every key: each key that a
    /// section accepts (as its unknown-key error lists them) is written
    /// there, set to its default or commented out with an example.
    #[test]
    fn shipped_reference_config_names_every_key() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/groundgate.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let written = |key: &str| {
            text.lines().any(|line| {
                let line = line.trim_start().trim_start_matches('#').trim_start();
                line.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            })
        };
        let sections = [
            "",
            "output_schema_ids",
            "policy",
            "policy.actions",
            "grounding",
            "kafka",
            "kafka.topics",
            "metrics",
            "log",
            "audit",
        ];
        let mut missing = Vec::new();
        for section in sections {
            let file = tempfile::NamedTempFile::new().unwrap();
            let probe = if section.is_empty() {
                "zz_probe = 1\n".to_string()
            } else {
                format!("[{section}]\nzz_probe = 1\n")
            };
            std::fs::write(file.path(), probe).unwrap();
            let err = RawConfig::load(Some(file.path()), &[], RawConfig::default())
                .unwrap_err()
                .to_string();
            let known = err
                .split("known keys here: ")
                .nth(1)
                .and_then(|rest| rest.split(')').next())
                .unwrap_or_else(|| panic!("no list of known keys in: {err}"));
            for key in known.split(", ") {
                let table = if section.is_empty() {
                    format!("[{key}]")
                } else {
                    format!("[{section}.{key}]")
                };
                if !written(key) && !text.contains(&table) {
                    missing.push(if section.is_empty() {
                        key.to_string()
                    } else {
                        format!("{section}.{key}")
                    });
                }
            }
        }
        assert!(
            missing.is_empty(),
            "keys not documented in examples/groundgate.toml: {missing:?}"
        );
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

    #[test]
    fn a_worker_may_not_name_its_seals_as_check_does() {
        let all = problems("[kafka]\nclient_id = \"check\"\n", RawConfig::default());
        assert!(all.contains("kafka.client_id = \"check\""), "{all}");
        let all = problems(
            "[kafka]\nclient_id = \"check\"\ngroup_instance_id = \"check\"\n",
            RawConfig::default(),
        );
        assert!(all.contains("kafka.group_instance_id = \"check\""), "{all}");
        // The seals are named by the instance id when there is one.
        RawConfig::load(
            Some(write("[kafka]\nclient_id = \"check\"\ngroup_instance_id = \"w-1\"\n").path()),
            &[],
            RawConfig::default(),
        )
        .and_then(RawConfig::validate)
        .unwrap();
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
    fn value_framing_problems_are_listed_with_the_others() {
        let lists = |file: &str, needles: &[&str]| {
            let all = problems(file, RawConfig::default());
            for needle in needles {
                assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
            }
        };
        lists(
            "value_framing = \"avro\"\nmax_record_bytes = 10\n[policy]\nmin_confidence = 2.0\n",
            &[
                "value_framing: unknown value \"avro\" (known values: none, schema-registry)",
                "max_record_bytes = 10",
                "policy.min_confidence = 2",
            ],
        );
        lists(
            "value_schema_ids = [42, -1, 4294967296]\nmax_record_bytes = 10\n",
            &[
                "value_schema_ids[1] = -1: a schema id is between 1 and 4294967295",
                "value_schema_ids[2] = 4294967296: a schema id is between 1 and 4294967295",
                "value_schema_ids is set but value_framing is \"none\"",
                "max_record_bytes = 10",
            ],
        );
        lists(
            "value_framing = \"schema-registry\"\nvalue_schema_ids = []\n",
            &["value_schema_ids = []: lists no id"],
        );
        lists(
            "value_framing = \"schema-registry\"\nvalue_schema_ids = [42, 0]\n",
            &["value_schema_ids[1] = 0: a Schema Registry numbers its schemas from 1"],
        );
    }

    #[test]
    fn value_framing_is_read_from_the_file_and_the_environment() {
        assert_eq!(Config::default().core.value_framing, ValueFraming::None);
        let f = write("value_framing = \"schema-registry\"\nvalue_schema_ids = [42, 43]\n");
        let c = RawConfig::load(Some(f.path()), &[], RawConfig::default())
            .and_then(RawConfig::validate)
            .unwrap();
        let want = ValueFraming::SchemaRegistry {
            schema_ids: Some(vec![42, 43]),
        };
        assert_eq!(c.core.value_framing, want);
        let env: Vec<(String, String)> = [
            ("GROUNDGATE_VALUE_FRAMING", "schema-registry"),
            ("GROUNDGATE_VALUE_SCHEMA_IDS", "42, 43"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = RawConfig::load(None, &env, RawConfig::default())
            .and_then(RawConfig::validate)
            .unwrap();
        assert_eq!(c.core.value_framing, want);
        let c = RawConfig::load(None, &env[..1], RawConfig::default())
            .and_then(RawConfig::validate)
            .unwrap();
        assert_eq!(
            c.core.value_framing,
            ValueFraming::SchemaRegistry { schema_ids: None }
        );
        let err = RawConfig::load(
            None,
            &[(
                "GROUNDGATE_VALUE_SCHEMA_IDS".to_string(),
                "42,x".to_string(),
            )],
            RawConfig::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("GROUNDGATE_VALUE_SCHEMA_IDS"), "{err}");
    }

    #[test]
    fn output_schema_id_problems_are_listed_with_the_others() {
        let cases: [(&str, &[&str]); 3] = [
            (
                "max_record_bytes = 10\n[output_schema_ids]\nfinal = -1\nretry = 4294967296\naudit = 7\n",
                &[
                    "output_schema_ids.final = -1: a schema id is between 1 and 4294967295",
                    "output_schema_ids.retry = 4294967296: a schema id is between 1 and 4294967295",
                    "max_record_bytes = 10",
                ],
            ),
            // 0 taken for "off": no registry gives it, and consumers would
            // fail to look it up.
            (
                "[output_schema_ids]\nfinal = 0\n",
                &["output_schema_ids.final = 0: a Schema Registry numbers its schemas from 1"],
            ),
            (
                "[output_schema_ids]\nfinal = \"x\"\ndead_letter = 5\n[policy]\nmin_confidence = 2.0\n",
                &[
                    "output_schema_ids.final",
                    "output_schema_ids.dead_letter: unknown key",
                    "policy.min_confidence = 2",
                ],
            ),
        ];
        for (file, needles) in cases {
            let all = problems(file, RawConfig::default());
            let missing: Vec<&&str> = needles.iter().filter(|n| !all.contains(**n)).collect();
            assert!(missing.is_empty(), "missing {missing:?} in:\n{all}");
            assert!(!all.contains("output_schema_ids.audit"), "{all}");
        }
    }

    #[test]
    fn output_schema_ids_are_read_from_the_file_and_the_environment() {
        assert_eq!(
            Config::default().kafka.output_schema_ids,
            OutputSchemaIds::default()
        );
        let f = write("[output_schema_ids]\nfinal = 101\naudit = 103\n");
        let env = vec![
            (
                "GROUNDGATE_OUTPUT_SCHEMA_IDS__AUDIT".to_string(),
                "203".into(),
            ),
            (
                "GROUNDGATE_OUTPUT_SCHEMA_IDS__RETRY".to_string(),
                "202".into(),
            ),
        ];
        let c = RawConfig::load(Some(f.path()), &env, RawConfig::default())
            .and_then(RawConfig::validate)
            .unwrap();
        assert_eq!(
            c.kafka.output_schema_ids,
            OutputSchemaIds {
                final_: Some(101),
                retry: Some(202),
                audit: Some(203),
            }
        );
        let err = RawConfig::load(
            None,
            &[(
                "GROUNDGATE_OUTPUT_SCHEMA_IDS__FINAL".to_string(),
                "-5".to_string(),
            )],
            RawConfig::default(),
        )
        .and_then(RawConfig::validate)
        .unwrap_err()
        .to_string();
        assert!(err.contains("output_schema_ids.final = -5"), "{err}");
    }

    #[test]
    fn propagated_headers_default_to_the_trace_context_and_are_checked() {
        assert_eq!(
            Config::default().kafka.propagate_headers,
            ["traceparent", "tracestate"]
        );
        let load = |file: &str, env: &[(&str, &str)]| {
            let f = write(file);
            let env: Vec<(String, String)> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            RawConfig::load(Some(f.path()), &env, RawConfig::default())
                .and_then(RawConfig::validate)
        };
        let c = load("[kafka]\npropagate_headers = []\n", &[]).unwrap();
        assert!(c.kafka.propagate_headers.is_empty());
        let c = load(
            "[kafka]\npropagate_headers = []\n",
            &[(
                "GROUNDGATE_KAFKA__PROPAGATE_HEADERS",
                "traceparent, baggage",
            )],
        )
        .unwrap();
        assert_eq!(c.kafka.propagate_headers, ["traceparent", "baggage"]);
        let all = problems(
            "[kafka]\npropagate_headers = [\"traceparent\", \"\", \"Groundgate.error.kind\", \"TraceParent\"]\n",
            RawConfig::default(),
        );
        for needle in [
            "kafka.propagate_headers[1] = \"\": a header name is 1-255 bytes",
            "kafka.propagate_headers[2] = \"Groundgate.error.kind\": groundgate writes the groundgate.* headers itself",
            "kafka.propagate_headers[3] = \"TraceParent\": listed twice",
        ] {
            assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
        }
        assert!(!all.contains("propagate_headers[0]"), "{all}");
        // A name whose first bytes end inside a character is compared by
        // its bytes, not cut there.
        let c = load("[kafka]\npropagate_headers = [\"groundgateé\"]\n", &[]).unwrap();
        assert_eq!(c.kafka.propagate_headers, ["groundgateé"]);
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
            "[grounding]\nmin_support = 1.5\npair_weight = -1\nmissing_penalty = 1000\nspread_penalty = 2\n",
        )
        .unwrap();
        let Err(ConfigError::Invalid(problems)) = bad.validate() else {
            panic!("invalid grounding values must fail")
        };
        for key in [
            "min_support",
            "pair_weight",
            "missing_penalty",
            "spread_penalty",
        ] {
            assert!(
                problems
                    .iter()
                    .any(|p| p.starts_with(&format!("grounding.{key} ="))
                        || p.starts_with(&format!("grounding.{key} was removed: "))
                            && p.contains("grounding.min_support")),
                "{key} not listed in {problems:?}"
            );
        }
        let unknown = RawConfig::from_toml_str("[grounding]\nmin_suport = 0.5\n");
        let unknown = unknown.map(|_| ()).unwrap_err().to_string();
        assert!(
            unknown.contains("min_suport"),
            "unknown keys are errors naming the key: {unknown}"
        );
        assert!(
            unknown.contains("min_support") && !unknown.contains("spread_penalty"),
            "the known keys listed are the live ones: {unknown}"
        );
    }

    #[test]
    fn a_fitted_model_replaces_the_shipped_one_whole() {
        use crate::core::grounding::model::COEFFICIENTS;
        let default = RawConfig::from_toml_str("").unwrap();
        assert_eq!(
            default.validate().unwrap().core.grounding.coefficients,
            COEFFICIENTS
        );
        // As `groundgate eval --fit` prints it.
        let own = RawConfig::from_toml_str(
            "[grounding]\ncoefficients = { intercept = -1.5, found = 2.25, entity_missing = -3, answer_words_found = 0.5 }\n",
        )
        .unwrap();
        assert_eq!(
            own.validate().unwrap().core.grounding.coefficients,
            [-1.5, 2.25, -3.0, 0.5]
        );
        // Part of a model, a name it does not have, or a value that is no
        // number: each listed, nothing filled in from the shipped model.
        let bad = RawConfig::from_toml_str(
            "[grounding]\ncoefficients = { intercept = 1, found = nan, pair_share = 2 }\n",
        )
        .unwrap();
        let Err(ConfigError::Invalid(problems)) = bad.validate() else {
            panic!("a partial model must fail")
        };
        let expected = [
            "grounding.coefficients.found = NaN: must be a finite number",
            "grounding.coefficients lacks entity_missing, answer_words_found: set all of intercept, found, entity_missing, answer_words_found, as `groundgate eval --fit` prints them",
            "grounding.coefficients.pair_share: the model has no such coefficient (it has intercept, found, entity_missing, answer_words_found)",
        ];
        for e in expected {
            assert!(problems.iter().any(|p| p == e), "{e:?} not in {problems:?}");
        }
    }
}
