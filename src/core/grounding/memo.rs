//! The thread's word memo: case folding, the Snowball stemmer and each
//! distinct word's classes, looked up once per word and kept across
//! records (bounded). A memo of a pure function: it changes speed, never a
//! result.

use rust_stemmers::{Algorithm, Stemmer};

use super::lexicon::{
    RUN_OPENERS, SPELLED, direction, fold_into, is_filler, is_negation, is_stop, spelled_other,
};
use super::opposites;
use super::phrases;
use super::qualifiers;
use super::variants;
use crate::core::terms::{AsciiWord, Table, ascii_word, term_hash};

/// What a case-folded word is, looked up once per distinct word.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct WordInfo {
    /// The term's dense number in this thread's [`Folder`] (one per stem
    /// of a word, one per folded number): where the source index marks it
    /// (an array slot, not a hash probe).
    pub(super) id: u32,
    pub(super) number: bool,
    pub(super) stop: bool,
    pub(super) filler: bool,
    pub(super) negation: bool,
    /// Letters joined by `.` ("state.Aulani"): two sentences run together
    /// without a space, or an abbreviation; sources also index the parts.
    pub(super) dotted: bool,
    /// The digits of a small number written as a word ("two": "2"), as
    /// 1 + its index in [`SPELLED`]; [`OPENER`] for a word that may open
    /// a spelled number without spelling one ("half", "a"); 0 for none
    /// (one byte keeps the memo's slots small).
    pub(super) spelled: u8,
    /// Other spellings and synonyms it may be found by, as a
    /// [`variants::group`] handle (0: none).
    pub(super) variants: u32,
    /// Its case-folded form is a word of a set of opposites, a period's
    /// noun ("month") or opens a time bound (see [`opposing`]): the claims
    /// without one skip those checks.
    pub(super) opposing: bool,
    /// "up" or "down": before a number, the change it states (see
    /// `lexicon::direction_of_number`); "higher" or "lower": after one,
    /// read in its place (see `lexicon::comparative_after`). The claims'
    /// other words skip those tests.
    pub(super) direction: bool,
    /// "may", "expected", "plans": it may keep the word after it from
    /// being stated as done (see `qualifiers`). The readers of a source
    /// test only this bit for the many words that are none.
    pub(super) qualifier: bool,
}

impl WordInfo {
    /// What the source index's tables know the term by: its id, mixed so
    /// that its top bits spread over a table's slots (a bijection: distinct
    /// ids have distinct keys).
    #[cfg(test)]
    pub(super) fn key(&self) -> u64 {
        key_of(self.id)
    }

    /// The memo's packed form: id (32 bits), word classes (5), spelled
    /// digits (6: fewer than 64 entries in `SPELLED`), opposing (1),
    /// direction (1), variants group (17: at most `variants::MAX_GROUPS`),
    /// qualifier (1) in one word, with a bit that marks it present.
    fn pack(&self) -> u64 {
        u64::from(self.id)
            | u64::from(self.number) << 32
            | u64::from(self.stop) << 33
            | u64::from(self.filler) << 34
            | u64::from(self.negation) << 35
            | u64::from(self.dotted) << 36
            | u64::from(self.spelled) << 37
            | u64::from(self.opposing) << 43
            | u64::from(self.direction) << 44
            | u64::from(self.variants) << 45
            | u64::from(self.qualifier) << 62
            | PRESENT
    }

    /// [`WordInfo::pack`] undone, by [`Packed`]'s accessors.
    fn unpack(x: u64) -> WordInfo {
        let p = Packed(x);
        WordInfo {
            id: p.id(),
            number: p.number(),
            stop: p.stop(),
            filler: p.filler(),
            negation: p.negation(),
            dotted: p.dotted(),
            spelled: p.spelled_code(),
            variants: p.variants(),
            opposing: p.opposing(),
            direction: p.direction(),
            qualifier: p.qualifier(),
        }
    }
}

