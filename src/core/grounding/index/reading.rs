//! How a source text is read into the [`SourceIndex`]: each word folded
//! through the word memo and marked when a claim wants it, each pair of
//! consecutive content terms, each sentence (by the one sentence rule the
//! claims are split by) with its negations; and, when a rule asks, a
//! source read again for its content words in order: which words its
//! sentences negate, and which are names. Claims and
//! sources read words the same way (numbers with their scales, dates,
//! dotted words, compounds, units), so a claim copied from a source finds
//! every one of its words.
//!
//! It writes only the record's index (and the summary a cached source is
//! replayed from); it decides nothing about a claim.

use super::{
    CAPITAL, Mark, NEGATED, NEGATIONS, QUALIFIES, RANKS, SourceIndex, Wanted, list, pair_hash,
};
use crate::core::grounding::cache::Summary;
use crate::core::grounding::claims::{ends_between, sentence_end};
use crate::core::grounding::lexicon::{
    Date, PER, ShortForm, TIMES, Words, acronym_glued_to_number, cents_after, changes_of_number,
    clock_time, closed_compound, comparative_after, currency_before, date, for_each_word,
    glued_split, glued_unit, may_open_date, may_open_run, multiple_sign, negates_nothing,
    number_text, passes_negation_on, per_unit, rest_past, run_read_as_one, short_form, skipped,
    slashed_period, slashed_period_before, units_of_cents, us_dollar,
};
use crate::core::grounding::memo::{Folder, Packed};
use crate::core::grounding::qualifiers::{self, Qualifying};
use crate::core::terms::Table;

impl SourceIndex {
    /// Indexes source `idx` by reading `text`; `RECORD`: also writes its
    /// summary into `building` (first bank only).
    pub(super) fn read<const RECORD: bool>(
        &mut self,
        idx: usize,
        text: &str,
        folder: &mut Folder,
        steps: &mut usize,
    ) {
        let bank = idx / 64;
        let summary = &mut self.building;
        if RECORD {
            summary.clear();
        }
        let first = self.sentences.len() as u32;
        self.sentences.push((idx as u32, 0));
        self.sentence_at.push(0);
        let mut r = Reading::<RECORD> {
            folder,
            marks: &mut self.marks,
            wanted: &mut self.wanted,
            table: &mut self.banks[bank],
            postings: &mut self.postings,
            summary,
            bank,
            bit: 1u64 << (idx % 64),
            first,
            prev: None,
            pending: false,
            at: Cursor::new(text.as_bytes()),
            idx: idx as u32,
            sentences: &mut self.sentences,
            sentence_at: &mut self.sentence_at,
            sentence: first,
            split_bytes: 0,
            alt: None,
            comparative_at: usize::MAX,
        };
        for_each_word(text, steps, &mut r);
        *steps += r.split_bytes;
        let sentences = &self.sentences;
        self.sentence_count[idx] = (sentences.len() - first as usize) as u32;
        self.sentence_first[idx] = first;
        if RECORD {
            let summary = &mut self.building;
            summary.terms.sort_unstable();
            summary.terms.dedup();
            // Each term's sentences once, in order (see `replay`).
            summary.postings.sort_unstable();
            summary.postings.dedup();
            summary
                .negations
                .extend(sentences[first as usize..].iter().map(|s| s.1));
            summary
                .starts
                .extend_from_slice(&self.sentence_at[first as usize..]);
        }
    }

    /// Reads the content words of the source of sentence `s` with their
    /// sentences into `negated`, once a record; whether `s` is a sentence.
    pub(super) fn read_words_of(
        &mut self,
        s: u32,
        texts: &[&str],
        folder: &mut Folder,
        steps: &mut usize,
    ) -> bool {
        let Some(&(idx, _)) = self.sentences.get(s as usize) else {
            return false;
        };
        if !self.negations_read[idx as usize] {
            self.negations_read[idx as usize] = true;
            // The source's sentences are one run, numbered from its first.
            let first = self.sentence_first[idx as usize];
            let mut blanked = std::mem::take(&mut self.blanked);
            let text = self.as_read(texts[idx as usize], &mut blanked);
            let mut scan = NegationScan::new(folder, text, first, Sink::Negated(&mut self.negated));
            for_each_word(text, steps, &mut scan);
            debug_assert_eq!(
                scan.sentence + 1 - first,
                self.sentence_count[idx as usize],
                "read again, a source has other sentences"
            );
            self.blanked = blanked;
            self.negated.sort_unstable();
            self.negated.dedup();
        }
        true
    }

    /// Appends the content words of sentence `s` to `placed`, in order,
    /// reading `text` (its source as this record reads it) over the
    /// sentence's bytes `from..to` (see `SourceIndex::sentence_span`).
    pub(super) fn read_sentence(
        &mut self,
        (s, from, to): (u32, usize, usize),
        text: &str,
        folder: &mut Folder,
        steps: &mut usize,
    ) {
        let Some(part) = text.get(from..to) else {
            return;
        };
        let placed = Sink::Placed {
            out: &mut self.placed,
            offset: from as u32,
        };
        let mut scan = NegationScan::new(folder, part, s, placed);
        for_each_word(part, steps, &mut scan);
    }

    /// The content words of sentence `s` with how it holds each (see
    /// [`Sink::Governed`]) into `out`, reading `text` (its source as this
    /// record reads it) over the sentence's bytes `from..to`.
    pub(super) fn read_governed(
        (s, from, to): (u32, usize, usize),
        text: &str,
        out: &mut Vec<(u32, u8)>,
        (folder, steps): (&mut Folder, &mut usize),
    ) {
        let Some(part) = text.get(from..to) else {
            return;
        };
        let mut scan = NegationScan::new(folder, part, s, Sink::Governed(out));
        for_each_word(part, steps, &mut scan);
    }
}

