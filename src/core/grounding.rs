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
//! hashes, so the hot path allocates per record, per source and per reported
//! term, not per token. The only state kept between calls is a bounded
//! per-thread memo of a pure function (word → stem and word classes), which
//! changes speed, never a result.

use std::cell::RefCell;
use std::ops::Range;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

use super::citation::Citation;
use super::settings::GroundingSettings;
use super::terms::{AsciiWord, Table, ascii_word, ascii_words, term_hash};

/// Most terms named per unsupported claim (finding detail and envelope).
pub const MAX_TERMS: usize = 5;

/// One claim of the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Byte range into the answer, markers included.
    pub span: Range<usize>,
    /// Every marker in the claim, in order of appearance (resolvable or not).
    pub markers: Vec<u32>,
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
    pub sources: Vec<u32>,
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

// ---------------------------------------------------------------------------
// Words
// ---------------------------------------------------------------------------

/// Calls `f(word, byte_offset, ascii)` for every word of `text` (UAX #29
/// words with at least one letter or digit). ASCII runs take a scanner that
/// follows the same rules for ASCII, 64 bytes at a time
/// ([`ascii_words`]); anything else goes through `unicode-segmentation`.
/// Whitespace never joins words, so the split at whitespace is exact.
fn for_each_word(text: &str, steps: &mut usize, mut f: impl FnMut(&str, usize, bool)) {
    // Each byte is visited a bounded number of times; count them once here.
    *steps += text.len();
    if text.is_ascii() {
        ascii_words(text, 0, &mut |w, at| f(w, at, true));
        return;
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        let mut ascii = true;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            ascii &= bytes[i].is_ascii();
            i += 1;
        }
        if start == i {
            break;
        }
        // Both ends are ASCII whitespace or the text's ends: char boundaries.
        let chunk = &text[start..i];
        if ascii {
            ascii_words(chunk, start, &mut |w, at| f(w, at, true));
        } else {
            for (off, w) in chunk.unicode_word_indices() {
                f(w, start + off, w.is_ascii());
            }
        }
    }
}

/// English stop words (case-folded, sorted): little checkable content, so
/// they weigh `function_word_weight` (default low, not zero: an answer that
/// wraps a fact in words its source never uses is less grounded).
/// Negations are deliberately absent: see [`NEGATIONS`].
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "it's",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Conversational fillers (sorted): never a term, whatever the weights.
const FILLERS: &[&str] = &[
    "absolutely",
    "actually",
    "ah",
    "certainly",
    "definitely",
    "hmm",
    "indeed",
    "lol",
    "oh",
    "ok",
    "okay",
    "really",
    "sure",
    "um",
    "well",
    "wow",
    "yeah",
    "yes",
];

/// Negations count as content words, weighted like entities: a claim that
/// says "not" where its source does not is the cheapest contradiction to see.
const NEGATIONS: &[&str] = &["never", "no", "nor", "not", "none", "nothing", "without"];

fn is_stop(lower: &str) -> bool {
    STOP_WORDS.binary_search(&lower).is_ok()
}

fn is_filler(lower: &str) -> bool {
    FILLERS.binary_search(&lower).is_ok()
}

fn is_negation(lower: &str) -> bool {
    NEGATIONS.binary_search(&lower).is_ok() || lower.ends_with("n't")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TermClass {
    Number,
    Entity,
    Word,
    Function,
}

/// Case folding into a reused buffer. Numbers drop their digit-group
/// separators so `1,000` and `1000` agree, and an ordinal or plural suffix
/// after the last digit so `7th` and `7`, `1960s` and `1960` agree.
fn fold_into(buf: &mut String, word: &str) -> bool {
    buf.clear();
    let mut number = false;
    if word.is_ascii() {
        buf.push_str(word);
        buf.make_ascii_lowercase();
        number = word.bytes().any(|b| b.is_ascii_digit());
    } else {
        for c in word.chars() {
            number |= c.is_numeric();
            buf.extend(c.to_lowercase());
        }
    }
    if number {
        buf.retain(|c| c != ',' && c != '\'');
        for suffix in ["st", "nd", "rd", "th", "s"] {
            if let Some(rest) = buf.strip_suffix(suffix)
                && rest.ends_with(|c: char| c.is_ascii_digit())
            {
                buf.truncate(rest.len());
                break;
            }
        }
    }
    number
}

/// Small numbers in words and in digits (sorted by word): a claim's "2" is
/// found in a source that says "two", and the other way round.
const SPELLED: &[(&str, &str)] = &[
    ("eight", "8"),
    ("eighteen", "18"),
    ("eighty", "80"),
    ("eleven", "11"),
    ("fifteen", "15"),
    ("fifty", "50"),
    ("five", "5"),
    ("forty", "40"),
    ("four", "4"),
    ("fourteen", "14"),
    ("hundred", "100"),
    ("nine", "9"),
    ("nineteen", "19"),
    ("ninety", "90"),
    ("one", "1"),
    ("seven", "7"),
    ("seventeen", "17"),
    ("seventy", "70"),
    ("six", "6"),
    ("sixteen", "16"),
    ("sixty", "60"),
    ("ten", "10"),
    ("thirteen", "13"),
    ("thirty", "30"),
    ("thousand", "1000"),
    ("three", "3"),
    ("twelve", "12"),
    ("twenty", "20"),
    ("two", "2"),
    ("zero", "0"),
];

/// The other spelling of `w` (as written in the claim) when it is a small
/// number: its word for digits, its digits for a word. Digits are looked up
/// for missing numbers only; words once per distinct word (the memo).
fn spelled_other(w: &str, number: bool) -> Option<&'static str> {
    if number {
        if w.len() > 4 {
            return None;
        }
        return SPELLED
            .iter()
            .find_map(|&(word, digits)| (w == digits).then_some(word));
    }
    let b = w.as_bytes();
    if !(3..=9).contains(&b.len()) || !b.iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let mut lower = [0u8; 9];
    for (l, c) in lower.iter_mut().zip(b) {
        *l = c.to_ascii_lowercase();
    }
    let lower = &lower[..b.len()];
    SPELLED
        .binary_search_by(|(word, _)| word.as_bytes().cmp(lower))
        .ok()
        .map(|i| SPELLED[i].1)
}

