//! Explanations: the finding details and the corrective-prompt text that
//! name what a claim is missing. Pure text building from a [`Grounding`].

use super::{Claim, Grounding, MAX_TERMS};
use crate::core::settings::GroundingSettings;

/// `sentence 3 cites [^1]: support 0.31; not in source 1: "emea", "apac"`.
pub fn unsupported_detail(index: usize, claim: &Claim) -> String {
    // Pushed piece by piece with `itoa`: `write!` cost more than the whole
    // scoring of a many-marker claim.
    let mut num = itoa::Buffer::new();
    let mut d = String::with_capacity(64 + 6 * claim.markers.len() + 32 * MAX_TERMS);
    d.push_str("sentence ");
    d.push_str(num.format(index + 1));
    // A sentence without a marker is checked against the markers after it
    // on its line (the sources are the markers' numbers).
    let (lead, markers) = if claim.markers.is_empty() {
        (", covered by ", &claim.sources)
    } else {
        (" cites ", &claim.markers)
    };
    d.push_str(lead);
    for &m in markers {
        d.push_str("[^");
        d.push_str(num.format(m));
        d.push(']');
    }
    if claim.markers.is_empty() {
        d.push_str(" after it");
    }
    // Two decimals by integer arithmetic: float formatting is the slow part.
    let cents = (claim.support.unwrap_or(0.0) * 100.0).round() as u32;
    d.push_str(": support ");
    d.push_str(num.format(cents / 100));
    d.push('.');
    if cents % 100 < 10 {
        d.push('0');
    }
    d.push_str(num.format(cents % 100));
    let sources = |d: &mut String, lead: &str| {
        d.push_str(lead);
        d.push_str(if claim.sources.len() == 1 { " " } else { "s " });
        for (i, &s) in claim.sources.iter().enumerate() {
            if i > 0 {
                d.push_str(", ");
            }
            d.push_str(itoa::Buffer::new().format(s));
        }
        d.push(':');
    };
    if !claim.unsupported_terms.is_empty() {
        sources(&mut d, "; not in source");
        quote_terms(&mut d, &claim.unsupported_terms);
    }
    if !claim.apart_terms.is_empty() {
        sources(&mut d, "; apart from the rest in source");
        quote_terms(&mut d, &claim.apart_terms);
    }
    if claim.contradicted {
        d.push_str("; its best sentence in the source negates it");
    }
    if claim.compared {
        d.push_str("; the source states no such comparison");
    }
    if claim.asked {
        d.push_str("; a question, which the source does not ask");
    }
    if let Some(w) = claim.opposed {
        d.push_str("; the source says \"");
        d.push_str(w);
        d.push_str("\" instead");
    }
    if let Some(q) = claim.qualified {
        d.push_str("; the source qualifies it with \"");
        d.push_str(q);
        d.push('"');
    }
    if let Some(m) = &claim.misattributed {
        d.push_str(if m.other_name {
            "; the source says \""
        } else {
            "; the source does not say \""
        });
        d.push_str(&m.word);
        d.push_str("\" of \"");
        d.push_str(&m.name);
        d.push('"');
    }
    d
}

/// `sentence 2 has no citation but states "emea", "118"`.
pub fn uncited_detail(index: usize, claim: &Claim) -> String {
    let mut d = format!("sentence {} has no citation but states", index + 1);
    quote_terms(&mut d, &claim.checkable_terms);
    d
}

fn quote_terms(d: &mut String, terms: &[String]) {
    for (i, t) in terms.iter().enumerate() {
        d.push_str(if i == 0 { " " } else { ", " });
        // Terms are words (letters, digits and in-word `'` `.` `:` `,`),
        // so quoting needs no escapes.
        d.push('"');
        d.push_str(t);
        d.push('"');
    }
}

/// The part of the corrective prompt about grounding: the claims to fix, with
/// their missing terms; `None` when no grounding finding is among `problems`.
pub fn prompt_addendum(
    answer: &str,
    g: &Grounding,
    min_support: f64,
    uncited: bool,
) -> Option<String> {
    use std::fmt::Write as _;
    // Bounded like the citation problems: the first few, then a count, so a
    // long answer cannot blow the retry request up.
    const LISTED: usize = 20;
    let mut p = String::new();
    let mut listed = 0usize;
    let mut more = 0usize;
    for (i, c) in g.claims.iter().enumerate() {
        let flagged = c.is_unsupported(min_support)
            || (uncited && c.support.is_none() && !c.checkable_terms.is_empty());
        if !flagged {
            continue;
        }
        if listed == LISTED {
            more += 1;
            continue;
        }
        listed += 1;
        let text = quote(&answer[c.span.clone()]);
        if c.is_unsupported(min_support) {
            let _ = write!(
                p,
                "- sentence {}: {:?} is not supported by its cited source(s); missing: {}",
                i + 1,
                text,
                c.unsupported_terms.join(", ")
            );
            if !c.apart_terms.is_empty() {
                let _ = write!(
                    p,
                    "; stated apart from the rest: {}",
                    c.apart_terms.join(", ")
                );
            }
            if c.contradicted {
                p.push_str("; the source negates it");
            }
            if c.compared {
                p.push_str("; the source states no such comparison");
            }
            if c.asked {
                p.push_str("; it asks a question, which states nothing a source can support");
            }
            if let Some(w) = c.opposed {
                let _ = write!(p, "; the source says \"{w}\" instead");
            }
            if let Some(q) = c.qualified {
                let _ = write!(p, "; the source qualifies it with \"{q}\"");
            }
            if let Some(m) = &c.misattributed {
                let says = if m.other_name { "says" } else { "does not say" };
                let _ = write!(p, "; the source {says} \"{}\" of \"{}\"", m.word, m.name);
            }
            p.push('\n');
        } else if uncited && c.support.is_none() && !c.checkable_terms.is_empty() {
            let _ = writeln!(
                p,
                "- sentence {}: {:?} cites no source; states: {}",
                i + 1,
                text,
                c.checkable_terms.join(", ")
            );
        }
    }
    if more > 0 {
        let _ = writeln!(p, "- … and {more} more claims like these");
    }
    (!p.is_empty()).then(|| {
        format!(
            "\nThese claims are not backed by the sources they cite:\n{p}For each, cite a source that states these terms, or drop the claim."
        )
    })
}

/// A claim as quoted in the corrective prompt: at most 300 bytes.
fn quote(text: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 300;
    if text.len() <= MAX {
        return text.into();
    }
    format!("{}…", &text[..text.floor_char_boundary(MAX)]).into()
}

/// The findings of one answer with their configured actions, in claim order.
pub fn findings(
    g: &Grounding,
    settings: &GroundingSettings,
) -> Vec<(crate::core::types::Finding, crate::core::types::Action)> {
    use crate::core::types::{Finding, FindingKind};
    let mut out = Vec::new();
    for (i, c) in g.claims.iter().enumerate() {
        match c.support {
            Some(s) if super::is_unsupported(s, settings.min_support) => out.push((
                Finding::new(FindingKind::UnsupportedClaim, unsupported_detail(i, c)),
                settings.unsupported_claim,
            )),
            None => {
                if let Some(action) = settings.uncited_claim
                    && !c.checkable_terms.is_empty()
                {
                    out.push((
                        Finding::new(FindingKind::UncitedClaim, uncited_detail(i, c)),
                        action,
                    ));
                }
            }
            Some(_) => {}
        }
    }
    out
}
