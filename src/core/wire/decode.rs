//! Decoding an input record: bytes → [`InputRecord`] (borrowing from the
//! bytes where it can), or a [`DecodeFailure`] naming the dead-letter kind,
//! a detail pointing at the offending byte, and the request id when one can
//! be recovered. This module must not decide verdicts; it only reads data.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::core::types::{DeadLetter, DeadLetterKind, DeadLetterValue, Mode};

/// Maximum `request_id` length in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// Token usage and cost of one LLM call.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    // Alphabetical: this is also the wire shape of `prior`.
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
    #[serde(default)]
    pub prompt_tokens: u64,
}

impl Usage {
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
            cost_usd: self.cost_usd + other.cost_usd,
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
        }
    }
}

/// One retrieved source as received.
#[derive(Debug, Deserialize)]
pub struct SourceIn<'a> {
    #[serde(borrow)]
    pub urn: Cow<'a, str>,
    #[serde(borrow, default)]
    pub payload: Option<&'a RawValue>,
}

/// An input record, borrowed from the record bytes where no unescaping is needed.
#[derive(Debug, Deserialize)]
pub struct InputRecord<'a> {
    #[serde(borrow)]
    pub request_id: Cow<'a, str>,
    #[serde(borrow)]
    pub answer: Cow<'a, str>,
    #[serde(default)]
    pub attempt: u64,
    #[serde(default, deserialize_with = "mode_from_str")]
    pub mode: Mode,
    #[serde(borrow, default)]
    pub question: Cow<'a, str>,
    #[serde(borrow, default)]
    pub sources: Vec<SourceIn<'a>>,
    #[serde(borrow, default)]
    pub provider: Cow<'a, str>,
    #[serde(borrow, default)]
    pub model: Cow<'a, str>,
    #[serde(borrow, default)]
    pub tenant: Cow<'a, str>,
    #[serde(borrow, default)]
    pub user: Cow<'a, str>,
    #[serde(borrow, default)]
    pub role: Cow<'a, str>,
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
    #[serde(default)]
    pub cache_hit: bool,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub confidence: Option<f64>,
    #[serde(borrow, default)]
    pub provenance: Option<Cow<'a, str>>,
    /// The first attempt's usage, echoed back on the retry. Whether it
    /// belongs (attempt 1 only) is the core's bookkeeping finding, not a
    /// decoding error: a misplaced or missing `prior` never withholds a
    /// verdict.
    #[serde(default, deserialize_with = "prior_object")]
    pub prior: Option<Usage>,
}

/// `prior` on the wire: an object holding exactly the three usage fields.
/// serde's derive would also take an array (by position) and default
/// missing fields, so `[1, 2, 3]` and `{}` would pass.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriorFields {
    completion_tokens: u64,
    cost_usd: f64,
    prompt_tokens: u64,
}

fn prior_object<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Usage>, D::Error> {
    struct Object;
    impl<'de> serde::de::Visitor<'de> for Object {
        type Value = Option<Usage>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object {completion_tokens, cost_usd, prompt_tokens}")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: serde::Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_map(Object)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            let p = PriorFields::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
            Ok(Some(Usage {
                completion_tokens: p.completion_tokens,
                cost_usd: p.cost_usd,
                prompt_tokens: p.prompt_tokens,
            }))
        }
    }
    d.deserialize_option(Object)
}

/// `mode` as a string only. serde_json reports any other type given to a
/// derived enum as a syntax error ("expected value"), which would make
/// `"mode": null` an `invalid_json` dead letter without its request id; a
/// string visitor makes it a `schema` error naming `mode`.
fn mode_from_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
    struct V;
    impl serde::de::Visitor<'_> for V {
        type Value = Mode;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("\"strict\" or \"lenient\"")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Mode, E> {
            match v {
                "strict" => Ok(Mode::Strict),
                "lenient" => Ok(Mode::Lenient),
                other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
            }
        }
    }
    d.deserialize_str(V)
}

impl InputRecord<'_> {
    /// This call's own usage.
    pub fn usage(&self) -> Usage {
        Usage {
            completion_tokens: self.completion_tokens,
            cost_usd: self.cost_usd,
            prompt_tokens: self.prompt_tokens,
        }
    }
}