/// The [`WordInfo::spelled`] entry of a word that may open a spelled
/// number without spelling one ("half", "a"; see `lexicon::RUN_OPENERS`):
/// past the table, so it spells no digits of its own.
const OPENER: u8 = 63;

/// The [`WordInfo::spelled`] entry of the verb of a phrase ("stepped" of
/// "stepped down"; see `phrases`): it opens a run of words read as one
/// too, a phrase and never a number.
const VERB: u8 = 62;

/// The digits of the [`WordInfo::spelled`] entry `spelled` ("2" for "two").
#[inline(always)]
fn spelled_digits(spelled: u8) -> Option<&'static str> {
    let i = usize::from(spelled.checked_sub(1)?);
    SPELLED.get(i).map(|&(_, digits)| digits)
}

/// The source index's key of word id `id` (see [`WordInfo::key`]).
#[inline(always)]
pub(super) fn key_of(id: u32) -> u64 {
    (u64::from(id) ^ 0x2545_f491_4f6c_dd1d).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Marks a memo slot in use.
const PRESENT: u64 = 1 << 63;

/// [`WordInfo::direction`]'s bit.
const DIRECTION: u64 = 1 << 44;

/// A [`WordInfo`] as the memo keeps it: for the source index, which reads
/// a few of its fields per source word and need not unpack the rest.
#[derive(Debug, Clone, Copy)]
pub(super) struct Packed(u64);

impl Packed {
    #[inline(always)]
    pub(super) fn id(self) -> u32 {
        self.0 as u32
    }

    /// See [`WordInfo::key`].
    #[inline(always)]
    pub(super) fn key(self) -> u64 {
        key_of(self.id())
    }

    #[inline(always)]
    pub(super) fn number(self) -> bool {
        self.0 & 1 << 32 != 0
    }

    /// A stop word or a filler, and not a number: no content term.
    #[inline(always)]
    pub(super) fn function(self) -> bool {
        let classes = (self.0 >> 32) & 0b111;
        classes & 1 == 0 && classes != 0
    }

    #[inline(always)]
    pub(super) fn negation(self) -> bool {
        self.0 & 1 << 35 != 0
    }

    #[inline(always)]
    pub(super) fn dotted(self) -> bool {
        self.0 & 1 << 36 != 0
    }

    #[inline(always)]
    pub(super) fn stop(self) -> bool {
        self.0 & 1 << 33 != 0
    }

    #[inline(always)]
    pub(super) fn filler(self) -> bool {
        self.0 & 1 << 34 != 0
    }

    /// See [`WordInfo::spelled`].
    #[inline(always)]
    fn spelled_code(self) -> u8 {
        (self.0 >> 37) as u8 & 0x3f
    }

    /// The digits of a small number written as a word ("two": "2").
    #[inline(always)]
    pub(super) fn spelled(self) -> Option<&'static str> {
        spelled_digits(self.spelled_code())
    }

    /// Whether [`Packed::spelled`] is some, or the word may open a
    /// spelled number without spelling one ("half", "a"): one bit test,
    /// for the many words that open no number.
    #[inline(always)]
    pub(super) fn is_spelled(self) -> bool {
        self.spelled_code() != 0
    }

    /// Whether the word is the verb of a phrase (see [`VERB`]), which
    /// opens no spelled number.
    #[inline(always)]
    pub(super) fn opens_phrase(self) -> bool {
        self.spelled_code() == VERB
    }

    /// This word as read in a phrase's place ("resign" for "stepped
    /// down"): its entry with [`PRESENT`] clear, which no memo slot holds,
    /// so a source reader learns it from the word alone; and with the bit
    /// of [`Packed::direction`] set, which the source reader tests once
    /// for both kinds of word it finishes after their pairs.
    #[inline(always)]
    pub(super) fn in_phrase(self) -> Packed {
        Packed((self.0 & !PRESENT) | DIRECTION)
    }

    /// Whether this word was read in a phrase's place ([`Packed::in_phrase`]).
    #[inline(always)]
    pub(super) fn read_in_phrase(self) -> bool {
        self.0 & PRESENT == 0
    }

    /// See [`WordInfo::opposing`].
    #[inline(always)]
    pub(super) fn opposing(self) -> bool {
        self.0 & 1 << 43 != 0
    }

    /// See [`WordInfo::direction`]; also set on a word read in a
    /// phrase's place ([`Packed::in_phrase`]).
    #[inline(always)]
    pub(super) fn direction(self) -> bool {
        self.0 & DIRECTION != 0
    }

    /// See [`WordInfo::qualifier`].
    #[inline(always)]
    pub(super) fn qualifier(self) -> bool {
        self.0 & 1 << 62 != 0
    }

    /// See [`WordInfo::variants`].
    #[inline(always)]
    pub(super) fn variants(self) -> u32 {
        (self.0 >> 45) as u32 & 0x1_ffff
    }
}

