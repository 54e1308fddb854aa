//! `process`: one input record in, exactly one terminal record and exactly
//! one audit row out. The Kafka worker and `groundgate check` both call this
//! function, which is why they agree on every verdict.
//!
//! Bounded: no output it builds is larger than `max_output_bytes`. Lists of
//! findings are capped (the rest counted in one closing entry), and a record
//! whose outputs still would not fit becomes a `too_large` dead letter whose
//! value is a bounded summary (preview, length, SHA-256), so no single record
//! can produce a message the producer refuses forever.
//!
//! Pure: the clock arrives as `now_nanos`, settings as an argument; no I/O.
//!
//! Total: a defect that panics while a record is judged does not escape.
//! The record becomes an `internal` dead letter (kept whole, to be replayed
//! once fixed) with its audit row, and the thread's grounding memo and
//! cache start afresh, so one record can never stop a stream or taint the
//! verdicts after it.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use super::citation::{self, WarningKind};
use super::decision::{self, Attempt, Verdict};
use super::encode;
use super::grounding::{self, Grounding};
use super::policy::{self, PolicyInput};
use super::pseudonym::{self, PseudonymField};
use super::settings::{CoreSettings, PolicySettings};
use super::types::{
    Action, DeadLetter, DeadLetterKind, DeadLetterValue, Finding, FindingKind, Outcome,
    OutcomeKind, RecordMeta, Summary, Terminal,
};
use super::wire::{
    self, AuditRow, BoundedDeadLetter, CitationOut, DecodeFailure, Envelope, InputCoordinates,
    InputRecord, KindDetail, Payload, RetryRequest, SourceEcho, SourceFlat, Usage, Validation,
};
use super::wire::{ClaimOut, GroundingAudit, GroundingOut};

/// Turns one input record into exactly one terminal output and one audit row.
///
/// `value` is the record value as received (`None` for a tombstone);
/// `now_nanos` is the processing time in epoch nanoseconds, stamped on the
/// audit row.
pub fn process(
    value: Option<&[u8]>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
) -> Outcome {
    contained(value, meta, now_nanos, settings, || {
        decode_and_judge(value, meta, now_nanos, settings)
    })
}

/// Runs `judge_record`; if it panics, the record's `internal` dead letter.
fn contained(
    value: Option<&[u8]>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
    judge_record: impl FnOnce() -> Outcome,
) -> Outcome {
    // Nothing the closure borrows is read after a panic but the record's
    // bytes, which it never writes; the per-thread state it may have left
    // half-updated is dropped below.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(judge_record)) {
        Ok(outcome) => outcome,
        Err(cause) => {
            grounding::forget_thread_state();
            internal_dead_letter(value, meta, now_nanos, settings, panic_text(&*cause))
        }
    }
}

