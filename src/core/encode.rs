//! Hand-written canonical JSON encoders for the three outputs (final
//! envelope, retry request, audit row).
//!
//! Why not `serde_json::to_vec`: it escapes strings one byte at a time, which
//! profiling showed to be a third of `process` on 4 KB answers. Here clean
//! runs of a string (the common case: answers are prose) are copied 32 bytes
//! at a time. The serde derives on the output types stay as the reference:
//! property tests assert these encoders produce exactly serde_json's bytes.
//!
//! Pure: writes into a `Vec<u8>`, nothing else.

use super::types::Finding;
use super::wire::{
    AuditRow, Envelope, GroundingAudit, GroundingOut, KindDetail, RetryRequest, SourceEcho, Usage,
};

/// Appends `s` as a JSON string literal, escaped as serde_json does
/// (`\"`, `\\`, `\b \f \n \r \t`, other control bytes as `\u00xx`).
pub fn string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // `clean` is where the pending run of bytes needing no escape starts; a
    // run is copied in one go when a dirty chunk (or the end) is reached.
    let (chunks, rest) = bytes.as_chunks::<CHUNK>();
    let mut clean = 0;
    for (k, chunk) in chunks.iter().enumerate() {
        if needs_escape(chunk) {
            let at = k * CHUNK;
            out.extend_from_slice(&bytes[clean..at]);
            escape_chunk(out, chunk);
            clean = at + CHUNK;
        }
    }
    out.extend_from_slice(&bytes[clean..chunks.len() * CHUNK]);
    if needs_escape(rest) {
        escape_slow(out, rest);
    } else {
        out.extend_from_slice(rest);
    }
    out.push(b'"');
}

/// Bytes a string is scanned by: clean chunks are copied whole.
const CHUNK: usize = 32;

/// Whether JSON escapes byte `b`: a control byte, a quote, a backslash.
/// Without branches, so that [`needs_escape`] vectorizes.
#[inline(always)]
fn escaped(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

/// Branch-free over the slice, so the compiler vectorizes it.
#[inline(always)]
fn needs_escape(chunk: &[u8]) -> bool {
    chunk.iter().fold(0u8, |acc, &b| acc | u8::from(escaped(b))) != 0
}

/// Escapes a chunk that holds bytes to escape. The findings' term lists
/// quote every term, so such chunks are common: the bytes to escape are
/// found eight at a time (the high bit of each such byte set, exactly), and
/// the clean bytes between them are copied in runs.
fn escape_chunk(out: &mut Vec<u8>, chunk: &[u8; CHUNK]) {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    // The high bit of each zero byte of `y`, and of no other: the low
    // seven bits cannot carry into the next byte.
    let zero = |y: u64| !(((y & LOW7) + LOW7) | y) & HIGH;
    let mut run = 0;
    for (k, word) in chunk.as_chunks::<8>().0.iter().enumerate() {
        let x = u64::from_le_bytes(*word);
        // Below 0x20: the low seven bits plus 0x60 stay under 0x80, and
        // the byte's own high bit is clear.
        let control = !(((x & LOW7) + 0x60 * ONES) | x) & HIGH;
        let mut hits =
            control | zero(x ^ (u64::from(b'"') * ONES)) | zero(x ^ (u64::from(b'\\') * ONES));
        while hits != 0 {
            let at = k * 8 + (hits.trailing_zeros() / 8) as usize;
            out.extend_from_slice(&chunk[run..at]);
            push_escape(out, chunk[at]);
            run = at + 1;
            hits &= hits - 1;
        }
    }
    out.extend_from_slice(&chunk[run..]);
}

/// Escapes a string's last, short piece byte by byte.
fn escape_slow(out: &mut Vec<u8>, piece: &[u8]) {
    let mut run = 0;
    for (i, &b) in piece.iter().enumerate() {
        if escaped(b) {
            out.extend_from_slice(&piece[run..i]);
            push_escape(out, b);
            run = i + 1;
        }
    }
    out.extend_from_slice(&piece[run..]);
}

/// The escape of a byte JSON [`escaped`].
fn push_escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[(b >> 4) as usize],
            HEX[(b & 0xf) as usize],
        ]),
    }
}

fn uint(out: &mut Vec<u8>, v: u64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(v).as_bytes());
}

fn int(out: &mut Vec<u8>, v: i64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(v).as_bytes());
}

