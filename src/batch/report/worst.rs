//! The worst-grounded answers of a run, as the report shows them: which
//! are kept (lowest score first, more unsupported claims first on a tie,
//! one per near-duplicate), and each cut into plain and flagged segments
//! with its cited sources. Pure and bounded: only the kept answers' bytes
//! are held.

use std::cmp::Ordering;

use serde::Serialize;
use serde_json::Value;

use crate::core::OutcomeKind;
use crate::core::terms::{bytes_hash, leading_alnum_lowered, mix};

/// Longest source or answer text shown for one worst answer.
const MAX_SHOWN_BYTES: usize = 4000;

/// Part of an answer, flagged when it is a claim the sources do not support.
#[derive(Debug, Clone, Serialize)]
pub struct Segment {
    pub text: String,
    pub flagged: bool,
    pub support: Option<f64>,
    /// For a flagged claim: the terms its cited sources do not hold (the
    /// envelope's `unsupported_terms`, at most five).
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ShownSource {
    pub n: usize,
    pub urn: String,
    pub payload: String,
}

/// One of the worst-grounded answers, ready to show.
#[derive(Debug, Clone, Serialize)]
pub struct WorstAnswer {
    pub request_id: String,
    pub provider: String,
    pub model: String,
    pub outcome: String,
    pub score: f64,
    /// Claims below `min_support` in the whole answer.
    pub unsupported_claims: u64,
    pub segments: Vec<Segment>,
    pub sources: Vec<ShownSource>,
}

/// A kept candidate for the worst answers: lowest score first, then more
/// unsupported claims, then input order, so the list is deterministic.
pub(super) struct Candidate {
    pub(super) score: f64,
    pub(super) unsupported_claims: u64,
    pub(super) seq: u64,
    /// Answers with the same words (case, punctuation and citation markers
    /// aside) share a key; one per key is shown.
    pub(super) key: u64,
    pub(super) outcome: OutcomeKind,
    pub(super) provider: String,
    pub(super) model: String,
    pub(super) envelope: Vec<u8>,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    // Max-heap on "worse is smaller": the heap's top is the best kept
    // candidate, the one to evict.
    fn cmp(&self, other: &Self) -> Ordering {
        by_rank(self.rank(), other.rank())
    }
}

impl Candidate {
    fn rank(&self) -> (f64, u64, u64) {
        (self.score, self.unsupported_claims, self.seq)
    }

    /// Whether this candidate ranks before (is worse than) `bound`.
    pub(super) fn worse_than(&self, bound: &WorstBound) -> bool {
        by_rank(self.rank(), bound.0) == Ordering::Less
    }

    pub(super) fn bound(&self) -> WorstBound {
        WorstBound(self.rank())
    }
}

/// Lowest score first, then more unsupported claims, then input order.
fn by_rank(a: (f64, u64, u64), b: (f64, u64, u64)) -> Ordering {
    a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2))
}

/// The least bad of a full list of worst answers (distinct keys) kept so
/// far: an answer not worse than it can never be among the worst, wherever
/// it is read, so a part of the input folded separately may skip it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorstBound((f64, u64, u64));

pub(super) fn clip(s: &str) -> String {
    if s.len() <= MAX_SHOWN_BYTES {
        return s.to_string();
    }
    format!("{}…", &s[..s.floor_char_boundary(MAX_SHOWN_BYTES)])
}

/// A hash of the set of the answer's sentences, each taken as its words
/// lower-cased, without citation markers or punctuation: answers that
/// differ only in those, or in the order or repetition of the same
/// sentences, are near-duplicates. (Set equality, not a similarity
/// threshold, so the worst answers do not depend on how `check` splits the
/// input between threads.)
pub(super) fn near_duplicate_key(envelope: &[u8]) -> u64 {
    let answer = answer_of(envelope);
    let mut sentences: Vec<u64> = Vec::new();
    // The sentence's words, lower-cased, each after a space; hashed whole
    // at the sentence's end (one hash per sentence, not per character).
    let mut words: Vec<u8> = Vec::new();
    let mut in_word = false;
    let text = answer.as_ref();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // A run of ASCII letters and digits, the most of any answer: copied
        // lower-cased in one go.
        if c.is_ascii_alphanumeric() {
            if !in_word {
                words.push(b' ');
            }
            // Eight bytes at a time: all eight appended, the ones past the
            // run dropped again.
            while let Some(chunk) = b.get(i..i + 8) {
                let mut x = [0; 8];
                x.copy_from_slice(chunk);
                let (n, lowered) = leading_alnum_lowered(u64::from_le_bytes(x));
                let kept = words.len() + n;
                words.extend_from_slice(&lowered.to_le_bytes());
                words.truncate(kept);
                i += n;
                if n < 8 {
                    break;
                }
            }
            while b.get(i).is_some_and(u8::is_ascii_alphanumeric) {
                words.push(b[i].to_ascii_lowercase());
                i += 1;
            }
            in_word = true;
            continue;
        }
        // A marker `[^…]` is skipped whole.
        if c == b'['
            && b.get(i + 1) == Some(&b'^')
            && let Some(close) = memchr::memchr(b']', &b[i + 2..])
        {
            i += close + 3;
            continue;
        }
        // Any other ASCII byte is a character; anything else is decoded.
        let c = if c.is_ascii() {
            char::from(c)
        } else {
            text[i..]
                .chars()
                .next()
                .unwrap_or(char::REPLACEMENT_CHARACTER)
        };
        i += c.len_utf8();
        if c.is_alphanumeric() {
            if !in_word {
                words.push(b' ');
            }
            for l in c.to_lowercase() {
                words.extend_from_slice(l.encode_utf8(&mut [0; 4]).as_bytes());
            }
            in_word = true;
            continue;
        }
        in_word = false;
        let ends = c == '\n'
            || (matches!(c, '.' | '!' | '?')
                && text[i..]
                    .chars()
                    .next()
                    .is_none_or(|n| n.is_whitespace() || n == '['));
        if ends && !words.is_empty() {
            sentences.push(bytes_hash(&words));
            words.clear();
        }
    }
    if !words.is_empty() {
        sentences.push(bytes_hash(&words));
    }
    sentences.sort_unstable();
    sentences.dedup();
    sentences
        .iter()
        .fold(sentences.len() as u64, |h, &s| mix(h, s))
}