/// What a panic said, when it said it with a string.
pub(crate) fn panic_text(cause: &(dyn std::any::Any + Send)) -> &str {
    cause
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| cause.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// The dead letter of a record whose judging failed inside groundgate.
fn internal_dead_letter(
    value: Option<&[u8]>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
    cause: &str,
) -> Outcome {
    let raw = value.unwrap_or_default();
    let request_id = std::str::from_utf8(wire::json_bytes(raw, &settings.value_framing))
        .ok()
        .and_then(wire::recover_request_id);
    // A panic's message can quote any part of the record. Where personal
    // fields are kept out of the trail as pseudonyms, it stays out of the
    // detail (which the audit row carries) and is found in the log only.
    let said = match settings.pseudonyms {
        Some(_) => "it panicked; its message is in groundgate's log only, as it may quote a pseudonymised field".to_string(),
        None => format!("it panicked: {cause}"),
    };
    let detail = format!(
        "groundgate failed while judging this record, a defect to report ({said}); \
         the record is kept here as received, to be produced again once groundgate is fixed"
    );
    let detail = bounded(&detail, MAX_DETAIL_BYTES).into_owned();
    dead_letter_outcome(
        DeadLetterKind::Internal,
        detail,
        raw,
        request_id,
        meta,
        now_nanos,
        settings,
    )
}

fn decode_and_judge(
    value: Option<&[u8]>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
) -> Outcome {
    match wire::decode(value, settings.max_record_bytes, &settings.value_framing) {
        Ok(rec) => {
            let outcome = judge(&rec, meta, now_nanos, settings);
            if fits(&outcome, settings.max_output_bytes) {
                return outcome;
            }
            // Rare: the answer's own outputs outgrow the limit (long
            // citation lists, structured payloads re-encoded as strings).
            // Rather than an output the producer would refuse forever, the
            // record becomes a bounded `too_large` dead letter.
            let sizes = output_sizes(&outcome);
            oversize_dead_letter(
                value,
                meta,
                now_nanos,
                settings,
                outcome.request_id.as_deref(),
                format!(
                    "the {} output would be {} bytes, larger than max_output_bytes = {}",
                    sizes.0, sizes.1, settings.max_output_bytes
                ),
            )
        }
        Err(failure) => dead_letter(
            failure,
            value.unwrap_or_default(),
            meta,
            now_nanos,
            settings,
        ),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Problems listed in a retry request (and its corrective prompt); the rest
/// are counted in one closing entry.
pub const MAX_LISTED_PROBLEMS: usize = 20;
/// Findings listed per list in an envelope, audit row or retry request; the
/// rest are counted in one closing entry.
pub const MAX_LISTED_FINDINGS: usize = 100;
/// Bytes of a dead-letter detail kept (serde's messages can quote a whole value).
pub const MAX_DETAIL_BYTES: usize = 512;
/// Bytes of a too-large value shown in its bounded dead letter.
pub const PREVIEW_BYTES: usize = 512;
/// Smallest `max_output_bytes` the configuration accepts: every bounded
/// output (dead letter and its audit row) is far below it.
pub const MIN_OUTPUT_BYTES: usize = 64 << 10;

/// Claims listed in the envelope's `grounding.claims` (the first ones, in
/// answer order); `grounding.score`, the findings and the audit counts cover
/// every claim. Keeps a many-sentence answer's envelope within
/// `max_output_bytes` (~100 bytes a claim).
pub const MAX_ENVELOPE_CLAIMS: usize = 1000;

/// At most `max` findings, then one entry counting the rest (with the kind
/// of the first one left out, so the list keeps the closed vocabulary).
fn listed(findings: &[Finding], max: usize) -> Cow<'_, [Finding]> {
    if findings.len() <= max {
        return Cow::Borrowed(findings);
    }
    let mut v = findings[..max].to_vec();
    v.push(Finding::new(
        findings[max].kind,
        format!("… and {} more not listed", findings.len() - max),
    ));
    Cow::Owned(v)
}

/// Cuts `s` to at most `max` bytes on a char boundary, marking the cut.
pub(crate) fn bounded(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let end = s.floor_char_boundary(max);
    Cow::Owned(format!("{}… ({} bytes in all)", &s[..end], s.len()))
}

fn output_sizes(o: &Outcome) -> (&'static str, usize) {
    let terminal = match &o.terminal {
        Terminal::Final(b) => ("final", b.len()),
        Terminal::Retry(b) => ("retry", b.len()),
        Terminal::DeadLetter(d) => (
            "dead-letter",
            match &d.value {
                DeadLetterValue::Bounded(b) => b.len(),
                DeadLetterValue::Original => 0,
            },
        ),
    };
    if terminal.1 >= o.audit.len() {
        terminal
    } else {
        ("audit", o.audit.len())
    }
}

fn fits(o: &Outcome, max: usize) -> bool {
    let terminal = match &o.terminal {
        Terminal::Final(b) | Terminal::Retry(b) => b.len(),
        Terminal::DeadLetter(d) => match &d.value {
            DeadLetterValue::Bounded(b) => b.len(),
            // Chosen only when the original fits.
            DeadLetterValue::Original => 0,
        },
    };
    terminal <= max && o.audit.len() <= max
}

fn judge(
    rec: &InputRecord<'_>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
) -> Outcome {
    let attempt = if rec.attempt == 0 {
        Attempt::First
    } else {
        Attempt::Retry
    };
    let answer: &str = &rec.answer;
    let (mode, fallback) =
        decision::effective_mode(rec.mode, &rec.provider, &settings.non_citing_providers);

    let parsed = citation::parse(answer, rec.sources.len());
    let citation_findings: Vec<Finding> = parsed
        .warnings
        .iter()
        .map(|w| {
            let kind = match w.kind {
                WarningKind::Malformed => FindingKind::Malformed,
                WarningKind::OutOfRange => FindingKind::OutOfRange,
            };
            Finding::new(kind, w.detail.clone())
        })
        .collect();
    let payloads: Vec<Payload<'_>> = rec
        .sources
        .iter()
        .map(|s| wire::payload_text(s.payload))
        .collect();
    let grounding = if settings.grounding.enabled {
        let texts: Vec<&str> = payloads.iter().map(|p| p.text.as_ref()).collect();
        grounding::analyze(answer, &parsed.citations, &texts, &settings.grounding)
    } else {
        Grounding::default()
    };
    let markers: Vec<std::ops::Range<usize>> = if settings.policy.forbidden_terms.is_empty() {
        Vec::new()
    } else {
        parsed.citations.iter().map(|c| c.span.clone()).collect()
    };
    let mut policy_findings = policy::check(
        &PolicyInput {
            answer,
            confidence: rec.confidence,
            provenance: rec.provenance.as_deref(),
            markers: &markers,
        },
        &settings.policy,
    );
    policy_findings.extend(grounding::findings(&grounding, &settings.grounding));
    let (prior, bookkeeping) = prior_usage(rec, attempt, &settings.policy);
    policy_findings.extend(bookkeeping);
    let d = decision::decide(mode, attempt, fallback, citation_findings, policy_findings);

    let kind = match d.verdict {
        Verdict::Accept => OutcomeKind::Accepted,
        Verdict::Retry => OutcomeKind::Retry,
        Verdict::Reject => OutcomeKind::Rejected,
    };
    let own_usage = rec.usage();
    // Both attempts together: what the envelope reports. `prior` counts only
    // on a retry (`prior_usage`), and a retry request is only built for a
    // first attempt, so its `prior` is that attempt's own usage.
    let total_usage = prior.map_or(own_usage, |prior| own_usage.plus(prior));
    // The reference meaning: the citation validator accepted the answer, i.e.
    // no citation finding blocks it (a policy verdict does not count here).
    let citations_ok = !d
        .errors
        .iter()
        .any(|f| matches!(f.kind, FindingKind::Malformed | FindingKind::OutOfRange));
    let errors_listed = listed(&d.errors, MAX_LISTED_FINDINGS);
    let warnings_listed = listed(&d.warnings, MAX_LISTED_FINDINGS);

    let terminal = match d.verdict {
        Verdict::Accept | Verdict::Reject => {
            let mut citations: Vec<CitationOut<'_>> = parsed
                .citations
                .iter()
                .filter_map(|c| {
                    rec.sources.get(c.source_index()).map(|s| CitationOut {
                        marker: c.marker,
                        urn: &s.urn,
                    })
                })
                .collect();
            // `sort_by_key` is stable: equal markers keep input order.
            citations.sort_by_key(|c| c.marker);
            let env = Envelope {
                answer,
                cache_hit: rec.cache_hit,
                citations,
                completion_tokens: total_usage.completion_tokens,
                cost_usd: total_usage.cost_usd,
                grounding: GroundingOut {
                    claims: grounding
                        .claims
                        .iter()
                        .take(MAX_ENVELOPE_CLAIMS)
                        .map(|c| ClaimOut {
                            markers: &c.markers,
                            span: [c.span.start, c.span.end],
                            support: c.support,
                            unsupported_terms: &c.unsupported_terms,
                        })
                        .collect(),
                    score: grounding.score,
                },
                mode,
                model: &rec.model,
                prompt_tokens: total_usage.prompt_tokens,
                provider: &rec.provider,
                request_id: &rec.request_id,
                retry_count: attempt.retry_count(),
                sources_flat: rec
                    .sources
                    .iter()
                    .zip(&payloads)
                    .map(|(s, p)| SourceFlat {
                        payload: &p.text,
                        urn: &s.urn,
                    })
                    .collect(),
                validation: Validation {
                    errors: &errors_listed,
                    ok: d.verdict == Verdict::Accept,
                    warnings: &warnings_listed,
                },
            };
            Terminal::Final(encode::envelope(&env))
        }
        Verdict::Retry => {
            let problems = listed(&d.errors, MAX_LISTED_PROBLEMS);
            let mut prompt = decision::corrective_prompt(rec.sources.len(), &d.errors);
            let grounding_problem = d.errors.iter().any(|f| {
                matches!(
                    f.kind,
                    FindingKind::UnsupportedClaim | FindingKind::UncitedClaim
                )
            });
            if grounding_problem
                && let Some(extra) = grounding::prompt_addendum(
                    answer,
                    &grounding,
                    settings.grounding.min_support,
                    settings.grounding.uncited_claim.is_some(),
                )
            {
                prompt.push_str(&extra);
            }
            let req = RetryRequest {
                attempt: 1,
                mode,
                model: &rec.model,
                prior: own_usage,
                problems: &problems,
                prompt: &prompt,
                provider: &rec.provider,
                question: &rec.question,
                request_id: &rec.request_id,
                role: &rec.role,
                sources: rec
                    .sources
                    .iter()
                    .zip(&payloads)
                    .map(|(s, p)| SourceEcho {
                        payload: p,
                        urn: &s.urn,
                    })
                    .collect(),
                tenant: &rec.tenant,
                user: &rec.user,
                warnings: &warnings_listed,
            };
            Terminal::Retry(encode::retry_request(&req))
        }
    };

    let hash = sha256_hex(answer.as_bytes());
    let personal = |field, value| pseudonym::written(settings.pseudonyms.as_ref(), field, value);
    let question = personal(PseudonymField::Question, &rec.question);
    let tenant = personal(PseudonymField::Tenant, &rec.tenant);
    let user = personal(PseudonymField::User, &rec.user);
    let sources_urns: Vec<Cow<'_, str>> = rec
        .sources
        .iter()
        .map(|s| personal(PseudonymField::SourcesUrns, &s.urn))
        .collect();
    let audit = AuditRow {
        answer: settings.include_answer.then_some(answer),
        answer_hash: &hash,
        cache_hit: rec.cache_hit,
        citations: parsed.citations.iter().map(|c| c.marker).collect(),
        completion_tokens: own_usage.completion_tokens,
        cost_usd: own_usage.cost_usd,
        errors: errors_listed.iter().map(KindDetail::from).collect(),
        grounding: GroundingAudit {
            claims: grounding.claims.len() as u64,
            cited_claims: grounding.cited_claims() as u64,
            score: grounding.score,
            unsupported_claims: grounding.unsupported_claims(settings.grounding.min_support) as u64,
        },
        input: coordinates(meta),
        mode: mode.as_str(),
        model: &rec.model,
        outcome: kind.as_str(),
        policy_version: &settings.policy_version,
        prompt_tokens: own_usage.prompt_tokens,
        provider: &rec.provider,
        question: &question,
        request_id: &rec.request_id,
        requested_mode: rec.mode.as_str(),
        retry_count: attempt.retry_count(),
        role: &rec.role,
        seed: rec.seed,
        sources_urns: sources_urns.iter().map(AsRef::as_ref).collect(),
        temperature: rec.temperature,
        tenant: &tenant,
        ts: now_nanos,
        user: &user,
        validation_ok: citations_ok,
        warnings: warnings_listed.iter().map(KindDetail::from).collect(),
    };

    Outcome {
        kind,
        request_id: Some(rec.request_id.to_string()),
        terminal,
        audit: encode::audit_row(&audit),
        summary: Summary {
            mode: Some(mode),
            attempt: attempt.retry_count(),
            findings: d.warnings.iter().chain(&d.errors).map(|f| f.kind).collect(),
            dead_letter: None,
            citations: parsed.citations.len(),
            provider: rec.provider.to_string(),
            model: rec.model.to_string(),
            prompt_tokens: own_usage.prompt_tokens,
            completion_tokens: own_usage.completion_tokens,
            cost_usd: own_usage.cost_usd,
            grounding_score: grounding.score,
        },
    }
}

/// The first attempt's usage to add to this one's, and the bookkeeping
/// finding when `prior` is missing on a retry or sent with a first answer:
/// the answer is judged all the same, its totals counting this attempt only.
fn prior_usage(
    rec: &InputRecord<'_>,
    attempt: Attempt,
    policy: &PolicySettings,
) -> (Option<Usage>, Option<(Finding, Action)>) {
    match (attempt, rec.prior) {
        (Attempt::Retry, None) => (
            None,
            Some((
                Finding::new(
                    FindingKind::PriorMissing,
                    "attempt 1 without prior (send back the `prior` of the retry request): the usage totals count this attempt only",
                ),
                policy.prior_missing,
            )),
        ),
        (Attempt::First, Some(_)) => (
            None,
            Some((
                Finding::new(
                    FindingKind::PriorUnexpected,
                    "prior sent with attempt 0 (only a retry has a prior attempt), ignored: the usage totals count this attempt only",
                ),
                policy.prior_unexpected,
            )),
        ),
        (_, prior) => (prior, None),
    }
}

fn coordinates<'a>(meta: &RecordMeta<'a>) -> InputCoordinates<'a> {
    InputCoordinates {
        offset: meta.offset,
        partition: meta.partition,
        topic: meta.topic,
    }
}

