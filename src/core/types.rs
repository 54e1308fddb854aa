//! Vocabulary shared by every part of the pure core: modes, policy actions,
//! finding kinds, dead-letter kinds and the [`Outcome`] of one record.
//!
//! Everything here is plain data. Nothing in this module may perform I/O,
//! read the clock or the environment.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Validation mode. `Strict` retries once and then gives up on citation
/// problems; `Lenient` always accepts and only surfaces warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Strict,
    Lenient,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Strict => "strict",
            Mode::Lenient => "lenient",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a policy rule does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Give up now: the answer is finalized as rejected.
    Reject,
    /// Counts like a citation failure: retried once in strict mode,
    /// a warning in lenient mode.
    Retry,
    /// Surfaced as a warning, never blocks.
    Warn,
}

/// Every kind of validation finding. This is a closed vocabulary: it is used
/// verbatim on the wire and as a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingKind {
    Malformed,
    OutOfRange,
    ModeFallback,
    LowConfidence,
    TooLong,
    EmptyAnswer,
    MissingProvenance,
    ForbiddenTerm,
    UnsupportedClaim,
    UncitedClaim,
    PriorMissing,
    PriorUnexpected,
}

impl FindingKind {
    pub const ALL: [FindingKind; 12] = [
        FindingKind::Malformed,
        FindingKind::OutOfRange,
        FindingKind::ModeFallback,
        FindingKind::LowConfidence,
        FindingKind::TooLong,
        FindingKind::EmptyAnswer,
        FindingKind::MissingProvenance,
        FindingKind::ForbiddenTerm,
        FindingKind::UnsupportedClaim,
        FindingKind::UncitedClaim,
        FindingKind::PriorMissing,
        FindingKind::PriorUnexpected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Malformed => "malformed",
            FindingKind::OutOfRange => "out_of_range",
            FindingKind::ModeFallback => "mode_fallback",
            FindingKind::LowConfidence => "low_confidence",
            FindingKind::TooLong => "too_long",
            FindingKind::EmptyAnswer => "empty_answer",
            FindingKind::MissingProvenance => "missing_provenance",
            FindingKind::ForbiddenTerm => "forbidden_term",
            FindingKind::UnsupportedClaim => "unsupported_claim",
            FindingKind::UncitedClaim => "uncited_claim",
            FindingKind::PriorMissing => "prior_missing",
            FindingKind::PriorUnexpected => "prior_unexpected",
        }
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FindingKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One validation finding: a warning or an error, depending on where it is listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    // Field order is the wire order: alphabetical.
    pub detail: String,
    pub kind: FindingKind,
}

impl Finding {
    pub fn new(kind: FindingKind, detail: impl Into<String>) -> Self {
        Finding {
            detail: detail.into(),
            kind,
        }
    }
}

/// Why a record could not be decoded into an answer at all, or, for
/// `Internal`, could not be judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeadLetterKind {
    InvalidUtf8,
    InvalidJson,
    Schema,
    TooLarge,
    /// Judging the record failed inside groundgate (a defect, not the
    /// record's fault): the record is kept whole to be replayed once fixed.
    Internal,
}

impl DeadLetterKind {
    pub const ALL: [DeadLetterKind; 5] = [
        DeadLetterKind::InvalidUtf8,
        DeadLetterKind::InvalidJson,
        DeadLetterKind::Schema,
        DeadLetterKind::TooLarge,
        DeadLetterKind::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeadLetterKind::InvalidUtf8 => "invalid_utf8",
            DeadLetterKind::InvalidJson => "invalid_json",
            DeadLetterKind::Schema => "schema",
            DeadLetterKind::TooLarge => "too_large",
            DeadLetterKind::Internal => "internal",
        }
    }
}

impl fmt::Display for DeadLetterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A record that could not be processed: the dead-letter output.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    pub kind: DeadLetterKind,
    /// Human-readable; names the offending field or byte position. Bounded
    /// in length (it also travels as a header).
    pub detail: String,
    /// What the dead-letter record's value is: the shell publishes exactly this.
    pub value: DeadLetterValue,
}

/// The value of a dead-letter record, as decided by the core.
#[derive(Debug, Clone, PartialEq)]
pub enum DeadLetterValue {
    /// The input value, byte for byte (absent for a tombstone). Chosen only
    /// when it fits the output limit, so the shell need not copy it here.
    Original,
    /// A bounded canonical JSON summary of a value too large to forward:
    /// `{"detail","kind","length","preview","sha256"}`.
    Bounded(Vec<u8>),
}

/// The four terminal outcomes of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutcomeKind {
    Accepted,
    Rejected,
    Retry,
    DeadLetter,
}

impl OutcomeKind {
    pub const ALL: [OutcomeKind; 4] = [
        OutcomeKind::Accepted,
        OutcomeKind::Rejected,
        OutcomeKind::Retry,
        OutcomeKind::DeadLetter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Accepted => "accepted",
            OutcomeKind::Rejected => "rejected",
            OutcomeKind::Retry => "retry",
            OutcomeKind::DeadLetter => "dead_letter",
        }
    }
}

impl fmt::Display for OutcomeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an input record came from. Pure data supplied by the shell (Kafka
/// worker or `check`), copied into the audit row and used for tracing.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordMeta<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
}

/// The one terminal record a processed input yields.
#[derive(Debug, Clone, PartialEq)]
pub enum Terminal {
    /// Canonical envelope for `answers.final` (accepted or rejected).
    Final(Vec<u8>),
    /// Retry request for `answers.retry`.
    Retry(Vec<u8>),
    /// The record could not be decoded; the shell forwards the original bytes.
    DeadLetter(DeadLetter),
}

/// Facts about one processed record that the shell needs for metrics and
/// logs. Deliberately small and free of encoded payloads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Effective mode; `None` for a dead letter.
    pub mode: Option<Mode>,
    /// Attempt number of the input (0 or 1); 0 for a dead letter.
    pub attempt: u8,
    /// Kind of every finding reported (warnings and errors), in report order.
    pub findings: Vec<FindingKind>,
    /// Why the record was dead-lettered, for a dead letter.
    pub dead_letter: Option<DeadLetterKind>,
    /// Number of citation markers parsed (valid or out of range).
    pub citations: usize,
    pub provider: String,
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    /// Grounding score (minimum support over cited claims), when any claim
    /// cites a resolvable source and grounding is enabled.
    pub grounding_score: Option<f64>,
}

/// Everything `process` produces for one input record: exactly one terminal
/// record and exactly one audit row.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub kind: OutcomeKind,
    /// The `request_id`, when it could be read. Outputs are keyed by it.
    pub request_id: Option<String>,
    pub terminal: Terminal,
    /// Encoded audit row (canonical JSON).
    pub audit: Vec<u8>,
    pub summary: Summary,
}

/// What an output is for: each input yields one terminal output (final,
/// retry or dead letter) and one audit row. Kafka publishes each role to its
/// own topic, `check` to its own file; metrics use it as the `role` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputRole {
    Final,
    Retry,
    Audit,
    DeadLetter,
}

impl OutputRole {
    pub const ALL: [OutputRole; 4] = [
        OutputRole::Final,
        OutputRole::Retry,
        OutputRole::Audit,
        OutputRole::DeadLetter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OutputRole::Final => "final",
            OutputRole::Retry => "retry",
            OutputRole::Audit => "audit",
            OutputRole::DeadLetter => "dead_letter",
        }
    }
}
