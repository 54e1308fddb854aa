//! The raw configuration layers: the schema of the TOML file, the
//! environment and the flags, every key optional and unknown keys rejected.
//! Nothing is defaulted or checked here (that is `validate`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Framing, Guarantee, LogFormat, SaslMechanism, SecurityProtocol};
use crate::core::Action;

// ---------------------------------------------------------------------------
// Raw layer: every key optional, unknown keys rejected by name.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// What wraps the JSON text of an input record's value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_framing: Option<Framing>,
    /// The Schema Registry schema ids a framed value may carry (any when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_schema_ids: Option<Vec<i64>>,
    /// The Schema Registry schema id written in front of each output
    /// topic's values (a topic without one is written plain).
    #[serde(default, skip_serializing_if = "RawOutputSchemaIds::is_empty")]
    pub output_schema_ids: RawOutputSchemaIds,
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

/// `[output_schema_ids]`: by output topic (named as in `[kafka.topics]`),
/// the schema id of its values' Schema Registry header. The dead-letter
/// topic has no key: dead letters keep the record as received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOutputSchemaIds {
    #[serde(rename = "final", skip_serializing_if = "Option::is_none")]
    pub final_: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<i64>,
}

impl RawOutputSchemaIds {
    fn is_empty(&self) -> bool {
        *self == RawOutputSchemaIds::default()
    }
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
    /// Audit-row fields written as keyed pseudonyms: `user`, `tenant`,
    /// `question`, `sources_urns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pseudonymize: Option<Vec<String>>,
    /// The pseudonyms' secret key (at least 32 bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pseudonym_key_file: Option<PathBuf>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_missing: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_unexpected: Option<Action>,
}

impl RawActions {
    fn is_empty(&self) -> bool {
        *self == RawActions::default()
    }
}

/// `[grounding]`: the support check of cited claims.
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
    /// The model's coefficients by name (`intercept` and each feature), as
    /// `groundgate eval --fit` prints them; all or none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coefficients: Option<BTreeMap<String, f64>>,
    // Removed keys, read only to name their replacement (see validate).
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread_penalty: Option<f64>,
}

impl RawGrounding {
    /// The keys of this section that are read only to say what replaced
    /// them, each with whether it is set: a file that sets one fails with
    /// that message, and the list of known keys in an unknown-key error
    /// leaves them out.
    pub fn removed_keys(&self) -> [(&'static str, bool); 8] {
        [
            ("entity_weight", self.entity_weight.is_some()),
            ("number_weight", self.number_weight.is_some()),
            ("missing_entity_cap", self.missing_entity_cap.is_some()),
            ("missing_penalty", self.missing_penalty.is_some()),
            ("function_word_weight", self.function_word_weight.is_some()),
            ("prior_weight", self.prior_weight.is_some()),
            ("pair_weight", self.pair_weight.is_some()),
            ("spread_penalty", self.spread_penalty.is_some()),
        ]
    }

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
    pub(crate) fn action(self) -> Option<Action> {
        match self {
            OptionalAction::Off => None,
            OptionalAction::Reject => Some(Action::Reject),
            OptionalAction::Retry => Some(Action::Retry),
            OptionalAction::Warn => Some(Action::Warn),
        }
    }
}

/// Checks `[grounding]`, listing every problem.

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKafka {
    /// Comma-separated `host:port` list; `run` and `produce` need it.
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
    pub max_in_flight_bytes: Option<u64>,
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
    /// `security.protocol`: PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_protocol: Option<SecurityProtocol>,
    /// `sasl.mechanism`: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sasl_mechanism: Option<SaslMechanism>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sasl_username: Option<String>,
    /// The name of an environment variable holding the SASL password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sasl_password_env: Option<String>,
    /// A file holding the SASL password (e.g. a mounted secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sasl_password_file: Option<PathBuf>,
    /// CA certificate(s) (PEM) to verify the brokers with; default: the system's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_certificate_file: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_key_file: Option<PathBuf>,
    /// A file holding the private key's passphrase, if it is encrypted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssl_key_password_file: Option<PathBuf>,
    /// OAUTHBEARER: the OIDC token endpoint (client-credentials grant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc_token_endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc_client_id: Option<String>,
    /// A file holding the OIDC client secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc_client_secret_file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc_scope: Option<String>,
    #[serde(default, skip_serializing_if = "RawTopics::is_empty")]
    pub topics: RawTopics,
    /// Input headers copied onto the final, retry and audit records (the
    /// W3C trace context by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagate_headers: Option<Vec<String>>,
    /// librdkafka passthrough (`security.protocol`, `sasl.*`, `ssl.*`, ...).
    /// librdkafka takes every value as text; a number or a boolean written
    /// as one (`"linger.ms" = 5`) is that text.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "property_values"
    )]
    pub properties: BTreeMap<String, String>,
}

fn property_values<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged, expecting = "a string, a number or a boolean")]
    enum Scalar {
        Text(String),
        Integer(i64),
        Number(f64),
        Bool(bool),
    }
    let map = BTreeMap::<String, Scalar>::deserialize(d)?;
    Ok(map
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Scalar::Text(s) => s,
                Scalar::Integer(n) => n.to_string(),
                Scalar::Number(x) => x.to_string(),
                Scalar::Bool(b) => b.to_string(),
            };
            (k, v)
        })
        .collect())
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