/// A dotted word, and the content term before it.
type Dotted = Option<(Prior, Option<Prior>)>;

/// A content term a reading has passed, as the next one pairs with it.
#[derive(Clone, Copy)]
struct Prior {
    key: u64,
    /// Whether a claim asks about it (a pair is asked about only when
    /// both its terms are).
    wanted: bool,
    /// Whether it is a word of the language (with UK/US spellings or
    /// synonyms: "University", "Bank") written with a capital.
    capital: bool,
}

/// What reading one source carries from word to word: the tables it
/// writes, the previous content term and a negation waiting for its word.
struct Reading<'a, const RECORD: bool> {
    folder: &'a mut Folder,
    marks: &'a mut Vec<Mark>,
    wanted: &'a mut Wanted,
    /// The source's bank: its pairs, and (past the first bank) its terms.
    table: &'a mut Table<u64>,
    postings: &'a mut Vec<(u32, u32)>,
    summary: &'a mut Summary,
    bank: usize,
    /// The source's bit in its bank.
    bit: u64,
    /// The source's first sentence.
    first: u32,
    /// The previous content term.
    prev: Option<Prior>,
    /// A negation seen, waiting for the content word it negates.
    pending: bool,
    /// Where in the source's text the reading is, and the source's number.
    at: Cursor<'a>,
    idx: u32,
    /// By sentence: its source and how many negations it holds, with the
    /// bit that says it holds a qualifier (the index's list).
    sentences: &'a mut Vec<(u32, u16)>,
    /// By sentence: where in its source its first word starts.
    sentence_at: &'a mut Vec<u32>,
    /// The sentence being read.
    sentence: u32,
    /// Bytes of dotted words read again part by part.
    split_bytes: usize,
    /// A dotted word just read: the next content word pairs with it too.
    alt: Option<Prior>,
    /// Where the "higher" or "lower" of the last "5% higher" starts.
    comparative_at: usize,
}

impl<const RECORD: bool> Words for Reading<'_, RECORD> {
    /// Inlined: the word's work runs in the scanner's loop.
    #[inline(always)]
    fn on_word(&mut self, w: &[u8], at: usize, ascii: bool) {
        self.next(w, at, ascii);
    }
}

