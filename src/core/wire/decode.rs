//! Decoding an input record: bytes (JSON text, or JSON text behind a
//! Confluent Schema Registry header when the settings say so) →
//! [`InputRecord`] (borrowing from the bytes where it can), or a
//! [`DecodeFailure`] naming the dead-letter kind, a detail pointing at the
//! offending byte, and the request id when one can be recovered. This
//! module must not decide verdicts; it only reads data.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::core::settings::ValueFraming;
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

/// `sources` on the wire: a list of objects. serde's derive would also
/// take a source written as an array, by position (`["urn", "payload"]`),
/// which is not the record's form.
fn source_objects<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<SourceIn<'a>>, D::Error> {
    struct Object;
    impl<'de> serde::de::DeserializeSeed<'de> for Object {
        type Value = SourceIn<'de>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> serde::de::Visitor<'de> for Object {
        type Value = SourceIn<'de>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object {urn, payload}")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            SourceIn::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    struct List;
    impl<'de> serde::de::Visitor<'de> for List {
        type Value = Vec<SourceIn<'de>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
            while let Some(s) = seq.next_element_seed(Object)? {
                out.push(s);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(List)
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
    #[serde(borrow, default, deserialize_with = "source_objects")]
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

/// The first byte of a value in Confluent Schema Registry wire format.
pub const SCHEMA_REGISTRY_MAGIC: u8 = 0x00;
/// The wire format's header: the magic byte and a 4-byte big-endian schema id.
pub const SCHEMA_REGISTRY_HEADER_BYTES: usize = 5;

/// The schema id and payload of a value that starts with the Schema
/// Registry magic byte and holds a whole header; `None` otherwise.
pub fn schema_registry_frame(bytes: &[u8]) -> Option<(u32, &[u8])> {
    match bytes {
        [SCHEMA_REGISTRY_MAGIC, a, b, c, d, payload @ ..] => {
            Some((u32::from_be_bytes([*a, *b, *c, *d]), payload))
        }
        _ => None,
    }
}

/// The bytes that hold the JSON text: the payload of a framed value when
/// `framing` reads frames, the whole value otherwise.
pub fn json_bytes<'a>(bytes: &'a [u8], framing: &ValueFraming) -> &'a [u8] {
    match (framing, schema_registry_frame(bytes)) {
        (ValueFraming::SchemaRegistry { .. }, Some((_, payload))) => payload,
        _ => bytes,
    }
}

/// Whether `bytes`, after leading JSON whitespace, starts a JSON object.
fn opens_object(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        .is_some_and(|b| *b == b'{')
}

/// Decodes and schema-checks one record value.
///
/// Order of checks: absent/empty value, size (of the whole value), framing,
/// UTF-8, JSON syntax, schema (types and value rules). Each failure names
/// the field or byte position (counted in the whole value, framing
/// included) so an operator can fix the producer.
pub fn decode<'a>(
    value: Option<&'a [u8]>,
    max_record_bytes: usize,
    framing: &ValueFraming,
) -> Result<InputRecord<'a>, DecodeFailure> {
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
    match framing {
        ValueFraming::SchemaRegistry { schema_ids }
            if bytes.first() == Some(&SCHEMA_REGISTRY_MAGIC) =>
        {
            decode_framed(bytes, schema_ids.as_deref())
        }
        _ => {
            // The magic byte, an id, then a JSON object: a Schema Registry
            // serializer wrote it, and the one thing to change is the setting.
            if let ValueFraming::None = framing
                && let Some((id, payload)) = schema_registry_frame(bytes)
                && opens_object(payload)
            {
                return Err(fail(
                    DeadLetterKind::InvalidJson,
                    format!(
                        "record starts with byte 0x00 and a 4-byte schema id ({id}) before its JSON: it looks like Confluent Schema Registry wire format; set value_framing = \"schema-registry\" (GROUNDGATE_VALUE_FRAMING) to read such records"
                    ),
                    None,
                ));
            }
            decode_json(bytes, 0)
        }
    }
}