/// What a case-folded word is, looked up once per distinct word.
#[derive(Debug, Clone, Copy, Default)]
struct WordInfo {
    /// What the source index knows it by: the stem's hash for a word, the
    /// folded number's hash for a number.
    key: u64,
    /// The key's dense number in this thread's [`Folder`]: where the source
    /// index marks it (an array slot, not a hash probe).
    id: u32,
    number: bool,
    stop: bool,
    filler: bool,
    negation: bool,
    /// Letters joined by `.` ("state.Aulani"): two sentences run together
    /// without a space, or an abbreviation; sources also index the parts.
    dotted: bool,
    /// The digits of a small number written as a word ("two": "2"), as
    /// 1 + its index in [`SPELLED`]; 0 for none (one byte keeps the memo's
    /// slots small).
    spelled: u8,
}

impl WordInfo {
    /// The digits of a small number written as a word ("two": "2").
    fn spelled(&self) -> Option<&'static str> {
        let i = usize::from(self.spelled.checked_sub(1)?);
        SPELLED.get(i).map(|&(_, digits)| digits)
    }
}

/// Most words remembered per thread by [`Folder`]'s memo; the memo starts
/// over (between records) when full, so memory stays bounded.
const MEMO_WORDS: usize = 1 << 16;

/// Slots a per-record table keeps between records; a bigger one (a record
/// with huge sources) is given back.
const KEEP_SLOTS: usize = 1 << 16;

/// Case folding, the stemmer and the thread's word memo.
struct Folder {
    stemmer: Stemmer,
    buf: String,
    /// Memo of a pure function (case-folded word, by hash → [`WordInfo`]),
    /// kept across records: vocabularies repeat, and the Snowball stemmer
    /// is the costliest step per word. It changes only speed, never a result.
    words: Table<WordInfo>,
    /// Index key → dense id.
    ids: Table<u32>,
}

impl Folder {
    fn new() -> Self {
        Folder {
            stemmer: Stemmer::create(Algorithm::English),
            buf: String::with_capacity(64),
            words: Table::with_capacity(1024),
            ids: Table::with_capacity(1024),
        }
    }

    /// Starts the memo over when full; only between records, so the ids a
    /// record's index uses stay valid through it. Whether it did.
    fn reset_if_full(&mut self) -> bool {
        if self.words.len() < MEMO_WORDS && self.ids.len() < MEMO_WORDS {
            return false;
        }
        self.words.clear(usize::MAX);
        self.ids.clear(usize::MAX);
        true
    }

    /// Folds `word` (`ascii`: it is all ASCII): its index key, id and word
    /// classes.
    #[inline(always)]
    fn fold(&mut self, word: &str, ascii: bool) -> WordInfo {
        if ascii {
            self.fold_ascii(word, &ascii_word(word.as_bytes()))
        } else {
            self.fold_other(word)
        }
    }

    /// Folds the ASCII `word` whose one-pass scan is `a`: hashed case-folded
    /// in place, copied only when the memo has not seen it.
    #[inline(always)]
    fn fold_ascii(&mut self, word: &str, a: &AsciiWord) -> WordInfo {
        match self.words.get(a.hash) {
            Some(info) => info,
            None => self.learn_ascii(word, a.hash),
        }
    }

    /// An ASCII word the memo has not seen.
    #[cold]
    #[inline(never)]
    fn learn_ascii(&mut self, word: &str, surface: u64) -> WordInfo {
        // Numbers folded exactly as `fold_into` folds them (separators and
        // suffixes dropped); the memo only saves doing it again.
        let info = if fold_into(&mut self.buf, word) {
            self.number()
        } else {
            self.word()
        };
        *self.words.entry(surface) = info;
        info
    }

    /// A word with non-ASCII characters: folded into `buf` first.
    #[inline(never)]
    fn fold_other(&mut self, word: &str) -> WordInfo {
        if fold_into(&mut self.buf, word) {
            return self.number();
        }
        let surface = term_hash(&self.buf);
        if let Some(info) = self.words.get(surface) {
            return info;
        }
        let info = self.word();
        *self.words.entry(surface) = info;
        info
    }

    /// The folded number in `buf`.
    fn number(&mut self) -> WordInfo {
        let key = term_hash(&self.buf);
        WordInfo {
            key,
            id: self.id(key),
            number: true,
            ..WordInfo::default()
        }
    }

    /// The case-folded word in `buf`: stem and classes.
    fn word(&mut self) -> WordInfo {
        let buf = &self.buf;
        let key = term_hash(&self.stemmer.stem(buf));
        let (stop, filler, negation) = (is_stop(buf), is_filler(buf), is_negation(buf));
        let dotted = buf.contains('.');
        let spelled = spelled_other(buf, false)
            .and_then(|d| SPELLED.iter().position(|&(_, digits)| digits == d))
            .map_or(0, |i| i as u8 + 1);
        WordInfo {
            key,
            id: self.id(key),
            number: false,
            stop,
            filler,
            negation,
            dotted,
            spelled,
        }
    }

