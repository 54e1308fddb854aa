//! The thread's cache of source summaries: what indexing a source text put
//! into a record's [`SourceIndex`](super::index::SourceIndex), kept by the
//! text's hash so a source that comes back (RAG streams re-cite the same
//! chunks) is replayed from its summary instead of being read word by word
//! again.
//!
//! A cache of a pure function: an entry is used only when its stored text
//! equals the source byte for byte, and its word ids are those of the
//! thread's current word memo (the cache is emptied when the memo starts
//! over), so a hit indexes exactly what reading the text would have. It
//! changes speed, never a result. Bounded in entries and in bytes.
//!
//! A text is summarised the second time it is seen, not the first: writing
//! a summary costs a little on top of reading, which a stream of sources
//! that never come back should not pay.

use crate::core::terms::term_hash;

/// Entries, in sets of [`WAYS`]: a new source evicts the least recently
/// used entry of its set, so two recurring sources that hash to one set
/// do not evict each other.
const SLOTS: usize = 512;

/// Entries per set.
const WAYS: usize = 4;

/// Bytes of text and summaries the cache may hold per thread.
const BUDGET: usize = 4 << 20;

/// Longest source text worth keeping (longer ones are indexed every time).
const MAX_TEXT: usize = 64 << 10;

/// Hashes of texts seen once (direct-mapped): the ones worth summarising
/// when they come back.
const SEEN: usize = 4096;

/// What indexing one source text adds to a record's index, with sentence
/// numbers relative to the source's first sentence.
#[derive(Debug, Default)]
pub(super) struct Summary {
    /// Each distinct word id.
    pub(super) terms: Vec<u32>,
    /// (word id, sentence) of each content term, once per sentence, by id
    /// then sentence.
    pub(super) postings: Vec<(u32, u32)>,
    /// Each distinct pair key.
    pub(super) pairs: Vec<u64>,
    /// By sentence: how many negations it holds, with the bit that says it
    /// holds a qualifier (as the index keeps them).
    pub(super) negations: Vec<u16>,
    /// By sentence: where its first word starts.
    pub(super) starts: Vec<u32>,
}

impl Summary {
    pub(super) fn clear(&mut self) {
        self.terms.clear();
        self.postings.clear();
        self.pairs.clear();
        self.negations.clear();
        self.starts.clear();
    }

    fn bytes(&self) -> usize {
        self.terms.capacity() * size_of::<u32>()
            + self.postings.capacity() * size_of::<(u32, u32)>()
            + self.pairs.capacity() * size_of::<u64>()
            + self.negations.capacity() * size_of::<u16>()
            + self.starts.capacity() * size_of::<u32>()
    }
}

#[derive(Default)]
struct Entry {
    hash: u64,
    text: Vec<u8>,
    summary: Summary,
    live: bool,
    /// When it was last put or hit (the cache's clock): the set's oldest
    /// is evicted.
    used: u64,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.text.capacity() + self.summary.bytes()
    }
}

pub(super) struct SourceCache {
    entries: Vec<Entry>,
    seen: Vec<u64>,
    held: usize,
    /// Counts puts and hits: the entries' `used` stamps.
    clock: u64,
    /// Sources served from the cache so far.
    pub(super) hits: u64,
}

impl SourceCache {
    pub(super) fn new() -> Self {
        SourceCache {
            entries: Vec::new(),
            seen: Vec::new(),
            held: 0,
            clock: 0,
            hits: 0,
        }
    }

    /// Forgets every entry (their word ids are no longer the memo's).
    pub(super) fn clear(&mut self) {
        for e in &mut self.entries {
            e.live = false;
        }
    }

    /// Whether a text filed under `hash` was seen before (it is worth a
    /// summary now); notes it as seen.
    pub(super) fn seen_before(&mut self, hash: u64) -> bool {
        if self.seen.is_empty() {
            self.seen.resize(SEEN, 0);
        }
        let s = &mut self.seen[(hash >> (64 - SEEN.trailing_zeros())) as usize];
        std::mem::replace(s, hash) == hash
    }

    /// The hash `text` is filed under; `None` when it is not worth keeping.
    pub(super) fn key(text: &str) -> Option<u64> {
        (text.len() <= MAX_TEXT).then(|| term_hash(text))
    }

