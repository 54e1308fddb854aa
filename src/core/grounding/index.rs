//! The source index of one record: which cited sources (and which of their
//! sentences) hold each term and each pair of consecutive content terms.
//! Built per record into memory kept per thread; a source text seen before
//! on the thread is replayed from the thread's [`SourceCache`].

use super::cache::{SourceCache, Summary};
use super::lexicon::{for_each_word, starts_sentence};
use super::memo::{Folder, KEEP_SLOTS, WordInfo};
use crate::core::terms::Table;

/// Which of a record's sources hold each key (term stem, number, or pair of
/// consecutive content terms): one lookup per key whatever the number of
/// sources a claim cites. Sources are bits of a mask, 64 per bank. Kept per
/// thread and emptied per record without a pass over its memory (stamps).
///
/// Also which source sentences hold each content term (numbers, non-stop
/// words): sentences are numbered across the indexed sources and are bits of
/// a mask modulo 64, so past 64 sentences two of them can share a bit, which
/// only makes the spread rule (see [`spread`]) more lenient, never stricter.
pub(super) struct SourceIndex {
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
    pub(super) source_sentences: Vec<u64>,
    next_sentence: u32,
    /// Summaries of source texts seen before (first bank only).
    cache: SourceCache,
    /// The summary of the source being indexed, filed in `cache` after.
    building: Summary,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Mark {
    stamp: u32,
    /// Where the word is in the summary being built (valid once the
    /// source's bit is in `mask`).
    pos: u32,
    mask: u64,
    sentences: u64,
}

impl SourceIndex {
    pub(super) fn new() -> Self {
        SourceIndex {
            marks: Vec::new(),
            stamp: 0,
            banks: Vec::new(),
            built: Vec::new(),
            source_sentences: Vec::new(),
            next_sentence: 0,
            cache: SourceCache::new(),
            building: Summary::default(),
        }
    }

    /// Empties the index for a record with `sources` sources; `ids_reset`:
    /// the folder's ids started over, so old marks mean nothing.
    pub(super) fn start(&mut self, sources: usize, ids_reset: bool) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 || ids_reset {
            self.marks.clear();
            self.stamp = 1;
        }
        if ids_reset {
            self.cache.clear();
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
    pub(super) fn add(&mut self, idx: usize, text: &str, folder: &mut Folder, steps: &mut usize) {
        if self.built[idx] {
            return;
        }
        self.built[idx] = true;
        let bank = idx / 64;
        while self.banks.len() <= bank {
            self.banks.push(Table::with_capacity(256));
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
        let (marks, stamp, table) = (&mut self.marks, self.stamp, &mut self.banks[0]);
        let bit = 1u64 << idx;
        let first = self.next_sentence;
        // Relative sentence bits land where reading would have put them:
        // numbers modulo 64, so a rotation by the first one.
        let turn = first % 64;
        for &(id, local) in &summary.terms {
            let id = id as usize;
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
            m.mask |= bit;
            m.sentences |= local.rotate_left(turn);
        }
        for &p in &summary.pairs {
            *table.entry(p) |= bit;
        }
        *steps += summary.terms.len() + summary.pairs.len();
        let used = summary.sentences;
        self.finish(idx, first, used);
        true
    }

    /// Indexes source `idx` by reading `text`; `RECORD`: also writes its
    /// summary into `building` (first bank only).
    fn read<const RECORD: bool>(
        &mut self,
        idx: usize,
        text: &str,
        folder: &mut Folder,
        steps: &mut usize,
    ) {
        let bank = idx / 64;
        let bit = 1u64 << (idx % 64);
        let (marks, stamp, table) = (&mut self.marks, self.stamp, &mut self.banks[bank]);
        let summary = &mut self.building;
        summary.clear();
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
                if RECORD && m.mask & bit == 0 {
                    m.pos = summary.terms.len() as u32;
                    summary.terms.push((info.id, 0));
                }
                m.mask |= bit;
            } else {
                *table.entry(info.key) |= bit;
            }
            if !info.number && (info.stop || info.filler) {
                return None;
            }
            for p in prev.into_iter().chain(alt) {
                let key = pair_hash(p, info.key);
                let e = table.entry(key);
                if RECORD && *e & bit == 0 {
                    summary.pairs.push(key);
                }
                *e |= bit;
            }
            prev = Some(info.key);
            m.sentences |= 1u64 << (sentence % 64);
            if RECORD {
                summary.terms[m.pos as usize].1 |= 1u64 << ((sentence - first) % 64);
            }
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
        summary.sentences = used;
        self.finish(idx, first, used);
    }

    /// Records that source `idx` spans `used` sentences from `first` on.
    fn finish(&mut self, idx: usize, first: u32, used: u32) {
        self.source_sentences[idx] = if used >= 64 {
            u64::MAX
        } else {
            ((1u64 << used) - 1).rotate_left(first % 64)
        };
        self.next_sentence = first + used;
    }

    /// Sources indexed from the cache on this thread so far.
    #[cfg(test)]
    pub(super) fn cache_hits(&self) -> u64 {
        self.cache.hits
    }

    /// Whether any of the cited sources (`(bank, mask)` pairs, by bank)
    /// holds the term.
    #[inline(always)]
    pub(super) fn holds(&self, term: &WordInfo, cited: &[(usize, u64)]) -> bool {
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
    pub(super) fn sentences_of(&self, term: &WordInfo) -> u64 {
        self.marks
            .get(term.id as usize)
            .filter(|m| m.stamp == self.stamp)
            .map_or(0, |m| m.sentences)
    }

    /// Whether any of the cited sources holds the pair `key`.
    pub(super) fn holds_pair(&self, key: u64, cited: &[(usize, u64)]) -> bool {
        cited
            .iter()
            .any(|&(bank, mask)| self.banks[bank].get(key).is_some_and(|m| m & mask != 0))
    }
}

/// Key of an ordered pair of terms, distinct from any single term's key.
pub(super) fn pair_hash(a: u64, b: u64) -> u64 {
    (a.rotate_left(23) ^ b ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0x517c_c1b7_2722_0a95)
}