/// A decoded source payload: the string itself, or compact JSON text of a
/// structured payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload<'a> {
    pub text: Cow<'a, str>,
    /// Whether the payload was a JSON string (echoed as a string on retry).
    pub is_string: bool,
}

/// Decodes a source payload. Absent or `null` payloads become the empty string.
pub fn payload_text<'a>(raw: Option<&'a RawValue>) -> Payload<'a> {
    let Some(raw) = raw else {
        return Payload {
            text: Cow::Borrowed(""),
            is_string: true,
        };
    };
    let s = raw.get();
    if let Some(inner) = s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        // A RawValue starting with a quote is a valid JSON string: without a
        // backslash its text is what lies between the quotes (borrowed, not
        // scanned again); with one, decoding it cannot fail.
        let text = if inner.contains('\\') {
            serde_json::from_str::<Cow<'a, str>>(s).unwrap_or(Cow::Borrowed(""))
        } else {
            Cow::Borrowed(inner)
        };
        return Payload {
            text,
            is_string: true,
        };
    }
    if s == "null" {
        return Payload {
            text: Cow::Borrowed(""),
            is_string: true,
        };
    }
    Payload {
        text: compact_json(s),
        is_string: false,
    }
}

/// Removes insignificant whitespace from valid JSON text without re-parsing,
/// so key order and number spelling are kept exactly as sent.
fn compact_json(s: &str) -> Cow<'_, str> {
    // Any whitespace byte may be insignificant; only then pay for a copy.
    let needs = s.bytes().any(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
    if !needs {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut in_str = false;
    let mut esc = false;
    for c in s.chars() {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\n' | '\r' | '\t') {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Why decoding failed, plus the request id if it could be recovered.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeFailure {
    pub dead_letter: DeadLetter,
    pub request_id: Option<String>,
}

fn fail(kind: DeadLetterKind, detail: String, request_id: Option<String>) -> DecodeFailure {
    DecodeFailure {
        dead_letter: DeadLetter {
            kind,
            detail,
            value: DeadLetterValue::Original,
        },
        request_id,
    }
}

/// The detail of a record dead-lettered for its size.
pub fn too_large_detail(length: u64, max_record_bytes: usize) -> String {
    format!(
        "record is {length} bytes, larger than the maximum of {max_record_bytes} bytes (max_record_bytes)"
    )
}

/// Decodes and schema-checks one record value.
///
/// Order of checks: absent/empty value, size, UTF-8, JSON syntax, schema
/// (types and value rules). Each failure names the field or
/// byte position so an operator can fix the producer.
pub fn decode(
    value: Option<&[u8]>,
    max_record_bytes: usize,
) -> Result<InputRecord<'_>, DecodeFailure> {
    let bytes = match value {
        None => {
            return Err(fail(
                DeadLetterKind::InvalidJson,
                "record has no value (tombstone)".into(),
                None,
            ));
        }
        Some(b) => b,
    };
    if bytes.len() > max_record_bytes {
        return Err(fail(
            DeadLetterKind::TooLarge,
            too_large_detail(bytes.len() as u64, max_record_bytes),
            None,
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        fail(
            DeadLetterKind::InvalidUtf8,
            format!("invalid UTF-8 at byte {}", e.valid_up_to()),
            None,
        )
    })?;
    if text.trim().is_empty() {
        return Err(fail(
            DeadLetterKind::InvalidJson,
            "record value is empty".into(),
            None,
        ));
    }
    // serde's derive would also accept an array as a positional struct; an
    // input record is an object, full stop.
    if !text.trim_start().starts_with('{') {
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
            return Err(syntax_failure(text, &e));
        }
        return Err(fail(
            DeadLetterKind::Schema,
            "record must be a JSON object".into(),
            None,
        ));
    }
    // Fast path without path tracking; only a failing record pays for a
    // second, path-tracking pass to name the offending field.
    let rec: InputRecord<'_> = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(_) => return Err(diagnose(text)),
    };
    let rid = || Some(rec.request_id.to_string());
    if rec.request_id.is_empty() || rec.request_id.len() > MAX_REQUEST_ID_BYTES {
        return Err(fail(
            DeadLetterKind::Schema,
            format!(
                "request_id: must be 1 to {MAX_REQUEST_ID_BYTES} bytes, got {}",
                rec.request_id.len()
            ),
            (!rec.request_id.is_empty() && rec.request_id.len() <= 4 * MAX_REQUEST_ID_BYTES)
                .then(|| rec.request_id.to_string()),
        ));
    }
    if rec.attempt > 1 {
        return Err(fail(
            DeadLetterKind::Schema,
            format!(
                "attempt: must be 0 (first answer) or 1 (the one retry), got {}",
                rec.attempt
            ),
            rid(),
        ));
    }
    if !(rec.cost_usd >= 0.0 && rec.cost_usd.is_finite()) {
        return Err(fail(
            DeadLetterKind::Schema,
            format!("cost_usd: must be a number >= 0, got {}", rec.cost_usd),
            rid(),
        ));
    }
    if let Some(p) = &rec.prior
        && !(p.cost_usd >= 0.0 && p.cost_usd.is_finite())
    {
        return Err(fail(
            DeadLetterKind::Schema,
            format!("prior.cost_usd: must be a number >= 0, got {}", p.cost_usd),
            rid(),
        ));
    }
    if let Some(p) = &rec.prior
        && rec.attempt == 1
        && !(rec.cost_usd + p.cost_usd).is_finite()
    {
        // The envelope reports the sum; an infinite sum has no JSON number.
        return Err(fail(
            DeadLetterKind::Schema,
            format!(
                "prior.cost_usd: cost_usd + prior.cost_usd overflows ({} + {})",
                rec.cost_usd, p.cost_usd
            ),
            rid(),
        ));
    }
    if let Some(c) = rec.confidence
        && !(0.0..=1.0).contains(&c)
    {
        return Err(fail(
            DeadLetterKind::Schema,
            format!("confidence: must be between 0 and 1, got {c}"),
            rid(),
        ));
    }
    Ok(rec)
}

