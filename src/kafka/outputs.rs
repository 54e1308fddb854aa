//! The output contract: which records one input record becomes, with which
//! key, value and headers, on which topic. Built from plain fields (an
//! [`Consumed`] and the core's [`Outcome`]), so it is unit-tested without a
//! broker, as vector's Kafka `request_builder` is.
//!
//! Two builders: [`outputs_for`] (a validated record: its terminal record and
//! its audit row) and [`passthrough`] (the bench's plumbing-only mode: the
//! input value to the final and audit topics), plus [`oversize_replacement`],
//! the bounded stand-in for an output the producer or broker refused as too
//! large.
//!
//! Headers on every output: `groundgate.input.topic`,
//! `groundgate.input.partition`, `groundgate.input.offset`. Dead letters keep
//! the original key, value (or, when too large, the core's bounded summary)
//! and headers, and add `groundgate.error.kind`, `groundgate.error.detail` and
//! `groundgate.input.timestamp` (ms, when known). An incoming `groundgate.*`
//! header is renamed `original.groundgate.*`: ours are the only ones (and an
//! incoming `original.groundgate.*` one `original.original.groundgate.*`,
//! so replay tells them apart: [`escaped_name`]). The
//! final, retry and audit records also carry the input headers named by
//! `kafka.propagate_headers` (the W3C trace context by default), as
//! received.
//!
//! Values: the JSON text the core built, behind a Schema Registry header
//! (byte 0x00, the schema id as 4 bytes big-endian) on the final, retry and
//! audit topics given an id in `[output_schema_ids]`, seals included. A
//! dead letter is never framed: it is the record as received, or the core's
//! bounded summary of it.
//!
//! Must not: talk to Kafka, read the clock (time is an argument), decide a
//! verdict (that is [`crate::core::process()`]), or count anything.

use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::FutureRecord;

use crate::config::{OutputSchemaIds, Topics};
use crate::core::OutputRole;
use crate::core::wire::{framed, unframed};
use crate::core::{CoreSettings, DeadLetterValue, Outcome, RecordMeta, Terminal};

/// Header names, part of the output contract.
pub const H_INPUT_TOPIC: &str = "groundgate.input.topic";
pub const H_INPUT_PARTITION: &str = "groundgate.input.partition";
pub const H_INPUT_OFFSET: &str = "groundgate.input.offset";
pub const H_INPUT_TIMESTAMP: &str = "groundgate.input.timestamp";
pub const H_ERROR_KIND: &str = "groundgate.error.kind";
pub const H_ERROR_DETAIL: &str = "groundgate.error.detail";
/// On a seal record of the audit topic (its value: the seal's sequence
/// number), so consumers of audit rows can skip seals without parsing them.
pub const H_SEAL: &str = "groundgate.seal";

/// Prefix of the headers groundgate writes. Incoming headers with it are
/// renamed with [`RENAMED_PREFIX`] in front ([`escaped_name`]), so every
/// output carries exactly one, authoritative, value of each `groundgate.*`
/// header.
pub const OWN_HEADER_PREFIX: &str = "groundgate.";
pub const RENAMED_PREFIX: &str = "original.";

/// Whether a dead letter carries an input header named `name` under
/// another name: `name` starts with [`OWN_HEADER_PREFIX`] once any number
/// of leading [`RENAMED_PREFIX`]es are taken off (`groundgate.x`,
/// `original.groundgate.x`, `original.original.groundgate.x`, …). Renaming
/// these, and only these, keeps the renaming reversible: a renamed name
/// never equals a name left as it is.
fn renamed_on_dead_letters(name: &str) -> bool {
    let mut rest = name;
    while let Some(r) = rest.strip_prefix(RENAMED_PREFIX) {
        rest = r;
    }
    rest.starts_with(OWN_HEADER_PREFIX)
}

/// The name an input header `name` has on a dead letter: with one more
/// [`RENAMED_PREFIX`] in front when it starts with [`OWN_HEADER_PREFIX`]
/// after any number of them, so no header of the producer's is named as
/// one of groundgate's, and [`unescaped_name`] gives `name` back.
pub fn escaped_name(name: &str) -> std::borrow::Cow<'_, str> {
    if renamed_on_dead_letters(name) {
        format!("{RENAMED_PREFIX}{name}").into()
    } else {
        name.into()
    }
}