/// The word memo's table: surface hash → packed [`WordInfo`], 16 bytes a
/// slot so a large vocabulary stays in the core's own cache. Linear
/// probing, a power of two slots at most 3/4 full; emptied only when the
/// memo starts over.
struct Memo {
    slots: Vec<(u64, u64)>,
    len: usize,
    shift: u32,
}

impl Memo {
    fn with_slots(slots: usize) -> Memo {
        Memo {
            slots: vec![(0, 0); slots],
            len: 0,
            shift: 64 - slots.trailing_zeros(),
        }
    }

    #[inline(always)]
    fn get(&self, surface: u64) -> Option<WordInfo> {
        self.get_packed(surface).map(|p| WordInfo::unpack(p.0))
    }

    #[inline(always)]
    fn get_packed(&self, surface: u64) -> Option<Packed> {
        let mask = self.slots.len() - 1;
        let mut i = (surface >> self.shift) as usize;
        loop {
            let (k, v) = self.slots[i & mask];
            if v == 0 {
                return None;
            }
            if k == surface {
                return Some(Packed(v));
            }
            i += 1;
        }
    }

    /// Files `info` under `surface`, which is not in the memo.
    fn insert(&mut self, surface: u64, info: WordInfo) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            let old = std::mem::replace(self, Memo::with_slots(self.slots.len() * 2));
            for (k, v) in old.slots {
                if v != 0 {
                    self.insert(k, WordInfo::unpack(v));
                }
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = (surface >> self.shift) as usize & mask;
        while self.slots[i].1 != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (surface, info.pack());
        self.len += 1;
    }

    fn clear(&mut self) {
        self.slots.fill((0, 0));
        self.len = 0;
    }
}

/// Most words remembered per thread by [`Folder`]'s memo; the memo starts
/// over (between records) when full, so memory stays bounded.
pub(super) const MEMO_WORDS: usize = 1 << 16;

/// Slots a per-record table keeps between records; a bigger one (a record
/// with huge sources) is given back.
pub(super) const KEEP_SLOTS: usize = 1 << 16;

/// Case folding, the stemmer and the thread's word memo.
pub(super) struct Folder {
    stemmer: Stemmer,
    buf: String,
    /// Memo of a pure function (case-folded word, by hash → [`WordInfo`]),
    /// kept across records: vocabularies repeat, and the Snowball stemmer
    /// is the costliest step per word. It changes only speed, never a result.
    words: Memo,
    /// Index key → dense id.
    ids: Table<u32>,
    /// By variants group: where its run starts in `alts` + 1 (0: not
    /// looked up since the memo started over), the group's handle.
    groups: Vec<u32>,
    /// One run per group looked up: its length, the record that last
    /// asked for it (0: none), then its alternates' ids. A claim term
    /// keeps its group's handle, so declaring and scoring it read only this
    /// dense list, which the record's claims have just touched.
    alts: Vec<u32>,
    /// This record's number on the thread (never 0; wraps, and the runs'
    /// stamps start over then).
    record: u32,
}

