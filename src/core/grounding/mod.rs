//! Grounding support: does each cited source actually state the sentence
//! that cites it?
//!
//! The answer is split into claims (sentences; a marker right after a
//! sentence's end belongs to it; fenced code is not a claim). Sources are
//! split into sentences by the same rule (initials, abbreviations and
//! sentences glued without a space included), so a claim copied from a
//! source is found whole; both are read with typeset spaces, invisible
//! characters and degree signs made plain (`typeset`: "$5\u{a0}billion" is
//! "$5 billion", "1\u{202f}200" is "1,200", "30\u{b0}C" is "30 degrees
//! Celsius"). Each claim that cites at least one resolvable
//! source gets a support score in `[0, 1]` against the union of the cited
//! sources. Terms are words from Unicode word segmentation, case-folded and
//! Snowball-stemmed; stop words count apart, fillers not at all; named
//! entities (capitalised non-stop words past the sentence start, all-caps
//! words) count apart from other words. A claim word the sources lack is
//! also looked up by its other spellings (numbers in words or digits, UK/US
//! spellings, abbreviations) and its WordNet synonyms (`variants`):
//! alternates that depend on the claim's word alone, never on the sources.
//! A phrasal verb of a short table is read as the verb it means, in claims
//! and sources alike ("stepped down": "resign"; `phrases`);
//! a capitalised word or name still missing is looked for as an acronym
//! the sources spell out, or as the acronym of a name (`initials`). A
//! sentence without a
//! marker, followed on its line by a cited one, is checked against that
//! one's sources when it states a number or a name.
//!
//! A claim whose words (stop words too) are all found, with every pair of
//! consecutive content terms side by side in a source, scores 1. Strict
//! rules hold a claim to at most [`model::BROKEN`] (still ranked by the
//! model): a number found in none of the cited sources; a negation the
//! claim states and its best source sentences do not, or the other way
//! round; a comparison the claim states of its subject ("older than",
//! "was born first") in a comparative the sources lack (`comparisons`);
//! a word whose opposite its best sentence states instead ("rose"
//! against "fell") or a number the sources bound the other way ("at least
//! six" against "at most six"; `opposites`); a word it states as done that
//! its best sentence only qualifies ("approved" against "is expected to
//! approve"; `qualifiers`); a word it sets beside a name
//! of its own that the sources say of another name, in its best two
//! sentences ("Neil Gaiman directed Beowulf" against "directed by Robert
//! Zemeckis"); most of its found words outside its best two sentences
//! (words scattered over a page); a word it says of two names at once
//! ("Both A and B were founded in Arizona") that the sources hold away
//! from one of them (`both`); a question of its own, under its own marker,
//! that the sources do not ask word for word. A yes/no question in a source states nothing,
//! unless the answer asks one too. Any other claim is scored by a fitted logistic
//! regression (`model`) over three evidence features: the claim's share of
//! content terms found (leaning on the answer's share for a short claim),
//! whether a name it states is missing, and the share of all the answer's
//! words found. Few features on purpose: what the dev sets' shapes (claim
//! length, source size) would add does not carry to data from another
//! source.
//!
//! Lexical on purpose: deterministic, explainable (the missing terms are the
//! explanation) and microsecond-scale. It cannot see paraphrase (a claim in
//! other words scores low) nor most contradictions (a claim that contradicts
//! its source with the same words scores high).
//!
//! Pure: no I/O, no clock, no environment. Terms are compared by dense
//! word ids (one per stem, from the thread's word memo), the claims' terms
//! are declared before the sources are read so that a source keeps only
//! what the claims ask about, and working memory is kept per thread, so in
//! steady state a record allocates its result (the claim list, each
//! reported term), not per claim nor per word. The only state kept between calls is bounded
//! per-thread memos of pure functions (word → stem and word classes; source
//! text → what indexing it adds), which change speed, never a result.

use std::cell::RefCell;
use std::ops::Range;

use smallvec::SmallVec;

use super::citation::Citation;
use super::settings::GroundingSettings;

mod both;
mod cache;
mod claims;
mod comparisons;
mod explain;
mod index;
mod initials;
mod lexicon;
mod memo;
pub mod model;
mod opposites;
mod phrases;
mod qualifiers;
mod score;
mod typeset;
mod variants;

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
    /// For a flagged claim, up to [`MAX_TERMS`] case-folded terms the cited
    /// sources hold, but only outside the claim's best two sentences (a
    /// claim stitched from scattered words).
    pub apart_terms: Vec<String>,
    /// The claim's best source sentence negates what the claim states
    /// without negation.
    pub contradicted: bool,
    /// The claim states a comparison ("older than", "was born first") in
    /// a comparative its cited sources do not hold.
    pub compared: bool,
    /// The claim asks a question under a marker of its own ("Do you like
    /// Brady?" with a marker after it) that its cited sources do not ask
    /// word for word: a question states nothing for a source to support.
    pub asked: bool,
    /// What the sources say instead of a claim's word or bound: a word of
    /// the claim's best sentence that says the opposite of a claim word the
    /// sentence does not state ("fell" against "rose"), as the table of
    /// opposites writes it (the sentence may inflect it); or the phrase
    /// that bounds a number of the claim the other way ("at most" against
    /// "at least six").
    pub opposed: Option<&'static str>,
    /// A qualifier under which the claim's best source sentence holds a
    /// word the claim states as done ("expected to" against "approved":
    /// "The regulator is expected to approve the deal"), or a rank before
    /// a superlative ("second" against "the largest bank"), as the tables
    /// of qualifiers write it.
    pub qualified: Option<&'static str>,
    /// A relation word of the claim that its sources say of another name
    /// than the claim's ("directed" of "Robert Zemeckis" against "Neil
    /// Gaiman directed Beowulf"), or a word the claim says of two names at
    /// once that its sources hold only away from one of them ("Arizona" of
    /// "Your Pie" against "Both Eatza Pizza and Your Pie were founded in
    /// Arizona").
    pub misattributed: Option<Box<Misattributed>>,
    /// Source numbers (1-based, ascending, deduplicated) the claim resolves to.
    pub sources: Markers,
    /// Up to [`MAX_TERMS`] numbers or entities in an uncited claim: what makes
    /// it checkable. Filled only when `uncited_claim` is switched on.
    pub checkable_terms: Vec<String>,
    /// What the support was computed from; `None` when uncited.
    pub evidence: Option<Evidence>,
}

