//! Scoring, in two passes over a record: first every claim's words are read
//! and classified and the terms they can ask about declared to the source
//! index; then the cited sources are read once each, and each cited claim's
//! terms are looked up, its evidence features computed, and the strict
//! rules (numbers, negation, opposites and bounds, a word said of another
//! name, scattered words) and the fitted model (`model`) turn them into a
//! support in `[0, 1]`.

use std::cell::RefCell;
use std::ops::Range;

use smallvec::SmallVec;

use super::both;
use super::claims::claim_spans;
use super::comparisons::{compares_than, opens_with_than, states_comparison};
use super::index::{
    CAPITAL, Case, Cited, IN_BEST, IN_BEST_TWO, Like, NEGATED, Placed, SourceIndex, asks_question,
    has_question, pair_hash,
};
use super::initials::{
    AND_LETTERS, MAX_LETTERS, acronym_letters, chief_title_in, clipped_name, is_and, is_chief,
    is_name_joiner, is_small_word, is_title_word, other_acronym, spelled_out_in,
    spelled_word_by_word, word_written_in, written_in,
};
use super::lexicon::{
    PER, ShortForm, article_of_fraction, cents_after, clock_time, closed_compound,
    comparative_after, currency_before, date, direction_of_number, for_each_word, glued_split,
    letters_before, may_open_date, may_open_run, name_into, names_time, negates_nothing,
    number_text, rest_past, run_read_as_one, short_form, skipped, slashed_period,
    slashed_period_before, source_reference, spelled_other, unit_word, units_of_cents,
};
use super::memo::{Folder, Packed, key_of};
use super::model::support_of;
use super::opposites;
use super::qualifiers::{self, Own, claim_qualifies, states_possible};
use super::{Claim, Evidence, Grounding, MAX_TERMS, Markers};
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
    /// Per claim: its own citations, and the citations it is checked
    /// against (its own, or those of the cited claim after it on its line).
    owns: Vec<(Range<usize>, Range<usize>)>,
    banks: Vec<(usize, u64)>,
    /// Every claim's terms, claim after claim, as read before the sources.
    all_terms: Vec<Term>,
    /// Per claim: its markers and terms, by range.
    claim_parts: Vec<ClaimParts>,
    /// The sources claims cite, in order of citation (the index reads each
    /// on its first).
    order: Vec<usize>,
    /// A bare "no" claim's terms without its negations.
    terms: Vec<Term>,
    found_ids: Vec<u32>,
    /// Where each of `found_ids` sits against the claim's cover.
    seats: Vec<u8>,
    /// (start in the answer, length, all ASCII) of each word of a claim.
    words: Vec<(usize, usize, bool)>,
    /// The sets of opposites' words by id in `folder`.
    opposite_ids: opposites::Ids,
    /// The record's acronym scans so far (see [`Scanned`]).
    scanned: Vec<Scanned>,
    /// The record's scans for a bounded number so far (see [`Bounded`]).
    bounded: Bounded,
}

impl Scratch {
    pub(super) fn new() -> Self {
        Scratch {
            folder: Folder::new(),
            index: SourceIndex::new(),
            spans: Vec::new(),
            owns: Vec::new(),
            banks: Vec::new(),
            all_terms: Vec::new(),
            claim_parts: Vec::new(),
            order: Vec::new(),
            terms: Vec::new(),
            found_ids: Vec::new(),
            seats: Vec::new(),
            words: Vec::new(),
            opposite_ids: opposites::Ids::default(),
            scanned: Vec::new(),
            bounded: Bounded::default(),
        }
    }

    /// The word memo and the source index, for tests that drive the index.
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

/// One claim term, by class; kept only long enough to score.
#[derive(Clone)]
pub(super) struct Term {
    class: TermClass,
    found: bool,
    negation: bool,
    /// Found, but only outside the claim's best two sentences.
    apart: bool,
    /// A content term found in the claim's best sentence.
    in_best: bool,
    /// The second half of a compound ("mail" of "e-mail") whose other
    /// spelling is the compound closed up ("email").
    closes_up: bool,
    /// Its word is of a set of opposites or opens a time bound
    /// ([`Packed::opposing`]).
    opposing: bool,
    /// The word id of the term as folded, and of its other spelling ("2"
    /// for "two", "email" for the "mail" of "e-mail"; [`NO_WORD`]: none). Ids, not the memo's whole entries:
    /// a claim's terms are written once per word and read once per claim.
    own: u32,
    other: u32,
    /// The handle of its other spellings and synonyms in the word memo
    /// (`Folder::alternates_at`; 0: none).
    alternates: u32,
    /// The word id the index knows it by (its own or its other
    /// spelling's).
    id: u32,
    at: usize,
    len: usize,
}

/// [`Term::other`] of a term with no other spelling.
const NO_WORD: u32 = u32::MAX;

impl Term {
    /// The word `folded` at `at..at + len` of the answer, of `class`, not
    /// yet looked up; no negation, no other spelling.
    fn new(folder: &mut Folder, folded: Packed, class: TermClass, at: usize, len: usize) -> Term {
        Term {
            class,
            found: false,
            negation: false,
            apart: false,
            in_best: false,
            closes_up: false,
            opposing: folded.opposing(),
            own: folded.id(),
            other: NO_WORD,
            alternates: folder.alternates_handle(folded.variants()),
            id: folded.id(),
            at,
            len,
        }
    }

    /// A found content term that the index places in sentences (the cover
    /// reads these, in order, and gives each a seat).
    fn seated(&self) -> bool {
        self.found && self.class != TermClass::Function && !self.negation && self.id != BY_INITIALS
    }
}

/// A claim as read before the sources: its markers (a range of the
/// record's citations), the sources it resolves to, and its terms (a range
/// of `Scratch::all_terms`).
pub(super) struct ClaimParts {
    cites: Range<usize>,
    cited: Markers,
    terms: Range<usize>,
}

/// Reads every claim's words (pass one, before any source): each claim's
/// terms with their classes and other spellings into `all_terms`, the
/// terms of cited claims declared to the index as wanted, and the cited
/// sources in order of citation into `order`.
fn read_claims(
    answer: &str,
    citations: &[Citation],
    sources: &[&str],
    steps: &mut usize,
    scratch: &mut Scratch,
) {
    let Scratch {
        folder,
        index,
        spans,
        owns,
        all_terms,
        claim_parts,
        order,
        words,
        ..
    } = scratch;
    covering(answer, citations, sources.len(), spans, owns);
    all_terms.clear();
    claim_parts.clear();
    order.clear();
    for (span, (own, checked)) in spans.iter().zip(owns.iter().cloned()) {
        let inside = &citations[own.clone()];
        // No marker of its own, checked against the next cited claim's
        // sources (kept only if it states a number or a name, below).
        let covered = inside.is_empty() && !checked.is_empty();
        let mut cited: Markers = citations[checked]
            .iter()
            .filter(|c| c.source_index() < sources.len())
            .map(|c| c.marker)
            .collect();
        cited.sort_unstable();
        cited.dedup();
        // A covered sentence's sources are numbered here even when it
        // turns out not to be checked.
        order.extend(cited.iter().map(|&m| m as usize - 1));

        // Words of the claim, markers excluded: collected first, then
        // classified in one plain loop (no call per word).
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
            for_each_word(&answer[seg.clone()], steps, &mut |w: &[u8], off, ascii| {
                let at = seg.start + off;
                // "5km": its number and its unit; "CET1": its acronym and
                // its number; as sources read them.
                match glued_split(w) {
                    Some(n) => words.extend([(at, n, true), (at + n, w.len() - n, true)]),
                    None => words.push((at, w.len(), ascii)),
                }
            });
        }
        let from = all_terms.len();
        let bytes = answer.as_bytes();
        let (lead, trail) = source_reference(
            words.len(),
            |i| {
                let (at, len, _) = words[i];
                &bytes[at..at + len]
            },
            |i| {
                let (first, (at, len, _)) = (words[i].0, words[words.len() - 1]);
                bracket_around(bytes, first, at + len, span.start..span.end)
            },
            |i| {
                let (at, len, _) = words[i - 1];
                bytes[at + len..words[i].0].contains(&b',')
            },
        );
        // A claim with markers of its own declares its terms as it reads
        // them; a covered one only once it is known to be checked (below).
        let declare = !covered && !cited.is_empty() && !index.wants_every_term();
        // It states a number or a name.
        let mut checkable = false;
        // Not claimed: the words sources skip too (a web address, the
        // number sign, a number's scale: `skipped`) and the words that name
        // the sources.
        let mut address_end = 0;
        // Where the "higher" of "5% higher" is: read as its change, before
        // the number.
        let mut comparative_at = usize::MAX;
        // Room for a spelled run's digits ("twenty-one": "21"), written
        // only for the few words that open one.
        let mut run = [0u8; 48];
        'words: for (i, &(mut at, mut len, mut ascii)) in words.iter().enumerate() {
            // A sentence glued by its period to words read as one before
            // it ("at 5 p.m.Shares rose"): read from its first word on.
            while skipped(bytes, &mut address_end, at, len) {
                let Some(k) = rest_past(&bytes[at..at + len], at, address_end) else {
                    continue 'words;
                };
                (at, len) = (at + k, len - k);
                ascii |= bytes[at..at + len].is_ascii();
            }
            if i < lead || i >= trail {
                continue;
            }
            // "y/y": read with its first letter (below); the "a" of "a
            // quarter point": read with the fraction.
            if len == 1 && (slashed_period_before(bytes, at) || article_of_fraction(bytes, at)) {
                continue;
            }
            let mut w = &bytes[at..at + len];
            // "km/h": "per" and the unit's word ("hour"); "2x": "2 times";
            // as sources read them.
            if let Some((per, unit)) = unit_word(bytes, at, len) {
                if per {
                    let from = all_terms.len();
                    all_terms.push(implied_term(folder, PER, at - 1, 1));
                    declare_terms(declare, index, folder, &all_terms[from..]);
                }
                w = unit;
            }
            // "Q3": "3rd quarter"; "FY2023": "fiscal year", then "2023";
            // "3Q23": "3rd quarter 2023"; "bps": "basis points"; "y/y":
            // "year over year".
            let slashed = if len == 1 && bytes.get(at + 1) == Some(&b'/') {
                slashed_period(bytes, at)
            } else {
                None
            };
            // A finding names "y/y" whole.
            let named = if slashed.is_some() { 3 } else { len };
            let (w, at, len) = match slashed.or_else(|| short_form(w)) {
                Some(p) => {
                    let from = all_terms.len();
                    short_form_terms(folder, &p, (at, named), all_terms);
                    declare_terms(declare, index, folder, &all_terms[from..]);
                    checkable |= p.dated;
                    if p.rest == len {
                        continue;
                    }
                    (&w[p.rest..], at + p.rest, len - p.rest)
                }
                None => (w, at, len),
            };
            // Words that start with a digit: the other words pass these
            // tests with one.
            // Where the "cents" of "50 cents" ends.
            let cents = if w[0].is_ascii_digit() {
                cents_after(bytes, at + len)
            } else {
                None
            };
            if w[0].is_ascii_digit() {
                // "5% higher": "increase", as sources read it, named by
                // its "higher".
                if let Some((change, word_at, word_len)) = comparative_after(bytes, at, at + len) {
                    comparative_at = word_at;
                    all_terms.push(implied_term(folder, change, word_at, word_len));
                    declare_terms(declare, index, folder, &all_terms[all_terms.len() - 1..]);
                }
                // "50 cents": a dollar's or a euro's, as sources read it,
                // named by its "cents".
                if let Some(end) = cents {
                    all_terms.push(cents_currency(folder, at + len + 1, end));
                    declare_terms(declare, index, folder, &all_terms[all_terms.len() - 1..]);
                }
                // "$5": the sign is a word of its own ("dollar"), before the number.
                if let Some((word, sign)) = currency_before(bytes, at) {
                    let from = all_terms.len();
                    // A currency names what the amount is counted in, as a
                    // name does: another currency is another amount.
                    let mut t = implied_term(folder, word, at - sign, sign);
                    t.class = TermClass::Entity;
                    all_terms.push(t);
                    declare_terms(declare, index, folder, &all_terms[from..]);
                }
                // "2004-05-12", "12 May": the month's name (and an ISO date's
                // day) first.
                if may_open_date(bytes, at, len) {
                    let from = all_terms.len();
                    if let Some(end) = date_terms(folder, (bytes, at, len), all_terms) {
                        address_end = end;
                    }
                    declare_terms(declare, index, folder, &all_terms[from..]);
                }
            }
            // "1.2 million", "-5": one number, written out; "5 p.m.": the
            // time on the 24-hour clock ("17:00"), and for "5:00", which may
            // be either, its hour as written too.
            let mut written;
            let mut clock;
            // A word read in place of what the claim writes, found by that
            // too: the hour of "5:00", the verb of "stepped down".
            let mut also_written = None;
            let (mut w, at, len) = if w[0].is_ascii_digit() {
                written = ([0u8; 48], [0u8; 49]);
                clock = [0u8; 5];
                if let Some((text, marked, end)) = clock_time(bytes, at, len, &mut clock) {
                    // Its minutes and its "p.m." are read in it.
                    address_end = end;
                    if !marked && text.len() <= 4 {
                        also_written = Some(&bytes[at..at + len]);
                    }
                    // A finding names the time whole.
                    (text, at, end - at)
                } else if let Some((n, end)) =
                    cents.and_then(|end| Some((units_of_cents(w, &mut written.0)?, end)))
                {
                    // "50 cents": the amount as a price writes it ("0.50"),
                    // its currency read before it; named whole.
                    address_end = end;
                    (&written.0[..n], at, end - at)
                } else {
                    // A finding names a negative number with its sign.
                    let (text, sign) = number_text(bytes, at, len, &mut written);
                    let k = sign.unwrap_or(0);
                    (text, at - k, len + k)
                }
            } else {
                (w, at, len)
            };
            let sentence_start = i == 0;
            // ASCII: case and classes come with the hash, in one pass.
            let mut scan = ascii.then(|| ascii_word(w));
            let mut folded = match &scan {
                Some(a) => folder.fold_ascii_packed(w, a.hash),
                None => folder.fold_packed(w, false),
            };
            if folded.direction() {
                // The "higher" of "5% higher": read before the number.
                if at == comparative_at {
                    continue;
                }
                // The "up" of "up 5%": "increase", as sources read it.
                if let Some(change) = direction_of_number(bytes, at, len) {
                    let a = ascii_word(change);
                    (w, folded) = (change, folder.fold_ascii_packed(change, a.hash));
                    scan = Some(a);
                }
            }
            // "twenty-one": one number, read as its digits, as sources read
            // it; the run's other words are skipped.
            // A word the claim implies ("second" for the "s" of "m/s")
            // opens no run. "stepped down": "resign", as sources read it,
            // and still found by "stepped" where the source writes the verb
            // alone or with another particle.
            let (w, folded, len) =
                match (folded.is_spelled() && w.len() == len && may_open_run(bytes, at, len))
                    .then(|| run_read_as_one(folded, bytes, at, len, &mut run))
                    .flatten()
                {
                    Some((n, end)) => {
                        address_end = end;
                        let read = &run[..n];
                        let read_as = folder.fold_packed(read, true);
                        if folded.opens_phrase() {
                            also_written = Some(&bytes[at..at + len]);
                        }
                        (read, read_as, end - at)
                    }
                    None => (w, folded, len),
                };
            let number = folded.number();
            let mut negation = false;
            let class = if !number {
                let info = folded;
                negation = info.negation();
                if info.filler() || (negation && negates_nothing(bytes, at, len)) {
                    continue;
                }
                let stop = info.stop();
                let (upper_first, all_caps) = match &scan {
                    Some(a) => (a.upper_first, len >= 2 && !a.lower),
                    None => {
                        // Not a scaled number: the word as written.
                        let w = &answer[at..at + len];
                        (
                            w.chars().next().is_some_and(char::is_uppercase),
                            w.chars().nth(1).is_some() && w.chars().all(|c| !c.is_lowercase()),
                        )
                    }
                };
                // A capitalised stop word ("The" in a title) is still a
                // stop word: sources index stop words without pairs.
                // A claim's first word is a name's when it is no word of
                // the language and a capitalised word follows it ("Malcolm
                // Smith was named …"; not "Former President …").
                let opens_name = || {
                    info.variants() == 0
                        && bytes.get(at + len) == Some(&b' ')
                        && bytes.get(at + len + 1).is_some_and(u8::is_ascii_uppercase)
                };
                let entity = !stop
                    && !negation
                    && (all_caps || (upper_first && (!sentence_start || opens_name())));
                if entity {
                    TermClass::Entity
                } else if stop {
                    TermClass::Function
                } else if spelled_cardinal(w, folded) {
                    TermClass::Number
                } else {
                    TermClass::Word
                }
            } else {
                TermClass::Number
            };
            checkable |= matches!(class, TermClass::Number | TermClass::Entity);
            // "2" against "two" and back: the other spelling, looked up
            // when the term itself is not found.
            let other = if let Some(written) = also_written {
                folder.fold_packed(written, true).id()
            } else if number {
                number_other(folder, w)
            } else if folded.is_spelled() {
                folded
                    .spelled()
                    .map_or(NO_WORD, |o| folder.fold(o, true).id)
            } else {
                NO_WORD
            };
            // "co-founder" is also "cofounder".
            let (other, closes_up) = if other == NO_WORD && at > 0 && bytes[at - 1] == b'-' {
                closed_other(bytes, at, len, folder)
            } else {
                (other, false)
            };
            all_terms.push(Term {
                negation,
                other,
                closes_up,
                ..Term::new(folder, folded, class, at, len)
            });
            declare_terms(declare, index, folder, &all_terms[all_terms.len() - 1..]);
        }
        // A covered sentence is checked only when it states something a
        // source can contradict: a number or a name ("Great question!"
        // before a cited sentence is not a claim about the source).
        if covered && !checkable {
            cited.clear();
        }
        let declare_now = covered && !cited.is_empty() && !index.wants_every_term();
        declare_terms(declare_now, index, folder, &all_terms[from..]);
        claim_parts.push(ClaimParts {
            cites: own,
            cited,
            terms: from..all_terms.len(),
        });
    }
}

