//! The source index of one record: which cited sources (and which of their
//! sentences) hold each term and each pair of consecutive content terms.
//! Built per record into memory kept per thread; a source text seen before
//! on the thread is replayed from the thread's [`SourceCache`].
//!
//! Only the terms the record's answer asks about are kept: the scorer
//! declares them ([`SourceIndex::want`]) before any source is read, and a
//! source word no claim can ask about costs one bit test after its memo
//! look-up. For every wanted term (and every pair of two wanted terms) the
//! index answers exactly as an index of every word would; it must not be
//! asked about a term it was not told to want.
//!
//! How a source's text is read into it, word by word and sentence by
//! sentence, is in [`reading`]; this module keeps what the index holds and
//! how it is asked.

mod reading;

use reading::QUALIFIED_WORD;
pub(super) use reading::{Case, Placed};

use super::cache::{SourceCache, Summary};
use super::claims::{first_end, sentence_end};
#[cfg(test)]
use super::memo::WordInfo;
use super::memo::{Folder, KEEP_SLOTS, MEMO_WORDS, key_of};
use super::{opposites, qualifiers};
use crate::core::terms::Table;

/// Which of a record's sources hold each key (term stem, number, or pair of
/// consecutive content terms): one lookup per key whatever the number of
/// sources a claim cites. Sources are bits of a mask, 64 per bank. Kept per
/// thread and emptied per record (the wanted terms' marks are a dense
/// array of the record's own, so what a record touches stays close).
///
/// Also which source sentences hold each content term (numbers, non-stop
/// words), as a short list per term: sentences are numbered across the
/// indexed sources. A term in more than [`POSTINGS`] sentences is common in
/// the record and counts as present in every sentence, so a claim's look-up
/// stays bounded per term: linear work.
pub(super) struct SourceIndex {
    /// By wanted term (its slot in `wanted`): which of the first 64 sources
    /// hold it and its sentence list.
    marks: Vec<Mark>,
    /// By bank: the pairs, and (past the first bank, whose terms are in
    /// `marks`) the terms, each with the mask of the bank's sources holding it.
    banks: Vec<Table<u64>>,
    /// Sources already indexed for this record.
    built: Vec<bool>,
    /// Sentences of each source (0 until indexed).
    sentence_count: Vec<u32>,
    /// The first sentence of each source (valid once indexed): a source's
    /// sentences are one run.
    sentence_first: Vec<u32>,
    /// Sentence lists, linked backwards: (sentence, previous entry + 1).
    postings: Vec<(u32, u32)>,
    /// By sentence: its source and how many negations it holds
    /// ([`NEGATIONS`]), with the [`QUALIFIES`] bit.
    sentences: Vec<(u32, u16)>,
    /// By sentence: a claim's running count of terms found there (zero
    /// between claims; `touched` lists the non-zero ones).
    counts: Vec<u32>,
    touched: Vec<u32>,
    /// A claim's terms' sentence lists, read once per cover.
    lists: Vec<u32>,
    ranges: Vec<Option<(u32, u32)>>,
    /// A claim's terms' sentences as bits, when it cites one source of at
    /// most 64 sentences, with how many there are ([`EVERYWHERE`]: a term
    /// too common to list).
    masks: Vec<(u64, u32)>,
    /// Summaries of source texts seen before (first bank only).
    cache: SourceCache,
    /// The summary of the source being indexed, filed in `cache` after.
    building: Summary,
    /// The terms this record's claims ask about, and their marks' slots.
    wanted: Wanted,
    /// Sources read again for what they negate in this record, and their
    /// content words: (sentence, word id, right after a negation), sorted.
    negations_read: Vec<bool>,
    negated: Vec<(u32, u32, bool)>,
    /// One sentence's content words as the qualifier rule reads them
    /// (see `SourceIndex::held_only_qualified`), and that sentence
    /// (`u32::MAX`: none yet this record).
    governed: Vec<(u32, u8)>,
    governed_of: u32,
    /// The classes of the opposites each sentence read for them writes
    /// (see [`SourceIndex::writes_class`]), and by sentence, 1 + where its
    /// classes are (0: not read this record).
    written: Vec<opposites::Places>,
    written_of: Vec<u32>,
    /// By sentence: where in its source its first word starts.
    sentence_at: Vec<u32>,
    /// A term's sentences, the content words of those sentences in order,
    /// and the term's places among them, as last asked (see
    /// [`SourceIndex::places_of`]).
    held: Vec<u32>,
    placed: Vec<Placed>,
    places: Vec<u32>,
    /// The sentences holding a name's words, for [`SourceIndex::near_any`].
    near: Vec<u32>,
    /// The record's cited claims ask no question: the yes/no questions of
    /// its sources are not read (see [`SourceIndex::leave_out_questions`]).
    statements_only: bool,
    /// A source's text with those questions blanked out.
    blanked: Vec<u8>,
}

/// The terms a record's claims ask about: a bit per word id (a quick no for
/// most source words) and, per wanted id a source holds, the slot of its
/// [`Mark`]. A mark is given when a source first holds the term, not when it
/// is declared: many declared alternates occur in no source, and declaring
/// a term stays one bit set, with no test and no list. A record's bits are
/// cleared all at once: a bit per word id, 8 KB for the most words the
/// memo holds, cheaper than a list of the hundreds of ids a record
/// declares.
#[derive(Default)]
struct Wanted {
    bits: Vec<u64>,
    /// By word id: its mark's slot + 1 (0: no mark in this record).
    slot: Vec<u32>,
    /// The ids given a mark in this record (cleared in
    /// `SourceIndex::start`).
    marked: Vec<u32>,
    /// Every term is wanted (an index of every word, for tests).
    all: bool,
    /// Every term is wanted in this record (cleared in `SourceIndex::start`).
    record_all: bool,
}

impl Wanted {
    /// Whether term `id` is wanted.
    #[inline(always)]
    fn wanted(&self, id: u32) -> bool {
        self.bits
            .get(id as usize / 64)
            .is_some_and(|b| b & (1u64 << (id % 64)) != 0)
    }