impl<const RECORD: bool> Reading<'_, RECORD> {
    /// One word: its key, its pairs with the previous content term (and
    /// with `alt`, a dotted word before its parts), and its sentence. Gives
    /// the key when it is a dotted word to split, with the content term
    /// before it (its first part pairs with that too); and whether it
    /// negates.
    #[inline(always)]
    fn word(
        &mut self,
        w: &[u8],
        off: Option<usize>,
        ascii: bool,
        sentence: u32,
        alt: &mut Option<Prior>,
    ) -> (Dotted, bool) {
        let mut info = self.folder.fold_packed(w, ascii);
        if info.is_spelled() {
            info = self.at.spelled_number(self.folder, info, w, off);
        }
        let slot = self.mark(info);
        let want = slot.is_some();
        if info.qualifier() {
            self.sentences[sentence as usize].1 |= if qualifiers::is_rank_word(w) {
                RANKS
            } else {
                QUALIFIES
            };
        }
        if info.function() {
            return (None, info.negation());
        }
        if info.negation() && off.is_some_and(|o| negates_nothing(self.at.bytes, o, w.len())) {
            return (None, false);
        }
        // A stop word leaves `alt` for the next content word.
        // A summary keeps every pair (a later answer may ask for any).
        let now = Prior {
            key: info.key(),
            wanted: want,
            // Only a word of the language may be written both ways.
            capital: info.variants() != 0 && opens_with_capital(w, ascii),
        };
        if let Some(p) = self.prev
            && (RECORD || (want && p.wanted))
        {
            self.pairs(p, now);
        }
        if let Some(p) = alt.take()
            && (RECORD || (want && p.wanted))
        {
            self.pairs(p, now);
        }
        let before = self.prev.replace(now);
        // One test for the two kinds of word finished after their pairs.
        if info.direction() {
            if info.read_in_phrase() {
                self.words_of_phrase((w, ascii), now.capital, before, off, sentence, alt);
            } else {
                self.passes_on(off, before, alt);
            }
        }
        if info.negation() {
            self.pending = true;
        } else if self.pending {
            if RECORD || want {
                self.pair(pair_hash(NEGATED, info.key()));
            }
            self.pending = passes_negation_on(w);
        }
        self.list_in(info, slot, sentence);
        (
            (!info.number() && info.dotted()).then_some((now, before)),
            info.negation(),
        )
    }

    /// Marks the term `info` as in the source, stop words too; its slot
    /// among the wanted terms, if the claims want it.
    #[inline(always)]
    fn mark(&mut self, info: Packed) -> Option<usize> {
        // A summary is replayed for any answer: it holds every term
        // (each once: deduplicated at the end).
        if RECORD {
            self.summary.terms.push(info.id());
        }
        let slot = self.wanted.mark(info.id(), self.marks);
        if let Some(s) = slot {
            // Stems only: equal surfaces have equal stems.
            if self.bank == 0 {
                self.marks[s].mask |= self.bit;
            } else {
                *self.table.entry(info.key()) |= self.bit;
            }
        }
        slot
    }

    /// Lists `sentence` among the sentences of the content term `info`,
    /// at `slot` among the wanted terms ([`Reading::mark`]).
    #[inline(always)]
    fn list_in(&mut self, info: Packed, slot: Option<usize>, sentence: u32) {
        if RECORD {
            self.summary
                .postings
                .push((info.id(), sentence - self.first));
        }
        if let Some(s) = slot {
            list(&mut self.marks[s], self.postings, sentence);
        }
    }

    /// The words of a phrase read as another verb ("stepped down", read
    /// "resign"), held in their place too, as the reader holds any word,
    /// so that what found them before still does: the verb paired with
    /// the content word `before` it ("paid $5m" against "paid back $5m"),
    /// and, as a dotted word's whole is, with the next one, or the particle
    /// instead when it is a content word ("place in Samsun" out of "took
    /// place in Samsun"); a particle that is a stop word ("down") is marked
    /// and no more. Kept out of the loop.
    #[cold]
    #[inline(never)]
    fn words_of_phrase(
        &mut self,
        (w, ascii): (&[u8], bool),
        capital: bool,
        before: Option<Prior>,
        off: Option<usize>,
        sentence: u32,
        alt: &mut Option<Prior>,
    ) {
        let (verb, len) = (self.folder.fold_packed(w, ascii), w.len());
        let slot = self.mark(verb);
        self.list_in(verb, slot, sentence);
        let v = Prior {
            key: verb.key(),
            wanted: slot.is_some(),
            capital,
        };
        if let Some(p) = before
            && (RECORD || (v.wanted && p.wanted))
        {
            self.pairs(p, v);
        }
        *alt = Some(v);
        let bytes = self.at.bytes;
        if let Some(particle) = off.and_then(|o| bytes.get(o + len + 1..self.at.address_end)) {
            let p = self.folder.fold_packed(particle, true);
            let slot = self.mark(p);
            if !p.function() {
                self.list_in(p, slot, sentence);
                *alt = Some(Prior {
                    key: p.key(),
                    wanted: slot.is_some(),
                    capital: false,
                });
            }
        }
    }

    /// The "higher" of "5% higher" at `off`, its change ("increase") read
    /// before the number: the next content word pairs with it and with
    /// the word `before` it, as in a claim, which reads the change in its
    /// place ("5% higher than a year ago" pairs "5" with "year"). Kept out
    /// of the loop: "up", "down", "higher" and "lower" are rare.
    #[cold]
    #[inline(never)]
    fn passes_on(&self, off: Option<usize>, before: Option<Prior>, alt: &mut Option<Prior>) {
        if off == Some(self.comparative_at) && alt.is_none() {
            *alt = before;
        }
    }

    /// The next word of the source, at `off`: a new sentence first when one
    /// ends before it.
    #[inline(always)]
    fn next(&mut self, w: &[u8], off: usize, ascii: bool) {
        // Words with a digit at either end ("5km", "Q3") or after a
        // currency's code ("USD1.5bn") go out of the loop, and so do
        // abbreviations ("bps": "basis points").
        if w[0].is_ascii_digit()
            || w[w.len() - 1].is_ascii_digit()
            || (w.len() > 3 && w[3].is_ascii_digit())
        {
            return self.numeral(w, off, ascii);
        }
        if (w.len() == 3 || w == b"FY")
            && let Some(p) = short_form(w)
        {
            return self.short_form(w, off, &p);
        }
        // "y/y": "year over year". Most words of one letter ("a") are
        // followed by a space.
        if w.len() == 1
            && self.at.bytes.get(off + 1) == Some(&b'/')
            && let Some(p) = slashed_period(self.at.bytes, off)
        {
            return self.short_form(w, off, &p);
        }
        if let Some(joint) = self.enter(w, off) {
            self.plain(w, off, ascii, joint);
        }
    }

    /// "Q3", "FY2023", "bps": the words written short ("3rd quarter",
    /// "fiscal year", "basis points"), then the rest of the word ("2023"),
    /// as claims read them.
    #[inline(never)]
    fn short_form(&mut self, w: &[u8], off: usize, p: &ShortForm) {
        if self.enter(w, off).is_none() {
            return;
        }
        for word in p.words {
            self.implied(word);
        }
        if let Some(year) = &p.year {
            self.implied(year);
        }
        if p.rest < w.len() {
            // "USD1.5 billion": the amount with its scale, as claims read it.
            let (at, len) = (off + p.rest, w.len() - p.rest);
            let mut written = ([0u8; 48], [0u8; 49]);
            let rest = match w[p.rest].is_ascii_digit() {
                true => number_text(self.at.bytes, at, len, &mut written).0,
                false => &w[p.rest..],
            };
            self.take(rest, at, true);
        }
    }

    /// To the word `w` at `off`: a new sentence first when one ends
    /// before it. Gives the byte that joins it to the word before (see
    /// [`Cursor::step`]), or `None` when it is not read (see [`skipped`]).
    #[inline(always)]
    fn enter(&mut self, w: &[u8], off: usize) -> Option<u8> {
        let (ends_before, read, joint) = self.at.step(w, off);
        if ends_before {
            self.new_sentence(off);
        }
        if !read {
            self.rest_of_skipped(w, off);
        }
        read.then_some(joint)
    }

    /// The part of a skipped word `w` at `off` past the words read with
    /// the number before it (see [`Cursor::rest_of_skipped`]), read as a
    /// word. Kept out of the loop: only a skipped word gets here.
    #[inline(never)]
    fn rest_of_skipped(&mut self, w: &[u8], off: usize) {
        if let Some(k) = self.at.rest_of_skipped(w, off) {
            let rest = &w[k..];
            self.next(rest, off + k, rest.is_ascii());
        }
    }

    /// The word `w` read as it is, and as one word with the word before
    /// when a hyphen joins them ("e-mail": "email"); a unit after a slash
    /// as "per" and its word ("km/h": "km per hour").
    #[inline(always)]
    fn plain(&mut self, w: &[u8], off: usize, ascii: bool, joint: u8) {
        // Most words follow a space.
        if joint != b' ' {
            return self.joined(w, off, ascii, joint);
        }
        self.take(w, off, ascii);
    }

    /// A word after anything but one space: after a slash, "h" of "km/h"
    /// is "per hour", as claims read it; after a hyphen, the word is also
    /// read closed up with the word before. Kept out of the loop.
    #[inline(never)]
    fn joined(&mut self, w: &[u8], off: usize, ascii: bool, joint: u8) {
        // The second letter of "y/y", read with the first.
        if joint == b'/' && w.len() == 1 && slashed_period_before(self.at.bytes, off) {
            return;
        }
        if let Some(unit) = (joint == b'/')
            .then(|| per_unit(self.at.bytes, off, w.len()))
            .flatten()
        {
            self.implied(PER);
            return self.take(unit, off, true);
        }
        self.take(w, off, ascii);
        if joint == b'-' {
            self.closed_up(off, w.len());
        }
    }

    /// A word with a digit at either end: a period written short ("Q3",
    /// "3Q23"); a name glued to a number ("CET1"); a number glued to a unit
    /// ("5km"), after a currency sign ("$5"), opening a date, or one a
    /// scale may follow ("1.2 million"). Kept out of the loop, so other
    /// words pass these tests with one.
    #[inline(never)]
    fn numeral(&mut self, w: &[u8], off: usize, ascii: bool) {
        if !w[0].is_ascii_digit() {
            return match short_form(w) {
                Some(p) => self.short_form(w, off, &p),
                None => match acronym_glued_to_number(w) {
                    Some(n) => self.glued(w, off, n),
                    None => {
                        if let Some(joint) = self.enter(w, off) {
                            self.plain(w, off, ascii, joint);
                        }
                    }
                },
            };
        }
        if let Some(n) = glued_unit(w) {
            return self.glued(w, off, n);
        }
        // "3Q23": "3rd quarter 2023".
        if let Some(p) = short_form(w) {
            return self.short_form(w, off, &p);
        }
        let Some(joint) = self.enter(w, off) else {
            return;
        };
        let currency = currency_before(self.at.bytes, off);
        // "up 5%", "5% higher": the change's word ("increase") before the
        // number and its sign, as claims read the "up" or the "higher".
        let sign = currency.map_or(0, |(_, sign)| sign);
        let changes = changes_of_number(self.at.bytes, off, off + w.len(), sign);
        for change in changes.into_iter().flatten() {
            self.implied(change);
        }
        if changes[1].is_some()
            && let Some((_, word_at, _)) = comparative_after(self.at.bytes, off, off + w.len())
        {
            self.comparative_at = word_at;
        }
        if let Some((word, sign)) = currency {
            // "US$5", and a dollar sign no letters name another dollar by
            // ("$5", not "HK$5"): the US dollar, as a writer of dollars
            // means it.
            let bare_dollar = word == b"dollar"
                && (off - sign)
                    .checked_sub(1)
                    .is_none_or(|i| !self.at.bytes[i].is_ascii_alphanumeric());
            if bare_dollar || (off >= sign + 2 && us_dollar(self.at.bytes, off - sign - 2, 2)) {
                self.us_dollar(word);
            } else {
                self.implied(word);
            }
        }
        if may_open_date(self.at.bytes, off, w.len()) {
            self.date(off, w);
        }
        match self.at.read_with(off, w) {
            // Its minutes and its "p.m." are read in it.
            ReadWith::Time(time, n) => return self.clock(w, off, ascii, joint, &time[..n]),
            ReadWith::Cents(Some((amount, n))) => return self.cents(off, &amount[..n]),
            ReadWith::Cents(None) => return self.take(w, off, true),
            ReadWith::Neither => {}
        }
        // A negative number ("-5", "minus 5"), or one a scale may follow
        // ("1.2 million"): written out, as claims read it.
        let mut written = ([0u8; 48], [0u8; 49]);
        let (text, sign) = number_text(self.at.bytes, off, w.len(), &mut written);
        if sign.is_some()
            || text.len() != w.len()
            || self.at.bytes.get(off + w.len()) == Some(&b' ')
        {
            return self.take(text, off, ascii);
        }
        self.plain(w, off, ascii, joint);
    }

    /// "5 p.m.": the hour as written ("5", which a claim leaving out "p.m."
    /// names), and at its place the `time` on the 24-hour clock ("17:00"),
    /// as claims read it: both pair with the words beside them. Kept out
    /// of the loop.
    #[inline(never)]
    fn clock(&mut self, w: &[u8], off: usize, ascii: bool, joint: u8, time: &[u8]) {
        self.at_one_place(
            |r| r.plain(w, off, ascii, joint),
            |r| {
                let _ = r.word(time, None, true, r.sentence, &mut None);
            },
        );
    }

    /// "50 cents": the `amount` as a price writes it ("0.50", as claims
    /// read it), after the currencies whose hundredth a cent is ("dollar",
    /// "euro"), so that a claim's "$0.50" or "€0.50" finds it. Kept out of
    /// the loop.
    #[inline(never)]
    fn cents(&mut self, off: usize, amount: &[u8]) {
        self.at_one_place(|r| r.implied(b"dollar"), |r| r.implied(b"euro"));
        self.take(amount, off, true);
    }

    /// "US$5", "$5": the sign read as its word ("dollar"), as claims read
    /// it (their "US" of "US$" is no word), and at its place "us", so that
    /// a claim's "US dollars" finds its words. Kept out of the loop.
    #[inline(never)]
    fn us_dollar(&mut self, dollar: &[u8]) {
        self.at_one_place(|r| r.implied(b"us"), |r| r.implied(dollar));
    }

    /// Two readings of one place of the text: each pairs with the word
    /// before (and with its alternate), and the next word pairs with both
    /// (the second as the word before it, the first as its alternate).
    fn at_one_place(&mut self, first: impl FnOnce(&mut Self), second: impl FnOnce(&mut Self)) {
        let (before, alt) = (self.prev, self.alt);
        first(self);
        let first_read = std::mem::replace(&mut self.prev, before);
        self.alt = alt;
        second(self);
        if self.alt.is_none() {
            self.alt = first_read;
        }
    }

    /// "e-mail", read as its two words, is also read as "email": a term of
    /// its sentence that pairs with the next content word (as "mail" does),
    /// so a claim that closes the compound up finds it. Kept out of the
    /// loop: such compounds are rare.
    #[inline(never)]
    fn closed_up(&mut self, at: usize, len: usize) {
        let mut out = [0u8; 48];
        let Some(n) = closed_compound(self.at.bytes, at, len, &mut out) else {
            return;
        };
        let prev = self.prev.take();
        let _ = self.word(&out[..n], None, true, self.sentence, &mut None);
        let whole = std::mem::replace(&mut self.prev, prev);
        if self.alt.is_none() {
            self.alt = whole;
        }
    }

    /// "5km", whose number is `n` bytes: its number and its unit, each a
    /// word, as claims read it ("2x": "2 times"); "CET1", whose acronym is
    /// `n` bytes: the acronym and the number. Kept out of the loop.
    #[inline(never)]
    fn glued(&mut self, w: &[u8], off: usize, n: usize) {
        self.next(&w[..n], off, true);
        if w.len() == n + 1 && multiple_sign(self.at.bytes, off + n) {
            if self.enter(&w[n..], off + n).is_some() {
                self.take(TIMES, off + n, true);
            }
            return;
        }
        self.next(&w[n..], off + n, true);
    }

    /// A word the text implies before the next one: "$5", the sign read as
    /// its word ("dollar") before the number; "km/h", the slash read as
    /// "per". As claims read them. Kept out of the loop.
    #[inline(never)]
    fn implied(&mut self, word: &[u8]) {
        let mut alt = self.alt.take();
        let _ = self.word(word, None, true, self.sentence, &mut alt);
        self.alt = alt;
    }

    /// "2004-05-12", "12 May": if the word `first` at `off` opens a date,
    /// the month's name (and an ISO date's day) before it, as claims read
    /// them, and the pairs the date states that its words so read do not
    /// put side by side. Kept out of the loop.
    #[inline(never)]
    fn date(&mut self, off: usize, first: &[u8]) {
        let Some(date) = self.at.date(off, first.len()) else {
            return;
        };
        let before = self.prev;
        let mut alt = self.alt.take();
        for w in date.words() {
            let _ = self.word(w, None, true, self.sentence, &mut alt);
        }
        self.alt = alt;
        // "born 17 March", read "born March 17", still has "born 17".
        if let (true, None, Some(p)) = (date.month_first_read, date.day, before) {
            let day = self.folder.fold_packed(first, true).key();
            self.pair(pair_hash(p.key, day));
        }
        if let Some(at) = date.year {
            let month = self.folder.fold_packed(date.month.0, true).key();
            let year = self
                .folder
                .fold_packed(&self.at.bytes[at..at + 4], true)
                .key();
            self.pair(pair_hash(month, year));
        }
    }

    /// The word `w` read at `off`, in the sentence it is in.
    #[inline(always)]
    fn take(&mut self, w: &[u8], off: usize, ascii: bool) {
        let mut alt = self.alt.take();
        let (dotted, negation) = self.word(w, Some(off), ascii, self.sentence, &mut alt);
        self.alt = alt;
        if negation {
            let n = &mut self.sentences[self.sentence as usize].1;
            if *n & NEGATIONS != NEGATIONS {
                *n += 1;
            }
        }
        if let Some((whole, before)) = dotted {
            self.split(w, off, ascii, whole, before);
        }
    }

    /// "Hawaii.Aulani": after the whole word, its parts, each in its
    /// sentence (two sentences run together, by the one sentence rule). The
    /// next word pairs with the whole word ("D.C today") and with the last
    /// part; the first part pairs with the word before ("12 Hour" of "12
    /// Hour.Mount"). Kept out of the loop: dotted words are rare.
    #[inline(never)]
    fn split(
        &mut self,
        w: &[u8],
        off: usize,
        ascii: bool,
        whole: Prior,
        mut before: Option<Prior>,
    ) {
        self.split_bytes += w.len();
        let bytes = self.at.bytes;
        for_each_part(bytes, w, off, |part| {
            if !part.is_empty() {
                let _ = self.word(
                    part,
                    None,
                    ascii || part.is_ascii(),
                    self.sentence,
                    &mut before,
                );
            }
        });
        self.alt = Some(whole);
    }

    /// A sentence whose first word starts at `at`.
    fn new_sentence(&mut self, at: usize) {
        self.sentence += 1;
        self.sentences.push((self.idx, 0));
        self.sentence_at.push(at as u32);
        // A negation ends with its sentence ("Ready or Not." does not
        // negate the next sentence's first word).
        self.pending = false;
    }

    /// Marks the pair of `p` and `now` as in the source; and, when one of
    /// them is a word of the language written with a capital and the other
    /// is not, the pair with the capital marked, so a claim's name is told
    /// from a word of its own ("Stanford University located" from "a
    /// research university located").
    #[inline(always)]
    fn pairs(&mut self, p: Prior, now: Prior) {
        self.pair(pair_hash(p.key, now.key));
        if p.capital != now.capital {
            let capital = |t: Prior| if t.capital { t.key ^ CAPITAL } else { t.key };
            self.pair(pair_hash(capital(p), capital(now)));
        }
    }

    /// Marks pair `key` as in the source.
    #[inline(always)]
    fn pair(&mut self, key: u64) {
        let e = self.table.entry(key);
        if RECORD && *e & self.bit == 0 {
            self.summary.pairs.push(key);
        }
        *e |= self.bit;
    }
}