/// Whether the text from `from` to `to` stands alone inside a pair of
/// brackets, within `span`: "(Source 1)", "[see sources 1 and 2]".
fn bracket_around(bytes: &[u8], from: usize, to: usize, span: Range<usize>) -> bool {
    let opened = bytes[span.start..from]
        .iter()
        .rev()
        .find(|&&b| b != b' ')
        .is_some_and(|&b| matches!(b, b'(' | b'['));
    opened
        && bytes[to..span.end]
            .iter()
            .find(|&&b| b != b' ')
            .is_some_and(|&b| matches!(b, b')' | b']'))
}

/// Whether the word `w` is a number from two up spelled in letters
/// ("six", "twenty"): a count the sources must state, as digits or words,
/// like any number. "One" is also a pronoun ("one of them"), and the
/// ordinals "first" and "second" are as often no count at all.
fn spelled_cardinal(w: &[u8], folded: Packed) -> bool {
    folded.spelled().is_some_and(|d| d != "1")
        && ![&b"th"[..], b"st", b"nd", b"rd"]
            .iter()
            .any(|end| w.len() > 2 && w[w.len() - 2..].eq_ignore_ascii_case(end))
}

/// The other spelling of the number `w` ("two" for "2"), or [`NO_WORD`].
fn number_other(folder: &mut Folder, w: &[u8]) -> u32 {
    std::str::from_utf8(w)
        .ok()
        .and_then(|w| spelled_other(w, true))
        .map_or(NO_WORD, |o| folder.fold(o, true).id)
}

/// A word the claim's text implies, named by the text at `at..at + len`
/// that implies it: "dollar" for "$", "per" for the slash of "km/h".
#[inline(always)]
fn implied_term(folder: &mut Folder, word: &[u8], at: usize, len: usize) -> Term {
    let folded = folder.fold_packed(word, true);
    Term::new(folder, folded, TermClass::Word, at, len)
}

/// The currency of the cents named by the claim's word at `at..end`
/// ("cents" of "50 cents"): a dollar, or else a euro, as sources read them.
/// A currency names what the amount is counted in, as a name does.
#[inline(never)]
fn cents_currency(folder: &mut Folder, at: usize, end: usize) -> Term {
    let mut t = implied_term(folder, b"dollar", at, end - at);
    t.class = TermClass::Entity;
    t.other = folder.fold_packed(b"euro", true).id();
    t
}

/// Declares `terms` to the index when the claim declares as it reads
/// (see [`want`]).
#[inline(always)]
fn declare_terms(declare: bool, index: &mut SourceIndex, folder: &mut Folder, terms: &[Term]) {
    if declare {
        for t in terms {
            want(index, folder, t);
        }
    }
}

/// The words the claim's word at `at..at + len` writes short ("3rd
/// quarter" for "Q3", "basis points" for "bps"), as terms named by that
/// word.
#[inline(never)]
fn short_form_terms(
    folder: &mut Folder,
    p: &ShortForm,
    (at, len): (usize, usize),
    out: &mut Vec<Term>,
) {
    for word in p.words {
        let folded = folder.fold_packed(word, true);
        let (class, other) = if folded.number() {
            (TermClass::Number, number_other(folder, word))
        } else if folded.function() {
            // "over" of "year over year": as a source reads it.
            (TermClass::Function, NO_WORD)
        } else {
            (TermClass::Word, NO_WORD)
        };
        out.push(Term {
            other,
            ..Term::new(folder, folded, class, at, len)
        });
    }
    if let Some(year) = &p.year {
        let folded = folder.fold_packed(year, true);
        out.push(Term {
            other: number_other(folder, year),
            ..Term::new(folder, folded, TermClass::Number, at, len)
        });
    }
}

/// The month's name (and an ISO date's day) of the date that the word
/// at `at..at + len` opens, if it opens one, as terms before that word's
/// (a source reads "2004-05-12" as "May 12 2004" and "12 May" as "May
/// 12"), and where the date's words so read end. A finding names them in
/// the claim's own spelling ("05", "12").
#[inline(never)]
fn date_terms(
    folder: &mut Folder,
    (bytes, at, len): (&[u8], usize, usize),
    out: &mut Vec<Term>,
) -> Option<usize> {
    let date = date(bytes, at, len)?;
    if date.month_first_read {
        let (name, at, len) = date.month;
        let month = folder.fold_packed(name, true);
        let class = if month.stop() {
            TermClass::Function
        } else {
            TermClass::Entity
        };
        out.push(Term::new(folder, month, class, at, len));
    }
    if let Some((day, at, len)) = date.day {
        let folded = folder.fold_packed(day, true);
        out.push(Term {
            other: number_other(folder, day),
            ..Term::new(folder, folded, TermClass::Number, at, len)
        });
    }
    Some(date.end)
}

/// The other spelling of the word at `at..at + len` when it closes a
/// compound by a hyphen ("mail" of "e-mail": "email"), and whether it does.
#[inline(never)]
fn closed_other(bytes: &[u8], at: usize, len: usize, folder: &mut Folder) -> (u32, bool) {
    let mut closed = [0u8; 48];
    closed_compound(bytes, at, len, &mut closed).map_or((NO_WORD, false), |n| {
        (folder.fold_packed(&closed[..n], true).id(), true)
    })
}

/// Declares what claim term `t` can ask the index about: its own word, its
/// other spelling, and ("favourite" against "favorite", "enroll" against
/// "register") its variants group's alternates, each group once per record.
#[inline(always)]
fn want(index: &mut SourceIndex, folder: &mut Folder, t: &Term) {
    index.want(t.own);
    if t.other != NO_WORD {
        index.want(t.other);
    }
    for &id in folder.new_alternates(t.alternates) {
        index.want(id);
    }
}

/// Grounds `answer` against `sources` with the thread's `scratch`: every
/// claim's terms read and declared (pass one), the cited sources indexed,
/// then each claim looked up, judged by the strict rules and the model's
/// features, and named; the model's support last, once the answer's own
/// shares are known.
pub(super) fn analyze_with(
    answer: &str,
    citations: &[Citation],
    sources: &[&str],
    settings: &GroundingSettings,
    steps: &mut usize,
    scratch: &mut Scratch,
) -> Grounding {
    claim_spans(answer, citations, steps, &mut scratch.spans);
    let ids_reset = scratch.folder.reset_if_full();
    if ids_reset {
        scratch.opposite_ids.clear();
    }
    scratch.folder.start_record();
    scratch.index.start(sources.len(), ids_reset);
    // Declaring the claims' terms pays when the sources are long next to
    // the answer (most of their words are then never asked about); against
    // short sources, indexing every word is cheaper. Either way the index
    // answers the same.
    let source_bytes: usize = sources.iter().map(|s| s.len()).sum();
    if source_bytes < answer.len() {
        scratch.index.keep_every_term();
    }
    read_claims(answer, citations, sources, steps, scratch);
    let asks = (scratch.spans.iter().zip(&scratch.claim_parts)).any(|(span, part)| {
        !part.cited.is_empty() && has_question(answer[span.clone()].as_bytes())
    });
    scratch.index.leave_out_questions(!asks);
    let Scratch {
        folder,
        index,
        spans,
        banks,
        all_terms,
        claim_parts,
        order,
        terms: bare,
        found_ids,
        seats,
        opposite_ids,
        scanned,
        bounded,
        ..
    } = scratch;
    // Sources in order of first citation (`add` reads a source once):
    // sentences are numbered in that order, which breaks ties between
    // equally good sentences.
    for &idx in order.iter() {
        index.add(idx, sources[idx], folder, steps);
    }
    let mut judge = Judge {
        answer,
        sources,
        settings,
        folder,
        index,
        found_ids,
        seats,
        opposite_ids,
        scanned: {
            scanned.clear();
            scanned
        },
        bounded: {
            bounded.clear();
            bounded
        },
        // What the acronym scans may read (see `find_by_initials`): a few
        // times the record, enough for a handful of claims each missing a
        // name in long sources.
        initials_budget: INITIALS_BUDGET * (answer.len() + source_bytes),
        // What the scans for a bounded number's other bounds may read (see
        // `reversed_bound`).
        bound_budget: INITIALS_BUDGET * (answer.len() + source_bytes),
        // The words of the sources that the relation rule may look at (see
        // `misattributed`).
        relation_budget: INITIALS_BUDGET * (answer.len() + source_bytes),
        steps,
    };
    let mut claims = Vec::with_capacity(spans.len());
    // Content terms found and in all, and every word (stop words too)
    // found and in all, over the answer's cited claims.
    let mut pooled = Pooled::default();

    for (span, part) in spans.iter().cloned().zip(claim_parts.iter()) {
        let markers: Markers = citations[part.cites.clone()]
            .iter()
            .map(|c| c.marker)
            .collect();
        let cited = part.cited.clone();
        banks.clear();
        for &m in &cited {
            let idx = m as usize - 1;
            let (bank, bit) = (idx / 64, 1u64 << (idx % 64));
            match banks.last_mut() {
                Some((b, mask)) if *b == bank => *mask |= bit,
                _ => banks.push((bank, bit)),
            }
        }

        // The claim's terms, scored where pass one left them.
        let mut terms: &mut [Term] = &mut all_terms[part.terms.clone()];
        let cites = (!cited.is_empty()).then_some(&banks[..]);
        let looked = look_up(terms, cites, judge.index, judge.folder);
        // A bare "no" (a yes/no answer) has nothing else to check: a
        // negation only counts next to other content.
        if terms
            .iter()
            .all(|t| t.negation || t.class == TermClass::Function)
        {
            bare.clear();
            bare.extend(terms.iter().filter(|t| !t.negation).cloned());
            terms = &mut bare[..];
        }
        let verdict = (!cited.is_empty()).then(|| {
            // A question cited by its own marker: one a later marker covers
            // ("Why did rates rise? Inflation stayed high[^1].") only leads
            // to the claim that marker cites.
            let asks = !markers.is_empty() && asks_question(answer[span.clone()].as_bytes());
            let says = (looked, asks, answer[span.clone()].as_bytes());
            judge.claim(terms, (&cited, banks), says, &mut pooled)
        });
        claims.push(claim_of(
            answer, span, markers, cited, terms, verdict, settings,
        ));
    }
    let score = support_all(&mut claims, &pooled, settings);
    Grounding { claims, score }
}