    /// The mark slot of term `id`, if wanted and held by a source read so
    /// far (a term is marked only when wanted: one look-up, not two).
    #[inline(always)]
    fn slot(&self, id: u32) -> Option<usize> {
        self.slot
            .get(id as usize)
            .and_then(|&s| (s as usize).checked_sub(1))
    }

    /// Wants term `id`.
    #[inline(always)]
    fn want(&mut self, id: u32) {
        let i = id as usize;
        if i >= self.slot.len() {
            self.grow(i);
        }
        self.bits[i / 64] |= 1u64 << (i % 64);
    }

    /// Room for word id `i` (and then some: ids grow one by one).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, i: usize) {
        let n = (i + 1).next_power_of_two().max(1024);
        self.slot.resize(n, 0);
        self.bits.resize(n.div_ceil(64), 0);
    }

    /// The mark slot of term `id`, which a source holds (a fresh mark in
    /// `marks` the first time), if wanted; every term met is wanted when
    /// all are.
    #[inline(always)]
    fn mark(&mut self, id: u32, marks: &mut Vec<Mark>) -> Option<usize> {
        if !self.wanted(id) {
            if !(self.all || self.record_all) {
                return None;
            }
            self.want(id);
        }
        let s = &mut self.slot[id as usize];
        if *s == 0 {
            marks.push(Mark::default());
            *s = marks.len() as u32;
            self.marked.push(id);
        }
        Some(*s as usize - 1)
    }

    fn clear(&mut self) {
        for &id in &self.marked {
            self.slot[id as usize] = 0;
        }
        self.marked.clear();
        // Ids past the memo's bound come only from a record of huge
        // sources: their room is given back, so the clearing stays small.
        if self.slot.len() > MEMO_WORDS {
            self.slot.truncate(MEMO_WORDS);
            self.slot.shrink_to_fit();
            self.bits.truncate(MEMO_WORDS / 64);
            self.bits.shrink_to_fit();
        }
        self.bits.fill(0);
    }
}

/// Cited sources (`(bank, mask)` pairs, by bank) as a look-up reads them:
/// the first bank's mask (0: none cited there), which marks answer, and
/// the other banks, whose tables do.
#[derive(Clone, Copy)]
pub(super) struct Cited<'a> {
    first: u64,
    rest: &'a [(usize, u64)],
}

impl<'a> Cited<'a> {
    #[inline(always)]
    pub(super) fn of(cited: &'a [(usize, u64)]) -> Cited<'a> {
        let (first, rest) = match cited.split_first() {
            Some((&(0, mask), rest)) => (mask, rest),
            _ => (0, cited),
        };
        Cited { first, rest }
    }
}

/// Where a term sits against a [`Cover`]: in its best sentence.
pub(super) const IN_BEST: u8 = 1;
/// In its best two sentences.
pub(super) const IN_BEST_TWO: u8 = 2;

/// Most sentences listed per term; past it a term is everywhere.
pub(super) const POSTINGS: u32 = 24;

/// The count of sentences of a term too common to list (see
/// `SourceIndex::masks`).
const EVERYWHERE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Mark {
    mask: u64,
    /// Last entry of the term's sentence list + 1 (0: none).
    head: u32,
    /// Sentences listed; past [`POSTINGS`] the list stops growing.
    listed: u32,
}

/// Where a claim's found content terms sit in its cited sources.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Cover {
    /// Terms found in the best sentence (common terms count everywhere).
    pub(super) one: u32,
    /// Terms found in the best two sentences (any two of the cited sources).
    pub(super) two: u32,
    /// The best sentence, and the second (`u32::MAX`: none).
    pub(super) first: u32,
    pub(super) second: u32,
}

impl Cover {
    /// The cover whose best sentence `first` holds `n1` of the listed
    /// terms and whose second `n2` of the rest, `everywhere` more terms
    /// being too common to list.
    fn of((n1, first): (u32, u32), (n2, second): (u32, u32), everywhere: u32) -> Cover {
        Cover {
            one: n1 + everywhere,
            two: n1 + n2 + everywhere,
            first,
            second,
        }
    }
}

/// A term's seat: in the best sentence (`one`), in the best two (`two`).
fn seat(one: bool, two: bool) -> u8 {
    (if one { IN_BEST } else { 0 }) | (if two { IN_BEST_TWO } else { 0 })
}

impl SourceIndex {
    pub(super) fn new() -> Self {
        SourceIndex {
            marks: Vec::new(),
            banks: Vec::new(),
            built: Vec::new(),
            sentence_count: Vec::new(),
            sentence_first: Vec::new(),
            postings: Vec::new(),
            sentences: Vec::new(),
            counts: Vec::new(),
            touched: Vec::new(),
            lists: Vec::new(),
            ranges: Vec::new(),
            masks: Vec::new(),
            cache: SourceCache::new(),
            building: Summary::default(),
            wanted: Wanted::default(),
            negations_read: Vec::new(),
            negated: Vec::new(),
            governed: Vec::new(),
            governed_of: u32::MAX,
            written: Vec::new(),
            written_of: Vec::new(),
            sentence_at: Vec::new(),
            held: Vec::new(),
            near: Vec::new(),
            placed: Vec::new(),
            places: Vec::new(),
            statements_only: false,
            blanked: Vec::new(),
        }
    }

    /// Term `id` may be asked about in this record: the sources index it.
    #[inline(always)]
    pub(super) fn want(&mut self, id: u32) {
        self.wanted.want(id);
    }

    /// Whether term `id` is wanted in this record.
    fn wants(&self, id: u32) -> bool {
        self.wants_every_term() || self.wanted.wanted(id)
    }

    /// Indexes every term of this record's sources: cheaper than declaring
    /// the terms when the sources are short next to the answer.
    pub(super) fn keep_every_term(&mut self) {
        self.wanted.record_all = true;
    }

    /// Whether every term is indexed, declared or not.
    pub(super) fn wants_every_term(&self) -> bool {
        self.wanted.all || self.wanted.record_all
    }

