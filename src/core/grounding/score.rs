//! Scoring: each cited claim's terms looked up in its cited sources, weighed
//! by class, and combined into a support in `[0, 1]` with the answer's
//! pooled support as a prior.

use std::cell::RefCell;
use std::ops::Range;

use super::claims::claim_spans;
use super::index::{SourceIndex, pair_hash};
use super::lexicon::{fold_into, for_each_word, spelled_other};
use super::memo::Folder;
use super::{Claim, Grounding, MAX_TERMS, Markers};
use crate::core::citation::Citation;
use crate::core::settings::GroundingSettings;
use crate::core::terms::ascii_word;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TermClass {
    Number,
    Entity,
    Word,
    Function,
}

/// A thread's grounding state: the word memo, the source index's memory
/// and the per-record working lists (reused: a record allocates its result,
/// not its working memory).
pub(super) struct Scratch {
    folder: Folder,
    pub(super) index: SourceIndex,
    spans: Vec<Range<usize>>,
    banks: Vec<(usize, u64)>,
    terms: Vec<Term>,
    /// (start in the answer, length, all ASCII) of each word of a claim.
    words: Vec<(usize, usize, bool)>,
    tallies: Vec<Option<Tally>>,
}

impl Scratch {
    pub(super) fn new() -> Self {
        Scratch {
            folder: Folder::new(),
            index: SourceIndex::new(),
            spans: Vec::new(),
            banks: Vec::new(),
            terms: Vec::new(),
            words: Vec::new(),
            tallies: Vec::new(),
        }
    }

    /// The word memo, for tests that drive the source index directly.
    #[cfg(test)]
    pub(super) fn parts(&mut self) -> (&mut Folder, &mut SourceIndex) {
        (&mut self.folder, &mut self.index)
    }
}