/// One claim's look-ups: its consecutive content-term pairs (found, in
/// all), and whether the sources state a negation the claim puts before a
/// content word ("did not *win*").
#[derive(Clone, Copy)]
struct Looked {
    pairs: (u32, u32),
    negation_stated: bool,
}

/// Looks each of a claim's terms up in the sources of `banks` (`None`: an
/// uncited claim, whose terms are all missing): by its own word, its other
/// spelling, then its alternates, marking it found and noting the id it was
/// found by.
#[inline(always)]
fn look_up(
    terms: &mut [Term],
    banks: Option<&[(usize, u64)]>,
    index: &SourceIndex,
    folder: &Folder,
) -> Looked {
    let mut pairs = (0u32, 0u32);
    let mut prev_key: Option<u64> = None;
    let mut prev_found = false;
    // A claim's negation followed by a content word the sources also
    // negate ("did not *win*"): the negation is stated there.
    let mut after_negation = false;
    let mut negation_stated = false;
    let cited = banks.map(Cited::of);
    let holds_id = |id: u32| cited.is_some_and(|c| index.holds_in(id, c));
    let holds_pair = |key: u64| banks.is_some_and(|b| index.holds_pair(key, b));
    for t in terms.iter_mut() {
        // What the index knows the term by: its own key, or the other
        // spelling's when only that is found.
        let mut hit = t.own;
        let mut found = holds_id(hit);
        if !found && banks.is_some() && t.other != NO_WORD && holds_id(t.other) {
            hit = t.other;
            found = true;
        }
        if !found && banks.is_some() {
            for &id in folder.alternates_at(t.alternates) {
                if holds_id(id) {
                    hit = id;
                    found = true;
                    break;
                }
            }
        }
        let key = key_of(hit);
        if t.class != TermClass::Function {
            if let Some(p) = prev_key {
                pairs.1 += 1;
                // A pair can only be in a source whose terms both are.
                if found && prev_found && holds_pair(pair_hash(p, key)) {
                    pairs.0 += 1;
                }
            }
            prev_key = Some(key);
            prev_found = found;
            if t.negation {
                after_negation = true;
            } else if after_negation {
                negation_stated |= holds_pair(pair_hash(NEGATED, key));
                after_negation = false;
            }
        }
        t.found = found;
        t.id = hit;
    }
    // "co-founder" found as "cofounder": its first half too.
    for i in 1..terms.len() {
        let (first, second) = (&terms[i - 1], &terms[i]);
        if second.closes_up
            && second.found
            && second.id == second.other
            && !first.found
            && first.at + first.len + 1 == second.at
        {
            terms[i - 1].found = true;
            terms[i - 1].id = terms[i].id;
        }
    }
    Looked {
        pairs,
        negation_stated,
    }
}

/// What judging one record's cited claims reads and spends: the record,
/// the thread's memo and the record's index, working lists, and the
/// record's budgets for the scans that reread source text.
struct Judge<'a> {
    answer: &'a str,
    sources: &'a [&'a str],
    settings: &'a GroundingSettings,
    folder: &'a mut Folder,
    index: &'a mut SourceIndex,
    found_ids: &'a mut Vec<u32>,
    seats: &'a mut Vec<u8>,
    opposite_ids: &'a mut opposites::Ids,
    scanned: &'a mut Vec<Scanned>,
    bounded: &'a mut Bounded,
    initials_budget: usize,
    bound_budget: usize,
    relation_budget: usize,
    steps: &'a mut usize,
}

/// What judging a cited claim gives: its evidence, and what the sources
/// say against it.
struct Verdict {
    evidence: Evidence,
    contradicted: bool,
    compared: bool,
    asked: bool,
    opposed: Option<&'static str>,
    qualified: Option<&'static str>,
    misattributed: Option<Box<super::Misattributed>>,
}

/// Content terms found and in all, and every word (stop words too) found
/// and in all, over an answer's cited claims.
#[derive(Default)]
struct Pooled {
    content: (usize, usize),
    all: (usize, usize),
}

impl Judge<'_> {
    /// Judges a cited claim whose `terms` were looked up in the sources of
    /// `banks` (which its markers `cited` name): names found by initials,
    /// its best two sentences, negation both ways, the opposites and
    /// bounds, the strict rules, and the model's counts (added to
    /// `pooled`). `asks`: the claim asks a question of its own.
    fn claim(
        &mut self,
        terms: &mut [Term],
        (cited, banks): (&Markers, &[(usize, u64)]),
        (looked, asks, claim): (Looked, bool, &[u8]),
        pooled: &mut Pooled,
    ) -> Verdict {
        let Judge {
            answer,
            sources,
            settings,
            ref mut folder,
            ref mut index,
            ref mut found_ids,
            ref mut seats,
            ref mut opposite_ids,
            ref mut scanned,
            ref mut bounded,
            ref mut initials_budget,
            ref mut bound_budget,
            ref mut relation_budget,
            ref mut steps,
        } = *self;
        let Looked {
            mut pairs,
            negation_stated,
        } = looked;
        // "EU" against "European Union" and back: found by a scan of the
        // cited sources' text, in no sentence in particular.
        let by_initials = if may_be_initials(answer, terms) {
            let (marked, beside) = find_by_initials(
                answer,
                terms,
                (cited, sources),
                folder,
                (initials_budget, scanned),
                steps,
            );
            pairs.0 = (pairs.0 + beside).min(pairs.1);
            marked
        } else {
            0
        };
        found_ids.clear();
        found_ids.extend(terms.iter().filter(|t| t.seated()).map(|t| t.id));
        let like = Like {
            negations: terms.iter().filter(|t| t.negation).count() as u32,
            claim,
        };
        let mut cover = index.cover(found_ids, banks, steps, seats, like);
        cover.one += by_initials;
        cover.two += by_initials;
        // Found terms outside the best two sentences: the explanation
        // of a claim stitched from scattered words.
        let mut seat = seats.iter();
        for t in terms.iter_mut() {
            let at = if t.seated() {
                seat.next().copied().unwrap_or(0)
            } else {
                IN_BEST | IN_BEST_TWO
            };
            t.apart = at & IN_BEST_TWO == 0;
            t.in_best = t.found && at & IN_BEST != 0;
        }
        // Negation, both ways, against the claim's best sentences: a
        // "not" the claim adds, or one the source states and the claim
        // drops. The claim's negation is then a term not found.
        let negates = terms.iter().any(|t| t.negation);
        if negates && cover.first != u32::MAX {
            let best = [cover.first, cover.second]
                .into_iter()
                .filter(|&s| s != u32::MAX);
            let stated = if best.clone().any(|s| index.negates(s)) {
                // As many negations as its best sentences hold, or
                // fewer: stated, in whichever words ("did not report a
                // loss" against "reported no loss"). More: one is the
                // claim's own ("won't have not to worry" against "won't
                // have to worry"), however the others match.
                let claimed = terms.iter().filter(|t| t.negation).count() as u32;
                Some(claimed <= best.map(|s| index.negations_in(s)).sum())
            } else {
                (!negation_stated).then_some(false)
            };
            if let Some(stated) = stated {
                for t in terms.iter_mut().filter(|t| t.negation) {
                    t.found = stated;
                }
            }
        }
        let in_best = |s: u32| s != u32::MAX && index.negates(s);
        // Nothing below changes what is found: one pass for the rules'
        // tests, the model's counts (content terms, negations aside) and
        // the answer's count, and for which of the opposites' checks may
        // find anything (a word of a set of opposites, a number or a time
        // bound to compare).
        let (mut negation_missing, mut number_missing, mut any_missing) = (false, false, false);
        // A comparison the sources do not state ("older than", "born
        // first"): the claim's own, as a number they lack is.
        let mut comparison_missing = false;
        let mut found_all = 0;
        let (mut opposes, mut numbers) = (false, false);
        let (mut content, mut found, mut entity_missing) = (0usize, 0usize, false);
        for t in terms.iter() {
            opposes |= t.opposing;
            numbers |= t.class == TermClass::Number;
            if t.found {
                found_all += 1;
            } else {
                any_missing = true;
                negation_missing |= t.negation;
                number_missing |= t.class == TermClass::Number;
                comparison_missing |= matches!(t.class, TermClass::Word | TermClass::Number)
                    && !t.negation
                    && states_comparison(answer.as_bytes(), t.at, t.len, asks);
            }
            if !t.negation && t.class != TermClass::Function {
                content += 1;
                found += usize::from(t.found);
                entity_missing |= t.class == TermClass::Entity && !t.found;
            }
        }
        // The source's best sentence negates a content word the claim
        // states plainly ("did not win" against "won"). The pair, a
        // cheap first test, says only that the sources negate the word
        // somewhere; the best sentence must negate it itself ("without
        // stopping" later on does not contradict "a single stop").
        let contradicted = !negates
            && in_best(cover.first)
            && terms.iter().any(|t| {
                t.found
                    && t.class != TermClass::Function
                    && t.in_best
                    && index.holds_pair(pair_hash(NEGATED, key_of(t.id)), banks)
                    && index.held_in(cover.first, t.id, sources, folder, steps) == (false, true)
            });
        let mut opposed = None;
        if !contradicted && cover.first != u32::MAX && opposes {
            opposed = opposed_word(
                answer,
                terms,
                (cover.first, cover.second),
                index,
                sources,
                (folder, opposite_ids),
                steps,
            );
        }
        if opposed.is_none() && !contradicted && (opposes || numbers) {
            opposed = reversed_bound(
                answer,
                terms,
                index,
                (cited, sources),
                (bound_budget, bounded),
                steps,
            );
        }
        // A word the claim states as done that its best sentence only
        // qualifies ("approved" against "is expected to approve").
        let qualified = if !contradicted && opposed.is_none() && index.qualifies(cover.first, true)
        {
            qualified_word(
                answer,
                terms,
                (cover.first, cover.second),
                index,
                (sources, folder, steps),
            )
        } else {
            None
        };
        // Scattered: most of the claim's found words sit outside its
        // best two sentences (a merge of two sentences is fine; words
        // picked from all over a page are not support).
        let scattered = found >= 4 && 2 * (cover.two as usize).min(found) <= found;
        let broken = (settings.strict_numbers && number_missing)
            || negation_missing
            || comparison_missing
            || contradicted
            || opposed.is_some()
            || qualified.is_some()
            || scattered;
        // `found_ids` is free again once the cover is known.
        let mut misattributed = if !broken && pairs.0 < pairs.1 {
            misattributed(
                answer,
                terms,
                (cover.first, cover.second),
                (cited, banks, sources),
                (index, folder, found_ids),
                (relation_budget, steps),
            )
        } else {
            None
        };
        // "Lloyds is larger than Barclays" against "Barclays is larger
        // than Lloyds": every word found, in the other order.
        if !broken && !asks && misattributed.is_none() && pairs.0 < pairs.1 {
            misattributed = reversed_comparison(
                answer,
                terms,
                (cover.first, cover.second),
                (cited, sources),
                (index, folder),
                (relation_budget, steps),
            );
        }
        // "Both Eatza Pizza and Your Pie were founded in Arizona": said of
        // each name, which a claim whose pairs are all side by side in a
        // source is.
        if !broken && misattributed.is_none() && pairs.0 < pairs.1 && says_both(answer, terms) {
            misattributed = unshared_word(answer, terms, banks, index, found_ids);
        }
        let full = !any_missing && pairs.0 == pairs.1;
        // A question states nothing for a source to support: the share of
        // its words found says nothing either ("Do you like Brady?"). Only
        // a source that asks it too, word for word, supports it.
        let asked = asks && !full && !broken && misattributed.is_none();
        let rule = if broken || misattributed.is_some() || asked {
            Some(0.0)
        } else if full {
            Some(1.0)
        } else {
            None
        };
        pooled.content.0 += found;
        pooled.content.1 += content;
        pooled.all.0 += found_all;
        pooled.all.1 += terms.len();
        Verdict {
            // The found share and the answer's share are only known once
            // every claim is read: the counts wait in the features' places.
            evidence: Evidence {
                features: [
                    found as f64,
                    f64::from(u8::from(entity_missing)),
                    content as f64,
                ],
                rule,
            },
            contradicted,
            compared: comparison_missing,
            asked,
            opposed,
            qualified,
            misattributed,
        }
    }
}

/// Whether a stop word of the claim is "both", in any case.
fn says_both(answer: &str, terms: &[Term]) -> bool {
    stop_word_of_four(answer.as_bytes(), terms, b"both").is_some()
}

/// Where among the claim's `terms` its first stop word `word` (four
/// lower-case letters, matched in any case) stands: one comparison of four
/// bytes a word.
fn stop_word_of_four(bytes: &[u8], terms: &[Term], word: &[u8; 4]) -> Option<usize> {
    terms.iter().position(|t| {
        t.class == TermClass::Function
            && t.len == 4
            && bytes.get(t.at..t.at + 4).is_some_and(|w| {
                u32::from_le_bytes([w[0], w[1], w[2], w[3]]) | 0x2020_2020
                    == u32::from_le_bytes(*word)
            })
    })
}