    fn id(&mut self, key: u64) -> u32 {
        if let Some(id) = self.ids.get(key) {
            return id;
        }
        // Fewer than MEMO_WORDS plus one record's words: fits.
        let id = self.ids.len() as u32;
        *self.ids.entry(key) = id;
        id
    }
}

/// Which of a record's sources hold each key (term stem, number, or pair of
/// consecutive content terms): one lookup per key whatever the number of
/// sources a claim cites. Sources are bits of a mask, 64 per bank. Kept per
/// thread and emptied per record without a pass over its memory (stamps).
///
/// Also which source sentences hold each content term (numbers, non-stop
/// words): sentences are numbered across the indexed sources and are bits of
/// a mask modulo 64, so past 64 sentences two of them can share a bit, which
/// only makes the spread rule (see [`spread`]) more lenient, never stricter.
struct SourceIndex {
    /// By word id: which of the first 64 sources hold it and which
    /// sentences of any source, valid when its stamp is the record's.
    marks: Vec<Mark>,
    stamp: u32,
    /// By bank: the pairs, and (past the first bank, whose terms are in
    /// `marks`) the terms, each with the mask of the bank's sources holding it.
    banks: Vec<Table<u64>>,
    /// Sources already indexed for this record.
    built: Vec<bool>,
    /// Sentence bits each source's sentences use (0 until indexed).
    source_sentences: Vec<u64>,
    next_sentence: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    stamp: u32,
    mask: u64,
    sentences: u64,
}

impl SourceIndex {
    fn new() -> Self {
        SourceIndex {
            marks: Vec::new(),
            stamp: 0,
            banks: Vec::new(),
            built: Vec::new(),
            source_sentences: Vec::new(),
            next_sentence: 0,
        }
    }

    /// Empties the index for a record with `sources` sources; `ids_reset`:
    /// the folder's ids started over, so old marks mean nothing.
    fn start(&mut self, sources: usize, ids_reset: bool) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 || ids_reset {
            self.marks.clear();
            self.stamp = 1;
        }
        for bank in &mut self.banks {
            bank.clear(KEEP_SLOTS);
        }
        self.built.clear();
        self.built.resize(sources, false);
        self.source_sentences.clear();
        self.source_sentences.resize(sources, 0);
        self.next_sentence = 0;
    }

    /// Adds source `idx` (once): every term by stem (numbers as written), and
    /// every pair of consecutive content terms (stop words skipped) by stem.
    /// A word of letters joined by `.` is also indexed part by part.
    fn add(&mut self, idx: usize, text: &str, folder: &mut Folder, steps: &mut usize) {
        if self.built[idx] {
            return;
        }
        self.built[idx] = true;
        let bank = idx / 64;
        let bit = 1u64 << (idx % 64);
        while self.banks.len() <= bank {
            self.banks.push(Table::with_capacity(256));
        }
        let (marks, stamp, table) = (&mut self.marks, self.stamp, &mut self.banks[bank]);
        let first = self.next_sentence;
        let mut sentence = first;
        let mut prev: Option<u64> = None;
        // One word: its key, its pairs with the previous content term (and
        // with `alt`, a dotted word before its parts), and its sentence; the
        // key when it is a dotted word to split.
        let mut one = |w: &str, ascii: bool, sentence: u32, alt: Option<u64>| -> Option<u64> {
            let info = folder.fold(w, ascii);
            let id = info.id as usize;
            if id >= marks.len() {
                marks.resize(id + 1, Mark::default());
            }
            let m = &mut marks[id];
            if m.stamp != stamp {
                *m = Mark {
                    stamp,
                    ..Mark::default()
                };
            }
            // Stems only: equal surfaces have equal stems.
            if bank == 0 {
                m.mask |= bit;
            } else {
                *table.entry(info.key) |= bit;
            }
            if !info.number && (info.stop || info.filler) {
                return None;
            }
            for p in prev.into_iter().chain(alt) {
                *table.entry(pair_hash(p, info.key)) |= bit;
            }
            prev = Some(info.key);
            m.sentences |= 1u64 << (sentence % 64);
            (!info.number && info.dotted).then_some(info.key)
        };
        let bytes = text.as_bytes();
        let mut last_end = 0;
        let mut split_bytes = 0;
        let mut alt = None;
        for_each_word(text, steps, |w, off, ascii| {
            // A sentence ends at `.`, `!` or `?` before a word that starts
            // with a capital or a digit.
            if off > last_end
                && starts_sentence(w)
                && memchr::memchr3(b'.', b'!', b'?', &bytes[last_end..off]).is_some()
            {
                sentence += 1;
            }
            last_end = off + w.len();
            if let Some(whole) = one(w, ascii, sentence, alt.take()) {
                // "Hawaii.Aulani": two sentences run together, a capital
                // after a part of two letters or more starts the next one
                // ("D.C" and "e.g" do not). The next word pairs with the
                // whole word ("D.C today") and with the last part.
                split_bytes += w.len();
                let mut prev_len = 0;
                for part in w.split('.').filter(|p| !p.is_empty()) {
                    if prev_len >= 2 && starts_sentence(part) {
                        sentence += 1;
                    }
                    prev_len = part.len();
                    one(part, ascii || part.is_ascii(), sentence, None);
                }
                alt = Some(whole);
            }
        });
        *steps += split_bytes;
        let used = sentence - first + 1;
        self.source_sentences[idx] = if used >= 64 {
            u64::MAX
        } else {
            ((1u64 << used) - 1).rotate_left(first % 64)
        };
        self.next_sentence = sentence + 1;
    }

    /// Whether any of the cited sources (`(bank, mask)` pairs, by bank)
    /// holds the term.
    #[inline(always)]
    fn holds(&self, term: &WordInfo, cited: &[(usize, u64)]) -> bool {
        let (first, rest) = match cited.split_first() {
            Some((&(0, mask), rest)) => (mask, rest),
            _ => (0, cited),
        };
        let marked = first != 0
            && self
                .marks
                .get(term.id as usize)
                .is_some_and(|m| m.stamp == self.stamp && m.mask & first != 0);
        marked
            || rest.iter().any(|&(bank, mask)| {
                self.banks[bank]
                    .get(term.key)
                    .is_some_and(|m| m & mask != 0)
            })
    }

    /// The sentence bits of the indexed sources that hold content term `term`.
    fn sentences_of(&self, term: &WordInfo) -> u64 {
        self.marks
            .get(term.id as usize)
            .filter(|m| m.stamp == self.stamp)
            .map_or(0, |m| m.sentences)
    }

    /// Whether any of the cited sources holds the pair `key`.
    fn holds_pair(&self, key: u64, cited: &[(usize, u64)]) -> bool {
        cited
            .iter()
            .any(|&(bank, mask)| self.banks[bank].get(key).is_some_and(|m| m & mask != 0))
    }
}