fn dead_letter(
    failure: DecodeFailure,
    raw: &[u8],
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
) -> Outcome {
    let DecodeFailure {
        dead_letter: DeadLetter { kind, detail, .. },
        request_id,
    } = failure;
    // Before the cut, which could leave a value's start without the end
    // that shows where it stops.
    let detail = match &settings.pseudonyms {
        Some(p) => p.without_values(&detail),
        None => Cow::Borrowed(detail.as_str()),
    };
    let detail = bounded(&detail, MAX_DETAIL_BYTES).into_owned();
    dead_letter_outcome(kind, detail, raw, request_id, meta, now_nanos, settings)
}

/// A `too_large` dead letter in bounded form: for a record whose outputs
/// cannot fit `max_output_bytes`, and for the shell when the broker refuses
/// an output as too large (`value` is then the refused output, `detail` says
/// so). Its value and its audit row fit the output limit whatever `value` is.
pub fn oversize_dead_letter(
    value: Option<&[u8]>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
    request_id: Option<&str>,
    detail: String,
) -> Outcome {
    let detail = bounded(&detail, MAX_DETAIL_BYTES).into_owned();
    let request_id = request_id.map(|r| bounded(r, wire::MAX_REQUEST_ID_BYTES).into_owned());
    dead_letter_outcome(
        DeadLetterKind::TooLarge,
        detail,
        value.unwrap_or_default(),
        request_id,
        meta,
        now_nanos,
        settings,
    )
}

/// A record too long to hold in memory (a `check` line past
/// `max_record_bytes`, read as a stream), known by its length, SHA-256 and
/// first bytes: the same bounded `too_large` dead letter and audit row as a
/// too-large record `process` sees whole.
pub fn too_large_summary(
    length: u64,
    sha256_hex: &str,
    preview: &[u8],
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
) -> Outcome {
    let detail = wire::too_large_detail(length, settings.max_record_bytes);
    let summary = ValueSummary {
        length,
        sha256: sha256_hex,
        preview: &preview[..preview.len().min(PREVIEW_BYTES)],
        original_fits: false,
    };
    build_dead_letter(
        DeadLetterKind::TooLarge,
        detail,
        &summary,
        None,
        meta,
        now_nanos,
        settings,
    )
}

/// What a dead letter needs to know about the value it stands for.
struct ValueSummary<'a> {
    length: u64,
    sha256: &'a str,
    preview: &'a [u8],
    /// The value may be forwarded as it is.
    original_fits: bool,
}

fn dead_letter_outcome(
    kind: DeadLetterKind,
    detail: String,
    raw: &[u8],
    request_id: Option<String>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
) -> Outcome {
    // The answer was never read; the audit hash covers the raw record bytes so
    // the dead letter can still be matched to what was received.
    let hash = sha256_hex(raw);
    let summary = ValueSummary {
        length: raw.len() as u64,
        sha256: &hash,
        preview: &raw[..raw.len().min(PREVIEW_BYTES)],
        // A too-large value is never forwarded whole, whatever the limit.
        original_fits: kind != DeadLetterKind::TooLarge && raw.len() <= settings.max_output_bytes,
    };
    build_dead_letter(
        kind, detail, &summary, request_id, meta, now_nanos, settings,
    )
}