/// A found word the claim says of two names at once ("Both Eatza Pizza
/// and Your Pie were founded in Arizona"; see `both`) that the sources
/// `banks` hold only away from one of them: in no sentence that holds a
/// word of that name, nor the one right after such a sentence. The word as
/// the claim writes it, and that name.
#[cold]
#[inline(never)]
fn unshared_word(
    answer: &str,
    terms: &[Term],
    banks: &[(usize, u64)],
    index: &mut SourceIndex,
    ids: &mut Vec<u32>,
) -> Option<Box<super::Misattributed>> {
    let bytes = answer.as_bytes();
    let shared = both::shared_names(terms.len(), |i| {
        let t = &terms[i];
        (&bytes[t.at..t.at + t.len], t.class == TermClass::Entity)
    })?;
    for name in &shared.names {
        let words = terms[name.clone()]
            .iter()
            .filter(|t| t.class == TermClass::Entity);
        // A name the sources lack, or find only by its initials, is the
        // other rules' to judge.
        if words.clone().any(|t| !t.seated()) {
            return None;
        }
        ids.clear();
        ids.extend(words.map(|t| t.id));
        for t in &terms[shared.said_from..] {
            if t.seated() && index.near_any(t.id, ids, banks) == Some(false) {
                let (first, last) = (&terms[name.start], &terms[name.end - 1]);
                return Some(Box::new(super::Misattributed {
                    word: answer[t.at..t.at + t.len].to_string(),
                    name: answer[first.at..last.at + last.len].to_string(),
                    other_name: false,
                }));
            }
        }
    }
    None
}

/// The claim at `span` with its `terms` judged (`verdict`; `None`:
/// uncited), the terms its findings name, support still to come (see
/// [`support_all`]).
fn claim_of(
    answer: &str,
    span: Range<usize>,
    markers: Markers,
    cited: Markers,
    terms: &[Term],
    verdict: Option<Verdict>,
    settings: &GroundingSettings,
) -> Claim {
    let evidence = verdict.as_ref().map(|v| v.evidence);
    let unsupported_terms = if evidence.is_some() {
        term_names(answer, terms, |t| {
            !t.found && t.class != TermClass::Function
        })
    } else {
        Vec::new()
    };
    // Kept for a flagged claim only (see `support_all`).
    let apart_terms = if evidence.is_some_and(|e| e.rule != Some(1.0)) {
        term_names(answer, terms, |t| t.apart)
    } else {
        Vec::new()
    };
    // Only `uncited_claim` reads these: no work when it is off.
    let checkable_terms = if evidence.is_none() && settings.uncited_claim.is_some() {
        term_names(answer, terms, |t| {
            matches!(t.class, TermClass::Number | TermClass::Entity)
        })
    } else {
        Vec::new()
    };
    let v = verdict.as_ref();
    let (contradicted, compared, asked) = (
        v.is_some_and(|v| v.contradicted),
        v.is_some_and(|v| v.compared),
        v.is_some_and(|v| v.asked),
    );
    let (opposed, qualified) = (v.and_then(|v| v.opposed), v.and_then(|v| v.qualified));
    let misattributed = verdict.and_then(|v| v.misattributed);
    Claim {
        span,
        markers,
        support: evidence.map(|_| 0.0),
        unsupported_terms,
        apart_terms,
        contradicted,
        compared,
        asked,
        opposed,
        qualified,
        misattributed,
        sources: cited,
        checkable_terms,
        evidence,
    }
}

/// Up to [`MAX_TERMS`] distinct names of the `terms` that `want` picks,
/// as the answer writes them case-folded: numbers, then entities, then
/// words, each in order of appearance.
fn term_names(answer: &str, terms: &[Term], want: impl Fn(&Term) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // Most claims have none: one pass to find out.
    if !terms.iter().any(&want) {
        return out;
    }
    // One buffer, a String only for a term kept.
    let mut buf = String::new();
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
            let _ = name_into(&mut buf, &answer[t.at..t.at + t.len]);
            if !out.contains(&buf) {
                out.push(buf.clone());
            }
        }
    }
    out
}

/// Gives each cited claim its support, now that the answer's shares
/// (`pooled`) are known, and the record's score: the least support.
/// A claim that passes drops its scattered terms.
fn support_all(claims: &mut [Claim], pooled: &Pooled, settings: &GroundingSettings) -> Option<f64> {
    // The answer's share of content terms found, over all its cited claims:
    // a short claim says little on its own.
    let share = |(found, all): (usize, usize)| {
        if all == 0 {
            1.0
        } else {
            found as f64 / all as f64
        }
    };
    let (answer_found, answer_all) = (share(pooled.content), share(pooled.all));
    let mut score: Option<f64> = None;
    for claim in claims {
        let Some(e) = claim.evidence.as_mut() else {
            continue;
        };
        let (found, content) = (e.features[FOUND], e.features[ANSWER_WORDS]);
        e.features[FOUND] = (found + ANSWER_WEIGHT * answer_found) / (content + ANSWER_WEIGHT);
        e.features[ANSWER_WORDS] = answer_all;
        let s = support_of(e, &settings.coefficients);
        // Four decimals: stable, readable output.
        let s = (s.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0;
        claim.support = Some(s);
        score = Some(score.map_or(s, |m: f64| m.min(s)));
        if s >= settings.min_support {
            claim.apart_terms.clear();
        }
    }
    score
}

/// Which citations each claim of `spans` is checked against, written into
/// `owns` as (its own citations, the citations it is checked against).
/// A claim with no marker of its own, followed on its line by a claim whose
/// markers resolve (directly, or past more such claims), is checked against
/// that claim's citations: a marker at the end of a run of sentences covers
/// the run (`Born in 1991. She writes fantasy[^1].` cites `[^1]` for both).
fn covering(
    answer: &str,
    citations: &[Citation],
    sources: usize,
    spans: &[Range<usize>],
    owns: &mut Vec<(Range<usize>, Range<usize>)>,
) {
    owns.clear();
    let mut cite = 0;
    for span in spans {
        // Markers inside the claim (citations are in order of appearance).
        while cite < citations.len() && citations[cite].span.start < span.start {
            cite += 1;
        }
        let first = cite;
        while cite < citations.len() && citations[cite].span.end <= span.end {
            cite += 1;
        }
        owns.push((first..cite, first..cite));
    }
    let mut next: Range<usize> = 0..0;
    for i in (0..owns.len()).rev() {
        let same_line = spans
            .get(i + 1)
            .is_some_and(|n| !answer.as_bytes()[spans[i].end..n.start].contains(&b'\n'));
        if !same_line {
            next = 0..0;
        }
        let own = owns[i].0.clone();
        if own.is_empty() {
            owns[i].1 = next.clone();
        } else {
            let resolves = citations[own.clone()]
                .iter()
                .any(|c| c.source_index() < sources);
            next = if resolves { own } else { 0..0 };
        }
    }
}

/// Where the found share and the answer's share of words found go among a
/// claim's features (see `model::FEATURE_NAMES`).
const FOUND: usize = 0;
const ANSWER_WORDS: usize = 2;

/// How many content words of the answer's share a claim's found share
/// counts besides its own: a short claim says little on its own ("I do"),
/// while a long claim stands on its own words, so a claim made up between
/// well-supported ones is still judged by what it says. The fit changes
/// little from 2 to 5.
const ANSWER_WEIGHT: f64 = 3.0;

/// The id of a term found by [`find_by_initials`]: in no sentence of the
/// index, so it counts in the claim's best sentences, as a term too common
/// to list does.
const BY_INITIALS: u32 = u32::MAX;

/// How many times its own size a record's acronym scans may read.
const INITIALS_BUDGET: usize = 8;

/// Whether a word that opens a claim reads as an acronym: its first two
/// letters capitals ("NPLs"), or a small letter between capitals ("BoE").
fn opens_as_acronym(word: &[u8]) -> bool {
    word[..2].iter().all(u8::is_ascii_uppercase)
        || (word[0].is_ascii_uppercase() && acronym_letters(word, &mut [0; MAX_LETTERS]).is_some())
}

/// Whether the claim has a missing term [`find_by_initials`] may find: an
/// entity, three missing words in a row, or two with only small words
/// between them ("return on equity", see [`is_small_word`]).
fn may_be_initials(answer: &str, terms: &[Term]) -> bool {
    let mut run = 0;
    let mut missing = 0;
    for t in terms {
        match (t.found, t.class) {
            (false, TermClass::Entity) => return true,
            // "chief executive" for "CEO", and an acronym that opens the
            // claim ("NPLs fell", "BoE raised rates"), a word by its place.
            (false, TermClass::Word)
                if is_chief(&answer.as_bytes()[t.at..t.at + t.len])
                    || (t.len >= 2 && opens_as_acronym(&answer.as_bytes()[t.at..t.at + t.len])) =>
            {
                return true;
            }
            (false, TermClass::Word) => {
                run += 1;
                missing += 1;
                if run == 3 {
                    return true;
                }
            }
            (_, TermClass::Function) => {}
            _ => run = 0,
        }
    }
    missing >= 2 && small_words_between_missing(answer, terms)
}

/// Whether two missing words of the claim have only small words, one or
/// more, between them ("return *on* equity").
#[inline(never)]
fn small_words_between_missing(answer: &str, terms: &[Term]) -> bool {
    let bytes = answer.as_bytes();
    // 1: right after a missing word; 2: after one and small words since.
    let mut state = 0u8;
    for t in terms {
        state = match (t.found, t.class) {
            (false, TermClass::Word) if state == 2 => return true,
            (false, TermClass::Word) => 1,
            (_, TermClass::Function) if state != 0 && is_small_word(&bytes[t.at..t.at + t.len]) => {
                2
            }
            _ => 0,
        };
    }
    false
}

/// Marks found the claim's missing terms that the cited sources hold as
/// an acronym and its name: a missing acronym ("EU") whose name a source
/// spells out ("European Union"), and a run of missing words one space or
/// joiner apart, capitalised ("Federal Bureau of Investigation") or three
/// or more in lower case ("chief executive officer"), whose initials a
/// source writes as a word ("FBI", "F.B.I.", "CEO"). Gives how many
/// content terms it marked, and how many of the claim's pairs of content
/// terms it found: a name's own words side by side, and the claim's words
/// beside the name that stand beside it in the source too ("The EU
/// imposed" against "The European Union imposed"). Cold: only for claims
/// [`may_be_initials`] lets through.
#[inline(never)]
fn find_by_initials(
    answer: &str,
    terms: &mut [Term],
    (cited, sources): (&Markers, &[&str]),
    folder: &mut Folder,
    (budget, scanned): (&mut usize, &mut Vec<Scanned>),
    steps: &mut usize,
) -> (u32, u32) {
    // Each scan reads a cited source whole, so a record's scans share a
    // budget of [`INITIALS_BUDGET`] times its size: past it, a term stays
    // missing (work stays linear however many claims lack a name). A
    // source scanned for the same letters with the same words around
    // before in this record gives what it gave then (the budget is spent
    // alike): claims repeat their names.
    let mut scan =
        |key: ScanKey, beside: &mut u32, found: &mut dyn FnMut(&str, &mut u32) -> bool| {
            cited.iter().any(|&m| {
                let Some(s) = sources.get(m as usize - 1) else {
                    return false;
                };
                let Some(left) = budget.checked_sub(s.len()) else {
                    return false;
                };
                *budget = left;
                *steps += s.len();
                let (found_here, beside_here) =
                    match scanned.iter().find(|d| d.key == key && d.source == m) {
                        Some(d) => (d.found, d.beside),
                        None => {
                            let mut b = 0;
                            let f = found(s, &mut b);
                            scanned.push(Scanned {
                                key,
                                source: m,
                                found: f,
                                beside: b,
                            });
                            (f, b)
                        }
                    };
                *beside = (*beside).max(beside_here);
                found_here
            })
        };
    let bytes = answer.as_bytes();
    let mut marked = 0;
    let mut paired = 0;
    let mut letters = [0u8; 6];
    // Whether names that keep their small words ("return on equity") may
    // be here: two missing words with small words between them.
    let mut small_words = None;
    let mut i = 0;
    while i < terms.len() {
        let t = &terms[i];
        // A capitalised first word is a word, not an entity, but may open
        // a name ("European Union imposed …").
        if t.found || !matches!(t.class, TermClass::Entity | TermClass::Word) {
            i += 1;
            continue;
        }
        if let Some(n) = acronym_letters(&bytes[t.at..t.at + t.len], &mut letters) {
            let acronym = &letters[..n];
            let around = found_beside(terms, i, i + 1);
            let mut beside = 0;
            let other = other_acronym(acronym);
            let key = ScanKey::new(ScanKind::Name, acronym, around);
            if scan(key, &mut beside, &mut |s, beside| {
                let mut found = false;
                for letters in std::iter::once(acronym).chain(other) {
                    spelled_out_in(s, letters, |start, end, whole| {
                        // Inside a longer name ("United States" of "United
                        // States Senate"), only with the claim's next word
                        // after it ("US Senate").
                        let (before, after) = stands_beside(s, (start, end), around, folder);
                        if whole || after {
                            found = true;
                            *beside = (*beside).max(u32::from(before) + u32::from(after));
                        }
                    });
                }
                let mut stands = |start: usize, end: usize| {
                    let (before, after) = stands_beside(s, (start, end), around, folder);
                    *beside = (*beside).max(u32::from(before) + u32::from(after));
                };
                // "ROE" for "return on equity": read only when the name is
                // not found without its small words.
                if !found {
                    found = spelled_word_by_word(s, acronym, &mut stands);
                }
                // "NPLs" for "NPL", and back: the stemmer leaves a plural
                // of consonants as it is.
                if !found {
                    found = written_in(s, acronym, &mut stands);
                }
                // "CEO" for "chief executive".
                if !found {
                    found = chief_title_in(s, acronym, &mut stands);
                }
                found
            }) {
                terms[i].found = true;
                terms[i].id = BY_INITIALS;
                marked += 1;
                paired += beside;
            }
            i += 1;
            continue;
        }
        // A name: missing words, one space or joiner apart, capitalised or
        // (three or more) in lower case; opened by the capitalised words
        // found before them that join them ("Bank of England" against a
        // source that writes "the Bank" and "BoE"), unless those outnumber
        // the missing ones: too little of the name is then the claim's own
        // to read its acronym by ("United States Army" is not a source's
        // "USA").
        let mut mixed = [0u8; 6];
        let start = found_name_start(answer, terms, i);
        let mut first = start;
        let (mut last, mut n, mut m) =
            read_name(answer, terms, (start, i), &mut letters, &mut mixed);
        let opening = terms[start..i]
            .iter()
            .filter(|t| t.class != TermClass::Function)
            .count();
        if 2 * opening > n {
            first = i;
            (last, n, m) = read_name(answer, terms, (i, i), &mut letters, &mut mixed);
        }
        // Scanned for only where a joiner gave it a letter.
        let mixed = m.filter(|&k| k > n).map(|k| &mixed[..k]);
        let end = last + 1;
        let lower_case = terms[first..end]
            .iter()
            .any(|t| t.class != TermClass::Function && bytes[t.at].is_ascii_lowercase());
        // "chief executive": a chief officer's title without its
        // "officer", looked for as its acronym ("CEO") only; "Federal
        // Reserve" as "Fed" only.
        let title = (n == 2
            && first == i
            && is_chief(&bytes[t.at..t.at + t.len])
            && is_title_word(&bytes[terms[last].at..terms[last].at + terms[last].len]))
        .then(|| [b'C', letters[1], b'O']);
        let title = title.as_ref().map(|t| &t[..]);
        let clipped = title
            .is_none()
            .then(|| clipped_name(&bytes[terms[first].at..terms[last].at + terms[last].len]))
            .flatten();
        let other_form = title.is_some() || clipped.is_some();
        // Two capitals of a name opened by a found word are too common an
        // acronym to stand for it ("Tom Buscemi" is not a source's "TB"),
        // and so are a found name's initials run on into words in lower
        // case: such a name is read by three capitals or more, or in mixed
        // case.
        let plain =
            (!other_form && (first == i || (n >= 3 && !lower_case))).then_some(&letters[..n]);
        let mixed = mixed.filter(|_| !other_form);
        let kind = match (title, clipped, plain) {
            (Some(_), _, _) => ScanKind::Title,
            (_, Some(_), _) => ScanKind::Clipped,
            (_, _, Some(_)) => ScanKind::Acronym,
            _ => ScanKind::MixedOnly,
        };
        let around = found_beside(terms, first, end);
        let mut beside = 0;
        if (other_form || n >= if lower_case { 3 } else { 2 })
            && letters[..n].iter().all(u8::is_ascii_uppercase)
            && (other_form || plain.is_some() || mixed.is_some())
            && scan(
                ScanKey::new(
                    kind,
                    title.or(clipped).or(mixed).unwrap_or(&letters[..n]),
                    around,
                ),
                &mut beside,
                &mut |s, beside| {
                    let mut found = false;
                    let mut stands = |start: usize, end: usize| {
                        let (before, after) = stands_beside(s, (start, end), around, folder);
                        *beside = (*beside).max(u32::from(before) + u32::from(after));
                    };
                    let mut upper = [0u8; 6];
                    let mixed = mixed.map(|m| {
                        upper[..m.len()].copy_from_slice(m);
                        upper[..m.len()].make_ascii_uppercase();
                        &upper[..m.len()]
                    });
                    for letters in plain
                        .into_iter()
                        .chain(plain.and_then(other_acronym))
                        .chain(mixed)
                        .chain(title)
                    {
                        found |= written_in(s, letters, &mut stands);
                    }
                    if let Some(word) = clipped {
                        found |= word_written_in(s, word, &mut stands);
                    }
                    found
                },
            )
        {
            let (newly, words) = found_by_initials(&mut terms[first..end]);
            marked += newly;
            paired += beside + words - 1;
        } else if let Some(end) = small_words
            .get_or_insert_with(|| small_words_between_missing(answer, terms))
            .then(|| word_by_word_initials(answer, terms, i, &mut letters))
            .flatten()
            .and_then(|(ends, n)| {
                // The longest run only: one scan of the sources a run.
                (3..=n).rev().find(|&k| ends[k - 1] != 0).and_then(|k| {
                    let end = ends[k - 1];
                    let around = found_beside(terms, i, end);
                    let mut beside = 0;
                    scan(
                        ScanKey::new(ScanKind::WordByWord, &letters[..k], around),
                        &mut beside,
                        &mut |s, beside| {
                            written_in(s, &letters[..k], |start, end| {
                                let (before, after) =
                                    stands_beside(s, (start, end), around, folder);
                                *beside = (*beside).max(u32::from(before) + u32::from(after));
                            })
                        },
                    )
                    .then(|| {
                        paired += beside;
                        end
                    })
                })
            })
        {
            let (newly, words) = found_by_initials(&mut terms[i..end]);
            marked += newly;
            paired += words - 1;
            i = end;
            continue;
        }
        i = end;
    }
    (marked, paired)
}

/// What an acronym scan of a source looks for: by its kind, its letters
/// (capitals, at most six) and the claim's found content words before and
/// after them (see [`found_beside`]), as one number.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct ScanKey(u128);

/// The scans of [`find_by_initials`]: an acronym's name; a name's acronym
/// (in either of its spellings, see [`other_acronym`], and in mixed case);
/// the acronym of a name read word by word, small words included; a
/// name's acronym in mixed case only; a chief's title's acronym ("CEO");
/// a name's clipped form ("Fed").
#[derive(Clone, Copy)]
enum ScanKind {
    Name = 1,
    Acronym = 2,
    WordByWord = 3,
    MixedOnly = 4,
    Title = 5,
    Clipped = 6,
}

impl ScanKey {
    fn new(kind: ScanKind, letters: &[u8], around: (Option<u32>, Option<u32>)) -> ScanKey {
        let mut key = [0u8; 16];
        key[..letters.len()].copy_from_slice(letters);
        key[6] = kind as u8;
        key[7] = u8::from(around.0.is_some()) | u8::from(around.1.is_some()) << 1;
        key[8..12].copy_from_slice(&around.0.unwrap_or(0).to_le_bytes());
        key[12..16].copy_from_slice(&around.1.unwrap_or(0).to_le_bytes());
        ScanKey(u128::from_le_bytes(key))
    }
}

/// One acronym scan of a record: what it looked for, in which source (by
/// marker), and what it found there (whether, and the most of the words
/// around that stand beside it).
pub(super) struct Scanned {
    key: ScanKey,
    source: u32,
    found: bool,
    beside: u32,
}

/// Reads the name that opens at term `first` and holds the missing term
/// `i` (the words between are found; see [`found_name_start`]): its
/// capitals' initials into `letters`, and with a small letter for each
/// joiner but "the" and "and" into `mixed`, as an acronym in mixed case
/// writes them ("BoE" for "Bank of England"). Gives the name's last term,
/// how many letters it has, and how many mixed ones (none past six).
fn read_name(
    answer: &str,
    terms: &[Term],
    (first, i): (usize, usize),
    letters: &mut [u8; 6],
    mixed: &mut [u8; 6],
) -> (usize, usize, Option<usize>) {
    let bytes = answer.as_bytes();
    let mut last = first;
    let mut n = 1;
    letters[0] = bytes[terms[first].at].to_ascii_uppercase();
    mixed[0] = letters[0];
    let mut m = Some(1);
    // Where the name stood before its first "and" (see `is_and`).
    let mut before_and = None;
    let mut j = first + 1;
    'words: while j < terms.len() && n < letters.len() {
        let next = &terms[j];
        let word = &bytes[next.at..next.at + next.len];
        if next.class == TermClass::Function && (is_name_joiner(word) || is_and(word)) {
            if is_and(word) {
                before_and.get_or_insert((last, n, m));
            }
            j += 1;
            continue;
        }
        if (next.found && j > i) || !matches!(next.class, TermClass::Entity | TermClass::Word) {
            break;
        }
        let prev = &terms[last];
        // A date's month stands before its day among the terms, after
        // it in the text ("12 May"): no gap, no name.
        let Some(gap) = answer.get(prev.at + prev.len..next.at) else {
            break;
        };
        // Most names' words are one space apart: nothing to split. A
        // hyphen joins two words of one name ("exchange-traded fund").
        // Else joiners and "and" only, one space apart; the joiners but
        // "the" give a mixed-case acronym small letters.
        let mut small = [0u8; 6];
        let mut k = 0;
        if gap != " " && gap != "-" {
            let gap = gap.as_bytes();
            if !(gap.starts_with(b" ") && gap.ends_with(b" ")) {
                break;
            }
            let mut and = false;
            for w in gap.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
                if is_and(w) {
                    and = true;
                } else if !is_name_joiner(w) {
                    break 'words;
                } else if !w.eq_ignore_ascii_case(b"the") && k < small.len() {
                    small[k] = w[0].to_ascii_lowercase();
                    k += 1;
                }
            }
            if and {
                before_and.get_or_insert((last, n, m));
            }
        }
        letters[n] = bytes[next.at].to_ascii_uppercase();
        n += 1;
        for &b in small[..k].iter().chain(&letters[n - 1..n]) {
            m = m.and_then(|k| {
                *mixed.get_mut(k)? = b;
                Some(k + 1)
            });
        }
        last = j;
        j += 1;
    }
    if let (true, Some(cut)) = (n < AND_LETTERS, before_and) {
        return cut;
    }
    (last, n, m)
}

