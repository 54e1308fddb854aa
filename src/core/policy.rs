//! Policy checks: the gate between untrusted model output and the
//! consumers that trust it. Each rule yields at most one finding (the
//! forbidden-term rule one per configured term found), paired with the action
//! configured for it; deciding what the action means is `decision`'s job.
//!
//! Pure: no I/O, no clock.

use std::ops::Range;

use super::normalize::normalize;
use super::process::bounded;
use super::settings::PolicySettings;
use super::types::{Action, Finding, FindingKind};

/// The facts about an answer the policy looks at.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInput<'a> {
    pub answer: &'a str,
    pub confidence: Option<f64>,
    pub provenance: Option<&'a str>,
    /// Byte ranges of the answer's citation markers, in order: left out
    /// when looking for forbidden terms.
    pub markers: &'a [Range<usize>],
}

/// Runs every rule, in a fixed order (so outputs are deterministic):
/// low_confidence, too_long, empty_answer, missing_provenance, forbidden_term
/// (terms in configured order).
pub fn check(input: &PolicyInput<'_>, p: &PolicySettings) -> Vec<(Finding, Action)> {
    let mut out = Vec::new();
    if let Some(c) = input.confidence
        && c < p.min_confidence
    {
        out.push((
            Finding::new(
                FindingKind::LowConfidence,
                format!("confidence {c} is below the minimum {}", p.min_confidence),
            ),
            p.low_confidence,
        ));
    }
    let len = input.answer.len();
    if len > p.max_answer_bytes {
        out.push((
            Finding::new(
                FindingKind::TooLong,
                format!(
                    "answer is {len} bytes, longer than the maximum of {} bytes",
                    p.max_answer_bytes
                ),
            ),
            p.too_long,
        ));
    }
    if input.answer.trim().is_empty() {
        out.push((
            Finding::new(
                FindingKind::EmptyAnswer,
                "answer is empty or only whitespace",
            ),
            p.empty_answer,
        ));
    }
    if p.require_provenance {
        let detail = match input.provenance {
            None => Some("provenance is required but absent"),
            Some(s) if s.trim().is_empty() => Some("provenance is required but empty"),
            Some(_) => None,
        };
        if let Some(d) = detail {
            out.push((
                Finding::new(FindingKind::MissingProvenance, d),
                p.missing_provenance,
            ));
        }
    }
    if !p.forbidden_terms.is_empty() {
        // Compared on the normal form (NFKC, case folded, confusables mapped
        // to their TR39 skeleton, invisible characters, whitespace runs and
        // citation markers dealt with), so spacing, lookalike letters or a
        // marker inside a word do not hide a term.
        let hay = normalize(input.answer, input.markers);
        for term in &p.forbidden_terms {
            let needle = normalize(term, &[]).text;
            if needle.is_empty() {
                continue;
            }
            if let Some(at) = memchr::memmem::find(hay.text.as_bytes(), needle.as_bytes()) {
                let orig = hay.original(at..at + needle.len());
                out.push((
                    Finding::new(
                        FindingKind::ForbiddenTerm,
                        format!(
                            "answer contains the forbidden term {term:?} at bytes {}..{}: {:?}",
                            orig.start,
                            orig.end,
                            bounded(&input.answer[orig.clone()], MAX_QUOTED_BYTES)
                        ),
                    ),
                    p.forbidden_term,
                ));
            }
        }
    }
    out
}