/// Where a reading of a source stands: its text, where the last word
/// ended, and where the web address being read ends. Both readers of a
/// source step through it with one, so they cut the same sentences and
/// skip the same words.
struct Cursor<'a> {
    bytes: &'a [u8],
    last_end: usize,
    address_end: usize,
}

/// What a number is read with ([`Cursor::read_with`]): bytes and how many
/// of them are written.
enum ReadWith {
    Neither,
    /// A clock time, on the 24-hour clock ("17:00").
    Time([u8; 5], usize),
    /// "cents" after it: the amount as a price writes it ("0.50"), `None`
    /// when the number is none a price can hold (it is read as it is).
    Cents(Option<([u8; 48], usize)>),
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Cursor {
            bytes,
            last_end: 0,
            address_end: 0,
        }
    }

    /// To the word `w` at `off`: whether a sentence ends before it,
    /// whether it is read at all (see [`skipped`]), and the one byte
    /// between it and the word before, if one byte parts them (a hyphen:
    /// "e-mail"; a slash: "km/h"), else 0.
    #[inline(always)]
    fn step(&mut self, w: &[u8], off: usize) -> (bool, bool, u8) {
        let from = self.last_end;
        self.last_end = off + w.len();
        let read = !skipped(self.bytes, &mut self.address_end, off, w.len());
        // Most words are one space apart: no sentence end, no hyphen.
        if off == from + 1 && self.bytes[from] == b' ' {
            return (false, read, b' ');
        }
        let ends_before = off > from && ends_between(self.bytes, from, off);
        let joint = if off == from + 1 { self.bytes[from] } else { 0 };
        (ends_before, read, joint)
    }

    /// The number `w` at `off` read with the words after it: a clock time
    /// ("5 p.m.": "17:00") or an amount in cents ("50 cents": "0.50"). The
    /// words read with it are then skipped, so both readers of a source
    /// read them in the number.
    #[inline(never)]
    fn read_with(&mut self, off: usize, w: &[u8]) -> ReadWith {
        let mut clock = [0u8; 5];
        if let Some((time, _, end)) = clock_time(self.bytes, off, w.len(), &mut clock) {
            let n = time.len();
            self.address_end = end;
            return ReadWith::Time(clock, n);
        }
        let Some(end) = cents_after(self.bytes, off + w.len()) else {
            return ReadWith::Neither;
        };
        let mut amount = [0u8; 48];
        let Some(n) = units_of_cents(w, &mut amount) else {
            return ReadWith::Cents(None);
        };
        self.address_end = end;
        ReadWith::Cents(Some((amount, n)))
    }

    /// The part of a skipped dotted word `w` at `off` that lies past the
    /// words read as one before it ([`rest_past`]), as a word to read:
    /// where it starts in `w`. The cursor then stands at the period, so
    /// the part's step finds a sentence end there, as the part of a read
    /// dotted word does.
    fn rest_of_skipped(&mut self, w: &[u8], off: usize) -> Option<usize> {
        let k = rest_past(w, off, self.address_end)?;
        self.last_end = off + k - 1;
        Some(k)
    }
}