/// The input header name behind the name `name` of a dead letter's header,
/// the inverse of [`escaped_name`]: `None` for a header groundgate wrote
/// (`groundgate.*`), one [`RENAMED_PREFIX`] fewer for a renamed one, and
/// `name` itself for any other.
pub fn unescaped_name(name: &str) -> Option<&str> {
    if name.starts_with(OWN_HEADER_PREFIX) {
        return None;
    }
    match name.strip_prefix(RENAMED_PREFIX) {
        Some(input) if renamed_on_dead_letters(input) => Some(input),
        _ => Some(name),
    }
}

/// One header: name and value (a Kafka header value may be null).
pub type OutHeader = (String, Option<Vec<u8>>);

/// The fields of a consumed record the outputs are built from.
#[derive(Debug, Clone, Copy)]
pub struct Consumed<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<&'a [u8]>,
    pub payload: Option<&'a [u8]>,
    pub timestamp_ms: Option<i64>,
    /// The record's own headers, in order.
    pub headers: &'a [(&'a str, Option<&'a [u8]>)],
}

impl Consumed<'_> {
    fn meta(&self) -> RecordMeta<'_> {
        RecordMeta {
            topic: self.topic,
            partition: self.partition,
            offset: self.offset,
        }
    }
}

/// One output message, owned so it can be re-sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub role: OutputRole,
    pub topic: String,
    pub key: Option<Vec<u8>>,
    pub payload: Option<Vec<u8>>,
    pub headers: Vec<OutHeader>,
}

impl Output {
    /// The record handed to the producer.
    pub fn record(&self) -> FutureRecord<'_, [u8], [u8]> {
        let mut headers = OwnedHeaders::new_with_capacity(self.headers.len());
        for (key, value) in &self.headers {
            headers = headers.insert(Header {
                key,
                value: value.as_deref(),
            });
        }
        let mut r = FutureRecord::to(&self.topic).headers(headers);
        if let Some(k) = &self.key {
            r = r.key(k.as_slice());
        }
        if let Some(p) = &self.payload {
            r = r.payload(p.as_slice());
        }
        r
    }

    /// Whether this is an audit seal ([`seal_output`]), not a row.
    pub fn is_seal(&self) -> bool {
        self.role == OutputRole::Audit && self.headers.iter().any(|(k, _)| k == H_SEAL)
    }

    /// Whether this is a record's audit row (not a seal).
    pub fn is_audit_row(&self) -> bool {
        self.role == OutputRole::Audit && !self.is_seal()
    }

    /// The JSON text of a final, retry or audit value, without the Schema
    /// Registry header it carries when its topic has a schema id: what
    /// seals hash. (groundgate's JSON never starts with byte 0x00, the
    /// header always does.)
    pub fn json_text(&self) -> &[u8] {
        let value = self.payload.as_deref().unwrap_or_default();
        match self.role {
            OutputRole::DeadLetter => value,
            _ => unframed(value).unwrap_or(value),
        }
    }

    /// The value of header `key`, if present (the last one wins).
    #[cfg(test)]
    pub fn header(&self, key: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_deref())
    }
}

/// The value of an output of `role`: `json` behind a Schema Registry
/// header when the role's topic has a schema id, else `json` itself.
fn value(role: OutputRole, json: Vec<u8>, schema_ids: &OutputSchemaIds) -> Vec<u8> {
    match schema_ids.of(role) {
        Some(id) => framed(id, &json),
        None => json,
    }
}

fn header(key: &str, value: &str) -> OutHeader {
    (key.to_string(), Some(value.as_bytes().to_vec()))
}

/// The input coordinates every output carries.
pub fn input_headers(input: &Consumed<'_>) -> Vec<OutHeader> {
    vec![
        header(H_INPUT_TOPIC, input.topic),
        header(H_INPUT_PARTITION, &input.partition.to_string()),
        header(H_INPUT_OFFSET, &input.offset.to_string()),
    ]
}

/// Longest header value copied from the input onto an output: a trace
/// context is well under 1 KiB.
pub const MAX_PROPAGATED_VALUE_BYTES: usize = 8 << 10;
/// Most bytes (names and values) copied from the input's headers onto one
/// output: half the room a message keeps beside its value for the key and
/// headers (`MESSAGE_HEADROOM_BYTES` of the configuration), so copied headers
/// never push an output past the message size.
pub const MAX_PROPAGATED_BYTES: usize = 32 << 10;

