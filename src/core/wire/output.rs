//! The canonical encodings of the outputs: the final envelope, the retry
//! request, the audit row and the bounded dead letter.
//!
//! Canonical means: keys in alphabetical order (struct fields are declared in
//! that order and serialized by position), compact encoding, and nothing
//! derived from the clock or randomness, so identical input gives identical
//! bytes. This module must not decide verdicts; it only shapes data.

use serde::Serialize;
use serde_json::value::RawValue;

use super::decode::{Payload, Usage};
use crate::core::types::{Finding, Mode};

#[derive(Debug, Serialize)]
pub struct CitationOut<'a> {
    pub marker: u32,
    pub urn: &'a str,
}

#[derive(Debug, Serialize)]
pub struct SourceFlat<'a> {
    pub payload: &'a str,
    pub urn: &'a str,
}

#[derive(Debug, Serialize)]
pub struct Validation<'a> {
    pub errors: &'a [Finding],
    pub ok: bool,
    pub warnings: &'a [Finding],
}

/// The final envelope.
#[derive(Debug, Serialize)]
pub struct Envelope<'a> {
    pub answer: &'a str,
    pub cache_hit: bool,
    pub citations: Vec<CitationOut<'a>>,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub grounding: GroundingOut<'a>,
    pub mode: Mode,
    pub model: &'a str,
    pub prompt_tokens: u64,
    pub provider: &'a str,
    pub request_id: &'a str,
    pub retry_count: u8,
    pub sources_flat: Vec<SourceFlat<'a>>,
    pub validation: Validation<'a>,
}

/// A source echoed in a retry request in its original shape.
#[derive(Debug)]
pub struct SourceEcho<'a> {
    pub payload: &'a Payload<'a>,
    pub urn: &'a str,
}

impl Serialize for SourceEcho<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Source", 2)?;
        if self.payload.is_string {
            st.serialize_field("payload", self.payload.text.as_ref())?;
        } else {
            // Compact JSON text produced by `compact_json` from a valid RawValue.
            let raw = RawValue::from_string(self.payload.text.to_string())
                .map_err(serde::ser::Error::custom)?;
            st.serialize_field("payload", &raw)?;
        }
        st.serialize_field("urn", self.urn)?;
        st.end()
    }
}

/// The retry request published to the retry topic.
#[derive(Debug, Serialize)]
pub struct RetryRequest<'a> {
    pub attempt: u8,
    pub mode: Mode,
    pub model: &'a str,
    pub prior: Usage,
    pub problems: &'a [Finding],
    pub prompt: &'a str,
    pub provider: &'a str,
    pub question: &'a str,
    pub request_id: &'a str,
    pub role: &'a str,
    pub sources: Vec<SourceEcho<'a>>,
    pub tenant: &'a str,
    pub user: &'a str,
    /// Non-blocking findings of this attempt, so none is lost on a retry.
    pub warnings: &'a [Finding],
}

/// `{detail, kind}` for audit errors, which may also carry a dead-letter kind.
#[derive(Debug, Serialize)]
pub struct KindDetail<'a> {
    pub detail: &'a str,
    pub kind: &'a str,
}

impl<'a> From<&'a Finding> for KindDetail<'a> {
    fn from(f: &'a Finding) -> Self {
        KindDetail {
            detail: &f.detail,
            kind: f.kind.as_str(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct InputCoordinates<'a> {
    pub offset: i64,
    pub partition: i32,
    pub topic: &'a str,
}

/// The audit row (the batch fields plus the stream additions).
#[derive(Debug, Serialize)]
pub struct AuditRow<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<&'a str>,
    pub answer_hash: &'a str,
    pub cache_hit: bool,
    pub citations: Vec<u32>,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub errors: Vec<KindDetail<'a>>,
    pub grounding: GroundingAudit,
    pub input: InputCoordinates<'a>,
    /// Effective mode; empty for a dead letter (never decoded).
    pub mode: &'a str,
    pub model: &'a str,
    pub outcome: &'a str,
    pub policy_version: &'a str,
    pub prompt_tokens: u64,
    pub provider: &'a str,
    pub question: &'a str,
    pub request_id: &'a str,
    /// The mode the record asked for, before the provider fallback; empty
    /// for a dead letter.
    pub requested_mode: &'a str,
    pub retry_count: u8,
    pub role: &'a str,
    pub seed: Option<u64>,
    pub sources_urns: Vec<&'a str>,
    pub temperature: Option<f64>,
    pub tenant: &'a str,
    pub ts: i64,
    pub user: &'a str,
    /// Whether the citation validator accepted the answer: no
    /// blocking `malformed`/`out_of_range` finding. A policy rejection does
    /// not make it false; `outcome` says what happened to the record.
    pub validation_ok: bool,
    /// Every non-blocking finding, beside the blocking `errors`.
    pub warnings: Vec<KindDetail<'a>>,
}

/// The bounded value of a dead letter too large to forward: enough
/// to recognise the record (a preview) and to prove which one it was
/// (length and SHA-256), never the whole value.
#[derive(Debug, Serialize)]
pub struct BoundedDeadLetter<'a> {
    pub detail: &'a str,
    pub kind: &'a str,
    /// Length of the original value in bytes.
    pub length: u64,
    /// The first bytes of the value, as UTF-8 (invalid bytes replaced).
    pub preview: &'a str,
    /// Lowercase hex SHA-256 of the whole original value.
    pub sha256: &'a str,
}

/// One claim in the envelope's `grounding` (byte span into `answer`).
#[derive(Debug, Serialize)]
pub struct ClaimOut<'a> {
    pub markers: &'a [u32],
    pub span: [usize; 2],
    pub support: Option<f64>,
    pub unsupported_terms: &'a [String],
}

/// The envelope's `grounding` key.
#[derive(Debug, Serialize)]
pub struct GroundingOut<'a> {
    pub claims: Vec<ClaimOut<'a>>,
    pub score: Option<f64>,
}

/// The audit row's `grounding` key.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct GroundingAudit {
    pub claims: u64,
    pub cited_claims: u64,
    pub score: Option<f64>,
    pub unsupported_claims: u64,
}

/// Serializes an output. Our output types hold only strings, integers,
/// finite floats and bools, for which serde_json cannot fail.
pub fn to_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}