    /// Indexes every term from now on, wanted or not (tests compare a
    /// filtered index against this one).
    #[cfg(test)]
    pub(super) fn want_everything(&mut self) {
        self.wanted.all = true;
    }

    /// Whether the yes/no questions of the sources are left out: when the
    /// record's cited claims ask no question, such a question in a source
    /// ("Does the account pay interest monthly?") states nothing they could
    /// be supported by, and it is read as blank (see [`blank_questions`]).
    /// A cited question reads them, so a question copied from a source
    /// still finds itself. Set before the first source is added; `start`
    /// sets it back to false.
    pub(super) fn leave_out_questions(&mut self, yes: bool) {
        self.statements_only = yes;
    }

    /// Source `text` as this record reads it: its yes/no questions blanked
    /// into `blanked` when they are left out.
    fn as_read<'a>(&self, text: &'a str, blanked: &'a mut Vec<u8>) -> &'a str {
        if self.statements_only && has_question(text.as_bytes()) {
            blank_questions(text, blanked).unwrap_or(text)
        } else {
            text
        }
    }

    /// Empties the index for a record with `sources` sources; `ids_reset`:
    /// the folder's ids started over, so old marks mean nothing.
    #[inline]
    pub(super) fn start(&mut self, sources: usize, ids_reset: bool) {
        self.statements_only = false;
        self.marks.clear();
        self.wanted.clear();
        self.wanted.record_all = false;
        if ids_reset {
            self.cache.clear();
        }
        for bank in &mut self.banks {
            bank.clear(KEEP_SLOTS);
        }
        self.built.clear();
        self.built.resize(sources, false);
        self.sentence_count.clear();
        self.sentence_count.resize(sources, 0);
        self.sentence_first.clear();
        self.sentence_first.resize(sources, 0);
        self.postings.clear();
        self.sentences.clear();
        self.counts.clear();
        self.touched.clear();
        self.negations_read.clear();
        self.negations_read.resize(sources, false);
        self.negated.clear();
        self.governed_of = u32::MAX;
        self.written.clear();
        self.written_of.clear();
        self.sentence_at.clear();
    }

    /// Adds source `idx` (once): every term by stem (numbers as written), and
    /// every pair of consecutive content terms (stop words skipped) by stem.
    /// A word of letters joined by `.` is also indexed part by part.
    #[inline]
    pub(super) fn add(&mut self, idx: usize, text: &str, folder: &mut Folder, steps: &mut usize) {
        if self.built[idx] {
            return;
        }
        self.built[idx] = true;
        let bank = idx / 64;
        while self.banks.len() <= bank {
            self.banks.push(Table::with_capacity(256));
        }
        if self.statements_only && has_question(text.as_bytes()) {
            // Another text than the source's: read, never summarised nor
            // replayed.
            let mut blanked = std::mem::take(&mut self.blanked);
            let read = self.as_read(text, &mut blanked);
            self.read::<false>(idx, read, folder, steps);
            self.blanked = blanked;
            return;
        }
        let key = if bank == 0 {
            SourceCache::key(text)
        } else {
            None
        };
        let Some(key) = key else {
            return self.read::<false>(idx, text, folder, steps);
        };
        if self.replay(idx, key, text, steps) {
            return;
        }
        if self.cache.seen_before(key) {
            self.read::<true>(idx, text, folder, steps);
            self.cache.put(key, text, &mut self.building);
        } else {
            self.read::<false>(idx, text, folder, steps);
        }
    }

    /// Indexes source `idx` from the cached summary of `text`; whether
    /// there was one.
    fn replay(&mut self, idx: usize, key: u64, text: &str, steps: &mut usize) -> bool {
        let Some(summary) = self.cache.get(key, text) else {
            return false;
        };
        let (marks, wanted, table) = (&mut self.marks, &mut self.wanted, &mut self.banks[0]);
        let (postings, sentences) = (&mut self.postings, &mut self.sentences);
        let bit = 1u64 << idx;
        let first = sentences.len() as u32;
        sentences.extend(summary.negations.iter().map(|&n| (idx as u32, n)));
        self.sentence_at.extend_from_slice(&summary.starts);
        self.sentence_count[idx] = summary.negations.len() as u32;
        self.sentence_first[idx] = first;
        for &id in &summary.terms {
            if let Some(s) = wanted.mark(id, marks) {
                marks[s].mask |= bit;
            }
        }
        // Each term's sentences in order, as reading lists them (the lists
        // are per term, so the order across terms does not matter).
        for &(id, local) in &summary.postings {
            if let Some(s) = wanted.slot(id) {
                list(&mut marks[s], postings, first + local);
            }
        }
        for &p in &summary.pairs {
            *table.entry(p) |= bit;
        }
        *steps += summary.terms.len() + summary.postings.len() + summary.pairs.len();
        true
    }

    /// Sources indexed from the cache on this thread so far.
    #[cfg(test)]
    pub(super) fn cache_hits(&self) -> u64 {
        self.cache.hits
    }

    /// [`SourceIndex::holds_id`] of `term`.
    #[cfg(test)]
    pub(super) fn holds(&self, term: &WordInfo, cited: &[(usize, u64)]) -> bool {
        self.holds_id(term.id, cited)
    }

    /// Whether any of the cited sources (`(bank, mask)` pairs, by bank)
    /// holds the term whose word id is `id`.
    #[inline(always)]
    pub(super) fn holds_id(&self, id: u32, cited: &[(usize, u64)]) -> bool {
        self.holds_in(id, Cited::of(cited))
    }

    /// [`SourceIndex::holds_id`] of a term that may not be wanted (and then
    /// is held by none).
    pub(super) fn holds_if_wanted(&self, id: u32, cited: &[(usize, u64)]) -> bool {
        self.wants(id) && self.holds_id(id, cited)
    }

