//! The validated settings the pure core runs with.
//!
//! Built by `crate::config` from the file/env/flag layers; the core only ever
//! sees this already-validated form, so nothing here parses or defaults.

use super::grounding::model::{COEFFICIENTS, FEATURES};
use super::pseudonym::Pseudonyms;
use super::types::Action;

/// Thresholds and actions of the policy checks.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySettings {
    pub min_confidence: f64,
    pub low_confidence: Action,
    pub max_answer_bytes: usize,
    pub too_long: Action,
    pub empty_answer: Action,
    pub require_provenance: bool,
    pub missing_provenance: Action,
    /// Terms as configured (reported verbatim in findings).
    pub forbidden_terms: Vec<String>,
    pub forbidden_term: Action,
    /// A retry (attempt 1) without the `prior` usage of its first attempt.
    pub prior_missing: Action,
    /// A first answer (attempt 0) carrying a `prior`.
    pub prior_unexpected: Action,
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings {
            min_confidence: 0.5,
            low_confidence: Action::Warn,
            max_answer_bytes: 10_000,
            too_long: Action::Retry,
            empty_answer: Action::Retry,
            require_provenance: true,
            missing_provenance: Action::Warn,
            forbidden_terms: Vec::new(),
            forbidden_term: Action::Reject,
            prior_missing: Action::Warn,
            prior_unexpected: Action::Warn,
        }
    }
}

/// Everything `process` needs besides the record itself.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreSettings {
    pub policy: PolicySettings,
    /// Providers that cannot cite: validated leniently even when strict is requested.
    pub non_citing_providers: Vec<String>,
    /// Copy the answer text into audit rows (off by default: audit keeps the hash).
    pub include_answer: bool,
    /// Stamped on every audit row so a verdict can be tied to the rules that made it.
    pub policy_version: String,
    /// Records larger than this are dead-lettered as `too_large` without
    /// decoding (the whole value, framing included).
    pub max_record_bytes: usize,
    /// What wraps a record value's JSON text.
    pub value_framing: ValueFraming,
    /// No output `process` builds (terminal record or audit row) is larger;
    /// a record whose outputs would be becomes a bounded `too_large` dead letter.
    pub max_output_bytes: usize,
    /// Grounding support check.
    pub grounding: GroundingSettings,
    /// Personal fields of the audit row written as keyed pseudonyms.
    pub pseudonyms: Option<Pseudonyms>,
}

impl Default for CoreSettings {
    fn default() -> Self {
        CoreSettings {
            policy: PolicySettings::default(),
            non_citing_providers: Vec::new(),
            include_answer: false,
            policy_version: "default".to_string(),
            max_record_bytes: 1 << 20,
            value_framing: ValueFraming::None,
            max_output_bytes: 1 << 20,
            grounding: GroundingSettings::default(),
            pseudonyms: None,
        }
    }
}

/// What wraps the JSON text of a record value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ValueFraming {
    /// The value is the JSON text itself.
    #[default]
    None,
    /// Confluent Schema Registry wire format: byte 0x00, a 4-byte
    /// big-endian schema id, then the JSON text. A value that does not start
    /// with 0x00 is read as plain JSON (no JSON text starts with that byte),
    /// so a topic carrying both is read whole.
    SchemaRegistry {
        /// The schema ids a framed value may carry; `None`: any.
        schema_ids: Option<Vec<u32>>,
    },
}

/// The grounding support check: thresholds, actions and the method's knobs
/// (see `core::grounding`).
#[derive(Debug, Clone, PartialEq)]
pub struct GroundingSettings {
    pub enabled: bool,
    /// A cited claim scoring below this is an `unsupported_claim`.
    pub min_support: f64,
    pub unsupported_claim: Action,
    /// `None`: uncited claims are not reported (opt-in).
    pub uncited_claim: Option<Action>,
    /// A number found in none of the cited sources makes the claim score 0.
    pub strict_numbers: bool,
    /// The model's intercept and one coefficient per evidence feature (see
    /// `grounding::model`): the shipped fit unless a deployment fitted its
    /// own on its labelled answers.
    pub coefficients: [f64; FEATURES + 1],
}

impl GroundingSettings {
    /// Which model gives the supports.
    pub fn model(&self) -> GroundingModel {
        if self.coefficients == COEFFICIENTS {
            GroundingModel::Shipped
        } else {
            GroundingModel::Configured
        }
    }
}

/// The model a grounding check judges with: the one shipped with
/// groundgate, or coefficients a deployment fitted on its own answers
/// (`grounding.coefficients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroundingModel {
    Shipped,
    Configured,
}

impl GroundingModel {
    pub const ALL: [GroundingModel; 2] = [GroundingModel::Shipped, GroundingModel::Configured];

    /// Its name in `summary.json`, logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            GroundingModel::Shipped => "shipped",
            GroundingModel::Configured => "configured",
        }
    }
}

impl Default for GroundingSettings {
    fn default() -> Self {
        GroundingSettings {
            enabled: true,
            min_support: 0.5,
            unsupported_claim: Action::Warn,
            uncited_claim: None,
            strict_numbers: true,
            coefficients: COEFFICIENTS,
        }
    }
}
