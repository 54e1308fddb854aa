//! The strict/lenient decision and the corrective prompt.
//!
//! Given the findings of the citation parser and the policy checks, the
//! effective mode and which attempt this is, decide: accept, ask for the one
//! retry, or give up. Pure and deterministic: the corrective prompt is
//! byte-identical for identical input.

use std::fmt::Write as _;

use super::types::{Action, Finding, FindingKind, Mode};

/// Which attempt an answer is. The type is the retry budget: there is
/// exactly one retry and no third attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    First,
    Retry,
}

impl Attempt {
    pub fn retry_count(self) -> u8 {
        match self {
            Attempt::First => 0,
            Attempt::Retry => 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    /// Ask the model once more with a corrective prompt.
    Retry,
    /// Give up: finalized with `validation.ok = false`.
    Reject,
}

/// The verdict with findings sorted into what blocks and what is only reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    /// Reported, never blocking.
    pub warnings: Vec<Finding>,
    /// What blocked acceptance: the give-up errors, or for `Retry` the problems
    /// the corrective prompt lists. Empty exactly when the verdict is `Accept`.
    pub errors: Vec<Finding>,
}

/// Applies the provider capability fallback: a provider configured as unable
/// to cite is validated leniently even when strict was requested, and says so.
pub fn effective_mode(
    requested: Mode,
    provider: &str,
    non_citing: &[String],
) -> (Mode, Option<Finding>) {
    if requested == Mode::Strict && non_citing.iter().any(|p| p == provider) {
        (
            Mode::Lenient,
            Some(Finding::new(FindingKind::ModeFallback, provider)),
        )
    } else {
        (requested, None)
    }
}

/// Decides one answer.
///
/// `citation` are the parser's malformed/out-of-range findings in input order;
/// `policy` the policy findings with their configured actions. A policy
/// `reject` gives up in either mode (the policy is a gate, not a citation
/// style); `retry` findings count like citation failures, so they block only
/// in strict mode; `warn` never blocks.
pub fn decide(
    mode: Mode,
    attempt: Attempt,
    fallback: Option<Finding>,
    citation: Vec<Finding>,
    policy: Vec<(Finding, Action)>,
) -> Decision {
    let strict = mode == Mode::Strict;
    let mut warnings: Vec<Finding> = fallback.into_iter().collect();
    let mut errors = Vec::new();
    let mut any_reject = false;
    let mut any_retryable = false;

    let citation = citation.into_iter().map(|f| (f, Action::Retry));
    for (finding, action) in citation.chain(policy) {
        match action {
            Action::Reject => {
                any_reject = true;
                errors.push(finding);
            }
            Action::Retry if strict => {
                any_retryable = true;
                errors.push(finding);
            }
            Action::Retry | Action::Warn => warnings.push(finding),
        }
    }

    let verdict = if any_reject {
        Verdict::Reject
    } else if !any_retryable {
        Verdict::Accept
    } else {
        match attempt {
            Attempt::First => Verdict::Retry,
            Attempt::Retry => Verdict::Reject,
        }
    };
    Decision {
        verdict,
        warnings,
        errors,
    }
}

/// Problems listed one per line in the corrective prompt.
pub const MAX_PROMPT_PROBLEMS: usize = 20;

/// The prompt sent back to the model with the retry request.
pub fn corrective_prompt(num_sources: usize, problems: &[Finding]) -> String {
    let mut p = String::with_capacity(512 + problems.len().min(MAX_PROMPT_PROBLEMS + 1) * 96);
    p.push_str("Your previous answer could not be accepted.\n");
    p.push_str(
        "Citation markers must refer to real sources by their 1-based position in the provided context: [^N] means the N-th source as listed.\n",
    );
    match num_sources {
        0 => p.push_str(
            "The context provided no sources, so the answer must not contain any [^N] marker.\n",
        ),
        1 => p.push_str("The only valid marker is [^1].\n"),
        n => {
            let _ = writeln!(p, "Valid markers are [^1] through [^{n}].");
        }
    }
    p.push_str("Problems found:\n");
    // Bounded: one line per problem would let a marker-stuffed answer grow
    // the prompt without limit.
    for f in problems.iter().take(MAX_PROMPT_PROBLEMS) {
        let _ = writeln!(p, "- [{}] {}", f.kind, f.detail);
    }
    if problems.len() > MAX_PROMPT_PROBLEMS {
        let _ = writeln!(
            p,
            "- … and {} more problems of the same kinds",
            problems.len() - MAX_PROMPT_PROBLEMS
        );
    }
    p.push_str(
        "Do not invent sources, and do not renumber them: cite only what the provided sources support.\n",
    );
    p.push_str("Reissue the whole answer, corrected, not only the changed sentences.");
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(kind: FindingKind, d: &str) -> Finding {
        Finding::new(kind, d)
    }

    fn cite_problems() -> Vec<Finding> {
        vec![
            f(
                FindingKind::OutOfRange,
                "citation [^5] refers to source 5, but only 2 sources exist",
            ),
            f(FindingKind::Malformed, "malformed citation marker [^x]"),
        ]
    }

    #[test]
    fn lenient_always_accepts_and_keeps_warnings() {
        for attempt in [Attempt::First, Attempt::Retry] {
            let d = decide(Mode::Lenient, attempt, None, cite_problems(), vec![]);
            assert_eq!(d.verdict, Verdict::Accept);
            assert_eq!(d.warnings, cite_problems());
            assert!(d.errors.is_empty());
        }
    }

    #[test]
    fn strict_clean_accepts_on_either_attempt() {
        for attempt in [Attempt::First, Attempt::Retry] {
            let d = decide(Mode::Strict, attempt, None, vec![], vec![]);
            assert_eq!(d.verdict, Verdict::Accept);
            assert!(d.errors.is_empty() && d.warnings.is_empty());
        }
    }

    #[test]
    fn strict_first_attempt_failure_retries_with_problems() {
        let d = decide(Mode::Strict, Attempt::First, None, cite_problems(), vec![]);
        assert_eq!(d.verdict, Verdict::Retry);
        assert_eq!(d.errors, cite_problems());
    }

    #[test]
    fn strict_retry_attempt_failure_gives_up_with_errors_in_input_order() {
        let d = decide(Mode::Strict, Attempt::Retry, None, cite_problems(), vec![]);
        assert_eq!(d.verdict, Verdict::Reject);
        assert_eq!(d.errors, cite_problems());
        assert!(d.warnings.is_empty());
    }

    #[test]
    fn policy_actions() {
        let low = f(FindingKind::LowConfidence, "low");
        let term = f(FindingKind::ForbiddenTerm, "term");
        // warn never blocks
        let d = decide(
            Mode::Strict,
            Attempt::First,
            None,
            vec![],
            vec![(low.clone(), Action::Warn)],
        );
        assert_eq!(d.verdict, Verdict::Accept);
        assert_eq!(d.warnings, vec![low.clone()]);
        // retry counts like a citation failure in strict mode...
        let d = decide(
            Mode::Strict,
            Attempt::First,
            None,
            vec![],
            vec![(low.clone(), Action::Retry)],
        );
        assert_eq!(d.verdict, Verdict::Retry);
        let d = decide(
            Mode::Strict,
            Attempt::Retry,
            None,
            vec![],
            vec![(low.clone(), Action::Retry)],
        );
        assert_eq!(d.verdict, Verdict::Reject);
        // ...and is only a warning in lenient mode
        let d = decide(
            Mode::Lenient,
            Attempt::First,
            None,
            vec![],
            vec![(low.clone(), Action::Retry)],
        );
        assert_eq!(d.verdict, Verdict::Accept);
        // reject gives up at once, in both modes, even on the first attempt
        for mode in [Mode::Strict, Mode::Lenient] {
            let d = decide(
                mode,
                Attempt::First,
                None,
                vec![],
                vec![(term.clone(), Action::Reject)],
            );
            assert_eq!(d.verdict, Verdict::Reject);
            assert_eq!(d.errors, vec![term.clone()]);
        }
        // every blocking finding is listed when giving up
        let d = decide(
            Mode::Strict,
            Attempt::First,
            None,
            cite_problems(),
            vec![(term.clone(), Action::Reject)],
        );
        assert_eq!(d.verdict, Verdict::Reject);
        assert_eq!(d.errors.len(), 3);
        assert_eq!(d.errors[2], term);
    }

    #[test]
    fn provider_fallback_to_lenient() {
        let nc = vec!["local-llama".to_string()];
        let (m, w) = effective_mode(Mode::Strict, "local-llama", &nc);
        assert_eq!(m, Mode::Lenient);
        assert_eq!(w, Some(f(FindingKind::ModeFallback, "local-llama")));
        assert_eq!(
            effective_mode(Mode::Strict, "openai", &nc),
            (Mode::Strict, None)
        );
        assert_eq!(
            effective_mode(Mode::Lenient, "local-llama", &nc),
            (Mode::Lenient, None)
        );
        let d = decide(m, Attempt::First, w.clone(), cite_problems(), vec![]);
        assert_eq!(d.verdict, Verdict::Accept);
        assert_eq!(d.warnings[0], w.unwrap());
        assert_eq!(d.warnings.len(), 3);
    }

    #[test]
    fn corrective_prompt_contract() {
        let p = corrective_prompt(2, &cite_problems());
        assert!(p.contains("1-based position"));
        assert!(p.contains("[^1] through [^2]"));
        assert!(p.contains(
            "- [out_of_range] citation [^5] refers to source 5, but only 2 sources exist\n"
        ));
        assert!(p.contains("- [malformed] malformed citation marker [^x]\n"));
        assert!(p.contains("Do not invent"));
        assert!(p.contains("renumber"));
        assert!(p.contains("Reissue the whole answer"));
        assert_eq!(
            p,
            corrective_prompt(2, &cite_problems()),
            "byte-identical for identical input"
        );
        assert!(corrective_prompt(0, &cite_problems()).contains("no sources"));
        assert!(corrective_prompt(1, &cite_problems()).contains("[^1]"));
    }

    #[test]
    fn corrective_prompt_lists_at_most_20_problems() {
        let many: Vec<Finding> = (0..13_000)
            .map(|i| {
                f(
                    FindingKind::OutOfRange,
                    &format!("citation [^{i}] is out of range"),
                )
            })
            .collect();
        let p = corrective_prompt(2, &many);
        assert_eq!(p.lines().filter(|l| l.starts_with("- [")).count(), 20);
        assert!(
            p.contains("- … and 12980 more problems of the same kinds\n"),
            "{p}"
        );
        assert!(p.len() < 4096, "{} bytes", p.len());
        assert!(p.contains("Do not invent"));
    }
}