/// The input coordinates, then the input headers whose names `propagate`
/// lists (without regard to case), as received and in their order: each
/// value at most [`MAX_PROPAGATED_VALUE_BYTES`], and no more of them than
/// [`MAX_PROPAGATED_BYTES`] hold. Configuration keeps `groundgate.*` names
/// out of `propagate`.
pub fn output_headers(
    input: &Consumed<'_>,
    coordinates: Vec<OutHeader>,
    propagate: &[String],
) -> Vec<OutHeader> {
    let mut h = coordinates;
    let mut room = MAX_PROPAGATED_BYTES;
    for (key, value) in input.headers {
        if !propagate.iter().any(|p| p.eq_ignore_ascii_case(key))
            || key.starts_with(OWN_HEADER_PREFIX)
        {
            continue;
        }
        let len = value.map_or(0, <[u8]>::len);
        if len > MAX_PROPAGATED_VALUE_BYTES || key.len() + len > room {
            continue;
        }
        room -= key.len() + len;
        h.push(((*key).to_string(), value.map(<[u8]>::to_vec)));
    }
    h
}

/// A dead letter's headers: the record's own (any `groundgate.*` one renamed
/// `original.groundgate.*`, so a producer cannot spoof ours, and any
/// `original.…groundgate.*` one given one more `original.`, so the renaming
/// is undone without doubt: [`escaped_name`]), then the input coordinates,
/// the error kind and detail, and the input timestamp.
pub fn dead_letter_headers(
    original: &[(&str, Option<&[u8]>)],
    input: &[OutHeader],
    kind: &str,
    detail: &str,
    timestamp_ms: Option<i64>,
) -> Vec<OutHeader> {
    let mut h: Vec<OutHeader> = Vec::with_capacity(original.len() + input.len() + 3);
    for (key, value) in original {
        h.push((escaped_name(key).into_owned(), value.map(<[u8]>::to_vec)));
    }
    h.extend(input.iter().cloned());
    h.push(header(H_ERROR_KIND, kind));
    h.push(header(H_ERROR_DETAIL, detail));
    if let Some(ts) = timestamp_ms {
        h.push(header(H_INPUT_TIMESTAMP, &ts.to_string()));
    }
    h
}

/// The input value, unvalidated, to the final and the audit topic: the same
/// number of outputs per record as validation produces (bench only, never
/// framed: it measures moving bytes, not shaping them).
pub fn passthrough(input: &Consumed<'_>, topics: &Topics) -> Vec<Output> {
    let headers = input_headers(input);
    [
        (OutputRole::Final, &topics.final_),
        (OutputRole::Audit, &topics.audit),
    ]
    .into_iter()
    .map(|(role, topic)| Output {
        role,
        topic: topic.clone(),
        key: input.key.map(<[u8]>::to_vec),
        payload: input.payload.map(<[u8]>::to_vec),
        headers: headers.clone(),
    })
    .collect()
}

/// Shapes the outputs of one validated record: its terminal record (final,
/// retry or dead letter) first, then its audit row.
pub fn outputs_for(
    input: &Consumed<'_>,
    outcome: Outcome,
    topics: &Topics,
    schema_ids: &OutputSchemaIds,
    propagate: &[String],
) -> Vec<Output> {
    let original_key = input.key.map(<[u8]>::to_vec);
    let key = outcome
        .request_id
        .as_ref()
        .map(|r| r.as_bytes().to_vec())
        .or_else(|| original_key.clone());
    let coordinates = input_headers(input);
    let headers = output_headers(input, coordinates.clone(), propagate);
    let terminal = match outcome.terminal {
        Terminal::Final(b) => Output {
            role: OutputRole::Final,
            topic: topics.final_.clone(),
            key: key.clone(),
            payload: Some(value(OutputRole::Final, b, schema_ids)),
            headers: headers.clone(),
        },
        Terminal::Retry(b) => Output {
            role: OutputRole::Retry,
            topic: topics.retry.clone(),
            key: key.clone(),
            payload: Some(value(OutputRole::Retry, b, schema_ids)),
            headers: headers.clone(),
        },
        Terminal::DeadLetter(d) => Output {
            role: OutputRole::DeadLetter,
            topic: topics.dead_letter.clone(),
            key: original_key,
            // Exactly what the core decided: the input bytes when they fit
            // the output limit, its bounded summary when not.
            payload: match d.value {
                DeadLetterValue::Original => input.payload.map(<[u8]>::to_vec),
                DeadLetterValue::Bounded(b) => Some(b),
            },
            headers: dead_letter_headers(
                input.headers,
                &coordinates,
                d.kind.as_str(),
                &d.detail,
                input.timestamp_ms,
            ),
        },
    };
    let audit = Output {
        role: OutputRole::Audit,
        topic: topics.audit.clone(),
        key,
        payload: Some(value(OutputRole::Audit, outcome.audit, schema_ids)),
        headers,
    };
    vec![terminal, audit]
}