fn build_dead_letter(
    kind: DeadLetterKind,
    detail: String,
    v: &ValueSummary<'_>,
    request_id: Option<String>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
) -> Outcome {
    let hash = v.sha256;
    let value = if v.original_fits {
        DeadLetterValue::Original
    } else {
        DeadLetterValue::Bounded(wire::to_bytes(&BoundedDeadLetter {
            detail: &detail,
            kind: kind.as_str(),
            length: v.length,
            preview: &String::from_utf8_lossy(v.preview),
            sha256: hash,
        }))
    };
    let audit = AuditRow {
        answer: None,
        answer_hash: hash,
        cache_hit: false,
        citations: Vec::new(),
        completion_tokens: 0,
        cost_usd: 0.0,
        errors: vec![KindDetail {
            detail: &detail,
            kind: kind.as_str(),
        }],
        grounding: GroundingAudit::default(),
        input: coordinates(meta),
        mode: "",
        model: "",
        outcome: OutcomeKind::DeadLetter.as_str(),
        policy_version: &settings.policy_version,
        prompt_tokens: 0,
        provider: "",
        question: "",
        request_id: request_id.as_deref().unwrap_or(""),
        requested_mode: "",
        retry_count: 0,
        role: "",
        seed: None,
        sources_urns: Vec::new(),
        temperature: None,
        tenant: "",
        ts: now_nanos,
        user: "",
        validation_ok: false,
        warnings: Vec::new(),
    };
    let audit = encode::audit_row(&audit);
    Outcome {
        kind: OutcomeKind::DeadLetter,
        request_id,
        terminal: Terminal::DeadLetter(DeadLetter {
            kind,
            detail,
            value,
        }),
        audit,
        summary: Summary {
            dead_letter: Some(kind),
            ..Summary::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::core::types::{Action, DeadLetterKind, Mode};

    const META: RecordMeta<'static> = RecordMeta {
        topic: "answers",
        partition: 3,
        offset: 42,
    };
    const NOW: i64 = 1_763_800_000_123_456_789;

    fn run(rec: &Value, settings: &CoreSettings) -> Outcome {
        process(Some(rec.to_string().as_bytes()), &META, NOW, settings)
    }

    fn terminal_json(o: &Outcome) -> Value {
        match &o.terminal {
            Terminal::Final(b) | Terminal::Retry(b) => serde_json::from_slice(b).unwrap(),
            Terminal::DeadLetter(d) => panic!("unexpected dead letter: {d:?}"),
        }
    }

    fn keys(v: &Value) -> Vec<String> {
        v.as_object().unwrap().keys().cloned().collect()
    }

    /// Keys as they appear on the wire (serde_json's map would sort them for us).
    fn wire_keys(bytes: &[u8]) -> Vec<String> {
        // Walk the top level by hand: collect `"key":` at depth 1.
        let s = std::str::from_utf8(bytes).unwrap();
        let mut out = Vec::new();
        let (mut depth, mut in_str, mut esc, mut start) = (0i32, false, false, 0usize);
        for (i, c) in s.char_indices() {
            if in_str {
                if esc {
                    esc = false;
                } else if c == '\\' {
                    esc = true;
                } else if c == '"' {
                    in_str = false;
                    if depth == 1 && s[i + 1..].starts_with(':') {
                        out.push(s[start + 1..i].to_string());
                    }
                }
                continue;
            }
            match c {
                '"' => {
                    in_str = true;
                    start = i;
                }
                '{' | '[' => depth += 1,
                '}' | ']' => depth -= 1,
                _ => {}
            }
        }
        out
    }

    fn good() -> Value {
        json!({
            "request_id": "req-1",
            "answer": "Churn[^2] followed pricing changes[^1] in Q3[^1].",
            "question": "Why did churn rise?",
            "sources": [
                {"urn": "urn:doc:pricing", "payload": "Pricing changed in Q3."},
                {"urn": "urn:doc:churn", "payload": {"table": "churn", "rows": [1, 2]}}
            ],
            "provider": "openai", "model": "gpt-4o", "tenant": "acme", "user": "u1", "role": "analyst",
            "prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.00123,
            "cache_hit": false, "temperature": 0.2, "seed": 7, "confidence": 0.9, "provenance": "rag-v2"
        })
    }

    #[test]
    fn accepted_envelope_shape() {
        let o = run(&good(), &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::Accepted);
        assert_eq!(o.request_id.as_deref(), Some("req-1"));
        let Terminal::Final(bytes) = &o.terminal else {
            panic!()
        };
        let expected_keys = [
            "answer",
            "cache_hit",
            "citations",
            "completion_tokens",
            "cost_usd",
            "grounding",
            "mode",
            "model",
            "prompt_tokens",
            "provider",
            "request_id",
            "retry_count",
            "sources_flat",
            "validation",
        ];
        assert_eq!(
            wire_keys(bytes),
            expected_keys,
            "alphabetical, exact key set"
        );
        let s = std::str::from_utf8(bytes).unwrap();
        assert!(!s.contains(": ") && !s.contains('\n'), "compact: {s}");
        assert!(!s.contains("seed") && !s.contains("temperature"));
        let v = terminal_json(&o);
        assert_eq!(v["mode"], "strict");
        assert_eq!(v["retry_count"], 0);
        assert_eq!(v["cost_usd"], 0.00123);
        assert_eq!(
            v["citations"],
            json!([{"marker": 1, "urn": "urn:doc:pricing"}, {"marker": 1, "urn": "urn:doc:pricing"}, {"marker": 2, "urn": "urn:doc:churn"}])
        );
        assert_eq!(
            v["sources_flat"],
            json!([
                {"payload": "Pricing changed in Q3.", "urn": "urn:doc:pricing"},
                {"payload": "{\"rows\":[1,2],\"table\":\"churn\"}", "urn": "urn:doc:churn"}
            ])
        );
        assert_eq!(
            v["validation"],
            json!({"errors": [], "ok": true, "warnings": []})
        );
        assert!(s.contains(r#""validation":{"errors":[],"ok":true,"warnings":[]}"#));
    }

    #[test]
    fn outputs_are_byte_identical_for_identical_input() {
        let a = run(&good(), &CoreSettings::default());
        let b = run(&good(), &CoreSettings::default());
        assert_eq!(a, b);
        let mut r = good();
        r["answer"] = json!("bad[^9]");
        let a = run(&r, &CoreSettings::default());
        let b = run(&r, &CoreSettings::default());
        assert_eq!(a.terminal, b.terminal);
    }

    #[test]
    fn citation_sort_is_stable_and_skips_out_of_range() {
        let mut r = good();
        r["mode"] = json!("lenient");
        r["sources"] = json!([{"urn": "a"}, {"urn": "b"}, {"urn": "c"}]);
        r["answer"] = json!("x[^3] y[^1] z[^9] w[^3] v[^2]");
        let o = run(&r, &CoreSettings::default());
        let v = terminal_json(&o);
        let got: Vec<(u64, String)> = v["citations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["marker"].as_u64().unwrap(),
                    c["urn"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, "a".into()),
                (2, "b".into()),
                (3, "c".into()),
                (3, "c".into())
            ]
        );
        assert_eq!(v["validation"]["ok"], true);
        assert_eq!(v["validation"]["warnings"][0]["kind"], "out_of_range");
        // sources are never re-sorted
        assert_eq!(v["sources_flat"][0]["urn"], "a");
        // the audit lists every parsed marker in order of appearance, in range or not
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["citations"], json!([3, 1, 9, 3, 2]));
    }

    #[test]
    fn strict_first_attempt_failure_yields_retry_request() {
        let mut r = good();
        r["answer"] = json!("Claim[^5] and [^abc].");
        let o = run(&r, &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::Retry);
        let Terminal::Retry(bytes) = &o.terminal else {
            panic!("{:?}", o.terminal)
        };
        assert_eq!(
            wire_keys(bytes),
            [
                "attempt",
                "mode",
                "model",
                "prior",
                "problems",
                "prompt",
                "provider",
                "question",
                "request_id",
                "role",
                "sources",
                "tenant",
                "user",
                "warnings"
            ]
        );
        let v: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(v["attempt"], 1);
        assert_eq!(v["request_id"], "req-1");
        assert_eq!(
            v["prior"],
            json!({"completion_tokens": 20, "cost_usd": 0.00123, "prompt_tokens": 100})
        );
        let kinds: Vec<&str> = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["out_of_range", "malformed"]);
        let prompt = v["prompt"].as_str().unwrap();
        assert!(prompt.contains("Do not invent") && prompt.contains("[^1] through [^2]"));
        // structured payloads are echoed as structured JSON so the caller can resend them as-is
        assert_eq!(
            v["sources"][1]["payload"],
            json!({"table": "churn", "rows": [1, 2]})
        );
        assert_eq!(v["sources"][0]["payload"], "Pricing changed in Q3.");
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["outcome"], "retry");
        assert_eq!(a["validation_ok"], false);
        assert_eq!(a["errors"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn retry_attempt_still_failing_gives_up_and_sums_usage() {
        let mut r = good();
        r["answer"] = json!("Claim[^5].");
        r["attempt"] = json!(1);
        r["prior"] = json!({"prompt_tokens": 50, "completion_tokens": 5, "cost_usd": 0.5});
        let o = run(&r, &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::Rejected);
        let v = terminal_json(&o);
        assert_eq!(v["retry_count"], 1);
        assert_eq!(v["validation"]["ok"], false);
        assert_eq!(v["validation"]["errors"][0]["kind"], "out_of_range");
        assert_eq!(v["prompt_tokens"], 150);
        assert_eq!(v["completion_tokens"], 25);
        assert_eq!(v["cost_usd"], 0.00123 + 0.5);
        // the audit row reports this call's own usage
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["prompt_tokens"], 100);
        assert_eq!(a["cost_usd"], 0.00123);
        assert_eq!(a["retry_count"], 1);
        assert_eq!(a["outcome"], "rejected");
    }

    #[test]
    fn retry_attempt_fixed_is_accepted() {
        let mut r = good();
        r["attempt"] = json!(1);
        r["prior"] = json!({"completion_tokens": 0, "cost_usd": 0.0, "prompt_tokens": 1});
        let o = run(&r, &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::Accepted);
        assert_eq!(terminal_json(&o)["retry_count"], 1);
    }

    #[test]
    fn audit_row_shape() {
        let o = run(&good(), &CoreSettings::default());
        let expected = [
            "answer_hash",
            "cache_hit",
            "citations",
            "completion_tokens",
            "cost_usd",
            "errors",
            "grounding",
            "input",
            "mode",
            "model",
            "outcome",
            "policy_version",
            "prompt_tokens",
            "provider",
            "question",
            "request_id",
            "requested_mode",
            "retry_count",
            "role",
            "seed",
            "sources_urns",
            "temperature",
            "tenant",
            "ts",
            "user",
            "validation_ok",
            "warnings",
        ];
        assert_eq!(wire_keys(&o.audit), expected);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["ts"], NOW);
        assert_eq!(
            a["input"],
            json!({"offset": 42, "partition": 3, "topic": "answers"})
        );
        assert_eq!(a["seed"], 7);
        assert_eq!(a["temperature"], 0.2);
        assert_eq!(
            a["sources_urns"],
            json!(["urn:doc:pricing", "urn:doc:churn"])
        );
        assert_eq!(a["citations"], json!([2, 1, 1]));
        assert_eq!(a["errors"], json!([]));
        assert_eq!(a["validation_ok"], true);
        assert_eq!(a["policy_version"], "default");
        assert_eq!(a["tenant"], "acme");
        assert!(a.get("answer").is_none());

        let with_answer = CoreSettings {
            include_answer: true,
            ..Default::default()
        };
        let o = run(&good(), &with_answer);
        assert_eq!(wire_keys(&o.audit)[0], "answer");
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["answer"], good()["answer"]);
    }

    #[test]
    fn personal_fields_of_the_audit_row_are_written_as_pseudonyms_and_nothing_else_changes() {
        use crate::core::pseudonym::{PseudonymField, Pseudonyms};
        let p = Pseudonyms::new(
            &[b'k'; 32],
            &[
                PseudonymField::User,
                PseudonymField::SourcesUrns,
                PseudonymField::Question,
            ],
        )
        .unwrap();
        let settings = CoreSettings {
            pseudonyms: Some(p.clone()),
            ..Default::default()
        };
        let plain = run(&good(), &CoreSettings::default());
        let o = run(&good(), &settings);
        let mut a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["user"], p.of("u1"));
        assert_eq!(a["question"], p.of("Why did churn rise?"));
        assert_eq!(
            a["sources_urns"],
            json!([p.of("urn:doc:pricing"), p.of("urn:doc:churn")])
        );
        assert_eq!(a["tenant"], "acme", "a field not listed stays as it is");
        for (k, v) in [
            ("user", "u1"),
            ("question", "Why did churn rise?"),
            ("sources_urns", ""),
        ] {
            a[k] = if k == "sources_urns" {
                json!(["urn:doc:pricing", "urn:doc:churn"])
            } else {
                json!(v)
            };
        }
        let b: Value = serde_json::from_slice(&plain.audit).unwrap();
        assert_eq!(a, b, "only the listed fields differ");
        // The envelope goes to the application, not the trail: as it was.
        assert_eq!(o.terminal, plain.terminal);
        // An empty user says "none given" in either form.
        let mut rec = good();
        rec["user"] = json!("");
        let a: Value = serde_json::from_slice(&run(&rec, &settings).audit).unwrap();
        assert_eq!(a["user"], "");
    }

    /// A numeric user id is a `schema` dead letter whose detail names the
    /// value read: with `user` pseudonymised, no output says it.
    #[test]
    fn a_dead_letter_names_no_value_of_a_pseudonymised_field() {
        use crate::core::pseudonym::{PseudonymField, Pseudonyms};
        let mut rec = good();
        rec["user"] = json!(48151623);
        let detail = |o: &Outcome| match &o.terminal {
            Terminal::DeadLetter(d) => d.detail.clone(),
            other => panic!("{other:?}"),
        };
        let plain = run(&rec, &CoreSettings::default());
        assert!(detail(&plain).contains("`48151623`"), "{}", detail(&plain));
        let settings = CoreSettings {
            pseudonyms: Some(Pseudonyms::new(&[b'k'; 32], &[PseudonymField::User]).unwrap()),
            ..Default::default()
        };
        let o = run(&rec, &settings);
        assert!(
            detail(&o).starts_with("user: invalid type: integer, expected a string"),
            "{}",
            detail(&o)
        );
        let audit = String::from_utf8(o.audit).unwrap();
        assert!(!audit.contains("48151623"), "{audit}");
    }

    #[test]
    fn audit_hash_vectors_and_nulls() {
        let settings = CoreSettings {
            policy: crate::core::PolicySettings {
                empty_answer: Action::Warn,
                ..Default::default()
            },
            ..Default::default()
        };
        let o = run(
            &json!({"request_id": "r", "answer": "", "provenance": "p"}),
            &settings,
        );
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(
            a["answer_hash"],
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(a["seed"], Value::Null);
        assert_eq!(a["temperature"], Value::Null);
        assert_eq!(a["cost_usd"], 0.0, "recorded even when 0");
        assert_eq!(a["user"], "", "identity strings are empty, never null");
        let o = run(
            &json!({"request_id": "r", "answer": "hello", "provenance": "p"}),
            &settings,
        );
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(
            a["answer_hash"],
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
    }

    #[test]
    fn provider_fallback_is_reported() {
        let settings = CoreSettings {
            non_citing_providers: vec!["local-llama".into()],
            ..Default::default()
        };
        let mut r = good();
        r["provider"] = json!("local-llama");
        r["answer"] = json!("no real markers[^7]");
        let o = run(&r, &settings);
        assert_eq!(o.kind, OutcomeKind::Accepted);
        let v = terminal_json(&o);
        assert_eq!(v["mode"], "lenient");
        assert_eq!(
            v["validation"]["warnings"][0],
            json!({"detail": "local-llama", "kind": "mode_fallback"})
        );
        assert_eq!(o.summary.mode, Some(Mode::Lenient));
        assert_eq!(
            o.summary.findings,
            vec![FindingKind::ModeFallback, FindingKind::OutOfRange]
        );
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["mode"], "lenient");
        assert_eq!(
            a["requested_mode"], "strict",
            "the fallback is visible in the audit"
        );
        assert_eq!(a["warnings"][0]["kind"], "mode_fallback");
    }

    #[test]
    fn policy_reject_is_recorded() {
        let settings = CoreSettings {
            policy: crate::core::PolicySettings {
                forbidden_terms: vec!["guaranteed".into()],
                ..Default::default()
            },
            ..Default::default()
        };
        let mut r = good();
        r["answer"] = json!("Returns are GUARANTEED[^1].");
        let o = run(&r, &settings);
        assert_eq!(o.kind, OutcomeKind::Rejected);
        let v = terminal_json(&o);
        assert_eq!(v["validation"]["errors"][0]["kind"], "forbidden_term");
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["errors"][0]["kind"], "forbidden_term");
        assert_eq!(a["outcome"], "rejected");
        // The reference meaning: the citations were fine, the policy said no.
        assert_eq!(a["validation_ok"], true);
        assert_eq!(v["validation"]["ok"], false);
    }

    #[test]
    fn a_record_whose_judging_panics_becomes_an_internal_dead_letter() {
        let raw = br#"{"request_id":"r7","answer":"It rained[^1].","sources":["It rained."]}"#;
        let settings = CoreSettings::default();
        let o = contained(Some(raw), &META, NOW, &settings, || {
            panic!("index 9 out of range")
        });
        assert_eq!(o.kind, OutcomeKind::DeadLetter);
        assert_eq!(o.request_id.as_deref(), Some("r7"));
        assert_eq!(o.summary.dead_letter, Some(DeadLetterKind::Internal));
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!("{:?}", o.terminal)
        };
        assert_eq!(d.kind, DeadLetterKind::Internal);
        assert_eq!(d.value, DeadLetterValue::Original, "kept as received");
        assert!(d.detail.contains("index 9 out of range"), "{}", d.detail);
        assert!(d.detail.contains("a defect to report"), "{}", d.detail);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["outcome"], "dead_letter");
        assert_eq!(a["errors"][0]["kind"], "internal");
        assert_eq!(a["request_id"], "r7");
        assert_eq!(a["answer_hash"], sha256_hex(raw));
        assert_eq!(a["input"]["offset"], 42);

        // With pseudonyms, the message (which may quote the user) is left
        // out of the detail the audit row carries.
        use crate::core::pseudonym::{PseudonymField, Pseudonyms};
        let pseudonymised = CoreSettings {
            pseudonyms: Some(Pseudonyms::new(&[b'k'; 32], &[PseudonymField::User]).unwrap()),
            ..Default::default()
        };
        let o = contained(Some(raw), &META, NOW, &pseudonymised, || {
            panic!("slice of `user-48151623`")
        });
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!("{:?}", o.terminal)
        };
        assert!(!d.detail.contains("48151623"), "{}", d.detail);
        assert!(
            d.detail.contains("in groundgate's log only"),
            "{}",
            d.detail
        );
        assert!(!String::from_utf8_lossy(&o.audit).contains("48151623"));

        // A panic with a formatted message, on a value that is no JSON.
        let o = contained(Some(b"\xff"), &META, NOW, &settings, || {
            panic!("slot {} taken", 3)
        });
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!("{:?}", o.terminal)
        };
        assert!(d.detail.contains("slot 3 taken"), "{}", d.detail);
        assert_eq!(o.request_id, None);

        // The record after it is judged as on a fresh thread.
        assert_eq!(
            format!("{:?}", process(Some(raw), &META, NOW, &settings)),
            format!(
                "{:?}",
                std::thread::spawn(move || process(
                    Some(raw),
                    &META,
                    NOW,
                    &CoreSettings::default()
                ))
                .join()
                .unwrap()
            )
        );
    }

    /// `value` in Schema Registry wire format with schema id `id`.
    fn framed(id: u32, value: &[u8]) -> Vec<u8> {
        let mut v = vec![0x00];
        v.extend_from_slice(&id.to_be_bytes());
        v.extend_from_slice(value);
        v
    }

    fn schema_registry(ids: Option<Vec<u32>>) -> CoreSettings {
        CoreSettings {
            value_framing: crate::core::ValueFraming::SchemaRegistry { schema_ids: ids },
            ..CoreSettings::default()
        }
    }

    #[test]
    fn a_framed_record_gets_the_outputs_of_its_json_text() {
        let plain = good().to_string().into_bytes();
        let settings = schema_registry(Some(vec![42]));
        let want = process(Some(&plain), &META, NOW, &CoreSettings::default());
        assert_eq!(want.kind, OutcomeKind::Accepted);
        // Nothing of the frame reaches an output: the audit row hashes the answer.
        assert_eq!(
            process(Some(&framed(42, &plain)), &META, NOW, &settings),
            want
        );
        assert_eq!(process(Some(&plain), &META, NOW, &settings), want);
    }

    #[test]
    fn a_framed_dead_letter_keeps_and_hashes_the_whole_value() {
        let mut r = good();
        r["answer"] = json!(3);
        let value = framed(7, r.to_string().as_bytes());
        let o = process(Some(&value), &META, NOW, &schema_registry(None));
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!("{:?}", o.terminal)
        };
        assert_eq!(d.kind, DeadLetterKind::Schema);
        assert_eq!(
            d.value,
            DeadLetterValue::Original,
            "the framed bytes as received"
        );
        assert_eq!(o.request_id.as_deref(), Some("req-1"));
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["answer_hash"], sha256_hex(&value));

        let o = process(
            Some(&framed(8, &[2, 0xff])),
            &META,
            NOW,
            &schema_registry(Some(vec![7])),
        );
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!("{:?}", o.terminal)
        };
        assert_eq!(d.kind, DeadLetterKind::Schema);
        assert!(d.detail.contains("schema id 8"), "{}", d.detail);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["answer_hash"], sha256_hex(&framed(8, &[2, 0xff])));
        assert_eq!(a["errors"][0]["kind"], "schema");
    }

    #[test]
    fn a_framed_record_whose_judging_panics_keeps_its_request_id() {
        let value = framed(200, good().to_string().as_bytes());
        let o = contained(Some(&value), &META, NOW, &schema_registry(None), || {
            panic!("defect")
        });
        assert_eq!(o.summary.dead_letter, Some(DeadLetterKind::Internal));
        assert_eq!(o.request_id.as_deref(), Some("req-1"));
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["answer_hash"], sha256_hex(&value));
    }

    #[test]
    fn dead_letter_still_gets_an_audit_row() {
        let o = process(
            Some(br#"{"request_id":"r9","answer":3}"#),
            &META,
            NOW,
            &CoreSettings::default(),
        );
        assert_eq!(o.kind, OutcomeKind::DeadLetter);
        assert_eq!(o.request_id.as_deref(), Some("r9"));
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!()
        };
        assert_eq!(d.kind, DeadLetterKind::Schema);
        assert!(d.detail.starts_with("answer:"), "{}", d.detail);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["outcome"], "dead_letter");
        assert_eq!(a["request_id"], "r9");
        assert_eq!(a["errors"][0]["kind"], "schema");
        assert_eq!(a["input"]["offset"], 42);
        assert_eq!(a["provider"], "");
        assert_eq!(a["validation_ok"], false);

        let o = process(None, &META, NOW, &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::DeadLetter);
        assert_eq!(o.request_id, None);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["request_id"], "");
        assert_eq!(keys(&a).len(), 27);
        assert_eq!(
            a["grounding"],
            json!({"claims": 0, "cited_claims": 0, "score": null, "unsupported_claims": 0})
        );
    }

    #[test]
    fn warnings_reach_the_audit_row_and_the_retry_request() {
        let mut r = good();
        r["answer"] = json!("Claim[^5].");
        r["confidence"] = json!(0.1);
        r["provenance"] = json!("");
        let o = run(&r, &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::Retry);
        let v = terminal_json(&o);
        let kinds = |l: &Value| -> Vec<String> {
            l.as_array()
                .unwrap()
                .iter()
                .map(|f| f["kind"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            kinds(&v["warnings"]),
            ["low_confidence", "missing_provenance"]
        );
        assert_eq!(kinds(&v["problems"]), ["out_of_range"]);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(
            kinds(&a["warnings"]),
            ["low_confidence", "missing_provenance"]
        );
        assert_eq!(kinds(&a["errors"]), ["out_of_range"]);
        assert_eq!(a["requested_mode"], "strict");
        assert_eq!(a["validation_ok"], false);
        // The retry request's prior is this (first) attempt's own usage.
        assert_eq!(
            v["prior"],
            json!({"completion_tokens": 20, "cost_usd": 0.00123, "prompt_tokens": 100})
        );
    }

    fn finding_kinds(l: &Value) -> Vec<String> {
        l.as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn misplaced_prior_is_judged_with_a_bookkeeping_finding() {
        // A first answer carrying a prior: judged, the prior ignored.
        let mut r = good();
        r["prior"] = json!({"completion_tokens": 1, "cost_usd": 9.0, "prompt_tokens": 15});
        let o = run(&r, &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::Accepted);
        let v = terminal_json(&o);
        assert_eq!(
            finding_kinds(&v["validation"]["warnings"]),
            ["prior_unexpected"]
        );
        assert!(
            v["validation"]["warnings"][0]["detail"]
                .as_str()
                .unwrap()
                .contains("count this attempt only")
        );
        assert_eq!(v["prompt_tokens"], 100, "totals count this attempt only");
        assert_eq!(v["cost_usd"], 0.00123);

        // A retry without prior: judged, totals of this attempt.
        let mut r = good();
        r["attempt"] = json!(1);
        let o = run(&r, &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::Accepted);
        let v = terminal_json(&o);
        assert_eq!(v["retry_count"], 1);
        assert_eq!(
            finding_kinds(&v["validation"]["warnings"]),
            ["prior_missing"]
        );
        assert_eq!(v["prompt_tokens"], 100);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(finding_kinds(&a["warnings"]), ["prior_missing"]);
        assert_eq!(o.summary.findings, vec![FindingKind::PriorMissing]);

        // Configurable like the policy rules.
        let strict = CoreSettings {
            policy: crate::core::PolicySettings {
                prior_missing: Action::Reject,
                ..Default::default()
            },
            ..Default::default()
        };
        let o = run(&r, &strict);
        assert_eq!(o.kind, OutcomeKind::Rejected);
        assert_eq!(
            finding_kinds(&terminal_json(&o)["validation"]["errors"]),
            ["prior_missing"]
        );
    }

    #[test]
    fn prior_must_be_an_object_of_its_fields() {
        for prior in [json!([1, 2, 3]), json!({}), json!({"prompt_tokens": 1})] {
            let mut r = good();
            r["attempt"] = json!(1);
            r["prior"] = prior.clone();
            let o = run(&r, &CoreSettings::default());
            assert_eq!(o.kind, OutcomeKind::DeadLetter, "{prior}");
            let Terminal::DeadLetter(d) = &o.terminal else {
                panic!()
            };
            assert!(d.detail.starts_with("prior"), "{prior}: {}", d.detail);
        }
    }

    fn stuffed(markers: usize) -> Value {
        let mut r = good();
        r["answer"] = json!("Claim[^9]. ".repeat(markers));
        r
    }

    #[test]
    fn marker_stuffed_answer_gives_a_bounded_retry_request() {
        // 13,000 bad markers, one problem line each, would give a 2.2 MB request.
        let r = stuffed(13_000);
        let input = r.to_string().len();
        let o = run(&r, &CoreSettings::default());
        assert_eq!(o.kind, OutcomeKind::Retry);
        let Terminal::Retry(bytes) = &o.terminal else {
            panic!()
        };
        assert!(
            bytes.len() < input + 16_384,
            "{} bytes for {input}",
            bytes.len()
        );
        let v: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(
            v["problems"].as_array().unwrap().len(),
            MAX_LISTED_PROBLEMS + 1
        );
        assert_eq!(
            v["problems"][20]["detail"], "… and 12981 more not listed",
            "13,000 markers + too_long"
        );
        assert!(
            v["prompt"]
                .as_str()
                .unwrap()
                .contains("… and 12981 more problems")
        );
        assert!(
            o.audit.len() < input + 16_384,
            "audit {} bytes",
            o.audit.len()
        );
        // Lenient: the warnings list in the envelope is bounded the same way.
        let mut r = stuffed(13_000);
        r["mode"] = json!("lenient");
        let o = run(&r, &CoreSettings::default());
        let v = terminal_json(&o);
        assert_eq!(
            v["validation"]["warnings"].as_array().unwrap().len(),
            MAX_LISTED_FINDINGS + 1
        );
        assert_eq!(
            o.summary.findings.len(),
            13_001,
            "metrics still count every finding"
        );
    }

    #[test]
    fn outputs_that_cannot_fit_become_a_bounded_too_large_dead_letter() {
        let settings = CoreSettings {
            max_output_bytes: MIN_OUTPUT_BYTES,
            ..Default::default()
        };
        // Valid and accepted, but the envelope repeats a long urn per citation.
        let mut r = good();
        r["mode"] = json!("lenient");
        r["sources"] = json!([{"urn": "u".repeat(2000)}]);
        r["answer"] = json!("x[^1] ".repeat(100));
        let raw = r.to_string();
        let o = run(&r, &settings);
        assert_eq!(o.kind, OutcomeKind::DeadLetter);
        assert_eq!(o.request_id.as_deref(), Some("req-1"));
        assert_eq!(o.summary.dead_letter, Some(DeadLetterKind::TooLarge));
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!()
        };
        assert_eq!(d.kind, DeadLetterKind::TooLarge);
        assert!(d.detail.contains("final output would be"), "{}", d.detail);
        let DeadLetterValue::Bounded(b) = &d.value else {
            panic!("{:?}", d.value)
        };
        let v: Value = serde_json::from_slice(b).unwrap();
        assert_eq!(v["length"], raw.len());
        assert_eq!(v["sha256"], sha256_hex(raw.as_bytes()));
        assert_eq!(v["kind"], "too_large");
        assert!(raw.starts_with(v["preview"].as_str().unwrap()));
        assert_eq!(v["preview"].as_str().unwrap().len(), PREVIEW_BYTES);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["errors"][0]["kind"], "too_large");
        assert_eq!(a["request_id"], "req-1");
    }

    #[test]
    fn dead_letter_values_original_when_they_fit_bounded_when_too_large() {
        let o = process(Some(b"{nope"), &META, NOW, &CoreSettings::default());
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!()
        };
        assert_eq!(d.value, DeadLetterValue::Original);
        let big = vec![b'x'; 2 << 20];
        let o = process(Some(&big), &META, NOW, &CoreSettings::default());
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!()
        };
        assert_eq!(d.kind, DeadLetterKind::TooLarge);
        let DeadLetterValue::Bounded(b) = &d.value else {
            panic!()
        };
        assert!(b.len() < 2048, "{}", b.len());
        let v: Value = serde_json::from_slice(b).unwrap();
        assert_eq!(v["length"], 2 << 20);
        // A schema error quoting a huge value keeps a bounded detail.
        let rec = format!(
            r#"{{"request_id":"r","answer":"a","seed":"{}"}}"#,
            "z".repeat(100_000)
        );
        let o = process(Some(rec.as_bytes()), &META, NOW, &CoreSettings::default());
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!()
        };
        assert_eq!(d.kind, DeadLetterKind::Schema);
        assert!(d.detail.len() < MAX_DETAIL_BYTES + 64, "{}", d.detail.len());
        assert!(o.audit.len() < 4096);
    }

    #[test]
    fn oversize_dead_letter_is_bounded_whatever_the_value() {
        let huge = vec![0xffu8; 5 << 20];
        let o = oversize_dead_letter(
            Some(&huge),
            &META,
            NOW,
            &CoreSettings::default(),
            Some("req-9"),
            "the broker refused the final output (MSG_SIZE_TOO_LARGE)".into(),
        );
        assert_eq!(o.kind, OutcomeKind::DeadLetter);
        let Terminal::DeadLetter(d) = &o.terminal else {
            panic!()
        };
        let DeadLetterValue::Bounded(b) = &d.value else {
            panic!()
        };
        let v: Value = serde_json::from_slice(b).unwrap();
        assert_eq!(v["length"], 5 << 20);
        assert!(v["detail"].as_str().unwrap().contains("MSG_SIZE_TOO_LARGE"));
        assert!(b.len() < 4096 && o.audit.len() < 4096);
        let a: Value = serde_json::from_slice(&o.audit).unwrap();
        assert_eq!(a["request_id"], "req-9");
    }

    mod bounded_outputs {
        use super::*;
        use proptest::prelude::*;

        /// Records built to amplify: many markers (good and bad), long urns,
        /// quote-heavy structured payloads, huge digit runs, policy findings.
        fn hostile() -> impl Strategy<Value = Vec<u8>> {
            let piece = prop_oneof![
                Just("[^1]".to_string()),
                Just("[^2]".to_string()),
                Just("[^99]".to_string()),
                Just("[^x]".to_string()),
                Just("[^]".to_string()),
                (1usize..3000).prop_map(|n| format!("[^{}]", "9".repeat(n))),
                "[a-z \"\\\n]{0,40}",
            ];
            (
                prop::collection::vec((piece, 1usize..2000), 0..12),
                0usize..3000,
                0usize..8,
                0usize..3000,
                any::<bool>(),
                any::<bool>(),
            )
                .prop_map(
                    |(pieces, urn_len, n_sources, payload_len, lenient, retry)| {
                        let answer: String = pieces.iter().map(|(p, k)| p.repeat(*k)).collect();
                        let sources: Vec<Value> = (0..n_sources)
                            .map(|i| {
                                json!({
                                    "urn": "u".repeat(urn_len + i),
                                    "payload": {"q": "\"".repeat(payload_len)},
                                })
                            })
                            .collect();
                        let mut r = json!({
                            "request_id": "r".repeat(200),
                            "answer": answer,
                            "question": "q".repeat(payload_len),
                            "sources": sources,
                            "mode": if lenient { "lenient" } else { "strict" },
                            "confidence": 0.1,
                            "provider": "p",
                        });
                        if retry {
                            r["attempt"] = json!(1);
                            r["prior"] = json!({"completion_tokens": 0, "cost_usd": 0.0, "prompt_tokens": 1});
                        }
                        r.to_string().into_bytes()
                    },
                )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]

            /// For any input up to max_record_bytes, every output
            /// `process` builds is at most max_output_bytes.
            #[test]
            fn every_output_fits_the_output_limit(
                rec in hostile(),
                junk in prop::collection::vec(any::<u8>(), 0..4096),
                max_record_kb in 64usize..256,
                extra_kb in 0usize..64,
                include_answer in any::<bool>(),
                schema_id in proptest::option::of(any::<u32>()),
            ) {
                let value_framing = match schema_id {
                    Some(_) => crate::core::ValueFraming::SchemaRegistry { schema_ids: None },
                    None => crate::core::ValueFraming::None,
                };
                let framed = match schema_id {
                    Some(id) => framed(id, &rec),
                    None => rec.clone(),
                };
                let settings = CoreSettings {
                    value_framing,
                    max_record_bytes: max_record_kb << 10,
                    max_output_bytes: ((max_record_kb + extra_kb) << 10).max(MIN_OUTPUT_BYTES),
                    include_answer,
                    non_citing_providers: vec!["p".into()],
                    policy: crate::core::PolicySettings {
                        forbidden_terms: vec!["zz".into(), "q".into()],
                        forbidden_term: Action::Retry,
                        ..Default::default()
                    },
                    ..Default::default()
                };
                for input in [&rec[..], &junk[..], &rec[..rec.len() / 2], &framed[..]] {
                    let o = process(Some(input), &META, NOW, &settings);
                    prop_assert!(fits(&o, settings.max_output_bytes), "{:?}", output_sizes(&o));
                    if let Terminal::DeadLetter(d) = &o.terminal
                        && d.value == DeadLetterValue::Original
                    {
                        prop_assert!(input.len() <= settings.max_output_bytes);
                    }
                }
            }
        }
    }

    /// Records whose answers and sources are assembled from the pieces of
    /// text the grounding scanners treat specially (`crate::fuzzing`, the
    /// fragments the fuzz targets use): no panic, one outcome with both
    /// outputs, every claim on character boundaries, supports in [0, 1].
    mod adversarial_text {
        use proptest::prelude::*;

        use crate::fuzzing::{self, FRAGMENTS, Piece, SourceSpec, Spec};

        fn piece() -> impl Strategy<Value = Piece> {
            let fragment = 0..FRAGMENTS.len() as u16;
            prop_oneof![
                8 => fragment.clone().prop_map(Piece::Word),
                3 => fragment.prop_map(Piece::Glued),
                3 => any::<u8>().prop_map(Piece::Marker),
                1 => any::<u64>().prop_map(Piece::BigMarker),
                1 => (any::<u8>(), 0u16..200).prop_map(|(c, len)| Piece::Run { c, len }),
                1 => any::<char>().prop_map(Piece::Char),
                2 => (0u16..600, 0u16..300).prop_map(|(start, len)| Piece::Copy { start, len }),
            ]
        }

        fn spec() -> impl Strategy<Value = Spec> {
            let source = (prop::collection::vec(piece(), 0..40), any::<bool>())
                .prop_map(|(pieces, object)| SourceSpec { pieces, object });
            (
                prop::collection::vec(piece(), 0..60),
                prop::collection::vec(source, 0..4),
                any::<bool>(),
                any::<bool>(),
            )
                .prop_map(|(answer, sources, strict, retry)| Spec {
                    answer,
                    sources,
                    strict,
                    retry,
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1024))]

            #[test]
            fn adversarial_text_gets_one_bounded_outcome(spec in spec()) {
                let (answer, sources) = spec.texts();
                let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
                fuzzing::check_texts(&answer, &sources);
                fuzzing::check_record(&spec.record(), &fuzzing::settings());
            }
        }
    }
}