/// Where the capitalised name that holds the missing term `i` starts: at
/// the found capitalised words before it, one space or joiners apart (not
/// "and"), three at most; at `i` when there are none.
fn found_name_start(answer: &str, terms: &[Term], i: usize) -> usize {
    let bytes = answer.as_bytes();
    if !bytes[terms[i].at].is_ascii_uppercase() {
        return i;
    }
    let mut first = i;
    let mut words = 0;
    for (k, t) in terms[..i].iter().enumerate().rev() {
        // A joiner is read in the gap of the content word before it.
        if t.class == TermClass::Function {
            continue;
        }
        let joined = answer
            .get(t.at + t.len..terms[first].at)
            .is_some_and(|gap| {
                gap == " "
                    || (gap.starts_with(' ')
                        && gap.ends_with(' ')
                        && gap
                            .as_bytes()
                            .split(|&b| b == b' ')
                            .all(|w| w.is_empty() || is_name_joiner(w)))
            });
        // An acronym ("NFL") is a name of its own.
        let mut letters = [0u8; 6];
        if words == 3
            || !joined
            || !t.found
            || !matches!(t.class, TermClass::Entity | TermClass::Word)
            || !bytes[t.at].is_ascii_uppercase()
            || acronym_letters(&bytes[t.at..t.at + t.len], &mut letters).is_some()
        {
            break;
        }
        first = k;
        words += 1;
    }
    first
}

/// Marks the missing words of a name found by its acronym as found by
/// initials. Gives how many content terms it marked and how many the
/// name has.
fn found_by_initials(name: &mut [Term]) -> (u32, u32) {
    let (mut marked, mut words) = (0, 0);
    for t in name {
        let content = t.class != TermClass::Function;
        words += u32::from(content);
        if !t.found {
            t.found = true;
            t.id = BY_INITIALS;
            marked += u32::from(content);
        }
    }
    (marked, words)
}

/// The runs of the claim's words from term `i` on whose initials, one for
/// every word and the small words inside included, may stand for an
/// acronym ("return on equity": ROE; "loan-to-value": LTV). Gives, for
/// each number of letters `k`, where a run of `k` words ends (a term
/// index; 0 when no run has `k`), and the most letters; the letters are in
/// `letters` (a shorter run's are their first). A run stops at the first
/// word that cannot be in it, so the longest is the one to look for. Words one space or hyphen
/// apart, in lower case but for the first, the content words missing, the
/// first and the last content words, and the stop words among them small
/// words (see [`is_small_word`]), at least one (a run without one is a
/// name [`find_by_initials`] reads as such).
fn word_by_word_initials(
    answer: &str,
    terms: &[Term],
    i: usize,
    letters: &mut [u8; 6],
) -> Option<([usize; 6], usize)> {
    let bytes = answer.as_bytes();
    let mut n = 0;
    let mut ends = [0usize; 6];
    let mut small = 0;
    let mut j = i;
    while j < terms.len() && n < letters.len() {
        let t = &terms[j];
        let content = t.class != TermClass::Function;
        let first = bytes[t.at];
        if (content && (t.found || !matches!(t.class, TermClass::Word)))
            || !first.is_ascii_alphabetic()
            || (j > i && first.is_ascii_uppercase())
        {
            break;
        }
        if j > i {
            let prev = &terms[j - 1];
            if !matches!(answer.get(prev.at + prev.len..t.at), Some(" " | "-")) {
                break;
            }
        }
        if !content && !is_small_word(&bytes[t.at..t.at + t.len]) {
            break;
        }
        letters[n] = first.to_ascii_uppercase();
        // A run ends at a content word only, once a small word is inside.
        ends[n] = if content && small > 0 { j + 1 } else { 0 };
        small += usize::from(!content);
        n += 1;
        j += 1;
    }
    let opens = terms.get(i).is_some_and(|t| t.class != TermClass::Function);
    (opens && small > 0).then_some((ends, n))
}