/// A seal of input partition (`input_topic`, `partition`) to the audit topic.
/// Keyed `<input topic>/<partition>`, so every seal of one chain lands in one
/// audit partition, in the order it was sent; headers: the input topic and
/// partition, and [`H_SEAL`] with the seal's sequence number. Framed as the
/// audit rows are: the audit topic's one schema id covers both.
pub fn seal_output(
    input_topic: &str,
    partition: i32,
    seq: u64,
    seal: Vec<u8>,
    topics: &Topics,
    schema_ids: &OutputSchemaIds,
) -> Output {
    Output {
        role: OutputRole::Audit,
        topic: topics.audit.clone(),
        key: Some(format!("{input_topic}/{partition}").into_bytes()),
        payload: Some(value(OutputRole::Audit, seal, schema_ids)),
        headers: vec![
            header(H_INPUT_TOPIC, input_topic),
            header(H_INPUT_PARTITION, &partition.to_string()),
            header(H_SEAL, &seq.to_string()),
        ],
    }
}

/// What takes the place of an output refused as too large.
#[derive(Debug)]
pub struct StandIn {
    /// Published instead of the refused output.
    pub output: Output,
    /// A refused terminal record only: the audit row of its stand-in dead
    /// letter, published instead of the record's own audit row (which
    /// describes the terminal record that was refused), so the audit row
    /// says what the record became.
    pub audit: Option<Output>,
}