    /// [`SourceIndex::holds_id`] with the cited sources split once (a
    /// claim looks up many terms in the same sources).
    #[inline(always)]
    pub(super) fn holds_in(&self, id: u32, cited: Cited<'_>) -> bool {
        debug_assert!(self.wants(id), "asked about a term not wanted");
        let Cited { first, rest } = cited;
        let marked = first != 0
            && self
                .wanted
                .slot(id)
                .is_some_and(|s| self.marks[s].mask & first != 0);
        marked
            || rest.iter().any(|&(bank, mask)| {
                self.banks[bank]
                    .get(key_of(id))
                    .is_some_and(|m| m & mask != 0)
            })
    }

    /// Whether any of the cited sources holds the pair `key`.
    pub(super) fn holds_pair(&self, key: u64, cited: &[(usize, u64)]) -> bool {
        cited
            .iter()
            .any(|&(bank, mask)| self.banks[bank].get(key).is_some_and(|m| m & mask != 0))
    }

    /// Sentences of source `idx` (0 until indexed).
    #[cfg(test)]
    pub(super) fn sentences_of(&self, idx: usize) -> usize {
        self.sentence_count.get(idx).map_or(0, |&n| n as usize)
    }

    /// Whether sentence `s` holds a negation.
    pub(super) fn negates(&self, s: u32) -> bool {
        self.sentences
            .get(s as usize)
            .is_some_and(|x| x.1 & NEGATIONS != 0)
    }

    /// How sentence `s` holds content term `id`: plainly (not right after
    /// a negation), and right after a negation ("did not *win*"). The pairs
    /// say only that a source negates a term somewhere, and hold only the
    /// terms the claims asked for; where, and any word, takes reading the
    /// source (`texts`, by index) again, at most once a record, so this
    /// stays linear.
    #[cold]
    #[inline(never)]
    pub(super) fn held_in(
        &mut self,
        s: u32,
        id: u32,
        texts: &[&str],
        folder: &mut Folder,
        steps: &mut usize,
    ) -> (bool, bool) {
        if !self.read_words_of(s, texts, folder, steps) {
            return (false, false);
        }
        let has = |negated| self.negated.binary_search(&(s, id, negated)).is_ok();
        (has(false), has(true))
    }

    /// The first half of [`SourceIndex::held_in`]: whether sentence `s`
    /// holds content term `id` plainly (one look-up, not two).
    #[cold]
    #[inline(never)]
    pub(super) fn held_plainly_in(
        &mut self,
        (s, id): (u32, u32),
        (texts, folder, steps): (&[&str], &mut Folder, &mut usize),
    ) -> bool {
        self.read_words_of(s, texts, folder, steps)
            && self.negated.binary_search(&(s, id, false)).is_ok()
    }

    /// The number of the qualifier that governs content term `id` in
    /// sentence `s` ("may *cut*", "expected to *approve*"; see
    /// `qualifiers`) when the sentence holds it only so: never plainly,
    /// nor negated. Reads the sentence again (its bytes counted in
    /// `steps`), once for all the terms a claim asks about: the rule asks
    /// only for a claim that drops a qualifier of its best sentence,
    /// rarely, so no other reading pays for it.
    #[cold]
    #[inline(never)]
    pub(super) fn held_only_qualified(
        &mut self,
        (s, id): (u32, u32),
        (texts, folder, steps): (&[&str], &mut Folder, &mut usize),
    ) -> Option<u8> {
        let idx = self.sentences.get(s as usize)?.0 as usize;
        if self.governed_of != s {
            let mut blanked = std::mem::take(&mut self.blanked);
            let read = self.as_read(texts[idx], &mut blanked);
            let (from, to) = self.sentence_span(idx, s, read.len());
            self.governed.clear();
            SourceIndex::read_governed((s, from, to), read, &mut self.governed, (folder, steps));
            // By id, each id's ways in sentence order (a stable sort): a
            // claim asks for each of its terms, so each asks for its run.
            self.governed.sort_by_key(|h| h.0);
            self.blanked = blanked;
            self.governed_of = s;
        }
        let from = self.governed.partition_point(|h| h.0 < id);
        let run = self.governed[from..]
            .iter()
            .take_while(|h| h.0 == id)
            .count();
        *steps += run + 1;
        let mut ways = self.governed[from..from + run].iter().map(|h| h.1);
        let first = ways.next()?;
        let only = first >= QUALIFIED_WORD && ways.all(|h| h >= QUALIFIED_WORD);
        only.then(|| first - QUALIFIED_WORD)
    }

    /// Whether sentence `s` writes a word of class `class` of the
    /// opposites (letters, in any case) as a word of its own. The index
    /// holds a sentence's words by stem, and a stem may be another word's:
    /// "employs" holds the stem of "employer", "important" that of
    /// "import". Reads the sentence again once a record (its bytes counted
    /// in `steps`), for every class it writes: asked only once a claim's
    /// opposite is held by stem, rarely.
    #[cold]
    #[inline(never)]
    pub(super) fn writes_class(
        &mut self,
        s: u32,
        class: opposites::Place,
        texts: &[&str],
        steps: &mut usize,
    ) -> bool {
        let Some(&(idx, _)) = self.sentences.get(s as usize) else {
            return false;
        };
        if self.written_of.len() < self.sentences.len() {
            self.written_of.resize(self.sentences.len(), 0);
        }
        let mut at = self.written_of[s as usize];
        if at == 0 {
            let idx = idx as usize;
            let mut blanked = std::mem::take(&mut self.blanked);
            let read = self.as_read(texts[idx], &mut blanked);
            let (from, to) = self.sentence_span(idx, s, read.len());
            let part = read.get(from..to).unwrap_or("");
            *steps += part.len();
            let mut places = opposites::Places::new();
            // Words of ASCII letters; a word after "non" ("non-regulated")
            // writes its opposite.
            let b = part.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if !b[i].is_ascii_alphabetic() {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                if !opposites::after_non(b, start)
                    && let Some(p) = opposites::place_of(&b[start..i])
                {
                    places.add(p);
                }
            }
            self.blanked = blanked;
            self.written.push(places);
            at = self.written.len() as u32;
            self.written_of[s as usize] = at;
        }
        self.written[at as usize - 1].holds(class)
    }