impl Folder {
    pub(super) fn new() -> Self {
        Folder {
            stemmer: Stemmer::create(Algorithm::English),
            buf: String::with_capacity(64),
            words: Memo::with_slots(2048),
            ids: Table::with_capacity(1024),
            groups: Vec::new(),
            alts: Vec::new(),
            record: 1,
        }
    }

    /// [`Folder::alternates_at`] the group of `info`.
    #[cfg(test)]
    pub(super) fn alternates(&mut self, info: &WordInfo) -> &[u32] {
        let at = self.alternates_handle(info.variants);
        self.alternates_at(at)
    }

    /// The handle of the alternates of variants group `group` (UK/US
    /// spellings, synonyms), for [`Folder::alternates_at`] and
    /// [`Folder::new_alternates`]; 0 for none. Looked up once per group
    /// while the memo lasts; valid until it starts over.
    #[inline(always)]
    pub(super) fn alternates_handle(&mut self, group: u32) -> u32 {
        let g = group as usize;
        if g == 0 {
            return 0;
        }
        match self.groups.get(g) {
            Some(&at) if at != 0 => at,
            _ => self.learn_alternates(g),
        }
    }

    /// The word ids a word may also be found by, from its alternates'
    /// handle.
    #[inline(always)]
    pub(super) fn alternates_at(&self, at: u32) -> &[u32] {
        if at == 0 {
            return &[];
        }
        let at = at as usize - 1;
        let n = self.alts[at] as usize;
        &self.alts[at + 2..at + 2 + n]
    }

    /// [`Folder::alternates_at`] the first time this record asks for
    /// them; nothing when the record asked for the group before (one
    /// look-up, in the group's own run).
    #[inline(always)]
    pub(super) fn new_alternates(&mut self, at: u32) -> &[u32] {
        if at == 0 {
            return &[];
        }
        let asked = &mut self.alts[at as usize];
        if *asked == self.record {
            return &[];
        }
        *asked = self.record;
        self.alternates_at(at)
    }

    /// Looks up the alternates of group `g` (not looked up since the memo
    /// started over): its handle.
    #[inline(never)]
    fn learn_alternates(&mut self, g: usize) -> u32 {
        if g >= self.groups.len() {
            self.groups.resize(g + 1, 0);
        }
        let at = self.alts.len();
        self.alts.extend([0, 0]);
        for &key in variants::alternates(g as u32) {
            let id = self.id(key);
            self.alts.push(id);
        }
        self.alts[at] = (self.alts.len() - at - 2) as u32;
        self.groups[g] = at as u32 + 1;
        self.groups[g]
    }

    /// Starts a record: [`Folder::new_alternates`] gives every group again.
    pub(super) fn start_record(&mut self) {
        self.record = self.record.wrapping_add(1);
        if self.record == 0 {
            // Stamps of 2^32 records ago could match again.
            let mut at = 0;
            while at < self.alts.len() {
                self.alts[at + 1] = 0;
                at += 2 + self.alts[at] as usize;
            }
            self.record = 1;
        }
    }

    /// Starts the memo over when full; only between records, so the ids a
    /// record's index uses stay valid through it. Whether it did.
    pub(super) fn reset_if_full(&mut self) -> bool {
        if self.words.len < MEMO_WORDS && self.ids.len() < MEMO_WORDS {
            return false;
        }
        self.words.clear();
        self.ids.clear(usize::MAX);
        self.groups.fill(0);
        self.alts.clear();
        true
    }

    /// Folds `word` (`ascii`: it is all ASCII): its index key, id and word
    /// classes.
    #[inline(always)]
    pub(super) fn fold(&mut self, word: &str, ascii: bool) -> WordInfo {
        if ascii {
            self.fold_ascii(word, &ascii_word(word.as_bytes()))
        } else {
            self.fold_other(word)
        }
    }