/// Second pass over a record that failed to decode: names the field (with
/// its path) or the byte position of the problem.
fn diagnose(text: &str) -> DecodeFailure {
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed: Result<InputRecord<'_>, _> = serde_path_to_error::deserialize(&mut de);
    match parsed {
        Ok(_) => match de.end() {
            Err(e) => syntax_failure(text, &e),
            // Unreachable in practice: the fast path failed on the same text.
            Ok(()) => fail(
                DeadLetterKind::InvalidJson,
                "record could not be decoded".into(),
                None,
            ),
        },
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            match inner.classify() {
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                    syntax_failure(text, &inner)
                }
                _ => {
                    let detail = if path.is_empty() || path == "." {
                        inner.to_string()
                    } else {
                        format!("{path}: {inner}")
                    };
                    fail(DeadLetterKind::Schema, detail, recover_request_id(text))
                }
            }
        }
    }
}

fn syntax_failure(text: &str, e: &serde_json::Error) -> DecodeFailure {
    fail(
        DeadLetterKind::InvalidJson,
        format!("{e} (byte {})", byte_offset(text, e.line(), e.column())),
        None,
    )
}

/// serde_json reports 1-based line/column; dead letters name a 0-based byte offset.
fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// Best effort: the record is JSON but has a schema problem; the request id
/// still ties the dead letter to its request when it is a proper string.
pub(crate) fn recover_request_id(text: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Rid<'a> {
        #[serde(borrow)]
        request_id: Option<Cow<'a, str>>,
    }
    let r: Rid<'_> = serde_json::from_str(text).ok()?;
    r.request_id
        .filter(|s| !s.is_empty() && s.len() <= MAX_REQUEST_ID_BYTES)
        .map(Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dl(value: &[u8]) -> DecodeFailure {
        decode(Some(value), 1 << 20).unwrap_err()
    }

    #[test]
    fn minimal_record_decodes_with_defaults() {
        let r = decode(Some(br#"{"request_id":"r1","answer":"hi"}"#), 1024).unwrap();
        assert_eq!(r.request_id, "r1");
        assert_eq!(r.attempt, 0);
        assert_eq!(r.mode, Mode::Strict);
        assert!(r.sources.is_empty());
        assert_eq!(r.seed, None);
        assert_eq!(r.prior, None);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        assert!(
            decode(
                Some(br#"{"request_id":"r","answer":"a","extra":{"x":[1]}}"#),
                1024
            )
            .is_ok()
        );
    }

    #[test]
    fn dead_letter_kinds_and_details() {
        let e = decode(None, 10).unwrap_err();
        assert_eq!(e.dead_letter.kind, DeadLetterKind::InvalidJson);
        assert!(e.dead_letter.detail.contains("tombstone"));

        let e = dl(b"");
        assert_eq!(e.dead_letter.kind, DeadLetterKind::InvalidJson);

        let e = decode(Some(&[b'x'; 2000]), 1024).unwrap_err();
        assert_eq!(e.dead_letter.kind, DeadLetterKind::TooLarge);
        assert!(e.dead_letter.detail.contains("2000") && e.dead_letter.detail.contains("1024"));

        let e = dl(b"{\"request_id\":\"a\xff\"}");
        assert_eq!(e.dead_letter.kind, DeadLetterKind::InvalidUtf8);
        assert!(
            e.dead_letter.detail.contains("byte 16"),
            "{}",
            e.dead_letter.detail
        );

        let e = dl(br#"{"request_id":"r", "answer": }"#);
        assert_eq!(e.dead_letter.kind, DeadLetterKind::InvalidJson);
        assert!(
            e.dead_letter.detail.contains("byte 29"),
            "{}",
            e.dead_letter.detail
        );

        let e = dl(br#"{"request_id":"r1"}"#);
        assert_eq!(e.dead_letter.kind, DeadLetterKind::Schema);
        assert!(
            e.dead_letter.detail.contains("answer"),
            "{}",
            e.dead_letter.detail
        );
        assert_eq!(e.request_id.as_deref(), Some("r1"));

        let e = dl(
            br#"{"request_id":"r1","answer":"a","sources":[{"urn":"u","payload":1},{"urn":7}]}"#,
        );
        assert_eq!(e.dead_letter.kind, DeadLetterKind::Schema);
        assert!(
            e.dead_letter.detail.starts_with("sources[1].urn"),
            "{}",
            e.dead_letter.detail
        );

        let e = dl(br#"{"request_id":"r1","answer":"a","attempt":2}"#);
        assert!(
            e.dead_letter.detail.starts_with("attempt"),
            "{}",
            e.dead_letter.detail
        );
        assert_eq!(e.request_id.as_deref(), Some("r1"));

        for (rec, field) in [
            (&br#"{"request_id":"","answer":"a"}"#[..], "request_id"),
            (
                br#"{"request_id":"r","answer":"a","cost_usd":-1}"#,
                "cost_usd",
            ),
            (
                br#"{"request_id":"r","answer":"a","confidence":1.5}"#,
                "confidence",
            ),
            (
                br#"{"request_id":"r","answer":"a","prompt_tokens":-3}"#,
                "prompt_tokens",
            ),
            (br#"{"request_id":"r","answer":"a","mode":"loose"}"#, "mode"),
            (br#"{"request_id":"r","answer":"a","seed":1.5}"#, "seed"),
            (
                br#"{"request_id":"r","answer":"a","attempt":1,"prior":{"completion_tokens":0,"cost_usd":-2,"prompt_tokens":0}}"#,
                "prior.cost_usd",
            ),
            (
                br#"{"request_id":"r","answer":"a","cost_usd":1e308,"attempt":1,"prior":{"completion_tokens":0,"cost_usd":1e308,"prompt_tokens":0}}"#,
                "overflows",
            ),
            (
                br#"{"request_id":"r","answer":"a","attempt":1,"prior":[1,0.5,2]}"#,
                "prior: invalid type: sequence, expected an object",
            ),
            (
                br#"{"request_id":"r","answer":"a","attempt":1,"prior":{}}"#,
                "prior: missing field",
            ),
            (
                br#"{"request_id":"r","answer":"a","attempt":1,"prior":{"completion_tokens":1,"cost_usd":0,"prompt_tokens":1,"extra":1}}"#,
                "prior.extra: unknown field `extra`",
            ),
            (
                br#"{"request_id":"r","answer":"a","attempt":1,"prior":{"completion_tokens":1,"cost_usd":"x","prompt_tokens":1}}"#,
                "prior.cost_usd: invalid type",
            ),
            (br#"{"request_id":"r","answer":"a","mode":null}"#, "mode"),
            (br#"{"request_id":"r","answer":"a","mode":1}"#, "mode"),
            (br#"{"request_id":"r","answer":"a","mode":["strict"]}"#, "mode"),
            (br#"["not","an","object"]"#, "JSON object"),
        ] {
            let e = dl(rec);
            assert_eq!(e.dead_letter.kind, DeadLetterKind::Schema, "{rec:?}");
            if field != "request_id" && field != "JSON object" {
                assert_eq!(e.request_id.as_deref(), Some("r"), "{rec:?}");
            }
            assert!(
                e.dead_letter.detail.contains(field),
                "{field}: {}",
                e.dead_letter.detail
            );
        }

        let long = format!(r#"{{"request_id":"{}","answer":"a"}}"#, "x".repeat(257));
        assert_eq!(dl(long.as_bytes()).dead_letter.kind, DeadLetterKind::Schema);
        let ok = format!(r#"{{"request_id":"{}","answer":"a"}}"#, "x".repeat(256));
        assert!(decode(Some(ok.as_bytes()), 4096).is_ok());
    }

    #[test]
    fn misplaced_or_missing_prior_still_decodes() {
        // Bookkeeping, judged by the core: neither is a dead letter.
        let r = decode(
            Some(br#"{"request_id":"r","answer":"a","attempt":1}"#),
            1024,
        )
        .unwrap();
        assert_eq!(r.prior, None);
        let r = decode(
            Some(br#"{"request_id":"r","answer":"a","prior":{"completion_tokens":1,"cost_usd":0.5,"prompt_tokens":2}}"#),
            1024,
        )
        .unwrap();
        assert_eq!(
            r.prior,
            Some(Usage {
                completion_tokens: 1,
                cost_usd: 0.5,
                prompt_tokens: 2
            })
        );
        let r = decode(
            Some(br#"{"request_id":"r","answer":"a","attempt":1,"prior":null}"#),
            1024,
        )
        .unwrap();
        assert_eq!(r.prior, None);
    }

    #[test]
    fn trailing_garbage_is_invalid_json() {
        let e = dl(br#"{"request_id":"r","answer":"a"} x"#);
        assert_eq!(e.dead_letter.kind, DeadLetterKind::InvalidJson);
    }

    #[test]
    fn payloads_become_text() {
        let r = decode(
            Some(br#"{"request_id":"r","answer":"a","sources":[{"urn":"u1","payload":"plain \"q\""},{"urn":"u2","payload":{ "b" : [1, 2.50], "a":"x y" }},{"urn":"u3"},{"urn":"u4","payload":null}]}"#),
            4096,
        )
        .unwrap();
        let p: Vec<Payload<'_>> = r.sources.iter().map(|s| payload_text(s.payload)).collect();
        assert_eq!(p[0].text, "plain \"q\"");
        assert!(p[0].is_string);
        assert_eq!(p[1].text, r#"{"b":[1,2.50],"a":"x y"}"#);
        assert!(!p[1].is_string);
        assert_eq!(p[2].text, "");
        assert_eq!(p[3].text, "");
    }

    proptest::proptest! {
        #[test]
        fn a_string_payload_is_its_json_decoding(text in "\\PC*|[a-z \"\\\\\n\u{1}é漢]{0,12}") {
            let json = serde_json::to_string(&text).unwrap();
            let raw: &RawValue = serde_json::from_str(&json).unwrap();
            let p = payload_text(Some(raw));
            proptest::prop_assert!(p.is_string);
            proptest::prop_assert_eq!(&p.text, &text);
            // Only an escaped string is copied.
            proptest::prop_assert_eq!(matches!(p.text, Cow::Borrowed(_)), !json.contains('\\'));
        }
    }
}
