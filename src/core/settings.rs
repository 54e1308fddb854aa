//! The validated settings the pure core runs with.
//!
//! Built by `crate::config` from the file/env/flag layers; the core only ever
//! sees this already-validated form, so nothing here parses or defaults.

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
    /// Records larger than this are dead-lettered as `too_large` without decoding.
    pub max_record_bytes: usize,
    /// No output `process` builds (terminal record or audit row) is larger;
    /// a record whose outputs would be becomes a bounded `too_large` dead letter.
    pub max_output_bytes: usize,
    /// Grounding support check.
    pub grounding: GroundingSettings,
}

impl Default for CoreSettings {
    fn default() -> Self {
        CoreSettings {
            policy: PolicySettings::default(),
            non_citing_providers: Vec::new(),
            include_answer: false,
            policy_version: "default".to_string(),
            max_record_bytes: 1 << 20,
            max_output_bytes: 1 << 20,
            grounding: GroundingSettings::default(),
        }
    }
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
    /// Weight of a named entity relative to an ordinary word.
    pub entity_weight: f64,
    /// Weight of a number relative to an ordinary word.
    pub number_weight: f64,
    /// A number found in none of the cited sources makes the claim score 0.
    pub strict_numbers: bool,
    /// A claim naming an entity found in none of its sources scores at most this.
    pub missing_entity_cap: f64,
    /// How many times a missing term's weight counts against the found ones
    /// (1: the plain weighted share of terms found).
    pub missing_penalty: f64,
    /// Weight of a stop word ("the", "is", ...) relative to an ordinary word; 0 drops them.
    pub function_word_weight: f64,
    /// Strength (in units of term weight) of the pull of each claim's score
    /// toward the whole answer's support; 0 judges every claim alone.
    pub prior_weight: f64,
    /// Share of the score given to consecutive term pairs found side by side
    /// in a source (0: words only).
    pub pair_weight: f64,
    /// Score lost per unit of term weight that the cited sources hold only
    /// outside the claim's main sentences, one per cited source (0: no
    /// sentence check).
    pub spread_penalty: f64,
}

impl Default for GroundingSettings {
    fn default() -> Self {
        GroundingSettings {
            enabled: true,
            min_support: 0.6,
            unsupported_claim: Action::Warn,
            uncited_claim: None,
            entity_weight: 1.5,
            number_weight: 2.0,
            strict_numbers: true,
            missing_entity_cap: 0.5,
            missing_penalty: 2.0,
            function_word_weight: 0.6,
            prior_weight: 8.0,
            pair_weight: 0.25,
            spread_penalty: 0.25,
        }
    }
}
