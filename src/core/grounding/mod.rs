//! Grounding support: does each cited source actually state the sentence
//! that cites it?
//!
//! The answer is split into claims (sentences; a marker right after a
//! sentence's end belongs to it; fenced code is not a claim). Each claim that
//! cites at least one resolvable source gets a support score in `[0, 1]`
//! against the union of the cited sources: the weighted share of its terms
//! found there (each missing term counting `missing_penalty` times), mixed
//! with the share of its consecutive term pairs found side by side
//! (`pair_weight`), and pulled toward the whole answer's support
//! (`prior_weight`) so a two-word sentence is not judged on two words alone.
//! A claim stitched together from different source sentences loses
//! `spread_penalty` per unit of weight found only outside its main sentence
//! (one per cited source). Terms are words from Unicode word segmentation,
//! case-folded and Snowball-stemmed (a source word of letters joined by `.`,
//! as in "Hawaii.Aulani", is also indexed part by part); stop words weigh
//! little, fillers nothing. Named entities (capitalised non-stop words past
//! the sentence start, all-caps words) and negations weigh more and cap the
//! score when missing; numbers are held to a strict rule: a number found in
//! none of the cited sources makes the claim score 0.
//!
//! Lexical on purpose: deterministic, explainable (the missing terms are the
//! explanation) and microsecond-scale. It cannot see paraphrase (a claim in
//! other words scores low) nor most contradictions (a claim that contradicts
//! its source with the same words scores high).
//!
//! Pure: no I/O, no clock, no environment. Terms are compared as 64-bit
//! hashes, and working memory is kept per thread, so in steady state a
//! record allocates its result (the claim list, each reported term), not
//! per claim nor per word. The only state kept between calls is bounded
//! per-thread memos of pure functions (word → stem and word classes; source
//! text → what indexing it adds), which change speed, never a result.

use std::ops::Range;

use smallvec::SmallVec;

use super::citation::Citation;
use super::settings::GroundingSettings;

mod cache;
mod claims;
mod explain;
mod index;
mod lexicon;
mod memo;
mod score;

pub use explain::{findings, prompt_addendum, uncited_detail, unsupported_detail};
use score::{SCRATCH, Scratch, analyze_with};

/// Most terms named per unsupported claim (finding detail and envelope).
pub const MAX_TERMS: usize = 5;

/// A claim's marker numbers: inline up to four, so a claim costs no
/// allocation of its own.
pub type Markers = SmallVec<[u32; 4]>;

/// One claim of the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Byte range into the answer, markers included.
    pub span: Range<usize>,
    /// Every marker in the claim, in order of appearance (resolvable or not).
    pub markers: Markers,
    /// Support against the cited sources; `None` when no marker resolves.
    pub support: Option<f64>,
    /// Up to [`MAX_TERMS`] case-folded terms not found in the cited sources:
    /// numbers and entities first, then other words, each in order of appearance.
    pub unsupported_terms: Vec<String>,
    /// Up to [`MAX_TERMS`] case-folded terms the cited sources hold, but only
    /// outside the claim's main sentences, one per cited source (a claim
    /// stitched from different sentences; see `spread_penalty`).
    pub apart_terms: Vec<String>,
    /// Source numbers (1-based, ascending, deduplicated) the claim resolves to.
    pub sources: Markers,
    /// Up to [`MAX_TERMS`] numbers or entities in an uncited claim: what makes
    /// it checkable. Filled only when `uncited_claim` is switched on.
    pub checkable_terms: Vec<String>,
}

/// The grounding result of one answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Grounding {
    pub claims: Vec<Claim>,
    /// Minimum support over cited claims; `None` when no claim cites a
    /// resolvable source.
    pub score: Option<f64>,
}

impl Grounding {
    pub fn cited_claims(&self) -> usize {
        self.claims.iter().filter(|c| c.support.is_some()).count()
    }

    pub fn unsupported_claims(&self, min_support: f64) -> usize {
        self.claims
            .iter()
            .filter(|c| c.support.is_some_and(|s| s < min_support))
            .count()
    }
}

/// Grounding of `answer` given its parsed citations and the text of every
/// source (in input order).
pub fn analyze(
    answer: &str,
    citations: &[Citation],
    sources: &[&str],
    settings: &GroundingSettings,
) -> Grounding {
    analyze_counting(answer, citations, sources, settings, &mut 0)
}

/// [`analyze`], counting work into `steps` so tests can check linearity by
/// counting instead of timing.
pub(crate) fn analyze_counting(
    answer: &str,
    citations: &[Citation],
    sources: &[&str],
    settings: &GroundingSettings,
    steps: &mut usize,
) -> Grounding {
    SCRATCH.with(|scratch| {
        // `try_borrow_mut` cannot fail (no re-entry), but a fresh scratch is
        // as correct as the shared one, only slower.
        match scratch.try_borrow_mut() {
            Ok(mut s) => analyze_with(answer, citations, sources, settings, steps, &mut s),
            Err(_) => analyze_with(
                answer,
                citations,
                sources,
                settings,
                steps,
                &mut Scratch::new(),
            ),
        }
    })
}

#[cfg(test)]
mod tests;