thread_local! {
    /// Kept across records: the memo pays off over a stream, and the index
    /// tables are reused instead of allocated per record.
    pub(super) static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

/// Weight of the found content terms left outside the claim's main
/// sentences: a claim stitched together from words of different sentences
/// ("Stanford University is located in Chestnut Hill" from a source that
/// says each in its own sentence). A claim may draw on one sentence per
/// cited source (`allowed`): the sentence holding the most uncovered weight
/// is taken, `allowed` times. Marks the terms left over `apart`.
pub(super) fn spread(terms: &mut [Term], allowed: usize) -> f64 {
    let mut all = u64::MAX;
    let mut any = 0u64;
    for t in terms.iter().filter(|t| t.sentences != 0) {
        all &= t.sentences;
        any |= t.sentences;
    }
    // Common case: one sentence holds every found term (or none is found).
    if any == 0 || all != 0 {
        return 0.0;
    }
    for t in terms.iter_mut() {
        t.apart = t.sentences != 0;
    }
    // Each round takes a sentence bit no earlier round took, so there are
    // at most 64 rounds whatever the number of cited sources: linear work.
    for _ in 0..allowed {
        let mut by_bit = [0.0f64; 64];
        for t in terms.iter().filter(|t| t.apart) {
            let mut m = t.sentences;
            while m != 0 {
                by_bit[m.trailing_zeros() as usize] += t.weight;
                m &= m - 1;
            }
        }
        let mut best = 0;
        for (b, w) in by_bit.iter().enumerate() {
            if *w > by_bit[best] {
                best = b;
            }
        }
        if by_bit[best] == 0.0 {
            break;
        }
        for t in terms
            .iter_mut()
            .filter(|t| t.sentences & (1u64 << best) != 0)
        {
            t.apart = false;
        }
    }
    terms
        .iter()
        .filter(|t| t.apart)
        .fold(0.0, |a, t| a + t.weight)
}

/// One claim term, by weight class; kept only long enough to score.
pub(super) struct Term {
    class: TermClass,
    weight: f64,
    found: bool,
    negation: bool,
    /// Sentence bits (of the cited sources) holding the term; 0 for a stop
    /// word or a term not found.
    sentences: u64,
    /// Found, but only outside the claim's main sentences.
    apart: bool,
    at: usize,
    len: usize,
}

pub(super) fn analyze_with(
    answer: &str,
    citations: &[Citation],
    sources: &[&str],
    settings: &GroundingSettings,
    steps: &mut usize,
    scratch: &mut Scratch,
) -> Grounding {
    let Scratch {
        folder,
        index,
        spans,
        banks,
        terms,
        words,
        tallies,
    } = scratch;
    claim_spans(answer, citations, steps, spans);
    let ids_reset = folder.reset_if_full();
    index.start(sources.len(), ids_reset);
    let mut claims = Vec::with_capacity(spans.len());
    let mut cite = 0;
    let mut score: Option<f64> = None;
    tallies.clear();

    for span in spans.iter().cloned() {
        // Markers inside the claim (citations are in order of appearance).
        while cite < citations.len() && citations[cite].span.start < span.start {
            cite += 1;
        }
        let first = cite;
        while cite < citations.len() && citations[cite].span.end <= span.end {
            cite += 1;
        }
        let inside = &citations[first..cite];
        let markers: Markers = inside.iter().map(|c| c.marker).collect();
        let mut cited: Markers = inside
            .iter()
            .filter(|c| c.source_index() < sources.len())
            .map(|c| c.marker)
            .collect();
        cited.sort_unstable();
        cited.dedup();

        banks.clear();
        let mut cited_sentences = 0u64;
        for &m in &cited {
            let idx = m as usize - 1;
            index.add(idx, sources[idx], folder, steps);
            cited_sentences |= index.source_sentences[idx];
            let (bank, bit) = (idx / 64, 1u64 << (idx % 64));
            match banks.last_mut() {
                Some((b, mask)) if *b == bank => *mask |= bit,
                _ => banks.push((bank, bit)),
            }
        }

        // Words of the claim, markers excluded: collected first, then
        // scored in one plain loop (no call per word).
        terms.clear();
        words.clear();
        let mut cursor = span.start;
        for k in 0..=inside.len() {
            let seg = match inside.get(k) {
                Some(c) => cursor..c.span.start,
                None => cursor..span.end,
            };
            if let Some(c) = inside.get(k) {
                cursor = c.span.end;
            }
            let words = &mut *words;
            for_each_word(&answer[seg.clone()], steps, |w, off, ascii| {
                words.push((seg.start + off, w.len(), ascii));
            });
        }
        // Consecutive content-term pairs of the claim: (found, total).
        let mut pairs = (0u32, 0u32);
        let mut prev_key: Option<u64> = None;
        let mut prev_found = false;
        for (i, &(at, len, ascii)) in words.iter().enumerate() {
            let w = &answer[at..at + len];
            let sentence_start = i == 0;
            // ASCII: case and classes come with the hash, in one pass.
            let scan = ascii.then(|| ascii_word(w.as_bytes()));
            let folded = match &scan {
                Some(a) => folder.fold_ascii(w, a),
                None => folder.fold_other(w),
            };
            let number = folded.number;
            let mut negation = false;
            let class = if !number {
                let info = folded;
                negation = info.negation;
                if info.filler {
                    continue;
                }
                let stop = info.stop;
                if stop && settings.function_word_weight <= 0.0 {
                    continue;
                }
                let (upper_first, all_caps) = match &scan {
                    Some(a) => (a.upper_first, len >= 2 && !a.lower),
                    None => (
                        w.chars().next().is_some_and(char::is_uppercase),
                        w.chars().nth(1).is_some() && w.chars().all(|c| !c.is_lowercase()),
                    ),
                };
                // A capitalised stop word ("The" in a title) is still a
                // stop word: sources index stop words without pairs.
                let entity = (!stop && (all_caps || (upper_first && !sentence_start))) || negation;
                if entity {
                    TermClass::Entity
                } else if stop {
                    TermClass::Function
                } else {
                    TermClass::Word
                }
            } else {
                TermClass::Number
            };
            // What the index knows the term by: its own key, or the other
            // spelling's when only that is found.
            let mut hit = folded;
            let mut found = index.holds(&hit, banks);
            // "2" against "two" and back: the other spelling's key.
            let other = if found {
                None
            } else if number {
                spelled_other(w, true)
            } else {
                folded.spelled()
            };
            if let Some(other) = other {
                let o = folder.fold(other, true);
                if index.holds(&o, banks) {
                    hit = o;
                    found = true;
                }
            }
            let key = hit.key;
            if class != TermClass::Function {
                if let Some(p) = prev_key {
                    pairs.1 += 1;
                    // A pair can only be in a source whose terms both are.
                    if found && prev_found && index.holds_pair(pair_hash(p, key), banks) {
                        pairs.0 += 1;
                    }
                }
                prev_key = Some(key);
                prev_found = found;
            }
            let weight = match class {
                TermClass::Number => settings.number_weight,
                TermClass::Entity => settings.entity_weight,
                TermClass::Word => 1.0,
                TermClass::Function => settings.function_word_weight,
            };
            let sentences = if found && class != TermClass::Function {
                index.sentences_of(&hit) & cited_sentences
            } else {
                0
            };
            terms.push(Term {
                class,
                weight,
                found,
                negation,
                sentences,
                apart: false,
                at,
                len,
            });
        }

        // A bare "no" (a yes/no answer) has nothing else to check: a
        // negation only counts next to other content.
        if terms
            .iter()
            .all(|t| t.negation || t.class == TermClass::Function)
        {
            terms.retain(|t| !t.negation);
        }
        let apart = if cited.is_empty() {
            0.0
        } else {
            spread(terms, cited.len())
        };
        let tally = (!cited.is_empty()).then(|| Tally {
            // `fold` from +0.0: `sum` of no floats is -0.0.
            hit: terms
                .iter()
                .filter(|t| t.found)
                .fold(0.0, |a, t| a + t.weight),
            missing: terms
                .iter()
                .filter(|t| !t.found)
                .fold(0.0, |a, t| a + t.weight),
            number_missing: terms
                .iter()
                .any(|t| t.class == TermClass::Number && !t.found),
            entity_missing: terms
                .iter()
                .any(|t| t.class == TermClass::Entity && !t.found),
            pairs_found: f64::from(pairs.0),
            pairs: f64::from(pairs.1),
            apart,
        });
        let support = tally.as_ref().map(|_| 0.0);
        tallies.push(tally);

        let names = |want: &dyn Fn(&Term) -> bool| {
            let mut out: Vec<String> = Vec::new();
            let mut buf = String::new();
            // Numbers, then entities, then words, each in order of appearance;
            // one buffer, a String only for a term kept.
            'classes: for class in [
                TermClass::Number,
                TermClass::Entity,
                TermClass::Word,
                TermClass::Function,
            ] {
                for t in terms.iter().filter(|t| t.class == class && want(t)) {
                    if out.len() == MAX_TERMS {
                        break 'classes;
                    }
                    let _ = fold_into(&mut buf, &answer[t.at..t.at + t.len]);
                    if !out.contains(&buf) {
                        out.push(buf.clone());
                    }
                }
            }
            out
        };
        let unsupported_terms = if support.is_some() {
            names(&|t: &Term| !t.found && t.class != TermClass::Function)
        } else {
            Vec::new()
        };
        let apart_terms = if apart > 0.0 {
            names(&|t: &Term| t.apart)
        } else {
            Vec::new()
        };
        // Only `uncited_claim` reads these: no work when it is off.
        let checkable_terms = if support.is_none() && settings.uncited_claim.is_some() {
            names(&|t: &Term| matches!(t.class, TermClass::Number | TermClass::Entity))
        } else {
            Vec::new()
        };
        claims.push(Claim {
            span,
            markers,
            support,
            unsupported_terms,
            apart_terms,
            sources: cited,
            checkable_terms,
        });
    }
    // Short claims say little on their own: each claim is shrunk toward the
    // answer's pooled support, worth `prior_weight` units of term weight.
    let (hit, missing) = tallies
        .iter()
        .flatten()
        .fold((0.0, 0.0), |(h, m), t| (h + t.hit, m + t.missing));
    let pooled = if hit + missing > 0.0 {
        hit / (hit + settings.missing_penalty * missing)
    } else {
        1.0
    };
    let (pf, pt) = tallies
        .iter()
        .flatten()
        .fold((0.0, 0.0), |(f, n), t| (f + t.pairs_found, n + t.pairs));
    let pooled_pairs = if pt > 0.0 { pf / pt } else { pooled };
    let beta = settings.pair_weight;
    for (claim, tally) in claims.iter_mut().zip(tallies.iter()) {
        let Some(t) = tally else { continue };
        let denom = t.hit + settings.missing_penalty * t.missing + settings.prior_weight;
        let words = if denom > 0.0 {
            (t.hit + settings.prior_weight * pooled) / denom
        } else {
            1.0
        };
        // Word order: the share of consecutive term pairs the sources also
        // have next to each other catches facts recombined from real words.
        let pdenom = t.pairs + settings.prior_weight;
        let pairs = if pdenom > 0.0 {
            (t.pairs_found + settings.prior_weight * pooled_pairs) / pdenom
        } else {
            words
        };
        let mut s = (1.0 - beta) * words + beta * pairs - settings.spread_penalty * t.apart;
        if settings.strict_numbers && t.number_missing {
            s = 0.0;
        }
        if t.entity_missing {
            s = s.min(settings.missing_entity_cap);
        }
        // Four decimals: stable, readable output.
        let s = (s.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0;
        claim.support = Some(s);
        score = Some(score.map_or(s, |m: f64| m.min(s)));
    }
    Grounding { claims, score }
}

/// Weights of one cited claim's terms, found and missing.
pub(super) struct Tally {
    hit: f64,
    missing: f64,
    number_missing: bool,
    entity_missing: bool,
    pairs_found: f64,
    pairs: f64,
    /// Weight of the found terms apart from the claim's main sentences.
    apart: f64,
}