/// A thread's grounding state: the word memo and the source index's memory.
struct Scratch {
    folder: Folder,
    index: SourceIndex,
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            folder: Folder::new(),
            index: SourceIndex::new(),
        }
    }
}

thread_local! {
    /// Kept across records: the memo pays off over a stream, and the index
    /// tables are reused instead of allocated per record.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

/// Whether `w` can open a sentence: a capital letter or a digit first.
fn starts_sentence(w: &str) -> bool {
    match w.as_bytes().first() {
        Some(b) if b.is_ascii() => b.is_ascii_uppercase() || b.is_ascii_digit(),
        Some(_) => w.chars().next().is_some_and(|c| c.is_uppercase()),
        None => false,
    }
}

/// Weight of the found content terms left outside the claim's main
/// sentences: a claim stitched together from words of different sentences
/// ("Stanford University is located in Chestnut Hill" from a source that
/// says each in its own sentence). A claim may draw on one sentence per
/// cited source (`allowed`): the sentence holding the most uncovered weight
/// is taken, `allowed` times. Marks the terms left over `apart`.
fn spread(terms: &mut [Term], allowed: usize) -> f64 {
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

/// Key of an ordered pair of terms, distinct from any single term's key.
fn pair_hash(a: u64, b: u64) -> u64 {
    (a.rotate_left(23) ^ b ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0x517c_c1b7_2722_0a95)
}

// ---------------------------------------------------------------------------
// Claims
// ---------------------------------------------------------------------------

/// Splits `answer` into claim spans: sentences end after `.`, `!`, `?` (or
/// their full-width forms) followed by whitespace, and at every newline; the
/// markers (and spaces) right after a sentence's end belong to it. Lines
/// inside a code fence (and the fence lines) are not claims.
fn claim_spans(answer: &str, citations: &[Citation], steps: &mut usize) -> Vec<Range<usize>> {
    let b = answer.as_bytes();
    let mut spans = Vec::new();
    let mut in_fence = false;
    let mut cite = 0; // next citation not yet passed
    let mut line_start = 0;
    while line_start < b.len() {
        let line_end = memchr::memchr(b'\n', &b[line_start..]).map_or(b.len(), |p| line_start + p);
        *steps += line_end - line_start + 1;
        let line = &answer[line_start..line_end];
        if line.trim_start_matches([' ', '\t']).starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence {
            let mut start = line_start;
            let mut i = line_start;
            let ascii = line.is_ascii();
            while i < line_end {
                if ascii {
                    // Only `.`, `!`, `?` can end an ASCII sentence: jump to them.
                    match memchr::memchr3(b'.', b'!', b'?', &b[i..line_end]) {
                        Some(p) => i += p,
                        None => break,
                    }
                }
                let (end_len, is_end) = sentence_end(b, i, line_end);
                if !is_end {
                    i += 1;
                    continue;
                }
                let mut end = i + end_len;
                // Attach the markers that follow the sentence end.
                loop {
                    let mut j = end;
                    while j < line_end && (b[j] == b' ' || b[j] == b'\t') {
                        j += 1;
                    }
                    while cite < citations.len() && citations[cite].span.start < j {
                        cite += 1;
                    }
                    match citations.get(cite) {
                        Some(c) if c.span.start == j => {
                            end = c.span.end;
                            cite += 1;
                        }
                        _ => break,
                    }
                }
                push_span(answer, &mut spans, start..end);
                start = end;
                i = end.max(i + 1);
            }
            push_span(answer, &mut spans, start..line_end);
        }
        line_start = line_end + 1;
    }
    spans
}

/// Whether a sentence ends at `i`: terminal punctuation followed by
/// whitespace, a marker, a closing quote/bracket, or the end of the line.
fn sentence_end(b: &[u8], i: usize, line_end: usize) -> (usize, bool) {
    // An initial ("H. Bruce") is not a sentence end.
    if b[i] == b'.'
        && i >= 1
        && b[i - 1].is_ascii_uppercase()
        && (i == 1 || !b[i - 2].is_ascii_alphanumeric())
    {
        return (0, false);
    }
    let len = match b[i] {
        b'.' | b'!' | b'?' => 1,
        // 。！？ (U+3002, U+FF01, U+FF1F)
        0xE3 if b[i..line_end].starts_with("。".as_bytes()) => 3,
        0xEF if b[i..line_end].starts_with("！".as_bytes())
            || b[i..line_end].starts_with("？".as_bytes()) =>
        {
            3
        }
        _ => return (0, false),
    };
    let mut j = i + len;
    while j < line_end && matches!(b[j], b'"' | b'\'' | b')') {
        j += 1;
    }
    let next = b.get(j).copied();
    let ends = j >= line_end
        || len == 3
        || matches!(next, Some(b' ' | b'\t' | b'\r'))
        || (next == Some(b'[') && b.get(j + 1) == Some(&b'^'));
    (j - i, ends)
}

fn push_span(answer: &str, spans: &mut Vec<Range<usize>>, r: Range<usize>) {
    // Trim surrounding whitespace; a span with no word character is not a claim.
    let s = &answer[r.clone()];
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    let r = r.start + lead..r.end - trail;
    if r.start < r.end && answer[r.clone()].chars().any(char::is_alphanumeric) {
        spans.push(r);
    }
}

// ---------------------------------------------------------------------------
// Scoring
// ---------------------------------------------------------------------------

/// One claim term, by weight class; kept only long enough to score.
struct Term {
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

fn analyze_with(
    answer: &str,
    citations: &[Citation],
    sources: &[&str],
    settings: &GroundingSettings,
    steps: &mut usize,
    scratch: &mut Scratch,
) -> Grounding {
    let spans = claim_spans(answer, citations, steps);
    let Scratch { folder, index } = scratch;
    let ids_reset = folder.reset_if_full();
    index.start(sources.len(), ids_reset);
    let mut banks: Vec<(usize, u64)> = Vec::new();
    let mut claims = Vec::with_capacity(spans.len());
    let mut terms: Vec<Term> = Vec::new();
    // (start in the answer, length, all ASCII) of each word of a claim.
    let mut words: Vec<(usize, usize, bool)> = Vec::new();
    let mut cite = 0;
    let mut score: Option<f64> = None;
    let mut tallies: Vec<Option<Tally>> = Vec::with_capacity(spans.len());

    for span in spans {
        // Markers inside the claim (citations are in order of appearance).
        while cite < citations.len() && citations[cite].span.start < span.start {
            cite += 1;
        }
        let first = cite;
        while cite < citations.len() && citations[cite].span.end <= span.end {
            cite += 1;
        }
        let inside = &citations[first..cite];
        let markers: Vec<u32> = inside.iter().map(|c| c.marker).collect();
        let mut cited: Vec<u32> = inside
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
            let mut found = index.holds(&hit, &banks);
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
                if index.holds(&o, &banks) {
                    hit = o;
                    found = true;
                }
            }
            let key = hit.key;
            if class != TermClass::Function {
                if let Some(p) = prev_key {
                    pairs.1 += 1;
                    // A pair can only be in a source whose terms both are.
                    if found && prev_found && index.holds_pair(pair_hash(p, key), &banks) {
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
            spread(&mut terms, cited.len())
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
    for (claim, tally) in claims.iter_mut().zip(&tallies) {
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
struct Tally {
    hit: f64,
    missing: f64,
    number_missing: bool,
    entity_missing: bool,
    pairs_found: f64,
    pairs: f64,
    /// Weight of the found terms apart from the claim's main sentences.
    apart: f64,
}

/// `sentence 3 cites [^1]: support 0.31; not in source 1: "emea", "apac"`.
pub fn unsupported_detail(index: usize, claim: &Claim) -> String {
    // Pushed piece by piece with `itoa`: `write!` cost more than the whole
    // scoring of a many-marker claim.
    let mut num = itoa::Buffer::new();
    let mut d = String::with_capacity(64 + 6 * claim.markers.len() + 32 * MAX_TERMS);
    d.push_str("sentence ");
    d.push_str(num.format(index + 1));
    d.push_str(" cites ");
    for &m in &claim.markers {
        d.push_str("[^");
        d.push_str(num.format(m));
        d.push(']');
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
    // long answer cannot blow the retry request up (issue 9).
    const LISTED: usize = 20;
    let mut p = String::new();
    let mut listed = 0usize;
    let mut more = 0usize;
    for (i, c) in g.claims.iter().enumerate() {
        let flagged = c.support.is_some_and(|s| s < min_support)
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
        if c.support.is_some_and(|s| s < min_support) {
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
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end]).into()
}

/// The findings of one answer with their configured actions, in claim order.
pub fn findings(
    g: &Grounding,
    settings: &GroundingSettings,
) -> Vec<(super::types::Finding, super::types::Action)> {
    use super::types::{Finding, FindingKind};
    let mut out = Vec::new();
    for (i, c) in g.claims.iter().enumerate() {
        match c.support {
            Some(s) if s < settings.min_support => out.push((
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::core::citation;

    fn run(answer: &str, sources: &[&str]) -> Grounding {
        let parsed = citation::parse(answer, sources.len());
        analyze(
            answer,
            &parsed.citations,
            sources,
            &GroundingSettings::default(),
        )
    }

    fn texts<'a>(answer: &'a str, g: &Grounding) -> Vec<&'a str> {
        g.claims.iter().map(|c| &answer[c.span.clone()]).collect()
    }

    /// Asserts that the one claim of `answer` is fully supported by `source`.
    fn assert_fully_supported(answer: &str, source: &str) {
        let g = run(answer, &[source]);
        assert_eq!(g.claims[0].support, Some(1.0), "{answer}: {g:?}");
    }

    const NRR: &str =
        "Net revenue retention fell from 118% to 109% as two enterprise accounts downgraded.";

    #[test]
    fn the_sample_claim_is_flagged_with_its_missing_terms() {
        let answer = "Net revenue retention fell from 118% to 109% as two enterprise accounts downgraded[^1]. Mid-market churn rose after the March price change[^2]. Expansion revenue slowed in EMEA while APAC held steady[^1].";
        let g = run(
            answer,
            &[NRR, "mid-market churn rose after the March price change."],
        );
        assert_eq!(g.claims.len(), 3);
        let min = GroundingSettings::default().min_support;
        for c in &g.claims[..2] {
            assert!(
                c.support.unwrap() >= min && c.unsupported_terms.is_empty(),
                "{c:?}"
            );
        }
        let c = &g.claims[2];
        assert!(c.support.unwrap() < min, "{c:?}");
        assert_eq!(&c.unsupported_terms[..2], ["emea", "apac"]);
        assert_eq!(g.score, c.support);
        let d = unsupported_detail(2, c);
        assert!(
            d.starts_with("sentence 3 cites [^1]: support 0.")
                && d.contains("; not in source 1: \"emea\", \"apac\", \"expansion\""),
            "{d}"
        );
        let f = findings(&g, &GroundingSettings::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].0.kind, crate::core::FindingKind::UnsupportedClaim);
    }

    #[test]
    fn a_wrong_number_is_unsupported_even_when_every_word_matches() {
        let g = run(
            "Net revenue retention fell from 118% to 104% as two enterprise accounts downgraded[^1].",
            &[NRR],
        );
        assert_eq!(g.claims[0].support, Some(0.0));
        assert_eq!(g.claims[0].unsupported_terms, ["104"]);
        // The same claim with the right number is fully supported.
        let g = run(
            "Retention fell from 118% to 109% as two enterprise accounts downgraded[^1].",
            &[NRR],
        );
        assert_eq!(g.claims[0].support, Some(1.0));
    }

    #[test]
    fn numbers_match_across_spellings_and_suffixes() {
        assert_fully_supported(
            "The duo earned 2 platinum albums in the 1960s[^1].",
            "The duo earned two platinum albums in the 1960s.",
        );
        assert_fully_supported(
            "It was released on June 7th 2010[^1].",
            "It was released on June 7, 2010.",
        );
        assert_fully_supported("Five accounts churned[^1].", "5 accounts churned.");
        // Sorted by word: `spelled_other` looks words up by binary search.
        assert!(SPELLED.windows(2).all(|p| p[0].0 < p[1].0));
        assert_eq!(spelled_other("Twelve", false), Some("12"));
        assert_eq!(spelled_other("12", true), Some("twelve"));
        assert_eq!(spelled_other("twelfth", false), None);
        // A different number is still a wrong number, whatever the spelling.
        let g = run(
            "The duo earned 3 platinum albums[^1].",
            &["The duo earned two platinum albums."],
        );
        assert_eq!(g.claims[0].support, Some(0.0));
        assert_eq!(g.claims[0].unsupported_terms, ["3"]);
    }

    #[test]
    fn stems_and_case_match() {
        let g = run(
            "Enterprise ACCOUNT downgrades drove retention down[^1].",
            &["Two enterprise accounts downgraded; retention dropped."],
        );
        let c = &g.claims[0];
        // "drove" is the only term the source lacks.
        assert_eq!(c.unsupported_terms, ["drove"]);
        assert!(c.support.unwrap() > 0.5, "{c:?}");
    }

    #[test]
    fn claims_split_at_sentence_ends_with_their_markers() {
        let answer = "First claim.[^1] Second one[^2]! Third without marker?\nFourth line\n\nFifth [^1][^2] here.";
        let g = run(answer, &["a", "b"]);
        assert_eq!(
            texts(answer, &g),
            [
                "First claim.[^1]",
                "Second one[^2]!",
                "Third without marker?",
                "Fourth line",
                "Fifth [^1][^2] here."
            ]
        );
        let markers: Vec<&[u32]> = g.claims.iter().map(|c| &c.markers[..]).collect();
        assert_eq!(markers, [&[1][..], &[2], &[], &[], &[1, 2]]);
        assert_eq!(g.claims[2].support, None);
        assert_eq!(g.claims[4].sources, [1, 2]);
        // Decimal points and abbreviations without a following space do not split.
        let answer = "Margins were 3.5 points higher (e.g.in Q3) than planned[^1].";
        assert_eq!(run(answer, &["x"]).claims.len(), 1);
    }

    #[test]
    fn fenced_code_is_not_a_claim() {
        let answer = "Intro[^1].\n```rust\nlet x = 42; // [^1]\n```\nOutro[^1].";
        let g = run(answer, &["Intro and outro."]);
        assert_eq!(texts(answer, &g), ["Intro[^1].", "Outro[^1]."]);
        assert_eq!(g.score, Some(1.0));
    }

    #[test]
    fn unresolvable_markers_leave_a_claim_uncited() {
        let parsed = citation::parse("Claim about Paris[^3].", 1);
        let settings = GroundingSettings {
            uncited_claim: Some(crate::core::Action::Warn),
            ..Default::default()
        };
        let g = analyze(
            "Claim about Paris[^3].",
            &parsed.citations,
            &["a"],
            &settings,
        );
        assert_eq!(g.claims[0].markers, [3]);
        assert_eq!(g.claims[0].support, None);
        assert_eq!(g.score, None);
        assert_eq!(g.claims[0].checkable_terms, ["paris"]);
    }

    #[test]
    fn uncited_claims_are_reported_only_when_switched_on_and_checkable() {
        let answer = "Revenue grew 12% in EMEA. It was a good quarter. Churn fell[^1].";
        let parsed = citation::parse(answer, 1);
        let mut s = GroundingSettings::default();
        let g = analyze(answer, &parsed.citations, &["Churn fell."], &s);
        assert!(findings(&g, &s).is_empty());
        s.uncited_claim = Some(crate::core::Action::Warn);
        let g = analyze(answer, &parsed.citations, &["Churn fell."], &s);
        let f = findings(&g, &s);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0.kind, crate::core::FindingKind::UncitedClaim);
        assert_eq!(
            f[0].0.detail,
            "sentence 1 has no citation but states \"12\", \"emea\""
        );
    }

    #[test]
    fn entities_past_the_sentence_start_are_held_to_the_cap() {
        let g = run(
            "The report was written by Alice Smith[^1].",
            &["The report was written by the finance team."],
        );
        let c = &g.claims[0];
        assert!(c.support.unwrap() <= GroundingSettings::default().missing_entity_cap);
        assert_eq!(c.unsupported_terms, ["alice", "smith"]);
    }

    #[test]
    fn non_ascii_words_are_segmented() {
        let g = run(
            "Der Umsatz in München stieg[^1].",
            &["In München stieg der Umsatz."],
        );
        assert!(g.claims[0].unsupported_terms.is_empty());
        assert!(g.claims[0].support.unwrap() >= GroundingSettings::default().min_support);
        let g = run("Ventes à Zürich[^1].", &["Ventes à Genève."]);
        assert_eq!(g.claims[0].unsupported_terms, ["zürich"]);
    }

    #[test]
    fn prompt_addendum_lists_claims_and_missing_terms() {
        let answer = "Expansion revenue slowed in EMEA[^1].";
        let g = run(answer, &[NRR]);
        let p = prompt_addendum(answer, &g, 0.6, false).unwrap();
        assert!(
            p.contains("sentence 1: \"Expansion revenue slowed in EMEA[^1].\""),
            "{p}"
        );
        assert!(p.contains("missing: emea, expansion, slowed"), "{p}");
        assert!(p.contains("cite a source that states these terms, or drop the claim"));
        let g = run("Retention fell[^1].", &[NRR]);
        assert_eq!(prompt_addendum("Retention fell[^1].", &g, 0.6, false), None);
    }

    fn steps_for(answer: &str, sources: &[&str]) -> usize {
        let parsed = citation::parse(answer, sources.len());
        let mut steps = 0;
        analyze_counting(
            answer,
            &parsed.citations,
            sources,
            &GroundingSettings::default(),
            &mut steps,
        );
        steps
    }

    #[test]
    fn work_is_linear_on_adversarial_text() {
        let patterns = [
            "a.", "[^1]", ". [^1]", "x'", "1,", "```\n", "é.", "A ", "!?", "\n",
        ];
        for p in patterns {
            let small = p.repeat(1_000);
            let big = p.repeat(16_000);
            let (s, b) = (steps_for(&small, &["a 1 x"]), steps_for(&big, &["a 1 x"]));
            assert!(b <= s * 16 + 1_000, "{p:?}: {s} -> {b} steps");
            assert!(
                b >= big.len() / 4,
                "{p:?}: counted {b} for {} bytes",
                big.len()
            );
        }
        // Sources: dotted words split into parts, sentence ends.
        for p in ["Ab.", "ab.Cd", "Ab. C ", "é.É", "1.", "A. b ", "x.y.Z"] {
            let small = p.repeat(1_000);
            let big = p.repeat(16_000);
            let answer = "Ab Cd x y Z b[^1].";
            let (s, b) = (steps_for(answer, &[&small]), steps_for(answer, &[&big]));
            assert!(b <= s * 16 + 1_000, "source {p:?}: {s} -> {b} steps");
            assert!(
                b >= big.len(),
                "source {p:?}: counted {b} for {} bytes",
                big.len()
            );
        }
    }

    #[test]
    fn a_source_word_of_two_sentences_run_together_is_indexed_by_its_parts() {
        // Sources pasted without a space after the period ("Hawaii.Aulani").
        let source = "He was General Manager of the Disney Aulani Resort in Hawaii.Aulani is a beachside hotel on Oahu.";
        assert_fully_supported("Hawaii[^1]", source);
        assert_fully_supported("Aulani is a beachside hotel[^1].", source);
        // The dotted word itself still matches, and an abbreviation is one sentence.
        assert_fully_supported(
            "He works in Washington, D.C today[^1].",
            "He works in Washington, D.C today.",
        );
    }

    #[test]
    fn capitalised_stop_words_are_stop_words() {
        // "Own" and "The" in a title are not entities: no cap, and no pair
        // the source (which skips stop words in pairs) could not have.
        assert_fully_supported(
            "My Own Worst Enemy[^1]",
            "Lit is best known for their hit song \"My Own Worst Enemy\".",
        );
        assert_fully_supported(
            "The Fantastic The[^1]",
            "Gourley often uses the alias The Fantastic The.",
        );
    }

    const AIRPORTS: &str = "Memphis International Airport is in Shelby County, Tennessee. Southwest Georgia Regional Airport serves Albany, Georgia.";

    #[test]
    fn a_claim_stitched_from_different_sentences_is_penalised() {
        let min = GroundingSettings::default().min_support;
        // Every word is in the source, but "Shelby County" only in the other sentence.
        let g = run(
            "Southwest Georgia Regional Airport serves Shelby County[^1].",
            &[AIRPORTS],
        );
        let c = &g.claims[0];
        assert!(c.unsupported_terms.is_empty(), "{c:?}");
        assert_eq!(c.apart_terms, ["shelby", "county"]);
        assert!(c.support.unwrap() < min, "{c:?}");
        assert_eq!(
            unsupported_detail(0, c),
            format!(
                "sentence 1 cites [^1]: support {:.2}; apart from the rest in source 1: \"shelby\", \"county\"",
                c.support.unwrap()
            )
        );
        let p = prompt_addendum(
            "Southwest Georgia Regional Airport serves Shelby County[^1].",
            &g,
            min,
            false,
        )
        .unwrap();
        assert!(
            p.contains("stated apart from the rest: shelby, county"),
            "{p}"
        );
        // The same words from one sentence: fully supported.
        let g = run(
            "Southwest Georgia Regional Airport serves Albany[^1].",
            &[AIRPORTS],
        );
        assert_eq!(g.claims[0].support, Some(1.0));
        assert!(g.claims[0].apart_terms.is_empty());
        // Switched off, only the pairs still see it.
        let off = GroundingSettings {
            spread_penalty: 0.0,
            ..Default::default()
        };
        let answer = "Southwest Georgia Regional Airport serves Shelby County[^1].";
        let parsed = citation::parse(answer, 1);
        let g = analyze(answer, &parsed.citations, &[AIRPORTS], &off);
        assert!(g.claims[0].support.unwrap() >= min, "{g:?}");
    }

    #[test]
    fn a_claim_may_draw_on_one_sentence_per_cited_source() {
        let sources = [
            "Southwest Georgia Regional Airport serves Albany.",
            "Shelby County lies in Tennessee. Memphis is its seat.",
        ];
        let both = run(
            "Southwest Georgia Regional Airport serves Shelby County[^1][^2].",
            &sources,
        );
        assert!(both.claims[0].apart_terms.is_empty(), "{both:?}");
        // Two sentences of one source are still two sentences.
        let one = run(
            "Southwest Georgia Regional Airport serves Shelby County[^1].",
            &[AIRPORTS],
        );
        assert_eq!(one.claims[0].apart_terms, ["shelby", "county"]);
    }

    #[test]
    fn sentences_end_before_a_capital_or_a_digit_only() {
        // Lower case after the period ("e.g. the", lower-cased text): one sentence.
        let g = run(
            "Churn fell in EMEA[^1].",
            &["revenue rose in emea. churn fell in apac."],
        );
        assert!(g.claims[0].apart_terms.is_empty(), "{g:?}");
        let g = run(
            "Churn fell in EMEA[^1].",
            &["Revenue rose in EMEA. Churn fell in APAC."],
        );
        assert_eq!(g.claims[0].apart_terms, ["emea"]);
    }

    #[test]
    fn only_the_cited_sources_sentences_count() {
        // Source 1 states it in one sentence; source 2 in two. A claim citing
        // only source 2 must not borrow source 1's sentence.
        let answer = "Alpha Beta hosts Gamma Delta[^1]. Alpha Beta hosts Gamma Delta[^2].";
        let g = run(
            answer,
            &[
                "Alpha Beta hosts Gamma Delta.",
                "Alpha Beta hosts events. Gamma Delta is elsewhere.",
            ],
        );
        assert!(g.claims[0].apart_terms.is_empty(), "{g:?}");
        assert_eq!(g.claims[1].apart_terms, ["gamma", "delta"]);
        assert!(g.claims[1].support < g.claims[0].support);
    }

    proptest! {
        #[test]
        fn scores_are_in_range_and_deterministic(
            answer in "(\\PC|[\\[\\]^.!? \n`0-9A-Z])*",
            sources in proptest::collection::vec("(\\PC|[ .0-9A-Z])*", 0..4),
        ) {
            let s: Vec<&str> = sources.iter().map(String::as_str).collect();
            let a = run(&answer, &s);
            let b = run(&answer, &s);
            prop_assert_eq!(&a, &b);
            for c in &a.claims {
                if let Some(v) = c.support {
                    prop_assert!((0.0..=1.0).contains(&v));
                }
                prop_assert!(c.unsupported_terms.len() <= MAX_TERMS);
                prop_assert!(answer.is_char_boundary(c.span.start) && answer.is_char_boundary(c.span.end));
                prop_assert!(c.span.start < c.span.end && c.span.end <= answer.len());
            }
            if let Some(v) = a.score {
                prop_assert!((0.0..=1.0).contains(&v));
            }
        }

        #[test]
        fn claims_never_overlap_and_keep_order(answer in "([a-z]{1,6}|[.!?]|\\[\\^[12]\\]| |\n|```){0,60}") {
            let g = run(&answer, &["a b c", "d e f"]);
            for w in g.claims.windows(2) {
                prop_assert!(w[0].span.end <= w[1].span.start);
            }
        }
    }
}