/// The qualifier ("may", "expected to"; see `qualifiers`) under which
/// sentence `first` holds a found content word the claim writes in lower
/// case, where the sentence holds it only so and sentence `second` does
/// not hold it plainly; `None` when the claim qualifies what it states
/// itself ("The bank may cut …", "wants to expand"). The sentence's bit
/// is the caller's quick test, then the claim's own words; the sentence
/// is read again only for a claim that passes both.
#[cold]
#[inline(never)]
fn qualified_word(
    answer: &str,
    terms: &[Term],
    (first, second): (u32, u32),
    index: &mut SourceIndex,
    (sources, folder, steps): (&[&str], &mut Folder, &mut usize),
) -> Option<&'static str> {
    let bytes = answer.as_bytes();
    // A claim's own rank answers a rank: only another qualifier of the
    // sentence is worth reading it again for.
    let others = index.qualifies(first, false);
    let mut itself = None;
    for t in terms {
        if !t.found || !t.in_best || t.class != TermClass::Word || !bytes[t.at].is_ascii_lowercase()
        {
            continue;
        }
        // A possibility ("redeemable") is no deed a qualifier could
        // contradict; a rank still does, when "most" makes the word a
        // superlative ("the most profitable bank" against "one of the most
        // profitable banks"). Anything else is skipped unread.
        let possible = states_possible(bytes, t.at, t.at + t.len);
        if possible && !letters_before(bytes, t.at).eq_ignore_ascii_case(b"most") {
            continue;
        }
        let own = *itself.get_or_insert_with(|| {
            let from = terms.first().map_or(0, |f| f.at);
            let to = terms.last().map_or(0, |l| l.at + l.len);
            let enough = if others { Own::Everything } else { Own::Rank };
            claim_qualifies(&bytes[from..to], enough)
        });
        if own == Own::Everything || (own == Own::Rank && !others) {
            return None;
        }
        let Some(n) = index.held_only_qualified((first, t.id), (sources, folder, steps)) else {
            continue;
        };
        // A claim's own rank answers a rank, and only a rank.
        let rank = qualifiers::is_rank(n);
        if (possible && !rank) || (own == Own::Rank && rank) {
            continue;
        }
        if second != u32::MAX && index.held_plainly_in((second, t.id), (sources, folder, steps)) {
            continue;
        }
        return Some(qualifiers::phrase(n));
    }
    None
}

/// The word of sentence `best` or `second` (a claim's best two) that says
/// the opposite of one of the claim's words (see `opposites`), where
/// neither states that word nor another of its meaning: "fell" for "rose"
/// against "Net revenue retention fell from 118% to 109%", "increase" for
/// "fell 5%" against "Net income was $5bn. Up 5% on the year." Not for a
/// word the claim negates, nor when the claim says both
/// ("at higher altitudes water boils at lower temperatures": the source's
/// "lower" may be the claim's own). Only words not found in `best` are
/// looked up, and only those in a set of opposites cost a read.
#[inline(never)]
fn opposed_word(
    answer: &str,
    terms: &[Term],
    (best, second): (u32, u32),
    index: &mut SourceIndex,
    sources: &[&str],
    (folder, ids): (&mut Folder, &mut opposites::Ids),
    steps: &mut usize,
) -> Option<&'static str> {
    let bytes = answer.as_bytes();
    // The content term right after a negation is the negation rule's
    // ("did not rise" against "fell" states what the source does).
    let mut negated = false;
    // Where the claim's words stand among the opposites, read on the first
    // word that needs it: a claim that says both of a pair contradicts
    // neither. Words at one place are judged alike, so each place is
    // judged once, and a claim that repeats "5% higher" stays linear.
    let mut said: Option<opposites::Places> = None;
    let mut judged = opposites::Places::new();
    for (i, t) in terms.iter().enumerate() {
        if t.class == TermClass::Function {
            continue;
        }
        let after_negation = std::mem::replace(&mut negated, t.negation);
        // A word its best sentence holds only by another word ("profit"
        // by its synonym "net") is judged too: the sentence may write its
        // opposite ("net loss").
        if t.class != TermClass::Word
            || (t.in_best && t.id == t.own)
            || t.negation
            || after_negation
            || !t.opposing
            || opposites::after_non(bytes, t.at)
        {
            continue;
        }
        let mut place_of =
            |u: &Term| opposites::place_of_term(&bytes[u.at..u.at + u.len], u.id, ids, folder);
        // A period's noun said as a rate ("£5 a month") is judged as its
        // adverb, but says no class of its own against the claim's other
        // words: only the words of the sets do.
        let place = match place_of(t) {
            // A unit of time is a length only right after a number, and
            // one the best sentence holds: a sentence without the number
            // ("24-hour" against "its 400th year") states another length.
            Some(p) if opposites::is_duration(p) => opposites::period_of(bytes, t.at, t.len)
                .or_else(|| {
                    let number = i.checked_sub(1).map(|k| &terms[k]);
                    number
                        .is_some_and(|n| n.class == TermClass::Number && n.in_best)
                        .then_some(p)
                }),
            Some(p) => Some(p),
            None => opposites::period_of(bytes, t.at, t.len),
        };
        let Some(place) = place else {
            continue;
        };
        let said = said.get_or_insert_with(|| {
            *steps += terms.len();
            let mut said = opposites::Places::new();
            // A word of no set of opposites is not marked `opposing`.
            for p in terms
                .iter()
                .filter(|u| u.opposing && !opposites::after_non(bytes, u.at))
                .filter_map(&mut place_of)
            {
                said.add(p);
            }
            said
        });
        if said.excludes(place) || judged.holds(place) {
            continue;
        }
        judged.add(place);
        let classes = ids.of(place, folder);
        let states = |index: &mut SourceIndex, folder: &mut Folder, steps: &mut usize, id: u32| {
            index.held_plainly_in((best, id), (sources, folder, steps))
                || (second != u32::MAX
                    && index.held_plainly_in((second, id), (sources, folder, steps)))
        };
        if classes[place.class()]
            .iter()
            .any(|&(id, _)| states(index, folder, steps, id))
        {
            continue;
        }
        let others = classes
            .iter()
            .enumerate()
            .filter(|&(c, _)| c != place.class());
        for (c, class) in others {
            let Some(&(_, word)) = class
                .iter()
                .find(|&&(id, _)| states(index, folder, steps, id))
            else {
                continue;
            };
            // Held by stem; a word of the class must be written there
            // too, or the stem is another word's ("employs" is not
            // "employer").
            let class = place.in_class(c);
            if opposites::stated_by_stem(place)
                || index.writes_class(best, class, sources, steps)
                || (second != u32::MAX && index.writes_class(second, class, sources, steps))
            {
                return Some(word);
            }
        }
    }
    None
}

/// How many content words on either side of a comparative hold what it
/// compares ("Mary Pierce is older than Kim Clijsters").
const COMPARED_WORDS: usize = 8;

/// A comparison "A … larger than B" of the claim that its best two
/// sentences state the other way round, "B … larger than A": after the
/// sentence's comparative and "than" stands a word the claim puts before
/// its own, and before it, in the sentence, the word the claim puts after
/// its "than" (each within [`COMPARED_WORDS`]). Named as the relation rule
/// names a rival: the comparative as the source writes it, of the word it
/// says it of. `None` where a best sentence also states it the claim's way
/// round. Only the comparative before the claim's first "than" is judged,
/// and each of its places costs a bounded look, so a claim or a sentence
/// repeating one stays linear.
#[inline(never)]
fn reversed_comparison(
    answer: &str,
    terms: &[Term],
    best: (u32, u32),
    (cited, sources): (&Markers, &[&str]),
    (index, folder): (&mut SourceIndex, &mut Folder),
    (budget, steps): (&mut usize, &mut usize),
) -> Option<Box<super::Misattributed>> {
    let bytes = answer.as_bytes();
    // The claim's first "than", a stop word, and the word before it.
    let than = stop_word_of_four(bytes, terms, b"than")?;
    let k = than.checked_sub(1)?;
    let t = &terms[k];
    if t.class != TermClass::Word || t.negation || !t.in_best || !compares_than(bytes, t.at, t.len)
    {
        return None;
    }
    let content = |u: &&Term| u.class != TermClass::Function && !u.negation;
    // The claim's words either side: what it compares with first.
    let mut compared = terms[k + 1..].iter().filter(content).take(COMPARED_WORDS);
    let after = compared.next()?;
    let claim_after: SmallVec<[u32; COMPARED_WORDS]> = compared.map(|u| u.id).collect();
    let claim_before: SmallVec<[u32; COMPARED_WORDS]> = terms[..k]
        .iter()
        .rev()
        .filter(content)
        .take(COMPARED_WORDS)
        .map(|u| u.id)
        .collect();
    let mut reversed: Option<super::Misattributed> = None;
    for &m in cited.iter() {
        let idx = m as usize - 1;
        let text = sources[idx].as_bytes();
        let (placed, places, _) = index.places_of(idx, t.id, (sources, folder, steps), budget)?;
        for &p in places {
            let p = p as usize;
            let sentence = placed[p].sentence;
            if sentence != best.0 && sentence != best.1 {
                continue;
            }
            let Some(next) = placed.get(p + 1).filter(|n| n.sentence == sentence) else {
                continue;
            };
            let end = (placed[p].at + placed[p].len) as usize;
            if !text.get(end..next.at as usize).is_some_and(opens_with_than) {
                continue;
            }
            if next.id == after.id {
                return None;
            }
            *steps += 2 * COMPARED_WORDS;
            let side = |from: usize, to: usize| {
                placed[from..to.min(placed.len())]
                    .iter()
                    .enumerate()
                    .filter(move |(_, q)| q.sentence == sentence)
                    .map(move |(i, q)| (from + i, q.id))
            };
            let subject = side(p.saturating_sub(COMPARED_WORDS), p)
                .rev()
                .find(|&(_, id)| id == after.id);
            // A word on both sides of either comparison ("average
            // earnings … higher than average earnings") orders nothing.
            if let Some((q, _)) = subject
                && reversed.is_none()
                && claim_before.contains(&next.id)
                && !claim_after.contains(&next.id)
                && !side(p + 2, p + 1 + COMPARED_WORDS).any(|(_, id)| id == after.id)
            {
                let written = |at: u32, len: u32| {
                    String::from_utf8_lossy(&text[at as usize..(at + len) as usize]).into_owned()
                };
                // A name goes on over the capitalised words right after
                // it ("Mary Pierce").
                let name_opens = placed[q].case != Case::Lower;
                let mut last = q;
                while name_opens
                    && last + 1 < p
                    && placed[last + 1].case == Case::Name
                    && placed[last + 1].at == placed[last].at + placed[last].len + 1
                {
                    last += 1;
                }
                let (from, to) = (placed[q].at, placed[last].at + placed[last].len);
                reversed = Some(super::Misattributed {
                    word: written(placed[p].at, placed[p].len),
                    name: written(from, to - from),
                    other_name: true,
                });
            }
        }
    }
    reversed.map(Box::new)
}

/// The record's scans of a cited source for a number (or a word bounded
/// in time), by source marker and the text looked for: the bound before
/// each place the source writes it whole, in order. A claim that states
/// the number again reads them from here (the budget is spent alike).
#[derive(Default)]
pub(super) struct Bounded {
    scans: Vec<BoundScan>,
    places: Vec<Bound>,
}

/// The bound before a place, if any: where it bounds, and its phrase.
type Bound = Option<(opposites::Place, &'static str)>;

/// One scan of [`Bounded`]: of which source, for which text (`timed`: a
/// word bounded in time), and its places' bounds in `Bounded::places`.
struct BoundScan {
    marker: u32,
    timed: bool,
    text: Box<[u8]>,
    places: Range<usize>,
}

impl Bounded {
    fn clear(&mut self) {
        self.scans.clear();
        self.places.clear();
    }

    /// The bounds of source `marker`'s places of `needle` (`timed`: a
    /// word bounded in time), from `scan` the first time they are asked.
    fn places<I>(
        &mut self,
        marker: u32,
        (needle, timed): (&[u8], bool),
        scan: impl FnOnce() -> I,
    ) -> &[Bound]
    where
        I: Iterator<Item = Bound>,
    {
        let known = self
            .scans
            .iter()
            .find(|b| b.marker == marker && b.timed == timed && *b.text == *needle);
        let range = match known {
            Some(b) => b.places.clone(),
            None => {
                let from = self.places.len();
                self.places.extend(scan());
                let places = from..self.places.len();
                self.scans.push(BoundScan {
                    marker,
                    timed,
                    text: needle.into(),
                    places: places.clone(),
                });
                places
            }
        };
        &self.places[range]
    }
}

/// The phrase of the cited sources that bounds a number of the claim the
/// other way ("at most" against the claim's "at least six", "under"
/// against "over $250,000", "after" against "before 2020"), or a word the
/// claim bounds in time ("after" against "before the maturity date"),
/// where no place they write the number or word bounds it the claim's way. Cold: only a
/// number written after a bounding phrase costs a scan of the cited
/// sources for it, within a budget shared by the record's claims (past it
/// no bound is compared), so work stays linear.
#[inline(never)]
fn reversed_bound(
    answer: &str,
    terms: &[Term],
    index: &SourceIndex,
    (cited, sources): (&Markers, &[&str]),
    (budget, bounded): (&mut usize, &mut Bounded),
    steps: &mut usize,
) -> Option<&'static str> {
    let bytes = answer.as_bytes();
    let text = |t: &Term| &bytes[t.at..t.at + t.len];
    // After a time bound ("before the maturity date"), the first word that
    // is not a determiner: the word it bounds.
    let mut after_time = false;
    for t in terms {
        if t.class == TermClass::Function {
            // "before", "after", "until", "since", "prior": five or six
            // letters, and marked `opposing`; most stop words are neither,
            // and matter only after a time bound.
            if t.opposing && (5..=6).contains(&t.len) && opposites::is_time_bound(text(t)) {
                after_time = true;
            } else if after_time {
                let w = text(t);
                after_time = opposites::is_determiner(w) || w == b"to";
            }
            continue;
        }
        let timed = std::mem::replace(&mut after_time, false);
        // A number is bounded where the sources write it; a word ("the
        // maturity date"), which they may write in other contexts too, only
        // when every place they write it is bounded the other way.
        let (bound, every): (fn(&[u8], usize) -> _, bool) = match t.class {
            TermClass::Number => (opposites::bound_before, false),
            TermClass::Word if timed => (opposites::time_bound_before, true),
            _ => continue,
        };
        if !t.found {
            continue;
        }
        let Some((claimed, _)) = bound(bytes, t.at) else {
            continue;
        };
        let needle = text(t);
        let mut same = false;
        let mut other = None;
        let mut unbounded = false;
        // Only the cited sources that hold the number.
        let holding = cited.iter().filter(|&&m| {
            let idx = m as usize - 1;
            index.holds_id(t.id, &[(idx / 64, 1u64 << (idx % 64))])
        });
        for &m in holding {
            let Some(s) = sources.get(m as usize - 1) else {
                continue;
            };
            // Past the budget no bound is compared.
            *budget = budget.checked_sub(s.len())?;
            *steps += s.len();
            for &found in bounded.places(m, (needle, every), || {
                let b = s.as_bytes();
                memchr::memmem::find_iter(b, needle).filter_map(move |at| {
                    let end = at + needle.len();
                    // The number whole: not inside a longer word or number.
                    let inside = |c: &u8| c.is_ascii_alphanumeric();
                    let part = b.get(end).is_some_and(inside)
                        || at.checked_sub(1).and_then(|p| b.get(p)).is_some_and(|c| {
                            inside(c)
                                || (matches!(c, b'.' | b',')
                                    && at >= 2
                                    && b[at - 2].is_ascii_digit())
                        });
                    (!part).then(|| bound(b, at))
                })
            }) {
                match found {
                    Some((place, _)) if place == claimed => same = true,
                    Some((place, phrase)) if place.excludes(claimed) => {
                        other.get_or_insert(phrase);
                    }
                    _ => unbounded = true,
                }
            }
        }
        // Bounded the claim's way somewhere, or (for a word) not bounded
        // somewhere: not contradicted.
        let kept = same || (every && unbounded);
        if !kept && other.is_some() {
            return other;
        }
    }
    None
}