/// The bounded stand-in for `out`, refused by the producer or broker as too
/// large ([`crate::core::process::oversize_dead_letter`]). A refused audit row
/// becomes a bounded dead-letter audit row; a refused terminal record becomes
/// a bounded dead letter, with the audit row that goes with it. Either way
/// the record keeps exactly one terminal record and one audit row. Only the
/// input coordinates are kept from the headers (the original ones may be
/// what did not fit), and the key is the request id. The refused value is
/// described as it was sent (length, SHA-256 and preview of its bytes, a
/// Schema Registry header included, as an input record's dead letter
/// describes the record as received); the stand-in audit row is framed as
/// every audit row, the stand-in dead letter never.
pub fn oversize_replacement(
    out: &Output,
    input: &Consumed<'_>,
    request_id: Option<&str>,
    settings: &CoreSettings,
    topics: &Topics,
    schema_ids: &OutputSchemaIds,
    now_nanos: i64,
) -> StandIn {
    let value_len = out.payload.as_ref().map_or(0, Vec::len);
    let detail = format!(
        "the {} output to {} ({value_len} bytes, key {} bytes) was refused as too large (MSG_SIZE_TOO_LARGE); value, length and SHA-256 here are of that output",
        out.role.as_str(),
        out.topic,
        out.key.as_ref().map_or(0, Vec::len),
    );
    let o = crate::core::process::oversize_dead_letter(
        out.payload.as_deref(),
        &input.meta(),
        now_nanos,
        settings,
        request_id,
        detail,
    );
    let mut headers: Vec<OutHeader> = out
        .headers
        .iter()
        .filter(|(k, _)| {
            [
                H_INPUT_TOPIC,
                H_INPUT_PARTITION,
                H_INPUT_OFFSET,
                H_INPUT_TIMESTAMP,
            ]
            .contains(&k.as_str())
        })
        .cloned()
        .collect();
    let key = request_id.map(|r| r.as_bytes().to_vec());
    // An audit row carries only the input topic, partition and offset.
    let row_headers = || -> Vec<OutHeader> {
        headers
            .iter()
            .filter(|(k, _)| k != H_INPUT_TIMESTAMP)
            .cloned()
            .collect()
    };
    match (out.role, o.terminal) {
        (OutputRole::Audit, _) => StandIn {
            output: Output {
                role: OutputRole::Audit,
                topic: out.topic.clone(),
                key,
                payload: Some(value(OutputRole::Audit, o.audit, schema_ids)),
                headers: row_headers(),
            },
            audit: None,
        },
        (_, Terminal::DeadLetter(d)) => {
            let audit = Output {
                role: OutputRole::Audit,
                topic: topics.audit.clone(),
                key: key.clone(),
                payload: Some(value(OutputRole::Audit, o.audit, schema_ids)),
                headers: row_headers(),
            };
            headers.push(header(H_ERROR_KIND, d.kind.as_str()));
            headers.push(header(H_ERROR_DETAIL, &d.detail));
            StandIn {
                output: Output {
                    role: OutputRole::DeadLetter,
                    topic: topics.dead_letter.clone(),
                    key,
                    payload: match d.value {
                        DeadLetterValue::Bounded(b) => Some(b),
                        // oversize_dead_letter always bounds; keep the type total.
                        DeadLetterValue::Original => None,
                    },
                    headers,
                },
                audit: Some(audit),
            }
        }
        // oversize_dead_letter always returns a dead letter.
        (_, _) => StandIn {
            output: out.clone(),
            audit: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{OutcomeKind, process};

    fn topics() -> Topics {
        Topics {
            input: "answers".into(),
            final_: "final".into(),
            retry: "retry".into(),
            audit: "audit".into(),
            dead_letter: "dlq".into(),
        }
    }

    fn input<'a>(payload: &'a [u8], headers: &'a [(&'a str, Option<&'a [u8]>)]) -> Consumed<'a> {
        Consumed {
            topic: "answers",
            partition: 2,
            offset: 41,
            key: Some(b"k-orig"),
            payload: Some(payload),
            timestamp_ms: Some(1_700_000_000_000),
            headers,
        }
    }

    fn text(v: Option<&[u8]>) -> Option<&str> {
        v.map(|b| std::str::from_utf8(b).unwrap())
    }

    fn run(payload: &[u8]) -> (Consumed<'_>, Outcome) {
        let i = input(payload, &[]);
        let o = process(
            Some(payload),
            &i.meta(),
            1_700_000_000_000_000_000,
            &CoreSettings::default(),
        );
        (i, o)
    }

    #[test]
    fn every_output_carries_the_input_coordinates() {
        let (i, o) = run(b"not json");
        for out in outputs_for(&i, o, &topics(), &OutputSchemaIds::default(), &[])
            .iter()
            .chain(&passthrough(&i, &topics()))
        {
            assert_eq!(text(out.header(H_INPUT_TOPIC)), Some("answers"));
            assert_eq!(text(out.header(H_INPUT_PARTITION)), Some("2"));
            assert_eq!(text(out.header(H_INPUT_OFFSET)), Some("41"));
        }
    }

    #[test]
    fn undecodable_record_becomes_a_dead_letter_with_its_own_key_and_bytes() {
        let (i, o) = run(b"not json");
        assert_eq!(o.kind, OutcomeKind::DeadLetter);
        let outs = outputs_for(&i, o, &topics(), &OutputSchemaIds::default(), &[]);
        let roles: Vec<OutputRole> = outs.iter().map(|o| o.role).collect();
        assert_eq!(roles, [OutputRole::DeadLetter, OutputRole::Audit]);
        let dl = &outs[0];
        assert_eq!(dl.topic, "dlq");
        assert_eq!(dl.key.as_deref(), Some(&b"k-orig"[..]));
        assert_eq!(dl.payload.as_deref(), Some(&b"not json"[..]));
        assert!(dl.header(H_ERROR_KIND).is_some());
        assert!(dl.header(H_ERROR_DETAIL).is_some_and(|d| !d.is_empty()));
        assert_eq!(text(dl.header(H_INPUT_TIMESTAMP)), Some("1700000000000"));
        assert_eq!(outs[1].topic, "audit");
        assert!(outs[1].header(H_ERROR_KIND).is_none());
    }

    #[test]
    fn a_clean_answer_goes_to_final_and_audit_keyed_by_request_id() {
        let bytes = crate::sample::record(0, crate::sample::Kind::Clean, 400);
        let (i, o) = run(&bytes);
        assert_eq!(o.kind, OutcomeKind::Accepted);
        let request_id = o.request_id.clone().unwrap();
        let outs = outputs_for(&i, o, &topics(), &OutputSchemaIds::default(), &[]);
        let got: Vec<(OutputRole, &str)> =
            outs.iter().map(|o| (o.role, o.topic.as_str())).collect();
        assert_eq!(
            got,
            [(OutputRole::Final, "final"), (OutputRole::Audit, "audit")]
        );
        for out in &outs {
            assert_eq!(out.key.as_deref(), Some(request_id.as_bytes()));
            assert!(out.header(H_ERROR_KIND).is_none());
            assert_eq!(out.headers.len(), 3, "only the input coordinates");
        }
    }

    #[test]
    fn passthrough_copies_key_and_value_to_final_and_audit() {
        let i = input(b"raw", &[]);
        let outs = passthrough(&i, &topics());
        type Row<'a> = (&'a str, Option<&'a [u8]>, Option<&'a [u8]>);
        let got: Vec<Row<'_>> = outs
            .iter()
            .map(|o| (o.topic.as_str(), o.key.as_deref(), o.payload.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("final", Some(&b"k-orig"[..]), Some(&b"raw"[..])),
                ("audit", Some(&b"k-orig"[..]), Some(&b"raw"[..])),
            ]
        );
    }

    #[test]
    fn oversize_terminal_becomes_a_bounded_dead_letter_keyed_by_request_id() {
        let i = input(b"x", &[("trace-id", Some(b"t"))]);
        let big = Output {
            role: OutputRole::Final,
            topic: "final".into(),
            key: Some(b"req-1".to_vec()),
            payload: Some(vec![b'a'; 10_000]),
            headers: [
                input_headers(&i),
                vec![("trace-id".into(), Some(b"t".to_vec()))],
            ]
            .concat(),
        };
        let StandIn { output: r, audit } = oversize_replacement(
            &big,
            &i,
            Some("req-1"),
            &CoreSettings::default(),
            &topics(),
            &OutputSchemaIds::default(),
            0,
        );
        assert_eq!(r.role, OutputRole::DeadLetter);
        assert_eq!(r.topic, "dlq");
        assert_eq!(r.key.as_deref(), Some(&b"req-1"[..]));
        assert_eq!(text(r.header(H_ERROR_KIND)), Some("too_large"));
        assert!(r.header("trace-id").is_none(), "only coordinates are kept");
        assert_eq!(text(r.header(H_INPUT_OFFSET)), Some("41"));
        assert!(r.payload.as_ref().is_some_and(|p| p.len() < 10_000));
        // The record's audit row says what the record became.
        let audit = audit.expect("a refused terminal record comes with its audit row");
        assert_eq!(
            (audit.role, audit.topic.as_str()),
            (OutputRole::Audit, "audit")
        );
        assert_eq!(audit.key.as_deref(), Some(&b"req-1"[..]));
        assert_eq!(audit.headers, input_headers(&i));
        let row: serde_json::Value =
            serde_json::from_slice(audit.payload.as_deref().unwrap()).unwrap();
        assert_eq!(row["outcome"], "dead_letter", "{row}");
        assert_eq!(row["errors"][0]["kind"], "too_large", "{row}");
        assert!(row.to_string().contains("the final output"), "{row}");
        let audit = Output {
            role: OutputRole::Audit,
            topic: "audit".into(),
            ..big
        };
        let r = oversize_replacement(
            &audit,
            &i,
            Some("req-1"),
            &CoreSettings::default(),
            &topics(),
            &OutputSchemaIds::default(),
            0,
        );
        assert!(r.audit.is_none(), "the stand-in is the audit row");
        let r = r.output;
        assert_eq!((r.role, r.topic.as_str()), (OutputRole::Audit, "audit"));
        assert!(r.header(H_ERROR_KIND).is_none());
    }

    /// Ids 101 (final), 103 (audit); the retry topic has none.
    fn ids() -> OutputSchemaIds {
        OutputSchemaIds {
            final_: Some(101),
            retry: None,
            audit: Some(103),
        }
    }

    /// The outputs of `payload` plain and with [`ids`].
    fn plain_and_framed(payload: &[u8]) -> (Vec<Output>, Vec<Output>) {
        let (i, o) = run(payload);
        let plain = outputs_for(&i, o.clone(), &topics(), &OutputSchemaIds::default(), &[]);
        (plain, outputs_for(&i, o, &topics(), &ids(), &[]))
    }

    #[test]
    fn a_topic_with_a_schema_id_gets_the_header_then_the_same_json() {
        let clean = crate::sample::record(0, crate::sample::Kind::Clean, 400);
        let (plain, framed) = plain_and_framed(&clean);
        assert_eq!(framed[0].role, OutputRole::Final);
        let value = framed[0].payload.as_deref().unwrap();
        assert_eq!(value[..5], [0x00, 0x00, 0x00, 0x00, 0x65]);
        assert_eq!(&value[5..], plain[0].payload.as_deref().unwrap());
        assert_eq!(framed[1].role, OutputRole::Audit);
        let row = framed[1].payload.as_deref().unwrap();
        assert_eq!(row[..5], [0x00, 0x00, 0x00, 0x00, 0x67]);
        assert_eq!(&row[5..], plain[1].payload.as_deref().unwrap());
        for (p, f) in plain.iter().zip(&framed) {
            assert_eq!(f.json_text(), p.payload.as_deref().unwrap(), "{:?}", f.role);
            assert_eq!((&f.key, &f.headers), (&p.key, &p.headers));
        }
    }

    #[test]
    fn a_topic_without_a_schema_id_and_dead_letters_stay_plain() {
        let retry = crate::sample::record(1, crate::sample::Kind::OutOfRange, 400);
        let (plain, framed) = plain_and_framed(&retry);
        assert_eq!(framed[0].role, OutputRole::Retry);
        assert_eq!(framed[0].payload, plain[0].payload, "retry has no id");
        // A dead letter is the record as received, even one that arrived
        // framed, and never gets a header of groundgate's.
        for record in [&b"not json"[..], b"\x00\x00\x00\x00\x2anot json"] {
            let (plain, framed) = plain_and_framed(record);
            assert_eq!(framed[0].role, OutputRole::DeadLetter);
            assert_eq!(framed[0].payload.as_deref(), Some(record));
            assert_eq!(plain[0].payload, framed[0].payload);
            assert_eq!(framed[0].json_text(), record);
        }
        let all = OutputSchemaIds {
            final_: Some(1),
            retry: Some(2),
            audit: Some(3),
        };
        assert_eq!(all.of(OutputRole::DeadLetter), None);
    }

    #[test]
    fn seals_are_framed_as_the_audit_topic_s_rows() {
        let seal = br#"{"type":"groundgate.seal/v1"}"#.to_vec();
        let plain = seal_output(
            "answers",
            0,
            3,
            seal.clone(),
            &topics(),
            &OutputSchemaIds::default(),
        );
        assert_eq!(plain.payload.as_deref(), Some(&seal[..]));
        let framed = seal_output("answers", 0, 3, seal.clone(), &topics(), &ids());
        assert!(framed.is_seal());
        assert_eq!(
            framed.payload.as_deref(),
            Some(&[&[0, 0, 0, 0, 103][..], &seal].concat()[..])
        );
        assert_eq!(framed.json_text(), &seal[..]);
    }

    #[test]
    fn stand_ins_for_a_refused_framed_output_are_framed_as_their_topic() {
        let i = input(b"x", &[]);
        let json = vec![b'a'; 10_000];
        let refused = Output {
            role: OutputRole::Final,
            topic: "final".into(),
            key: Some(b"req-1".to_vec()),
            payload: Some(framed(101, &json)),
            headers: input_headers(&i),
        };
        let stand_in = |out: &Output| {
            oversize_replacement(
                out,
                &i,
                Some("req-1"),
                &CoreSettings::default(),
                &topics(),
                &ids(),
                0,
            )
        };
        let StandIn { output, audit } = stand_in(&refused);
        assert_eq!(output.role, OutputRole::DeadLetter);
        let dead: serde_json::Value =
            serde_json::from_slice(output.payload.as_deref().unwrap()).unwrap();
        // The refused value as it was sent: the header counts.
        assert_eq!(dead["length"], 10_005, "{dead}");
        assert!(
            text(output.header(H_ERROR_DETAIL))
                .unwrap()
                .contains("(10005 bytes"),
            "{:?}",
            text(output.header(H_ERROR_DETAIL))
        );
        let audit = audit.unwrap();
        let row = audit.payload.as_deref().unwrap();
        assert_eq!(row[..5], [0, 0, 0, 0, 103]);
        let row: serde_json::Value = serde_json::from_slice(&row[5..]).unwrap();
        assert_eq!(row["outcome"], "dead_letter");
        // A refused audit row's stand-in is an audit row, framed.
        let refused_row = Output {
            role: OutputRole::Audit,
            topic: "audit".into(),
            payload: Some(framed(103, &json)),
            ..refused
        };
        let r = stand_in(&refused_row).output;
        assert_eq!(r.role, OutputRole::Audit);
        assert_eq!(r.payload.as_deref().unwrap()[..5], [0, 0, 0, 0, 103]);
        assert!(serde_json::from_slice::<serde_json::Value>(r.json_text()).is_ok());
    }

    #[test]
    fn incoming_groundgate_headers_cannot_spoof_ours() {
        let original: [(&str, Option<&[u8]>); 3] = [
            ("trace-id", Some(b"t-1")),
            (H_ERROR_KIND, Some(b"schema")),
            (H_INPUT_OFFSET, Some(b"999")),
        ];
        let input = vec![
            header(H_INPUT_TOPIC, "answers"),
            header(H_INPUT_OFFSET, "7"),
        ];
        let h = dead_letter_headers(&original, &input, "too_large", "big", Some(5));
        let mut keys: Vec<&str> = h
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| k.starts_with(OWN_HEADER_PREFIX))
            .collect();
        keys.sort_unstable();
        let n = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), n, "one value per groundgate.* header: {h:?}");
        let get = |k: &str| {
            h.iter()
                .find(|(key, _)| key == k)
                .and_then(|(_, v)| text(v.as_deref()))
        };
        assert_eq!(get(H_ERROR_KIND), Some("too_large"));
        assert_eq!(get(H_INPUT_OFFSET), Some("7"));
        assert_eq!(get(H_INPUT_TIMESTAMP), Some("5"));
        assert_eq!(get("original.groundgate.error.kind"), Some("schema"));
        assert_eq!(get("original.groundgate.input.offset"), Some("999"));
        assert_eq!(get("trace-id"), Some("t-1"));
    }

    #[test]
    fn the_listed_input_headers_go_onto_the_final_retry_and_audit_records() {
        let big = vec![b'x'; MAX_PROPAGATED_VALUE_BYTES + 1];
        let headers: [(&str, Option<&[u8]>); 6] = [
            (
                "TraceParent",
                Some(b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            ),
            ("tracestate", Some(b"congo=t61rcWkgMzE")),
            ("tracestate", None),
            ("x-tenant", Some(b"bank-1")),
            ("traceparent", Some(&big)),
            (H_INPUT_OFFSET, Some(b"999")),
        ];
        let propagate = ["traceparent".to_string(), "tracestate".to_string()];
        let carried = |out: &Output| -> Vec<(String, Option<Vec<u8>>)> {
            out.headers
                .iter()
                .filter(|(k, _)| !k.starts_with(OWN_HEADER_PREFIX))
                .cloned()
                .collect()
        };
        let want = vec![
            (
                "TraceParent".to_string(),
                Some(b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_vec()),
            ),
            (
                "tracestate".to_string(),
                Some(b"congo=t61rcWkgMzE".to_vec()),
            ),
            ("tracestate".to_string(), None),
        ];
        for kind in [crate::sample::Kind::Clean, crate::sample::Kind::OutOfRange] {
            let bytes = crate::sample::record(0, kind, 400);
            let i = input(&bytes, &headers);
            let o = process(Some(&bytes), &i.meta(), 1, &CoreSettings::default());
            let outs = outputs_for(&i, o, &topics(), &OutputSchemaIds::default(), &propagate);
            assert_ne!(outs[0].role, OutputRole::DeadLetter);
            for out in &outs {
                assert_eq!(carried(out), want, "{:?}", out.role);
                // Ours stay ours: one input offset, the true one.
                let offsets: Vec<_> = out
                    .headers
                    .iter()
                    .filter(|(k, _)| k == H_INPUT_OFFSET)
                    .collect();
                assert_eq!(offsets.len(), 1);
                assert_eq!(text(out.header(H_INPUT_OFFSET)), Some("41"));
            }
            // None listed, none carried.
            let o = process(Some(&bytes), &i.meta(), 1, &CoreSettings::default());
            for out in outputs_for(&i, o, &topics(), &OutputSchemaIds::default(), &[]) {
                assert_eq!(carried(&out), Vec::new());
            }
        }
        // A dead letter keeps every header of its input.
        let i = input(b"not json", &headers);
        let o = process(Some(b"not json"), &i.meta(), 1, &CoreSettings::default());
        let outs = outputs_for(&i, o, &topics(), &OutputSchemaIds::default(), &propagate);
        assert_eq!(outs[0].role, OutputRole::DeadLetter);
        assert_eq!(text(outs[0].header("x-tenant")), Some("bank-1"));
        assert_eq!(carried(&outs[1]), want, "the dead letter's audit row");
    }

    #[test]
    fn copied_headers_stay_within_their_share_of_the_message() {
        let value = vec![b'v'; MAX_PROPAGATED_VALUE_BYTES];
        let headers: Vec<(&str, Option<&[u8]>)> =
            (0..10).map(|_| ("traceparent", Some(&value[..]))).collect();
        let i = input(b"{}", &headers);
        let h = output_headers(&i, Vec::new(), &["traceparent".to_string()]);
        let bytes: usize = h
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
            .sum();
        assert_eq!(h.len(), 3, "three of 8 KiB and their names fit in 32 KiB");
        assert!(bytes <= MAX_PROPAGATED_BYTES, "{bytes}");
    }
}