/// The envelope's answer. groundgate writes `answer` as the envelope's
/// first key, so its string is read alone, without parsing the rest (the
/// sources make most of an envelope); anything else is parsed whole.
fn answer_of(envelope: &[u8]) -> std::borrow::Cow<'_, str> {
    #[derive(serde::Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        answer: std::borrow::Cow<'a, str>,
    }
    const LEAD: &[u8] = br#"{"answer":"#;
    if let Some(rest) = envelope.strip_prefix(LEAD) {
        // `rest` starts at the string's opening quote: its closing one is
        // the first quote not escaped.
        let mut i = 1;
        while let Some(at) = memchr::memchr2(b'\\', b'"', rest.get(i..).unwrap_or_default()) {
            i += at;
            if rest[i] == b'"' {
                break;
            }
            i += 2;
        }
        // The string token, quotes included.
        let token = rest.get(..i + 1);
        if let Some(Ok(answer)) = token.map(serde_json::from_slice::<String>) {
            return answer.into();
        }
    }
    serde_json::from_slice::<Answer<'_>>(envelope)
        .map(|a| a.answer)
        .unwrap_or_default()
}

/// Splits the answer into plain and claim segments using the envelope's
/// `grounding.claims` spans; a claim is flagged when its support is below
/// `min_support`.
pub(super) fn worst_answer(c: Candidate, min_support: f64) -> WorstAnswer {
    let env: Value = serde_json::from_slice(&c.envelope).unwrap_or(Value::Null);
    let answer = env["answer"].as_str().unwrap_or_default();
    let mut segments = Vec::new();
    let mut at = 0usize;
    if let Some(claims) = env["grounding"]["claims"].as_array() {
        for claim in claims {
            let span = (
                claim["span"][0].as_u64().map(|v| v as usize),
                claim["span"][1].as_u64().map(|v| v as usize),
            );
            let (Some(a), Some(b)) = span else { continue };
            if a < at || b < a || answer.get(a..b).is_none() || answer.get(at..a).is_none() {
                continue;
            }
            if a > at {
                segments.push(Segment {
                    text: answer[at..a].to_string(),
                    flagged: false,
                    support: None,
                    missing: Vec::new(),
                });
            }
            let support = claim["support"].as_f64();
            let flagged =
                support.is_some_and(|s| crate::core::grounding::is_unsupported(s, min_support));
            let missing = if flagged {
                claim["unsupported_terms"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .collect()
            } else {
                Vec::new()
            };
            segments.push(Segment {
                text: answer[a..b].to_string(),
                flagged,
                support,
                missing,
            });
            at = b;
        }
    }
    if at < answer.len() {
        segments.push(Segment {
            text: clip(&answer[at..]),
            flagged: false,
            support: None,
            missing: Vec::new(),
        });
    }
    let sources = env["sources_flat"]
        .as_array()
        .map(|v| {
            v.iter()
                .enumerate()
                .map(|(i, s)| ShownSource {
                    n: i + 1,
                    urn: s["urn"].as_str().unwrap_or_default().to_string(),
                    payload: clip(s["payload"].as_str().unwrap_or_default()),
                })
                .collect()
        })
        .unwrap_or_default();
    WorstAnswer {
        request_id: env["request_id"].as_str().unwrap_or_default().to_string(),
        provider: c.provider,
        model: c.model,
        outcome: c.outcome.as_str().to_string(),
        score: c.score,
        unsupported_claims: c.unsupported_claims,
        segments,
        sources,
    }
}