impl Cursor<'_> {
    /// The date that the word at `off..off + len` opens (see [`Date`]);
    /// its words up to its end are then skipped.
    #[inline(always)]
    fn date(&mut self, off: usize, len: usize) -> Option<Date> {
        let date = date(self.bytes, off, len)?;
        self.address_end = date.end;
        Some(date)
    }

    /// The number word `w` at `off` (`None`: part of a dotted word) as it
    /// is read: with the words after it when they spell one number with it
    /// ("twenty-one": 21), which are then skipped; else as it is. A word
    /// the text implies ("second" for the "s" of "m/s") opens no run.
    #[inline(always)]
    fn spelled_number(
        &mut self,
        folder: &mut Folder,
        info: Packed,
        w: &[u8],
        off: Option<usize>,
    ) -> Packed {
        match off {
            Some(off) if may_open_run(self.bytes, off, w.len()) => {
                self.spelled_number_at(folder, info, w, off)
            }
            _ => info,
        }
    }

    /// [`Cursor::spelled_number`] for a word that may open a run. Kept out
    /// of the loop.
    #[inline(never)]
    fn spelled_number_at(
        &mut self,
        folder: &mut Folder,
        info: Packed,
        w: &[u8],
        off: usize,
    ) -> Packed {
        if self.bytes.get(off..off + w.len()) != Some(w) {
            return info;
        }
        let mut out = [0u8; 48];
        match run_read_as_one(info, self.bytes, off, w.len(), &mut out) {
            Some((n, end)) => {
                self.address_end = end;
                let read = folder.fold_packed(&out[..n], true);
                if info.opens_phrase() {
                    read.in_phrase()
                } else {
                    read
                }
            }
            None => info,
        }
    }
}