/// Floats go through serde_json itself, so their text is exactly its text
/// (shortest round-trip; non-finite values become `null`).
fn float(out: &mut Vec<u8>, v: f64) {
    if serde_json::to_writer(&mut *out, &v).is_err() {
        out.extend_from_slice(b"null");
    }
}

fn boolean(out: &mut Vec<u8>, v: bool) {
    out.extend_from_slice(if v { b"true" } else { b"false" });
}

/// An object under construction; `key` writes the separator and the key.
struct Obj<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Obj<'o> {
    fn new(out: &'o mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// `name` is a plain ASCII identifier (our own field names): no escaping.
    fn key(&mut self, name: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    fn str(&mut self, name: &str, v: &str) {
        string(self.key(name), v);
    }

    fn uint(&mut self, name: &str, v: u64) {
        uint(self.key(name), v);
    }

    fn float(&mut self, name: &str, v: f64) {
        float(self.key(name), v);
    }

    fn bool(&mut self, name: &str, v: bool) {
        boolean(self.key(name), v);
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

fn array<T>(out: &mut Vec<u8>, items: &[T], mut each: impl FnMut(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        each(out, item);
    }
    out.push(b']');
}

fn finding(out: &mut Vec<u8>, f: &Finding) {
    let mut o = Obj::new(out);
    o.str("detail", &f.detail);
    o.str("kind", f.kind.as_str());
    o.end();
}

fn usage(out: &mut Vec<u8>, u: &Usage) {
    let mut o = Obj::new(out);
    o.uint("completion_tokens", u.completion_tokens);
    o.float("cost_usd", u.cost_usd);
    o.uint("prompt_tokens", u.prompt_tokens);
    o.end();
}

/// Rough output size, so the buffer is allocated once.
fn capacity(strings: usize) -> usize {
    strings + strings / 16 + 512
}

pub fn envelope(e: &Envelope<'_>) -> Vec<u8> {
    let text: usize = e.answer.len()
        + e.sources_flat
            .iter()
            .map(|s| s.payload.len() + s.urn.len() + 32)
            .sum::<usize>()
        + e.citations.iter().map(|c| c.urn.len() + 24).sum::<usize>()
        + e.grounding
            .claims
            .iter()
            .map(|c| {
                // Keys, span and support; each marker and term with its
                // separators.
                96 + 8 * c.markers.len()
                    + c.unsupported_terms
                        .iter()
                        .map(|t| t.len() + 3)
                        .sum::<usize>()
            })
            .sum::<usize>()
        + [e.validation.errors, e.validation.warnings]
            .iter()
            .flat_map(|f| f.iter())
            .map(|f| f.detail.len() + 48)
            .sum::<usize>();
    let mut out = Vec::with_capacity(capacity(text));
    let mut o = Obj::new(&mut out);
    o.str("answer", e.answer);
    o.bool("cache_hit", e.cache_hit);
    array(o.key("citations"), &e.citations, |out, c| {
        let mut o = Obj::new(out);
        o.uint("marker", u64::from(c.marker));
        o.str("urn", c.urn);
        o.end();
    });
    o.uint("completion_tokens", e.completion_tokens);
    o.float("cost_usd", e.cost_usd);
    grounding_out(o.key("grounding"), &e.grounding);
    o.str("mode", e.mode.as_str());
    o.str("model", e.model);
    o.uint("prompt_tokens", e.prompt_tokens);
    o.str("provider", e.provider);
    o.str("request_id", e.request_id);
    o.uint("retry_count", u64::from(e.retry_count));
    array(o.key("sources_flat"), &e.sources_flat, |out, s| {
        let mut o = Obj::new(out);
        o.str("payload", s.payload);
        o.str("urn", s.urn);
        o.end();
    });
    {
        let mut v = Obj::new(o.key("validation"));
        array(v.key("errors"), e.validation.errors, finding);
        v.bool("ok", e.validation.ok);
        array(v.key("warnings"), e.validation.warnings, finding);
        v.end();
    }
    o.end();
    out
}

fn opt_float(out: &mut Vec<u8>, v: Option<f64>) {
    match v {
        Some(v) => float(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

fn grounding_out(out: &mut Vec<u8>, g: &GroundingOut<'_>) {
    let mut o = Obj::new(out);
    array(o.key("claims"), &g.claims, |out, c| {
        let mut o = Obj::new(out);
        array(o.key("markers"), c.markers, |out, m| {
            uint(out, u64::from(*m))
        });
        array(o.key("span"), &c.span, |out, v| uint(out, *v as u64));
        opt_float(o.key("support"), c.support);
        array(o.key("unsupported_terms"), c.unsupported_terms, |out, t| {
            string(out, t)
        });
        o.end();
    });
    opt_float(o.key("score"), g.score);
    o.end();
}

fn grounding_audit(out: &mut Vec<u8>, g: &GroundingAudit) {
    let mut o = Obj::new(out);
    o.uint("claims", g.claims);
    o.uint("cited_claims", g.cited_claims);
    opt_float(o.key("score"), g.score);
    o.uint("unsupported_claims", g.unsupported_claims);
    o.end();
}

fn source_echo(out: &mut Vec<u8>, s: &SourceEcho<'_>) {
    let mut o = Obj::new(out);
    if s.payload.is_string {
        o.str("payload", &s.payload.text);
    } else {
        // Compact JSON text of a structured payload, copied as JSON.
        o.key("payload")
            .extend_from_slice(s.payload.text.as_bytes());
    }
    o.str("urn", s.urn);
    o.end();
}

pub fn retry_request(r: &RetryRequest<'_>) -> Vec<u8> {
    let text: usize = r.prompt.len()
        + r.question.len()
        + r.problems
            .iter()
            .map(|e| e.detail.len() + 32)
            .sum::<usize>()
        + r.warnings
            .iter()
            .map(|e| e.detail.len() + 32)
            .sum::<usize>()
        + r.sources
            .iter()
            .map(|s| s.payload.text.len() + s.urn.len() + 32)
            .sum::<usize>();
    let mut out = Vec::with_capacity(capacity(text));
    let mut o = Obj::new(&mut out);
    o.uint("attempt", u64::from(r.attempt));
    o.str("mode", r.mode.as_str());
    o.str("model", r.model);
    usage(o.key("prior"), &r.prior);
    array(o.key("problems"), r.problems, finding);
    o.str("prompt", r.prompt);
    o.str("provider", r.provider);
    o.str("question", r.question);
    o.str("request_id", r.request_id);
    o.str("role", r.role);
    array(o.key("sources"), &r.sources, source_echo);
    o.str("tenant", r.tenant);
    o.str("user", r.user);
    array(o.key("warnings"), r.warnings, finding);
    o.end();
    out
}

pub fn audit_row(a: &AuditRow<'_>) -> Vec<u8> {
    let text: usize = a.answer.map_or(0, str::len)
        + a.question.len()
        + a.sources_urns.iter().map(|u| u.len() + 3).sum::<usize>()
        + a.errors.iter().map(|e| e.detail.len() + 32).sum::<usize>()
        + a.warnings
            .iter()
            .map(|e| e.detail.len() + 32)
            .sum::<usize>();
    let mut out = Vec::with_capacity(capacity(text));
    let mut o = Obj::new(&mut out);
    if let Some(answer) = a.answer {
        o.str("answer", answer);
    }
    o.str("answer_hash", a.answer_hash);
    o.bool("cache_hit", a.cache_hit);
    array(o.key("citations"), &a.citations, |out, m| {
        uint(out, u64::from(*m))
    });
    o.uint("completion_tokens", a.completion_tokens);
    o.float("cost_usd", a.cost_usd);
    array(o.key("errors"), &a.errors, kind_detail);
    grounding_audit(o.key("grounding"), &a.grounding);
    {
        let mut i = Obj::new(o.key("input"));
        int(i.key("offset"), a.input.offset);
        int(i.key("partition"), i64::from(a.input.partition));
        i.str("topic", a.input.topic);
        i.end();
    }
    o.str("mode", a.mode);
    o.str("model", a.model);
    o.str("outcome", a.outcome);
    o.str("policy_version", a.policy_version);
    o.uint("prompt_tokens", a.prompt_tokens);
    o.str("provider", a.provider);
    o.str("question", a.question);
    o.str("request_id", a.request_id);
    o.str("requested_mode", a.requested_mode);
    o.uint("retry_count", u64::from(a.retry_count));
    o.str("role", a.role);
    match a.seed {
        Some(s) => o.uint("seed", s),
        None => o.key("seed").extend_from_slice(b"null"),
    }
    array(o.key("sources_urns"), &a.sources_urns, |out, u| {
        string(out, u)
    });
    match a.temperature {
        Some(t) => o.float("temperature", t),
        None => o.key("temperature").extend_from_slice(b"null"),
    }
    o.str("tenant", a.tenant);
    int(o.key("ts"), a.ts);
    o.str("user", a.user);
    o.bool("validation_ok", a.validation_ok);
    array(o.key("warnings"), &a.warnings, kind_detail);
    o.end();
    out
}

fn kind_detail(out: &mut Vec<u8>, e: &KindDetail<'_>) {
    let mut o = Obj::new(out);
    o.str("detail", e.detail);
    o.str("kind", e.kind);
    o.end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::types::{FindingKind, Mode};
    use crate::core::wire::{
        CitationOut, ClaimOut, InputCoordinates, Payload, SourceFlat, Validation,
    };
    use proptest::prelude::*;
    use std::borrow::Cow;

    fn serde_string(s: &str) -> Vec<u8> {
        serde_json::to_vec(s).unwrap()
    }

    #[test]
    fn strings_escape_like_serde_json() {
        for s in [
            "",
            "plain prose",
            "quote \" backslash \\ slash /",
            "\u{0}\u{1}\u{8}\u{9}\u{a}\u{b}\u{c}\u{d}\u{1f}\u{7f}",
            "ünïcødé — 漢字 🦀",
            &"x".repeat(31),
            &format!("{}\"", "y".repeat(31)),
            &format!("{}\n{}", "z".repeat(40), "w".repeat(70)),
        ] {
            let mut out = Vec::new();
            string(&mut out, s);
            assert_eq!(out, serde_string(s), "{s:?}");
        }
    }

    fn finding_strategy() -> impl Strategy<Value = Finding> {
        (any::<String>(), 0..FindingKind::ALL.len())
            .prop_map(|(d, k)| Finding::new(FindingKind::ALL[k], d))
    }

    /// Claims as `(markers, span, support, unsupported_terms)`; supports
    /// include non-finite values, which both encoders write as `null`.
    type ClaimParts = (Vec<u32>, (usize, usize), Option<f64>, Vec<String>);

    fn claims_strategy() -> impl Strategy<Value = Vec<ClaimParts>> {
        proptest::collection::vec(
            (
                proptest::collection::vec(any::<u32>(), 0..3),
                (any::<usize>(), any::<usize>()),
                proptest::option::of(prop_oneof![0.0..=1.0f64, any::<f64>()]),
                proptest::collection::vec(any::<String>(), 0..3),
            ),
            0..3,
        )
    }

    fn claims_out(parts: &[ClaimParts]) -> Vec<ClaimOut<'_>> {
        parts
            .iter()
            .map(|(m, span, support, terms)| ClaimOut {
                markers: m,
                span: [span.0, span.1],
                support: *support,
                unsupported_terms: terms,
            })
            .collect()
    }

    proptest! {
        #[test]
        fn strings_dense_with_escapes_escape_like_serde_json(
            s in "[\"\\\\\\x00-\\x1f\\x7f a-z\u{e9}\u{80}]{0,100}"
        ) {
            let mut out = Vec::new();
            string(&mut out, &s);
            prop_assert_eq!(out, serde_string(&s));
        }

        #[test]
        fn any_string_escapes_like_serde_json(s in any::<String>(), prefix in "[a-z ]{0,40}") {
            let s = format!("{prefix}{s}");
            let mut out = Vec::new();
            string(&mut out, &s);
            prop_assert_eq!(out, serde_string(&s));
        }

        #[test]
        fn envelope_matches_serde_json(
            answer in any::<String>(),
            cache_hit in any::<bool>(),
            cites in proptest::collection::vec((any::<u32>(), any::<String>()), 0..4),
            tokens in (any::<u64>(), any::<u64>()),
            cost in any::<f64>(),
            strict in any::<bool>(),
            names in proptest::collection::vec(any::<String>(), 3),
            retry_count in 0u8..2,
            sources in proptest::collection::vec((any::<String>(), any::<String>()), 0..4),
            errors in proptest::collection::vec(finding_strategy(), 0..3),
            warnings in proptest::collection::vec(finding_strategy(), 0..3),
            ok in any::<bool>(),
            claims in claims_strategy(),
            score in proptest::option::of(any::<f64>()),
        ) {
            let env = Envelope {
                answer: &answer,
                cache_hit,
                citations: cites.iter().map(|(m, u)| CitationOut { marker: *m, urn: u }).collect(),
                completion_tokens: tokens.0,
                cost_usd: cost,
                grounding: GroundingOut { claims: claims_out(&claims), score },
                mode: if strict { Mode::Strict } else { Mode::Lenient },
                model: &names[0],
                prompt_tokens: tokens.1,
                provider: &names[1],
                request_id: &names[2],
                retry_count,
                sources_flat: sources.iter().map(|(p, u)| SourceFlat { payload: p, urn: u }).collect(),
                validation: Validation { errors: &errors, ok, warnings: &warnings },
            };
            prop_assert_eq!(envelope(&env), serde_json::to_vec(&env).unwrap());
        }

        #[test]
        fn retry_request_matches_serde_json(
            names in proptest::collection::vec(any::<String>(), 8),
            prior in (any::<u64>(), any::<f64>(), any::<u64>()),
            problems in proptest::collection::vec(finding_strategy(), 0..3),
            warnings in proptest::collection::vec(finding_strategy(), 0..3),
            sources in proptest::collection::vec((any::<String>(), any::<bool>(), any::<String>()), 0..4),
        ) {
            // Structured payloads are compact JSON text; use a few valid ones.
            let payloads: Vec<Payload<'_>> = sources
                .iter()
                .enumerate()
                .map(|(i, (text, is_string, _))| if *is_string {
                    Payload { text: Cow::Borrowed(text.as_str()), is_string: true }
                } else {
                    let json = ["{\"a\":1}", "[1,2,{\"b\":null}]", "3.5", "true"][i % 4];
                    Payload { text: Cow::Borrowed(json), is_string: false }
                })
                .collect();
            let req = RetryRequest {
                attempt: 1,
                mode: Mode::Strict,
                model: &names[0],
                prior: Usage { completion_tokens: prior.0, cost_usd: prior.1, prompt_tokens: prior.2 },
                problems: &problems,
                prompt: &names[1],
                provider: &names[2],
                question: &names[3],
                request_id: &names[4],
                role: &names[5],
                sources: payloads.iter().zip(&sources).map(|(p, s)| SourceEcho { payload: p, urn: &s.2 }).collect(),
                tenant: &names[6],
                user: &names[7],
                warnings: &warnings,
            };
            prop_assert_eq!(retry_request(&req), serde_json::to_vec(&req).unwrap());
        }

        #[test]
        fn audit_row_matches_serde_json(
            answer in proptest::option::of(any::<String>()),
            names in proptest::collection::vec(any::<String>(), 13),
            nums in (any::<u64>(), any::<f64>(), any::<u64>(), any::<i64>(), any::<i32>(), any::<i64>()),
            citations in proptest::collection::vec(any::<u32>(), 0..5),
            errors in proptest::collection::vec((any::<String>(), any::<String>()), 0..3),
            warnings in proptest::collection::vec((any::<String>(), any::<String>()), 0..3),
            seed in proptest::option::of(any::<u64>()),
            temperature in proptest::option::of(any::<f64>()),
            urns in proptest::collection::vec(any::<String>(), 0..4),
            flags in (any::<bool>(), any::<bool>(), 0u8..2),
            grounding in (any::<u64>(), any::<u64>(), proptest::option::of(any::<f64>()), any::<u64>()),
        ) {
            let row = AuditRow {
                answer: answer.as_deref(),
                answer_hash: &names[0],
                cache_hit: flags.0,
                citations,
                completion_tokens: nums.0,
                cost_usd: nums.1,
                errors: errors.iter().map(|(d, k)| KindDetail { detail: d, kind: k }).collect(),
                grounding: GroundingAudit {
                    claims: grounding.0,
                    cited_claims: grounding.1,
                    score: grounding.2,
                    unsupported_claims: grounding.3,
                },
                input: InputCoordinates { offset: nums.3, partition: nums.4, topic: &names[1] },
                mode: &names[2],
                model: &names[3],
                outcome: &names[4],
                policy_version: &names[5],
                prompt_tokens: nums.2,
                provider: &names[6],
                question: &names[7],
                request_id: &names[8],
                requested_mode: &names[12],
                retry_count: flags.2,
                role: &names[9],
                seed,
                sources_urns: urns.iter().map(String::as_str).collect(),
                temperature,
                tenant: &names[10],
                ts: nums.5,
                user: &names[11],
                validation_ok: flags.1,
                warnings: warnings.iter().map(|(d, k)| KindDetail { detail: d, kind: k }).collect(),
            };
            prop_assert_eq!(audit_row(&row), serde_json::to_vec(&row).unwrap());
        }
    }
}