/// Longest original text quoted in a forbidden-term finding.
const MAX_QUOTED_BYTES: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(v: &[(Finding, Action)]) -> Vec<FindingKind> {
        v.iter().map(|(f, _)| f.kind).collect()
    }

    fn input<'a>(
        answer: &'a str,
        confidence: Option<f64>,
        provenance: Option<&'a str>,
    ) -> PolicyInput<'a> {
        PolicyInput {
            answer,
            confidence,
            provenance,
            markers: &[],
        }
    }

    #[test]
    fn clean_answer_has_no_findings() {
        let p = PolicySettings::default();
        assert!(check(&input("fine[^1]", Some(0.9), Some("rag-v2")), &p).is_empty());
    }

    #[test]
    fn low_confidence_names_value_and_threshold() {
        let p = PolicySettings::default();
        let f = check(&input("x", Some(0.2), Some("p")), &p);
        assert_eq!(kinds(&f), vec![FindingKind::LowConfidence]);
        assert!(f[0].0.detail.contains("0.2") && f[0].0.detail.contains("0.5"));
        assert_eq!(f[0].1, p.low_confidence);
        // Exactly at the threshold is not below it; absent confidence skips the rule.
        assert!(check(&input("x", Some(0.5), Some("p")), &p).is_empty());
        assert!(check(&input("x", None, Some("p")), &p).is_empty());
    }

    #[test]
    fn too_long_names_both_sizes() {
        let p = PolicySettings {
            max_answer_bytes: 4,
            ..Default::default()
        };
        let f = check(&input("12345", None, Some("p")), &p);
        assert_eq!(kinds(&f), vec![FindingKind::TooLong]);
        assert!(f[0].0.detail.contains('5') && f[0].0.detail.contains('4'));
        assert!(check(&input("1234", None, Some("p")), &p).is_empty());
    }

    #[test]
    fn blank_answer_and_missing_provenance() {
        let p = PolicySettings::default();
        let f = check(&input(" \n\t", None, None), &p);
        assert_eq!(
            kinds(&f),
            vec![FindingKind::EmptyAnswer, FindingKind::MissingProvenance]
        );
        let f = check(&input("a", None, Some("  ")), &p);
        assert_eq!(kinds(&f), vec![FindingKind::MissingProvenance]);
        assert!(f[0].0.detail.contains("empty"));
        let relaxed = PolicySettings {
            require_provenance: false,
            ..Default::default()
        };
        assert!(check(&input("a", None, None), &relaxed).is_empty());
    }

    #[test]
    fn forbidden_terms_are_case_insensitive_and_named_as_configured() {
        let p = PolicySettings {
            forbidden_terms: vec!["Guaranteed Returns".into(), "ÉTÉ".into(), "absent".into()],
            ..Default::default()
        };
        let f = check(
            &input("We offer guaranteed RETURNS all été long", None, Some("p")),
            &p,
        );
        assert_eq!(
            kinds(&f),
            vec![FindingKind::ForbiddenTerm, FindingKind::ForbiddenTerm]
        );
        assert!(f[0].0.detail.contains("\"Guaranteed Returns\""));
        assert!(f[1].0.detail.contains("\"ÉTÉ\""));
        assert_eq!(f[0].1, Action::Reject);
    }

    #[test]
    fn forbidden_terms_use_full_case_folding() {
        let p = PolicySettings {
            forbidden_terms: vec!["STRASSE".into(), "ﬁle".into(), "straße".into()],
            ..Default::default()
        };
        let found = |answer: &str| -> Vec<String> {
            check(&input(answer, None, Some("p")), &p)
                .into_iter()
                .map(|(f, _)| f.detail)
                .collect()
        };
        // `ß` folds to `ss`, the `ﬁ` ligature to `fi`, both ways round.
        assert_eq!(found("die straße").len(), 2);
        assert_eq!(found("DIE STRASSE").len(), 2);
        assert_eq!(
            found("a FILE here"),
            vec!["answer contains the forbidden term \"ﬁle\" at bytes 2..6: \"FILE\"".to_string()]
        );
        assert_eq!(found("a ﬁle here").len(), 1);
        assert!(found("strase, fle").is_empty());
    }

    #[test]
    fn forbidden_terms_are_found_however_they_are_disguised() {
        let p = PolicySettings {
            forbidden_terms: vec!["guaranteed return".into()],
            ..Default::default()
        };
        for answer in [
            "a guaranteed  return",
            "a guaranteed\treturn",
            "a guaranteed\nreturn",
            "a guaranteed\u{a0}return",
            "a guaran\u{200b}teed return",
            "a guaranteed re\u{ad}turn",
            "a gu\u{430}ranteed return",
            "a ｇｕａｒａｎｔｅｅｄ ｒｅｔｕｒｎ",
            "a guaranteed re[^1]turn",
        ] {
            let markers: Vec<Range<usize>> =
                answer.find("[^1]").map(|i| i..i + 4).into_iter().collect();
            let f = check(
                &PolicyInput {
                    answer,
                    confidence: None,
                    provenance: Some("p"),
                    markers: &markers,
                },
                &p,
            );
            assert_eq!(kinds(&f), vec![FindingKind::ForbiddenTerm], "{answer:?}");
            // The detail points at the original bytes, from the `g` on.
            let want = format!("at bytes 2..{}:", answer.len());
            assert!(
                f[0].0.detail.contains(&want),
                "{answer:?}: {}",
                f[0].0.detail
            );
        }
        assert!(check(&input("a guaranteed returns", None, Some("p")), &p).len() == 1);
        assert!(check(&input("a guaranteed turn", None, Some("p")), &p).is_empty());
    }
}