/// The parts of the dotted word `w` at `off` of `bytes` ("D.C", "Node.js",
/// "www.Geniewards.ca"), empty ones too. No sentence ends inside a word:
/// where the sentence rule ends one at a period between word bytes ("12
/// Hour.Mount"), the word scanner has parted the words already.
fn for_each_part(bytes: &[u8], w: &[u8], off: usize, mut f: impl FnMut(&[u8])) {
    let mut at = off;
    for part in w.split(|&b| b == b'.') {
        debug_assert!(
            at == off || !sentence_end(bytes, at - 1, bytes.len()).1,
            "a sentence ends inside {:?}",
            String::from_utf8_lossy(w)
        );
        at += part.len() + 1;
        f(part);
    }
}

/// Whether `gap`, the text between a negation and the next content word,
/// closes a bracket that opens before it.
fn closes_bracket(gap: &[u8]) -> bool {
    let mut depth = 0i32;
    for &b in gap {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// How a source word is written: in lower case, capitalised as its
/// sentence's first word, or a name (capitalised past its sentence's first
/// word, or in capitals), as claims tell names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::core::grounding) enum Case {
    Lower,
    Opening,
    Name,
}

/// A content word of a source as read again, in the source's order: its
/// sentence, its word id, its case, and where the source writes it.
#[derive(Debug, Clone, Copy)]
pub(in crate::core::grounding) struct Placed {
    pub(in crate::core::grounding) sentence: u32,
    pub(in crate::core::grounding) id: u32,
    pub(in crate::core::grounding) case: Case,
    pub(in crate::core::grounding) number: bool,
    pub(in crate::core::grounding) at: u32,
    pub(in crate::core::grounding) len: u32,
}

/// Whether the word `w` (`ascii`: all of it ASCII) opens with a capital
/// letter.
#[inline(always)]
fn opens_with_capital(w: &[u8], ascii: bool) -> bool {
    if ascii {
        w.first().is_some_and(u8::is_ascii_uppercase)
    } else {
        String::from_utf8_lossy(w)
            .chars()
            .next()
            .is_some_and(char::is_uppercase)
    }
}

/// The case of the word `w` as read at the start of its sentence
/// (`opens`) or past it.
fn case_of(w: &[u8], ascii: bool, opens: bool) -> Case {
    let upper_first = opens_with_capital(w, ascii);
    let all_caps = if ascii {
        w.len() >= 2 && !w.iter().any(u8::is_ascii_lowercase)
    } else {
        let w = String::from_utf8_lossy(w);
        w.chars().nth(1).is_some() && w.chars().all(|c| !c.is_lowercase())
    };
    if all_caps && !w[0].is_ascii_digit() {
        Case::Name
    } else if upper_first {
        if opens { Case::Opening } else { Case::Name }
    } else {
        Case::Lower
    }
}

/// Reads a source (or one of its sentences) again for its content words,
/// numbering sentences as [`Reading`] does (the same sentence rule, dotted
/// words split the same way), so a sentence number means the same sentence
/// in both.
struct NegationScan<'a> {
    folder: &'a mut Folder,
    at: Cursor<'a>,
    sentence: u32,
    /// A negation seen in this sentence, waiting for its content word:
    /// where it ends.
    pending: Option<usize>,
    /// A qualifier seen in this sentence, waiting for its content word
    /// (read for [`Sink::Governed`] only).
    qualifying: Qualifying,
    /// The next word opens its sentence.
    opens: bool,
    out: Sink<'a>,
}

