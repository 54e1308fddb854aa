//! Other words a claim's word may be found by in its sources: UK/US
//! spellings ("favourite" = "favorite"), abbreviations of units, months
//! and titles ("km" = "kilometre", "Sept" = "September", "Mt" = "Mount"),
//! verbs of one direction of a change ("increased" = "rose" = "grew",
//! "fell" = "declined"), words of financial reporting ("staff" =
//! "employees"), an irregular verb's past and its participle ("wrote" =
//! "written") and WordNet synonyms ("enroll" → "register"), from the data
//! files `tools/wordnet_variants.py` generates from WordNet 3.0 (notice in
//! `data/LICENSE-WordNet`) and the hand-written `data/abbreviations.txt`,
//! `data/directions.txt`, `data/finance.txt` and `data/participles.txt`,
//! stemmed by `build.rs`.
//!
//! A pure function of the claim's word (by its stem): the alternates are
//! known before any source is read. Read once per process on first use
//! into a map of stem keys; it must never look at a source.

use std::sync::LazyLock;

use crate::core::terms::Table;
#[cfg(test)]
use crate::core::terms::term_hash;

/// The tables stemmed by `build.rs`: `stem<TAB>alternate-stem …` per line,
/// UK/US spellings first, then abbreviations, directions, financial words,
/// participles and synonyms (the first alternate found wins). The binary reads the same
/// table as keys (below); the text is for the test that the two agree.
#[cfg(test)]
const STEMMED: &str = include_str!(concat!(env!("OUT_DIR"), "/variants.txt"));

/// The table's lines as `build.rs` hashed them (`terms::term_hash` of each
/// stem, little-endian), so a process does not split and hash about a
/// megabyte of text on its first word.
const STEM_KEYS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/variants-stems.bin"));
/// By line: where its alternates end in [`ALTERNATE_KEYS`] (a `u32` each).
const ENDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/variants-ends.bin"));
/// Every line's alternates' keys, line after line.
const ALTERNATE_KEYS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/variants-keys.bin"));

/// Stem key → its group (1-based); a group's alternates are
/// `keys[ends[g - 1]..ends[g]]` (with `ends[0] = 0`). Keys are term
/// hashes, already mixed: the open-addressing table needs no hasher of its
/// own (every word the memo learns is looked up here).
struct Variants {
    groups: Table<u32>,
    ends: Vec<u32>,
    keys: Vec<u64>,
}

static VARIANTS: LazyLock<Variants> = LazyLock::new(Variants::load);

/// Most groups a table may hold: a group number fits the word memo's
/// packed slot (see `memo`).
pub(super) const MAX_GROUPS: usize = (1 << 17) - 1;

impl Variants {
    /// The table from the keys `build.rs` wrote.
    fn load() -> Self {
        let stems = STEM_KEYS
            .as_chunks::<8>()
            .0
            .iter()
            .map(|b| u64::from_le_bytes(*b));
        let line_ends = ENDS
            .as_chunks::<4>()
            .0
            .iter()
            .map(|b| u32::from_le_bytes(*b));
        let lines = (STEM_KEYS.len() / 8).min(MAX_GROUPS);
        let mut groups = Table::with_capacity(lines);
        let mut ends = Vec::with_capacity(lines + 1);
        ends.push(0);
        for (stem, end) in stems.zip(line_ends).take(lines) {
            ends.push(end);
            *groups.entry(stem) = (ends.len() - 1) as u32;
        }
        let keys = ALTERNATE_KEYS.as_chunks::<8>().0[..ends[lines] as usize]
            .iter()
            .map(|b| u64::from_le_bytes(*b))
            .collect();
        Variants { groups, ends, keys }
    }

    /// The table from its text, as `build.rs` writes it.
    #[cfg(test)]
    fn build(table: &str) -> Self {
        let mut groups = Table::with_capacity(1024);
        let mut ends = vec![0];
        let mut keys = Vec::new();
        for line in table.lines().take(MAX_GROUPS) {
            let Some((stem, others)) = line.split_once('\t') else {
                continue;
            };
            keys.extend(others.split(' ').map(term_hash));
            ends.push(keys.len() as u32);
            *groups.entry(term_hash(stem)) = (ends.len() - 1) as u32;
        }
        Variants { groups, ends, keys }
    }
}

/// The alternates of the word whose stem key is `stem`, as a handle for
/// [`alternates`] (0: none).
pub(super) fn group(stem: u64) -> u32 {
    VARIANTS.groups.get(stem).unwrap_or(0)
}

/// The stem keys a word of `group` may also be found by.
pub(super) fn alternates(group: u32) -> &'static [u64] {
    let v = &*VARIANTS;
    let g = group as usize;
    match (g.checked_sub(1).and_then(|p| v.ends.get(p)), v.ends.get(g)) {
        (Some(&from), Some(&to)) => v.keys.get(from as usize..to as usize).unwrap_or(&[]),
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_built_in_are_the_table_hashed() {
        let (text, keys) = (Variants::build(STEMMED), Variants::load());
        assert!(text.ends.len() > 1000, "the table is read");
        assert_eq!(text.ends, keys.ends);
        assert_eq!(text.keys, keys.keys);
        for line in STEMMED.lines() {
            let stem = term_hash(line.split_once('\t').map_or(line, |(s, _)| s));
            assert_eq!(text.groups.get(stem), keys.groups.get(stem), "{line}");
            assert!(keys.groups.get(stem).is_some(), "{line}");
        }
    }
}