    /// Whether sentence `a` or `b` of the sources `cited` holds term `id`;
    /// `None` when it is in too many sentences to list.
    pub(super) fn held_in_either(
        &mut self,
        id: u32,
        cited: &[(usize, u64)],
        (a, b): (u32, u32),
    ) -> Option<bool> {
        let mut held = std::mem::take(&mut self.held);
        held.clear();
        let listed = self.list_into(id, cited, self.cited_run(cited), &mut held);
        let either = listed.then(|| held.iter().any(|&s| s == a || s == b));
        self.held = held;
        either
    }

    /// Whether a sentence of the sources `cited` that holds term `id`
    /// holds one of the terms `names` too, or comes right after one that
    /// does in the same source (which may name it by a pronoun: "Your Pie
    /// is a pizza chain. It was founded in Georgia."); `None` when a term
    /// is in too many sentences to list.
    pub(super) fn near_any(
        &mut self,
        id: u32,
        names: &[u32],
        cited: &[(usize, u64)],
    ) -> Option<bool> {
        let run = self.cited_run(cited);
        let mut held = std::mem::take(&mut self.held);
        let mut near = std::mem::take(&mut self.near);
        held.clear();
        near.clear();
        let mut listed = self.list_into(id, cited, run, &mut held);
        for &name in names {
            listed = listed && self.list_into(name, cited, run, &mut near);
        }
        let source = |s: u32| self.sentences[s as usize].0;
        let found = listed.then(|| {
            held.iter().any(|&s| {
                near.iter()
                    .any(|&m| s == m || (s == m + 1 && source(s) == source(m)))
            })
        });
        self.held = held;
        self.near = near;
        found
    }

    /// The content words of the sentences of cited source `idx` that hold
    /// term `id`, in order (see [`Placed`]), and the term's places among
    /// them, with where each sentence starts in its source (by sentence
    /// number): each sentence read again, its bytes costing as much of
    /// `budget` (and a source whose questions are left out costing its
    /// whole text). `None` when the term is in too many sentences to list,
    /// or past the budget.
    #[cold]
    #[inline(never)]
    pub(super) fn places_of(
        &mut self,
        idx: usize,
        id: u32,
        (texts, folder, steps): (&[&str], &mut Folder, &mut usize),
        budget: &mut usize,
    ) -> Option<(&[Placed], &[u32], &[u32])> {
        let source = [(idx / 64, 1u64 << (idx % 64))];
        let mut held = std::mem::take(&mut self.held);
        held.clear();
        let listed = self.list_into(id, &source, self.cited_run(&source), &mut held);
        held.sort_unstable();
        self.placed.clear();
        self.places.clear();
        let mut blanked = std::mem::take(&mut self.blanked);
        let text = texts[idx];
        let mut within = listed;
        if within && self.statements_only && has_question(text.as_bytes()) {
            within = spend(budget, text.len());
        }
        let read = if within {
            self.as_read(text, &mut blanked)
        } else {
            ""
        };
        for &s in &held {
            if !within {
                break;
            }
            let (start, end) = self.sentence_span(idx, s, read.len());
            within = spend(budget, end.saturating_sub(start));
            if within {
                let from = self.placed.len();
                self.read_sentence((s, start, end), read, folder, steps);
                for q in from..self.placed.len() {
                    if self.placed[q].id == id {
                        self.places.push(q as u32);
                    }
                }
            }
        }
        self.blanked = blanked;
        self.held = held;
        within.then_some((&self.placed[..], &self.places[..], &self.sentence_at[..]))
    }

    /// The bytes of sentence `s` in source `idx` (`len` bytes long): from
    /// its first word to the next sentence's.
    fn sentence_span(&self, idx: usize, s: u32, len: usize) -> (usize, usize) {
        let next = s as usize + 1;
        let end = match self.sentences.get(next) {
            Some(&(i, _)) if i as usize == idx => self.sentence_at[next] as usize,
            _ => len,
        };
        (self.sentence_at[s as usize] as usize, end)
    }

    /// How many negations ("not", "n't", "never", "without", …) sentence
    /// `s` holds.
    pub(super) fn negations_in(&self, s: u32) -> u32 {
        self.sentences
            .get(s as usize)
            .map_or(0, |x| u32::from(x.1 & NEGATIONS))
    }

    /// Whether sentence `s` holds a qualifier ("may", "expected", "one";
    /// see `qualifiers`): the qualifier rule's quick test, before reading
    /// the sentence again for what it governs. `ranks`: a rank counts.
    pub(super) fn qualifies(&self, s: u32, ranks: bool) -> bool {
        let bits = if ranks { QUALIFIES | RANKS } else { QUALIFIES };
        self.qualifier_bits(s) & bits != 0
    }

    /// The sentences of the cited sources holding term `id`, newest first,
    /// appended to `out`; false (nothing appended) when it is in too many
    /// to list.
    /// `run`: the cited sources' sentences when they are one run (see
    /// [`SourceIndex::cited_run`]), which spares a look-up per sentence.
    fn list_into(
        &self,
        id: u32,
        cited: &[(usize, u64)],
        run: Option<(u32, u32)>,
        out: &mut Vec<u32>,
    ) -> bool {
        let Some(slot) = self.wanted.slot(id) else {
            // Wanted, and in no source read: no sentence holds it.
            return self.wanted.wanted(id);
        };
        let m = &self.marks[slot];
        if m.listed > POSTINGS {
            return false;
        }
        let mut at = m.head;
        while at != 0 {
            let (s, next) = self.postings[at as usize - 1];
            at = next;
            let held = match run {
                Some((from, to)) => from <= s && s < to,
                None => {
                    let src = self.sentences[s as usize].0 as usize;
                    cited
                        .iter()
                        .any(|&(bank, mask)| bank == src / 64 && mask & (1 << (src % 64)) != 0)
                }
            };
            if held {
                out.push(s);
            }
        }
        true
    }