    /// [`Folder::fold`], packed.
    #[inline(always)]
    pub(super) fn fold_packed(&mut self, word: &[u8], ascii: bool) -> Packed {
        if ascii {
            return self.fold_ascii_packed(word, ascii_word(word).hash);
        }
        Packed(self.fold_other(&String::from_utf8_lossy(word)).pack())
    }

    /// The ASCII `word` whose case-folded hash is `hash`, packed.
    #[inline(always)]
    pub(super) fn fold_ascii_packed(&mut self, word: &[u8], hash: u64) -> Packed {
        match self.words.get_packed(hash) {
            Some(p) => p,
            None => Packed(self.learn_ascii(word, hash).pack()),
        }
    }

    /// Folds the ASCII `word` whose one-pass scan is `a`: hashed case-folded
    /// in place, copied only when the memo has not seen it.
    #[inline(always)]
    pub(super) fn fold_ascii(&mut self, word: &str, a: &AsciiWord) -> WordInfo {
        match self.words.get(a.hash) {
            Some(info) => info,
            None => self.learn_ascii(word.as_bytes(), a.hash),
        }
    }

    /// An ASCII word the memo has not seen.
    #[cold]
    #[inline(never)]
    pub(super) fn learn_ascii(&mut self, word: &[u8], surface: u64) -> WordInfo {
        let word = &String::from_utf8_lossy(word);
        // Numbers folded exactly as `fold_into` folds them (separators and
        // suffixes dropped); the memo only saves doing it again.
        let info = if fold_into(&mut self.buf, word) {
            WordInfo {
                // A rank in digits ("2nd largest").
                qualifier: qualifiers::is_qualifier(word),
                ..self.number()
            }
        } else {
            self.word()
        };
        self.words.insert(surface, info);
        info
    }

    /// A word with non-ASCII characters: folded into `buf` first.
    #[inline(never)]
    pub(super) fn fold_other(&mut self, word: &str) -> WordInfo {
        if fold_into(&mut self.buf, word) {
            return self.number();
        }
        let surface = term_hash(&self.buf);
        if let Some(info) = self.words.get(surface) {
            return info;
        }
        let info = self.word();
        self.words.insert(surface, info);
        info
    }

    /// The folded number in `buf`.
    pub(super) fn number(&mut self) -> WordInfo {
        let key = term_hash(&self.buf);
        WordInfo {
            id: self.id(key),
            number: true,
            ..WordInfo::default()
        }
    }

    /// The case-folded word in `buf`: stem and classes.
    pub(super) fn word(&mut self) -> WordInfo {
        let buf = &self.buf;
        let (stop, filler, negation) = (is_stop(buf), is_filler(buf), is_negation(buf));
        let initials = dotted_initials(buf);
        let key = if negation && (buf.ends_with("n't") || buf == "cannot") {
            // "didn't" says what "did not" says: the same negation, so
            // "did not report" finds "didn't report" side by side.
            term_hash("not")
        } else if let Some(letters) = &initials {
            // "U.S." is "US", "p.m." "pm".
            term_hash(&self.stemmer.stem(letters))
        } else {
            term_hash(&self.stemmer.stem(buf))
        };
        let variants = if stop || filler || negation {
            0
        } else {
            variants::group(key)
        };
        let dotted = buf.contains('.') && initials.is_none();
        let spelled = spelled_other(buf, false)
            .and_then(|d| SPELLED.iter().position(|&(_, digits)| digits == d))
            .map_or(0, |i| i as u8 + 1);
        let spelled = if spelled != 0 {
            spelled
        } else if RUN_OPENERS.contains(&buf.as_str()) {
            OPENER
        } else if phrases::is_phrase_verb(buf) {
            VERB
        } else {
            0
        };
        // Of the folded form: an ASCII word is filed under its lower case,
        // which the opposites' tables read case aside.
        let opposing = opposing(buf.as_bytes());
        let direction = direction(buf.as_bytes()).is_some() || matches!(&**buf, "higher" | "lower");
        let qualifier = qualifiers::is_qualifier(buf);
        WordInfo {
            id: self.id(key),
            number: false,
            stop,
            filler,
            negation,
            dotted,
            spelled,
            variants,
            opposing,
            direction,
            qualifier,
        }
    }