/// The ids of the found content terms right before `terms[from..to]` and
/// right after it, if found.
fn found_beside(terms: &[Term], from: usize, to: usize) -> (Option<u32>, Option<u32>) {
    let content = |t: &&Term| t.class != TermClass::Function;
    let id = |t: &Term| (t.found && t.id != BY_INITIALS).then_some(t.id);
    (
        terms[..from].iter().rev().find(content).and_then(id),
        terms[to..].iter().find(content).and_then(id),
    )
}

/// Whether the claim's content words beside a name (`around`: their ids
/// before and after it) stand beside it where source `s` writes it
/// (`span`), stop words aside and within its sentence: the one before, the
/// one after.
fn stands_beside(
    s: &str,
    span: (usize, usize),
    around: (Option<u32>, Option<u32>),
    folder: &mut Folder,
) -> (bool, bool) {
    let before = around
        .0
        .is_some_and(|id| content_word_beside(s, span.0, true, folder) == Some(id));
    let after = around
        .1
        .is_some_and(|id| content_word_beside(s, span.1, false, folder) == Some(id));
    (before, after)
}

/// The id of the first content word of `s` before (`back`) or after
/// `at`, within its sentence and a few words.
fn content_word_beside(s: &str, mut at: usize, back: bool, folder: &mut Folder) -> Option<u32> {
    // Non-ASCII bytes count as word bytes, so a word never splits a
    // character.
    let bytes = s.as_bytes();
    // A point or comma between digits is inside a number ("2.1", "1,000").
    let is_word_at = |i: usize| {
        let b = bytes[i];
        b.is_ascii_alphanumeric()
            || matches!(b, b'\'' | b'-')
            || b >= 0x80
            || (matches!(b, b'.' | b',')
                && i > 0
                && bytes[i - 1].is_ascii_digit()
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    };
    let ends_sentence = |gap: &[u8]| gap.iter().any(|b| matches!(b, b'.' | b'!' | b'?' | b'\n'));
    for _ in 0..6 {
        let (start, end) = if back {
            let end = (0..at).rposition(is_word_at)? + 1;
            if ends_sentence(&bytes[end..at]) {
                return None;
            }
            let start = (0..end).rposition(|i| !is_word_at(i)).map_or(0, |p| p + 1);
            (start, end)
        } else {
            let start = at + (at..bytes.len()).position(is_word_at)?;
            if ends_sentence(&bytes[at..start]) {
                return None;
            }
            let len = (start..bytes.len()).take_while(|&i| is_word_at(i)).count();
            (start, start + len)
        };
        let w = &bytes[start..end];
        let info = folder.fold_packed(w, w.is_ascii());
        if !info.function() {
            return Some(info.id());
        }
        at = if back { start } else { end };
    }
    None
}

/// Marks a content term of a claim as a name in `misattributed`'s list of
/// the claim's content terms.
const NAME: u32 = 1 << 31;

/// Most content words read outward from a relation word of a source for
/// the name beside it.
const NAME_WORDS: usize = 8;

/// A claim's relation word that the cited sources say of another name
/// than the claim's: the claim sets a word that is no name ("directed")
/// beside a name it states ("Neil Gaiman"), stop words aside and with
/// nothing but words between; the sources never write that name beside
/// the word, and where they write the word beside a name, it is one name
/// the claim does not state at all, in the claim's best two sentences
/// ("directed by Robert Zemeckis and written by Neil Gaiman"). Gives the
/// word and that name as the source writes them. A name is the run of
/// capitalised words (and numbers) beside the word, lists included, so
/// "Zemeckis directed" and "directed by Robert Zemeckis" name one party,
/// as do "written by Neil Gaiman and Roger Avary" and "Avary wrote".
/// Where no name stands beside the word, the name its sentence opens with
/// is the party ([`opening_name`]), for a claim's name the sources write
/// as the claim does.
/// Not when the sources write the word beside two or more names (a
/// common word such as "song", said of many), beside a name the claim
/// states, beside the claim's name written as its initials ("MJ" for
/// "Michael Jordan"), or in more sentences than a term's are listed
/// (`index::POSTINGS`). Cold: only for a claim with a pair of terms the
/// sources lack and its word in its best two sentences; it reads a cited
/// source again at most once a record, and then only the word's
/// sentences, within a budget the record's claims share
/// ([`INITIALS_BUDGET`] times the record's size; past it no relation is
/// compared), so work stays linear (`SourceIndex::places_of`).
#[inline(never)]
fn misattributed(
    answer: &str,
    terms: &[Term],
    best: (u32, u32),
    (cited, banks, sources): (&Markers, &[(usize, u64)], &[&str]),
    (index, folder, content): (&mut SourceIndex, &mut Folder, &mut Vec<u32>),
    (budget, steps): (&mut usize, &mut usize),
) -> Option<Box<super::Misattributed>> {
    let bytes = answer.as_bytes();
    // The claim's content terms, by index, its names marked.
    content.clear();
    content.extend(
        (0..terms.len() as u32).filter(|&i| terms[i as usize].class != TermClass::Function),
    );
    let mut names = false;
    for k in (0..content.len()).rev() {
        let t = &terms[content[k] as usize];
        let name = match t.class {
            TermClass::Entity => true,
            // The claim's first word, capitalised ("Barclays raised its
            // rates"), and a name's first word opening the claim ("Neil
            // Gaiman directed").
            TermClass::Word => {
                bytes[t.at].is_ascii_uppercase()
                    && (k == 0
                        || content.get(k + 1).is_some_and(|&j| {
                            terms[(j & !NAME) as usize].class == TermClass::Entity
                        }))
            }
            _ => false,
        };
        // A currency sign is read as a name ("$5": "dollar"), not one a
        // source writes beside a word; a month or a day is a time.
        if name
            && !t.negation
            && (bytes[t.at].is_ascii_alphabetic() || bytes[t.at] >= 0x80)
            && !names_time(&bytes[t.at..t.at + t.len])
        {
            content[k] |= NAME;
            names = true;
        }
    }
    if !names {
        return None;
    }
    let content = &content[..];
    let candidates = relation_candidates(bytes, terms, content, |key| index.holds_pair(key, banks));
    // The claim states a word: as its own, its other spelling, or found.
    let stated = |id: u32| {
        terms
            .iter()
            .any(|t| t.id == id || t.own == id || t.other == id)
    };
    'candidates: for &(r, (lo, hi)) in &candidates {
        let name = &content[lo..hi];
        // A passive claim ("Revolut was founded in 2015") names whom the
        // word was done to; a name right before the word in the active
        // voice ("Storonsky founded the company"), or after it with "by",
        // is who did it, another party, not a rival one.
        let last = &terms[(name[name.len() - 1] & !NAME) as usize];
        let word = &terms[r];
        let passive = last.at < word.at
            && participle(&bytes[word.at..word.at + word.len])
            && bytes
                .get(last.at + last.len..word.at)
                .is_some_and(states_be);
        let of_name = |id: u32| name.iter().any(|&i| terms[(i & !NAME) as usize].id == id);
        // The name's initials, when it has as many words as an acronym
        // may have letters.
        let mut initials = [0u8; 6];
        let initialled_name = (2..=initials.len()).contains(&name.len());
        for (letter, &i) in initials.iter_mut().zip(name) {
            *letter = bytes[terms[(i & !NAME) as usize].at].to_ascii_uppercase();
        }
        let initials = &initials[..name.len().min(initials.len())];
        // The first other name the sources set the word beside in the
        // claim's best two sentences, and the first one anywhere.
        let mut other: Option<NamePlace> = None;
        let mut party: Option<NameIds> = None;
        // No other name to find outside the best two sentences; and a word
        // in more sentences than a term's are listed is too common to say
        // whom the sources say it of.
        if index.held_in_either(terms[r].id, banks, best) != Some(true) {
            continue;
        }
        // A name the sources write in other words ("Fed" for "Federal
        // Reserve") may be in a sentence under a form not looked for:
        // only a name they write as the claim does is looked for there.
        let written_as_claimed = name
            .iter()
            .all(|&i| index.holds_if_wanted(terms[(i & !NAME) as usize].id, banks));
        for &m in cited.iter() {
            let idx = m as usize - 1;
            let text = sources[idx].as_bytes();
            let Some((placed, places, starts)) =
                index.places_of(idx, terms[r].id, (sources, folder, steps), budget)
            else {
                continue 'candidates;
            };
            let written =
                |q: usize| &text[placed[q].at as usize..(placed[q].at + placed[q].len) as usize];
            let name_at = |q: usize| match placed[q].case {
                Case::Name => !names_time(written(q)),
                Case::Opening => placed
                    .get(q + 1)
                    .is_some_and(|n| n.sentence == placed[q].sentence && n.case == Case::Name),
                Case::Lower => false,
            };
            // An acronym is in capitals: a name by its case.
            let initialled = |q: usize| {
                let mut letters = [0u8; 6];
                initialled_name
                    && placed[q].case == Case::Name
                    && acronym_letters(written(q), &mut letters)
                        .is_some_and(|k| letters[..k] == *initials)
            };
            // The sentence whose opening name was last read: a sentence is
            // read for it once, however often it writes the word.
            let mut opened: Option<u32> = None;
            for p in places.iter().map(|&p| p as usize) {
                // The word inside a name ("Best Director") says nothing of
                // the names beside it.
                if placed[p].case == Case::Name {
                    continue;
                }
                // A pronoun as the word's object ("Storonsky founded it")
                // stands for a party the sentence does not name, which
                // may be the claim's.
                if text
                    .get((placed[p].at + placed[p].len) as usize..)
                    .and_then(|after| {
                        after
                            .split(|b| !b.is_ascii_alphabetic())
                            .find(|w| !w.is_empty())
                    })
                    .is_some_and(|w| one_of(w, &OBJECTS))
                {
                    continue;
                }
                let sentence = placed[p].sentence;
                let in_best = sentence == best.0 || sentence == best.1;
                let mut named_beside = false;
                for back in [true, false] {
                    // The name beside the word: its ids and where it is.
                    let mut ids: SmallVec<[u32; 8]> = SmallVec::new();
                    let mut span: Option<(u32, u32)> = None;
                    // The name did the word: before it in the active voice
                    // ("Storonsky founded"), or after it with "by"
                    // ("owned by Time Inc").
                    let mut agent = false;
                    let mut q = p;
                    for _ in 0..NAME_WORDS {
                        *steps += 1;
                        let Some(n) = (if back { q.checked_sub(1) } else { Some(q + 1) })
                            .filter(|&n| n < placed.len() && placed[n].sentence == sentence)
                        else {
                            break;
                        };
                        if (placed[n].case != Case::Lower && of_name(placed[n].id)) || initialled(n)
                        {
                            continue 'candidates;
                        }
                        q = n;
                        // A number inside a name ("337th Flight Test
                        // Squadron (337 FLTS)") or before it ("founded in
                        // 1379 by William of Wykeham") does not end it.
                        if placed[n].number {
                            continue;
                        }
                        if !name_at(n) {
                            break;
                        }
                        let (a, b) = (placed[n].at, placed[n].at + placed[n].len);
                        if span.is_none() {
                            let gap = if back {
                                (b, placed[p].at)
                            } else {
                                (placed[p].at + placed[p].len, a)
                            };
                            // Parts of one word ("D.C") have no gap.
                            let Some(gap) = text.get(gap.0 as usize..gap.1 as usize) else {
                                break;
                            };
                            if !plain_gap(gap) {
                                break;
                            }
                            agent = if back {
                                !states_be(gap)
                            } else {
                                gap.split(|b| !b.is_ascii_alphabetic()).any(|w| w == b"by")
                            };
                        }
                        ids.push(placed[n].id);
                        span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
                    }
                    let Some(span) = span else {
                        continue;
                    };
                    // A passive claim names whom the word was done to: who
                    // did it is not a rival party. One after "by" leaves
                    // the sentence's opening name to be read ("Golf
                    // Magazine is a magazine owned by Time Inc").
                    if passive && agent {
                        named_beside |= back;
                        continue;
                    }
                    named_beside = true;
                    let at = in_best.then_some((idx, placed[p], span));
                    if !add_party(ids, at, &stated, (&mut party, &mut other)) {
                        continue 'candidates;
                    }
                }
                if named_beside || !written_as_claimed || opened == Some(sentence) {
                    continue;
                }
                opened = Some(sentence);
                // No name beside the word: the name its sentence opens
                // with is whom the sentence says it of ("Boston College
                // is a private university located in Chestnut Hill"),
                // unless the sentence names the claim's party anywhere.
                let Some(&start) = starts.get(sentence as usize) else {
                    continue;
                };
                let Some((ids, span)) = opening_name(
                    text,
                    start as usize,
                    placed,
                    p,
                    (&name_at, &|n| {
                        placed[n].case != Case::Lower && (of_name(placed[n].id) || initialled(n))
                    }),
                    &mut |w: &[u8]| opening_word(w, folder),
                    steps,
                ) else {
                    continue;
                };
                let at = in_best.then_some((idx, placed[p], span));
                if ids.is_empty() || !add_party(ids, at, &stated, (&mut party, &mut other)) {
                    continue 'candidates;
                }
            }
        }
        if let Some((idx, word, (a, b))) = other {
            let text = sources[idx];
            // The finding names the name up to an aside it may run into
            // ("Xanadu with the Electric Light Orchestra (No. 8 Pop").
            let name = &text[a as usize..b as usize];
            let name = name[..name
                .find(['(', ')', '[', ':', ';', '\n'])
                .unwrap_or(name.len())]
                .trim_end_matches([' ', ',', '-']);
            return Some(Box::new(super::Misattributed {
                word: text[word.at as usize..(word.at + word.len) as usize].to_string(),
                name: name.to_string(),
                other_name: true,
            }));
        }
    }
    None
}