    /// The best one and two sentences for the found content terms `ids`
    /// (word ids): a greedy cover, first the sentence holding most of them,
    /// then the one holding most of the rest. Ties go to a sentence that
    /// says it as the claim does (`like`: as many negations, then a
    /// qualifier or none, then a rank or none), then to the earlier one:
    /// "The bank expanded" is best held by "The bank expanded", not by an
    /// earlier "The bank did not expand" or "The bank is expected to
    /// expand". Work bounded by [`POSTINGS`] per term. `seats` gets, per
    /// id, where it sits: [`IN_BEST`] (in the best sentence) and
    /// [`IN_BEST_TWO`] (in the best two), both for a term too common to list.
    #[inline]
    pub(super) fn cover(
        &mut self,
        ids: &[u32],
        cited: &[(usize, u64)],
        steps: &mut usize,
        seats: &mut Vec<u8>,
        like: Like,
    ) -> Cover {
        let run = self.cited_run(cited);
        match run {
            Some((from, to)) if to - from <= 64 => {
                self.cover_by_bits(ids, (from, to), steps, seats, like)
            }
            _ => self.cover_by_lists(ids, cited, run, steps, seats, like),
        }
    }

    /// Of the sentences `from + k` for each bit `k` of `tied`, the most
    /// [`SourceIndex::alike`] to the claim, the earliest of those.
    #[inline(never)]
    fn most_alike(&self, tied: u64, from: u32, like: Like) -> u32 {
        // The claim is read for its qualifiers only when they may decide.
        let (mut some, mut all) = (0, QUALIFIES | RANKS);
        let mut rest = tied;
        while rest != 0 {
            let bits = self.qualifier_bits(from + rest.trailing_zeros());
            (some, all) = (some | bits, all & bits);
            rest &= rest - 1;
        }
        let holds = if some != all {
            qualifiers::claim_holds(like.claim)
        } else {
            (false, false)
        };
        let mut rest = tied;
        let mut pick = (0, from + tied.trailing_zeros());
        while rest != 0 {
            let s = from + rest.trailing_zeros();
            let alike = self.alike(s, like.negations, holds) + 1;
            if alike > pick.0 {
                pick = (alike, s);
                if alike > ALIKE {
                    break;
                }
            }
            rest &= rest - 1;
        }
        pick.1
    }

    /// How alike sentence `s` says what a claim with `negations` that
    /// `holds` a qualifier other than a rank and a rank (see
    /// `qualifiers::claim_holds`) says: 4 for as many negations, plus 2
    /// for a qualifier where the claim has one (none where it has none),
    /// plus 1 for a rank likewise. Of sentences that hold as many of its
    /// terms, the most alike is its best.
    #[inline(always)]
    fn alike(&self, s: u32, negations: u32, (qualifier, rank): (bool, bool)) -> u8 {
        let bits = self.qualifier_bits(s);
        let alike_negations = u8::from(self.negations_in(s) == negations);
        let alike_qualifier = u8::from((bits & QUALIFIES != 0) == qualifier);
        let alike_rank = u8::from((bits & RANKS != 0) == rank);
        4 * alike_negations + 2 * alike_qualifier + alike_rank
    }

    /// Sentence `s`'s [`QUALIFIES`] and [`RANKS`] bits.
    #[inline(always)]
    fn qualifier_bits(&self, s: u32) -> u16 {
        self.sentences
            .get(s as usize)
            .map_or(0, |x| x.1 & (QUALIFIES | RANKS))
    }

    /// [`SourceIndex::cover`] within the one run of sentences `from..to`
    /// (at most 64: one cited source), each term's sentences the bits of one
    /// word. The sentences' counts are bit-sliced (bit `k` of every count in
    /// plane `k`), so adding a term is a few word operations, and the
    /// sentences of the highest count are found plane by plane from the top.
    fn cover_by_bits(
        &mut self,
        ids: &[u32],
        (from, to): (u32, u32),
        steps: &mut usize,
        seats: &mut Vec<u8>,
        like: Like,
    ) -> Cover {
        let mut masks = std::mem::take(&mut self.masks);
        masks.clear();
        masks.extend(ids.iter().map(|&id| self.sentences_in(id, (from, to))));
        let everywhere = masks.iter().filter(|m| m.1 == EVERYWHERE).count() as u32;
        // A count is at most the number of terms: planes enough for it.
        let planes = (u32::BITS - (ids.len() as u32).leading_zeros()) as usize;
        // The most held sentences of the terms not in sentence `skip` (a
        // bit): their count, and their bits (0: none).
        let mut best = |skip: u64| -> (u32, u64) {
            let mut count = [0u64; u32::BITS as usize];
            let count = &mut count[..planes];
            let mut held = 0;
            for &(m, n) in masks.iter() {
                if n == EVERYWHERE || m & skip != 0 {
                    continue;
                }
                *steps += n as usize;
                held |= m;
                let mut carry = m;
                for plane in count.iter_mut() {
                    let next = *plane & carry;
                    *plane ^= carry;
                    carry = next;
                    if carry == 0 {
                        break;
                    }
                }
            }
            let (mut top, mut n) = (held, 0u32);
            for (k, plane) in count.iter().enumerate().rev() {
                if top & plane != 0 {
                    top &= plane;
                    n |= 1 << k;
                }
            }
            (n, top)
        };
        // The earliest of the sentences most held, or of those the most
        // alike among them (most claims' best sentence has no tie).
        let pick = |index: &SourceIndex, (n, top): (u32, u64)| match top {
            0 => (0, u32::MAX),
            _ if top & (top - 1) == 0 => (n, from + top.trailing_zeros()),
            _ => (n, index.most_alike(top, from, like)),
        };
        let bit = |s: u32| if s == u32::MAX { 0 } else { 1u64 << (s - from) };
        let (n1, first) = pick(self, best(0));
        let (n2, second) = if first == u32::MAX {
            (0, u32::MAX)
        } else {
            pick(self, best(bit(first)))
        };
        let (one, two) = (bit(first), bit(first) | bit(second));
        seats.clear();
        seats.extend(masks.iter().map(|&(m, n)| {
            if n == EVERYWHERE {
                IN_BEST | IN_BEST_TWO
            } else {
                seat(m & one != 0, m & two != 0)
            }
        }));
        self.masks = masks;
        Cover::of((n1, first), (n2, second), everywhere)
    }

