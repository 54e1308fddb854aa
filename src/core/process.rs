//! `process`: one input record in, exactly one terminal record and exactly
//! one audit row out. The Kafka worker and `groundgate check` both call this
//! function, which is why they agree on every verdict.
//!
//! Pure: the clock arrives as `now_nanos`, settings as an argument; no I/O.

use sha2::{Digest, Sha256};

use super::citation::{self, WarningKind};
use super::decision::{self, Attempt, Verdict};
use super::encode;
use super::grounding::{self, Grounding};
use super::policy::{self, PolicyInput};
use super::settings::CoreSettings;
use super::types::{
    DeadLetter, Finding, FindingKind, Outcome, OutcomeKind, RecordMeta, Summary, Terminal,
};
use super::wire::{
    self, AuditRow, CitationOut, DecodeFailure, Envelope, InputCoordinates, InputRecord,
    KindDetail, Payload, RetryRequest, SourceEcho, SourceFlat, Validation,
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
    match wire::decode(value, settings.max_record_bytes) {
        Ok(rec) => validate(&rec, meta, now_nanos, settings),
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

fn validate(
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
    let mut policy_findings = policy::check(
        &PolicyInput {
            answer,
            confidence: rec.confidence,
            provenance: rec.provenance.as_deref(),
        },
        &settings.policy,
    );
    policy_findings.extend(grounding::findings(&grounding, &settings.grounding));
    let d = decision::decide(mode, attempt, fallback, citation_findings, policy_findings);

    let kind = match d.verdict {
        Verdict::Accept => OutcomeKind::Accepted,
        Verdict::Retry => OutcomeKind::Retry,
        Verdict::Reject => OutcomeKind::Rejected,
    };
    let own_usage = rec.usage();
    // Both attempts together: what the envelope reports, and what a retry
    // request hands back as `prior`.
    let total_usage = rec.prior.map_or(own_usage, |prior| own_usage.plus(prior));

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
                    errors: &d.errors,
                    ok: d.verdict == Verdict::Accept,
                    warnings: &d.warnings,
                },
            };
            Terminal::Final(encode::envelope(&env))
        }
        Verdict::Retry => {
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
                prior: total_usage,
                problems: &d.errors,
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
            };
            Terminal::Retry(encode::retry_request(&req))
        }
    };

    let hash = sha256_hex(answer.as_bytes());
    let audit = AuditRow {
        answer: settings.include_answer.then_some(answer),
        answer_hash: &hash,
        cache_hit: rec.cache_hit,
        citations: parsed.citations.iter().map(|c| c.marker).collect(),
        completion_tokens: own_usage.completion_tokens,
        cost_usd: own_usage.cost_usd,
        errors: d.errors.iter().map(KindDetail::from).collect(),
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
        question: &rec.question,
        request_id: &rec.request_id,
        retry_count: attempt.retry_count(),
        role: &rec.role,
        seed: rec.seed,
        sources_urns: rec.sources.iter().map(|s| s.urn.as_ref()).collect(),
        temperature: rec.temperature,
        tenant: &rec.tenant,
        ts: now_nanos,
        user: &rec.user,
        validation_ok: d.verdict == Verdict::Accept,
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
        dead_letter: DeadLetter { kind, detail },
        request_id,
    } = failure;
    // The answer was never read; the audit hash covers the raw record bytes so
    // the dead letter can still be matched to what was received.
    let hash = sha256_hex(raw);
    let audit = AuditRow {
        answer: None,
        answer_hash: &hash,
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
        retry_count: 0,
        role: "",
        seed: None,
        sources_urns: Vec::new(),
        temperature: None,
        tenant: "",
        ts: now_nanos,
        user: "",
        validation_ok: false,
    };
    let audit = encode::audit_row(&audit);
    Outcome {
        kind: OutcomeKind::DeadLetter,
        request_id,
        terminal: Terminal::DeadLetter(DeadLetter { kind, detail }),
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
                "user"
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
            "retry_count",
            "role",
            "seed",
            "sources_urns",
            "temperature",
            "tenant",
            "ts",
            "user",
            "validation_ok",
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
        assert_eq!(keys(&a).len(), 25);
        assert_eq!(
            a["grounding"],
            json!({"claims": 0, "cited_claims": 0, "score": null, "unsupported_claims": 0})
        );
    }
}
