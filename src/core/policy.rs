//! Policy checks: the gate between untrusted model output and the
//! consumers that trust it. Each rule yields at most one finding (the
//! forbidden-term rule one per configured term found), paired with the action
//! configured for it; deciding what the action means is `decision`'s job.
//!
//! Pure: no I/O, no clock.

use super::settings::PolicySettings;
use super::types::{Action, Finding, FindingKind};

/// The facts about an answer the policy looks at.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInput<'a> {
    pub answer: &'a str,
    pub confidence: Option<f64>,
    pub provenance: Option<&'a str>,
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
        // Full Unicode case folding (`straße` ~ `STRASSE`, `ﬁle` ~ `file`).
        // For ASCII text, folding is exactly ASCII lowercasing: the common
        // case skips the per-char folding iterator.
        let hay = fold(input.answer);
        let finder =
            |needle: &str| memchr::memmem::find(hay.as_bytes(), needle.as_bytes()).is_some();
        for term in &p.forbidden_terms {
            if finder(&fold(term)) {
                out.push((
                    Finding::new(
                        FindingKind::ForbiddenTerm,
                        format!("answer contains the forbidden term {term:?}"),
                    ),
                    p.forbidden_term,
                ));
            }
        }
    }
    out
}

/// Full case folding (Unicode `CaseFolding.txt`, status C+F) via `caseless`.
fn fold(s: &str) -> String {
    if s.is_ascii() {
        s.to_ascii_lowercase()
    } else {
        caseless::default_case_fold_str(s)
    }
}

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
            vec!["answer contains the forbidden term \"ﬁle\"".to_string()]
        );
        assert_eq!(found("a ﬁle here").len(), 1);
        assert!(found("strase, fle").is_empty());
    }
}