/// How a sentence holds a content word, as a [`NegationScan`] lists it
/// for the qualifier rule: plainly, right after a negation ("did not
/// *win*"), or governed by a qualifier ("may *cut*"; see `qualifiers`):
/// [`QUALIFIED_WORD`] plus the qualifier's number.
pub(super) const PLAIN: u8 = 0;
pub(super) const NEGATED_WORD: u8 = 1;
pub(super) const QUALIFIED_WORD: u8 = 2;

/// What a [`NegationScan`] writes.
enum Sink<'a> {
    /// A whole source's content words: (sentence, word id, right after a
    /// negation).
    Negated(&'a mut Vec<(u32, u32, bool)>),
    /// One sentence's content words: (word id, how it is held:
    /// [`PLAIN`], [`NEGATED_WORD`] or [`QUALIFIED_WORD`] plus the
    /// qualifier's number).
    Governed(&'a mut Vec<(u32, u8)>),
    /// One sentence's content words in order, with their case, placed
    /// `offset` bytes into the source.
    Placed {
        out: &'a mut Vec<Placed>,
        offset: u32,
    },
}

impl Words for NegationScan<'_> {
    fn on_word(&mut self, w: &[u8], off: usize, ascii: bool) {
        if let Some(n) = glued_split(w) {
            self.on_word(&w[..n], off, true);
            self.on_word(&w[n..], off + n, true);
            return;
        }
        let (ends_before, read, joint) = self.at.step(w, off);
        if ends_before {
            self.new_sentence();
        }
        if !read {
            if let Some(k) = self.at.rest_of_skipped(w, off) {
                let rest = &w[k..];
                self.on_word(rest, off + k, rest.is_ascii());
            }
            return;
        }
        let whole = (off, w.len());
        if let Some(unit) = (joint == b'/')
            .then(|| per_unit(self.at.bytes, off, w.len()))
            .flatten()
        {
            for part in [PER, unit] {
                let p = self.folder.fold_packed(part, true);
                self.word(part, p, Case::Lower, whole);
            }
            return;
        }
        if let Some(short) = short_form(w) {
            for part in short.words.iter().copied().chain(Some(&w[short.rest..])) {
                if !part.is_empty() {
                    let p = self.folder.fold_packed(part, true);
                    self.word(part, p, Case::Lower, whole);
                }
            }
            return;
        }
        for part in self.at.date(off, w.len()).iter().flat_map(Date::words) {
            let p = self.folder.fold_packed(part, true);
            self.word(part, p, Case::Lower, whole);
        }
        if w[0].is_ascii_digit() && matches!(self.out, Sink::Negated(_)) {
            self.change_of(off, w.len(), whole);
        }
        let case = case_of(w, ascii, self.opens);
        let mut written;
        let w = if w[0].is_ascii_digit() {
            let _ = self.at.read_with(off, w);
            written = ([0u8; 48], [0u8; 49]);
            number_text(self.at.bytes, off, w.len(), &mut written).0
        } else {
            w
        };
        let mut info = self.folder.fold_packed(w, ascii);
        let mut whole = whole;
        if info.is_spelled() {
            info = self.at.spelled_number(self.folder, info, w, Some(off));
            // A finding names a phrase whole ("stepped down").
            if info.read_in_phrase() {
                whole.1 = self.at.address_end - off;
            }
        }
        if info.negation() && negates_nothing(self.at.bytes, off, w.len()) {
            self.opens = false;
            return;
        }
        self.word(w, info, case, whole);
        if info.number() || !info.dotted() {
            return;
        }
        for_each_part(self.at.bytes, w, off, |part| {
            if !part.is_empty() {
                let p = self.folder.fold_packed(part, ascii || part.is_ascii());
                self.word(part, p, Case::Lower, whole);
            }
        });
    }
}