/// A value in Schema Registry wire format: the header checked, then its
/// payload decoded as JSON.
fn decode_framed<'a>(
    bytes: &'a [u8],
    schema_ids: Option<&[u32]>,
) -> Result<InputRecord<'a>, DecodeFailure> {
    let Some((id, payload)) = schema_registry_frame(bytes) else {
        return Err(fail(
            DeadLetterKind::InvalidJson,
            format!("record {}", super::frame::CutHeader(bytes.len())),
            None,
        ));
    };
    if let Some(allowed) = schema_ids
        && !allowed.contains(&id)
    {
        let list: Vec<String> = allowed.iter().map(u32::to_string).collect();
        return Err(fail(
            DeadLetterKind::Schema,
            format!(
                "Schema Registry schema id {id} is not one of value_schema_ids = [{}]",
                list.join(", ")
            ),
            std::str::from_utf8(payload)
                .ok()
                .and_then(recover_request_id),
        ));
    }
    if payload.iter().all(u8::is_ascii_whitespace) {
        return Err(fail(
            DeadLetterKind::InvalidJson,
            format!("Schema Registry framed record (schema id {id}) with an empty payload"),
            None,
        ));
    }
    decode_json(payload, SCHEMA_REGISTRY_HEADER_BYTES).map_err(|mut f| {
        let dl = &mut f.dead_letter;
        if matches!(
            dl.kind,
            DeadLetterKind::InvalidUtf8 | DeadLetterKind::InvalidJson
        ) {
            // Avro and Protobuf serializers frame their payloads the same
            // way; a byte order mark is a JSON producer's mistake.
            let what = if payload.starts_with(b"\xEF\xBB\xBF") {
                "its payload starts with a UTF-8 byte order mark, which JSON text sent to Kafka does not carry (have the producer write UTF-8 without one)"
            } else if opens_object(payload) {
                "its payload is not valid JSON"
            } else {
                "its payload is not JSON (Avro or Protobuf? groundgate reads JSON payloads only)"
            };
            dl.detail = format!(
                "Schema Registry framed record (schema id {id}): {what}: {}",
                dl.detail
            );
            dl.kind = DeadLetterKind::InvalidJson;
        }
        f
    })
}