    /// The summary of `text` (whose [`SourceCache::key`] is `hash`), when kept.
    pub(super) fn get(&mut self, hash: u64, text: &str) -> Option<&Summary> {
        let set = self.entries.get_mut(set(hash))?;
        let e = set
            .iter_mut()
            .find(|e| e.live && e.hash == hash && e.text == text.as_bytes())?;
        self.clock += 1;
        e.used = self.clock;
        self.hits += 1;
        Some(&e.summary)
    }

    /// Keeps `summary` for `text`, swapping it with the evicted entry's
    /// (whose memory the caller reuses), unless that would pass the budget.
    pub(super) fn put(&mut self, hash: u64, text: &str, summary: &mut Summary) {
        if self.entries.is_empty() {
            self.entries.resize_with(SLOTS, Entry::default);
        }
        let range = set(hash);
        // A dead entry first, else the least recently used.
        let Some(e) = self.entries[range]
            .iter_mut()
            .min_by_key(|e| (e.live, e.used))
        else {
            return;
        };
        let old = e.bytes();
        let new = text.len().max(e.text.capacity()) + summary.bytes();
        if self.held - old + new > BUDGET {
            return;
        }
        e.hash = hash;
        e.text.clear();
        e.text.extend_from_slice(text.as_bytes());
        std::mem::swap(&mut e.summary, summary);
        e.live = true;
        self.clock += 1;
        e.used = self.clock;
        self.held = self.held - old + e.bytes();
    }
}

/// The entries of the set `hash` files into.
fn set(hash: u64) -> std::ops::Range<usize> {
    // Term hashes mix into their top bits.
    let sets = SLOTS / WAYS;
    let first = (hash >> (64 - sets.trailing_zeros())) as usize * WAYS;
    first..first + WAYS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hash `k` of the set `set` (the set is read from the top bits).
    fn in_set(set: u64, k: u64) -> u64 {
        set << (64 - (SLOTS / WAYS).trailing_zeros()) | k
    }

    fn put(cache: &mut SourceCache, hash: u64, text: &str) {
        let mut s = Summary::default();
        s.terms.push(hash as u32);
        cache.put(hash, text, &mut s);
    }

    fn kept(cache: &mut SourceCache, hash: u64, text: &str) -> bool {
        cache
            .get(hash, text)
            .is_some_and(|s| s.terms == [hash as u32])
    }

    #[test]
    fn sources_of_one_set_stay_until_the_set_is_full() {
        let mut cache = SourceCache::new();
        let texts: Vec<String> = (0..WAYS as u64).map(|k| format!("source {k}")).collect();
        for (k, t) in texts.iter().enumerate() {
            put(&mut cache, in_set(5, k as u64), t);
        }
        // A source of another set evicts none of them.
        put(&mut cache, in_set(6, 0), "elsewhere");
        for (k, t) in texts.iter().enumerate() {
            assert!(kept(&mut cache, in_set(5, k as u64), t), "{t}");
        }
        // Same hash, other text: never a hit.
        assert!(cache.get(in_set(5, 0), "another text").is_none());
    }

    #[test]
    fn a_full_set_evicts_its_least_recently_used_source() {
        let mut cache = SourceCache::new();
        let texts: Vec<String> = (0..=WAYS as u64).map(|k| format!("source {k}")).collect();
        for (k, t) in texts.iter().take(WAYS).enumerate() {
            put(&mut cache, in_set(9, k as u64), t);
        }
        // Source 0 is used again; source 1 is now the oldest.
        assert!(kept(&mut cache, in_set(9, 0), &texts[0]));
        put(&mut cache, in_set(9, WAYS as u64), &texts[WAYS]);
        assert!(!kept(&mut cache, in_set(9, 1), &texts[1]));
        for k in (0..=WAYS).filter(|&k| k != 1) {
            assert!(kept(&mut cache, in_set(9, k as u64), &texts[k]), "{k}");
        }
        // Emptied (the memo started over): nothing is served.
        cache.clear();
        assert!(!kept(&mut cache, in_set(9, 0), &texts[0]));
    }
}