impl<'a> NegationScan<'a> {
    /// A scan of `text` that numbers its first sentence `sentence`.
    fn new(folder: &'a mut Folder, text: &'a str, sentence: u32, out: Sink<'a>) -> Self {
        NegationScan {
            folder,
            at: Cursor::new(text.as_bytes()),
            sentence,
            pending: None,
            qualifying: Qualifying::default(),
            opens: true,
            out,
        }
    }

    /// "up 5%", "5% higher": the change a number at `off` states, as the
    /// index holds it ("increase"), so the opposites rule sees what a
    /// claim's "fell" against it says. Not in the words a sentence is
    /// placed by: those are what it writes, in order. Kept out of the loop.
    #[inline(never)]
    fn change_of(&mut self, off: usize, len: usize, whole: (usize, usize)) {
        let bytes = self.at.bytes;
        let sign = currency_before(bytes, off).map_or(0, |(_, sign)| sign);
        for word in changes_of_number(bytes, off, off + len, sign)
            .into_iter()
            .flatten()
        {
            let p = self.folder.fold_packed(word, true);
            self.word(word, p, Case::Lower, whole);
        }
    }

    fn new_sentence(&mut self) {
        // One sentence read alone is one sentence, as the index cut it.
        if matches!(self.out, Sink::Negated(_)) {
            self.sentence += 1;
        }
        self.pending = None;
        self.qualifying = Qualifying::default();
        self.opens = true;
    }

    /// Whether the negation pending reaches the content word `w` at
    /// `at..at + len`; `None` when `w` is a negation itself, which is then
    /// pending. A negation negates the next content word, unless a bracket
    /// it stands in closes first ("(… cannot win without it) as a reason":
    /// "reason" is stated plainly), and the one after too when that word
    /// passes it on ([`passes_negation_on`]).
    fn negation_reaches(
        &mut self,
        info: Packed,
        w: &[u8],
        (at, len): (usize, usize),
    ) -> Option<bool> {
        if info.negation() {
            self.pending = Some(at + len);
            return None;
        }
        let negated = self
            .pending
            .is_some_and(|end| !self.at.bytes.get(end..at).is_some_and(closes_bracket));
        if !(negated && passes_negation_on(w)) {
            self.pending = None;
        }
        Some(negated)
    }

    /// The word `w` as written, `info` as folded.
    fn word(&mut self, w: &[u8], info: Packed, case: Case, (at, len): (usize, usize)) {
        self.opens = false;
        if info.function() {
            if matches!(self.out, Sink::Governed(_)) && self.qualifying.wants(info) {
                self.qualifying.step(w, info);
            }
            return;
        }
        let negated = self.negation_reaches(info, w, (at, len));
        match &mut self.out {
            Sink::Negated(out) => {
                if let Some(negated) = negated {
                    out.push((self.sentence, info.id(), negated));
                }
            }
            Sink::Governed(out) => {
                let qualified = if self.qualifying.wants(info) {
                    self.qualifying.step(w, info)
                } else {
                    None
                };
                if let Some(negated) = negated {
                    let held = match qualified {
                        _ if negated => NEGATED_WORD,
                        Some(n) => QUALIFIED_WORD + n,
                        None => PLAIN,
                    };
                    out.push((info.id(), held));
                }
            }
            Sink::Placed { out, offset } => out.push(Placed {
                sentence: self.sentence,
                id: info.id(),
                // A number is no name, however it is written.
                case: if info.number() { Case::Lower } else { case },
                number: info.number(),
                at: *offset + at as u32,
                len: len as u32,
            }),
        }
    }
}