/// A claim word the sources do not say of the name the claim says it of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misattributed {
    pub word: String,
    pub name: String,
    /// `word` as a source writes it and `name` the other name it stands
    /// beside there ("directed" of "Robert Zemeckis"); or, when false,
    /// `word` as the claim writes it and `name` one of two names the claim
    /// says it of, that the sources do not ("Arizona" of "Your Pie").
    pub other_name: bool,
}

/// Whether a lower-cased word is one of the check's English stop words
/// (negations are not): words with little checkable content, which the
/// naive content-word baseline of `groundgate eval` leaves out.
pub fn is_stop_word(lower: &str) -> bool {
    lexicon::is_stop(lower)
}

/// Whether a cited claim of this support is an `unsupported_claim`: the one
/// place the threshold rule is written.
pub fn is_unsupported(support: f64, min_support: f64) -> bool {
    support < min_support
}

impl Claim {
    /// Cited, and its support is below `min_support`.
    pub fn is_unsupported(&self, min_support: f64) -> bool {
        self.support.is_some_and(|s| is_unsupported(s, min_support))
    }
}

/// A cited claim's evidence: the model's features, and the strict rule
/// that decided the support instead of the model, if any.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evidence {
    pub features: [f64; model::FEATURES],
    /// `Some(1.0)`: every word and pair found; `Some(0.0)`: a strict rule
    /// broken (a number, a negation, an opposite or a bound the sources
    /// contradict, a word they say of another name, scattered words).
    pub rule: Option<f64>,
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
            .filter(|c| c.is_unsupported(min_support))
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
    if !typeset::needed(answer) && !sources.iter().any(|s| typeset::needed(s)) {
        return analyze_read(answer, citations, sources, settings, steps);
    }
    // Typeset text read as the same text typed plainly; the claims' spans
    // are given back in the answer's own offsets.
    let read = typeset::plain(answer);
    let cited: Vec<Citation> = citations
        .iter()
        .map(|c| Citation {
            marker: c.marker,
            span: read.plain(c.span.start)..read.plain(c.span.end),
        })
        .collect();
    let texts: Vec<std::borrow::Cow<str>> = sources
        .iter()
        .map(|s| match typeset::needed(s) {
            true => typeset::plain(s).text.into(),
            false => (*s).into(),
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
    let mut g = analyze_read(&read.text, &cited, &texts, settings, steps);
    for claim in &mut g.claims {
        claim.span = read.original_range(&claim.span);
    }
    g
}

/// [`analyze_counting`] of text the readers take as it is.
fn analyze_read(
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

/// Drops the thread's word memo, source cache and index tables, for a
/// thread that unwound out of a check: what they held may be half-written,
/// and a fresh start gives the same results as any other.
pub(crate) fn forget_thread_state() {
    SCRATCH.with(|scratch| {
        if let Ok(mut s) = scratch.try_borrow_mut() {
            *s = Scratch::new();
        }
    });
}

/// The least the check's word reader does with `texts`: every word of the
/// raw texts (a marker's number too) scanned and looked up in a word memo
/// (case-folded, and stemmed the first time the memo meets it), nothing
/// indexed or scored. Returns how many words were read. For the process
/// bench, which measures it beside grounding as the floor of reading every
/// word with today's scanner and memo; not part of the check. Its memo is
/// its own, kept per thread and bounded like the check's, so it never
/// changes what the check's memo holds.
#[doc(hidden)]
pub fn read_every_word(texts: &[&str]) -> usize {
    thread_local! {
        static FOLDER: RefCell<memo::Folder> = RefCell::new(memo::Folder::new());
    }
    FOLDER.with_borrow_mut(|folder| {
        folder.reset_if_full();
        let (mut words, mut ids) = (0usize, 0u32);
        for text in texts {
            lexicon::for_each_word(text, &mut 0, &mut |w: &[u8], _, ascii: bool| {
                ids ^= folder.fold_packed(w, ascii).id();
                words += 1;
            });
        }
        // The ids are not used: `black_box` keeps their look-ups.
        std::hint::black_box(ids);
        words
    })
}

#[cfg(test)]
mod tests;