/// A name's place in a source (its source, the word it is said beside,
/// and the name's bytes).
type NamePlace = (usize, Placed, (u32, u32));

/// A name's words, by id.
type NameIds = SmallVec<[u32; 8]>;

/// Takes `ids`, a name a source says the relation word of, as the word's
/// party, and `at` (where, when in the claim's best two sentences) as the
/// place a finding names if none is yet. False when the claim states the
/// name, or the sources say the word of another party already: the claim
/// is then not misattributed by this word.
fn add_party(
    ids: NameIds,
    at: Option<NamePlace>,
    stated: &dyn Fn(u32) -> bool,
    (party, other): (&mut Option<NameIds>, &mut Option<NamePlace>),
) -> bool {
    if ids.iter().any(|&id| stated(id)) {
        return false;
    }
    match party {
        None => *party = Some(ids),
        Some(first) if !ids.iter().any(|id| first.contains(id)) => return false,
        Some(_) => {}
    }
    if other.is_none() {
        *other = at;
    }
    true
}

/// The name that opens the sentence of `placed[p]` (a source's word that
/// has no name beside it), when the word comes after it: its ids and
/// where it is. The sentence opens with the name, or with "The", "A" or
/// "An" and the name (`start`: where the sentence starts in `text`).
/// `Some` with no ids when the sentence names the claim's party
/// (`party` answers for a placed word) anywhere; `None` when it opens
/// with no name. `grammar` tells a word of grammar, which a capitalised
/// word alone opening the sentence must not be to count as a name, and a
/// word of the language, which counts only right before the word.
fn opening_name(
    text: &[u8],
    start: usize,
    placed: &[Placed],
    p: usize,
    (name_at, party): (&dyn Fn(usize) -> bool, &dyn Fn(usize) -> bool),
    grammar: &mut dyn FnMut(&[u8]) -> (bool, bool),
    steps: &mut usize,
) -> Option<(NameIds, (u32, u32))> {
    let sentence = placed[p].sentence;
    let mut first = p;
    while first > 0 && placed[first - 1].sentence == sentence {
        first -= 1;
    }
    let mut last = p;
    while last + 1 < placed.len() && placed[last + 1].sentence == sentence {
        last += 1;
    }
    *steps += last - first + 1;
    if (first..=last).any(party) {
        return Some((SmallVec::new(), (0, 0)));
    }
    let before = text.get(start..placed[first].at as usize)?;
    let before = before.trim_ascii();
    if !(before.is_empty() || [&b"The"[..], b"A", b"An"].contains(&before)) {
        return None;
    }
    // A sentence that opens with a preposition ("Unlike HSBC, the lender
    // makes") does not open with its subject.
    let opening = &text[placed[first].at as usize..(placed[first].at + placed[first].len) as usize];
    if before.is_empty() && one_of(opening, &OPENING_PREPOSITIONS) {
        return None;
    }
    let mut ids = NameIds::new();
    let mut span: Option<(u32, u32)> = None;
    // A capitalised word alone opening the sentence, followed by a space
    // (not a label's colon or an opener's comma), is a name unless it is
    // a word of grammar or reads as a participle or an adverb ("Founded
    // in 1990 by", "Separately"): "Lloyds raised its rates".
    let lone = placed[first].case == Case::Opening && (first + 1 >= p || !name_at(first));
    let spaced = text.get((placed[first].at + placed[first].len) as usize) == Some(&b' ');
    let inflected = opening.len() > 4
        && [&b"ed"[..], b"ing", b"ly"]
            .iter()
            .any(|end| opening.ends_with(end));
    // A word of the language is the word's party only right before it
    // ("Profit rose 5%"): further on, it more likely opens a phrase
    // ("Critical thinking is used", "Somewhere along the way, the bank
    // varied").
    let next = || {
        first + 1 == p
            && text
                .get((placed[first].at + placed[first].len) as usize..placed[p].at as usize)
                .is_some_and(plain_gap)
    };
    if lone
        && first < p
        && spaced
        && !inflected
        && match grammar(opening) {
            (true, _) => false,
            (false, common) => !common || next(),
        }
    {
        ids.push(placed[first].id);
        span = Some((placed[first].at, placed[first].at + placed[first].len));
    }
    let mut q = first;
    while !lone
        && q < p
        && ids.len() < NAME_WORDS
        && (name_at(q) || (placed[q].number && span.is_some()))
    {
        let (a, b) = (placed[q].at, placed[q].at + placed[q].len);
        if let Some((_, end)) = span
            && !text.get(end as usize..a as usize).is_some_and(name_gap)
        {
            break;
        }
        ids.push(placed[q].id);
        span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        q += 1;
    }
    // An opening word cut from the name after it ("Based in The
    // Doughnut") is no name.
    if !lone && ids.len() == 1 && placed[first].case == Case::Opening {
        return None;
    }
    let span = span?;
    // A report opens a clause of its own ("The Justice Department said
    // the bank agreed to pay"): its party is not the name; nor is it where
    // a pronoun between them is a subject of its own ("HSBC is larger, but
    // it makes …", "Quarterly results showed it reported").
    let between = text.get(span.1 as usize..placed[p].at as usize)?;
    if between
        .split(|b| !b.is_ascii_alphabetic())
        .any(|w| one_of(w, &REPORTING) || one_of(w, &PRONOUNS))
    {
        return None;
    }
    Some((ids, span))
}

/// Whether `gap`, the text between a name and a word, holds a form of
/// "be": the word is then said of the name as done to it ("was founded")
/// or as what it is ("is located").
fn states_be(gap: &[u8]) -> bool {
    gap.split(|b| !b.is_ascii_alphabetic()).any(|w| {
        one_of(
            w,
            &[b"is", b"are", b"was", b"were", b"be", b"been", b"being"],
        )
    })
}

/// Whether `w` reads as a past participle: ending in "-ed" or "-en", or
/// one of the common irregular ones ("built", "sold", "held").
fn participle(w: &[u8]) -> bool {
    w.len() > 3 && (w.ends_with(b"ed") || w.ends_with(b"en")) || one_of(w, &IRREGULAR_PARTICIPLES)
}

/// Past participles of common verbs that end neither in "-ed" nor in
/// "-en".
const IRREGULAR_PARTICIPLES: [&[u8]; 24] = [
    b"born", b"bought", b"brought", b"built", b"caught", b"cut", b"done", b"found", b"held",
    b"hit", b"kept", b"known", b"led", b"left", b"lost", b"made", b"paid", b"put", b"run", b"sent",
    b"set", b"sold", b"told", b"won",
];

/// Whether `w` is one of the words of `list` (written in lower case), in
/// any case.
fn one_of(w: &[u8], list: &[&[u8]]) -> bool {
    list.iter().any(|l| w.eq_ignore_ascii_case(l))
}

/// Whether `w` is a word of grammar (a stop word, a filler, a negation or
/// a contraction: "He's", "Don't"), and whether it is a word of the
/// language (one with UK/US spellings, abbreviations or WordNet synonyms:
/// "Critical", "Somewhere", "Profit").
fn opening_word(w: &[u8], folder: &mut Folder) -> (bool, bool) {
    let info = folder.fold_packed(w, w.is_ascii());
    (
        w.contains(&b'\'') || info.function() || info.filler() || info.negation(),
        info.variants() != 0,
    )
}

/// Prepositions and conjunctions that are no stop words and may open a
/// sentence before a name that is not its subject.
const OPENING_PREPOSITIONS: [&[u8]; 17] = [
    b"according",
    b"like",
    b"unlike",
    b"despite",
    b"following",
    b"although",
    b"though",
    b"since",
    b"upon",
    b"amid",
    b"among",
    b"via",
    b"thanks",
    b"including",
    b"besides",
    b"beyond",
    b"except",
];

/// Personal pronouns: a subject of their own.
const PRONOUNS: [&[u8]; 6] = [b"it", b"he", b"she", b"they", b"we", b"i"];

/// Pronouns a word's object may be.
const OBJECTS: [&[u8]; 4] = [b"it", b"them", b"him", b"her"];

/// Words that open a clause of another party's between a sentence's
/// opening name and a word of the sentence.
const REPORTING: [&[u8]; 14] = [
    b"said",
    b"says",
    b"say",
    b"reported",
    b"reports",
    b"announced",
    b"told",
    b"that",
    b"according",
    b"stated",
    b"added",
    b"noted",
    b"believes",
    b"expects",
];

/// Whether the text between two words of a name keeps them one name:
/// spaces and the marks inside a name ("Jean-Luc", "J. R.", "O'Neil",
/// "AT&T"), or "of", "the", "de", "and" between them ("Bank of England",
/// "Mall del Norte"), and not "in", a comma or a bracket ("Based in The
/// Doughnut", "Boston College (BC)").
fn name_gap(gap: &[u8]) -> bool {
    gap.split(|&b| b == b' ').all(|w| {
        w.iter().all(|&b| matches!(b, b'-' | b'.' | b'\'' | b'&'))
            || [&b"of"[..], b"the", b"de", b"del", b"and"].contains(&w)
    })
}

/// The claim's relation words beside its names whose pair the sources
/// lack (`holds_pair` answers for a pair's key): each as (the word's
/// term, the name's run of `content` positions), at most four. A
/// relation word is a found content word, not capitalised and no
/// negation; a name is a run of found entities (and a capitalised first
/// word before one: "Neil Gaiman"), not a month or a day; the two stand
/// side by side with only spaces, quotes and stop words between, "and"
/// and "or" aside (a list joins, it does not relate).
fn relation_candidates(
    bytes: &[u8],
    terms: &[Term],
    content: &[u32],
    holds_pair: impl Fn(u64) -> bool,
) -> SmallVec<[(usize, (usize, usize)); 4]> {
    let term = |k: usize| &terms[(content[k] & !NAME) as usize];
    let is_name = |k: usize| content[k] & NAME != 0;
    let mut out = SmallVec::new();
    for k in 0..content.len() {
        let r = term(k);
        if r.class != TermClass::Word || r.negation || !r.found || bytes[r.at].is_ascii_uppercase()
        {
            continue;
        }
        let key = key_of(r.id);
        for after in [false, true] {
            let (mut lo, mut hi) = match after {
                false if k > 0 && is_name(k - 1) => (k - 1, k),
                true if k + 1 < content.len() && is_name(k + 1) => (k + 1, k + 2),
                _ => continue,
            };
            while !after && lo > 0 && is_name(lo - 1) {
                lo -= 1;
            }
            while after && hi < content.len() && is_name(hi) {
                hi += 1;
            }
            let name = &content[lo..hi];
            let edge =
                &terms[(if after { name[0] } else { name[name.len() - 1] } & !NAME) as usize];
            let gap = if after {
                bytes.get(r.at + r.len..edge.at)
            } else {
                bytes.get(edge.at + edge.len..r.at)
            };
            // A name's word that is also a word of the language is beside
            // the relation word only as the sources write it, with its
            // capital: "a research university located" does not write
            // "Stanford University located".
            let beside = name.iter().any(|&i| {
                let t = &terms[(i & !NAME) as usize];
                let common = t.class == TermClass::Entity && t.alternates != 0 && t.id == t.own;
                let n = key_of(t.id) ^ if common { CAPITAL } else { 0 };
                holds_pair(pair_hash(n, key)) || holds_pair(pair_hash(key, n))
            });
            if name.iter().all(|&i| terms[(i & !NAME) as usize].found)
                && gap.is_some_and(plain_gap)
                && !beside
                && out.len() < 4
            {
                out.push(((content[k] & !NAME) as usize, (lo, hi)));
            }
        }
    }
    out
}

/// Whether the text between two words holds only words, spaces, quotes
/// and hyphens, and neither "and" nor "or" nor a pronoun: no clause ends
/// between them, no list joins them, and no other party stands between
/// ("Together with Pierre she won", "Educate them to use").
fn plain_gap(gap: &[u8]) -> bool {
    gap.iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'\'' | b'"' | b'-') || b >= 0x80)
        && !gap.split(|&b| b == b' ').any(|w| {
            is_and(w)
                || w.eq_ignore_ascii_case(b"or")
                || one_of(w, &PRONOUNS)
                || one_of(w, &OBJECTS)
        })
}