    pub(super) fn id(&mut self, key: u64) -> u32 {
        if let Some(id) = self.ids.get(key) {
            return id;
        }
        // Fewer than MEMO_WORDS plus one record's words: fits.
        let id = self.ids.len() as u32;
        *self.ids.entry(key) = id;
        id
    }
}

/// Whether `word` (case aside) is a word of a set of opposites, a
/// period's noun, or the first word of a time bound: what
/// [`opposites::place_of`], [`opposites::period_of`] and
/// [`opposites::is_time_bound`] may find.
fn opposing(word: &[u8]) -> bool {
    opposites::place_of(word).is_some()
        || opposites::is_time_bound(word)
        || opposites::is_period_noun(word)
}

/// The letters of single letters joined by dots ("u.s", "p.m", "j.r"),
/// read as one word without its dots; `None` for any other word.
fn dotted_initials(word: &str) -> Option<String> {
    let b = word.as_bytes();
    let initials = b.len() >= 3
        && b.len() % 2 == 1
        && b.iter().enumerate().all(|(i, &c)| {
            if i % 2 == 0 {
                c.is_ascii_alphabetic()
            } else {
                c == b'.'
            }
        });
    initials.then(|| b.iter().step_by(2).map(|&c| char::from(c)).collect())
}

// The packed memo slot keeps a spelled number's index + 1 in 6 bits, below
// the code of a word that opens a run.
const _: () = assert!(SPELLED.len() < VERB as usize && VERB < OPENER);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_fields_read_as_unpacked() {
        for bits in 0u32..64 {
            let info = WordInfo {
                id: 0xdead_beef ^ bits,
                number: bits & 1 != 0,
                stop: bits & 2 != 0,
                filler: bits & 4 != 0,
                negation: bits & 8 != 0,
                dotted: bits & 16 != 0,
                spelled: match bits {
                    63 => OPENER,
                    62 => VERB,
                    _ => (bits % 7) as u8,
                },
                variants: 0x1_ffff - bits,
                opposing: bits & 32 != 0,
                direction: bits & 1 == 0,
                qualifier: bits & 2 == 0,
            };
            let p = Packed(info.pack());
            assert_eq!(p.id(), info.id);
            assert_eq!(p.key(), info.key());
            assert_eq!(p.number(), info.number);
            assert_eq!(p.function(), !info.number && (info.stop || info.filler));
            assert_eq!(p.negation(), info.negation);
            assert_eq!(p.dotted(), info.dotted);
            assert_eq!((p.stop(), p.filler()), (info.stop, info.filler));
            assert_eq!(p.spelled(), spelled_digits(info.spelled));
            assert_eq!(p.is_spelled(), info.spelled != 0);
            assert_eq!(
                p.spelled().is_some(),
                info.spelled != 0 && info.spelled != OPENER && info.spelled != VERB
            );
            assert_eq!(p.opens_phrase(), info.spelled == VERB);
            // Read in a phrase's place: the same word, marked.
            let q = p.in_phrase();
            assert!(!p.read_in_phrase() && q.read_in_phrase() && q.direction());
            assert_eq!((q.id(), q.variants()), (p.id(), p.variants()));
            assert_eq!(p.variants(), info.variants);
            assert_eq!(p.opposing(), info.opposing);
            assert_eq!(p.direction(), info.direction);
            assert_eq!(p.qualifier(), info.qualifier);
            let back = WordInfo::unpack(info.pack());
            assert_eq!(format!("{back:?}"), format!("{info:?}"));
        }
    }
}