    /// The sentences `from..to` (at most 64) holding term `id`, as bits
    /// from `from`, and how many; [`EVERYWHERE`] when it is in too many to
    /// list (see [`SourceIndex::list_into`]).
    #[inline(always)]
    fn sentences_in(&self, id: u32, (from, to): (u32, u32)) -> (u64, u32) {
        let Some(slot) = self.wanted.slot(id) else {
            // Wanted, and in no source read: in no sentence.
            let n = if self.wanted.wanted(id) {
                0
            } else {
                EVERYWHERE
            };
            return (0, n);
        };
        let m = &self.marks[slot];
        if m.listed > POSTINGS {
            return (0, EVERYWHERE);
        }
        let (mut bits, mut n) = (0, 0);
        let mut at = m.head;
        while at != 0 {
            let (s, next) = self.postings[at as usize - 1];
            at = next;
            if from <= s && s < to {
                bits |= 1u64 << (s - from);
                n += 1;
            }
        }
        (bits, n)
    }

    /// [`SourceIndex::cover`] from each term's list of sentences (tests
    /// compare the cover by bits with it).
    pub(super) fn cover_by_lists(
        &mut self,
        ids: &[u32],
        cited: &[(usize, u64)],
        run: Option<(u32, u32)>,
        steps: &mut usize,
        seats: &mut Vec<u8>,
        like: Like,
    ) -> Cover {
        // Each term's sentences, read once: `lists[ranges[k]]`, or `None`
        // for a term too common to list.
        let mut lists = std::mem::take(&mut self.lists);
        let mut ranges = std::mem::take(&mut self.ranges);
        lists.clear();
        ranges.clear();
        let mut everywhere = 0;
        lists.reserve(ids.len() * POSTINGS as usize);
        for &id in ids {
            let from = lists.len() as u32;
            if self.list_into(id, cited, run, &mut lists) {
                ranges.push(Some((from, lists.len() as u32)));
            } else {
                everywhere += 1;
                ranges.push(None);
            }
        }
        let mut counts = std::mem::take(&mut self.counts);
        let mut touched = std::mem::take(&mut self.touched);
        // Listed sentences are the record's: one resize up front.
        if counts.len() < self.sentences.len() {
            counts.resize(self.sentences.len(), 0);
        }
        let mut holds = None;
        let mut best = |skip: u32| -> (u32, u32) {
            for r in ranges.iter().flatten() {
                let list = &lists[r.0 as usize..r.1 as usize];
                if skip != u32::MAX && list.contains(&skip) {
                    continue;
                }
                *steps += list.len();
                for &s in list {
                    let s = s as usize;
                    if s >= counts.len() {
                        counts.resize(s + 1, 0);
                    }
                    let c = &mut counts[s];
                    if *c == 0 {
                        touched.push(s as u32);
                    }
                    *c += 1;
                }
            }
            // The most held, then the most alike (read only for a tie),
            // then the earliest.
            let mut top = (0u32, u32::MAX);
            for &s in &touched {
                let c = &mut counts[s as usize];
                if *c > top.0 {
                    top = (*c, s);
                } else if *c == top.0 {
                    // The claim is read for its qualifiers only when they may decide.
                    let q = if self.qualifier_bits(s) == self.qualifier_bits(top.1) {
                        (false, false)
                    } else {
                        *holds.get_or_insert_with(|| qualifiers::claim_holds(like.claim))
                    };
                    let alike = self.alike(s, like.negations, q);
                    let held = self.alike(top.1, like.negations, q);
                    if (alike, std::cmp::Reverse(s)) > (held, std::cmp::Reverse(top.1)) {
                        top = (*c, s);
                    }
                }
                *c = 0;
            }
            touched.clear();
            top
        };
        let (n1, first) = best(u32::MAX);
        let (n2, second) = if first == u32::MAX {
            (0, u32::MAX)
        } else {
            best(first)
        };
        self.counts = counts;
        self.touched = touched;
        seats.clear();
        seats.extend(ranges.iter().map(|r| match r {
            None => IN_BEST | IN_BEST_TWO,
            Some((a, b)) => {
                let list = &lists[*a as usize..*b as usize];
                let one = list.contains(&first);
                seat(one, one || list.contains(&second))
            }
        }));
        self.lists = lists;
        self.ranges = ranges;
        Cover::of((n1, first), (n2, second), everywhere)
    }

    /// The sentences of the cited sources as `from..to`, when one source is
    /// cited (most claims cite one).
    pub(super) fn cited_run(&self, cited: &[(usize, u64)]) -> Option<(u32, u32)> {
        let &[(bank, mask)] = cited else {
            return None;
        };
        if mask.count_ones() != 1 {
            return None;
        }
        let idx = bank * 64 + mask.trailing_zeros() as usize;
        let from = *self.sentence_first.get(idx)?;
        Some((from, from + self.sentence_count[idx]))
    }

    /// Whether term `id` is in sentence `a` or `b` of the cited sources, or
    /// too common to list (everywhere).
    #[cfg(test)]
    pub(super) fn sits(&self, id: u32, cited: &[(usize, u64)], a: u32, b: u32) -> bool {
        let mut list = Vec::new();
        !self.list_into(id, cited, self.cited_run(cited), &mut list)
            || list.iter().any(|&s| s == a || s == b)
    }
}

/// `text` with its yes/no questions blanked out (see [`opens_question`]):
/// each byte of such a sentence, from its first word to its question
/// mark, a space (newlines kept), so the words around it and the
/// sentences before and after it read as they do in `text`. Written into
/// `out`; `None` if it is not text (it always is: whole characters are
/// blanked). Linear: each sentence is scanned once.
fn blank_questions<'a>(text: &str, out: &'a mut Vec<u8>) -> Option<&'a str> {
    let b = text.as_bytes();
    out.clear();
    out.extend_from_slice(b);
    let mut at = 0;
    while at < b.len() {
        let (end, question) = sentence_close(b, at);
        if question {
            let first = (at..end)
                .find(|&i| b[i].is_ascii_alphanumeric() || b[i] >= 0x80)
                .unwrap_or(end);
            if opens_question(b, first) {
                for c in &mut out[first..end] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
            }
        }
        at = if b.get(end) == Some(&b'\n') {
            end + 1
        } else {
            end.max(at + 1)
        };
    }
    std::str::from_utf8(out).ok()
}