/// Decodes the JSON text of a record; `base` is where `bytes` starts in
/// the record value, so byte positions name the value's own bytes.
fn decode_json(bytes: &[u8], base: usize) -> Result<InputRecord<'_>, DecodeFailure> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        fail(
            DeadLetterKind::InvalidUtf8,
            format!("invalid UTF-8 at byte {}", base + e.valid_up_to()),
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
            return Err(syntax_failure(text, base, &e));
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
        Err(_) => return Err(diagnose(text, base)),
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
fn diagnose(text: &str, base: usize) -> DecodeFailure {
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed: Result<InputRecord<'_>, _> = serde_path_to_error::deserialize(&mut de);
    match parsed {
        Ok(_) => match de.end() {
            Err(e) => syntax_failure(text, base, &e),
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
                    syntax_failure(text, base, &inner)
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

fn syntax_failure(text: &str, base: usize, e: &serde_json::Error) -> DecodeFailure {
    fail(
        DeadLetterKind::InvalidJson,
        format!(
            "{e} (byte {})",
            base + byte_offset(text, e.line(), e.column())
        ),
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
        decode(Some(value), 1 << 20, &ValueFraming::None).unwrap_err()
    }

    #[test]
    fn minimal_record_decodes_with_defaults() {
        let r = decode(
            Some(br#"{"request_id":"r1","answer":"hi"}"#),
            1024,
            &ValueFraming::None,
        )
        .unwrap();
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
                1024,
                &ValueFraming::None
            )
            .is_ok()
        );
    }

    #[test]
    fn dead_letter_kinds_and_details() {
        let e = decode(None, 10, &ValueFraming::None).unwrap_err();
        assert_eq!(e.dead_letter.kind, DeadLetterKind::InvalidJson);
        assert!(e.dead_letter.detail.contains("tombstone"));

        let e = dl(b"");
        assert_eq!(e.dead_letter.kind, DeadLetterKind::InvalidJson);

        let e = decode(Some(&[b'x'; 2000]), 1024, &ValueFraming::None).unwrap_err();
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
        // A source is an object; the positional form serde would read is refused.
        let e = dl(br#"{"request_id":"r1","answer":"a","sources":[{"urn":"u"},["v","p"]]}"#);
        assert_eq!(e.dead_letter.kind, DeadLetterKind::Schema);
        assert!(
            e.dead_letter.detail.starts_with(
                "sources[1]: invalid type: sequence, expected an object {urn, payload}"
            ),
            "{}",
            e.dead_letter.detail
        );
        assert_eq!(e.request_id.as_deref(), Some("r1"));

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
        assert!(decode(Some(ok.as_bytes()), 4096, &ValueFraming::None).is_ok());
    }

    #[test]
    fn misplaced_or_missing_prior_still_decodes() {
        // Bookkeeping, judged by the core: neither is a dead letter.
        let r = decode(
            Some(br#"{"request_id":"r","answer":"a","attempt":1}"#),
            1024,
            &ValueFraming::None,
        )
        .unwrap();
        assert_eq!(r.prior, None);
        let r = decode(
            Some(br#"{"request_id":"r","answer":"a","prior":{"completion_tokens":1,"cost_usd":0.5,"prompt_tokens":2}}"#),
            1024, &ValueFraming::None
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
            &ValueFraming::None,
        )
        .unwrap();
        assert_eq!(r.prior, None);
    }

    const RECORD: &[u8] = br#"{"request_id":"r1","answer":"hi"}"#;

    /// `value` in Schema Registry wire format with schema id `id`.
    fn framed(id: u32, value: &[u8]) -> Vec<u8> {
        let mut v = vec![SCHEMA_REGISTRY_MAGIC];
        v.extend_from_slice(&id.to_be_bytes());
        v.extend_from_slice(value);
        v
    }

    fn schema_registry(ids: Option<&[u32]>) -> ValueFraming {
        ValueFraming::SchemaRegistry {
            schema_ids: ids.map(<[u32]>::to_vec),
        }
    }

    fn decoded(value: &[u8], framing: &ValueFraming) -> Result<String, DecodeFailure> {
        decode(Some(value), 1 << 20, framing).map(|r| r.request_id.into_owned())
    }

    fn failed(value: &[u8], framing: &ValueFraming) -> (DeadLetterKind, String) {
        let f = decode(Some(value), 1 << 20, framing).unwrap_err();
        (f.dead_letter.kind, f.dead_letter.detail)
    }

    #[test]
    fn schema_registry_framing_reads_framed_and_plain_values() {
        let on = schema_registry(None);
        // Ids whose bytes are not UTF-8 or are JSON whitespace and quotes.
        for id in [0, 1, 42, 200, 0x0a0d_2022, u32::MAX] {
            assert_eq!(decoded(&framed(id, RECORD), &on).unwrap(), "r1", "{id}");
        }
        assert_eq!(decoded(RECORD, &on).unwrap(), "r1");
        let spaced = framed(7, b" \n{\"request_id\":\"r2\",\"answer\":\"a\"}");
        assert_eq!(decoded(&spaced, &on).unwrap(), "r2");
        // The frame is read only at the start: a plain value keeps every byte.
        let (kind, _) = failed(&[b" ".as_slice(), &framed(42, RECORD)].concat(), &on);
        assert_eq!(kind, DeadLetterKind::InvalidJson);
    }

    #[test]
    fn a_framed_schema_error_is_the_plain_one_and_positions_count_the_header() {
        let on = schema_registry(None);
        let f = decode(Some(&framed(42, br#"{"request_id":"r1"}"#)), 1 << 20, &on).unwrap_err();
        assert_eq!(f.dead_letter.kind, DeadLetterKind::Schema);
        assert!(
            f.dead_letter.detail.contains("answer"),
            "{}",
            f.dead_letter.detail
        );
        assert_eq!(f.request_id.as_deref(), Some("r1"));
        // Byte 29 of the JSON text is byte 34 of the value.
        let (kind, detail) = failed(&framed(42, br#"{"request_id":"r", "answer": }"#), &on);
        assert_eq!(kind, DeadLetterKind::InvalidJson);
        assert_eq!(
            detail,
            "Schema Registry framed record (schema id 42): its payload is not valid JSON: expected value at line 1 column 30 (byte 34)"
        );
    }

    #[test]
    fn a_framed_payload_that_is_not_json_names_the_id_and_the_likely_formats() {
        let on = schema_registry(None);
        // An Avro record: a zig-zag length, then the string's bytes.
        let avro = framed(42, b"\x04r1\x04hi");
        let (kind, detail) = failed(&avro, &on);
        assert_eq!(kind, DeadLetterKind::InvalidJson);
        assert!(
            detail.starts_with(
                "Schema Registry framed record (schema id 42): its payload is not JSON (Avro or Protobuf? groundgate reads JSON payloads only): "
            ),
            "{detail}"
        );
        // Not UTF-8 either: still said to be framed, not an encoding problem.
        let (kind, detail) = failed(&framed(7, b"\x00\x02\xff\xfe"), &on);
        assert_eq!(kind, DeadLetterKind::InvalidJson);
        assert!(
            detail.contains("schema id 7") && detail.contains("Avro or Protobuf?"),
            "{detail}"
        );
        assert!(detail.ends_with("invalid UTF-8 at byte 7"), "{detail}");
        let (kind, detail) = failed(&framed(9, b""), &on);
        assert_eq!(kind, DeadLetterKind::InvalidJson);
        assert_eq!(
            detail,
            "Schema Registry framed record (schema id 9) with an empty payload"
        );
    }

    #[test]
    fn a_framed_value_shorter_than_its_header_is_invalid_json() {
        let on = schema_registry(None);
        for short in [&b"\x00"[..], b"\x00\x00\x00", b"\x00\x00\x00\x2a"] {
            let (kind, detail) = failed(short, &on);
            assert_eq!(kind, DeadLetterKind::InvalidJson, "{short:?}");
            assert_eq!(
                detail,
                format!(
                    "record starts with byte 0x00, the Schema Registry magic byte, but is {} bytes long: the wire format has 5 (magic byte and 4-byte schema id) before its payload",
                    short.len()
                )
            );
        }
    }

    /// A JSON payload behind a byte order mark is a producer's mistake, not
    /// an Avro or Protobuf payload, and the detail says which.
    #[test]
    fn a_framed_payload_with_a_byte_order_mark_is_named_for_it() {
        let on = schema_registry(None);
        let mut payload = b"\xEF\xBB\xBF".to_vec();
        payload.extend_from_slice(RECORD);
        let (kind, detail) = failed(&framed(42, &payload), &on);
        assert_eq!(kind, DeadLetterKind::InvalidJson);
        assert_eq!(
            detail,
            "Schema Registry framed record (schema id 42): its payload starts with a UTF-8 byte order mark, which JSON text sent to Kafka does not carry (have the producer write UTF-8 without one): expected value at line 1 column 1 (byte 5)"
        );
    }

    #[test]
    fn a_schema_id_outside_the_allow_list_is_a_schema_dead_letter() {
        let allowed = schema_registry(Some(&[42, 43]));
        assert_eq!(decoded(&framed(42, RECORD), &allowed).unwrap(), "r1");
        assert_eq!(decoded(&framed(43, RECORD), &allowed).unwrap(), "r1");
        // Plain JSON carries no id: the list does not apply to it.
        assert_eq!(decoded(RECORD, &allowed).unwrap(), "r1");
        let f = decode(Some(&framed(44, RECORD)), 1 << 20, &allowed).unwrap_err();
        assert_eq!(f.dead_letter.kind, DeadLetterKind::Schema);
        assert_eq!(
            f.dead_letter.detail,
            "Schema Registry schema id 44 is not one of value_schema_ids = [42, 43]"
        );
        assert_eq!(f.request_id.as_deref(), Some("r1"));
        // The id is judged before the payload.
        let (kind, _) = failed(&framed(44, b"\x04r1"), &allowed);
        assert_eq!(kind, DeadLetterKind::Schema);
    }

    #[test]
    fn without_framing_a_framed_json_value_is_told_which_setting_reads_it() {
        let off = ValueFraming::default();
        assert_eq!(off, ValueFraming::None);
        for id in [42, 200] {
            let (kind, detail) = failed(&framed(id, RECORD), &off);
            assert_eq!(kind, DeadLetterKind::InvalidJson);
            assert_eq!(
                detail,
                format!(
                    "record starts with byte 0x00 and a 4-byte schema id ({id}) before its JSON: it looks like Confluent Schema Registry wire format; set value_framing = \"schema-registry\" (GROUNDGATE_VALUE_FRAMING) to read such records"
                )
            );
        }
        // Anything else starting with 0x00 is judged as before.
        assert_eq!(
            failed(b"\x00\x00\x00\x00\x2a", &off),
            (
                DeadLetterKind::InvalidJson,
                "expected value at line 1 column 1 (byte 0)".to_string()
            )
        );
        assert_eq!(
            failed(&framed(200, b"\x04r1"), &off).0,
            DeadLetterKind::InvalidUtf8
        );
    }

    #[test]
    fn the_size_limit_counts_the_whole_framed_value() {
        let on = schema_registry(None);
        let v = framed(42, RECORD);
        assert!(decode(Some(&v), v.len(), &on).is_ok());
        let f = decode(Some(&v), v.len() - 1, &on).unwrap_err();
        assert_eq!(f.dead_letter.kind, DeadLetterKind::TooLarge);
        assert!(
            f.dead_letter
                .detail
                .contains(&format!("record is {} bytes", v.len()))
        );
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
            4096, &ValueFraming::None
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