/// Whether `b` holds a question: a `?` (or `？`) that ends a sentence.
pub(super) fn has_question(b: &[u8]) -> bool {
    question_end(b, false)
}

/// Whether a claim asks a question of its own: a question mark that ends
/// one of its sentences with no closing quote or bracket after it ("Do you
/// like Brady?"; not the title in `sings "What's That Sound?"`, which the
/// claim states).
pub(super) fn asks_question(b: &[u8]) -> bool {
    question_end(b, true)
}

fn question_end(b: &[u8], own: bool) -> bool {
    let mut i = 0;
    while let Some(p) = memchr::memchr2(b'?', 0xEF, &b[i..]) {
        i += p;
        if is_question_mark(b, i) {
            // The end's length counts the closing quotes and brackets
            // after the mark.
            let (end, ends) = sentence_end(b, i, b.len());
            let mark = if b[i] == b'?' { 1 } else { 3 };
            if ends && (!own || end == mark) {
                return true;
            }
        }
        i += 1;
    }
    false
}

fn is_question_mark(b: &[u8], i: usize) -> bool {
    b[i] == b'?' || b[i..].starts_with("？".as_bytes())
}

/// Words that open a yes/no question ("Does the account pay interest
/// monthly?"): such a question states nothing, and the answer after it
/// says whether it holds. A question that opens with "what", "which",
/// "when" … is read: its words name what the answer after it is about
/// ("What is the minimum balance? $500.").
const ASKING: &[&[u8]] = &[
    b"am", b"are", b"aren", b"can", b"could", b"couldn", b"did", b"didn", b"do", b"does", b"doesn",
    b"don", b"had", b"hadn", b"has", b"hasn", b"have", b"haven", b"is", b"isn", b"may", b"might",
    b"must", b"shall", b"should", b"shouldn", b"was", b"wasn", b"were", b"weren", b"will", b"won",
    b"would", b"wouldn",
];

/// Whether the sentence whose first word is at `off` opens as a yes/no
/// question does: with a word of [`ASKING`], after a "Q:" or "Question:"
/// label if any.
/// A sentence that opens as a statement and ends in `?` ("153 minutes of
/// …, has the definition changed?", "He asked: what now?") still states
/// what comes before its question.
fn opens_question(b: &[u8], off: usize) -> bool {
    let word = |at: usize| {
        let n = b[at..]
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        &b[at..at + n]
    };
    let mut w = word(off);
    if w.eq_ignore_ascii_case(b"q") || w.eq_ignore_ascii_case(b"question") {
        let mut at = off + w.len();
        if !matches!(b.get(at), Some(b':' | b'.')) {
            return false;
        }
        at += 1;
        while b.get(at) == Some(&b' ') {
            at += 1;
        }
        w = word(at);
    }
    ASKING.iter().any(|a| a.eq_ignore_ascii_case(w))
}

/// Where the sentence at `from` ends (past its end mark; at a newline or
/// the text's end if it has none), and whether it ends in a question mark.
fn sentence_close(b: &[u8], from: usize) -> (usize, bool) {
    match first_end(b, from, b.len()) {
        Some((i, 0)) => (i, false),
        Some((i, len)) => (i + len, is_question_mark(b, i)),
        None => (b.len(), false),
    }
}

/// The key paired with a content word right after a negation ("did not
/// *declare*"): whether a source negates that word.
pub(super) const NEGATED: u64 = 0x6e65_6761_7465_6421;

/// [`SourceIndex::alike`] of a sentence that says a claim's terms as it does.
const ALIKE: u8 = 7;

/// What a claim says beside its terms, for choosing among sentences that
/// hold as many of them (see [`SourceIndex::cover`]).
#[derive(Clone, Copy, Default)]
pub(super) struct Like<'a> {
    /// Its negations.
    pub(super) negations: u32,
    /// Its text, read for a qualifier only when sentences tie.
    pub(super) claim: &'a [u8],
}

/// A sentence's count of negations, in its entry's number, and the bits
/// beside it that say the sentence holds a qualifier other than a rank
/// ("may", "expected"; in any case, so "May" the month too: the rule reads
/// the sentence again to see what it governs), or a rank ("one",
/// "second").
pub(super) const NEGATIONS: u16 = 0x3fff;
pub(super) const RANKS: u16 = 0x4000;
pub(super) const QUALIFIES: u16 = 0x8000;

/// Marks the key of a term written with a capital in a pair (see
/// `pairs` of the source reader): the other term of such a pair is not.
pub(super) const CAPITAL: u64 = 0x6a09_e667_f3bc_c908;

/// Key of an ordered pair of terms, distinct from any single term's key.
pub(super) fn pair_hash(a: u64, b: u64) -> u64 {
    (a.rotate_left(23) ^ b ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// Takes `cost` from `budget`; whether there was that much left.
fn spend(budget: &mut usize, cost: usize) -> bool {
    match budget.checked_sub(cost) {
        Some(left) => {
            *budget = left;
            true
        }
        None => false,
    }
}

/// Lists `sentence` among the sentences of the term marked `m` (sentences
/// only grow: the list's last entry is the newest).
#[inline(always)]
fn list(m: &mut Mark, postings: &mut Vec<(u32, u32)>, sentence: u32) {
    let last = m.head.checked_sub(1).map(|h| postings[h as usize].0);
    if last != Some(sentence) && m.listed <= POSTINGS {
        m.listed += 1;
        if m.listed <= POSTINGS {
            postings.push((sentence, m.head));
            m.head = postings.len() as u32;
        }
    }
}
